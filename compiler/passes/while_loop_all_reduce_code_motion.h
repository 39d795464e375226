// WhileLoopAllReduceCodeMotion (XLA's pass of the same name): a loop that all-reduces a value
// every trip only to add it to an accumulator it carries keeps the value unreduced inside the
// loop and all-reduces the accumulator once after it (the "unreduced gradient accumulation" of
// microbatched training: one all-reduce per accumulator per step instead of one per trip).
//
//   acc = init                                  acc = zeros
//   while (...) {                               while (...) {
//     g = ...                                     g = ...
//     acc = acc + all-reduce(g)          ->       acc = acc + g
//   }                                           }
//   use(acc)                                    use(init + all-reduce(acc))
//
// Also through ops linear in the reduced value (acc = acc + f(all-reduce(g)) with f a convert to
// a floating type, a negation, a reshape or transpose, or a scaling by a constant, as pmean's
// psum(g) / n: f(g) is summed and the accumulator's type all-reduced) and into a slice of the
// accumulator (acc = dynamic-update-slice(acc, dynamic-slice(acc, idx) + ..., idx): the whole
// buffer is all-reduced after; slices never written stay zero). Sound because the sum over the
// group is linear: the sum of the trips' all-reduces is the all-reduce of their sum, f commutes
// with it, and init is added once, outside it.
//
// Reduce-scatters (XLA's enable_reduce_scatter), as FSDP's weight gradients are: the
// accumulator holds a chip's 1/N block; hoisted, it becomes the full-size unreduced buffer
// (N times the bytes, for the whole loop) and one reduce-scatter after the loop leaves the
// block, init added:
//
//   acc = init                  (block)         acc = zeros                 (full size)
//   while (...) {                               while (...) {
//     acc = acc + f(reduce-scatter(g))   ->       acc = acc + f'(g)
//   }                                           }
//   use(acc)                                    use(init + reduce-scatter(acc))
//
// f' is f at the full size: element-wise ops (converts, negation, copies, scaling by a splat
// constant) as they are; a transpose or reshape moves the scattered dimension (a reshape only
// where the chips' blocks stay contiguous rows of one result dimension: the sizes before the
// scattered dimension multiply to the same); a slice accumulator only when the slice spans the
// accumulator's scattered dimension from 0. This trades HBM for collectives, so each candidate
// is priced: options.reduce_scatter_pricing (made once per run from the module before any
// move) predicts the seconds per step it saves, which is what the step loses, not the runs'
// time: a run the schedule hides behind compute saves nothing, and the bigger adds cost. Of
// those that save (positive), the largest saving goes first; each is priced again beside the
// hoists taken before it (their runs gone, their adds grown: what one saved may leave the next
// nothing to save) and moves while it still saves and the program's estimated peak
// (options.peak_bytes: the target's view of the program's memory; unset, EstimatedPeakBytes as
// the text reads) plus every accumulator grown so far, its own included, stays within
// options.memory_limit_bytes; a smaller one may still fit after a larger one did not. A
// full-size accumulator is live for the whole loop, so its extra bytes add to any peak inside
// the loop; as the loop starts, the zeros it starts from are live too
// (ReduceScatterHoist::zeros_bytes). Each trip a plain sum replaces the accumulator in place
// (its last reader: XLA's buffer assignment, and the dry run's, give a loop state's buffer to
// the value that replaces it), but a slice accumulation's sum is the widened slice, a buffer of
// its own until it is written back (ReduceScatterHoist::add_bytes). With options.step_seconds
// the hoists taken are then checked against the target's step time (see there).
// reduce_scatter_hoists() reports each candidate's outcome.
//
// It applies only where that holds: the collective reduces with add and feeds only the
// accumulation; nothing in the loop (body or condition) reads the accumulator but that add
// (and its slice), so no use of a partially summed value moves; the accumulator is carried at
// one tuple index; the loop's results are read through get-tuple-element. Floating-point sums
// are reassociated (each partition sums its own trips first).
//
//   WhileLoopAllReduceCodeMotion pass;                         // all-reduces only
//   HLO_ASSIGN_OR_RETURN(bool changed, pass.Run(module));
//   WhileLoopAllReduceCodeMotion rs({.enable_reduce_scatter = true, .memory_limit_bytes = hbm,
//                                    .reduce_scatter_pricing = pricer, .peak_bytes = chip_peak});
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "jx/compiler/hlo/hlo_computation.h"
#include "jx/compiler/hlo/hlo_pass.h"
#include "jx/compiler/passes/latency_hiding_scheduler.h"

namespace jx::hlo {

// A reduce-scatter accumulation the pass found, as the pricing sees it and as it came out.
// ReduceScatterReassociate records its candidates so too: an unrolled sum of two
// reduce-scatters is an accumulation of two trips with one full-size add and no loop.
struct ReduceScatterHoist {
  enum class Outcome { kHoisted, kDoesNotPay, kOverMemoryLimit, kStepNotFaster };
  std::string reduce_scatter;     // its name in the loop body ("a + b": the two reassociated)
  std::string loop{};             // the while loop's name (empty: an unrolled sum)
  int64_t trips = -1;             // the loop's constant trip count; -1 when unknown
  int64_t grown_adds = 0;         // adds that grow to the full size: one per trip in a loop
  int64_t group_size = 0;         // N: chips each reduce-scatter spans
  int64_t accumulator_bytes = 0;  // per chip, as written (the block)
  int64_t hoisted_bytes = 0;      // per chip, hoisted (the full-size unreduced buffer)
  int64_t reduced_bytes = 0;      // per chip per run of the reduce-scatter in the loop (its result)
  double saved_seconds = 0;       // predicted per step (options.reduce_scatter_pricing)
  // Checked against the limit when the hoist pays: the estimated peak (options.peak_bytes) plus
  // the accumulators grown before this one (0 when it does not pay), and the limit.
  int64_t peak_bytes = 0;
  int64_t memory_limit_bytes = 0;
  // The zeros a hoisted loop's accumulator starts from: live beside the loop's state as the
  // loop starts (its init and its state are two buffers). One buffer per shape in a
  // computation (equal broadcasts are one value after CSE): 0 when an accumulator hoisted
  // before this one out of a loop of the same computation has its shape, or when it does not pay.
  int64_t zeros_bytes = 0;
  // What the body's full-size sum adds beside the accumulator: a slice accumulation's sum is
  // the widened slice, N times the block's, until it is written back (N - 1 slices more); a
  // plain sum replaces the accumulator in place (0).
  int64_t add_bytes = 0;
  Outcome outcome = Outcome::kHoisted;
  int64_t extra_bytes() const { return hoisted_bytes - accumulator_bytes; }
  // What the hoist adds to the program's peak: the bigger accumulator, its zeros and its sum.
  int64_t grown_bytes() const { return extra_bytes() + zeros_bytes + add_bytes; }
  // "reduce-scatter.3 in while.2 (4 trips, 8 chips): hoisted, 3 fewer runs, saves 12.100 us
  // per step, accumulator 65536 -> 524288 B per chip"; one kept for memory names the peak.
  std::string ToString() const;
};

// Predicted seconds per step that summing a reduce-scatter's values unreduced saves (positive:
// it pays), for what `hoist` says of it.
using ReduceScatterSavings =
    std::function<absl::StatusOr<double>(const HloInstruction& reduce_scatter, const ReduceScatterHoist& hoist)>;

// A target's prices for one run's reduce-scatter hoists, made from the module before any move
// (the TPU's compiles a copy and reads what its schedule leaves exposed, tpu_pipeline.h). A
// hoist changes what the others save (a run gone from a loop frees the interconnect for the
// rest, a bigger add adds compute), so each is priced beside the hoists taken before it.
class ReduceScatterPricing {
 public:
  virtual ~ReduceScatterPricing() = default;
  // Predicted seconds per step that hoisting `reduce_scatter` (as `hoist` says of it) saves
  // beside the hoists taken so far (positive: it pays).
  virtual absl::StatusOr<double> Savings(const HloInstruction& reduce_scatter, const ReduceScatterHoist& hoist) = 0;
  // `reduce_scatter` moves (or, unrolled, is combined into another): later prices count its
  // runs gone and its add grown.
  virtual absl::Status Take(const HloInstruction& reduce_scatter, const ReduceScatterHoist& hoist) = 0;
};
using ReduceScatterPricer =
    std::function<absl::StatusOr<std::unique_ptr<ReduceScatterPricing>>(const HloModule& module)>;

// Prices every hoist by `savings` alone: a hoist taken changes no other's price.
ReduceScatterPricer PriceEachAlone(ReduceScatterSavings savings);

// A target's estimate of the most bytes `module`, as it stands, will keep live at once once
// compiled (the TPU's: the chip's view of the program fused and scheduled, tpu_pipeline.h).
using ModulePeakBytes = std::function<absl::StatusOr<int64_t>(const HloModule& module)>;
// A target's estimate of the seconds `module`, as it stands, takes per step once compiled.
using ModuleStepSeconds = std::function<absl::StatusOr<double>(const HloModule& module)>;

struct WhileLoopAllReduceCodeMotionOptions {
  bool enable_reduce_scatter = false;
  // The most bytes the program may keep live at once (the chip's HBM, or a scheduler's limit):
  // reduce-scatter accumulators grow only while the estimated peak stays within it.
  int64_t memory_limit_bytes = std::numeric_limits<int64_t>::max();
  // The target's prices, made once per run when a reduce-scatter accumulation is found. Unset:
  // a hoist saves trips - 1 reduce-scatter runs and is taken whenever the trip count is known
  // and above 1.
  ReduceScatterPricer reduce_scatter_pricing{};
  // The program's peak before any accumulator grows, asked once per run when a hoist pays.
  // Unset: EstimatedPeakBytes(module), every value a buffer of its own as the text says.
  ModulePeakBytes peak_bytes{};
  // When set, the hoists taken must make the step faster as the target compiles the program:
  // the program with them is measured on a copy against the program as it is; if it is not
  // faster, the half of them with the largest savings is tried, then the largest alone, then
  // none (three tries at most: each compiles the program). Those left out stay
  // (Outcome::kStepNotFaster). A price is a prediction; this is the target's word.
  ModuleStepSeconds step_seconds{};
};

// The most bytes `module` keeps live at once, each computation measured by `memory_model` (the
// latency-hiding scheduler's kind; unset: hlo::FindMemoryPeak) in the order it runs
// (MakeSequentialOrder): the entry's peak plus the largest arena a called computation runs in,
// by the dry run's rule (a loop's condition's and body's temporaries, beyond the state they
// are given, plus what they call in turn; a conditional's largest branch; a call's callee).
absl::StatusOr<int64_t> EstimatedPeakBytes(const HloModule& module, const MemoryModel& memory_model = {});

class WhileLoopAllReduceCodeMotion : public HloPass {
 public:
  WhileLoopAllReduceCodeMotion() = default;
  explicit WhileLoopAllReduceCodeMotion(WhileLoopAllReduceCodeMotionOptions options) : options_(std::move(options)) {}
  std::string_view name() const override { return "while-loop-all-reduce-code-motion"; }
  absl::StatusOr<bool> Run(HloModule* module) override;
  // The reduce-scatter candidates of the last Run and what became of each, in the order found.
  const std::vector<ReduceScatterHoist>& reduce_scatter_hoists() const { return hoists_; }

 private:
  WhileLoopAllReduceCodeMotionOptions options_;
  std::vector<ReduceScatterHoist> hoists_;
};

}  // namespace jx::hlo
