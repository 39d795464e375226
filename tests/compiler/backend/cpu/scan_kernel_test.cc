// The scan kernel (reduce-window as a running prefix/suffix scan) against the evaluator.
// Both fold each line in the same order, so results must match exactly.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "jx/compiler/hlo/str_util.h"
#include "tests/compiler/backend/cpu/cpu_test_util.h"

namespace jx::cpu {
namespace {

using testing::CheckAgainstEvaluator;
using testing::Ranges;

// reduce-window of x: T[dims] scanning `axis` (prefix, or suffix with reverse) with the
// reducer `op(p0, p1)` (operands swapped with swap) and init `init` (a constant, or the
// scalar parameter %y when init is empty).
std::string ScanModule(const std::string& type, const std::vector<int64_t>& dims, int axis,
                       bool reverse, const std::string& op, const std::string& init = "0",
                       bool swap = false) {
  std::string shape = type + "[", size, pad;
  for (size_t d = 0; d < dims.size(); ++d) {
    const std::string sep = d == 0 ? "" : "x";
    shape += (d == 0 ? "" : ",") + std::to_string(dims[d]);
    const bool scanned = static_cast<int>(d) == axis;
    size += sep + std::to_string(scanned ? dims[d] : 1);
    const int64_t p = scanned ? dims[d] - 1 : 0;
    pad += sep + (reverse ? hlo::StrCat("0_", p) : hlo::StrCat(p, "_0"));
  }
  shape += "]";
  const std::string params = init.empty() ? hlo::StrCat("x: ", shape, ", y: ", type, "[]")
                                          : hlo::StrCat("x: ", shape);
  const std::string init_line = init.empty() ? hlo::StrCat("%i = ", type, "[] parameter(1)")
                                             : hlo::StrCat("%i = ", type, "[] constant(", init, ")");
  return hlo::StrCat("HloModule scan\n%red (p0: ", type, "[], p1: ", type, "[]) -> ", type,
                     "[] {\n  %p0 = ", type, "[] parameter(0)\n  %p1 = ", type,
                     "[] parameter(1)\n  ROOT %r = ", type, "[] ", op,
                     swap ? "(%p1, %p0)" : "(%p0, %p1)", "\n}\nENTRY %main (", params, ") -> ",
                     shape, " {\n  %x = ", shape, " parameter(0)\n  ", init_line,
                     "\n  ROOT %s = ", shape, " reduce-window(%x, %i), window={size=", size,
                     " pad=", pad, "}, to_apply=%red\n}\n");
}

TEST(ScanKernelTest, EveryReducerTypeAxisAndDirection) {
  // Axis 2: contiguous lines; axis 1: strided lines, 5 lanes; axis 0: 35 lanes.
  const std::vector<int64_t> dims = {4, 7, 90};
  for (const char* type : {"f32", "f64", "s32", "s64"}) {
    for (const char* op : {"add", "multiply", "maximum", "minimum"}) {
      for (int axis = 0; axis < 3; ++axis) {
        for (const bool reverse : {false, true}) {
          SCOPED_TRACE(hlo::StrCat(type, " ", op, " axis ", axis, reverse ? " suffix" : " prefix"));
          const std::string init = std::string(op) == "multiply" ? "1" : "0";
          const bool is_float = type[0] == 'f';
          // Products of many values in [0.5, 1.5] stay finite; integers wrap as the evaluator.
          const Ranges r = is_float ? Ranges{0.5, 1.5} : Ranges{-3, 3};
          auto exe = CheckAgainstEvaluator(ScanModule(type, dims, axis, reverse, op, init), 0, 0,
                                           {}, r);
          if (exe) EXPECT_EQ(exe->KernelKind("s"), "scan");
        }
      }
    }
  }
}

TEST(ScanKernelTest, InitSwappedReducerAndNaN) {
  // A non-identity init from a parameter, and a reducer with its parameters swapped.
  auto exe = CheckAgainstEvaluator(ScanModule("f32", {3, 50}, 1, false, "add", "", true), 0, 0);
  if (exe) EXPECT_EQ(exe->KernelKind("s"), "scan");
  CheckAgainstEvaluator(ScanModule("s64", {50, 3}, 0, true, "maximum", "-7"), 0, 0, {},
                        Ranges{-20, 20});
  // cummax over a line holding NaN and signed zeros.
  auto module = hlo::ParseHloModule(ScanModule("f32", {8}, 0, false, "maximum", "-inf")).value();
  auto scan = CompileForCpu(std::move(module)).value();
  hlo::Literal x = hlo::Literal::CreateR1<float>({-0.f, 0.f, -1.f, 2.f, NAN, 3.f, -0.f, 1.f});
  auto out = scan->Run({&x}).value();
  EXPECT_EQ(out[0].ToString(), "{-0, 0, 0, 2, nan, nan, nan, nan}");
}

// Long lines, many of them, and wide lane blocks (inner > one block, ragged): the split over
// threads must not change a bit.
TEST(ScanKernelTest, LargeAndThreadIndependent) {
  for (const auto& [dims, axis] : std::vector<std::pair<std::vector<int64_t>, int>>{
           {{64, 3000}, 1}, {{2, 40, 1300}, 1}, {{300, 70}, 0}}) {
    SCOPED_TRACE(hlo::StrCat("axis ", axis, " of ", dims.size(), "-d"));
    const std::string text = ScanModule("f32", dims, axis, true, "add");
    CpuCompileOptions one;
    one.max_threads = 1;
    auto single = CheckAgainstEvaluator(text, 0, 0, one);
    auto multi = CheckAgainstEvaluator(text, 0, 0);
    ASSERT_TRUE(single && multi);
    std::mt19937 rng(9);
    const hlo::Literal x = testing::RandomLiteral(single->argument_shapes()[0], rng);
    EXPECT_EQ(single->Run({&x}).value()[0], multi->Run({&x}).value()[0]);
  }
}

// Other windows and reducers are not scans (they run on other kernels), still correct.
TEST(ScanKernelTest, OtherWindowsAndReducersAreNotScans) {
  auto partial = CheckAgainstEvaluator(R"(HloModule m
%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %r = f32[] add(%a, %b)
}
ENTRY %main (x: f32[40]) -> f32[40] {
  %x = f32[40] parameter(0)
  %z = f32[] constant(0)
  ROOT %s = f32[40] reduce-window(%x, %z), window={size=3 pad=2_0}, to_apply=%add
})", 1e-6, 1e-6);
  if (partial) EXPECT_NE(partial->KernelKind("s"), "scan");
  auto sub = CheckAgainstEvaluator(ScanModule("f32", {30}, 0, false, "subtract"), 1e-5, 1e-5);
  if (sub) EXPECT_NE(sub->KernelKind("s"), "scan");
  auto u8 = CheckAgainstEvaluator(ScanModule("u8", {30}, 0, false, "add"), 0, 0, {},
                                  Ranges{0, 20});
  if (u8) EXPECT_NE(u8->KernelKind("s"), "scan");
}

}  // namespace
}  // namespace jx::cpu
