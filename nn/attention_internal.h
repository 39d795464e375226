// Shared by dot_product_attention (attention.cc) and flash_attention (flash_attention.cc):
// the checks of query, key and value and the masked logits' value.
#pragma once

#include <cstdint>

#include "jx/core/array.h"
#include "jx/core/dtype.h"

namespace jx::nn::internal {

// The checked [B, T, N, H] / [B, S, K, H] dimensions of query and key (and value).
struct AttentionDims {
  bool batched = true;
  int64_t batch = 1, q_len = 0, kv_len = 0, num_heads = 0, kv_heads = 0, head_dim = 0;
};

// ShapeError / TypeError naming `op` unless query is [B, T, N, H] (or [T, N, H]) and key
// [B, S, K, H] of the same floating dtype with K dividing N.
AttentionDims CheckQueryKey(const Array& query, const Array& key, const char* op);
// ShapeError / TypeError naming `op` unless value is [B, S, K, H_v] in key's dtype.
void CheckValue(const Array& value, const Array& key, const AttentionDims& d, const char* op);

// The most negative logit a mask writes: JAX's -0.7 * finfo(dtype).max, finite so a fully
// masked row gives uniform weights rather than NaN, and far enough from the lowest value that
// subtracting the row maximum cannot overflow.
double LargeNegative(DType dtype);

}  // namespace jx::nn::internal
