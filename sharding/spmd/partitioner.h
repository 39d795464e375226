// The SPMD partitioner on jaxprs: a global program with a sharding for every value
// (propagation.h) becomes the per-device program a shard_map body is. It replays the global
// jaxpr on per-device values: each equation runs on local shapes with its operands resharded
// to what its sharding rule asks for (all_gather to drop an axis, a local slice by
// axis_index to add one, all_to_all to move one between dims), and partial results over a
// sharded reduction factor are combined (psum, or psum_scatter when the result is wanted
// sharded, pmax/pmin). For each dot_general with a sharded contraction it chooses between
// all-gathering the operands first and multiplying the shards then reducing, by the
// interconnect's cost plus the dot's compute time (spmd_cost.h), and logs why
// (JX_LOG_SPMD=1). A dot whose operand is gathered over one mesh axis, or whose partial
// result is reduce-scattered over one, may instead become a collective matmul (a loop of
// partial dots and ring ppermutes, collective_matmul.h) where the cost model says it pays,
// XLA's condition given as the reason (JX_COLLECTIVE_MATMUL=on|off forces it). scan, while, cond and inner calls (regions.h) are
// bound again on the per-device values with each body partitioned by its own plan (a loop's
// carry keeps one sharding); other equations without a sharding rule get replicated
// operands, logged.
//
// Run it while tracing a shard_map body over every mesh axis (spmd_jit.h does):
//   Arrays outs = spmd::PartitionedEval(jaxpr, plan, mesh, *cost, local_args, &log);
#pragma once

#include <string>
#include <vector>

#include "absl/types/span.h"
#include "jx/core/array.h"
#include "jx/core/jaxpr.h"
#include "jx/sharding/mesh.h"
#include "jx/sharding/spmd/propagation.h"
#include "jx/sharding/spmd/spmd_cost.h"

namespace jx::spmd {

// One way to partition a dot_general and what the cost model predicts for it on the mesh.
struct DotCandidate {
  std::string strategy;             // "all-gather lhs over 'x' first", "multiply then psum
                                    // over 'y'", "collective matmul: 4 steps of ppermute over 'x'"
  double compute_seconds = 0;       // the local dots
  double communication_seconds = 0; // its collectives, one after another
  double predicted_seconds = 0;     // as compared (overlap counted where the strategy overlaps)
};

// The partitioner's choice for one dot_general with a sharded factor (explain_sharding shows
// these; JX_LOG_SPMD=1 prints them).
struct DotDecision {
  std::string equation;    // "dot_general f32[1024,2048] x f32[2048,8192] contracting over 'x'"
  std::vector<DotCandidate> candidates;
  size_t chosen = 0;       // index into candidates
  std::string why;         // "all-gather first: 0.31 ms < multiply then all-reduce 0.52 ms"
};

// `args` are the per-device values of jaxpr's invars, sharded as plan says; returns the
// per-device values of its outvars, sharded as plan says. `log` (optional) receives one line
// per choice (also printed with JX_LOG_SPMD=1).
// `decisions` (optional) receives one entry per dot_general whose strategy was chosen.
Arrays PartitionedEval(const ClosedJaxpr& jaxpr, const ShardingPlan& plan, const Mesh& mesh,
                       const SpmdCostModel& cost, absl::Span<const Array> args, std::vector<std::string>* log,
                       std::vector<DotDecision>* decisions = nullptr);

// One step of a reshard: an all_to_all moving `axes` from dim `source_dim` to dim `dim`, an
// all_gather of `axes` off dim `dim`, or a local slice of dim `dim` by the position on `axes`.
struct ReshardStep {
  enum Kind { kAllToAll, kAllGather, kSlice };
  Kind kind;
  int64_t dim;
  int64_t source_dim;  // kAllToAll only
  std::vector<std::string> axes;
};

// The steps that move a value of rank `rank` from sharding `from` to `to`: all_to_alls where
// an axis moves whole between dims, then all_gathers of the axes `to` drops, then slices.
std::vector<ReshardStep> ReshardSteps(int64_t rank, const DimShardings& from, const DimShardings& to);

// Per-device value x of a tensor of global aval `global` moved from sharding `from` to `to`
// (inside a shard_map body over the mesh's axes): ReshardSteps' collectives.
Array Reshard(const Array& x, const ShapedArray& global, const DimShardings& from, const DimShardings& to,
              const Mesh& mesh);

// What Reshard's collectives cost on the mesh (slices are free).
double ReshardSeconds(const ShapedArray& global, const DimShardings& from, const DimShardings& to, const Mesh& mesh,
                      const SpmdCostModel& cost);

// The local (per-device) shape of `global` under sharding s.
Shape LocalShape(const Shape& global, const DimShardings& s, const Mesh& mesh);

}  // namespace jx::spmd
