// Convolution and dot kernels of the CPU backend (conv_kernel.cc, dot_kernel.cc on the kernel
// library) against the HLO evaluator: every element type, every convolution path (channels
// last and first, depthwise, feature and batch groups, strides, padding, both dilations,
// 1x1, permuted outputs) and fused epilogues, with the evaluator fallback turned off.
#include <gtest/gtest.h>

#include <string>
#include <string_view>

#include "jx/compiler/hlo/str_util.h"
#include "tests/compiler/backend/cpu/cpu_test_util.h"

namespace jx::cpu::conv_dot_kernel_test {
namespace {

using testing::CheckAgainstEvaluator;
using testing::Ranges;

CpuCompileOptions NoFallback(int64_t tile_elements = 2048) {
  CpuCompileOptions o;
  o.tile_elements = tile_elements;
  o.allow_evaluator_fallback = false;
  return o;
}

// The evaluator accumulates floats in double and rounds once; the kernels accumulate in
// f32 (f64 for f64) and round once: at most an ulp of the result type apart, plus f32
// rounding of the sum (inputs are small integers for integer types: exact).
struct Tolerance {
  double rtol, atol;
};
Tolerance TolFor(std::string_view type) {
  if (type == "f64") return {1e-12, 1e-12};
  if (type == "f32") return {1e-5, 1e-5};
  if (type == "bf16") return {1.6e-2, 2e-2};
  if (type == "f16") return {2e-3, 4e-3};
  return {0, 0};
}
Ranges RangesFor(std::string_view type) {
  if (type[0] == 'u') return {0, 3};
  if (type[0] == 's') return {-3, 3};
  return {-1, 1};
}

struct ConvCase {
  const char* name;
  const char* lhs;     // lhs dims
  const char* rhs;     // rhs dims
  const char* out;     // out dims
  const char* window;  // window attribute
  const char* labels;  // dim_labels
  const char* extra;   // ", feature_group_count=..." or ""
};

const ConvCase kConvCases[] = {
    {"NHWC 3x3 same", "2,9,8,5", "3,3,5,6", "2,9,8,6", "size=3x3 pad=1_1x1_1", "b01f_01io->b01f", ""},
    {"NCHW 3x3 same", "2,5,9,8", "6,5,3,3", "2,6,9,8", "size=3x3 pad=1_1x1_1", "bf01_oi01->bf01", ""},
    {"NHWC strided asymmetric pad", "2,11,10,3", "3,2,3,4", "2,5,5,4", "size=3x2 stride=2x2 pad=1_0x0_1",
     "b01f_01io->b01f", ""},
    {"NCHW rhs dilation", "1,3,10,9", "4,3,3,2", "1,4,6,7", "size=3x2 rhs_dilate=2x2",
     "bf01_oi01->bf01", ""},
    {"NHWC lhs dilation (transposed)", "1,4,5,3", "3,3,3,2", "1,7,11,2",
     "size=3x3 pad=1_1x2_2 lhs_dilate=2x2", "b01f_01io->b01f", ""},
    {"NHWC depthwise", "2,8,7,6", "3,3,1,6", "2,8,7,6", "size=3x3 pad=1_1x1_1", "b01f_01io->b01f",
     ", feature_group_count=6"},
    {"NHWC depthwise multiplier 2 stride 2", "1,9,9,3", "3,3,1,6", "1,5,5,6", "size=3x3 stride=2x2 pad=1_1x1_1",
     "b01f_01io->b01f", ", feature_group_count=3"},
    {"NCHW depthwise", "1,4,7,7", "4,1,3,3", "1,4,7,7", "size=3x3 pad=1_1x1_1", "bf01_oi01->bf01",
     ", feature_group_count=4"},
    {"NHWC feature groups", "2,6,6,8", "3,3,4,6", "2,4,4,6", "size=3x3", "b01f_01io->b01f",
     ", feature_group_count=2"},
    {"NCHW feature groups", "2,6,5,5", "9,2,3,3", "2,9,5,5", "size=3x3 pad=1_1x1_1", "bf01_oi01->bf01",
     ", feature_group_count=3"},
    {"NHWC batch groups", "4,5,5,3", "3,3,3,4", "2,5,5,4", "size=3x3 pad=1_1x1_1", "b01f_01io->b01f",
     ", batch_group_count=2"},
    {"NCHW batch groups", "6,2,5,5", "3,2,3,3", "2,3,3,3", "size=3x3", "bf01_oi01->bf01",
     ", batch_group_count=3"},
    {"NHWC 1x1", "2,6,5,8", "1,1,8,7", "2,6,5,7", "size=1x1", "b01f_01io->b01f", ""},
    {"NCHW 1x1", "2,8,6,5", "7,8,1,1", "2,7,6,5", "size=1x1", "bf01_oi01->bf01", ""},
    {"NHWC in, NCHW out", "2,7,6,3", "3,3,3,5", "2,5,7,6", "size=3x3 pad=1_1x1_1", "b01f_01io->bf01", ""},
    {"1d NWC", "3,20,4", "5,4,6", "3,8,6", "size=5 stride=2", "b0f_0io->b0f", ""},
    {"3d NDHWC", "1,4,5,4,2", "2,3,2,2,3", "1,3,5,3,3", "size=2x3x2 pad=0_0x1_1x0_0",
     "b012f_012io->b012f", ""},
    // Large enough for tiles spread over threads (channels-last and channels-first tiles).
    {"NHWC tiled", "2,24,24,16", "3,3,16,12", "2,24,24,12", "size=3x3 pad=1_1x1_1", "b01f_01io->b01f", ""},
    {"NCHW tiled", "4,16,24,24", "12,16,3,3", "4,12,24,24", "size=3x3 pad=1_1x1_1", "bf01_oi01->bf01", ""},
};

std::string ConvModule(const ConvCase& c, std::string_view type, std::string_view out_type) {
  return hlo::StrCat("HloModule m\nENTRY %main (x: ", type, "[", c.lhs, "], k: ", type, "[", c.rhs, "]) -> ",
                     out_type, "[", c.out, "] {\n  %x = ", type, "[", c.lhs, "] parameter(0)\n  %k = ", type, "[",
                     c.rhs, "] parameter(1)\n  ROOT %r = ", out_type, "[", c.out, "] convolution(%x, %k), window={",
                     c.window, "}, dim_labels=", c.labels, c.extra, "\n}\n");
}

TEST(ConvKernelTest, EveryPathAndTypeMatchesTheEvaluator) {
  for (const ConvCase& c : kConvCases) {
    for (const char* type : {"f32", "f64", "bf16", "f16", "s32", "s8", "u8"}) {
      SCOPED_TRACE(hlo::StrCat(c.name, " ", type));
      const Tolerance tol = TolFor(type);
      auto exe = CheckAgainstEvaluator(ConvModule(c, type, type), tol.rtol, tol.atol, NoFallback(),
                                       RangesFor(type));
      if (exe) {
        EXPECT_EQ(exe->KernelKind("r"), "conv");
      }
    }
  }
}

TEST(ConvKernelTest, WiderResultTypes) {
  // preferred_element_type: bf16 operands with an f32 result, s8 operands with s32.
  const ConvCase& c = kConvCases[0];
  auto f = CheckAgainstEvaluator(ConvModule(c, "bf16", "f32"), 1e-5, 1e-5, NoFallback());
  if (f) {
    EXPECT_EQ(f->KernelKind("r"), "conv");
  }
  auto i = CheckAgainstEvaluator(ConvModule(c, "s8", "s32"), 0, 0, NoFallback(), Ranges{-100, 100});
  if (i) {
    EXPECT_EQ(i->KernelKind("r"), "conv");
  }
}

// conv + broadcast bias + relu as the fusion pass builds it.
std::string ConvBiasRelu(const ConvCase& c, std::string_view type, int feature_dim, std::string_view root) {
  const std::string out = hlo::StrCat(type, "[", c.out, "]");
  std::string features;
  {
    std::string_view dims = c.out;
    for (int d = 0; d <= feature_dim; ++d) {
      const size_t comma = dims.find(',');
      if (d == feature_dim) features = std::string(dims.substr(0, comma));
      dims.remove_prefix(comma == std::string_view::npos ? dims.size() : comma + 1);
    }
  }
  const std::string lhs = hlo::StrCat(type, "[", c.lhs, "]"), rhs = hlo::StrCat(type, "[", c.rhs, "]");
  const std::string bias = hlo::StrCat(type, "[", features, "]");
  return hlo::StrCat("HloModule m\n%fused (p0: ", lhs, ", p1: ", rhs, ", p2: ", bias, ") -> ", root, "[", c.out,
                     "] {\n  %p0 = ", lhs, " parameter(0)\n  %p1 = ", rhs, " parameter(1)\n  %p2 = ", bias,
                     " parameter(2)\n  %c = ", out, " convolution(%p0, %p1), window={", c.window,
                     "}, dim_labels=", c.labels, c.extra, "\n  %b = ", out, " broadcast(%p2), dimensions={",
                     feature_dim, "}\n  %a = ", out, " add(%c, %b)\n  %z = ", type, "[] constant(0)\n  %bz = ", out,
                     " broadcast(%z), dimensions={}\n  %relu = ", out, " maximum(%a, %bz)\n",
                     root == type ? hlo::StrCat("  ROOT %o = ", out, " negate(%relu)\n")
                                  : hlo::StrCat("  ROOT %o = ", root, "[", c.out, "] convert(%relu)\n"),
                     "}\nENTRY %main (x: ", lhs, ", k: ", rhs, ", bias: ", bias, ") -> ", root, "[", c.out,
                     "] {\n  %x = ", lhs, " parameter(0)\n  %k = ", rhs, " parameter(1)\n  %bias = ", bias,
                     " parameter(2)\n  ROOT %fusion = ", root, "[", c.out,
                     "] fusion(%x, %k, %bias), kind=kOutput, calls=%fused\n}\n");
}

TEST(ConvKernelTest, BiasReluEpilogueFusedPerTile) {
  struct Fused {
    int conv_case;
    int feature_dim;
  };
  // NHWC and NCHW (natural layouts), depthwise, 1x1, permuted output, tiled paths.
  const Fused cases[] = {{0, 3}, {1, 1}, {5, 3}, {7, 1}, {12, 3}, {13, 1}, {14, 1}, {17, 3}, {18, 1}};
  for (const Fused& f : cases) {
    const ConvCase& c = kConvCases[f.conv_case];
    for (const char* type : {"f32", "bf16", "s32"}) {
      // Small tiles: many epilogue calls per conv tile.
      for (int64_t tile : {128, 2048}) {
        SCOPED_TRACE(hlo::StrCat(c.name, " ", type, " tile ", tile));
        const Tolerance tol = TolFor(type);
        auto exe = CheckAgainstEvaluator(ConvBiasRelu(c, type, f.feature_dim, type), tol.rtol, tol.atol,
                                         NoFallback(tile), RangesFor(type));
        if (exe) {
          EXPECT_EQ(exe->KernelKind("fusion"), "conv+epilogue");
        }
      }
    }
  }
  // A root of another type: the conv lands in scratch, the epilogue still runs per tile.
  auto exe = CheckAgainstEvaluator(ConvBiasRelu(kConvCases[17], "f32", 3, "bf16"), 1e-2, 1e-2, NoFallback());
  if (exe) {
    EXPECT_EQ(exe->KernelKind("fusion"), "conv+epilogue");
  }
}

TEST(ConvKernelTest, EpilogueReadingTheConvTransposedRunsAfterIt) {
  auto exe = CheckAgainstEvaluator(R"(HloModule m
%fused (p0: f32[1,6,6,4], p1: f32[3,3,4,4]) -> f32[1,6,6,4] {
  %p0 = f32[1,6,6,4] parameter(0)
  %p1 = f32[3,3,4,4] parameter(1)
  %c = f32[1,6,6,4] convolution(%p0, %p1), window={size=3x3 pad=1_1x1_1}, dim_labels=b01f_01io->b01f
  %t = f32[1,6,6,4] transpose(%c), dimensions={0,2,1,3}
  ROOT %s = f32[1,6,6,4] add(%c, %t)
}
ENTRY %main (x: f32[1,6,6,4], k: f32[3,3,4,4]) -> f32[1,6,6,4] {
  %x = f32[1,6,6,4] parameter(0)
  %k = f32[3,3,4,4] parameter(1)
  ROOT %fusion = f32[1,6,6,4] fusion(%x, %k), kind=kOutput, calls=%fused
})", 1e-5, 1e-5, NoFallback());
  if (exe) {
    EXPECT_EQ(exe->KernelKind("fusion"), "conv+epilogue");
  }
}

TEST(ConvKernelTest, EmptyShapes) {
  // Zero input features: the sum is empty, the result zeros (then the epilogue).
  auto exe = CheckAgainstEvaluator(R"(HloModule m
ENTRY %main (x: f32[2,5,5,0], k: f32[3,3,0,4]) -> f32[2,5,5,4] {
  %x = f32[2,5,5,0] parameter(0)
  %k = f32[3,3,0,4] parameter(1)
  ROOT %r = f32[2,5,5,4] convolution(%x, %k), window={size=3x3 pad=1_1x1_1}, dim_labels=b01f_01io->b01f
})", 0, 0, NoFallback());
  if (exe) {
    EXPECT_EQ(exe->KernelKind("r"), "conv");
  }
  CheckAgainstEvaluator(R"(HloModule m
ENTRY %main (x: f32[0,5,5,3], k: f32[3,3,3,4]) -> f32[0,5,5,4] {
  %x = f32[0,5,5,3] parameter(0)
  %k = f32[3,3,3,4] parameter(1)
  ROOT %r = f32[0,5,5,4] convolution(%x, %k), window={size=3x3 pad=1_1x1_1}, dim_labels=b01f_01io->b01f
})", 0, 0, NoFallback());
}

std::string DotModule(std::string_view type, std::string_view out_type, std::string_view lhs,
                      std::string_view rhs, std::string_view out, std::string_view dnums) {
  return hlo::StrCat("HloModule m\nENTRY %main (a: ", type, "[", lhs, "], b: ", type, "[", rhs, "]) -> ", out_type,
                     "[", out, "] {\n  %a = ", type, "[", lhs, "] parameter(0)\n  %b = ", type, "[", rhs,
                     "] parameter(1)\n  ROOT %r = ", out_type, "[", out, "] dot(%a, %b), ", dnums, "\n}\n");
}

TEST(DotKernelTest, EveryTypeMatchesTheEvaluator) {
  struct Case {
    const char *lhs, *rhs, *out, *dnums;
  };
  const Case cases[] = {
      {"37,29", "29,23", "37,23", "lhs_contracting_dims={1}, rhs_contracting_dims={0}"},
      {"29,37", "23,29", "37,23", "lhs_contracting_dims={0}, rhs_contracting_dims={1}"},
      {"3,17,9", "3,9,5", "3,17,5",
       "lhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_batch_dims={0}, rhs_contracting_dims={1}"},
      {"4,6,3,5", "5,3,7", "4,6,7", "lhs_contracting_dims={2,3}, rhs_contracting_dims={1,0}"},
      {"130,300", "300,90", "130,90", "lhs_contracting_dims={1}, rhs_contracting_dims={0}"},
      {"8", "8", "", "lhs_contracting_dims={0}, rhs_contracting_dims={0}"},
      {"5,0", "0,4", "5,4", "lhs_contracting_dims={1}, rhs_contracting_dims={0}"},
  };
  for (const Case& c : cases) {
    for (const char* type : {"f32", "f64", "bf16", "f16", "s64", "s32", "s16", "s8", "u8", "u32"}) {
      SCOPED_TRACE(hlo::StrCat(type, " ", c.lhs, " x ", c.rhs));
      const Tolerance tol = TolFor(type);
      auto exe = CheckAgainstEvaluator(DotModule(type, type, c.lhs, c.rhs, c.out, c.dnums), tol.rtol, tol.atol,
                                       NoFallback(), RangesFor(type));
      if (exe) {
        EXPECT_EQ(exe->KernelKind("r"), "dot");
      }
    }
  }
  // bf16 operands, f32 result (preferred_element_type): f32 accumulation, no rounding to bf16.
  auto wide = CheckAgainstEvaluator(DotModule("bf16", "f32", "64,300", "300,48", "64,48",
                                              "lhs_contracting_dims={1}, rhs_contracting_dims={0}"),
                                    1e-5, 1e-5, NoFallback());
  if (wide) {
    EXPECT_EQ(wide->KernelKind("r"), "dot");
  }
}

TEST(DotKernelTest, EpilogueOnHalfAndIntegerDots) {
  for (const char* type : {"bf16", "f16", "s32"}) {
    SCOPED_TRACE(type);
    const std::string t = type;
    const std::string text = hlo::StrCat(R"(HloModule m
%fused (p0: T[70,90], p1: T[90,50], p2: T[50]) -> T[70,50] {
  %p0 = T[70,90] parameter(0)
  %p1 = T[90,50] parameter(1)
  %p2 = T[50] parameter(2)
  %d = T[70,50] dot(%p0, %p1), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  %b = T[70,50] broadcast(%p2), dimensions={1}
  %a = T[70,50] add(%d, %b)
  %z = T[] constant(0)
  %bz = T[70,50] broadcast(%z), dimensions={}
  ROOT %r = T[70,50] maximum(%a, %bz)
}
ENTRY %main (x: T[70,90], w: T[90,50], bias: T[50]) -> T[70,50] {
  %x = T[70,90] parameter(0)
  %w = T[90,50] parameter(1)
  %bias = T[50] parameter(2)
  ROOT %fusion = T[70,50] fusion(%x, %w, %bias), kind=kOutput, calls=%fused
})");
    std::string typed = text;
    for (size_t pos = 0; (pos = typed.find("T[", pos)) != std::string::npos; pos += t.size()) {
      typed.replace(pos, 1, t);
    }
    const Tolerance tol = TolFor(type);
    auto exe = CheckAgainstEvaluator(typed, tol.rtol, tol.atol, NoFallback(128), RangesFor(type));
    if (exe) {
      EXPECT_EQ(exe->KernelKind("fusion"), "dot+epilogue");
    }
  }
}

}  // namespace
}  // namespace jx::cpu::conv_dot_kernel_test
