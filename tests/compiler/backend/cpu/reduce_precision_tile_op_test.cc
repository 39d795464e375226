// reduce-precision in loop kernels: the kernel library's function (the one eager
// lax::reduce_precision runs), its (exponent_bits, mantissa_bits) carried as a scalar operand
// of the tile program. Bit for bit against the evaluator, every float type, parameters that
// round, clip, do both or change nothing, lengths 1, 15, 16, 17, 33 and 1000, NaN, +-inf,
// +-0, denormals and values at the edges of the reduced range; fused with other ops, as a
// lone op, and on a scalar operand (the program splats it).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>

#include "jx/compiler/hlo/str_util.h"
#include "tests/compiler/backend/cpu/cpu_test_util.h"

namespace jx::cpu::reduce_precision_tile_op_test {
namespace {

using hlo::Literal;

Literal Values(const std::string& t, int64_t n, std::mt19937& rng) {
  const double specials[] = {0.0, -0.0, std::numeric_limits<double>::infinity(),
                             -std::numeric_limits<double>::infinity(), std::numeric_limits<double>::quiet_NaN(),
                             1e-40, -3e-6, 65504, 65520, 1e38, 3.4e38, 6e-5, 1.0 + 1.0 / 1024, -2.5};
  Literal x(hlo::ShapeUtil::MakeShape(hlo::StringToPrimitiveType(t).value(), {n}));
  std::uniform_real_distribution<double> mantissa(-1, 1);
  std::uniform_int_distribution<int> exponent(-30, 30);
  for (int64_t i = 0; i < n; ++i) {
    x.SetFromDouble(i, i % 4 == 0 ? specials[(i / 4) % 14] : std::ldexp(mantissa(rng), exponent(rng)));
  }
  return x;
}

bool SameBits(const Literal& a, const Literal& b) {
  return a.untyped_data().size() == b.untyped_data().size() &&
         std::memcmp(a.untyped_data().data(), b.untyped_data().data(), a.untyped_data().size()) == 0;
}

void ExpectExact(const std::string& text, const Literal& x) {
  auto module = hlo::ParseHloModule(text);
  ASSERT_TRUE(module.ok()) << module.status();
  CpuCompileOptions options;
  options.allow_evaluator_fallback = false;  // reduce-precision must be native
  auto exe = CompileForCpu(*std::move(module), options);
  ASSERT_TRUE(exe.ok()) << exe.status();
  EXPECT_EQ((*exe)->KernelKind("r"), "loop");
  const Literal want = hlo::HloEvaluator().Evaluate(*hlo::ParseHloModule(text).value(), {&x}).value();
  const Literal got = std::move((*exe)->Run({&x}).value()[0]);
  EXPECT_TRUE(SameBits(got, want)) << "x " << x.ToString() << "\ngot " << got.ToString() << "\nwant "
                                   << want.ToString();
}

TEST(ReducePrecisionTileOpTest, EveryFloatTypeAndParameters) {
  std::mt19937 rng(2);
  const std::pair<int, int> bits[] = {{5, 10}, {8, 7}, {8, 23}, {11, 52}, {3, 2}, {1, 0}, {4, 0}, {20, 60}};
  for (const std::string t : {"f32", "f64", "f16", "bf16"}) {
    for (const auto& [e, m] : bits) {
      for (const int64_t n : {1, 15, 16, 17, 33, 1000}) {
        SCOPED_TRACE(hlo::StrCat(t, " e=", e, " m=", m, " n=", n));
        const std::string s = hlo::StrCat(t, "[", n, "]");
        const Literal x = Values(t, n, rng);
        // Fused after a negate (a loop fusion) and alone.
        ExpectExact(hlo::StrCat("HloModule rp\n%f (p: ", s, ") -> ", s, " {\n  %p = ", s, " parameter(0)\n  %g = ", s,
                                " negate(%p)\n  ROOT %q = ", s, " reduce-precision(%g), exponent_bits=", e,
                                ", mantissa_bits=", m, "\n}\nENTRY %main (x: ", s, ") -> ", s, " {\n  %x = ", s,
                                " parameter(0)\n  ROOT %r = ", s, " fusion(%x), kind=kLoop, calls=%f\n}\n"),
                    x);
        ExpectExact(hlo::StrCat("HloModule rp\nENTRY %main (x: ", s, ") -> ", s, " {\n  %x = ", s,
                                " parameter(0)\n  ROOT %r = ", s, " reduce-precision(%x), exponent_bits=", e,
                                ", mantissa_bits=", m, "\n}\n"),
                    x);
      }
    }
  }
}

TEST(ReducePrecisionTileOpTest, ScalarOperandIsSplat) {
  // reduce-precision of a broadcast scalar: x is a scalar operand the library loop cannot
  // read as one, so the program splats it (and the parameters) into tiles.
  Literal x = Literal::CreateR0<float>(1.0f + 1.0f / 3);
  ExpectExact(R"(HloModule rp
%f (p: f32[]) -> f32[40] {
  %p = f32[] parameter(0)
  %b = f32[40] broadcast(%p), dimensions={}
  ROOT %q = f32[40] reduce-precision(%b), exponent_bits=5, mantissa_bits=10
}
ENTRY %main (x: f32[]) -> f32[40] {
  %x = f32[] parameter(0)
  ROOT %r = f32[40] fusion(%x), kind=kLoop, calls=%f
}
)",
              x);
}

}  // namespace
}  // namespace jx::cpu::reduce_precision_tile_op_test
