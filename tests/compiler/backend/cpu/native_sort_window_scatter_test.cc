// The native sort, reduce-window and scatter kernels against the evaluator, bit for bit.
#include <gtest/gtest.h>

#include <string>

#include "jx/compiler/hlo/str_util.h"
#include "tests/compiler/backend/cpu/native_kernel_test_util.h"

namespace jx::cpu::native_sort_window_scatter_test {
namespace {

using testing::ExactOptions;
using testing::ExpectExact;

// sort of x: kt[dims] (and an s32 iota carried along when with_iota) by `compare`
// (LT/GT of parameters 0 and 1, type= suffix given).
std::string SortModule(const std::string& kt, const std::string& dims, int64_t dim,
                       const std::string& dir, const std::string& type_attr, bool with_iota) {
  const std::string params = with_iota
                                 ? hlo::StrCat("a: ", kt, "[], b: ", kt, "[], c: s32[], d: s32[]")
                                 : hlo::StrCat("a: ", kt, "[], b: ", kt, "[]");
  std::string cmp = hlo::StrCat("%cmp (", params, ") -> pred[] {\n  %a = ", kt,
                                "[] parameter(0)\n  %b = ", kt, "[] parameter(1)\n");
  if (with_iota) cmp += "  %c = s32[] parameter(2)\n  %d = s32[] parameter(3)\n";
  cmp += hlo::StrCat("  ROOT %lt = pred[] compare(%a, %b), direction=", dir, type_attr, "\n}\n");
  const std::string x = hlo::StrCat(kt, "[", dims, "]"), i = hlo::StrCat("s32[", dims, "]");
  if (!with_iota) {
    return hlo::StrCat("HloModule s\n", cmp, "ENTRY %main (x: ", x, ") -> ", x, " {\n  %x = ", x,
                       " parameter(0)\n  ROOT %s = ", x, " sort(%x), dimensions={", dim,
                       "}, is_stable=true, to_apply=%cmp\n}\n");
  }
  return hlo::StrCat("HloModule s\n", cmp, "ENTRY %main (x: ", x, ") -> (", x, ", ", i,
                     ") {\n  %x = ", x, " parameter(0)\n  %io = ", i,
                     " iota(), iota_dimension=", dim, "\n  ROOT %s = (", x, ", ", i,
                     ") sort(%x, %io), dimensions={", dim, "}, is_stable=true, to_apply=%cmp\n}\n");
}

TEST(SortKernelTest, OneKeyEveryTypeDirectionAndDim) {
  for (const char* kt : {"f32", "f64", "f16", "bf16", "s8", "s32", "u16", "u64", "pred"}) {
    const bool is_float = kt[0] == 'f' || kt[0] == 'b';
    for (const char* dir : {"LT", "GT"}) {
      for (int64_t dim : {0, 1}) {
        for (bool iota : {false, true}) {
          for (bool total : {true, false}) {
            if (total && !is_float) continue;
            SCOPED_TRACE(hlo::StrCat(kt, " ", dir, " dim ", dim, iota ? " +iota" : "",
                                     total ? " TOTALORDER" : ""));
            ExactOptions o;
            o.lo = is_float ? -3 : -40;  // ties
            o.hi = is_float ? 3 : 40;
            o.special = is_float ? 0.1 : 0;
            ExpectExact(SortModule(kt, "37,29", dim, dir, total ? ", type=TOTALORDER" : "", iota),
                        "s", "sort", o);
          }
        }
      }
    }
  }
}

TEST(SortKernelTest, LexicographicTwoKeysAndLargeInputs) {
  // Key 0 descending by total order, ties by key 1 ascending (lax's multi-key comparator).
  ExpectExact(R"(HloModule s
%cmp (a: f32[], b: f32[], c: s32[], d: s32[], e: u8[], f: u8[]) -> pred[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  %c = s32[] parameter(2)
  %d = s32[] parameter(3)
  %e = u8[] parameter(4)
  %f = u8[] parameter(5)
  %gt = pred[] compare(%a, %b), direction=GT, type=TOTALORDER
  %eq = pred[] compare(%a, %b), direction=EQ, type=TOTALORDER
  %lt1 = pred[] compare(%c, %d), direction=LT
  %tie = pred[] and(%eq, %lt1)
  ROOT %r = pred[] or(%gt, %tie)
}
ENTRY %main (x: f32[50,40], y: s32[50,40], z: u8[50,40]) -> (f32[50,40], s32[50,40], u8[50,40]) {
  %x = f32[50,40] parameter(0)
  %y = s32[50,40] parameter(1)
  %z = u8[50,40] parameter(2)
  ROOT %s = (f32[50,40], s32[50,40], u8[50,40]) sort(%x, %y, %z), dimensions={1}, to_apply=%cmp
})", "s", "sort", ExactOptions{-2, 2, 0.2});
  ExactOptions nan;
  nan.special = 0.01;
  nan.lo = -1000;
  nan.hi = 1000;
  ExpectExact(SortModule("f32", "200000", 0, "LT", ", type=TOTALORDER", true), "s", "sort", nan);
  ExpectExact(SortModule("f32", "300,400", 0, "GT", ", type=TOTALORDER", true), "s", "sort", nan);
  // IEEE compare with NaNs: not a strict weak order, the evaluator's merge order decides.
  ExpectExact(SortModule("f32", "100000", 0, "LT", "", false), "s", "sort", nan);
  ExpectExact(SortModule("s32", "0,7", 1, "LT", "", true), "s", "sort");
  ExpectExact(SortModule("s32", "7,0", 1, "LT", "", false), "s", "sort");
}

// top_k as lax lowers it: a stable descending sort of (x, iota) sliced to [..., 0:k]. The
// kernel selects the top k per line (ties to the lower index) and writes only that prefix.
std::string TopKModule(const std::string& t, int64_t rows, int64_t n, int64_t k, bool keep_full) {
  const std::string x = hlo::StrCat(t, "[", rows, ",", n, "]"), i = hlo::StrCat("s32[", rows, ",", n, "]");
  const std::string vk = hlo::StrCat(t, "[", rows, ",", k, "]"), ik = hlo::StrCat("s32[", rows, ",", k, "]");
  const std::string type = t[0] == 'f' || t[0] == 'b' ? ", type=TOTALORDER" : "";
  const std::string out = keep_full ? hlo::StrCat("(", vk, ", ", ik, ", ", x, ")") : hlo::StrCat("(", vk, ", ", ik, ")");
  return hlo::StrCat(
      "HloModule t\n%cmp (a: ", t, "[], b: ", t, "[], c: s32[], d: s32[]) -> pred[] {\n  %a = ", t,
      "[] parameter(0)\n  %b = ", t, "[] parameter(1)\n  %c = s32[] parameter(2)\n  %d = s32[] parameter(3)\n",
      "  ROOT %gt = pred[] compare(%a, %b), direction=GT", type, "\n}\nENTRY %main (x: ", x, ") -> ", out,
      " {\n  %x = ", x, " parameter(0)\n  %io = ", i, " iota(), iota_dimension=1\n  %s = (", x, ", ", i,
      ") sort(%x, %io), dimensions={1}, is_stable=true, to_apply=%cmp\n  %v = ", x,
      " get-tuple-element(%s), index=0\n  %j = ", i, " get-tuple-element(%s), index=1\n  %vs = ", vk,
      " slice(%v), slice={[0:", rows, "], [0:", k, "]}\n  %js = ", ik, " slice(%j), slice={[0:", rows, "], [0:", k,
      "]}\n  ROOT %r = ", out, " tuple(%vs, %js", keep_full ? ", %v" : "", ")\n}\n");
}

TEST(SortKernelTest, TopKPrefixEveryTypeWithTies) {
  for (const char* t : {"f32", "f64", "f16", "bf16", "s8", "s32", "u16", "pred"}) {
    const bool is_float = t[0] == 'f' || t[0] == 'b';
    for (int64_t k : {1, 5, 37}) {
      for (bool keep_full : {false, true}) {
        SCOPED_TRACE(hlo::StrCat(t, " k=", k, keep_full ? " (full result read too)" : ""));
        ExactOptions o;
        o.lo = is_float ? -3 : -20;  // ties
        o.hi = is_float ? 3 : 20;
        o.special = is_float ? 0.1 : 0;
        ExpectExact(TopKModule(t, 29, 40, k, keep_full), "s", keep_full ? "sort" : "top-k", o);
      }
    }
  }
}

TEST(SortKernelTest, ComparatorsOutsideTheFormStayOnTheFallback) {
  std::string text = SortModule("f32", "5,6", 1, "LT", "", false);
  const std::string from = "compare(%a, %b)";
  text.replace(text.find(from), from.size(), "compare(%a, %a)");  // fine: self compare
  ExpectExact(text, "s", "sort");
  ExpectExact(R"(HloModule s
%cmp (a: f32[], b: f32[]) -> pred[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  %n = f32[] negate(%a)
  ROOT %lt = pred[] compare(%n, %b), direction=LT
}
ENTRY %main (x: f32[5,6]) -> f32[5,6] {
  %x = f32[5,6] parameter(0)
  ROOT %s = f32[5,6] sort(%x), dimensions={1}, to_apply=%cmp
})", "s", "fallback");
}

std::string WindowModule(const std::string& t, const std::string& in, const std::string& out,
                         const std::string& window, const std::string& op,
                         const std::string& init) {
  return hlo::StrCat("HloModule w\n%red (a: ", t, "[], b: ", t, "[]) -> ", t, "[] {\n  %a = ", t,
                     "[] parameter(0)\n  %b = ", t, "[] parameter(1)\n  ROOT %c = ", t, "[] ",
                     op, "(%a, %b)\n}\nENTRY %main (x: ", t, "[", in, "]) -> ", t,
                     "[", out, "] {\n  %x = ", t, "[", in, "] parameter(0)\n  %i = ", t,
                     "[] constant(", init, ")\n  ROOT %w = ", t, "[", out,
                     "] reduce-window(%x, %i), window={", window, "}, to_apply=%red\n}\n");
}

// The kernel library's numerics for float sums as HLO: the window summed in f64 (in window
// order) and rounded once (16-bit floats through f32, as the kernel stores them).
std::string WidenedSumWindowModule(const std::string& t, const std::string& in, const std::string& out,
                                   const std::string& window) {
  const std::string back = t == "f32" ? "" : hlo::StrCat("  %w32 = f32[", out, "] convert(%w64)\n");
  return hlo::StrCat("HloModule w\n%red (a: f64[], b: f64[]) -> f64[] {\n  %a = f64[] parameter(0)\n",
                     "  %b = f64[] parameter(1)\n  ROOT %c = f64[] add(%a, %b)\n}\nENTRY %main (x: ", t, "[",
                     in, "]) -> ", t, "[", out, "] {\n  %x = ", t, "[", in, "] parameter(0)\n  %xw = f64[", in,
                     "] convert(%x)\n  %i = f64[] constant(0)\n  %w64 = f64[", out,
                     "] reduce-window(%xw, %i), window={", window, "}, to_apply=%red\n", back, "  ROOT %w = ", t,
                     "[", out, "] convert(", t == "f32" ? "%w64" : "%w32", ")\n}\n");
}

TEST(ReduceWindowKernelTest, GeneralWindowsEveryType) {
  struct Case {
    const char *in, *out, *window;
  };
  const Case cases[] = {
      {"9,11", "4,5", "size=3x3 stride=2x2"},
      {"9,11", "5,6", "size=3x3 stride=2x2 pad=1_1x1_1"},
      {"9,11", "9,9", "size=3x3 pad=1_1x1_1 rhs_dilate=1x2"},
      {"9,11", "8,20", "size=2x3 pad=0_0x1_0 lhs_dilate=1x2"},
      {"4,9,11", "4,9,11", "size=1x3x3 pad=0_0x1_1x1_1"},
      {"6,5", "0,5", "size=7x1"},
  };
  for (const char* t : {"f32", "f64", "f16", "bf16", "s8", "s32", "u16", "pred"}) {
    const bool is_float = t[0] == 'f' || t[0] == 'b';
    for (const char* op : {"add", "maximum", "minimum"}) {
      for (const Case& c : cases) {
        SCOPED_TRACE(hlo::StrCat(t, " ", op, " ", c.window));
        ExactOptions o;
        o.special = is_float && std::string(op) != "add" ? 0.05 : 0;
        o.lo = is_float ? -2 : -60;
        o.hi = is_float ? 2 : 60;
        const std::string init = std::string(t) == "pred" ? "false" : "0";
        // Float sums accumulate in f64 (as eager reduce_window_sum), not in the element type.
        if (is_float && t != std::string("f64") && op == std::string("add")) {
          o.reference = WidenedSumWindowModule(t, c.in, c.out, c.window);
        }
        ExpectExact(WindowModule(t, c.in, c.out, c.window, op, init), "w", "reduce-window", o);
      }
    }
  }
}

TEST(ReduceWindowKernelTest, MultiplyAndOrAndInitValues) {
  const char* window = "size=3x2 stride=2x1 pad=1_1x0_1";
  for (const char* t : {"s8", "s32", "u16", "pred"}) {
    for (const char* op : {"multiply", "and", "or"}) {
      SCOPED_TRACE(hlo::StrCat(t, " ", op));
      const bool pred = t == std::string("pred");
      const std::string all_ones = t == std::string("u16") ? "65535" : "-1";
      const std::string init = pred ? (op == std::string("or") ? "false" : "true")
                                    : (op == std::string("and") ? all_ones : op == std::string("or") ? "0" : "1");
      ExpectExact(WindowModule(t, "9,11", "5,11", window, op, init), "w", "reduce-window",
                  ExactOptions{-9, 9});
    }
  }
  // An init that is not the reducer's identity takes part in every output (and is the
  // output of an all-padding window).
  ExpectExact(WindowModule("s32", "9,11", "5,14", "size=3x2 stride=2x1 pad=1_1x2_2", "maximum", "3"), "w",
              "reduce-window", ExactOptions{-9, 9});
  ExpectExact(WindowModule("f32", "9,11", "5,14", "size=3x2 stride=2x1 pad=1_1x2_2", "minimum", "-0.5"), "w",
              "reduce-window", ExactOptions{-2, 2, 0.05});
}

TEST(ReduceWindowKernelTest, LargeAndScans) {
  ExactOptions sum;
  sum.reference = WidenedSumWindowModule("f32", "400,400", "399,399", "size=2x2");
  ExpectExact(WindowModule("f32", "400,400", "399,399", "size=2x2", "add", "0"), "w",
              "reduce-window", sum);
  ExpectExact(WindowModule("s8", "400,400", "200,200", "size=3x3 stride=2x2 pad=1_0x1_0",
                           "maximum", "-128"),
              "w", "reduce-window", ExactOptions{-128, 127});
  // A running scan (the cumulative ops' window) is not walked as a window.
  auto exe = CompileForCpu(
      hlo::ParseHloModule(WindowModule("s8", "6,5", "6,5", "size=6x1 pad=5_0x0_0", "add", "0"))
          .value());
  ASSERT_TRUE(exe.ok());
  EXPECT_NE((*exe)->KernelKind("w"), "reduce-window");
}

std::string ScatterModule(const std::string& t, const std::string& operand,
                          const std::string& it, const std::string& indices,
                          const std::string& updates, const std::string& dnums,
                          const std::string& combiner) {
  const std::string root =
      combiner == "overwrite" ? "%b" : hlo::StrCat(t, "[] ", combiner, "(%a, %b)");
  const std::string body =
      combiner == "overwrite"
          ? hlo::StrCat("  %a = ", t, "[] parameter(0)\n  ROOT %b = ", t, "[] parameter(1)\n")
          : hlo::StrCat("  %a = ", t, "[] parameter(0)\n  %b = ", t, "[] parameter(1)\n  ROOT %c = ",
                        root, "\n");
  const std::string o = hlo::StrCat(t, "[", operand, "]"), i = hlo::StrCat(it, "[", indices, "]"),
                    u = hlo::StrCat(t, "[", updates, "]");
  return hlo::StrCat("HloModule s\n%comb (a: ", t, "[], b: ", t, "[]) -> ", t, "[] {\n", body,
                     "}\nENTRY %main (x: ", o, ", i: ", i, ", u: ", u, ") -> ", o, " {\n  %x = ", o,
                     " parameter(0)\n  %i = ", i, " parameter(1)\n  %u = ", u,
                     " parameter(2)\n  ROOT %s = ", o, " scatter(%x, %i, %u), ", dnums,
                     ", to_apply=%comb\n}\n");
}

// The same scatter computed in f32 and rounded once at the end.
std::string WidenedScatterModule(const std::string& t, const std::string& operand, const std::string& it,
                                 const std::string& indices, const std::string& updates, const std::string& dnums,
                                 const std::string& combiner) {
  const std::string o = hlo::StrCat(t, "[", operand, "]"), i = hlo::StrCat(it, "[", indices, "]"),
                    u = hlo::StrCat(t, "[", updates, "]");
  return hlo::StrCat("HloModule s\n%comb (a: f32[], b: f32[]) -> f32[] {\n  %a = f32[] parameter(0)\n",
                     "  %b = f32[] parameter(1)\n  ROOT %c = f32[] ", combiner, "(%a, %b)\n}\nENTRY %main (x: ", o,
                     ", i: ", i, ", u: ", u, ") -> ", o, " {\n  %x = ", o, " parameter(0)\n  %i = ", i,
                     " parameter(1)\n  %u = ", u, " parameter(2)\n  %xw = f32[", operand,
                     "] convert(%x)\n  %uw = f32[", updates, "] convert(%u)\n  %sw = f32[", operand,
                     "] scatter(%xw, %i, %uw), ", dnums, ", to_apply=%comb\n  ROOT %s = ", o,
                     " convert(%sw)\n}\n");
}

TEST(ScatterKernelTest, CombinersTypesAndDimensionNumbers) {
  struct Case {
    const char *operand, *indices, *updates, *dnums;
  };
  const Case cases[] = {
      // Rows of a matrix, duplicates and out-of-bounds indices (range -2..12).
      {"10,6", "30,1", "30,6",
       "update_window_dims={1}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, "
       "index_vector_dim=1"},
      // Elements by 2-d index, implicit vector dim after batch dims [5,4].
      {"10,6", "5,4,2", "5,4",
       "update_window_dims={}, inserted_window_dims={0,1}, scatter_dims_to_operand_dims={0,1}, "
       "index_vector_dim=2"},
      // Windows leading in the update shape, index vector dim first.
      {"10,6", "1,7", "3,7",
       "update_window_dims={0}, inserted_window_dims={1}, scatter_dims_to_operand_dims={1}, "
       "index_vector_dim=0"},
      // Scalar indices (index_vector_dim == rank), 2x3 windows.
      {"10,6", "9", "9,2,3",
       "update_window_dims={1,2}, inserted_window_dims={}, scatter_dims_to_operand_dims={0}, "
       "index_vector_dim=1"},
  };
  for (const char* t : {"f32", "f16", "bf16", "f64", "s8", "u32", "s64", "pred"}) {
    for (const char* comb : {"add", "overwrite", "maximum", "minimum", "multiply"}) {
      for (const char* it : {"s32", "u8", "s64"}) {
        for (const Case& c : cases) {
          SCOPED_TRACE(hlo::StrCat(t, " ", comb, " ", it, " ", c.dnums));
          ExactOptions o{-2, 12};
          const bool half = t == std::string("f16") || t == std::string("bf16");
          if (half && (comb == std::string("add") || comb == std::string("multiply"))) {
            // 16-bit floats combine in f32 and round once (as eager scatter_add).
            o.reference = WidenedScatterModule(t, c.operand, it, c.indices, c.updates, c.dnums, comb);
          }
          ExpectExact(ScatterModule(t, c.operand, it, c.indices, c.updates, c.dnums, comb), "s",
                      "scatter", o);
        }
      }
    }
  }
}

TEST(ScatterKernelTest, LargeAndEmpty) {
  const char* dn =
      "update_window_dims={}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, "
      "index_vector_dim=1";
  // 200K updates onto 1000 elements: accumulation order matters for f32.
  ExpectExact(ScatterModule("f32", "1000", "s32", "200000,1", "200000", dn, "add"), "s",
              "scatter", ExactOptions{-1, 999});
  ExpectExact(ScatterModule("f32", "1000", "s32", "0,1", "0", dn, "add"), "s", "scatter");
}

}  // namespace
}  // namespace jx::cpu::native_sort_window_scatter_test
