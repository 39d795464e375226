#include "jx/nn/attention.h"

#include <cmath>
#include <optional>

#include <gtest/gtest.h>

#include "jx/jx.h"

namespace jx::nn {
namespace {

namespace jnp = jx::numpy;

Array Normal(int seed, const Shape& shape, DType dtype = float32) {
  return jx::random::normal(jx::random::key(seed), shape, dtype);
}

// The attention of one (batch, head) pair, written directly: softmax(q k^T * scale + bias)
// v over [T, H] / [S, H] slices, masked entries at -inf.
Array ReferenceHead(const Array& q, const Array& k, const Array& v, double scale, const std::optional<Array>& mask) {
  Array logits = jnp::matmul(q, k.T()) * scale;
  if (mask) logits = jnp::where(*mask, logits, -INFINITY);
  const Array e = jnp::exp(logits - jnp::max(logits, -1, true));
  return jnp::matmul(e / jnp::sum(e, -1, true), v);
}

// jax.nn.dot_product_attention on [B, T, N, H], one (b, n) at a time; key head n * K / N.
Array Reference(const Array& q, const Array& k, const Array& v, std::optional<double> scale = std::nullopt,
                const std::optional<Array>& mask_tS = std::nullopt) {
  const int64_t batch = q.shape()[0], heads = q.shape()[2], kv_heads = k.shape()[2];
  const double s = scale.value_or(1.0 / std::sqrt(double(q.shape()[3])));
  std::vector<Array> rows;
  for (int64_t b = 0; b < batch; ++b) {
    std::vector<Array> per_head;
    for (int64_t n = 0; n < heads; ++n) {
      const int64_t kn = n / (heads / kv_heads);
      per_head.push_back(ReferenceHead(q[{b, jx::slice(), n}], k[{b, jx::slice(), kn}], v[{b, jx::slice(), kn}], s, mask_tS));
    }
    rows.push_back(jnp::stack(per_head, 1));  // [T, N, H]
  }
  return jnp::stack(rows, 0);
}

void ExpectClose(const Array& a, const Array& b, double tol) {
  ASSERT_EQ(a.shape(), b.shape());
  EXPECT_TRUE(jnp::allclose(a, b, tol, tol)) << "max |a - b| = " << jnp::max(jnp::abs(a - b)).item<double>();
}

TEST(DotProductAttentionTest, MatchesDirectReference) {
  const Array q = Normal(0, {2, 5, 3, 4}), k = Normal(1, {2, 7, 3, 4}), v = Normal(2, {2, 7, 3, 6});
  const Array y = dot_product_attention(q, k, v);
  EXPECT_EQ(y.shape(), (Shape{2, 5, 3, 6}));
  EXPECT_EQ(y.dtype(), float32);
  ExpectClose(y, Reference(q, k, v), 1e-5);
}

TEST(DotProductAttentionTest, ScaleAndBias) {
  const Array q = Normal(0, {1, 4, 2, 3}), k = Normal(1, {1, 4, 2, 3}), v = Normal(2, {1, 4, 2, 3});
  ExpectClose(dot_product_attention(q, k, v, {.scale = 0.25}), Reference(q, k, v, 0.25), 1e-5);
  // A bias of -inf-like size on one key removes it: same as masking that key.
  const Array drop_key2 = jnp::array({true, true, false, true});
  const Array bias = jnp::where(drop_key2, 0.0f, -1e9f);  // [S], broadcast over B, N, T
  ExpectClose(dot_product_attention(q, k, v, {.bias = bias}), Reference(q, k, v, std::nullopt, drop_key2), 1e-5);
}

TEST(DotProductAttentionTest, CausalIsLowerTriangularMask) {
  const Array q = Normal(3, {2, 6, 2, 4}), k = Normal(4, {2, 6, 2, 4}), v = Normal(5, {2, 6, 2, 4});
  const Array tril = jnp::tril(jnp::ones({6, 6}, bool_));
  ExpectClose(dot_product_attention(q, k, v, {.is_causal = true}), Reference(q, k, v, std::nullopt, tril), 1e-5);
  // The explicit mask and the causal flag combine (and): a mask of all true changes nothing.
  ExpectClose(dot_product_attention(q, k, v, {.mask = jnp::ones({6, 6}, bool_), .is_causal = true}),
              Reference(q, k, v, std::nullopt, tril), 1e-5);
  // The weights of query 0 put everything on key 0.
  const Array w = dot_product_attention_weights(q, k, {.is_causal = true});
  EXPECT_EQ(w.shape(), (Shape{2, 2, 6, 6}));
  ExpectClose(w[0][0][0], jnp::array({1.f, 0.f, 0.f, 0.f, 0.f, 0.f}), 0);
}

TEST(DotProductAttentionTest, MaskBroadcastsOverBatchAndHeads) {
  const Array q = Normal(6, {2, 3, 2, 4}), k = Normal(7, {2, 5, 2, 4}), v = Normal(8, {2, 5, 2, 4});
  const Array m = jnp::array(std::vector<bool>{true, false, true, true, false, false, true, false, true, true, true, true, true,
                                                 false, false},
                             {3, 5});
  ExpectClose(dot_product_attention(q, k, v, {.mask = m}), Reference(q, k, v, std::nullopt, m), 1e-5);
  ExpectClose(dot_product_attention(q, k, v, {.mask = m.reshape({1, 1, 3, 5})}), Reference(q, k, v, std::nullopt, m),
              1e-5);
}

TEST(DotProductAttentionTest, FullyMaskedRowAttendsUniformlyWithoutNaN) {
  const Array q = Normal(9, {1, 2, 1, 4}), k = Normal(10, {1, 3, 1, 4}), v = Normal(11, {1, 3, 1, 4});
  const Array m = jnp::array(std::vector<bool>{false, false, false, true, false, true}, {2, 3});
  const Array w = dot_product_attention_weights(q, k, {.mask = m});
  ExpectClose(w[0][0][0], jnp::full({3}, 1.f / 3), 1e-6);
  const Array y = dot_product_attention(q, k, v, {.mask = m});
  ExpectClose(y[0][0][0], jnp::mean(v[{0, jx::slice(), 0}], 0), 1e-5);
  EXPECT_TRUE(jnp::all(jnp::isfinite(y)).item<bool>());
  // Its gradient is finite too, and zero through the masked logits.
  const auto loss = [&](const Array& qq, const Array& kk) { return jnp::sum(dot_product_attention(qq, kk, v, {.mask = m})); };
  auto [gq, gk] = jx::grad(loss, jx::argnums{0, 1})(q, k);
  EXPECT_TRUE(jnp::all(jnp::isfinite(gq)).item<bool>());
  EXPECT_TRUE(jnp::all(jnp::isfinite(gk)).item<bool>());
  ExpectClose(gq[0][0], jnp::zeros({1, 4}), 0);
}

TEST(DotProductAttentionTest, LargeLogitsAreStable) {
  // Logits of order 1e4: a naive exp overflows; the shifted softmax picks the largest key.
  const Array q = jnp::array(std::vector<float>{100.f, 0.f}, {1, 1, 1, 2});
  const Array k = jnp::array(std::vector<float>{1.f, 0.f, 2.f, 0.f, -3.f, 0.f}, {1, 3, 1, 2});
  const Array v = jnp::array(std::vector<float>{1.f, 2.f, 3.f}, {1, 3, 1, 1});
  const Array w = dot_product_attention_weights(q, k, {.scale = 100.0});
  ExpectClose(w.reshape({3}), jnp::array({0.f, 1.f, 0.f}), 0);
  ExpectClose(dot_product_attention(q, k, v, {.scale = 100.0}).reshape({1}), jnp::array({2.f}), 0);
}

TEST(DotProductAttentionTest, GroupedQueryHeadsShareKeyHeads) {
  // N = 4 query heads over K = 2 key/value heads: heads 0,1 read kv head 0, heads 2,3 kv head 1.
  const Array q = Normal(12, {2, 3, 4, 5}), k = Normal(13, {2, 4, 2, 5}), v = Normal(14, {2, 4, 2, 3});
  const Array y = dot_product_attention(q, k, v, {.is_causal = true});
  EXPECT_EQ(y.shape(), (Shape{2, 3, 4, 3}));
  ExpectClose(y, Reference(q, k, v, std::nullopt, jnp::tril(jnp::ones({3, 4}, bool_))), 1e-5);
  ExpectClose(y, dot_product_attention(q, jnp::repeat(k, 2, 2), jnp::repeat(v, 2, 2), {.is_causal = true}), 1e-6);
}

TEST(DotProductAttentionTest, UnbatchedInputsAndVmap) {
  const Array q = Normal(15, {3, 4, 2, 4}), k = Normal(16, {3, 5, 2, 4}), v = Normal(17, {3, 5, 2, 4});
  const Array batched = dot_product_attention(q, k, v, {.is_causal = true});
  ExpectClose(dot_product_attention(q[1], k[1], v[1], {.is_causal = true}), batched[1], 1e-6);
  const auto unbatched = [](const Array& a, const Array& b, const Array& c) {
    return dot_product_attention(a, b, c, {.is_causal = true});
  };
  ExpectClose(jx::vmap(unbatched)(q, k, v), batched, 1e-6);
  EXPECT_EQ(dot_product_attention_weights(q[0], k[0]).shape(), (Shape{2, 4, 5}));
}

TEST(DotProductAttentionTest, JitMatchesEager) {
  const Array q = Normal(18, {2, 8, 4, 8}), k = Normal(19, {2, 8, 4, 8}), v = Normal(20, {2, 8, 4, 8});
  const Array m = jx::random::bernoulli(jx::random::key(21), 0.7, Shape{2, 1, 8, 8});
  const auto f = [](const Array& a, const Array& b, const Array& c, const Array& mask) {
    return dot_product_attention(a, b, c, {.mask = mask, .is_causal = true});
  };
  ExpectClose(jx::jit(f)(q, k, v, m), f(q, k, v, m), 1e-5);
}

TEST(DotProductAttentionTest, GradientsMatchFiniteDifferences) {
  const Array q = Normal(22, {2, 3, 2, 3}, float64), k = Normal(23, {2, 4, 2, 3}, float64),
              v = Normal(24, {2, 4, 2, 2}, float64);
  const Array m = jnp::array(std::vector<bool>{true, true, false, true, false, true, true, true, true, false, true, true},
                              {3, 4});
  const auto f = [&](const Array& a, const Array& b, const Array& c) {
    return dot_product_attention(a, b, c, {.mask = m, .is_causal = true});
  };
  jx::check_grads(f, std::tuple{q, k, v}, /*order=*/2);
  const auto grouped = [&](const Array& a, const Array& b, const Array& c) {
    return dot_product_attention(a, b[{jx::slice(), jx::slice(), jx::slice(0, 1)}],
                                 c[{jx::slice(), jx::slice(), jx::slice(0, 1)}]);
  };
  jx::check_grads(grouped, std::tuple{q, k, v}, /*order=*/1);
}

TEST(DotProductAttentionTest, Float64StaysFloat64) {
  const Array q = Normal(25, {1, 2, 1, 2}, float64);
  const Array y = dot_product_attention(q, q, q, {.is_causal = true});
  EXPECT_EQ(y.dtype(), float64);
  ExpectClose(y, Reference(q, q, q, std::nullopt, jnp::tril(jnp::ones({2, 2}, bool_))), 1e-12);
}

TEST(DotProductAttentionTest, ErrorsNameTheShapes) {
  const Array q = Normal(0, {2, 3, 4, 8}), k = Normal(1, {2, 5, 4, 8});
  EXPECT_THROW(dot_product_attention(q, Normal(1, {2, 5, 4, 7}), k), ShapeError);     // head sizes
  EXPECT_THROW(dot_product_attention(q, Normal(1, {2, 5, 3, 8}), k), ShapeError);     // 3 does not divide 4
  EXPECT_THROW(dot_product_attention(q, Normal(1, {1, 5, 4, 8}), k), ShapeError);     // batch
  EXPECT_THROW(dot_product_attention(q, k, Normal(2, {2, 6, 4, 8})), ShapeError);     // value length
  EXPECT_THROW(dot_product_attention(q, k, k, {.mask = jnp::ones({3, 5})}), TypeError);  // float mask
  try {
    dot_product_attention(q, k, k, {.mask = jnp::ones({4, 5}, bool_)});
    FAIL() << "a [4, 5] mask does not broadcast to [2, 4, 3, 5]";
  } catch (const ShapeError& e) {
    EXPECT_NE(std::string(e.what()).find("[dot_product_attention] mask bool[4,5]"), std::string::npos) << e.what();
  }
  EXPECT_THROW(dot_product_attention(q.astype(int32), k.astype(int32), k), TypeError);
}

}  // namespace
}  // namespace jx::nn
