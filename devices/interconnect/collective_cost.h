// What collectives cost on a torus (../shared/TPU.md, "Collectives"): the time of an
// all-reduce, all-gather, reduce-scatter or all-to-all over groups of chips, or of a ppermute,
// and the bytes each one-way link carries. Every cost is
//
//   seconds = fixed_s + max(latency_s, bandwidth_s)     (collectives)
//   seconds = fixed_s + latency_s + bandwidth_s         (ppermute)
//
// with fixed_s = t0 (Torus::link().fixed_s), latency_s = hops * t_hop along the longest chain
// of dependent hops, and bandwidth_s = bytes through the busiest link / (eta * W). Each link
// costs its own W and t_hop (Torus::params: an on-chip link between a v2/v3/v7 chip's cores has
// no ICI hop latency). The algorithm follows the group's shape on the torus:
//  * one torus axis that wraps, the whole ring in the group: a bidirectional ring, every shard
//    sent both ways round: T ~ V / W_bidi (W_bidi = 2W), latency N/2 hops;
//  * one axis without wraparound (or part of a ring): a line, T ~ (N-1)(V/N) / W, N-1 hops;
//  * an axis-aligned sub-grid over k axes: the array is split so every axis' links carry a
//    share at once; bandwidths add: T ~ V / (sum over axes of each one's rate), = V / (k W_bidi)
//    over k rings, latency the sum of the axes' hops (the time counts each share's last,
//    largest stage, as TPU.md's formula does; link_bytes holds every stage's bytes);
//  * any other group: a bidirectional ring in the group's order, each step routed over the
//    torus (Torus::Route), its time its busiest link's load with every group's bytes on it
//    summed (contention);
//  * all-to-all: every pair's V/N^2 routed (an even split on ring ties), the busiest link's
//    load / (eta W): a quarter of the all-gather on a bidirectional ring (sub-grids are
//    counted per axis, so a whole pod's all-to-all costs O(links), not O(N^2));
//  * all-reduce = reduce-scatter + all-gather (twice the all-gather's time, t0 once);
//    reduce-scatter moves what all-gather moves (the adds are the chips' VPU work, not ICI's).
// Groups of one chip, and ppermutes that move nothing, cost 0.
//
//   ici::Torus t = ici::Torus::ForSlice(tpu::ChipSpec("v5e"), {16, 16});
//   auto c = ici::CostCollective(t, ici::CollectiveKind::kAllGather, rows, 64 << 20);
//   c.seconds;     // ~ t0 + 64 MiB / (2 * 0.96 * 4.5e10 B/s)
//   c.algorithm;   // "bidi ring over torus axis 1 (wraps), 16 groups at once" (rows: the
//                  // 16 groups of 16 chips along axis 1)
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace jx::ici {

class Torus;

enum class CollectiveKind { kAllReduce, kAllGather, kReduceScatter, kAllToAll };

// HLO's opcode name: "all-reduce", "all-gather", "reduce-scatter", "all-to-all".
std::string_view CollectiveKindName(CollectiveKind kind);

// The bytes one one-way link carries (Torus::links()[link]).
struct LinkBytes {
  int64_t link = -1;
  int64_t bytes = 0;
};

struct CollectiveCost {
  std::string op;              // HLO's opcode: "all-gather", ..., "collective-permute"
  double seconds = 0;          // the total, as above
  double fixed_s = 0;          // t0 (0 when nothing moves)
  double latency_s = 0;        // hops * t_hop
  double bandwidth_s = 0;      // the busiest link's bytes / (eta * W), or the multi-axis formula
  int64_t hops = 0;            // the longest chain of hops latency_s counts
  bool latency_bound = false;  // latency_s > bandwidth_s
  // In words: "bidi ring over torus axis 0 (wraps)", "line over torus axis 1 (no
  // wraparound)", "multi-axis over torus axes 0 (bidi ring), 1 (line, no wraparound)", "bidi
  // ring of 4 chips routed over the torus, 3 groups at once", "routed pairwise within ...",
  // "2 transfers routed hop by hop (dimension-ordered), no link shared".
  std::string algorithm;
  // The bytes every link that carries any moves, by ascending link id (all groups together).
  std::vector<LinkBytes> link_bytes;

  int64_t max_link_bytes() const;    // the busiest link's
  int64_t total_link_bytes() const;  // summed over links (bytes x hops)
  // "all-gather 0.000775 s = t0 2.29e-06 + max(latency 8e-06, bandwidth 0.000773) [bidi ring
  // over torus axis 1 (wraps), 16 groups at once]"
  std::string ToString() const;
};

// The cost of `kind` over `groups` (chip indices of `torus`, all groups running at once; each
// chip in at most one group; an empty list means one group of every chip, as XLA's empty
// replica_groups). `bytes` is V: the full array's bytes in one group: an all-gather's result,
// a reduce-scatter's operand, an all-reduce's operand, and for an all-to-all the group's whole
// data (N chips of V/N bytes each, every chip sending V/N^2 to every other). Throws
// ValueError for a chip off the torus, a chip in two groups, an empty group or negative bytes.
CollectiveCost CostCollective(const Torus& torus, CollectiveKind kind, const std::vector<std::vector<int64_t>>& groups,
                              int64_t bytes);

// The cost of a ppermute (HLO's collective-permute): every (source, target) pair sends
// bytes_per_transfer from source to target at once, each routed hop by hop (Torus::Route);
// transfers sharing a one-way link share its bandwidth, so the busiest link sets the time:
// seconds = t0 + (longest route's hops) * t_hop + (busiest link's bytes) / (eta W). A chip
// sending to itself moves nothing over ICI. Throws ValueError for a chip off the torus, a
// source or a target named twice, or negative bytes.
CollectiveCost CostPermute(const Torus& torus, const std::vector<std::pair<int64_t, int64_t>>& pairs,
                           int64_t bytes_per_transfer);

}  // namespace jx::ici
