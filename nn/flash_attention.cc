#include "jx/nn/flash_attention.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "jx/core/errors.h"
#include "jx/lax/lax.h"
#include "jx/lax/numpy/numpy.h"
#include "jx/nn/attention_internal.h"
#include "jx/transforms/custom_derivatives.h"
#include "jx/transforms/optimization_barrier.h"

namespace jx::nn {
namespace {

namespace jnp = jx::numpy;
using internal::AttentionDims;

constexpr const char* kOp = "flash_attention";

// Where the tiles lie: [begin, end) rows of queries and of keys.
struct Tiling {
  std::vector<std::pair<int64_t, int64_t>> q_blocks, kv_blocks;
  bool causal = false;
  double scale = 1;
  DType acc = float32;  // the logits' and accumulators' dtype

  // Whether tile (i, j) holds any (query, key) pair the causal mask keeps: key s <= query t.
  bool Visible(size_t i, size_t j) const { return !causal || kv_blocks[j].first < q_blocks[i].second; }
  // Whether the diagonal crosses tile (i, j): some pair in it is masked.
  bool Crossed(size_t i, size_t j) const { return causal && kv_blocks[j].second - 1 > q_blocks[i].first; }
};

std::vector<std::pair<int64_t, int64_t>> Blocks(int64_t length, int64_t block) {
  std::vector<std::pair<int64_t, int64_t>> out;
  for (int64_t b = 0; b < length; b += block) out.emplace_back(b, std::min(length, b + block));
  return out;
}

// Rows [begin, end) of x along its sequence dim (1: [B, T, N, H]).
Array Rows(const Array& x, std::pair<int64_t, int64_t> rows, int64_t dim = 1) {
  std::vector<int64_t> start(x.ndim(), 0), limit(x.shape().begin(), x.shape().end());
  start[dim] = rows.first;
  limit[dim] = rows.second;
  return lax::slice(x, start, limit);
}

// The scaled logits of tile (i, j), [B, N, tq, tk] in the accumulation dtype, masked where
// the diagonal crosses it.
Array TileLogits(const Tiling& t, size_t i, size_t j, const Array& q_block, const Array& k_block) {
  Array s = jnp::einsum("btnh,bsnh->bnts", {q_block, k_block}, {}, t.acc) * t.scale;
  if (!t.Crossed(i, j)) return s;
  const int64_t tq = q_block.shape()[1], tk = k_block.shape()[1];
  const Array query_pos = lax::broadcasted_iota(int32, {tq, tk}, 0) + static_cast<int32_t>(t.q_blocks[i].first);
  const Array key_pos = lax::broadcasted_iota(int32, {tq, tk}, 1) + static_cast<int32_t>(t.kv_blocks[j].first);
  return jnp::where(query_pos >= key_pos, s, internal::LargeNegative(t.acc)).astype(t.acc);
}

// Forward: the output [B, T, N, Hv] in v's dtype and the rows' log-sum-exp [B, N, T] (acc).
std::pair<Array, Array> Forward(const Tiling& t, const Array& q, const Array& k, const Array& v) {
  std::vector<Array> outs, lses;
  for (size_t i = 0; i < t.q_blocks.size(); ++i) {
    const Array qb = Rows(q, t.q_blocks[i]);
    Array m, l, acc;  // running row max and row sum [B, N, tq], output [B, N, tq, Hv]
    for (size_t j = 0; j < t.kv_blocks.size() && t.Visible(i, j); ++j) {
      const Array s = TileLogits(t, i, j, qb, Rows(k, t.kv_blocks[j]));
      const Array vb = Rows(v, t.kv_blocks[j]);
      const Array tile_max = jnp::max(s, -1);
      const Array m_new = m.defined() ? jnp::maximum(m, tile_max) : tile_max;
      const Array p = jnp::exp(s - jnp::expand_dims(m_new, -1));
      const Array pv = jnp::einsum("bnts,bsnh->bnth", {p.astype(v.dtype()), vb}, {}, t.acc);
      if (m.defined()) {
        const Array correction = jnp::exp(m - m_new);
        l = l * correction + jnp::sum(p, -1);
        acc = acc * jnp::expand_dims(correction, -1) + pv;
      } else {
        l = jnp::sum(p, -1);
        acc = pv;
      }
      m = m_new;
    }
    outs.push_back(jnp::transpose(acc / jnp::expand_dims(l, -1), std::vector<int64_t>{0, 2, 1, 3}).astype(v.dtype()));
    lses.push_back(m + jnp::log(l));
  }
  return {lax::concatenate(outs, 1), lax::concatenate(lses, 2)};
}

// [B, N, rows, H] -> [B, rows, N, H].
Array ToRowsMajor(const Array& x) { return jnp::transpose(x, std::vector<int64_t>{0, 2, 1, 3}); }

// FlashAttention-2's backward pass: each visible tile's weights recomputed from the saved
// log-sum-exp, p = exp(s - lse); dv += p^T do, dp = do v^T, ds = p (dp - rowsum(do * o)),
// dq += ds k scale, dk += ds^T q scale. The gradients accumulate in [B, N, rows, H], the dots'
// own order (as the forward pass's output does): per (batch, head), so a chip runs the tiles
// and their accumulation as one kernel over batch x heads; each block is transposed to
// [B, rows, N, H] once, at the end.
Arrays Backward(const Tiling& t, const Array& q, const Array& k, const Array& v, const Array& o, const Array& lse,
                const Array& d_out) {
  const Array delta = jnp::transpose(jnp::sum(d_out.astype(t.acc) * o.astype(t.acc), -1),
                                     std::vector<int64_t>{0, 2, 1});  // [B, N, T]
  std::vector<Array> dqs;
  std::vector<Array> dks(t.kv_blocks.size()), dvs(t.kv_blocks.size());
  for (size_t i = 0; i < t.q_blocks.size(); ++i) {
    const Array qb = Rows(q, t.q_blocks[i]), dob = Rows(d_out, t.q_blocks[i]);
    const Array lse_b = jnp::expand_dims(Rows(lse, t.q_blocks[i], 2), -1);
    const Array delta_b = jnp::expand_dims(Rows(delta, t.q_blocks[i], 2), -1);
    Array dq;
    for (size_t j = 0; j < t.kv_blocks.size() && t.Visible(i, j); ++j) {
      const Array kb = Rows(k, t.kv_blocks[j]), vb = Rows(v, t.kv_blocks[j]);
      const Array p = jnp::exp(TileLogits(t, i, j, qb, kb) - lse_b);
      const Array dv = jnp::einsum("bnts,btnh->bnsh", {p.astype(d_out.dtype()), dob}, {}, t.acc);
      const Array dp = jnp::einsum("btnh,bsnh->bnts", {dob, vb}, {}, t.acc);
      const Array ds = p * (dp - delta_b) * t.scale;
      const Array dq_tile = jnp::einsum("bnts,bsnh->bnth", {ds.astype(k.dtype()), kb}, {}, t.acc);
      const Array dk = jnp::einsum("bnts,btnh->bnsh", {ds.astype(q.dtype()), qb}, {}, t.acc);
      dq = dq.defined() ? dq + dq_tile : dq_tile;
      dks[j] = dks[j].defined() ? dks[j] + dk : dk;
      dvs[j] = dvs[j].defined() ? dvs[j] + dv : dv;
    }
    dqs.push_back(ToRowsMajor(dq.astype(q.dtype())));
  }
  // A key block no query sees (T < S under the causal mask) gets no gradient.
  for (size_t j = 0; j < t.kv_blocks.size(); ++j) {
    const int64_t rows = t.kv_blocks[j].second - t.kv_blocks[j].first;
    if (!dks[j].defined()) {
      dks[j] = jnp::zeros({k.shape()[0], rows, k.shape()[2], k.shape()[3]}, k.dtype());
      dvs[j] = jnp::zeros({v.shape()[0], rows, v.shape()[2], v.shape()[3]}, v.dtype());
      continue;
    }
    dks[j] = ToRowsMajor(dks[j].astype(k.dtype()));
    dvs[j] = ToRowsMajor(dvs[j].astype(v.dtype()));
  }
  return {lax::concatenate(dqs, 1), lax::concatenate(dks, 1), lax::concatenate(dvs, 1)};
}

}  // namespace

Array flash_attention(const Array& query, const Array& key, const Array& value, const FlashAttentionOptions& options) {
  const AttentionDims d = internal::CheckQueryKey(query, key, kOp);
  internal::CheckValue(value, key, d, kOp);
  JX_CHECK_OP(options.block_q >= 1 && options.block_kv >= 1, ValueError, kOp, "block sizes must be positive, got block_q ",
              options.block_q, " and block_kv ", options.block_kv);
  Array q = d.batched ? query : jnp::expand_dims(query, 0);
  Array k = d.batched ? key : jnp::expand_dims(key, 0);
  Array v = d.batched ? value : jnp::expand_dims(value, 0);
  // Grouped heads: query head n reads key head n / G (dot_product_attention's grouping); the
  // repeat's transpose sums the groups' key and value gradients.
  if (d.kv_heads != d.num_heads) {
    k = jnp::repeat(k, d.num_heads / d.kv_heads, 2);
    v = jnp::repeat(v, d.num_heads / d.kv_heads, 2);
  }
  auto tiling = std::make_shared<Tiling>();
  tiling->q_blocks = Blocks(d.q_len, options.block_q);
  tiling->kv_blocks = Blocks(d.kv_len, options.block_kv);
  tiling->causal = options.is_causal;
  tiling->scale = options.scale.value_or(1.0 / std::sqrt(static_cast<double>(d.head_dim)));
  tiling->acc = promote_types(query.dtype(), float32);

  const ArraysFn f = [tiling](absl::Span<const Array> a) { return Arrays{Forward(*tiling, a[0], a[1], a[2]).first}; };
  const FlatFwdFn fwd = [tiling](absl::Span<const Array> a) {
    auto [o, lse] = Forward(*tiling, a[0], a[1], a[2]);
    return std::pair<Arrays, Arrays>{Arrays{o}, Arrays{a[0], a[1], a[2], o, lse}};
  };
  // The backward pass reads its residuals through optimization barriers (as a
  // rematerialization does): else CSE would merge its recomputed tiles with the forward pass's
  // and keep every tile of logits live until the backward pass, as full attention does. The
  // residuals of the cotangent's shape (q, o, and k, v when S == T) pass one barrier with it,
  // so no tile is recomputed before the cotangent exists; one barrier per shape keeps the
  // barrier's sharding rule elementwise.
  const FlatBwdFn bwd = [tiling](absl::Span<const Array> r, absl::Span<const Array> cts) {
    const Array ct = cts[0].defined() ? cts[0] : jnp::zeros_like(r[3]);
    Arrays with_ct{ct}, others;
    std::vector<int> slot(5);  // residual i: its index in with_ct (>= 0) or -1 - its index in others
    for (int i = 0; i < 5; ++i) {
      if (r[i].shape() == ct.shape()) {
        slot[i] = static_cast<int>(with_ct.size());
        with_ct.push_back(r[i]);
      } else {
        slot[i] = -1 - static_cast<int>(others.size());
        others.push_back(r[i]);
      }
    }
    const Arrays fenced = OptimizationBarrier(with_ct);
    Arrays fenced_others;
    for (const Array& x : others) fenced_others.push_back(OptimizationBarrier({x})[0]);
    auto get = [&](int i) { return slot[i] >= 0 ? fenced[slot[i]] : fenced_others[-1 - slot[i]]; };
    return Backward(*tiling, get(0), get(1), get(2), get(3), get(4), fenced[0]);
  };
  const Array out = CustomVjpCall(f, fwd, bwd, {q, k, v})[0];
  return d.batched ? out : jnp::squeeze(out, 0);
}

}  // namespace jx::nn
