// Flash attention: scaled dot-product attention computed block by block with an online
// softmax (Dao et al., "FlashAttention", and FlashAttention-2's backward pass), in
// jax.nn.dot_product_attention's [batch, seq, heads, head_dim] layout and with its result.
// The [T, S] matrix of logits is never formed: each (query block, key block) pair makes a
// [block_q, block_kv] tile of logits, the running row maximum and row sum rescale what the
// earlier key blocks contributed, and only the output and the rows' log-sum-exp are saved
// for the backward pass, which recomputes each tile (a custom_vjp). With is_causal, tiles
// above the diagonal are skipped (about half the work of full attention) and only the tiles
// the diagonal crosses are masked. The same algorithm as the Pallas TPU kernel
// (jax.experimental.pallas.ops.tpu.flash_attention, MaxText's attention=flash), written in
// jx's ops so every transform and target runs it.
//
//   // q [B, T, N, H], k and v [B, S, K, H] (K divides N: grouped-query attention)
//   Array y = jx::nn::flash_attention(q, k, v, {.is_causal = true, .block_q = 512, .block_kv = 512});
//   // == jx::nn::dot_product_attention(q, k, v, {.is_causal = true}) up to rounding
//
// Logits and the softmax run in float32 (float64 for float64 inputs); the tiles' weights are
// cast to value's dtype for their matmul with value, as dot_product_attention casts its
// weights. Blocks need not divide the lengths (the last block is shorter).
#pragma once

#include <cstdint>
#include <optional>

#include "jx/core/array.h"

namespace jx::nn {

struct FlashAttentionOptions {
  // Multiplies the logits; default 1/sqrt(H).
  std::optional<double> scale = std::nullopt;
  // Query t sees keys s <= t (aligned at the top left, as dot_product_attention's).
  bool is_causal = false;
  // Rows of queries and of keys per tile (the Pallas kernel's block_q / block_k_major).
  int64_t block_q = 512;
  int64_t block_kv = 512;
};

// [B, T, N, H_v] in value's dtype (or [T, N, H_v] for unbatched inputs). ShapeError/TypeError
// naming flash_attention for inputs dot_product_attention would reject, ValueError for a
// block size below 1.
Array flash_attention(const Array& query, const Array& key, const Array& value,
                      const FlashAttentionOptions& options = {});

}  // namespace jx::nn
