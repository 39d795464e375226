// What the partitioner's choices cost on a mesh: a collective over groups of the mesh's
// devices (the interconnect's model: devices/interconnect/collective_cost.h, on the torus of
// the mesh's chips) and a dot's compute time on one device. The partitioner compares, for each
// dot_general with a sharded contraction, all-gathering the operands first against multiplying
// the shards and reducing (all-reduce or reduce-scatter) after, and both against the
// collective matmul's loop of ring shifts (collective_matmul.h).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "jx/core/dtype.h"
#include "jx/devices/interconnect/collective_cost.h"
#include "jx/lax/precision.h"
#include "jx/sharding/mesh.h"

namespace jx::spmd {

// What a dot's speed depends on: its operand and result dtypes and the precision its operands
// ask for (the higher of the two; lax::dot_general's precision=).
struct DotTypes {
  DType lhs = bfloat16, rhs = bfloat16, result = bfloat16;
  lax::Precision precision = lax::Precision::kDefault;
};

class SpmdCostModel {
 public:
  virtual ~SpmdCostModel() = default;
  // Seconds of `kind` over the mesh axes `axes` (every group at once); `bytes` is the full
  // array of one group, as ici::CostCollective takes it.
  virtual double CollectiveSeconds(ici::CollectiveKind kind, const std::vector<std::string>& axes,
                                   int64_t bytes) const = 0;
  // Seconds of ring shifts over mesh axis `axis` (every group at once), all of `shifts` at
  // the same time: every device sends `bytes` to its neighbour `shift` positions on along the
  // axis, wrapping round (the collective matmul's step; {-1, 1}: both ways round at once,
  // sharing the links they both cross).
  virtual double RingShiftSeconds(const std::string& axis, const std::vector<int64_t>& shifts,
                                  int64_t bytes) const = 0;
  // Seconds of `flops` of matmul work of a dot with these types on one device (the chip's
  // rate for them: f32 at HIGH/HIGHEST in several bf16 passes, integers at the int8 rate).
  virtual double DotSeconds(double flops, const DotTypes& types) const = 0;
  // Seconds of one kernel of the per-device program as the chip's cost model charges it: the
  // slower of its matmul work (`matmul_flops` of a dot with `types`, at DotSeconds' rate) and
  // its HBM traffic, plus its launch and grid step. The traffic is the operands read
  // (`operand_bytes`); the result (`result_bytes`) too when operands and result together
  // exceed VMEM (the kernel is tiled over HBM), else it stays in VMEM for its consumer. What a
  // plain strategy's dot and a collective matmul's steps (partial dots, the slices that feed
  // them, additions) cost.
  virtual double KernelSeconds(double operand_bytes, double result_bytes = 0, double matmul_flops = 0,
                               const DotTypes& types = {}) const = 0;
  // Whether a kernel reading `operand_bytes` leaves its `result_bytes` in VMEM for its
  // consumer (KernelSeconds' rule), so the consumer reads it from there, not from HBM.
  virtual bool KeepsResultInVmem(double operand_bytes, double result_bytes) const = 0;
  // "v5e 4x2 torus" (for the log).
  virtual std::string Describe() const = 0;
};

// The model of a mesh: its chips' torus and peak FLOP/s for a mesh of simulated TPU chips of
// one pod; for other devices (the host), a nominal host model that says so in Describe().
std::unique_ptr<SpmdCostModel> MakeCostModel(const Mesh& mesh);

}  // namespace jx::spmd
