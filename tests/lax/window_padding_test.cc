// reduce_window_min (min pooling) and JAX's string paddings ("SAME", "SAME_LOWER", "VALID")
// for reduce_window and conv_general_dilated, resolved by lax::padtype_to_pads as JAX's
// lax.reduce_window and lax.conv_general_dilated do
// (https://docs.jax.dev/en/latest/_autosummary/jax.lax.reduce_window.html).
#include <gtest/gtest.h>
#include <jx/jx.h>

namespace jx::window_padding_test {
namespace {

namespace jnp = jx::numpy;
namespace lax = jx::lax;

TEST(ReduceWindowMinTest, MinPooling) {
  Array x = jnp::arange(1, 17).astype(float32).reshape({4, 4});
  EXPECT_EQ(lax::reduce_window_min(x, {2, 2}, {2, 2}, "VALID").to_vector<float>(), (std::vector<float>{1, 3, 9, 11}));
  EXPECT_EQ(lax::reduce_window(x, lax::WindowReduction::kMin, {2, 2}, {2, 2}, "VALID").to_vector<float>(),
            (std::vector<float>{1, 3, 9, 11}));
  // Padding holds +inf, the identity: a window over padding only is +inf; ints use their max.
  EXPECT_EQ(lax::reduce_window_min(jnp::array(std::vector<float>{4, 2}), {2}, {1}, {{2, 2}}).to_vector<float>(),
            (std::vector<float>{INFINITY, 4, 2, 2, INFINITY}));
  EXPECT_EQ(lax::reduce_window_min(jnp::array(std::vector<int32_t>{-5, 7}), {1}, {1}, {{1, 0}}).to_vector<int32_t>(),
            (std::vector<int32_t>{INT32_MAX, -5, 7}));
  EXPECT_EQ(lax::reduce_window_min(jnp::array(std::vector<bool>{true, false, true, true}), {2}, {2}, "VALID")
                .to_vector<bool>(),
            (std::vector<bool>{false, true}));
}

TEST(ReduceWindowMinTest, JitVmapAndGrad) {
  Array x = jnp::sin(jnp::arange(2 * 5 * 5 * 3).astype(float64).reshape({2, 5, 5, 3}) * 0.37);
  auto pool = [](const Array& v) { return lax::reduce_window_min(v, {1, 3, 3, 1}, {1, 2, 2, 1}, "SAME"); };
  EXPECT_TRUE(jnp::array_equal(jit(pool)(x), pool(x)));
  EXPECT_TRUE(jnp::array_equal(vmap(pool)(x.reshape({1, 2, 5, 5, 3})), pool(x).reshape({1, 2, 3, 3, 3})));
  check_grads(pool, std::tuple{x}, 2);
  EXPECT_NE(make_jaxpr(pool)(x).ToString().find("reduce_window_min["), std::string::npos);
}

// JAX's padtype_to_pads: out = ceil(in / stride), pad = max(0, (out - 1) * stride + window - in),
// SAME puts the odd element after, SAME_LOWER before.
TEST(StringPaddingTest, PadtypeToPads) {
  using Pads = std::vector<std::pair<int64_t, int64_t>>;
  EXPECT_EQ(lax::padtype_to_pads({5, 6}, {2, 3}, {2, 1}, "SAME"), (Pads{{0, 1}, {1, 1}}));
  EXPECT_EQ(lax::padtype_to_pads({5, 6}, {2, 3}, {2, 1}, "SAME_LOWER"), (Pads{{1, 0}, {1, 1}}));
  EXPECT_EQ(lax::padtype_to_pads({5, 6}, {2, 3}, {2, 1}, "valid"), (Pads{{0, 0}, {0, 0}}));
  EXPECT_THROW(lax::padtype_to_pads({5}, {2}, {1}, "FULL"), ValueError);
}

TEST(StringPaddingTest, ReduceWindowResolvesStrings) {
  Array x = jnp::cos(jnp::arange(2 * 7 * 6).astype(float32).reshape({2, 7, 6}));
  const std::vector<int64_t> window = {1, 3, 2}, strides = {1, 2, 2};
  for (const char* mode : {"SAME", "SAME_LOWER", "VALID", "same"}) {
    const auto pads = lax::padtype_to_pads({2, 7, 6}, window, strides, mode);
    EXPECT_TRUE(jnp::array_equal(lax::reduce_window_max(x, window, strides, mode),
                                 lax::reduce_window_max(x, window, strides, pads)))
        << mode;
    EXPECT_TRUE(jnp::array_equal(lax::reduce_window_sum(x, window, strides, mode),
                                 lax::reduce_window_sum(x, window, strides, pads)))
        << mode;
  }
  // SAME keeps ceil(in / stride) outputs.
  EXPECT_EQ(lax::reduce_window_sum(x, window, strides, "SAME").shape(), (Shape{2, 4, 3}));
  EXPECT_THROW(lax::reduce_window_sum(x, window, strides, "FULL"), ValueError);
  EXPECT_THROW(lax::reduce_window_sum(x, {3, 2}, {2, 2}, "SAME"), ShapeError);
}

TEST(StringPaddingTest, ConvTakesStrings) {
  Array x = jnp::sin(jnp::arange(1 * 6 * 5 * 2).astype(float32).reshape({1, 6, 5, 2}));
  Array w = jnp::cos(jnp::arange(3 * 2 * 2 * 4).astype(float32).reshape({3, 2, 2, 4}));
  const auto dn = lax::ConvDimensionNumbers::FromSpecs("NHWC", "HWIO", "NHWC");
  for (const char* mode : {"SAME", "SAME_LOWER", "VALID"}) {
    Array by_string = lax::conv_general_dilated(x, w, {2, 1}, mode, {}, {}, dn);
    Array by_pads = lax::conv_general_dilated(x, w, {2, 1}, lax::padtype_to_pads({6, 5}, {3, 2}, {2, 1}, mode), {}, {}, dn);
    EXPECT_TRUE(jnp::array_equal(by_string, by_pads)) << mode;
  }
  EXPECT_EQ(lax::conv_general_dilated(x, w, {1, 1}, lax::Padding("SAME"), {}, {}, dn).shape(), (Shape{1, 6, 5, 4}));
}

}  // namespace
}  // namespace jx::window_padding_test
