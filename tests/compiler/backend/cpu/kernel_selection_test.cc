// Kernel selection (compiler/backend/cpu/kernel_selection.cc) never falls back silently: an
// instruction without a native kernel runs on the reference evaluator only with
// JX_LOG_COMPILES naming it (and why), and with allow_evaluator_fallback = false the compile
// fails naming it. (The per-op fallback inside a loop kernel's tile program is
// LoopKernelTest.ScalarFallbackPerOp; every opinfo sample compiling without any fallback is
// the opinfo jit column, OpInfoJitTest.)
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "cpu_test_util.h"
#include "jx/compiler/hlo/hlo_parser.h"
#include "tests/scoped_env.h"

namespace jx::cpu::kernel_selection_test {
namespace {

// select-and-scatter (the gradient of a max pool as XLA writes it) has no CPU kernel: jx's
// lowering of max-pool gradients does not emit it.
constexpr char kNoKernel[] = R"(HloModule m
%ge (a: f32[], b: f32[]) -> pred[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %c = pred[] compare(%a, %b), direction=GE
}
%add (x: f32[], y: f32[]) -> f32[] {
  %x = f32[] parameter(0)
  %y = f32[] parameter(1)
  ROOT %s = f32[] add(%x, %y)
}
ENTRY %main (operand: f32[4,6], source: f32[2,3]) -> f32[4,6] {
  %operand = f32[4,6] parameter(0)
  %source = f32[2,3] parameter(1)
  %zero = f32[] constant(0)
  ROOT %sas = f32[4,6] select-and-scatter(%operand, %source, %zero), window={size=2x2 stride=2x2}, select=%ge, scatter=%add
})";


TEST(KernelSelectionTest, FallbackIsLoggedWithTheInstructionAndReason) {
  std::string log;
  {
    jx::testing::ScopedEnv env("JX_LOG_COMPILES", "1");
    ::testing::internal::CaptureStderr();
    auto exe = testing::CheckAgainstEvaluator(kNoKernel);
    log = ::testing::internal::GetCapturedStderr();
    ASSERT_NE(exe, nullptr);
    EXPECT_EQ(exe->KernelKind("sas"), "fallback");
  }
  EXPECT_NE(log.find("jx: CPU backend runs %sas = f32[4,6] select-and-scatter on the reference evaluator (slow): "
                     "no native kernel for this opcode"),
            std::string::npos)
      << log;
}

TEST(KernelSelectionTest, NoFallbackMakesItACompileErrorNamingTheInstruction) {
  CpuCompileOptions options;
  options.allow_evaluator_fallback = false;
  auto exe = CompileForCpu(hlo::ParseHloModule(kNoKernel).value(), options);
  ASSERT_FALSE(exe.ok());
  EXPECT_NE(std::string(exe.status().message()).find("no native CPU kernel for %sas = f32[4,6] select-and-scatter"),
            std::string::npos)
      << exe.status();
}

}  // namespace
}  // namespace jx::cpu::kernel_selection_test
