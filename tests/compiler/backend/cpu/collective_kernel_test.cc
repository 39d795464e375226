// The CPU backend's collective kernels in a one-device run (no CollectiveContext): partition
// 0 of 1, so partition-id is 0 and collectives over groups of one copy their operand; a
// collective naming other partitions fails the run naming the instruction. Multi-device runs
// are tested with the pod executor (tests/devices/tpu/pod_program_test.cc).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>

#include "jx/compiler/backend/cpu/cpu_executable.h"
#include "jx/compiler/hlo/hlo_parser.h"

namespace jx::cpu::collective_kernel_test {
namespace {

using ::testing::HasSubstr;

std::unique_ptr<CpuExecutable> Compile(std::string_view text) {
  auto module = hlo::ParseHloModule(text);
  EXPECT_TRUE(module.ok()) << module.status();
  CpuCompileOptions options;
  options.allow_evaluator_fallback = false;  // the collectives have native kernels
  auto exe = CompileForCpu(*std::move(module), options);
  EXPECT_TRUE(exe.ok()) << exe.status();
  return exe.ok() ? *std::move(exe) : nullptr;
}

TEST(CollectiveKernelTest, OneDeviceRunIsPartitionZeroOfOne) {
  auto exe = Compile(R"(HloModule m
%sum (x: f32[], y: f32[]) -> f32[] {
  %x = f32[] parameter(0)
  %y = f32[] parameter(1)
  ROOT %s = f32[] add(f32[] %x, f32[] %y)
}
ENTRY %main (p: f32[4]) -> (f32[4], f32[4], u32[]) {
  %p = f32[4]{0} parameter(0)
  %ar = f32[4]{0} all-reduce(f32[4]{0} %p), channel_id=1, replica_groups={{0}}, use_global_device_ids=true, to_apply=%sum
  %ag = f32[4]{0} all-gather(f32[4]{0} %ar), channel_id=2, replica_groups={{0}}, dimensions={0}, use_global_device_ids=true
  %pid = u32[] partition-id()
  ROOT %t = (f32[4]{0}, f32[4]{0}, u32[]) tuple(%ar, %ag, %pid)
}
)");
  ASSERT_NE(exe, nullptr);
  EXPECT_EQ(exe->KernelKind("ar"), "collective");
  EXPECT_EQ(exe->KernelKind("pid"), "collective");
  const hlo::Literal x = hlo::Literal::CreateR1<float>({1, 2, 3, 4});
  std::vector<hlo::Literal> out = exe->Run({&x}).value();
  EXPECT_EQ(out[0], x);
  EXPECT_EQ(out[1], x);
  EXPECT_EQ(out[2], hlo::Literal::CreateR0<uint32_t>(0));
}

// The asynchronous pairs: a start runs its collective (and keeps its operand in the pair), a
// done forwards the result; a one-device run gives what the synchronous collectives give.
TEST(CollectiveKernelTest, StartsRunTheCollectiveAndDonesForwardIt) {
  auto exe = Compile(R"(HloModule m
%sum (x: f32[], y: f32[]) -> f32[] {
  %x = f32[] parameter(0)
  %y = f32[] parameter(1)
  ROOT %s = f32[] add(f32[] %x, f32[] %y)
}
ENTRY %main (p: f32[2,2]) -> (f32[2,2], f32[2,2], f32[2,2], f32[2,2], f32[2,2]) {
  %p = f32[2,2]{1,0} parameter(0)
  %ars = f32[2,2]{1,0} all-reduce-start(f32[2,2]{1,0} %p), replica_groups={{0}}, to_apply=%sum
  %ard = f32[2,2]{1,0} all-reduce-done(f32[2,2]{1,0} %ars)
  %ags = (f32[2,2]{1,0}, f32[2,2]{1,0}) all-gather-start(f32[2,2]{1,0} %ard), replica_groups={{0}}, dimensions={0}
  %agd = f32[2,2]{1,0} all-gather-done((f32[2,2]{1,0}, f32[2,2]{1,0}) %ags)
  %rss = ((f32[2,2]{1,0}), f32[2,2]{1,0}) reduce-scatter-start(f32[2,2]{1,0} %agd), replica_groups={{0}}, dimensions={1}, to_apply=%sum
  %rsd = f32[2,2]{1,0} reduce-scatter-done(((f32[2,2]{1,0}), f32[2,2]{1,0}) %rss)
  %a2as = ((f32[2,2]{1,0}), f32[2,2]{1,0}) all-to-all-start(f32[2,2]{1,0} %rsd), replica_groups={{0}}, dimensions={1}
  %a2ad = f32[2,2]{1,0} all-to-all-done(((f32[2,2]{1,0}), f32[2,2]{1,0}) %a2as)
  %cps = (f32[2,2]{1,0}, f32[2,2]{1,0}) collective-permute-start(f32[2,2]{1,0} %a2ad), source_target_pairs={{0,0}}
  %cpd = f32[2,2]{1,0} collective-permute-done((f32[2,2]{1,0}, f32[2,2]{1,0}) %cps)
  ROOT %t = (f32[2,2]{1,0}, f32[2,2]{1,0}, f32[2,2]{1,0}, f32[2,2]{1,0}, f32[2,2]{1,0}) tuple(%ard, %agd, %rsd, %a2ad, %cpd)
}
)");
  ASSERT_NE(exe, nullptr);
  for (std::string_view name : {"ars", "ard", "ags", "agd", "rss", "rsd", "a2as", "a2ad", "cps", "cpd"}) {
    EXPECT_EQ(exe->KernelKind(name), "collective") << name;
  }
  hlo::Literal x(hlo::Shape(hlo::F32, {2, 2}));
  for (int i = 0; i < 4; ++i) x.SetFromDouble(i, 1.5 * i - 2);
  std::vector<hlo::Literal> out = exe->Run({&x}).value();
  ASSERT_EQ(out.size(), 5u);
  for (const hlo::Literal& o : out) EXPECT_EQ(o, x);
}

TEST(CollectiveKernelTest, OtherPartitionsNeedAMultiDeviceRun) {
  auto exe = Compile(R"(HloModule m
%sum (x: f32[], y: f32[]) -> f32[] {
  %x = f32[] parameter(0)
  %y = f32[] parameter(1)
  ROOT %s = f32[] add(f32[] %x, f32[] %y)
}
ENTRY %main (p: f32[4]) -> f32[4] {
  %p = f32[4]{0} parameter(0)
  ROOT %ar = f32[4]{0} all-reduce(f32[4]{0} %p), channel_id=1, replica_groups={{0,1}}, use_global_device_ids=true, to_apply=%sum
}
)");
  ASSERT_NE(exe, nullptr);
  const hlo::Literal x = hlo::Literal::CreateR1<float>({1, 2, 3, 4});
  absl::StatusOr<std::vector<hlo::Literal>> out = exe->Run({&x});
  ASSERT_FALSE(out.ok());
  EXPECT_THAT(std::string(out.status().message()), HasSubstr("instruction %ar (collective)"));
  EXPECT_THAT(std::string(out.status().message()), HasSubstr("run the program on several devices"));
}

}  // namespace
}  // namespace jx::cpu::collective_kernel_test
