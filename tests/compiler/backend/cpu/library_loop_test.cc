// Library loops (loop_kernels.cc): a lone unary/binary op, or a loop fusion that is one such op
// of its parameters, runs the kernel library's loop over the whole arrays as eager does.
#include <gtest/gtest.h>

#include <string>

#include "jx/compiler/hlo/str_util.h"
#include "tests/compiler/backend/cpu/cpu_test_util.h"

namespace jx::cpu::library_loop_test {
namespace {

using testing::CheckAgainstEvaluator;
using testing::Ranges;

// op(p0[, p1]) as a kLoop fusion over type[n].
std::string FusionModule(std::string_view op, std::string_view type, int64_t n, int arity) {
  const std::string t = hlo::StrCat(type, "[", n, "]");
  const std::string params = arity == 1 ? hlo::StrCat("p0: ", t) : hlo::StrCat("p0: ", t, ", p1: ", t);
  const std::string body_params = arity == 1 ? hlo::StrCat("  %p0 = ", t, " parameter(0)\n")
                                             : hlo::StrCat("  %p0 = ", t, " parameter(0)\n  %p1 = ", t,
                                                           " parameter(1)\n");
  const std::string args = arity == 1 ? "%p0" : "%p0, %p1";
  const std::string entry_params = arity == 1 ? hlo::StrCat("  %x0 = ", t, " parameter(0)\n")
                                              : hlo::StrCat("  %x0 = ", t, " parameter(0)\n  %x1 = ", t,
                                                            " parameter(1)\n");
  const std::string entry_sig = arity == 1 ? hlo::StrCat("x0: ", t) : hlo::StrCat("x0: ", t, ", x1: ", t);
  return hlo::StrCat("HloModule m\n%fused (", params, ") -> ", t, " {\n", body_params, "  ROOT %r = ", t, " ",
                     op, "(", args, ")\n}\nENTRY %main (", entry_sig, ") -> ", t, " {\n", entry_params,
                     "  ROOT %fusion = ", t, " fusion(", arity == 1 ? "%x0" : "%x0, %x1",
                     "), kind=kLoop, calls=%fused\n}\n");
}

// Every case against the evaluator. (Outputs past the streaming-store threshold, L3/2 and at
// least 4 MiB, take the library's streaming stores, which give the same values: the library's
// tests check them; they are too large for the evaluator here.)
TEST(LibraryLoopTest, FusedLoneOpsRunTheLibraryLoop) {
  struct Case {
    const char* op;
    int arity;
    const char* type;
    double rtol;
  };
  const Case cases[] = {
      {"negate", 1, "f32", 0},   {"abs", 1, "f64", 0},      {"floor", 1, "f32", 0},
      {"sqrt", 1, "f32", 0},     {"add", 2, "f32", 0},      {"multiply", 2, "f64", 0},
      {"add", 2, "s32", 0},      {"add", 2, "bf16", 1e-2},  {"exponential", 1, "f16", 1e-3},
      {"subtract", 2, "s64", 0}, {"tanh", 1, "f32", 3e-6},
  };
  for (const Case& c : cases) {
    for (int64_t n : {1, 1003, 100000}) {
      SCOPED_TRACE(hlo::StrCat(c.op, " ", c.type, " ", n));
      auto exe = CheckAgainstEvaluator(FusionModule(c.op, c.type, n, c.arity), c.rtol, 1e-30, {}, Ranges{0, 5});
      ASSERT_NE(exe, nullptr);
      EXPECT_EQ(exe->KernelKind("fusion"), "library-loop");
    }
  }
}

// The same parameter twice (x * x) reads one buffer for both operands.
TEST(LibraryLoopTest, RepeatedOperand) {
  auto exe = CheckAgainstEvaluator(R"(HloModule m
%fused (p0: f32[5000]) -> f32[5000] {
  %p0 = f32[5000] parameter(0)
  ROOT %r = f32[5000] multiply(%p0, %p0)
}
ENTRY %main (x: f32[5000]) -> f32[5000] {
  %x = f32[5000] parameter(0)
  ROOT %fusion = f32[5000] fusion(%x), kind=kLoop, calls=%fused
})", 0, 1e-30);
  ASSERT_NE(exe, nullptr);
  EXPECT_EQ(exe->KernelKind("fusion"), "library-loop");
}

// A broadcast operand, a mixed-type op or a second op keep the tile program.
TEST(LibraryLoopTest, OtherFusionsStayTilePrograms) {
  auto broadcast = CheckAgainstEvaluator(R"(HloModule m
%fused (p0: f32[5000], p1: f32[]) -> f32[5000] {
  %p0 = f32[5000] parameter(0)
  %p1 = f32[] parameter(1)
  %b = f32[5000] broadcast(%p1), dimensions={}
  ROOT %r = f32[5000] add(%p0, %b)
}
ENTRY %main (x: f32[5000], y: f32[]) -> f32[5000] {
  %x = f32[5000] parameter(0)
  %y = f32[] parameter(1)
  ROOT %fusion = f32[5000] fusion(%x, %y), kind=kLoop, calls=%fused
})", 0, 1e-30);
  ASSERT_NE(broadcast, nullptr);
  EXPECT_EQ(broadcast->KernelKind("fusion"), "loop");
  auto two_ops = CheckAgainstEvaluator(R"(HloModule m
%fused (p0: f32[5000]) -> f32[5000] {
  %p0 = f32[5000] parameter(0)
  %n = f32[5000] negate(%p0)
  ROOT %r = f32[5000] abs(%n)
}
ENTRY %main (x: f32[5000]) -> f32[5000] {
  %x = f32[5000] parameter(0)
  ROOT %fusion = f32[5000] fusion(%x), kind=kLoop, calls=%fused
})", 0, 1e-30);
  ASSERT_NE(two_ops, nullptr);
  EXPECT_EQ(two_ops->KernelKind("fusion"), "loop");
}

}  // namespace
}  // namespace jx::cpu::library_loop_test
