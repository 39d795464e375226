#include "jx/nn/attention.h"

#include <cmath>
#include <optional>

#include <gtest/gtest.h>

#include "jx/jx.h"

namespace jx::nn::attention_test {
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
      per_head.push_back(
          ReferenceHead(q[{b, jx::slice(), n}], k[{b, jx::slice(), kn}], v[{b, jx::slice(), kn}], s, mask_tS));
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
  const Array m = jnp::array(std::vector<bool>{true, false, true, true, false, false, true, false, true, true, true,
                                                 true, true, false, false},
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
  const auto loss = [&](const Array& qq, const Array& kk) {
    return jnp::sum(dot_product_attention(qq, kk, v, {.mask = m}));
  };
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
  const Array m = jnp::array(std::vector<bool>{true, true, false, true, false, true, true, true, true, false, true,
                                               true},
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
  EXPECT_THROW(dot_product_attention(q, k, k.astype(float64)), TypeError);
  EXPECT_THROW(dot_product_attention(q, k, k[0]), ShapeError);
}

// ---- MultiHeadAttention ----

// The module written out: per head n, softmax((x Wq_n)(c Wk_n)^T / sqrt(qk)) (c Wv_n), the heads
// concatenated, times Wo, with biases where the module has them. Unbatched [T, D] inputs.
Array ReferenceMha(const MultiHeadAttention& m, const Array& x, const Array& ctx, const std::optional<Array>& mask) {
  auto project = [](const Linear& l, const Array& in) {
    const Array y = jnp::matmul(in, l.weight);
    return l.bias ? y + *l.bias : y;
  };
  const int64_t qk = m.qk_size.value, vo = m.vo_size.value;
  const Array q = project(m.query_proj, x), k = project(m.key_proj, ctx), v = project(m.value_proj, ctx);
  std::vector<Array> heads;
  for (int64_t n = 0; n < m.num_heads(); ++n) {
    const Array qn = q[{jx::slice(), jx::slice(n * qk, (n + 1) * qk)}];
    const Array kn = k[{jx::slice(), jx::slice(n * qk, (n + 1) * qk)}];
    const Array vn = v[{jx::slice(), jx::slice(n * vo, (n + 1) * vo)}];
    heads.push_back(ReferenceHead(qn, kn, vn, 1.0 / std::sqrt(double(qk)), mask));
  }
  return project(m.output_proj, jnp::concatenate(heads, 1));
}

TEST(MultiHeadAttentionTest, SizesAndDefaultsAreEquinoxs) {
  const MultiHeadAttention m(4, 32, jx::random::key(0));
  EXPECT_EQ(m.num_heads(), 4);
  EXPECT_EQ(m.qk_size.value, 8);
  EXPECT_EQ(m.query_proj.weight.shape(), (Shape{32, 32}));
  EXPECT_FALSE(m.query_proj.bias || m.key_proj.bias || m.value_proj.bias || m.output_proj.bias);
  const MultiHeadAttention n(2, 12, jx::random::key(1),
                             {.key_size = 5, .value_size = 7, .output_size = 3, .qk_size = 4, .vo_size = 6,
                              .use_query_bias = true, .use_output_bias = true});
  EXPECT_EQ(n.query_proj.weight.shape(), (Shape{12, 8}));
  EXPECT_EQ(n.key_proj.weight.shape(), (Shape{5, 8}));
  EXPECT_EQ(n.value_proj.weight.shape(), (Shape{7, 12}));
  EXPECT_EQ(n.output_proj.weight.shape(), (Shape{12, 3}));
  EXPECT_TRUE(n.query_proj.bias && n.output_proj.bias && !n.key_proj.bias);
  EXPECT_THROW(MultiHeadAttention(3, 32, jx::random::key(0)), ValueError);  // 3 does not divide 32
  EXPECT_NO_THROW(MultiHeadAttention(3, 32, jx::random::key(0), {.qk_size = 8, .vo_size = 8}));
}

TEST(MultiHeadAttentionTest, MatchesDirectReference) {
  const MultiHeadAttention m(2, 12, jx::random::key(2),
                             {.key_size = 5, .value_size = 5, .output_size = 3, .qk_size = 4, .vo_size = 6,
                              .use_query_bias = true, .use_key_bias = true, .use_value_bias = true,
                              .use_output_bias = true});
  const Array x = Normal(3, {2, 4, 12}), ctx = Normal(4, {2, 6, 5});
  const Array y = m(x, ctx, ctx);
  EXPECT_EQ(y.shape(), (Shape{2, 4, 3}));
  for (int b = 0; b < 2; ++b) ExpectClose(y[b], ReferenceMha(m, x[b], ctx[b], std::nullopt), 1e-5);
  // Unbatched inputs give the unbatched result.
  ExpectClose(m(x[1], ctx[1], ctx[1]), y[1], 1e-6);
}

TEST(MultiHeadAttentionTest, CausalOptionAndExplicitMask) {
  const Array x = Normal(5, {2, 5, 16});
  const MultiHeadAttention causal(4, 16, jx::random::key(6), {.is_causal = true});
  MultiHeadAttention plain = causal;
  plain.is_causal = Static<bool>{false};
  const Array tril = jnp::tril(jnp::ones({5, 5}, bool_));
  const Array y = causal(x, x, x);
  ExpectClose(y, plain(x, x, x, tril), 1e-6);
  for (int b = 0; b < 2; ++b) ExpectClose(y[b], ReferenceMha(causal, x[b], x[b], tril), 1e-5);
  // The future does not leak: changing the last token leaves the earlier outputs alone.
  const Array x2 = x.at({jx::slice(), 4}).set(jnp::zeros({2, 16}));
  ExpectClose(causal(x2, x2, x2)[{jx::slice(), jx::slice(0, 4)}], y[{jx::slice(), jx::slice(0, 4)}], 1e-6);
  // A per-example [B, 1, T, S] mask combines with the causal one (the diagonal kept, so that
  // no row is fully masked: the -inf reference would make those NaN).
  const Array m = jnp::logical_or(jx::random::bernoulli(jx::random::key(7), 0.6, Shape{2, 1, 5, 5}),
                                  jnp::eye(5, std::nullopt, 0, bool_));
  const Array both = causal(x, x, x, m);
  for (int b = 0; b < 2; ++b) {
    ExpectClose(both[b], ReferenceMha(causal, x[b], x[b], jnp::logical_and(m[{b, 0}], tril)), 1e-5);
  }
}

TEST(MultiHeadAttentionTest, DropoutOnTheAttentionWeights) {
  const MultiHeadAttention m(2, 8, jx::random::key(8), {.dropout_p = 0.5});
  const Array x = Normal(9, {3, 6, 8});
  const Array dkey = jx::random::key(10);
  // Inference ignores dropout; training with a key is deterministic in that key.
  ExpectClose(m(x, x, x, std::nullopt, dkey, /*training=*/false), m(x, x, x), 0);
  const Array a = m(x, x, x, std::nullopt, dkey, true);
  ExpectClose(a, m(x, x, x, std::nullopt, dkey, true), 0);
  EXPECT_FALSE(jnp::allclose(a, m(x, x, x), 1e-3, 1e-3));
  EXPECT_FALSE(jnp::allclose(a, m(x, x, x, std::nullopt, jx::random::key(11), true), 1e-3, 1e-3));
  // It is the module's Dropout applied to the weights before they weight the values.
  const int64_t n = 2, h = 4;
  const Array q = m.query_proj(x).reshape({3, 6, n, h}), k = m.key_proj(x).reshape({3, 6, n, h});
  const Array v = m.value_proj(x).reshape({3, 6, n, h});
  const Array w = m.dropout(dot_product_attention_weights(q, k), dkey, true);
  ExpectClose(a, m.output_proj(jnp::einsum("bnts,bsnh->btnh", w, v).reshape({3, 6, n * h})), 1e-5);
}

TEST(MultiHeadAttentionTest, GradientsThroughTheModule) {
  const MultiHeadAttention m(2, 6, jx::random::key(12),
                             {.key_size = 4, .value_size = 4, .use_query_bias = true, .use_output_bias = true,
                              .is_causal = true, .dtype = float64});
  const Array x = Normal(13, {2, 3, 6}, float64), ctx = Normal(14, {2, 3, 4}, float64);
  jx::check_grads([](const MultiHeadAttention& mm, const Array& a, const Array& c) { return mm(a, c, c); },
                  std::tuple{m, x, ctx}, /*order=*/1);
  // grad of a loss with respect to the module is a module of gradients.
  const MultiHeadAttention g =
      jx::grad([&](const MultiHeadAttention& mm) { return jnp::sum(mm(x, ctx, ctx) * mm(x, ctx, ctx)); })(m);
  EXPECT_EQ(g.query_proj.weight.shape(), m.query_proj.weight.shape());
  EXPECT_GT(jnp::max(jnp::abs(g.key_proj.weight)).item<double>(), 0.0);
}

TEST(MultiHeadAttentionTest, JitAndVmap) {
  const MultiHeadAttention m(4, 16, jx::random::key(15), {.use_query_bias = true, .is_causal = true});
  const Array x = Normal(16, {3, 5, 16});
  const auto self_attend = [](const MultiHeadAttention& mm, const Array& a) { return mm(a, a, a); };
  const Array eager = self_attend(m, x);
  ExpectClose(jx::jit(self_attend)(m, x), eager, 1e-5);
  ExpectClose(jx::vmap(self_attend, jx::in_axes{jx::none, 0})(m, x), eager, 1e-5);
}

TEST(MultiHeadAttentionTest, HeadSlicesSumToTheWhole) {
  // Megatron's split: the projections' columns of heads 0-1 and of heads 2-3 (and the output
  // projection's matching rows) are two modules of 2 heads whose outputs add up to the whole.
  const MultiHeadAttention m(4, 16, jx::random::key(17), {.use_query_bias = true, .is_causal = true});
  auto part = [&](int64_t first, int64_t count) {
    MultiHeadAttention p = m;
    const jx::Slice cols = jx::slice(first * 4, (first + count) * 4);
    p.query_proj.weight = m.query_proj.weight[{jx::slice(), cols}];
    p.query_proj.bias = (*m.query_proj.bias)[cols];
    p.key_proj.weight = m.key_proj.weight[{jx::slice(), cols}];
    p.value_proj.weight = m.value_proj.weight[{jx::slice(), cols}];
    p.output_proj.weight = m.output_proj.weight[cols];
    return p;
  };
  const Array x = Normal(18, {2, 5, 16});
  const MultiHeadAttention low = part(0, 2), high = part(2, 2);
  EXPECT_EQ(low.num_heads(), 2);
  ExpectClose(low(x, x, x) + high(x, x, x), m(x, x, x), 1e-5);
}

TEST(MultiHeadAttentionTest, ErrorsNameTheModule) {
  const MultiHeadAttention m(2, 8, jx::random::key(19), {.key_size = 6});
  const Array x = Normal(20, {2, 3, 8});
  try {
    m(x, x, x);
    FAIL() << "key has 8 features, key_size is 6";
  } catch (const ShapeError& e) {
    EXPECT_NE(std::string(e.what()).find("[MultiHeadAttention] key f32[2,3,8] must end in its size 6"),
              std::string::npos)
        << e.what();
  }
  const Array c = Normal(21, {2, 4, 6}), v = Normal(22, {2, 4, 8});  // value_size defaults to query_size
  EXPECT_NO_THROW(m(x, c, v));
  EXPECT_THROW(m(x, c, Normal(22, {2, 5, 8})), ShapeError);  // value length differs from key's
  EXPECT_THROW(m(x[0], c, v), ShapeError);                    // batched and unbatched mixed
  EXPECT_THROW(m(x, c, v, jnp::ones({3, 4})), TypeError);     // a float mask
}

}  // namespace
}  // namespace jx::nn::attention_test
