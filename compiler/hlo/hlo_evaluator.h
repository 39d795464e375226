// HloEvaluator: the reference interpreter for HLO. It evaluates a computation (or a module's
// entry computation) on Literal arguments, one instruction at a time, with XLA's semantics
// for every opcode in opcode.def and every element type the opcode accepts:
//   - f16/bf16 math runs in f32 and rounds once; dot/convolution accumulate floats in f64;
//   - integer arithmetic wraps; x/0 = -1 (all bits set), x%0 = x, INT_MIN/-1 = INT_MIN,
//     INT_MIN%-1 = 0; shifts by >= the bit width give 0 (or the sign fill for arithmetic
//     right shifts); integer power with a negative exponent is 1 for base 1, else 0;
//   - convert from float to integer truncates and saturates, NaN -> 0;
//   - maximum/minimum propagate NaN; compare honours type=TOTALORDER;
//   - dynamic-slice/dynamic-update-slice/gather clamp start indices into bounds; scatter
//     skips update windows that do not fit entirely in the operand;
//   - conditional with an out-of-range branch index runs the last branch;
//   - rng-bit-generator implements rng_three_fry and rng_philox (rng_default = philox, as
//     XLA's CPU backend) bit-exactly like XLA's expander.
// It is the correctness reference for the fast backends, so it favours obviously correct
// index arithmetic over speed. Errors are statuses naming the instruction; it never aborts.
//
//   auto module = ParseHloModule(text).value();
//   HloEvaluator evaluator;
//   Literal x = Literal::CreateR1<float>({1, 2, 3});
//   absl::StatusOr<Literal> y = evaluator.Evaluate(*module, {&x});
//
//   // Custom-calls dispatch through a process-wide registry:
//   HloEvaluator::RegisterCustomCallTarget("my_op", [](const HloInstruction& instr,
//       absl::Span<const Literal* const> operands) -> absl::StatusOr<Literal> { ... });
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "jx/compiler/hlo/hlo_module.h"
#include "jx/compiler/hlo/literal.h"

namespace jx::hlo {

class HloEvaluator {
 public:
  // A custom-call implementation: gets the instruction (for its shape, backend_config, ...)
  // and the operand values; returns a value of the instruction's shape.
  using CustomCallTarget = std::function<absl::StatusOr<Literal>(
      const HloInstruction& instr, absl::Span<const Literal* const> operands)>;

  // max_loop_iterations < 0 means unbounded; a while loop that would run more iterations
  // fails with ResourceExhausted (constant folding uses 0 so it never runs loops).
  explicit HloEvaluator(int64_t max_loop_iterations = -1);
  ~HloEvaluator();
  HloEvaluator(const HloEvaluator&) = delete;
  HloEvaluator& operator=(const HloEvaluator&) = delete;

  // Evaluates the entry computation.
  absl::StatusOr<Literal> Evaluate(const HloModule& module,
                                   absl::Span<const Literal* const> args);
  // Evaluates `computation`; args[i] is parameter i and must have its shape.
  absl::StatusOr<Literal> Evaluate(const HloComputation& computation,
                                   absl::Span<const Literal* const> args);
  // Evaluates one instruction on the given operand values (operands[i] is the value of
  // instr.operand(i)). Parameters have no value here and fail.
  absl::StatusOr<Literal> EvaluateInstruction(const HloInstruction& instr,
                                              absl::Span<const Literal* const> operands);

  // Registers (or replaces) a process-wide custom-call target; thread-safe.
  static void RegisterCustomCallTarget(std::string name, CustomCallTarget target);
  // Removes a registered target (tests); returns whether it was registered.
  static bool UnregisterCustomCallTarget(std::string_view name);

  int64_t max_loop_iterations() const { return max_loop_iterations_; }

 private:
  struct Plan;
  const Plan& GetPlan(const HloComputation& computation);
  absl::StatusOr<Literal> EvaluateOpcode(const HloInstruction& instr,
                                         absl::Span<const Literal* const> operands);
  absl::StatusOr<Literal> EvaluateControlFlow(const HloInstruction& instr,
                                              absl::Span<const Literal* const> operands);

  int64_t max_loop_iterations_;
  int depth_ = 0;  // nesting of Evaluate calls; the plan cache is reset at depth 0
  absl::flat_hash_map<const HloComputation*, std::unique_ptr<Plan>> plans_;
};

}  // namespace jx::hlo
