// jit of convolutions and dots runs the kernel library eager runs (no evaluator fallback):
// every dtype, every convolution path, results equal to eager's bit for bit; conv + bias +
// relu compiles to one output fusion whose result matches eager.
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <jx/jx.h>

namespace jx::cpu_conv_dot_jit_test {
namespace {

namespace jnp = jx::numpy;

// Compile errors instead of evaluator fallbacks for every jit in this file (part of the
// program cache key, so programs compiled elsewhere with fallbacks are not reused).
class NoFallbackEnvironment : public ::testing::Environment {
 public:
  void SetUp() override { setenv("JX_CPU_FALLBACK", "error", 1); }
  void TearDown() override { unsetenv("JX_CPU_FALLBACK"); }
};
const auto* const kNoFallback = ::testing::AddGlobalTestEnvironment(new NoFallbackEnvironment);

// Small integers (exact in every dtype; {0, 1} for bool, >= 0 for unsigned) or floats in
// [-1, 1], converted to dtype.
Array Values(const Shape& shape, DType dtype, uint32_t seed) {
  std::mt19937 rng(seed);
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  std::vector<float> v(static_cast<size_t>(n));
  const bool is_float = IsFloating(dtype);
  std::uniform_real_distribution<float> u(-1, 1);
  std::uniform_int_distribution<int> small(IsUnsignedInt(dtype) || dtype == DType::kBool ? 0 : -3,
                                           dtype == DType::kBool ? 1 : 3);
  for (float& x : v) x = is_float ? u(rng) : static_cast<float>(small(rng));
  return lax::convert_element_type(Array::FromData(v.data(), shape, DType::kFloat32), dtype);
}

void ExpectBitEqual(const Array& got, const Array& want, const std::string& where) {
  ASSERT_EQ(got.aval().str(), want.aval().str()) << where;
  ASSERT_EQ(got.nbytes(), want.nbytes()) << where;
  EXPECT_EQ(std::memcmp(got.data(), want.data(), static_cast<size_t>(got.nbytes())), 0)
      << where << ": jit differs from eager";
}

const DType kDTypes[] = {DType::kBool,    DType::kInt8,     DType::kInt32,   DType::kUInt8,
                         DType::kFloat16, DType::kBFloat16, DType::kFloat32, DType::kFloat64};

struct ConvCase {
  std::string name;
  Shape lhs, rhs;
  std::vector<int64_t> strides;
  lax::Padding padding;
  std::vector<int64_t> lhs_dilation, rhs_dilation;
  std::array<std::string, 3> specs;
  int64_t feature_groups = 1, batch_groups = 1;
};

std::vector<ConvCase> ConvCases() {
  using P = lax::Padding;
  return {
      {"NHWC 3x3 same", {2, 10, 9, 8}, {3, 3, 8, 6}, {1, 1}, P::Same(), {}, {}, {"NHWC", "HWIO", "NHWC"}},
      {"NCHW strided, both dilations", {2, 5, 11, 10}, {4, 5, 3, 2}, {2, 1}, P({{1, 2}, {0, 1}}), {1, 2}, {2, 1},
       {"NCHW", "OIHW", "NCHW"}},
      {"NHWC depthwise", {2, 9, 9, 6}, {3, 3, 1, 6}, {1, 1}, P::Same(), {}, {}, {"NHWC", "HWIO", "NHWC"}, 6},
      {"NCHW depthwise", {1, 4, 8, 8}, {4, 1, 3, 3}, {2, 2}, P::Same(), {}, {}, {"NCHW", "OIHW", "NCHW"}, 4},
      {"NCHW feature groups", {2, 6, 7, 7}, {9, 2, 3, 3}, {1, 1}, P::Valid(), {}, {}, {"NCHW", "OIHW", "NCHW"}, 3},
      {"NHWC batch groups", {4, 6, 6, 3}, {3, 3, 3, 4}, {1, 1}, P::Same(), {}, {}, {"NHWC", "HWIO", "NHWC"}, 1, 2},
      {"NHWC 1x1", {2, 7, 7, 16}, {1, 1, 16, 8}, {1, 1}, P::Valid(), {}, {}, {"NHWC", "HWIO", "NHWC"}},
      {"NHWC in, NCHW out", {2, 8, 7, 3}, {3, 3, 3, 5}, {1, 1}, P::Same(), {}, {}, {"NHWC", "HWIO", "NCHW"}},
      {"NHWC tiled", {2, 24, 24, 16}, {3, 3, 16, 16}, {1, 1}, P::Same(), {}, {}, {"NHWC", "HWIO", "NHWC"}},
      {"NCHW tiled", {4, 16, 20, 20}, {12, 16, 3, 3}, {1, 1}, P::Same(), {}, {}, {"NCHW", "OIHW", "NCHW"}},
  };
}

Array Conv(const ConvCase& c, const Array& x, const Array& w) {
  return lax::conv_general_dilated(x, w, c.strides, c.padding, c.lhs_dilation, c.rhs_dilation,
                                   lax::ConvDimensionNumbers::FromSpecs(c.specs[0], c.specs[1], c.specs[2]),
                                   c.feature_groups, c.batch_groups);
}

TEST(ConvDotJitTest, ConvolutionEqualsEagerBitForBit) {
  for (const ConvCase& c : ConvCases()) {
    for (DType d : kDTypes) {
      const std::string where = StrCat(c.name, " ", dtype_name(d));
      const Array x = Values(c.lhs, d, 1), w = Values(c.rhs, d, 2);
      auto f = [&c](const Array& a, const Array& b) { return Conv(c, a, b); };
      Array got;
      try {
        got = jit(f)(x, w);
      } catch (const std::exception& e) {
        ADD_FAILURE() << where << ": " << e.what();
        continue;
      }
      ExpectBitEqual(got, f(x, w), where);
    }
  }
}

TEST(ConvDotJitTest, DotEqualsEagerBitForBit) {
  struct Case {
    Shape lhs, rhs;
    lax::DotDimensionNumbers dn;
  };
  const Case cases[] = {
      {{67, 130}, {130, 45}, {{1}, {0}, {}, {}}},
      {{130, 67}, {45, 130}, {{0}, {1}, {}, {}}},
      {{3, 40, 33}, {3, 33, 20}, {{2}, {1}, {0}, {0}}},
      {{256, 300}, {300, 200}, {{1}, {0}, {}, {}}},  // split over threads
      {{9}, {9}, {{0}, {0}, {}, {}}},
  };
  for (const Case& c : cases) {
    for (DType d : kDTypes) {
      const std::string where = StrCat(ShapedArray{c.lhs, d}.str(), " x ", ShapedArray{c.rhs, d}.str());
      const Array a = Values(c.lhs, d, 3), b = Values(c.rhs, d, 4);
      auto f = [&c](const Array& x, const Array& y) { return lax::dot_general(x, y, c.dn); };
      Array got;
      try {
        got = jit(f)(a, b);
      } catch (const std::exception& e) {
        ADD_FAILURE() << where << ": " << e.what();
        continue;
      }
      ExpectBitEqual(got, f(a, b), where);
    }
  }
  // bf16 operands with an f32 result.
  const Array a = Values({64, 96}, DType::kBFloat16, 5), b = Values({96, 32}, DType::kBFloat16, 6);
  auto wide = [](const Array& x, const Array& y) { return lax::dot(x, y, DType::kFloat32); };
  ExpectBitEqual(jit(wide)(a, b), wide(a, b), "bf16 x bf16 -> f32");
}

TEST(ConvDotJitTest, ConvBiasReluIsOneOutputFusionMatchingEager) {
  for (const char* layout : {"NHWC", "NCHW"}) {
    const bool nhwc = std::string(layout) == "NHWC";
    const ConvCase c{layout,
                     nhwc ? Shape{2, 12, 12, 16} : Shape{2, 16, 12, 12},
                     nhwc ? Shape{3, 3, 16, 8} : Shape{8, 16, 3, 3},
                     {1, 1},
                     lax::Padding::Same(),
                     {},
                     {},
                     {layout, nhwc ? "HWIO" : "OIHW", layout}};
    for (DType d : {DType::kFloat32, DType::kBFloat16, DType::kInt32}) {
      const std::string where = StrCat(layout, " ", dtype_name(d));
      const Array x = Values(c.lhs, d, 7), w = Values(c.rhs, d, 8), bias = Values({8}, d, 9);
      auto block = [&c, nhwc](const Array& a, const Array& k, const Array& b) {
        const Array y = Conv(c, a, k);
        const Array bb = nhwc ? b : b.reshape({8, 1, 1});
        return lax::max(y + bb, jnp::zeros_like(y));
      };
      const std::string text = jit(block).lower(x, w, bias).compile().as_text();
      EXPECT_NE(text.find("kind=kOutput"), std::string::npos) << where << "\n" << text;
      // The epilogue is exact in every dtype (one add rounded as eager rounds it, then max).
      ExpectBitEqual(jit(block)(x, w, bias), block(x, w, bias), where);
    }
  }
}

}  // namespace
}  // namespace jx::cpu_conv_dot_jit_test
