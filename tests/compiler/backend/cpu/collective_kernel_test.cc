// The CPU backend's collective kernels in a one-device run (no CollectiveContext): partition
// 0 of 1, so partition-id is 0 and collectives over groups of one copy their operand; a
// collective naming other partitions fails the run naming the instruction. Multi-device runs
// are tested with the pod executor (tests/devices/tpu/pod_program_test.cc).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>

#include "jx/compiler/backend/cpu/cpu_executable.h"
#include "jx/compiler/hlo/hlo_parser.h"

namespace jx::cpu {
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
}  // namespace jx::cpu
