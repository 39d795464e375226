// A loop fusion that holds an op a tile program cannot compute (concatenate, pad: how
// batched gather/scatter indices and the threefry counter fuse) runs op by op as the
// "unfused" kernel, every op native: no evaluator fallback, the evaluator's bits, lengths
// around a vector's width.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>

#include "jx/compiler/hlo/str_util.h"
#include "tests/compiler/backend/cpu/cpu_test_util.h"

namespace jx::cpu::unfused_kernel_test {
namespace {

using hlo::Literal;

void ExpectUnfusedAndExact(const std::string& text, uint32_t seed) {
  auto module = hlo::ParseHloModule(text);
  ASSERT_TRUE(module.ok()) << module.status();
  CpuCompileOptions options;
  options.allow_evaluator_fallback = false;
  auto exe = CompileForCpu(*std::move(module), options);
  ASSERT_TRUE(exe.ok()) << exe.status();
  EXPECT_EQ((*exe)->KernelKind("r"), "unfused");
  const auto reference = hlo::ParseHloModule(text).value();
  std::mt19937 rng(seed);
  std::vector<Literal> args;
  std::vector<const Literal*> ptrs;
  for (int64_t i = 0; i < reference->entry_computation()->num_parameters(); ++i) {
    args.push_back(testing::RandomLiteral(reference->entry_computation()->parameter_instruction(i)->shape(), rng, -9, 9));
  }
  for (const Literal& a : args) ptrs.push_back(&a);
  const Literal want = hlo::HloEvaluator().Evaluate(*reference, ptrs).value();
  const Literal got = std::move((*exe)->Run(ptrs).value()[0]);
  ASSERT_EQ(got.untyped_data().size(), want.untyped_data().size());
  EXPECT_EQ(std::memcmp(got.untyped_data().data(), want.untyped_data().data(), got.untyped_data().size()), 0);
}

TEST(UnfusedKernelTest, ConcatenateAndPadInALoopFusion) {
  for (const int64_t n : {1, 15, 16, 17, 33}) {
    SCOPED_TRACE(n);
    // Index vectors built from two index arrays (a batched gather's indices), then offset.
    ExpectUnfusedAndExact(
        hlo::StrCat("HloModule cat\n%f (a: s32[", n, ",1], b: s32[", n, ",1]) -> s32[", n, ",2] {\n  %a = s32[", n,
                    ",1] parameter(0)\n  %b = s32[", n, ",1] parameter(1)\n  %c = s32[", n,
                    ",2] concatenate(%a, %b), dimensions={1}\n  %one = s32[] constant(1)\n  %bo = s32[", n,
                    ",2] broadcast(%one), dimensions={}\n  ROOT %s = s32[", n, ",2] add(%c, %bo)\n}\n",
                    "ENTRY %main (x: s32[", n, ",1], y: s32[", n, ",1]) -> s32[", n, ",2] {\n  %x = s32[", n,
                    ",1] parameter(0)\n  %y = s32[", n, ",1] parameter(1)\n  ROOT %r = s32[", n,
                    ",2] fusion(%x, %y), kind=kLoop, calls=%f\n}\n"),
        static_cast<uint32_t>(n));
    // A padded counter (threefry's), then a multiply.
    ExpectUnfusedAndExact(
        hlo::StrCat("HloModule pad\n%f (a: u32[", n, "]) -> u32[", n + 3, "] {\n  %a = u32[", n,
                    "] parameter(0)\n  %z = u32[] constant(7)\n  %p = u32[", n + 3,
                    "] pad(%a, %z), padding=1_2\n  %k = u32[] constant(2654435761)\n  %bk = u32[", n + 3,
                    "] broadcast(%k), dimensions={}\n  ROOT %m = u32[", n + 3, "] multiply(%p, %bk)\n}\n",
                    "ENTRY %main (x: u32[", n, "]) -> u32[", n + 3, "] {\n  %x = u32[", n,
                    "] parameter(0)\n  ROOT %r = u32[", n + 3, "] fusion(%x), kind=kLoop, calls=%f\n}\n"),
        static_cast<uint32_t>(n) + 100);
  }
}

}  // namespace
}  // namespace jx::cpu::unfused_kernel_test
