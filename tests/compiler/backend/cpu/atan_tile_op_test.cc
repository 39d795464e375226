// atan lowers to atan2(x, 1); the loop kernel runs that as the kernel library's atan (the
// function eager's lax::atan runs, cheaper than atan2's general path). The result must be
// atan2(x, 1) bit for bit: the evaluator's atan2 with a ones array, at lengths around a
// vector's width (1, 15, 16, 17, 33), every float type, special values included. An atan2
// whose second operand is not the scalar 1 keeps atan2.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "jx/compiler/hlo/str_util.h"
#include "jx/lax/kernels/elementwise.h"
#include "tests/compiler/backend/cpu/cpu_test_util.h"

namespace jx::cpu::atan_tile_op_test {
namespace {

using hlo::Literal;

// atan2(x, broadcast(c)) over T[n], fused into a loop as the lowering leaves it.
std::string AtanModule(const std::string& t, int64_t n, const std::string& c) {
  return hlo::StrCat("HloModule atan\n%f (p: ", t, "[", n, "]) -> ", t, "[", n, "] {\n  %p = ", t, "[", n,
                     "] parameter(0)\n  %c = ", t, "[] constant(", c, ")\n  %b = ", t, "[", n,
                     "] broadcast(%c), dimensions={}\n  ROOT %a = ", t, "[", n, "] atan2(%p, %b)\n}\n",
                     "ENTRY %main (x: ", t, "[", n, "]) -> ", t, "[", n, "] {\n  %x = ", t, "[", n,
                     "] parameter(0)\n  ROOT %r = ", t, "[", n, "] fusion(%x), kind=kLoop, calls=%f\n}\n");
}

// atan2(x, ones): the same function with an array second operand (no scalar to recognise).
std::string Atan2Module(const std::string& t, int64_t n) {
  return hlo::StrCat("HloModule atan2\nENTRY %main (x: ", t, "[", n, "], y: ", t, "[", n, "]) -> ", t, "[", n,
                     "] {\n  %x = ", t, "[", n, "] parameter(0)\n  %y = ", t, "[", n, "] parameter(1)\n  ROOT %r = ",
                     t, "[", n, "] atan2(%x, %y)\n}\n");
}

Literal Inputs(const std::string& t, int64_t n, std::mt19937& rng) {
  const double specials[] = {0.0, -0.0, std::numeric_limits<double>::infinity(),
                             -std::numeric_limits<double>::infinity(), std::numeric_limits<double>::quiet_NaN(),
                             1e-40, -1e-310, 1.0, -1.0, 1e30, 0.4};
  Literal x(hlo::ShapeUtil::MakeShape(hlo::StringToPrimitiveType(t).value(), {n}));
  std::uniform_real_distribution<double> mantissa(-1, 1);
  std::uniform_int_distribution<int> exponent(-40, 40);
  for (int64_t i = 0; i < n; ++i) {
    x.SetFromDouble(i, i % 3 == 0 ? specials[(i / 3) % 11] : std::ldexp(mantissa(rng), exponent(rng)));
  }
  return x;
}

bool SameBits(const Literal& a, const Literal& b) {
  return a.untyped_data().size() == b.untyped_data().size() &&
         std::memcmp(a.untyped_data().data(), b.untyped_data().data(), a.untyped_data().size()) == 0;
}

std::unique_ptr<CpuExecutable> Compile(const std::string& text) {
  auto module = hlo::ParseHloModule(text);
  EXPECT_TRUE(module.ok()) << module.status();
  if (!module.ok()) return nullptr;
  auto exe = CompileForCpu(*std::move(module));
  EXPECT_TRUE(exe.ok()) << exe.status();
  return exe.ok() ? *std::move(exe) : nullptr;
}

TEST(AtanTileOpTest, Atan2OfScalarOneIsAtan2BitForBit) {
  std::mt19937 rng(5);
  for (const std::string t : {"f32", "f64", "f16", "bf16"}) {
    for (const int64_t n : {1, 15, 16, 17, 33, 1000}) {
      SCOPED_TRACE(hlo::StrCat(t, "[", n, "]"));
      const Literal x = Inputs(t, n, rng);
      Literal ones(x.shape());
      for (int64_t i = 0; i < n; ++i) ones.SetFromDouble(i, 1.0);
      auto exe = Compile(AtanModule(t, n, "1"));
      ASSERT_NE(exe, nullptr);
      EXPECT_EQ(exe->KernelKind("r"), "loop");
      const Literal got = std::move(exe->Run({&x}).value()[0]);
      const Literal want =
          hlo::HloEvaluator().Evaluate(*hlo::ParseHloModule(Atan2Module(t, n)).value(), {&x, &ones}).value();
      EXPECT_TRUE(SameBits(got, want));
      // The lone atan2 with an array of ones (the general atan2 loop) agrees too.
      auto general = Compile(Atan2Module(t, n));
      ASSERT_NE(general, nullptr);
      EXPECT_TRUE(SameBits(general->Run({&x, &ones}).value()[0], want));
    }
  }
}

TEST(AtanTileOpTest, OtherScalarsKeepAtan2) {
  std::mt19937 rng(9);
  const Literal x = Inputs("f32", 33, rng);
  Literal twos(x.shape());
  for (int64_t i = 0; i < 33; ++i) twos.SetFromDouble(i, 2.0);
  auto exe = Compile(AtanModule("f32", 33, "2"));
  ASSERT_NE(exe, nullptr);
  const Literal want =
      hlo::HloEvaluator().Evaluate(*hlo::ParseHloModule(Atan2Module("f32", 33)).value(), {&x, &twos}).value();
  EXPECT_TRUE(SameBits(exe->Run({&x}).value()[0], want));
}

TEST(AtanTileOpTest, LibraryAtanOfF32IsAtan2fOfOneOnEveryExponent) {
  // The library's f32 atan calls atanf, relying on atan2f(y, 1) == atanf(y); check a sweep of
  // every exponent (and the special values) directly.
  std::vector<float> x;
  for (uint32_t bits = 0; bits < 0xFFFFFFFFu - 4093; bits += 4093) {
    float v;
    std::memcpy(&v, &bits, 4);
    x.push_back(v);
  }
  std::vector<float> got(x.size());
  const void* in[] = {x.data()};
  lax::kernels::FindUnaryFn(lax::kernels::UnaryOp::kAtan, DType::kFloat32)(in, got.data(),
                                                                          static_cast<int64_t>(x.size()));
  for (size_t i = 0; i < x.size(); ++i) {
    const float want = std::atan2(x[i], 1.0f);
    ASSERT_EQ(std::memcmp(&got[i], &want, 4), 0) << "x=" << x[i];
  }
}

}  // namespace
}  // namespace jx::cpu::atan_tile_op_test
