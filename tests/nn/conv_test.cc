#include "jx/nn/conv.h"

#include <cmath>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "jx/jx.h"

namespace jx::nn::conv_test {
namespace {

namespace jnp = jx::numpy;
using ::testing::HasSubstr;

// A direct loop over NHWC input and HWIO weight (2D), independent of conv_general_dilated.
std::vector<double> DirectConv2d(const Array& x, const Array& w, std::vector<int64_t> strides,
                                 std::vector<std::pair<int64_t, int64_t>> pads, std::vector<int64_t> dil, int64_t groups,
                                 Shape* out_shape) {
  const Shape xs = x.shape(), ws = w.shape();
  const int64_t n = xs[0], h = xs[1], wd = xs[2], c = xs[3];
  const int64_t kh = ws[0], kw = ws[1], cig = ws[2], co = ws[3];
  const int64_t cog = co / groups;
  const int64_t oh = (h + pads[0].first + pads[0].second - (kh - 1) * dil[0] - 1) / strides[0] + 1;
  const int64_t ow = (wd + pads[1].first + pads[1].second - (kw - 1) * dil[1] - 1) / strides[1] + 1;
  const std::vector<double> xv = x.astype(float64).to_vector<double>(), wv = w.astype(float64).to_vector<double>();
  std::vector<double> out(n * oh * ow * co, 0.0);
  for (int64_t b = 0; b < n; ++b)
    for (int64_t i = 0; i < oh; ++i)
      for (int64_t j = 0; j < ow; ++j)
        for (int64_t o = 0; o < co; ++o) {
          const int64_t g = o / cog;
          double acc = 0;
          for (int64_t p = 0; p < kh; ++p)
            for (int64_t q = 0; q < kw; ++q) {
              const int64_t yi = i * strides[0] - pads[0].first + p * dil[0];
              const int64_t xj = j * strides[1] - pads[1].first + q * dil[1];
              if (yi < 0 || yi >= h || xj < 0 || xj >= wd) continue;
              for (int64_t ci = 0; ci < cig; ++ci) {
                acc += xv[((b * h + yi) * wd + xj) * c + g * cig + ci] * wv[((p * kw + q) * cig + ci) * co + o];
              }
            }
          out[((b * oh + i) * ow + j) * co + o] = acc;
        }
  *out_shape = {n, oh, ow, co};
  return out;
}

void ExpectNear(const std::vector<double>& got, const std::vector<double>& want, double tol) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) ASSERT_NEAR(got[i], want[i], tol) << "at flat index " << i;
}

std::vector<double> Plus(std::vector<double> y, const Array& bias) {
  const std::vector<double> b = bias.astype(float64).to_vector<double>();
  for (size_t i = 0; i < y.size(); ++i) y[i] += b[i % b.size()];
  return y;
}

TEST(NnConvTest, WeightLayoutAndInitAsPyTorch) {
  Conv nhwc(6, 8, {3, 5}, random::key(0), {.feature_group_count = 2});
  EXPECT_EQ(nhwc.weight.shape(), (Shape{3, 5, 3, 8}));  // HWIO, in/groups
  ASSERT_TRUE(nhwc.bias.has_value());
  EXPECT_EQ(nhwc.bias->shape(), (Shape{8}));
  const double bound = 1.0 / std::sqrt(3.0 * 3 * 5);
  EXPECT_LE(jnp::max(jnp::abs(nhwc.weight)).item<float>(), bound);
  EXPECT_GT(jnp::max(jnp::abs(nhwc.weight)).item<float>(), 0.9 * bound);  // 360 draws reach the edge
  EXPECT_LE(jnp::max(jnp::abs(*nhwc.bias)).item<float>(), bound);

  Conv nchw(6, 8, {3, 5}, random::key(0), {.use_bias = false, .data_format = "NCHW"});
  EXPECT_EQ(nchw.weight.shape(), (Shape{8, 6, 3, 5}));  // OIHW
  EXPECT_FALSE(nchw.bias.has_value());
  EXPECT_EQ(nchw.in_channels(), 6);
  EXPECT_EQ(nchw.out_channels(), 8);

  // Other initializers, as nn::Linear's options.
  Conv he(6, 8, {3, 3}, random::key(0), {.weight_init = initializers::zeros, .bias_init = initializers::ones});
  EXPECT_TRUE(jnp::array_equal(he.weight, jnp::zeros({3, 3, 6, 8})));
  EXPECT_TRUE(jnp::array_equal(*he.bias, jnp::ones({8})));
}

TEST(NnConvTest, ForwardMatchesDirectLoopSameStridedDilatedGrouped) {
  const auto keys = random::split(random::key(1), 2);
  const Array x = random::normal(keys[0], {2, 9, 8, 4});
  struct Case {
    ConvOptions opt;
    std::vector<std::pair<int64_t, int64_t>> pads;  // what the options resolve to
  };
  const std::vector<Case> cases = {
      {{}, {{1, 1}, {1, 1}}},                                           // SAME, 3x3
      {{.strides = {2, 2}}, {{1, 1}, {0, 1}}},                          // SAME strided: (9->5, 8->4)
      {{.padding = "VALID", .dilation = {2, 1}}, {{0, 0}, {0, 0}}},     // atrous
      {{.strides = {1, 2}, .padding = {{2, 0}, {1, 3}}, .feature_group_count = 2}, {{2, 0}, {1, 3}}},
  };
  for (const Case& c : cases) {
    Conv conv(4, 6, {3, 3}, keys[1], c.opt);
    const std::vector<int64_t> strides = c.opt.strides.empty() ? std::vector<int64_t>{1, 1} : c.opt.strides;
    const std::vector<int64_t> dil = c.opt.dilation.empty() ? std::vector<int64_t>{1, 1} : c.opt.dilation;
    Shape want_shape;
    const std::vector<double> want =
        Plus(DirectConv2d(x, conv.weight, strides, c.pads, dil, c.opt.feature_group_count, &want_shape), *conv.bias);
    const Array y = conv(x);
    EXPECT_EQ(y.shape(), want_shape);
    ExpectNear(y.astype(float64).to_vector<double>(), want, 1e-4);
  }
}

TEST(NnConvTest, ChannelsFirstEqualsChannelsLastTransposed) {
  const auto keys = random::split(random::key(2), 2);
  const Array x = random::normal(keys[0], {2, 7, 6, 3});
  Conv last(3, 5, {3, 2}, keys[1], {.strides = {2, 1}});
  Conv first = last;
  first.data_format = Static<std::string>{"NCHW"};
  first.weight = jnp::transpose(last.weight, std::vector<int64_t>{3, 2, 0, 1});  // HWIO -> OIHW
  const Array y_last = last(x);
  const Array y_first = first(jnp::transpose(x, std::vector<int64_t>{0, 3, 1, 2}));
  EXPECT_TRUE(jnp::allclose(jnp::transpose(y_first, std::vector<int64_t>{0, 2, 3, 1}), y_last, 1e-5, 1e-5));
}

TEST(NnConvTest, OneDimensionalMatchesTwoDimensionalWithUnitHeight) {
  const auto keys = random::split(random::key(3), 2);
  const Array x = random::normal(keys[0], {3, 10, 4});  // NWC
  Conv c1(4, 2, {3}, keys[1], {.strides = {2}, .padding = {{2, 1}}, .dilation = {2}});
  EXPECT_EQ(c1.weight.shape(), (Shape{3, 4, 2}));  // WIO
  Conv c2 = Conv(4, 2, {1, 3}, keys[1], {.strides = {1, 2}, .padding = {{0, 0}, {2, 1}}, .dilation = {1, 2}});
  c2.weight = c1.weight.reshape({1, 3, 4, 2});
  c2.bias = c1.bias;
  const Array y1 = c1(x);
  const Array y2 = c2(x.reshape({3, 1, 10, 4}));
  EXPECT_EQ(y1.shape(), (Shape{3, 5, 2}));  // (10 + 3 - 5) / 2 + 1
  EXPECT_TRUE(jnp::allclose(y1, y2.reshape({3, 5, 2}), 1e-6, 1e-6));

  Conv ncw(4, 2, {3}, keys[1], {.data_format = "NCW"});
  EXPECT_EQ(ncw(jnp::transpose(x, std::vector<int64_t>{0, 2, 1})).shape(), (Shape{3, 2, 10}));
}

TEST(NnConvTest, GradsOfModuleAndInputMatchFiniteDifferences) {
  const auto keys = random::split(random::key(4), 2);
  const Array x = random::normal(keys[0], {2, 5, 4, 4}, float64);
  Conv conv(4, 4, {3, 2}, keys[1],
            {.strides = {2, 1}, .padding = {{1, 0}, {0, 1}}, .dilation = {1, 2}, .feature_group_count = 2,
             .dtype = float64});
  check_grads([](const Conv& m, const Array& v) { return m(v); }, std::tuple{conv, x}, 2);
  Conv nchw(4, 3, {2, 2}, keys[1], {.data_format = "NCHW", .dtype = float64});
  check_grads([](const Conv& m, const Array& v) { return m(v); }, std::tuple{nchw, jnp::transpose(x, std::vector<int64_t>{0, 3, 1, 2})}, 1);

  // grad differentiates the struct itself: a Conv of gradients, Static fields kept.
  const Conv g = grad([](const Conv& m, const Array& v) { return jnp::sum(m(v)); })(conv, x);
  EXPECT_EQ(g.weight.shape(), conv.weight.shape());
  ASSERT_TRUE(g.bias.has_value());
  EXPECT_EQ(g.strides.value, conv.strides.value);
  // d sum(y) / d bias = output positions per channel: N=2 x (6-3)/2+1=2 x (5-3)/1+1=3.
  EXPECT_TRUE(jnp::allclose(*g.bias, jnp::full({4}, 2.0 * 2 * 3, float64)));
}

TEST(NnConvTest, JitAndVmapAgreeWithEager) {
  const auto keys = random::split(random::key(5), 2);
  const Array xs = random::normal(keys[0], {3, 2, 6, 6, 3});  // a vmapped axis over batches
  Conv conv(3, 4, {3, 3}, keys[1], {.strides = {2, 2}});
  auto apply = [](const Conv& m, const Array& v) { return m(v); };
  const Array eager = apply(conv, xs[1]);
  EXPECT_TRUE(jnp::allclose(jit(apply)(conv, xs[1]), eager, 1e-5, 1e-5));
  const Array batched = vmap(apply, in_axes{none, 0})(conv, xs);
  EXPECT_EQ(batched.shape(), (Shape{3, 2, 3, 3, 4}));
  EXPECT_TRUE(jnp::allclose(batched[1], eager, 1e-5, 1e-5));
  // jit of vmap of grad with respect to the module.
  auto loss = [](const Conv& m, const Array& v) { return jnp::mean(jnp::square(m(v))); };
  const Conv g = jit(vmap(grad(loss), in_axes{none, 0}))(conv, xs);
  EXPECT_EQ(g.weight.shape(), (Shape{3, 3, 3, 3, 4}));
  const Conv g1 = grad(loss)(conv, xs[2]);
  EXPECT_TRUE(jnp::allclose(g.weight[2], g1.weight, 1e-5, 1e-5));
}

TEST(NnConvTest, ErrorsNameModuleAndShapes) {
  Conv conv(3, 4, {3, 3}, random::key(0));
  try {
    conv(jnp::zeros({2, 8, 8, 5}));
    FAIL() << "expected ShapeError";
  } catch (const ShapeError& e) {
    EXPECT_THAT(e.what(), HasSubstr("nn.Conv"));
    EXPECT_THAT(e.what(), HasSubstr("f32[2,8,8,5]"));
    EXPECT_THAT(e.what(), HasSubstr("f32[3,3,3,4]"));
  }
  try {
    conv(jnp::zeros({8, 8, 3}));
    FAIL() << "expected ShapeError";
  } catch (const ShapeError& e) {
    EXPECT_THAT(e.what(), HasSubstr("batched input of rank 4"));
    EXPECT_THAT(e.what(), HasSubstr("f32[8,8,3]"));
  }
  EXPECT_THROW(Conv(3, 4, {3, 3}, random::key(0), {.feature_group_count = 2}), ValueError);
  EXPECT_THROW(Conv(3, 4, {3, 3}, random::key(0), {.strides = {1, 1, 1}}), ValueError);
  EXPECT_THROW(Conv(3, 4, {3, 3}, random::key(0), {.data_format = "NWHC"}), ValueError);
  EXPECT_THROW(Conv(3, 4, {3, 3}, random::key(0), {.padding = {{1, 1}}}), ValueError);
  try {
    Conv(3, 4, {3, 3}, random::key(0), {.padding = "FULL"});
    FAIL() << "expected ValueError";
  } catch (const ValueError& e) {
    EXPECT_THAT(e.what(), HasSubstr("FULL"));
  }
  // The next call works (bad input never corrupts state).
  EXPECT_EQ(conv(jnp::zeros({1, 4, 4, 3})).shape(), (Shape{1, 4, 4, 4}));
}

}  // namespace
}  // namespace jx::nn::conv_test
