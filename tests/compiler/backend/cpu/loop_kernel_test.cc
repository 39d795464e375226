// Loop kernels (kLoop fusions and lone elementwise/shape ops) against the evaluator.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <thread>
#include <vector>

#include "jx/compiler/hlo/str_util.h"
#include "tests/compiler/backend/cpu/cpu_test_util.h"

namespace jx::cpu::loop_kernel_test {
namespace {

using testing::CheckAgainstEvaluator;
using testing::Ranges;

// A small tile so modest shapes span several tiles, with a ragged last one.
CpuCompileOptions SmallTiles(int threads = 0) {
  CpuCompileOptions o;
  o.tile_elements = 128;
  o.max_threads = threads;
  return o;
}

constexpr char kChainFusion[] = R"(HloModule chain
%fused_computation (param_0: f32[37,1000]) -> f32[37,1000] {
  %param_0 = f32[37,1000] parameter(0)
  %c15 = f32[] constant(1.5)
  %b15 = f32[37,1000] broadcast(%c15), dimensions={}
  %m = f32[37,1000] multiply(%param_0, %b15)
  %c05 = f32[] constant(0.5)
  %b05 = f32[37,1000] broadcast(%c05), dimensions={}
  %a = f32[37,1000] add(%m, %b05)
  %t = f32[37,1000] tanh(%a)
  %tx = f32[37,1000] multiply(%t, %param_0)
  %xx = f32[37,1000] multiply(%param_0, %param_0)
  %n = f32[37,1000] negate(%xx)
  %e = f32[37,1000] exponential(%n)
  ROOT %r = f32[37,1000] subtract(%tx, %e)
}
ENTRY %main (x: f32[37,1000]) -> f32[37,1000] {
  %x = f32[37,1000] parameter(0)
  ROOT %fusion = f32[37,1000] fusion(%x), kind=kLoop, calls=%fused_computation
})";

TEST(LoopKernelTest, ChainFusion) {
  auto exe = CheckAgainstEvaluator(kChainFusion, 2e-6, 1e-6, SmallTiles());
  ASSERT_NE(exe, nullptr);
  EXPECT_EQ(exe->KernelKind("fusion"), "loop");
  EXPECT_EQ(exe->memory_analysis().temp_bytes, 0);  // intermediates never reach memory
  CheckAgainstEvaluator(kChainFusion, 2e-6, 1e-6);  // default tile
}

TEST(LoopKernelTest, ThreadCountDoesNotChangeResults) {
  auto one = CompileForCpu(hlo::ParseHloModule(kChainFusion).value(), SmallTiles(1)).value();
  auto two = CompileForCpu(hlo::ParseHloModule(kChainFusion).value(), SmallTiles(2)).value();
  std::mt19937 rng(3);
  hlo::Literal x = testing::RandomLiteral(hlo::Shape(hlo::F32, {37, 1000}), rng);
  EXPECT_EQ(one->Run({&x}).value()[0], two->Run({&x}).value()[0]);
}

// Index mapping of leaves: broadcast (inner and outer), transpose, reshape, slice, reverse,
// iota, scalar constant, array constant, bitcast.
TEST(LoopKernelTest, ShapeOpsAsIndexMaps) {
  auto exe = CheckAgainstEvaluator(R"(HloModule shapes
%fused (p0: f32[7], p1: f32[3,7,5], p2: f32[105], p3: f32[6,9,3], p4: f32[5]) -> f32[5,7,3] {
  %p0 = f32[7] parameter(0)
  %p1 = f32[3,7,5] parameter(1)
  %p2 = f32[105] parameter(2)
  %p3 = f32[6,9,3] parameter(3)
  %p4 = f32[5] parameter(4)
  %b0 = f32[5,7,3] broadcast(%p0), dimensions={1}
  %t1 = f32[5,7,3] transpose(%p1), dimensions={2,1,0}
  %r2 = f32[5,7,3] reshape(%p2)
  %s3 = f32[5,7,3] slice(%p3), slice={[1:6], [1:8], [0:3]}
  %v4 = f32[5,7,3] reverse(%r2), dimensions={0,2}
  %i = s32[5,7,3] iota(), iota_dimension=1
  %fi = f32[5,7,3] convert(%i)
  %b4 = f32[5,7,3] broadcast(%p4), dimensions={0}
  %k = f32[3] constant({10, 20, 30})
  %bk = f32[5,7,3] broadcast(%k), dimensions={2}
  %x1 = f32[5,7,3] add(%b0, %t1)
  %x2 = f32[5,7,3] multiply(%x1, %r2)
  %x3 = f32[5,7,3] subtract(%x2, %s3)
  %x4 = f32[5,7,3] add(%x3, %v4)
  %x5 = f32[5,7,3] multiply(%x4, %fi)
  %x6 = f32[5,7,3] add(%x5, %b4)
  ROOT %x7 = f32[5,7,3] add(%x6, %bk)
}
ENTRY %main (a: f32[7], b: f32[3,7,5], c: f32[105], d: f32[6,9,3], e: f32[5]) -> f32[5,7,3] {
  %a = f32[7] parameter(0)
  %b = f32[3,7,5] parameter(1)
  %c = f32[105] parameter(2)
  %d = f32[6,9,3] parameter(3)
  %e = f32[5] parameter(4)
  ROOT %fusion = f32[5,7,3] fusion(%a, %b, %c, %d, %e), kind=kLoop, calls=%fused
})", 1e-6, 1e-6, SmallTiles());
  if (exe) {
    EXPECT_EQ(exe->KernelKind("fusion"), "loop");
  }
}

// A reshape after a transpose needs a second index stage; a strided slice of a reshape too.
TEST(LoopKernelTest, ReshapeOfTransposeAndStridedSlices) {
  CheckAgainstEvaluator(R"(HloModule m
%fused (p0: f32[6,10], p1: f32[4,30]) -> f32[12,5] {
  %p0 = f32[6,10] parameter(0)
  %t = f32[10,6] transpose(%p0), dimensions={1,0}
  %r = f32[12,5] reshape(%t)
  %p1 = f32[4,30] parameter(1)
  %s = f32[2,30] slice(%p1), slice={[1:4:2], [0:30]}
  %r1 = f32[12,5] reshape(%s)
  ROOT %a = f32[12,5] add(%r, %r1)
}
ENTRY %main (x: f32[6,10], y: f32[4,30]) -> f32[12,5] {
  %x = f32[6,10] parameter(0)
  %y = f32[4,30] parameter(1)
  ROOT %fusion = f32[12,5] fusion(%x, %y), kind=kLoop, calls=%fused
})", 0, 0, SmallTiles());
}

std::string UnaryModule(std::string_view op, std::string_view type, int64_t n) {
  return hlo::StrCat("HloModule u\nENTRY %main (x: ", type, "[", n, "]) -> ", type, "[", n,
                      "] {\n  %x = ", type, "[", n, "] parameter(0)\n  ROOT %r = ", type, "[", n,
                      "] ", op, "(%x)\n}\n");
}

TEST(LoopKernelTest, UnaryFloatOps) {
  struct Case {
    const char* op;
    double lo, hi, rtol32;
  };
  const Case cases[] = {
      {"negate", -5, 5, 0}, {"abs", -5, 5, 0}, {"exponential", -10, 10, 2e-6},
      {"log", 0.001, 100, 2e-6}, {"tanh", -6, 6, 3e-6}, {"logistic", -20, 20, 3e-6},
      {"sqrt", 0, 100, 0}, {"rsqrt", 0.01, 100, 2e-7}, {"sine", -10, 10, 3e-6},
      {"cosine", -10, 10, 3e-6}, {"floor", -5, 5, 0}, {"ceil", -5, 5, 0}, {"sign", -2, 2, 0},
      {"exponential-minus-one", -3, 3, 3e-6}, {"log-plus-one", -0.9, 10, 3e-6},
      {"copy", -1, 1, 0}, {"round-nearest-even", -5, 5, 0}, {"is-finite", -5, 5, 0},
      {"exponential", -120, 120, 2e-6}, {"tan", -1, 1, 2e-6}, {"cbrt", -8, 8, 2e-6},
  };
  for (const Case& c : cases) {
    for (const char* type : {"f32", "f64"}) {
      SCOPED_TRACE(hlo::StrCat(c.op, " ", type));
      std::string text = UnaryModule(c.op, type, 1003);
      if (std::string_view(c.op) == "is-finite") {
        for (std::string from : {hlo::StrCat("-> ", type), hlo::StrCat("ROOT %r = ", type)}) {
          const size_t pos = text.find(from);
          text.replace(pos, from.size(), from.substr(0, from.size() - 3) + "pred");
        }
      }
      const double rtol = std::string_view(type) == "f32" ? c.rtol32 : 1e-13;
      auto exe = CheckAgainstEvaluator(text, rtol, 1e-30, SmallTiles(), Ranges{c.lo, c.hi});
      // A lone copy only moves bytes: the data-movement kernel takes it. is-finite (f32 -> pred)
      // is a tile program; the other ops run the kernel library's loop as eager does.
      const std::string_view want = std::string_view(c.op) == "copy"        ? "data-movement"
                                    : std::string_view(c.op) == "is-finite" ? "loop"
                                                                            : "library-loop";
      if (exe) {
        EXPECT_EQ(exe->KernelKind("r"), want);
      }
    }
  }
}

std::string BinaryModule(std::string_view op, std::string_view type, std::string_view out_type,
                         std::string_view attrs = "") {
  return hlo::StrCat("HloModule b\nENTRY %main (x: ", type, "[3,333], y: ", type,
                      "[3,333]) -> ", out_type, "[3,333] {\n  %x = ", type,
                      "[3,333] parameter(0)\n  %y = ", type, "[3,333] parameter(1)\n  ROOT %r = ",
                      out_type, "[3,333] ", op, "(%x, %y)", attrs, "\n}\n");
}

TEST(LoopKernelTest, BinaryOps) {
  for (const char* type : {"f32", "f64", "s32", "s64", "u32", "s8"}) {
    const bool is_float = type[0] == 'f';
    std::vector<const char*> ops = {"add", "subtract", "multiply", "maximum", "minimum"};
    if (is_float) {
      ops.push_back("divide");
      ops.push_back("power");
      ops.push_back("atan2");
    } else {
      ops.push_back("divide");     // scalar fallback (x/0 semantics)
      ops.push_back("remainder");  // scalar fallback
      ops.push_back("and");
      ops.push_back("xor");
    }
    for (const char* op : ops) {
      SCOPED_TRACE(hlo::StrCat(op, " ", type));
      const Ranges r = is_float ? Ranges{0.1, 3} : (type[0] == 'u' ? Ranges{0, 1e9} : Ranges{-1e9, 1e9});
      CheckAgainstEvaluator(BinaryModule(op, type, type), is_float ? 1e-6 : 0, 0, SmallTiles(), r);
    }
    for (const char* dir : {"EQ", "NE", "LT", "LE", "GT", "GE"}) {
      SCOPED_TRACE(hlo::StrCat("compare ", dir, " ", type));
      CheckAgainstEvaluator(BinaryModule("compare", type, "pred", hlo::StrCat(", direction=", dir)),
                            0, 0, SmallTiles(), Ranges{-2, 2});
    }
  }
}

// 16-bit types run the kernel library's loops (16-bit floats computed in f32, rounded once
// per op, as the evaluator's literals are), and TOTALORDER compares order -0 < +0 natively.
TEST(LoopKernelTest, SixteenBitTypesAndTotalOrderCompares) {
  for (const char* type : {"f16", "bf16", "s16", "u16"}) {
    const bool is_float = type[0] != 's' && type[0] != 'u';
    // One ulp of the 16-bit float (f32 kernels may differ from the evaluator's libm in the
    // last f32 bit, which can move the rounded 16-bit result by one ulp).
    const double rtol = std::string_view(type) == "f16" ? 1e-3 : (std::string_view(type) == "bf16" ? 8e-3 : 0);
    std::vector<const char*> ops = {"add", "subtract", "multiply", "maximum", "minimum", "divide"};
    if (is_float) ops.push_back("power");
    for (const char* op : ops) {
      SCOPED_TRACE(hlo::StrCat(op, " ", type));
      const Ranges r = is_float ? Ranges{0.1, 3} : (type[0] == 'u' ? Ranges{0, 6e4} : Ranges{-3e4, 3e4});
      CheckAgainstEvaluator(BinaryModule(op, type, type), rtol, 0, SmallTiles(), r);
    }
    for (const char* dir : {"EQ", "LT", "GE"}) {
      SCOPED_TRACE(hlo::StrCat("compare ", dir, " ", type));
      CheckAgainstEvaluator(BinaryModule("compare", type, "pred", hlo::StrCat(", direction=", dir)), 0, 0,
                            SmallTiles(), Ranges{-2, 2});
    }
  }
  for (const char* type : {"f16", "bf16", "f32", "f64"}) {
    for (const char* dir : {"EQ", "NE", "LT", "LE", "GT", "GE"}) {
      SCOPED_TRACE(hlo::StrCat("total order compare ", dir, " ", type));
      CheckAgainstEvaluator(
          BinaryModule("compare", type, "pred", hlo::StrCat(", direction=", dir, ", type=TOTALORDER")), 0, 0,
          SmallTiles(), Ranges{-2, 2});
    }
  }
}

TEST(LoopKernelTest, SelectClampConvertAndImplicitScalars) {
  CheckAgainstEvaluator(R"(HloModule m
%fused (p0: f32[1000], p1: f64[1000], p2: s32[1000], p3: f32[]) -> f64[1000] {
  %p0 = f32[1000] parameter(0)
  %p1 = f64[1000] parameter(1)
  %p2 = s32[1000] parameter(2)
  %p3 = f32[] parameter(3)
  %lo = f32[] constant(-1)
  %hi = f32[] constant(1.25)
  %c = f32[1000] clamp(%lo, %p0, %hi)
  %cmp = pred[1000] compare(%p0, %c), direction=EQ
  %bp3 = f32[1000] broadcast(%p3), dimensions={}
  %s = f32[1000] select(%cmp, %bp3, %c)
  %d = f64[1000] convert(%s)
  %i = f64[1000] convert(%p2)
  %m = f64[1000] multiply(%d, %i)
  %sum = f64[1000] add(%m, %p1)
  %back = s32[1000] convert(%sum)
  %neg = s32[1000] negate(%back)
  %ab = s32[1000] abs(%neg)
  %fi = f64[1000] convert(%ab)
  ROOT %r = f64[1000] maximum(%fi, %sum)
}
ENTRY %main (xa: f32[1000], xb: f64[1000], xc: s32[1000], xd: f32[]) -> f64[1000] {
  %xa = f32[1000] parameter(0)
  %xb = f64[1000] parameter(1)
  %xc = s32[1000] parameter(2)
  %xd = f32[] parameter(3)
  ROOT %fusion = f64[1000] fusion(%xa, %xb, %xc, %xd), kind=kLoop, calls=%fused
})", 0, 0, SmallTiles(), Ranges{-3, 3});
}

// A broadcast scalar (constant or scalar parameter) on either side of a binary op is read
// as one value by the op's loop, not splatted into a tile first.
TEST(LoopKernelTest, ScalarOperandsOnEitherSide) {
  for (const char* type : {"f32", "f64", "s32", "s64", "u8"}) {
    const bool is_float = type[0] == 'f';
    std::vector<std::string> ops = {"add", "subtract", "multiply", "maximum", "minimum",
                                    "compare"};
    if (is_float) {
      ops.push_back("divide");
      ops.push_back("power");
    }
    for (const std::string& op : ops) {
      for (const bool scalar_first : {true, false}) {
        for (const bool from_parameter : {true, false}) {
          SCOPED_TRACE(hlo::StrCat(op, " ", type, scalar_first ? " scalar first" : " scalar second",
                                   from_parameter ? " (parameter)" : " (constant)"));
          const std::string out_type = op == "compare" ? "pred" : type;
          const std::string attrs = op == "compare" ? ", direction=LT" : "";
          const std::string scalar =
              from_parameter ? hlo::StrCat("%s = ", type, "[] parameter(1)")
                             : hlo::StrCat("%s = ", type, "[] constant(3)");
          const std::string args = scalar_first ? "%b, %x" : "%x, %b";
          const std::string params =
              hlo::StrCat("x: ", type, "[3,333]", from_parameter ? hlo::StrCat(", y: ", type, "[]") : "");
          const std::string text = hlo::StrCat(
              "HloModule m\nENTRY %main (", params, ") -> ", out_type, "[3,333] {\n  %x = ", type,
              "[3,333] parameter(0)\n  ", scalar, "\n  %b = ", type,
              "[3,333] broadcast(%s), dimensions={}\n  ROOT %r = ", out_type, "[3,333] ", op, "(",
              args, ")", attrs, "\n}\n");
          const Ranges r = is_float ? Ranges{0.1, 5} : Ranges{0, 6};
          CheckAgainstEvaluator(text, is_float ? 1e-6 : 0, 0, SmallTiles(), r);
        }
      }
    }
  }
  // Scalars in select and clamp, and one broadcast constant read both as a scalar (add) and
  // as a tile (exponential and the atan2 fallback splat it).
  CheckAgainstEvaluator(R"(HloModule m
%fused (p0: f32[1000], p1: f32[]) -> f32[1000] {
  %p0 = f32[1000] parameter(0)
  %p1 = f32[] parameter(1)
  %c = f32[] constant(0.75)
  %b = f32[1000] broadcast(%c), dimensions={}
  %a = f32[1000] add(%p0, %b)
  %e = f32[1000] exponential(%b)
  %t = f32[1000] atan2(%b, %a)
  %m = f32[1000] multiply(%e, %t)
  %bp1 = f32[1000] broadcast(%p1), dimensions={}
  %cmp = pred[1000] compare(%p0, %b), direction=GT
  %s = f32[1000] select(%cmp, %bp1, %m)
  %s2 = f32[1000] select(%cmp, %m, %b)
  %lo = f32[] constant(-0.5)
  %cl = f32[1000] clamp(%lo, %s, %p1)
  ROOT %r = f32[1000] add(%cl, %s2)
}
ENTRY %main (xa: f32[1000], xb: f32[]) -> f32[1000] {
  %xa = f32[1000] parameter(0)
  %xb = f32[] parameter(1)
  ROOT %fusion = f32[1000] fusion(%xa, %xb), kind=kLoop, calls=%fused
})", 2e-6, 1e-7, SmallTiles(), Ranges{-2, 2});
}

// exp's fast path covers [-87, 88]; a tile with anything else (NaN, inf, overflow,
// underflow to subnormals or zero) is recomputed exactly. Lengths cover full vector packets
// and a ragged tail.
TEST(LoopKernelTest, ExpRangeEdges) {
  const std::vector<float> special = {NAN,   INFINITY, -INFINITY, 88.5f,  88.f,  88.72f, 89.f,
                                      -87.f, -87.5f,   -88.f,     -95.f,  -104.f, -110.f, 0.f,
                                      -0.f,  1.f,      -1.f,      1e-30f, 0.5f,   20.f,   -20.f};
  for (const size_t n : {size_t{16}, size_t{21}, size_t{40}}) {
    for (const bool with_special : {false, true}) {
      std::vector<float> v(n);
      for (size_t i = 0; i < n; ++i) v[i] = -86.f + 173.f * static_cast<float>(i) / n;
      if (with_special) {
        for (size_t i = 0; i < n; ++i) v[i] = special[i % special.size()];
      }
      const std::string text = hlo::StrCat("HloModule m\nENTRY %main (x: f32[", n, "]) -> f32[", n,
                                           "] {\n  %x = f32[", n,
                                           "] parameter(0)\n  ROOT %e = f32[", n,
                                           "] exponential(%x)\n}\n");
      auto exe = CompileForCpu(hlo::ParseHloModule(text).value()).value();
      hlo::Literal x = hlo::Literal::CreateR1<float>(v);
      auto reference = hlo::ParseHloModule(text).value();
      hlo::HloEvaluator evaluator;
      const hlo::Literal want = evaluator.Evaluate(*reference, {&x}).value();
      const hlo::Literal got = exe->Run({&x}).value()[0];
      SCOPED_TRACE(hlo::StrCat("n=", n, with_special ? " special" : ""));
      EXPECT_TRUE(testing::Near(got, want, 2e-6, 0));
      for (size_t i = 0; i < n; ++i) {  // Near takes any two NaNs or infs; be exact there
        const float g = static_cast<float>(got.GetAsDouble(i));
        const float w = static_cast<float>(want.GetAsDouble(i));
        EXPECT_EQ(std::isnan(g), std::isnan(w)) << i;
        if (std::isinf(w) || w == 0) {
          EXPECT_EQ(g, w) << i;
        }
      }
    }
  }
}

// A run uses the executable's own arena of max_threads; runs from two threads at once share
// it and both get the right result.
TEST(LoopKernelTest, ConcurrentRunsWithThreadLimit) {
  auto exe = CompileForCpu(hlo::ParseHloModule(kChainFusion).value(), SmallTiles(2)).value();
  auto single = CompileForCpu(hlo::ParseHloModule(kChainFusion).value(), SmallTiles(1)).value();
  std::mt19937 rng(5);
  const hlo::Literal x = testing::RandomLiteral(hlo::Shape(hlo::F32, {37, 1000}), rng);
  const hlo::Literal want = single->Run({&x}).value()[0];
  std::vector<hlo::Literal> got(4, hlo::Literal(hlo::Shape(hlo::F32, {37, 1000})));
  std::vector<std::thread> threads;
  for (int t = 0; t < 2; ++t) {
    threads.emplace_back([&, t] {
      for (int k = 0; k < 2; ++k) got[2 * t + k] = exe->Run({&x}).value()[0];
    });
  }
  for (std::thread& t : threads) t.join();
  for (const hlo::Literal& g : got) EXPECT_EQ(g, want);
}

TEST(LoopKernelTest, SaturatingConvertAndNaN) {
  auto module = hlo::ParseHloModule(R"(HloModule m
ENTRY %main (x: f32[6]) -> (s32[6], u8[6], f32[6]) {
  %x = f32[6] parameter(0)
  %a = s32[6] convert(%x)
  %b = u8[6] convert(%x)
  %z = f32[6] constant({0, 0, 0, 0, 0, 0})
  %m = f32[6] maximum(%x, %z)
  ROOT %t = (s32[6], u8[6], f32[6]) tuple(%a, %b, %m)
})").value();
  auto exe = CompileForCpu(std::move(module)).value();
  hlo::Literal x = hlo::Literal::CreateR1<float>({1e10f, -1e10f, NAN, 3.7f, -2.5f, 300.f});
  auto out = exe->Run({&x}).value();
  EXPECT_EQ(out[0].ToString(), "{2147483647, -2147483648, 0, 3, -2, 300}");
  EXPECT_EQ(out[1].ToString(), "{255, 0, 0, 3, 0, 255}");
  EXPECT_TRUE(std::isnan(out[2].GetAsDouble(2)));
  EXPECT_EQ(out[2].GetAsDouble(4), 0.0);
}

TEST(LoopKernelTest, ZeroSizeAndScalars) {
  CheckAgainstEvaluator(R"(HloModule m
ENTRY %main (x: f32[0,5], y: f32[]) -> (f32[0,5], f32[]) {
  %x = f32[0,5] parameter(0)
  %e = f32[0,5] exponential(%x)
  %y = f32[] parameter(1)
  %t = f32[] tanh(%y)
  %u = f32[] multiply(%t, %y)
  ROOT %r = (f32[0,5], f32[]) tuple(%e, %u)
})");
  CheckAgainstEvaluator(R"(HloModule m
%fused (p0: f32[]) -> f32[4,3] {
  %p0 = f32[] parameter(0)
  %b = f32[4,3] broadcast(%p0), dimensions={}
  %i = f32[4,3] iota(), iota_dimension=0
  ROOT %a = f32[4,3] add(%b, %i)
}
ENTRY %main (x: f32[]) -> f32[4,3] {
  %x = f32[] parameter(0)
  ROOT %fusion = f32[4,3] fusion(%x), kind=kLoop, calls=%fused
})");
}

// f16 math and ops without a native loop run per op through the evaluator, inside the
// same loop kernel.
// f16 multiply, convert, remainder, erf and reduce-precision have native loops;
// count-leading-zeros still runs on the evaluator per tile, and JX_LOG_COMPILES names it.
TEST(LoopKernelTest, ScalarFallbackPerOp) {
  setenv("JX_LOG_COMPILES", "1", 1);
  ::testing::internal::CaptureStderr();
  auto exe = CheckAgainstEvaluator(R"(HloModule m
%fused (p0: f16[300], p1: f32[300]) -> f32[300] {
  %p0 = f16[300] parameter(0)
  %p1 = f32[300] parameter(1)
  %h = f16[300] multiply(%p0, %p0)
  %f = f32[300] convert(%h)
  %r = f32[300] remainder(%f, %p1)
  %e = f32[300] erf(%r)
  %q = f32[300] reduce-precision(%e), exponent_bits=5, mantissa_bits=10
  %i = s32[300] convert(%p1)
  %z = s32[300] count-leading-zeros(%i)
  %zf = f32[300] convert(%z)
  %s = f32[300] add(%q, %zf)
  ROOT %a = f32[300] add(%s, %p1)
}
ENTRY %main (xa: f16[300], xb: f32[300]) -> f32[300] {
  %xa = f16[300] parameter(0)
  %xb = f32[300] parameter(1)
  ROOT %fusion = f32[300] fusion(%xa, %xb), kind=kLoop, calls=%fused
})", 1e-6, 1e-7, SmallTiles(), Ranges{0.5, 3});
  const std::string log = ::testing::internal::GetCapturedStderr();
  unsetenv("JX_LOG_COMPILES");
  if (exe) {
    EXPECT_EQ(exe->KernelKind("fusion"), "loop");
  }
  EXPECT_NE(log.find("runs count-leading-zeros s32 on the reference evaluator per tile"), std::string::npos) << log;
  EXPECT_EQ(log.find("remainder"), std::string::npos) << log;
  EXPECT_EQ(log.find("reduce-precision"), std::string::npos) << log;
}

TEST(LoopKernelTest, RawBufferEntryPoint) {
  auto exe = CompileForCpu(hlo::ParseHloModule(R"(HloModule m
ENTRY %main (x: f32[5], y: f32[5]) -> f32[5] {
  %x = f32[5] parameter(0)
  %y = f32[5] parameter(1)
  ROOT %r = f32[5] multiply(%x, %y)
})").value()).value();
  float x[5] = {1, 2, 3, 4, 5}, y[5] = {2, 2, 2, 2, -1}, out[5] = {};
  ASSERT_TRUE(exe->Run({x, y}, {out}).ok());
  EXPECT_EQ(out[4], -5.0f);
  EXPECT_EQ(out[0], 2.0f);
  EXPECT_FALSE(exe->Run({x}, {out}).ok());  // wrong buffer count: an error, not a crash
  hlo::Literal bad = hlo::Literal::CreateR1<float>({1, 2});
  EXPECT_FALSE(exe->Run({&bad, &bad}).ok());
}

}  // namespace
}  // namespace jx::cpu::loop_kernel_test
