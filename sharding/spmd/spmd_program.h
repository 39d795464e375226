// An SPMD program: a global jaxpr partitioned for a mesh (propagation.h, partitioner.h) into
// the per-device jaxpr every device runs (a shard_map body over all the mesh's axes, with its
// collectives), plus the shardings of its arguments and results. jit with shardings and eager
// ops on sharded arrays build one per signature (cached) and run it. On a mesh of simulated
// TPU chips the per-device jaxpr is compiled once into an N-chip executable (its HLO has the
// collectives; every chip runs it, collectives move the data over the modeled ICI and the
// chips' clocks advance); on other devices every device's program runs in lockstep on the
// host, each collective moving the real per-device values (the eager path of shard_map).
//
//   auto prog = spmd::SpmdProgram::Build(global, mesh, in, out);
//   std::cout << prog->local_jaxpr();          // the per-device program with its collectives
//   Arrays ys = prog->Run({xs, ws});           // sharded results
#pragma once

#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "absl/types/span.h"
#include "jx/core/array.h"
#include "jx/core/executable.h"
#include "jx/core/jaxpr.h"
#include "jx/devices/tpu/pod_plan.h"
#include "jx/sharding/mesh.h"
#include "jx/sharding/named_sharding.h"
#include "jx/sharding/spmd/partitioner.h"
#include "jx/sharding/spmd/propagation.h"

namespace jx::tpu {
class PodProgram;
}

namespace jx::spmd {

class SpmdProgram {
 public:
  // Partitions `global` (no spec in its types) for `mesh`: `in` per invar and `out` per
  // outvar (or empty) fix shardings; the rest is propagated.
  // name: the program's ("train_step": reports say jit(train_step)).
  static std::shared_ptr<const SpmdProgram> Build(const ClosedJaxpr& global, const Mesh& mesh,
                                                  absl::Span<const MaybeSharding> in,
                                                  absl::Span<const MaybeSharding> out, const std::string& name = "spmd");

  const ClosedJaxpr& global_jaxpr() const { return global_; }
  const ClosedJaxpr& local_jaxpr() const { return local_; }
  const Mesh& mesh() const { return mesh_; }
  const std::vector<NamedSharding>& in_shardings() const { return in_shardings_; }
  const std::vector<NamedSharding>& out_shardings() const { return out_shardings_; }
  // One line per partitioning decision (collective choices, gathers for ops without a rule).
  const std::vector<std::string>& log() const { return log_; }
  // The strategy chosen for each dot_general with a sharded contraction, with its candidates.
  const std::vector<DotDecision>& dot_decisions() const { return dot_decisions_; }
  // The partitioned program as text: the mesh, the shardings, the per-device jaxpr, and on
  // TPU chips the compiled per-device HLO with its collectives.
  std::string ToString() const;
  // The N-chip executable (compiled on first use; nullptr on a mesh that is not of TPU chips).
  std::shared_ptr<const Executable> executable() const;

  // A dry run on a mesh of simulated TPU chips: the per-device program optimized and costed
  // for the pod, its step laid out as a run would lay it out, its memory from buffer
  // assignment, without compiling it for the host or touching any chip (tpu::PodProgram::Plan).
  // A ValueError on a mesh that is not of one pod's TPU chips.
  tpu::PodPlan Plan() const;

  // Runs on global arguments (each placed by its in_sharding first, if it is not already);
  // returns sharded arrays laid out by out_shardings.
  Arrays Run(absl::Span<const Array> args) const;

 private:
  ClosedJaxpr global_;
  ClosedJaxpr local_;
  Mesh mesh_;
  std::vector<NamedSharding> in_shardings_, out_shardings_;
  std::vector<std::string> log_;
  std::vector<DotDecision> dot_decisions_;
  std::shared_ptr<const Lowering> lowering_;  // on a mesh of TPU chips
  std::string name_;
  double build_seconds_ = 0;  // tracing is the caller's; propagation, partitioning, lowering
  mutable std::mutex compile_mu_;
  mutable std::shared_ptr<const Executable> executable_;
  mutable std::shared_ptr<const tpu::PodProgram> planned_;
};

// The PartitionSpec of a sharding of `rank` dims: one entry per dim (P() when replicated),
// as JAX reports a partitioned program's shardings.
PartitionSpec SpecOf(const DimShardings& s, int64_t rank);

}  // namespace jx::spmd
