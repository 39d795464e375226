// InstructionFusion ("fusion"): XLA-style producer-consumer fusion. Groups of instructions
// become one `fusion` instruction calling a fused computation (marked as such), so a backend
// emits each group as one kernel and intermediates never reach memory:
//   kLoop   elementwise chains with the broadcasts, iotas, reshapes, transposes, slices,
//           pads, reverses and concatenates that feed them (one loop over the output);
//   kInput  a reduce with a constant init and the loop-fusible producers of its input, so
//           reduce(exp(x - broadcast(m))) is one kernel;
//   kOutput a dot or convolution with an elementwise epilogue (bias add of a broadcast,
//           tanh, max(x, 0), logistic, ...): the epilogue is the root and the contraction
//           sits inside, applied per output tile.
// Rules, following XLA's instruction fusion:
//   - consumers are visited before producers; a producer joins every group that uses it,
//     and only if all its users are in groups (so it disappears from the outer graph);
//   - a producer used by several groups is duplicated into each only if it is cheap;
//     expensive ops (transcendentals, divides, power) are never duplicated, and become a
//     group of their own instead;
//   - scalar constants are cloned into every fused computation that reads them; other
//     constants are passed as parameters;
//   - nothing fuses across parameters, tuples, get-tuple-element, control flow
//     (while/conditional/call), custom-calls, sort, scatter, gather, rng or other fusions;
//     operands of a dot/convolution and a reduce's init value stay outside;
//   - a group of one instruction is left as it is.
// Multi-output fusion (siblings sharing an operand, or a producer kept alive for a second
// user) is out of scope. Runs on the entry computation and on while/conditional/call
// bodies; reducers and other applied computations are scalar code and are left alone.
// Fused computations are named like XLA's (%fused_computation, %fused_computation.1, ...,
// parameters %param_0, ...), fusion instructions %fusion, %fusion.<n>. A second Run finds
// nothing to fuse and returns false.
//
//   InstructionFusion fusion;
//   HLO_ASSIGN_OR_RETURN(bool changed, fusion.Run(module));
#pragma once

#include <string_view>

#include "jx/compiler/hlo/hlo_computation.h"
#include "jx/compiler/hlo/hlo_pass.h"

namespace jx::hlo {

struct InstructionFusionOptions {
  // Output fusion before duplication (the TPU's choice): a cheap elementwise op that is the
  // only user of a dot/convolution stays with it as its epilogue (a kOutput fusion) instead
  // of being duplicated into each of its several consumers, which would then each read the
  // contraction's result as it was before that op. What this keeps out of memory: the f32
  // accumulator of a bf16 dot (TpuNumerics' rounding convert becomes the epilogue, so the
  // fusion writes bf16, as an MXU does), or a bias add's input. XLA's TPU convolution
  // fusions hold the dot's output convert and bias this way.
  bool prefer_output_fusion = false;
};

class InstructionFusion : public HloPass {
 public:
  explicit InstructionFusion(InstructionFusionOptions options = {}) : options_(options) {}
  std::string_view name() const override { return "fusion"; }
  absl::StatusOr<bool> Run(HloModule* module) override;

  static absl::StatusOr<bool> RunOnComputation(HloComputation* computation,
                                               InstructionFusionOptions options = {});

  // Ops too costly to compute twice: never duplicated into several consumers. Asks
  // HloCostAnalysis::IsExpensiveToDuplicate (the same analysis the cost model extends).
  static bool IsExpensive(const HloInstruction& instr);
  // Ops that can sit inside a loop fusion (and be fused into a consumer).
  static bool IsLoopFusible(const HloInstruction& instr);

 private:
  InstructionFusionOptions options_;
};

}  // namespace jx::hlo
