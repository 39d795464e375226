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
//    The partial product passes an optimization barrier before it is added: fused with that
//    addition it would wait for the shift.
//
// The partitioner (partitioner.h) prices it with the cost model that times the emitted
// program (spmd_cost.h): each step's kernels (its partial dots and the slices and additions
// around them) at their roofline, each ring shift with its start-up and hops, a step as long
// as the longer of its kernels and the shift they overlap (CollectiveMatmulCost::
// scheduled_seconds), and takes it when that beats the plain strategy. The report also gives
// XLA's condition (TPU.md, "Overlap"): XLA skips the loop when max(Tc, Tm*m) + 2*Tm*m/N >=
// Tc + Tm, with Tc the dot's compute, Tm the one-shot collective and Tm*m the loop's N-1
// ppermutes.
// JX_COLLECTIVE_MATMUL=auto (default) | on | off forces it (CollectiveMatmulModeFromEnv; read
// when a program is partitioned, so a jit's cached programs keep the mode they were built in).
//
//   spmd::GatherLoop loop{"y", 4, {1, 0}, {true, false}, -1};   // lhs [B, D@y] x rhs [D, F]
//   Array out = spmd::AllGatherMatmul(loop, {lhs, rhs}, dot, {B, F}, float32);
#pragma once

#include <array>
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
// its price charges each partial dot at the chip's peak rate (SpmdCostModel::KernelSeconds
// knows no MXU padding), which slivers (FSDP weights gathered over a ring of 256: 32 rows a
// step) do not reach.
inline constexpr int64_t kMinAutoCollectiveMatmulBlock = 128;

// JX_COLLECTIVE_MATMUL: unset or "auto" -> kAuto, "on" -> kOn, "off" -> kOff; anything else
// throws ValueError naming the variable and the values it takes.
CollectiveMatmulMode CollectiveMatmulModeFromEnv();

// A collective matmul's predicted seconds: by the cost model, step by step as the emitted loop
// runs, and by XLA's formula (the reason XLA would give for taking it or not).
struct CollectiveMatmulCost {
  int64_t steps = 1;                   // N: the loop's iterations (partial dots, or rounds)
  double compute_seconds = 0;          // Tc: the whole local dot at the chip's peak
  double one_shot_seconds = 0;         // Tm: the all-gather or reduce-scatter it replaces
  double loop_permute_seconds = 0;     // Tm*m: the N-1 ppermutes, one after another
  int64_t block = 0;                   // the looped dimension's extent in one step's partial dot

  // The emitted steps, one entry each, as the cost model charges their kernels and the pod
  // step lays them out. Step s runs before[s] (kernels that wait for nothing: the slices
  // feeding its partial dots, index arithmetic; for the reduce-scatter variant its partial dots
  // too), then for each direction round the ring d (0 forward, 1 backward; one way round uses
  // 0) after[s][d]: the kernels that wait for the value d's ring shift brings (the gather
  // variant's partial dots of d's blocks, the reduce-scatter variant's additions to d's sums).
  // shift[s][d] is the ring shift of direction d that step s starts (0: none). The shifts run
  // one at a time (the scheduler keeps one collective-permute in flight), step by step and
  // forward first, each once its value is ready: the gather variant's form a chain per
  // direction (each forwards the block the previous one of its direction brought, so it starts
  // when that arrived, and the chip's kernels go on meanwhile); the reduce-scatter variant's
  // shift of step s sends the sum of its direction step s-1 ended with, and the step's
  // additions follow its last shift (as the simulated run orders them).
  std::vector<double> before_seconds;
  std::vector<std::array<double, 2>> after_seconds, shift_seconds;
  bool chained_shifts = true;  // the gather variant

  double multiplier() const { return one_shot_seconds > 0 ? loop_permute_seconds / one_shot_seconds : 0; }
  double plain_seconds() const { return compute_seconds + one_shot_seconds; }
  // XLA's formula: max(Tc, Tm*m) + 2*Tm*m/N.
  double xla_loop_seconds() const;
  // XLA's condition: the loop is used unless xla_loop_seconds() >= plain_seconds().
  bool xla_pays() const { return xla_loop_seconds() < plain_seconds(); }
  // The cost model's: the steps laid out on the chip's kernels and its ICI as above.
  double scheduled_seconds() const;
  // The kernels' and the shifts' seconds over all steps.
  double total_kernel_seconds() const;
  double total_shift_seconds() const;
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
// Per step of the loop as AllGatherMatmul emits it (ShiftRounds + 1 steps): whether the step
// runs inside a rolled while loop (a run of two or more steps that do the same work) rather
// than on its own.
std::vector<bool> RolledSteps(const GatherLoop& loop);

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
// Per step of ReduceScatterMatmul's loop (`steps` of them): whether it runs inside the rolled
// while loop.
std::vector<bool> RolledSteps(const ScatterLoop& loop);

}  // namespace jx::spmd
