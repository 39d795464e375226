#include "jx/nn/attention.h"

#include <cmath>
#include <limits>
#include <string>

#include "jx/core/errors.h"
#include "jx/lax/lax.h"
#include "jx/lax/numpy/numpy.h"
#include "jx/lax/random/random.h"
#include "jx/nn/attention_internal.h"
#include "jx/nn/functions.h"

namespace jx::nn {

namespace jnp = jx::numpy;

namespace internal {

AttentionDims CheckQueryKey(const Array& query, const Array& key, const char* kOp) {
  JX_CHECK_OP(query.ndim() == 3 || query.ndim() == 4, ShapeError, kOp,
              "query must be [B, T, N, H] or unbatched [T, N, H], got ", query.aval().str());
  JX_CHECK_OP(key.ndim() == query.ndim(), ShapeError, kOp, "key must have query's rank: query ", query.aval().str(),
              ", key ", key.aval().str());
  JX_CHECK_OP(IsFloating(query.dtype()) && query.dtype() == key.dtype(), TypeError, kOp,
              "query and key must be floating arrays of one dtype, got ", query.aval().str(), " and ",
              key.aval().str());
  AttentionDims d;
  d.batched = query.ndim() == 4;
  const int o = d.batched ? 1 : 0;
  const Shape& q = query.shape();
  const Shape& k = key.shape();
  if (d.batched) {
    d.batch = q[0];
    JX_CHECK_OP(k[0] == q[0], ShapeError, kOp, "query and key batch sizes differ: query ", query.aval().str(), ", key ",
                key.aval().str());
  }
  d.q_len = q[o];
  d.kv_len = k[o];
  d.num_heads = q[o + 1];
  d.kv_heads = k[o + 1];
  d.head_dim = q[o + 2];
  JX_CHECK_OP(k[o + 2] == d.head_dim, ShapeError, kOp, "query and key head sizes differ: query ", query.aval().str(),
              ", key ", key.aval().str());
  JX_CHECK_OP(d.kv_heads > 0 && d.num_heads % d.kv_heads == 0, ShapeError, kOp,
              "the number of key heads must divide the number of query heads: query ", query.aval().str(), ", key ",
              key.aval().str());
  return d;
}

void CheckValue(const Array& value, const Array& key, const AttentionDims& d, const char* kOp) {
  JX_CHECK_OP(value.dtype() == key.dtype(), TypeError, kOp, "value must have key's dtype: key ", key.aval().str(),
              ", value ", value.aval().str());
  JX_CHECK_OP(value.ndim() == key.ndim(), ShapeError, kOp, "value must have key's rank: key ", key.aval().str(),
              ", value ", value.aval().str());
  const int o = d.batched ? 1 : 0;
  JX_CHECK_OP(value.shape()[o] == d.kv_len && value.shape()[o + 1] == d.kv_heads &&
                  (!d.batched || value.shape()[0] == d.batch),
              ShapeError, kOp, "value must match key's batch, length and heads: key ", key.aval().str(), ", value ",
              value.aval().str());
}

double LargeNegative(DType dtype) {
  return dtype == float64 ? -0.7 * std::numeric_limits<double>::max() : -0.7 * std::numeric_limits<float>::max();
}

}  // namespace internal

namespace {

using internal::AttentionDims;
using internal::LargeNegative;

constexpr const char* kOp = "dot_product_attention";

AttentionDims CheckQueryKey(const Array& query, const Array& key) { return internal::CheckQueryKey(query, key, kOp); }

// A [B, N, T, S] logits-shaped operand (bias or mask) must broadcast to the logits.
void CheckBroadcastsToLogits(const Array& x, const char* name, const Shape& logits_shape) {
  bool ok = x.ndim() <= static_cast<int64_t>(logits_shape.size());
  for (int64_t i = 1; ok && i <= x.ndim(); ++i) {
    const int64_t dim = x.shape()[x.ndim() - i];
    ok = dim == 1 || dim == logits_shape[logits_shape.size() - i];
  }
  JX_CHECK_OP(ok, ShapeError, kOp, name, " ", x.aval().str(), " does not broadcast to the logits' shape ",
              ShapedArray{logits_shape, float32}.str());
}

}  // namespace

Array dot_product_attention_weights(const Array& query, const Array& key, const AttentionOptions& options) {
  const AttentionDims d = CheckQueryKey(query, key);
  const Array q = d.batched ? query : jnp::expand_dims(query, 0);
  const Array k = d.batched ? key : jnp::expand_dims(key, 0);
  const DType logits_dtype = promote_types(query.dtype(), float32);

  // [B, N, T, S]; with grouped heads, query head n = kv_head * G + g reads key head kv_head.
  Array logits;
  if (d.kv_heads == d.num_heads) {
    logits = jnp::einsum("btnh,bsnh->bnts", {q, k}, {}, logits_dtype);
  } else {
    const int64_t groups = d.num_heads / d.kv_heads;
    const Array grouped = jnp::reshape(q, {d.batch, d.q_len, d.kv_heads, groups, d.head_dim});
    logits = jnp::reshape(jnp::einsum("btkgh,bskh->bkgts", {grouped, k}, {}, logits_dtype),
                          {d.batch, d.num_heads, d.q_len, d.kv_len});
  }
  const double scale = options.scale.value_or(1.0 / std::sqrt(static_cast<double>(d.head_dim)));
  logits = logits * scale;

  const Shape logits_shape = d.batched ? logits.shape() : Shape{d.num_heads, d.q_len, d.kv_len};
  if (options.bias) {
    CheckBroadcastsToLogits(*options.bias, "bias", logits_shape);
    logits = (logits + *options.bias).astype(logits_dtype);
  }
  std::optional<Array> mask;
  if (options.mask) {
    JX_CHECK_OP(options.mask->dtype() == bool_, TypeError, kOp, "mask must be a bool array, got ",
                options.mask->aval().str());
    CheckBroadcastsToLogits(*options.mask, "mask", logits_shape);
    mask = *options.mask;
  }
  if (options.is_causal) {
    const Array causal = jnp::tril(jnp::ones({d.q_len, d.kv_len}, bool_));
    mask = mask ? jnp::logical_and(*mask, causal) : causal;
  }
  if (mask) logits = jnp::where(*mask, logits, LargeNegative(logits_dtype));

  const Array weights = softmax(logits, -1).astype(key.dtype());
  return d.batched ? weights : jnp::squeeze(weights, 0);
}

Array dot_product_attention(const Array& query, const Array& key, const Array& value, const AttentionOptions& options) {
  const AttentionDims d = CheckQueryKey(query, key);
  internal::CheckValue(value, key, d, kOp);

  const Array weights = dot_product_attention_weights(query, key, options);
  const Array p = d.batched ? weights : jnp::expand_dims(weights, 0);
  const Array v = d.batched ? value : jnp::expand_dims(value, 0);
  Array out;
  if (d.kv_heads == d.num_heads) {
    out = jnp::einsum("bnts,bsnh->btnh", p, v);
  } else {
    const int64_t groups = d.num_heads / d.kv_heads;
    const int64_t value_dim = value.shape().back();
    const Array grouped = jnp::reshape(p, {d.batch, d.kv_heads, groups, d.q_len, d.kv_len});
    out = jnp::reshape(jnp::einsum("bkgts,bskh->btkgh", grouped, v), {d.batch, d.q_len, d.num_heads, value_dim});
  }
  return d.batched ? out : jnp::squeeze(out, 0);
}

// ---- MultiHeadAttention ----

namespace {

constexpr const char* kMha = "MultiHeadAttention";

int64_t SizeOr(int64_t size, int64_t fallback) { return size > 0 ? size : fallback; }

// The per-head size of a projection: given, or query_size / num_heads.
int64_t HeadSize(int64_t given, int64_t num_heads, int64_t query_size, const char* name) {
  if (given > 0) return given;
  JX_CHECK_OP(query_size % num_heads == 0, ValueError, kMha, name, " defaults to query_size / num_heads, but ",
              num_heads, " heads do not divide query_size ", query_size, "; give ", name, " explicitly");
  return query_size / num_heads;
}

// [..., L, D] -> [B, L, D] (unbatched inputs get a batch of one), checking D.
Array Batched(const Array& x, int64_t size, const char* name) {
  JX_CHECK_OP(x.ndim() == 2 || x.ndim() == 3, ShapeError, kMha, name, " must be [B, L, ", size, "] or [L, ", size,
              "], got ", x.aval().str());
  JX_CHECK_OP(x.shape().back() == size, ShapeError, kMha, name, " ", x.aval().str(), " must end in its size ", size);
  return x.ndim() == 3 ? x : jnp::expand_dims(x, 0);
}

}  // namespace

MultiHeadAttention::MultiHeadAttention(int64_t num_heads, int64_t query_size, const Array& key,
                                       const MultiHeadAttentionOptions& options) {
  JX_CHECK_OP(num_heads > 0 && query_size > 0, ValueError, kMha, "num_heads and query_size must be positive, got ",
              num_heads, " and ", query_size);
  JX_CHECK_OP(options.key_size >= 0 && options.value_size >= 0 && options.output_size >= 0 && options.qk_size >= 0 &&
                  options.vo_size >= 0,
              ValueError, kMha, "sizes must be positive (or 0 for the default)");
  const int64_t key_size = SizeOr(options.key_size, query_size);
  const int64_t value_size = SizeOr(options.value_size, query_size);
  const int64_t output_size = SizeOr(options.output_size, query_size);
  const int64_t qk = HeadSize(options.qk_size, num_heads, query_size, "qk_size");
  const int64_t vo = HeadSize(options.vo_size, num_heads, query_size, "vo_size");
  const Array keys = jx::random::split(key, 4);
  auto linear = [&](int64_t in, int64_t out, int i, bool bias) {
    return Linear(in, out, keys[i], {.use_bias = bias, .dtype = options.dtype});
  };
  query_proj = linear(query_size, num_heads * qk, 0, options.use_query_bias);
  key_proj = linear(key_size, num_heads * qk, 1, options.use_key_bias);
  value_proj = linear(value_size, num_heads * vo, 2, options.use_value_bias);
  output_proj = linear(num_heads * vo, output_size, 3, options.use_output_bias);
  dropout = Dropout(options.dropout_p);
  qk_size = Static<int64_t>{qk};
  vo_size = Static<int64_t>{vo};
  is_causal = Static<bool>{options.is_causal};
}

Array MultiHeadAttention::operator()(const Array& query, const Array& key, const Array& value,
                                     const std::optional<Array>& mask) const {
  return (*this)(query, key, value, mask, Array(), /*training=*/false);
}

Array MultiHeadAttention::operator()(const Array& query, const Array& key, const Array& value,
                                     const std::optional<Array>& mask, const Array& dropout_key, bool training) const {
  const int64_t heads = num_heads();
  JX_CHECK_OP(key_proj.out_features() == heads * qk_size.value &&
                  value_proj.out_features() == output_proj.in_features() &&
                  value_proj.out_features() % vo_size.value == 0 && value_proj.out_features() / vo_size.value == heads,
              ShapeError, kMha, "projections of different head counts: query ", query_proj.weight.aval().str(),
              ", key ", key_proj.weight.aval().str(), ", value ", value_proj.weight.aval().str(), ", output ",
              output_proj.weight.aval().str(), " with qk_size ", qk_size.value, ", vo_size ", vo_size.value);
  JX_CHECK_OP(query.ndim() == key.ndim() && key.ndim() == value.ndim(), ShapeError, kMha,
              "query, key and value must all be batched or all unbatched: ", query.aval().str(), ", ",
              key.aval().str(), ", ", value.aval().str());
  const Array q = Batched(query, query_proj.in_features(), "query");
  const Array k = Batched(key, key_proj.in_features(), "key");
  const Array v = Batched(value, value_proj.in_features(), "value");
  const int64_t batch = q.shape()[0], q_len = q.shape()[1], kv_len = k.shape()[1];
  JX_CHECK_OP(k.shape()[0] == batch && v.shape()[0] == batch && v.shape()[1] == kv_len, ShapeError, kMha,
              "key and value must have query's batch and one length: query ", query.aval().str(), ", key ",
              key.aval().str(), ", value ", value.aval().str());

  const Array q_heads = query_proj(q).reshape({batch, q_len, heads, qk_size.value});
  const Array k_heads = key_proj(k).reshape({batch, kv_len, heads, qk_size.value});
  const Array v_heads = value_proj(v).reshape({batch, kv_len, heads, vo_size.value});
  Array weights = dot_product_attention_weights(q_heads, k_heads, {.mask = mask, .is_causal = is_causal.value});
  if (training) weights = dropout(weights, dropout_key, /*training=*/true);
  const Array attended =
      jnp::einsum("bnts,bsnh->btnh", weights, v_heads).reshape({batch, q_len, heads * vo_size.value});
  const Array out = output_proj(attended);
  return query.ndim() == 3 ? out : jnp::squeeze(out, 0);
}

}  // namespace jx::nn
