// HloCostAnalysis: flops, transcendentals and bytes accessed of HLO instructions and of a
// whole module: the one cost analysis that `compiled.cost_analysis()`, fusion heuristics and
// the TPU simulator read. Semantics follow XLA's HloCostAnalysis:
//  - elementwise ops: 1 flop per output element (compare, select, clamp and convert too);
//    exp, log, log1p, expm1, logistic, tanh, sin, cos, tan, atan2, power, sqrt, rsqrt, cbrt
//    and erf count 1 transcendental per element instead. copy, bitcast-convert, iota and
//    shape ops (broadcast, reshape, transpose, slice, pad, concatenate, gather, ...) are free.
//  - dot: 2 * output elements * contracted size. convolution: 2 * output features * batch /
//    batch_group_count * input features / feature_group_count * the product over spatial dims
//    of the (output, kernel tap) pairs that land inside the input (with valid padding this is
//    2 * output elements * kernel spatial size * input features per group).
//  - reduce: (input elements - output elements) * the reducer's cost; reduce-window:
//    output elements * (window size - 1) * the reducer's cost (n-1 combines per n elements, as
//    XLA); map: elements * the mapped function; select-and-scatter and scatter as XLA; sort:
//    n * ceil(log2 n) flops; rng-bit-generator: 1 transcendental per generated element.
//  - bytes: an instruction reads each distinct operand once and writes its output. slice,
//    dynamic-slice and gather read only the output-sized part of operand 0;
//    dynamic-update-slice and scatter update in place (touch only the updated part).
//    parameter, constant, tuple, get-tuple-element, bitcast and opt-barrier cost 0 bytes
//    (they run no code).
//  - fusion: flops and transcendentals summed over the fused computation; bytes only at the
//    boundary (fused intermediates never touch memory): each fused parameter read once (or
//    only its sliced parts when every user is a slice), non-scalar fused constants, and the
//    output (only the update when the root is an in-place dynamic-update-slice).
//  - call: the callee's totals. conditional: the per-property maximum over the branches, plus
//    reading the branch index. while: the body `trip count` times and the condition
//    `trip count + 1` times when ConstantWhileTripCount finds a trip count (an integer
//    induction variable starting at a constant, stepped by a constant, compared against a
//    constant or a loop-invariant constant); otherwise body and condition once each, as XLA.
//    For these, operand_bytes[i] is what the callee reads from its parameter (through
//    get-tuple-element) and bytes_accessed also counts the callee's internal traffic.
// Module totals sum the entry computation's instructions.
//
//   HLO_ASSIGN_OR_RETURN(ModuleCost cost, AnalyzeCost(*module));
//   cost.flops;                            // e.g. 48 for a f32[2,3] @ f32[3,4] dot
//   cost.bytes_accessed_per_parameter[0];  // bytes read from entry parameter 0
//   HloCost c = CostOf(*fusion);           // one instruction (callees included)
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "jx/compiler/hlo/hlo_module.h"

namespace jx::hlo {

// The cost of one instruction (with what it calls).
struct HloCost {
  double flops = 0, transcendentals = 0, bytes_accessed = 0;
  // Bytes read from each operand, by operand index (a repeated operand counts at its first
  // index only).
  std::vector<double> operand_bytes;
  double output_bytes = 0;  // bytes written
};

struct ModuleCost {
  double flops = 0, transcendentals = 0, bytes_accessed = 0;
  // Bytes the entry computation's instructions read from entry parameter i (reads through
  // get-tuple-element count; a parameter packed into a tuple for a while/call is not
  // traced further).
  std::vector<double> bytes_accessed_per_parameter;
  // Bytes of the entry root's value (tuple elements summed): what the program writes out.
  double bytes_accessed_output = 0;
  // Entry instructions in post order (the printed order), by name.
  std::vector<std::pair<std::string, HloCost>> per_instruction;

  // The totals under XLA's property names, as jax's `compiled.cost_analysis()` shows them:
  // "flops", "transcendentals", "bytes accessed", "bytes accessed<i>{}" per parameter and
  // "bytes accessedout{}".
  std::vector<std::pair<std::string, double>> ToProperties() const;
};

// Costs of the entry computation's instructions and their sums. Fails if the module has no
// entry computation.
absl::StatusOr<ModuleCost> AnalyzeCost(const HloModule& module);

// The cost of one instruction, including the computations it calls (fusion, call, while,
// conditional, reducers). Malformed instructions (missing callees) cost what is known.
HloCost CostOf(const HloInstruction& instruction);

// The trip count of a while loop of the form
//   init: tuple(..., <int constant a>, ...)
//   condition: compare(get-tuple-element(param, k), <b>) with direction LT/LE/GT/GE/NE
//              (either operand order), b an int constant or a loop-invariant tuple element
//              whose init is a constant
//   body: root tuple with element k = add(get-tuple-element(param, k), <int constant s>)
//         (or subtract)
// Constants may be wrapped in broadcast/reshape/copy/convert. nullopt when the loop does not
// match or would never terminate.
std::optional<int64_t> ConstantWhileTripCount(const HloInstruction& while_instruction);

}  // namespace jx::hlo
