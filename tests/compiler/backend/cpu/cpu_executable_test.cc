// CompileForCpu verifies the module it is given, unless the caller says the module was
// verified as it is (the CPU pipeline's output): then it verifies again only when its own
// rewrites (generic reduce expansion, the backend's fusions) changed the module.
#include "jx/compiler/backend/cpu/cpu_executable.h"

#include <gtest/gtest.h>

#include <memory>
#include <string_view>
#include <vector>

#include "jx/compiler/hlo/hlo_computation.h"
#include "jx/compiler/hlo/hlo_evaluator.h"
#include "jx/compiler/hlo/hlo_parser.h"

namespace jx::cpu::cpu_executable_test {
namespace {

// A reduce with a reducer no native kernel has: GenericReduceExpander rewrites it.
constexpr std::string_view kGenericReduce = R"(HloModule ring
ring {
  a = s32[] parameter(0)
  b = s32[] parameter(1)
  s = s32[] add(a, b)
  p = s32[] multiply(a, b)
  ROOT r = s32[] add(s, p)
}
ENTRY e {
  x = s32[6,5] parameter(0)
  z = s32[] constant(0)
  out = s32[5] reduce(x, z), dimensions={0}, to_apply=ring
  y = s32[6,5] negate(x)
  ROOT t = (s32[5], s32[6,5]) tuple(out, y)
})";

// The same program without the reduce: nothing for the backend to rewrite.
constexpr std::string_view kNoRewrite = R"(HloModule plain
ENTRY e {
  x = s32[6,5] parameter(0)
  ROOT y = s32[6,5] negate(x)
})";

// The module with negate's result shape made wrong (s32[6,5] -> s32[5,6]): only the
// verifier's shape checks can see it.
std::unique_ptr<hlo::HloModule> WithABrokenNegate(std::string_view text) {
  std::unique_ptr<hlo::HloModule> module = hlo::ParseHloModule(text).value();
  for (hlo::HloInstruction* instr : module->entry_computation()->instructions()) {
    if (instr->name() == "y") *instr->mutable_shape() = hlo::ShapeUtil::MakeShape(hlo::S32, {5, 6});
  }
  return module;
}

TEST(CpuExecutableTest, AModuleNotKnownToBeVerifiedIsVerified) {
  absl::StatusOr<std::unique_ptr<CpuExecutable>> exe = CompileForCpu(WithABrokenNegate(kNoRewrite), {});
  ASSERT_FALSE(exe.ok());
  EXPECT_NE(exe.status().message().find("shape inference gives"), std::string_view::npos) << exe.status();
}

TEST(CpuExecutableTest, AVerifiedModuleTheBackendRewritesIsVerifiedAgain) {
  CpuCompileOptions options;
  options.module_verified = true;
  absl::StatusOr<std::unique_ptr<CpuExecutable>> exe = CompileForCpu(WithABrokenNegate(kGenericReduce), options);
  ASSERT_FALSE(exe.ok());
  EXPECT_NE(exe.status().message().find("shape inference gives"), std::string_view::npos) << exe.status();
}

TEST(CpuExecutableTest, AVerifiedModuleCompilesAndRuns) {
  CpuCompileOptions options;
  options.module_verified = true;
  absl::StatusOr<std::unique_ptr<CpuExecutable>> exe =
      CompileForCpu(hlo::ParseHloModule(kGenericReduce).value(), options);
  ASSERT_TRUE(exe.ok()) << exe.status();
  hlo::Literal x(hlo::ShapeUtil::MakeShape(hlo::S32, {6, 5}));
  for (int64_t i = 0; i < 30; ++i) x.SetFromInt64(i, i % 7 - 3);
  const hlo::Literal want = hlo::HloEvaluator().Evaluate(*hlo::ParseHloModule(kGenericReduce).value(), {&x}).value();
  const std::vector<hlo::Literal> got = (*exe)->Run({&x}).value();
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0], want.tuple_elements()[0]);
  EXPECT_EQ(got[1], want.tuple_elements()[1]);
}

}  // namespace
}  // namespace jx::cpu::cpu_executable_test
