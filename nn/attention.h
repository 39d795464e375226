// Attention: nn::MultiHeadAttention (Equinox's eqx.nn.MultiheadAttention on batched inputs)
// and scaled dot-product attention as jax.nn.dot_product_attention (and Flax's
// dot_product_attention_weights), in JAX's [batch, seq, heads, head_dim] layout.
//
//   nn::MultiHeadAttention mha(/*num_heads=*/8, /*query_size=*/512, key, {.is_causal = true});
//   Array y = mha(x, x, x);                                 // self-attention: [B, T, 512]
//   Array z = mha(x, ctx, ctx, mask, dropout_key, /*training=*/true);
//
//
//   // q [B, T, N, H], k and v [B, S, K, H] (K divides N: grouped-query attention when K < N)
//   Array y = jx::nn::dot_product_attention(q, k, v, {.is_causal = true});      // [B, T, N, H]
//   Array p = jx::nn::dot_product_attention_weights(q, k, {.mask = m});          // [B, N, T, S]
//
// which mirror `jax.nn.dot_product_attention(q, k, v, is_causal=True)` and
// `flax.linen.dot_product_attention_weights(q, k, mask=m)`. Logits are computed in float32 (or
// float64 for float64 inputs) and the softmax runs there; masked logits are replaced by a large
// finite negative number as JAX does, so a fully masked row attends uniformly and nothing is
// ever NaN. Inputs may also be unbatched ([T, N, H]).
#pragma once

#include <optional>

#include "jx/core/array.h"
#include "jx/core/dtype.h"
#include "jx/core/pytree.h"
#include "jx/nn/dropout.h"
#include "jx/nn/linear.h"

namespace jx::nn {

// jax.nn.dot_product_attention's keyword arguments.
struct AttentionOptions {
  // Added to the logits; broadcastable to [B, N, T, S].
  std::optional<Array> bias = std::nullopt;
  // Boolean, broadcastable to [B, N, T, S]; false drops the (query, key) pair.
  std::optional<Array> mask = std::nullopt;
  // Multiplies the logits; default 1/sqrt(H).
  std::optional<double> scale = std::nullopt;
  // Query t sees keys s <= t (jnp.tril(ones(T, S)), aligned at the top left as JAX's).
  bool is_causal = false;
};

// softmax(scale * q . k + bias, masked) over the keys: [B, N, T, S] in key's dtype.
Array dot_product_attention_weights(const Array& query, const Array& key, const AttentionOptions& options = {});

// The weights applied to value: [B, T, N, H_v] in value's dtype.
Array dot_product_attention(const Array& query, const Array& key, const Array& value,
                            const AttentionOptions& options = {});

// Sizes default as Equinox's: key_size, value_size and output_size to query_size, qk_size and
// vo_size (the per-head sizes of queries/keys and values/outputs) to query_size / num_heads.
// No projection has a bias unless asked for (Equinox's default).
struct MultiHeadAttentionOptions {
  int64_t key_size = 0, value_size = 0, output_size = 0, qk_size = 0, vo_size = 0;
  bool use_query_bias = false, use_key_bias = false, use_value_bias = false, use_output_bias = false;
  // Dropout on the attention weights (Equinox's dropout_p), applied in training calls only.
  double dropout_p = 0.0;
  // Every call masks as dot_product_attention's is_causal (query t sees keys s <= t).
  bool is_causal = false;
  DType dtype = float32;
};

// Multi-head attention: queries, keys and values are projected (Linear, weight [in, out]) to
// num_heads heads of qk_size / vo_size, attend as dot_product_attention, and the heads are
// concatenated and projected to output_size. The number of heads is read from the query
// projection's width (out_features / qk_size), so the projections restricted to some whole
// heads -- one chip's columns of Megatron-style tensor parallelism -- form the module of
// those heads, and without an output bias the outputs of such parts sum to the whole's.
struct MultiHeadAttention {
  BOOST_HANA_DEFINE_STRUCT(MultiHeadAttention, (Linear, query_proj), (Linear, key_proj), (Linear, value_proj),
                           (Linear, output_proj), (Dropout, dropout), (Static<int64_t>, qk_size),
                           (Static<int64_t>, vo_size), (Static<bool>, is_causal));

  MultiHeadAttention() = default;
  // ValueError naming MultiHeadAttention when a size is not positive or num_heads does not
  // divide query_size where a per-head size defaults to query_size / num_heads.
  MultiHeadAttention(int64_t num_heads, int64_t query_size, const Array& key,
                     const MultiHeadAttentionOptions& options = {});

  // query [B, T, query_size], key [B, S, key_size], value [B, S, value_size] (or unbatched
  // [T, .], [S, .]) -> [B, T, output_size]. mask: bool, broadcastable to [B, num_heads, T, S]
  // (so [T, S] and [B, 1, T, S] work); it combines with is_causal. Inference (no dropout).
  Array operator()(const Array& query, const Array& key, const Array& value,
                   const std::optional<Array>& mask = std::nullopt) const;
  // With dropout on the attention weights when training (dropout_key is a PRNG key).
  Array operator()(const Array& query, const Array& key, const Array& value, const std::optional<Array>& mask,
                   const Array& dropout_key, bool training) const;

  int64_t num_heads() const { return query_proj.out_features() / qk_size.value; }
};

}  // namespace jx::nn
