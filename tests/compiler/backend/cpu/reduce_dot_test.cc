// Reduce / kInput fusions, dot / kOutput fusions and the evaluator slow path.
#include <gtest/gtest.h>

#include <string>

#include "jx/compiler/hlo/str_util.h"
#include "tests/compiler/backend/cpu/cpu_test_util.h"

namespace jx::cpu::reduce_dot_test {
namespace {

using testing::CheckAgainstEvaluator;
using testing::Ranges;

CpuCompileOptions SmallTiles(int threads = 0) {
  CpuCompileOptions o;
  o.tile_elements = 128;
  o.max_threads = threads;
  return o;
}

// reduce(exp(x) * y) over `dims` with reducer `op`, as a kInput fusion.
std::string InputFusion(std::string_view type, std::string_view in_dims,
                        std::string_view out_dims, std::string_view dims, std::string_view op,
                        std::string_view init) {
  return hlo::StrCat(R"(HloModule m
%reducer (a: T[], b: T[]) -> T[] {
  %a = T[] parameter(0)
  %b = T[] parameter(1)
  ROOT %c = T[] )", op, R"((%a, %b)
}
%fused (p0: T[IN], p1: T[IN]) -> T[OUT] {
  %p0 = T[IN] parameter(0)
  %p1 = T[IN] parameter(1)
  %e = T[IN] EXP(%p0)
  %m = T[IN] multiply(%e, %p1)
  %init = T[] constant()", init, R"()
  ROOT %r = T[OUT] reduce(%m, %init), dimensions={DIMS}, to_apply=%reducer
}
ENTRY %main (x: T[IN], y: T[IN]) -> T[OUT] {
  %x = T[IN] parameter(0)
  %y = T[IN] parameter(1)
  ROOT %fusion = T[OUT] fusion(%x, %y), kind=kInput, calls=%fused
})");
}

std::string Fill(std::string text, std::string_view type, std::string_view in_dims,
                 std::string_view out_dims, std::string_view dims) {
  auto replace = [&](std::string_view from, std::string_view to) {
    for (size_t pos = 0; (pos = text.find(from, pos)) != std::string::npos; pos += to.size()) {
      text.replace(pos, from.size(), to);
    }
  };
  replace("T[", hlo::StrCat(type, "["));
  replace("[IN]", hlo::StrCat("[", in_dims, "]"));
  replace("[OUT]", hlo::StrCat("[", out_dims, "]"));
  replace("{DIMS}", hlo::StrCat("{", dims, "}"));
  replace("EXP", type[0] == 'f' ? "exponential" : "negate");
  return text;
}

TEST(ReduceKernelTest, InputFusionOverAnyDims) {
  struct Case {
    const char* in;
    const char* out;
    const char* dims;
  };
  const Case cases[] = {
      {"37,1000", "37", "1"},      // rows, longer than a tile
      {"37,1000", "1000", "0"},    // columns
      {"300,1000", "", "0,1"},     // everything: blocked, in parallel
      {"5,7,3", "7", "0,2"},       // short rows, several per tile
      {"4,0,3", "4,3", "1"},       // empty reduced dim: init
      {"0,6", "6", "0"},
      {"6", "", "0"},
  };
  for (const Case& c : cases) {
    for (auto [op, init] : {std::pair{"add", "0"}, std::pair{"maximum", "-inf"},
                            std::pair{"minimum", "inf"}, std::pair{"multiply", "1"}}) {
      for (const char* type : {"f32", "f64", "s32"}) {
        if (type[0] == 's' && init[0] != '0' && init[0] != '1') continue;
        SCOPED_TRACE(hlo::StrCat(type, "[", c.in, "] ", op, " over {", c.dims, "}"));
        const std::string text =
            Fill(InputFusion(type, c.in, c.out, c.dims, op, init), type, c.in, c.out, c.dims);
        // Products of many terms drift far from 1: keep them near 1.
        const Ranges r = std::string_view(op) == "multiply" ? Ranges{-0.001, 0.001}
                         : type[0] == 's'                    ? Ranges{-100, 100}
                                                             : Ranges{-2, 2};
        // f32 sums of ~1000 terms of size ~10 carry ~1e-3 absolute rounding error.
        const double rtol = type[1] == '3' ? 1e-5 : 1e-12;
        const double atol = type[1] == '3' ? 2e-3 : 1e-9;
        auto exe = CheckAgainstEvaluator(text, type[0] == 's' ? 0 : rtol,
                                         type[0] == 's' ? 0 : atol, SmallTiles(), r);
        if (exe) {
          EXPECT_EQ(exe->KernelKind("fusion"), "reduce");
        }
      }
    }
  }
}

TEST(ReduceKernelTest, PlainReduceWithParameterInitAndThreads) {
  constexpr char kText[] = R"(HloModule m
%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %c = f32[] add(%a, %b)
}
ENTRY %main (x: f32[200,3000], i: f32[]) -> f32[200] {
  %x = f32[200,3000] parameter(0)
  %i = f32[] parameter(1)
  ROOT %r = f32[200] reduce(%x, %i), dimensions={1}, to_apply=%add
})";
  auto exe = CheckAgainstEvaluator(kText, 2e-5, 1e-4, SmallTiles());
  ASSERT_NE(exe, nullptr);
  EXPECT_EQ(exe->KernelKind("r"), "reduce");
  auto one = CompileForCpu(hlo::ParseHloModule(kText).value(), SmallTiles(1)).value();
  auto two = CompileForCpu(hlo::ParseHloModule(kText).value(), SmallTiles(2)).value();
  std::mt19937 rng(5);
  hlo::Literal x = testing::RandomLiteral(hlo::Shape(hlo::F32, {200, 3000}), rng);
  hlo::Literal i = hlo::Literal::CreateR0<float>(0.25f);
  EXPECT_EQ(one->Run({&x, &i}).value()[0], two->Run({&x, &i}).value()[0]);
}

std::string DotModule(std::string_view type, std::string_view lhs, std::string_view rhs,
                      std::string_view out, std::string_view dnums) {
  return hlo::StrCat("HloModule d\nENTRY %main (a: ", type, "[", lhs, "], b: ", type, "[", rhs,
                      "]) -> ", type, "[", out, "] {\n  %a = ", type, "[", lhs,
                      "] parameter(0)\n  %b = ", type, "[", rhs, "] parameter(1)\n  ROOT %r = ",
                      type, "[", out, "] dot(%a, %b), ", dnums, "\n}\n");
}

TEST(DotKernelTest, GeneralDimensionNumbers) {
  struct Case {
    const char* lhs;
    const char* rhs;
    const char* out;
    const char* dnums;
  };
  const Case cases[] = {
      {"133,70", "70,45", "133,45", "lhs_contracting_dims={1}, rhs_contracting_dims={0}"},
      {"70,133", "70,45", "133,45", "lhs_contracting_dims={0}, rhs_contracting_dims={0}"},
      {"133,70", "45,70", "133,45", "lhs_contracting_dims={1}, rhs_contracting_dims={1}"},
      {"3,17,20", "3,20,9", "3,17,9",
       "lhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_batch_dims={0}, rhs_contracting_dims={1}"},
      // Batch dim last and two contracting dims: transposed copies.
      {"17,4,5,3", "5,4,9,3", "3,17,9",
       "lhs_batch_dims={3}, lhs_contracting_dims={1,2}, rhs_batch_dims={3}, rhs_contracting_dims={1,0}"},
      {"8", "8", "", "lhs_contracting_dims={0}, rhs_contracting_dims={0}"},
      {"4,0", "0,5", "4,5", "lhs_contracting_dims={1}, rhs_contracting_dims={0}"},
      {"0,6", "6,5", "0,5", "lhs_contracting_dims={1}, rhs_contracting_dims={0}"},
  };
  for (const Case& c : cases) {
    for (const char* type : {"f32", "f64"}) {
      SCOPED_TRACE(hlo::StrCat(type, " ", c.lhs, " x ", c.rhs));
      auto exe = CheckAgainstEvaluator(DotModule(type, c.lhs, c.rhs, c.out, c.dnums),
                                       type[1] == '3' ? 1e-5 : 1e-13, 1e-5);
      if (exe) {
        EXPECT_EQ(exe->KernelKind("r"), "dot");
      }
    }
  }
  // Integer dots run on the int32 GEMM (conv_dot_kernel_test.cc covers every type).
  auto exe = CheckAgainstEvaluator(
      DotModule("s32", "9,7", "7,5", "9,5", "lhs_contracting_dims={1}, rhs_contracting_dims={0}"),
      0, 0, {}, Ranges{-50, 50});
  if (exe) {
    EXPECT_EQ(exe->KernelKind("r"), "dot");
  }
}

constexpr char kDenseLayer[] = R"(HloModule dense
%fused_computation (p0: f32[130,784], p1: f32[784,70], p2: f32[70]) -> f32[130,70] {
  %p0 = f32[130,784] parameter(0)
  %p1 = f32[784,70] parameter(1)
  %d = f32[130,70] dot(%p0, %p1), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  %p2 = f32[70] parameter(2)
  %b = f32[130,70] broadcast(%p2), dimensions={1}
  %a = f32[130,70] add(%d, %b)
  ROOT %t = f32[130,70] tanh(%a)
}
ENTRY %main (x: f32[130,784], w: f32[784,70], bias: f32[70]) -> f32[130,70] {
  %x = f32[130,784] parameter(0)
  %w = f32[784,70] parameter(1)
  %bias = f32[70] parameter(2)
  ROOT %fusion = f32[130,70] fusion(%x, %w, %bias), kind=kOutput, calls=%fused_computation
})";

TEST(DotKernelTest, OutputFusionEpilogues) {
  auto exe = CheckAgainstEvaluator(kDenseLayer, 2e-5, 2e-5, SmallTiles(), Ranges{-0.1, 0.1});
  ASSERT_NE(exe, nullptr);
  EXPECT_EQ(exe->KernelKind("fusion"), "dot+epilogue");
  auto one = CompileForCpu(hlo::ParseHloModule(kDenseLayer).value(), SmallTiles(1)).value();
  auto two = CompileForCpu(hlo::ParseHloModule(kDenseLayer).value(), SmallTiles(2)).value();
  std::mt19937 rng(9);
  std::vector<hlo::Literal> args;
  for (const hlo::Shape& s : one->argument_shapes()) args.push_back(testing::RandomLiteral(s, rng));
  EXPECT_EQ(one->Run({&args[0], &args[1], &args[2]}).value()[0],
            two->Run({&args[0], &args[1], &args[2]}).value()[0]);

  // relu and logistic on f64, the dot read through a transposed rhs.
  CheckAgainstEvaluator(R"(HloModule m
%fused (p0: f64[65,30], p1: f64[20,30]) -> f64[65,20] {
  %p0 = f64[65,30] parameter(0)
  %p1 = f64[20,30] parameter(1)
  %d = f64[65,20] dot(%p0, %p1), lhs_contracting_dims={1}, rhs_contracting_dims={1}
  %z = f64[] constant(0)
  %bz = f64[65,20] broadcast(%z), dimensions={}
  %relu = f64[65,20] maximum(%d, %bz)
  %l = f64[65,20] logistic(%d)
  ROOT %s = f64[65,20] add(%relu, %l)
}
ENTRY %main (x: f64[65,30], w: f64[20,30]) -> f64[65,20] {
  %x = f64[65,30] parameter(0)
  %w = f64[20,30] parameter(1)
  ROOT %fusion = f64[65,20] fusion(%x, %w), kind=kOutput, calls=%fused
})", 1e-12, 1e-12, SmallTiles());

  // An epilogue that reads the dot transposed cannot run in place: dot first, then the loop.
  auto transposed = CheckAgainstEvaluator(R"(HloModule m
%fused (p0: f32[40,30], p1: f32[30,40]) -> f32[40,40] {
  %p0 = f32[40,30] parameter(0)
  %p1 = f32[30,40] parameter(1)
  %d = f32[40,40] dot(%p0, %p1), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  %t = f32[40,40] transpose(%d), dimensions={1,0}
  ROOT %s = f32[40,40] add(%d, %t)
}
ENTRY %main (x: f32[40,30], w: f32[30,40]) -> f32[40,40] {
  %x = f32[40,30] parameter(0)
  %w = f32[30,40] parameter(1)
  ROOT %fusion = f32[40,40] fusion(%x, %w), kind=kOutput, calls=%fused
})", 1e-5, 1e-5, SmallTiles());
  if (transposed) {
    EXPECT_EQ(transposed->KernelKind("fusion"), "dot+epilogue");
  }
}

// Everything without a native kernel still runs (through the evaluator), inside a program
// whose other instructions use the fast kernels.
TEST(FallbackTest, SlowPathOps) {
  auto exe = CheckAgainstEvaluator(R"(HloModule m
%lt (la: f32[], lb: f32[]) -> pred[] {
  %la = f32[] parameter(0)
  %lb = f32[] parameter(1)
  ROOT %lt_c = pred[] compare(%la, %lb), direction=LT
}
%cond (cs: (s32[], f32[8])) -> pred[] {
  %cs = (s32[], f32[8]) parameter(0)
  %ci = s32[] get-tuple-element(%cs), index=0
  %cn = s32[] constant(3)
  ROOT %cc = pred[] compare(%ci, %cn), direction=LT
}
%body (bt: (s32[], f32[8])) -> (s32[], f32[8]) {
  %bt = (s32[], f32[8]) parameter(0)
  %bi = s32[] get-tuple-element(%bt), index=0
  %v = f32[8] get-tuple-element(%bt), index=1
  %one = s32[] constant(1)
  %next = s32[] add(%bi, %one)
  %w = f32[8] multiply(%v, %v)
  ROOT %br = (s32[], f32[8]) tuple(%next, %w)
}
ENTRY %main (x: f32[8], idx: s32[3,1]) -> (f32[8], f32[3], f32[8]) {
  %x = f32[8] parameter(0)
  %idx = s32[3,1] parameter(1)
  %e = f32[8] exponential(%x)
  %s = f32[8] sort(%e), dimensions={0}, to_apply=%lt
  %g = f32[3] gather(%s, %idx), offset_dims={}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=1, slice_sizes={1}
  %zero = s32[] constant(0)
  %init = (s32[], f32[8]) tuple(%zero, %x)
  %loop = (s32[], f32[8]) while(%init), condition=%cond, body=%body
  %lv = f32[8] get-tuple-element(%loop), index=1
  %n = f32[8] negate(%s)
  ROOT %r = (f32[8], f32[3], f32[8]) tuple(%n, %g, %lv)
})", 1e-6, 1e-6, {}, Ranges{-1, 6});
  ASSERT_NE(exe, nullptr);
  EXPECT_EQ(exe->KernelKind("s"), "sort");  // sort_kernel.cc
  EXPECT_EQ(exe->KernelKind("g"), "gather");  // gather_scatter_kernels.cc
  EXPECT_EQ(exe->KernelKind("loop"), "while");  // control_flow_kernels.cc
  EXPECT_EQ(exe->KernelKind("n"), "library-loop");  // loop_kernels.cc
  EXPECT_EQ(exe->KernelKind("e"), "library-loop");
}

TEST(FallbackTest, InvalidModuleIsAnError) {
  auto module = hlo::ParseHloModule(R"(HloModule m
ENTRY %main {
  %x = f32[4] parameter(0)
  ROOT %r = f32[5] negate(%x)
})");
  ASSERT_TRUE(module.ok());
  EXPECT_FALSE(CompileForCpu(*std::move(module)).ok());
}

}  // namespace
}  // namespace jx::cpu::reduce_dot_test
