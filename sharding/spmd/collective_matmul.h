// Collective matmul (XLA's windowed einsum; the scaling book's "collective matmul", Wang et
// al. 2023): a dot_general whose operand would be all-gathered over a mesh axis, or whose
// result would be reduce-scattered over one, becomes N steps (N the axis' size) of a partial
// dot plus a ppermute to the ring neighbour, rolled in the per-device program (as XLA's windowed
// einsum loop): the steps that do the same work are one while loop of known trip count whose
// body is one step (its position in the ring a traced index, blocks taken and written with
// dynamic slices), so the program does not grow with the ring and the pod step costs the
// body per trip. Within a trip the ppermute of the next step's shard is independent of this
// step's partial dot, so the async scheduler overlaps them.
//
//  * All-gather variant: the looped operand travels round the ring (device i receives from
//    i+1); at step s device i holds the shard of position (i+s) mod N and multiplies it with
//    the matching block of the other operand (a contracting factor: the partial products are
//    summed) or writes its block of the result (a factor the result keeps). Bidirectional:
//    copies travel both ways round at once (from i+1 and from i-1), so N/2 rounds of shifts
//    bring every shard (the scaling book's bidirectional collective matmul; on a ring the two
//    directions use different links).
//  * Reduce-scatter variant: the partial result travels round the ring (device i sends to
//    i+1); at step s device i adds its partial product for block (i-1-s) mod N of the result
//    dimension, so after N-1 shifts device i holds the full sum of block i. Bidirectional:
//    each block's halves travel opposite ways round at once, each carrying half the bytes.
//
// The partitioner (partitioner.h) picks it by XLA's condition (TPU.md, "Overlap"): it skips
// the loop when max(Tc, Tm*m) + 2*Tm*m/N >= Tc + Tm, with Tc the dot's compute, Tm the
// one-shot collective and Tm*m the loop's N-1 ppermutes (CollectiveMatmulCost).
// JX_COLLECTIVE_MATMUL=auto (default) | on | off forces it (CollectiveMatmulModeFromEnv; read
// when a program is partitioned, so a jit's cached programs keep the mode they were built in).
//
//   spmd::GatherLoop loop{"y", 4, {1, 0}, {true, false}, -1};   // lhs [B, D@y] x rhs [D, F]
//   Array out = spmd::AllGatherMatmul(loop, {lhs, rhs}, dot, {B, F}, float32);
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/types/span.h"
#include "jx/core/array.h"

namespace jx::spmd {

enum class CollectiveMatmulMode { kAuto, kOn, kOff };

// Under kAuto, a collective matmul whose steps multiply blocks of the looped dimension
// narrower than this (the MXU's 128 lanes, the narrowest of the TPU generations) is not taken:
// XLA's condition charges each step Tc/N, as if its partial dot ran at the full rate, which
// slivers (FSDP weights gathered over a ring of 256: 32 rows a step) do not.
inline constexpr int64_t kMinAutoCollectiveMatmulBlock = 128;

// JX_COLLECTIVE_MATMUL: unset or "auto" -> kAuto, "on" -> kOn, "off" -> kOff; anything else
// throws ValueError naming the variable and the values it takes.
CollectiveMatmulMode CollectiveMatmulModeFromEnv();

// The predicted seconds of the plain strategy (one-shot collective, then or after the dot) and
// of the loop, by XLA's formula.
struct CollectiveMatmulCost {
  int64_t steps = 1;                   // N: the loop's iterations (partial dots, or rounds)
  double compute_seconds = 0;          // Tc: the whole local dot
  double one_shot_seconds = 0;         // Tm: the all-gather or reduce-scatter it replaces
  double loop_permute_seconds = 0;     // Tm*m: the N-1 ppermutes, one after another
  int64_t block = 0;                   // the looped dimension's extent in one step's partial dot

  double multiplier() const { return one_shot_seconds > 0 ? loop_permute_seconds / one_shot_seconds : 0; }
  double plain_seconds() const { return compute_seconds + one_shot_seconds; }
  // max(Tc, Tm*m) + 2*Tm*m/N.
  double loop_seconds() const;
  // XLA's condition: the loop is used unless loop_seconds() >= plain_seconds().
  bool pays() const { return loop_seconds() < plain_seconds(); }
  // "max(Tc 2.18e-05 s, Tm*m 8.1e-05 s) + 2*Tm*m/4 = 0.000122 s vs Tc + Tm 9.5e-05 s (m 1.1)"
  std::string ToString() const;
};

// The binary dot of the equation (the local dot_general with its params) on two operands.
using DotFn = std::function<Array(const Array& lhs, const Array& rhs)>;

// The all-gather variant over mesh axis `axis` of size `steps`. Per dot operand: `dims[k]` is
// the dimension holding the looped factor (-1: the operand lacks it); `looped[k]`: the operand
// arrives sharded over `axis` on that dimension and is ppermuted, otherwise it holds the
// factor whole over `axis` and each step takes the block it needs (dynamic_slice).
// `result_dim` is the result's dimension of the factor (-1: a contracting factor, the partial
// products are summed).
struct GatherLoop {
  std::string axis;
  int64_t steps = 1;
  std::vector<int64_t> dims;
  std::vector<bool> looped;
  int64_t result_dim = -1;
  bool bidirectional = false;
};

// The rounds of ring shifts the loop does: N-1, or N/2 both ways round.
int64_t ShiftRounds(const GatherLoop& loop);

// The per-device result of dot(all_gather(looped operands)) without the all-gather:
// `result_shape`/`result_dtype` are the local dot's. Call inside a shard_map body over `axis`.
Array AllGatherMatmul(const GatherLoop& loop, absl::Span<const Array> operands, const DotFn& dot,
                      const std::vector<int64_t>& result_shape, DType result_dtype);

// The reduce-scatter variant over mesh axis `axis` of size `steps`: the result's dimension
// `result_dim` (of a factor the operands hold whole) is scattered; `dims[k]` is that factor's
// dimension in operand k (-1: the operand lacks it). Returns the per-device block of
// psum_scatter(dot(operands), axis, result_dim, tiled=true). Bidirectional: each block is
// split in halves along result_dim (its size must divide by 2 steps); the first halves' sums
// travel forward, the second halves' backward, at once, each carrying half the bytes.
struct ScatterLoop {
  std::string axis;
  int64_t steps = 1;
  std::vector<int64_t> dims;
  int64_t result_dim = 0;
  bool bidirectional = false;
};
Array ReduceScatterMatmul(const ScatterLoop& loop, absl::Span<const Array> operands, const DotFn& dot);

}  // namespace jx::spmd
