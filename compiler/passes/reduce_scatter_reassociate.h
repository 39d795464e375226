// ReduceScatterReassociate (XLA's pass of the same name): combining the results of two
// reduce-scatters with the op they both reduce with is the reduce-scatter of the combined
// operands,
//
//   add(reduce-scatter(a), reduce-scatter(b))  ->  reduce-scatter(add(a, b))
//
// when both reduce with add (likewise the other commutative ops AllReduceReassociate takes),
// exchange over the same partitions, scatter the same dimension, have the same type and feed
// nothing else. Chains fold one link at a time: the gradients of an unrolled loop of
// microbatches, reduce-scattered as FSDP's are, reduce-scatter once per step.
//
// Unlike an all-reduce's, a reduce-scatter's result is a chip's 1/N block, so the sum moves
// from blocks to the full-size values: the first value summed stays live at the full size
// until the last is added (XLA's WhileLoopAllReduceCodeMotion trades the same way in a loop).
// So each candidate passes the same two gates as that pass' reduce-scatter mode: the pricing
// (options.pricing, made once per run: the step's time one run fewer saves, the exposed part,
// against the add at the full size, each beside the pairs combined before it; unset: always
// pays) and the
// memory limit (the program's estimated peak, options.peak_bytes as the loop pass', plus the
// full-size sums grown so far, each counted once per chain, within options.memory_limit_bytes),
// in the order found (a chain's links must fold in order). records() reports each candidate
// as a ReduceScatterHoist of two trips and no loop (a chain's later links: an accumulator that
// is full-size already).
//
// Floating-point sums are reassociated (the partitions' values are added in a different order).
//
//   ReduceScatterReassociate pass({.memory_limit_bytes = hbm, .pricing = pricer});
//   HLO_ASSIGN_OR_RETURN(bool changed, pass.Run(module));
#pragma once

#include <cstdint>
#include <limits>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "jx/compiler/hlo/hlo_module.h"
#include "jx/compiler/hlo/hlo_pass.h"
#include "jx/compiler/passes/while_loop_all_reduce_code_motion.h"

namespace jx::hlo {

struct ReduceScatterReassociateOptions {
  int64_t memory_limit_bytes = std::numeric_limits<int64_t>::max();
  // Prices the run the second reduce-scatter of each pair would have made; unset: every
  // combination pays (one run fewer).
  ReduceScatterPricer pricing{};
  ModulePeakBytes peak_bytes{};  // unset: EstimatedPeakBytes(module)
};

class ReduceScatterReassociate : public HloPass {
 public:
  ReduceScatterReassociate() = default;
  explicit ReduceScatterReassociate(ReduceScatterReassociateOptions options) : options_(std::move(options)) {}
  std::string_view name() const override { return "reduce-scatter-reassociate"; }
  absl::StatusOr<bool> Run(HloModule* module) override;
  // The candidates of the last Run and what became of each, in the order found.
  const std::vector<ReduceScatterHoist>& records() const { return records_; }

 private:
  ReduceScatterReassociateOptions options_;
  std::vector<ReduceScatterHoist> records_;
};

}  // namespace jx::hlo
