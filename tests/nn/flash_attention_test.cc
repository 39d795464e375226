// nn::flash_attention: the blockwise online-softmax attention equals dot_product_attention
// (values and gradients) for every tiling (blocks dividing the lengths or not, causal or not,
// grouped heads, unbatched), skips the tiles above the diagonal, and keeps the planned HBM of
// a long sequence far below full attention's.
#include "jx/nn/flash_attention.h"

#include <string>
#include <tuple>

#include <gtest/gtest.h>

#include "jx/jx.h"

namespace jx::nn::flash_attention_test {
namespace {

namespace jnp = jx::numpy;

Array Normal(int seed, const Shape& shape, DType dtype) { return random::normal(random::key(seed), shape, dtype); }

struct Tiling {
  int64_t t, s, heads, kv_heads, block_q, block_kv;
  bool causal;
};

class FlashAttentionTest : public ::testing::TestWithParam<Tiling> {};

TEST_P(FlashAttentionTest, EqualsDotProductAttentionWithGradients) {
  const Tiling c = GetParam();
  const Array q = Normal(0, {2, c.t, c.heads, 8}, float64);
  const Array k = Normal(1, {2, c.s, c.kv_heads, 8}, float64);
  const Array v = Normal(2, {2, c.s, c.kv_heads, 8}, float64);
  const Array w = Normal(3, {2, c.t, c.heads, 8}, float64);  // a cotangent that is not all ones
  auto flash = [&](const Array& a, const Array& b, const Array& e) {
    return flash_attention(a, b, e, {.is_causal = c.causal, .block_q = c.block_q, .block_kv = c.block_kv});
  };
  auto full = [&](const Array& a, const Array& b, const Array& e) {
    return dot_product_attention(a, b, e, {.is_causal = c.causal});
  };
  EXPECT_TRUE(jnp::allclose(flash(q, k, v), full(q, k, v), 1e-12, 1e-12));
  auto loss = [&](auto attention) {
    return [attention, &w](const Array& a, const Array& b, const Array& e) { return jnp::sum(attention(a, b, e) * w); };
  };
  const auto [gq, gk, gv] = grad(loss(flash), argnums{0, 1, 2})(q, k, v);
  const auto [wq, wk, wv] = grad(loss(full), argnums{0, 1, 2})(q, k, v);
  EXPECT_TRUE(jnp::allclose(gq, wq, 1e-10, 1e-10));
  EXPECT_TRUE(jnp::allclose(gk, wk, 1e-10, 1e-10));
  EXPECT_TRUE(jnp::allclose(gv, wv, 1e-10, 1e-10));
  // Under jit the same program runs compiled.
  EXPECT_TRUE(jnp::allclose(jit(flash)(q, k, v), full(q, k, v), 1e-12, 1e-12));
}

INSTANTIATE_TEST_SUITE_P(Tilings, FlashAttentionTest,
                         ::testing::Values(Tiling{8, 8, 2, 2, 4, 4, false}, Tiling{8, 8, 2, 2, 4, 4, true},
                                           Tiling{10, 10, 2, 2, 4, 3, true},  // ragged last blocks
                                           Tiling{6, 11, 2, 2, 4, 5, false},  // T != S
                                           Tiling{5, 9, 2, 2, 2, 4, true},    // causal, T < S
                                           Tiling{8, 8, 4, 2, 8, 2, true},    // grouped heads
                                           Tiling{7, 7, 2, 2, 16, 16, true}));  // one tile

TEST(FlashAttentionTest, Float32MatchesAndUnbatchedWorks) {
  const Array q = Normal(0, {12, 2, 16}, float32), k = Normal(1, {12, 2, 16}, float32);
  const Array v = Normal(2, {12, 2, 16}, float32);
  const Array got = flash_attention(q, k, v, {.is_causal = true, .block_q = 4, .block_kv = 4});
  EXPECT_EQ(got.shape(), (Shape{12, 2, 16}));
  EXPECT_EQ(got.dtype(), float32);
  EXPECT_TRUE(jnp::allclose(got, dot_product_attention(q, k, v, {.is_causal = true}), 1e-5, 1e-6));
}

// Causal: only the tiles on or below the diagonal are computed. T = S = 16 in blocks of 4:
// 10 of the 16 tiles, two dots each in the forward pass.
TEST(FlashAttentionTest, CausalSkipsTilesAboveTheDiagonal) {
  const Array q = jnp::zeros({1, 16, 1, 8});
  auto count_dots = [&](bool causal) {
    const std::string text =
        make_jaxpr([causal](const Array& a) { return flash_attention(a, a, a, {.is_causal = causal, .block_q = 4, .block_kv = 4}); })(q)
            .ToString();
    int n = 0;
    for (size_t at = text.find("dot_general["); at != std::string::npos; at = text.find("dot_general[", at + 1)) ++n;
    return n;
  };
  EXPECT_EQ(count_dots(false), 2 * 16);
  EXPECT_EQ(count_dots(true), 2 * 10);
}

// A 4096-token sequence on a 2-chip v5e slice (batch split), planned (nothing runs): full
// attention's backward pass keeps [B, N, T, S] f32 logits and weights (256 MiB each per chip);
// flash attention only [B, N, 512, 512] tiles (4 MiB). Planned per chip: 290 MB vs 872 MB.
// (Not the ~60 MB of one tile at a time: the memory-aware list scheduler interleaves the
// independent query blocks, so several blocks' tiles are live at once.)
TEST(FlashAttentionTest, PlannedHbmPeakStaysFarBelowFullAttention) {
  const tpu::Pod pod = tpu::make_pod("v5e", {2, 1});
  const Mesh mesh = make_mesh({2}, {"data"}, pod.devices());
  const NamedSharding batch(mesh, P("data"));
  const ShapeDtypeStruct x{.shape = {2, 4096, 4, 128}, .dtype = bfloat16, .sharding = std::make_shared<NamedSharding>(batch)};
  auto peak = [&](auto attention) {
    auto step = jit(
        [attention](const Array& q, const Array& k, const Array& v) {
          auto loss = [attention](const Array& a, const Array& b, const Array& c) {
            return jnp::sum(attention(a, b, c).astype(float32));
          };
          return grad(loss, argnums{0, 1, 2})(q, k, v);
        },
        in_shardings{batch, batch, batch});
    return step.lower(x, x, x).compile().plan().hbm_peak_bytes;
  };
  const int64_t flash = peak([](const Array& q, const Array& k, const Array& v) {
    return flash_attention(q, k, v, {.is_causal = true, .block_q = 512, .block_kv = 512});
  });
  const int64_t full = peak([](const Array& q, const Array& k, const Array& v) {
    return dot_product_attention(q, k, v, {.is_causal = true});
  });
  EXPECT_LT(flash, full / 2) << flash << " vs " << full;
}

// On a simulated v5e chip each query block's tiles run as one attention kernel (the TPU
// pipeline's attention fusion), and the chip's numbers (bf16 MXU passes, f32 softmax) match
// the host's f32 attention to bf16 accuracy.
TEST(FlashAttentionTest, OnAChipEachQueryBlockIsOneKernel) {
  const tpu::Pod pod = tpu::make_pod("v5e", {1, 1});
  const Device* chip = pod.devices()[0];
  const Array q = Normal(0, {2, 32, 2, 16}, float32), k = Normal(1, {2, 32, 2, 16}, float32);
  const Array v = Normal(2, {2, 32, 2, 16}, float32);
  auto flash = jit([](const Array& a, const Array& b, const Array& c) {
    return flash_attention(a, b, c, {.is_causal = true, .block_q = 16, .block_kv = 16});
  });
  const Array qc = device_put(q.astype(bfloat16), chip), kc = device_put(k.astype(bfloat16), chip);
  const Array vc = device_put(v.astype(bfloat16), chip);
  auto attention_kernels = [](const std::string& text) {
    int n = 0;
    for (size_t at = text.find("backend_config=\"attention\""); at != std::string::npos;
         at = text.find("backend_config=\"attention\"", at + 1)) {
      ++n;
    }
    return n;
  };
  const std::string text = flash.lower(qc, kc, vc).compile().as_text();
  EXPECT_EQ(attention_kernels(text), 2) << text;  // two query blocks
  const Array got = flash(qc, kc, vc).astype(float32);
  const Array want = dot_product_attention(q.astype(bfloat16).astype(float32), k.astype(bfloat16).astype(float32),
                                           v.astype(bfloat16).astype(float32), {.is_causal = true});
  EXPECT_TRUE(jnp::allclose(device_put(got, jx::devices("cpu")[0]), want, 2e-2, 2e-2));

  // The backward pass's tiles (recomputed weights, dV, dP, dS, dQ, dK) run as an attention
  // kernel too: its three tiles, joined by the dq, dk and dv accumulation, are one kernel that
  // adds the tiles' gradients and rounds them to bf16 itself (the forward pass is one kernel
  // here: its two query blocks' log-sum-exps are one array). The gradients match the host's
  // f32 ones to bf16 accuracy.
  const Array w = Normal(3, {2, 32, 2, 16}, float32);
  auto loss = [&w](auto attention) {
    return [attention, &w](const Array& a, const Array& b, const Array& c) {
      return jnp::sum(attention(a, b, c).astype(float32) * w);
    };
  };
  auto grads = jit(grad(loss([](const Array& a, const Array& b, const Array& c) {
                          return flash_attention(a, b, c, {.is_causal = true, .block_q = 16, .block_kv = 16});
                        }),
                        argnums{0, 1, 2}));
  const std::string grad_text = grads.lower(qc, kc, vc).compile().as_text();
  EXPECT_EQ(attention_kernels(grad_text), 2) << grad_text;
  const auto [gq, gk, gv] = grads(qc, kc, vc);
  const auto [wq, wk, wv] = grad(loss([](const Array& a, const Array& b, const Array& c) {
                                   return dot_product_attention(a, b, c, {.is_causal = true});
                                 }),
                                 argnums{0, 1, 2})(q.astype(bfloat16).astype(float32), k.astype(bfloat16).astype(float32),
                                                   v.astype(bfloat16).astype(float32));
  const Device* cpu = jx::devices("cpu")[0];
  EXPECT_TRUE(jnp::allclose(device_put(gq.astype(float32), cpu), wq, 3e-2, 3e-2));
  EXPECT_TRUE(jnp::allclose(device_put(gk.astype(float32), cpu), wk, 3e-2, 3e-2));
  EXPECT_TRUE(jnp::allclose(device_put(gv.astype(float32), cpu), wv, 3e-2, 3e-2));
}

TEST(FlashAttentionTest, BadInputsNameTheOp) {
  const Array q = jnp::zeros({1, 4, 2, 8});
  try {
    flash_attention(q, q, q.astype(bfloat16));
    FAIL() << "no error";
  } catch (const TypeError& e) {
    EXPECT_NE(std::string(e.what()).find("flash_attention"), std::string::npos) << e.what();
  }
  EXPECT_THROW(flash_attention(q, q, q, {.block_q = 0}), ValueError);
  EXPECT_THROW(flash_attention(q, jnp::zeros({1, 4, 3, 8}), jnp::zeros({1, 4, 3, 8})), ShapeError);
}

}  // namespace
}  // namespace jx::nn::flash_attention_test
