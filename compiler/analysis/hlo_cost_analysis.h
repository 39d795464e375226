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
//  - custom-call: the flops a rule registered for its target gives (RegisterCustomCallCost:
//    the linalg calls' LAPACK counts), else none; bytes as data movement.
//  - call: the callee's totals. conditional: the per-property maximum over the branches, plus
//    reading the branch index. while: the body `trip count` times and the condition
//    `trip count + 1` times when ConstantWhileTripCount finds a trip count (an integer
//    induction variable starting at a constant, stepped by a constant, compared against a
//    constant or a loop-invariant constant); otherwise body and condition once each, as XLA.
//    For these, operand_bytes[i] is what the callee reads from its parameter (through
//    get-tuple-element) and bytes_accessed also counts the callee's internal traffic.
// Module totals sum the entry computation's instructions.
//
// Extending it: HloCostAnalysis is a table of handlers keyed by opcode. The defaults come
// from opcode.def's properties (elementwise, transcendental, no-code, ...) plus handlers for
// the ops with their own rules (dot, convolution, reduce, fusion, while, ...). A target's cost
// model subclasses it and appends a hook per opcode (AppendHandler) that fills HloCost's
// TargetCost (time per unit, on-chip bytes, the predicted seconds); callee totals, trip
// counts and conditional maxima then aggregate those fields exactly as they do flops.
//
//   HLO_ASSIGN_OR_RETURN(ModuleCost cost, AnalyzeCost(*module));
//   cost.flops;                            // e.g. 48 for a f32[2,3] @ f32[3,4] dot
//   cost.bytes_accessed_per_parameter[0];  // bytes read from entry parameter 0
//   HloCost c = CostOf(*fusion);           // one instruction (callees included)
//   HloCostAnalysis().IsExpensiveToDuplicate(*exp);  // true: fusion computes it once
//
//   class MyTargetCost : public HloCostAnalysis {   // a target's model
//    public:
//     MyTargetCost() {
//       AppendHandler(HloOpcode::kDot, [this](const HloInstruction& dot, HloCost* cost) {
//         cost->target.seconds = cost->flops / kPeak;
//       });
//     }
//   };
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/inlined_vector.h"
#include "absl/status/statusor.h"
#include "jx/compiler/hlo/hlo_module.h"

namespace jx::hlo {

// What a target's cost model adds to an instruction's cost (zero in the target-independent
// analysis). Callees are included as they are for flops: a fusion's unit time is its fused
// instructions', a while loop's is `trip count` runs of its body's kernels.
struct TargetCost {
  // Moved to and from off-chip memory (a TPU's HBM) as the target stores arrays (padded to
  // its tiles, operands re-read per grid step, values it keeps on chip excluded).
  double hbm_bytes = 0;
  double onchip_bytes = 0;  // moved between on-chip memory (a TPU's VMEM) and the units
  std::array<double, kNumExecutionUnits> unit_seconds{};  // busy time per ExecutionUnit
  double compute_seconds = 0;   // a kernel's busiest unit; summed over kernels
  double memory_seconds = 0;    // a kernel's slower memory path; summed over kernels
  double overhead_seconds = 0;  // fixed costs per kernel launch and grid step
  double seconds = 0;           // a kernel's max(compute, memory) + overhead; summed
  double matrix_flops = 0;         // issued to the matrix unit, padding and passes included
  double matrix_useful_flops = 0;  // of which the dot/convolution's own flops
  bool emulated = false;           // some work is emulated in software (f64 on a TPU)

  double unit(ExecutionUnit u) const { return unit_seconds[static_cast<int>(u)]; }
  double& unit(ExecutionUnit u) { return unit_seconds[static_cast<int>(u)]; }
  // this += times * other (emulated is or-ed).
  void Add(const TargetCost& other, double times);
  // this = the per-field maximum of this and other (either conditional branch may run).
  void Max(const TargetCost& other);
};

// The cost of one instruction (with what it calls).
struct HloCost {
  double flops = 0, transcendentals = 0, bytes_accessed = 0;
  // Bytes read from each operand, by operand index (a repeated operand counts at its first
  // index only). Inline for the common one or two operands: the analysis keeps a cost per
  // instruction, and an allocation each cost a 100k-instruction module as much as the sums.
  absl::InlinedVector<double, 2> operand_bytes;
  double output_bytes = 0;  // bytes written
  TargetCost target;        // filled by a target's subclass of HloCostAnalysis
};

struct ModuleCost {
  double flops = 0, transcendentals = 0, bytes_accessed = 0;
  TargetCost target;  // the entry computation's instructions summed
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

// The totals of one computation, as its callers need them.
struct ComputationCost {
  double flops = 0, transcendentals = 0, bytes_accessed = 0;
  TargetCost target;
  std::vector<double> parameter_bytes;  // read from parameter i (through get-tuple-element)
  double root_output_bytes = 0;         // written by the root instruction
  double constant_array_bytes = 0;      // of its constants of more than one element
};

// The analysis: a handler per opcode. Callee totals are computed once per computation,
// callees before callers, without recursion (nesting depth is unbounded in principle); the
// cost of a module is linear in its instructions.
class HloCostAnalysis {
 public:
  // Computes `cost` for `instruction`. On entry operand_bytes and output_bytes hold the full
  // operand and output sizes and everything else is zero; the callees' totals are ready
  // (CalleeCost). A handler that moves bytes at its boundary ends with FinishBoundaryBytes.
  // It may run more than once for an instruction: the cost is a function of the instruction.
  using Handler = std::function<void(const HloInstruction& instruction, HloCost* cost)>;

  // How the instruction being costed runs: as its own kernel (entry, while/call/conditional
  // bodies), inside a fusion's kernel, or as scalar code applied per element (reducers,
  // comparators, map and scatter bodies).
  enum class Role { kKernel, kFused, kPerElement };

  HloCostAnalysis();
  virtual ~HloCostAnalysis();
  HloCostAnalysis(const HloCostAnalysis&) = delete;
  HloCostAnalysis& operator=(const HloCostAnalysis&) = delete;

  // Costs of the entry computation's instructions and their sums. Fails if the module has
  // no entry computation.
  absl::StatusOr<ModuleCost> Analyze(const HloModule& module);
  // One instruction, costed as a kernel, including the computations it calls. Malformed
  // instructions (missing callees) cost what is known.
  HloCost Cost(const HloInstruction& instruction);

  // Whether computing `instruction` once more for each extra consumer costs more than the
  // write and re-read of its value that fusing it into every consumer saves: what the
  // fusion pass asks before duplicating a producer into several fusions. True for the ops
  // opcode.def marks expensive (divide, remainder, the transcendentals, reduce, dot,
  // convolution: XLA's list) and for any op whose cost has transcendentals or more than one
  // flop per output element (the work of what it calls included).
  bool IsExpensiveToDuplicate(const HloInstruction& instruction);

  // The arithmetic of a library custom-call (LAPACK-style linalg and the like), which the
  // analysis cannot see into: a rule sets cost->flops and cost->transcendentals from the
  // instruction's shapes and backend_config (bytes stay the data-movement default: operands
  // read once, the output written). A custom-call without a rule costs only its bytes.
  using CustomCallCost = std::function<void(const HloInstruction& instruction, HloCost* cost)>;
  // Registers (or replaces) a process-wide rule for custom-calls to `target`; thread-safe.
  static void RegisterCustomCallCost(std::string target, CustomCallCost rule);

 protected:
  void SetHandler(HloOpcode opcode, Handler handler);
  // Runs `hook` after the opcode's current handler (a target adds its time this way).
  void AppendHandler(HloOpcode opcode, Handler hook);
  // The role of the instruction being costed (valid inside a handler).
  Role current_role() const { return role_; }
  // The totals of a computation the current instruction calls; nullptr when missing.
  const ComputationCost* CalleeCost(const HloComputation* computation) const;
  // Sets cost->bytes_accessed from operand_bytes, output_bytes and `extra` bytes that belong
  // to no operand; a repeated operand is read once.
  static void FinishBoundaryBytes(const HloInstruction& instruction, HloCost* cost,
                                  double extra = 0);
  // Adds `times` runs of a callee's flops, transcendentals and target costs.
  static void AddCallee(const ComputationCost* callee, double times, HloCost* cost);

 private:
  using InstructionRow = std::pair<const HloInstruction*, HloCost>;
  void InstallDefaultHandlers();
  // Lists the computations `computation`'s instructions call, noting each one's role.
  void ListCallees(const HloComputation& computation, std::vector<HloComputation*>* callees);
  // Sums `roots` and everything they call into cache_, callees first.
  void Ensure(absl::Span<HloComputation* const> roots);
  // The totals of `computation`, whose callees are summed already (or, with
  // only_if_callees_summed, nullopt when one is not); with `rows`, also each instruction's
  // cost in post order (kept for the entry only). Without rows, whole-number totals are
  // summed in storage order (the same sums: exact); others in post order.
  std::optional<ComputationCost> Sum(const HloComputation& computation, std::vector<InstructionRow>* rows,
                                     bool only_if_callees_summed = false);
  bool CalleesSummed(const HloInstruction& instruction) const;
  HloCost CostWithCallees(const HloInstruction& instruction);

  // The handlers for the ops with rules of their own.
  void HandleNoCode(const HloInstruction& instr, HloCost* cost);
  void HandleElementwise(const HloInstruction& instr, HloCost* cost);
  void HandleMovesData(const HloInstruction& instr, HloCost* cost);
  void HandleCustomCall(const HloInstruction& instr, HloCost* cost);
  void HandleReadsOutputSizedPart(const HloInstruction& instr, HloCost* cost);
  void HandleDynamicUpdateSlice(const HloInstruction& instr, HloCost* cost);
  void HandleScatter(const HloInstruction& instr, HloCost* cost);
  void HandleDot(const HloInstruction& instr, HloCost* cost);
  void HandleConvolution(const HloInstruction& instr, HloCost* cost);
  void HandleReduce(const HloInstruction& instr, HloCost* cost);
  void HandleReduceWindow(const HloInstruction& instr, HloCost* cost);
  void HandleSelectAndScatter(const HloInstruction& instr, HloCost* cost);
  void HandleMap(const HloInstruction& instr, HloCost* cost);
  void HandleSort(const HloInstruction& instr, HloCost* cost);
  void HandleRngBitGenerator(const HloInstruction& instr, HloCost* cost);
  void HandleFusion(const HloInstruction& instr, HloCost* cost);
  void HandleCall(const HloInstruction& instr, HloCost* cost);
  void HandleWhile(const HloInstruction& instr, HloCost* cost);
  void HandleConditional(const HloInstruction& instr, HloCost* cost);

  std::array<Handler, kHloOpcodeCount> handlers_;
  absl::flat_hash_map<const HloComputation*, ComputationCost> cache_;
  absl::flat_hash_map<const HloComputation*, Role> roles_;  // of callees, by their caller
  Role role_ = Role::kKernel;
};

// Costs of the entry computation's instructions and their sums, by the target-independent
// analysis. Fails if the module has no entry computation.
absl::StatusOr<ModuleCost> AnalyzeCost(const HloModule& module);

// The cost of one instruction, including the computations it calls (fusion, call, while,
// conditional, reducers), by the target-independent analysis. Malformed instructions
// (missing callees) cost what is known.
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
