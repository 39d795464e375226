// Scaled dot-product attention, as jax.nn.dot_product_attention (and Flax's
// dot_product_attention_weights), in JAX's [batch, seq, heads, head_dim] layout:
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

}  // namespace jx::nn
