#include "jx/nn/pooling.h"

#include <algorithm>
#include <limits>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "jx/jx.h"

namespace jx::nn::pooling_test {
namespace {

namespace jnp = jx::numpy;
using ::testing::HasSubstr;

enum class Kind { kMax, kAvgAll, kAvgReal };

// A direct loop over NHWC input: max, or the average over the full window / the real taps.
std::vector<double> DirectPool2d(const Array& x, Kind kind, std::vector<int64_t> win, std::vector<int64_t> strides,
                                 std::vector<std::pair<int64_t, int64_t>> pads, Shape* out_shape) {
  const Shape s = x.shape();
  const int64_t n = s[0], h = s[1], w = s[2], c = s[3];
  const int64_t oh = (h + pads[0].first + pads[0].second - win[0]) / strides[0] + 1;
  const int64_t ow = (w + pads[1].first + pads[1].second - win[1]) / strides[1] + 1;
  const std::vector<double> xv = x.astype(float64).to_vector<double>();
  std::vector<double> out;
  for (int64_t b = 0; b < n; ++b)
    for (int64_t i = 0; i < oh; ++i)
      for (int64_t j = 0; j < ow; ++j)
        for (int64_t ch = 0; ch < c; ++ch) {
          double acc = kind == Kind::kMax ? -std::numeric_limits<double>::infinity() : 0.0;
          int64_t count = 0;
          for (int64_t p = 0; p < win[0]; ++p)
            for (int64_t q = 0; q < win[1]; ++q) {
              const int64_t yi = i * strides[0] - pads[0].first + p, xj = j * strides[1] - pads[1].first + q;
              if (yi < 0 || yi >= h || xj < 0 || xj >= w) continue;
              const double v = xv[((b * h + yi) * w + xj) * c + ch];
              acc = kind == Kind::kMax ? std::max(acc, v) : acc + v;
              ++count;
            }
          if (kind == Kind::kAvgAll) acc /= static_cast<double>(win[0] * win[1]);
          if (kind == Kind::kAvgReal) acc /= static_cast<double>(count);
          out.push_back(acc);
        }
  *out_shape = {n, oh, ow, c};
  return out;
}

void ExpectNear(const Array& got, const std::vector<double>& want, double tol) {
  const std::vector<double> g = got.astype(float64).to_vector<double>();
  ASSERT_EQ(g.size(), want.size());
  for (size_t i = 0; i < g.size(); ++i) ASSERT_NEAR(g[i], want[i], tol) << "at flat index " << i;
}

TEST(NnPoolingTest, MaxAndAvgPoolMatchDirectLoop) {
  const Array x = random::normal(random::key(0), {2, 7, 6, 3});
  struct Case {
    std::vector<int64_t> window;
    PoolOptions opt;
    std::vector<std::pair<int64_t, int64_t>> pads;  // what the options resolve to
  };
  const std::vector<Case> cases = {
      {{2, 2}, {.strides = {2, 2}}, {{0, 0}, {0, 0}}},                   // VGG's pooling: 7 -> 3
      {{3, 3}, {}, {{0, 0}, {0, 0}}},                                    // Flax default stride 1
      {{3, 2}, {.strides = {2, 2}, .padding = "SAME"}, {{1, 1}, {0, 0}}},  // 7 -> 4, 6 -> 3
      {{2, 3}, {.strides = {1, 2}, .padding = {{1, 0}, {2, 1}}}, {{1, 0}, {2, 1}}},
  };
  for (const Case& c : cases) {
    const std::vector<int64_t> strides = c.opt.strides.empty() ? std::vector<int64_t>{1, 1} : c.opt.strides;
    Shape want_shape;
    const std::vector<double> want_max = DirectPool2d(x, Kind::kMax, c.window, strides, c.pads, &want_shape);
    const Array y = MaxPool(c.window, c.opt)(x);
    EXPECT_EQ(y.shape(), want_shape);
    ExpectNear(y, want_max, 0.0);
    ExpectNear(avg_pool(x, c.window, c.opt), DirectPool2d(x, Kind::kAvgAll, c.window, strides, c.pads, &want_shape),
               1e-6);
    PoolOptions real = c.opt;
    real.count_include_pad = false;
    ExpectNear(AvgPool(c.window, real)(x), DirectPool2d(x, Kind::kAvgReal, c.window, strides, c.pads, &want_shape),
               1e-6);
  }
}

TEST(NnPoolingTest, ChannelsFirstAndOneDimensional) {
  const Array x = random::normal(random::key(1), {2, 6, 6, 4});
  const Array nchw = jnp::transpose(x, std::vector<int64_t>{0, 3, 1, 2});
  const Array a = max_pool(x, {2, 2}, {.strides = {2, 2}});
  const Array b = max_pool(nchw, {2, 2}, {.strides = {2, 2}, .data_format = "NCHW"});
  EXPECT_TRUE(jnp::array_equal(jnp::transpose(b, std::vector<int64_t>{0, 2, 3, 1}), a));
  const Array avg_c = avg_pool(nchw, {3, 3}, {.padding = "SAME", .data_format = "NCHW", .count_include_pad = false});
  const Array avg_l = avg_pool(x, {3, 3}, {.padding = "SAME", .count_include_pad = false});
  EXPECT_TRUE(jnp::allclose(jnp::transpose(avg_c, std::vector<int64_t>{0, 2, 3, 1}), avg_l, 1e-6, 1e-6));

  // 1D: [[1, 5, 2, 4, 3]] windows of 2, stride 2, SAME pads one on the right.
  const Array x1 = jnp::array(std::vector<float>{1, 5, 2, 4, 3}, {1, 5, 1});
  EXPECT_EQ(max_pool(x1, {2}, {.strides = {2}, .padding = "SAME"}).to_vector<float>(),
            (std::vector<float>{5, 4, 3}));
  EXPECT_EQ(avg_pool(x1, {2}, {.strides = {2}, .padding = "SAME"}).to_vector<float>(),
            (std::vector<float>{3, 3, 1.5}));  // Flax: the padded zero counts
  EXPECT_EQ(avg_pool(x1, {2}, {.strides = {2}, .padding = "SAME", .count_include_pad = false}).to_vector<float>(),
            (std::vector<float>{3, 3, 3}));
}

TEST(NnPoolingTest, GradsJitAndVmap) {
  const Array x = random::normal(random::key(2), {2, 5, 5, 2}, float64);
  // Max pooling's gradient routes to the argmax (distinct values here, so it is smooth).
  check_grads([](const Array& v) { return max_pool(v, {2, 2}, {.strides = {1, 2}, .padding = "SAME"}); },
              std::tuple{x}, 2);
  check_grads([](const Array& v) { return avg_pool(v, {3, 2}, {.strides = {2, 1}, .padding = {{1, 1}, {0, 1}},
                                                               .count_include_pad = false}); },
              std::tuple{x}, 2);
  MaxPool pool({2, 2}, {.strides = {2, 2}});
  auto apply = [](const MaxPool& p, const Array& v) { return p(v); };
  const Array xs = random::normal(random::key(3), {3, 2, 4, 4, 2});
  EXPECT_TRUE(jnp::array_equal(jit(apply)(pool, xs[0]), pool(xs[0])));
  const Array batched = vmap(apply, in_axes{none, 0})(pool, xs);
  EXPECT_EQ(batched.shape(), (Shape{3, 2, 2, 2, 2}));
  EXPECT_TRUE(jnp::array_equal(batched[2], pool(xs[2])));
  // A module without parameters is still a pytree (Static fields only) and jit keys on them.
  EXPECT_TRUE(tree::leaves(pool).empty());
}

TEST(NnPoolingTest, ErrorsNameModuleAndShapes) {
  try {
    MaxPool({2, 2})(jnp::zeros({4, 4, 3}));
    FAIL() << "expected ShapeError";
  } catch (const ShapeError& e) {
    EXPECT_THAT(e.what(), HasSubstr("nn.max_pool"));
    EXPECT_THAT(e.what(), HasSubstr("f32[4,4,3]"));
  }
  try {
    max_pool(jnp::zeros({1, 2, 2, 3}), {3, 3});
    FAIL() << "expected ShapeError";
  } catch (const ShapeError& e) {
    EXPECT_THAT(e.what(), HasSubstr("does not fit"));
    EXPECT_THAT(e.what(), HasSubstr("f32[1,2,2,3]"));
  }
  EXPECT_THROW(MaxPool({2, 2}, {.strides = {2}}), ValueError);
  EXPECT_THROW(AvgPool({2, 0}), ValueError);
  EXPECT_THROW(AvgPool({2, 2}, {.padding = "same-ish"}), ValueError);
  EXPECT_THROW(MaxPool({2, 2}, {.data_format = "HWNC"}), ValueError);
}

}  // namespace
}  // namespace jx::nn::pooling_test
