// Internal to the CPU backend: what the dot and convolution kernels share. Both run a
// contraction from the kernel library (lax/kernels/dot_general.h, convolution.h: the code
// eager runs too), either alone or as the core of a kOutput fusion whose elementwise
// epilogue (bias add, activation, ...) is compiled into a TileProgram and applied to each
// block of the contraction's output as soon as the library hands it over, while it is
// still in cache.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "jx/compiler/backend/cpu/tile_program.h"
#include "jx/compiler/hlo/hlo_instruction.h"
#include "jx/core/dtype.h"
#include "jx/lax/kernels/gemm.h"

namespace jx::cpu::internal {


class ContractionFusion {
 public:
  // Finds the one `opcode` instruction of instr (instr itself, or the only one in its fused
  // computation, whose operands must be fusion parameters) and compiles what the fusion
  // computes from it. Unimplemented when instr is not of that form.
  static absl::StatusOr<ContractionFusion> Make(const hlo::HloInstruction& instr, hlo::HloOpcode opcode,
                                                int64_t tile_elements);

  const hlo::HloInstruction& contraction() const { return *contraction_; }
  // Input slots (in Run's operands) of the contraction's operands.
  int operand_slot(int i) const { return slots_[i]; }
  bool has_epilogue() const { return epilogue_ != nullptr; }

  // Calls compute(out, epilogue) to write the contraction's result into out, then makes sure
  // the fusion's epilogue has run over all of it: through `epilogue` block by block when the
  // program reads the contraction element for element, else in a pass afterwards.
  using Compute = std::function<void(void* out, const lax::kernels::OutputEpilogue& epilogue)>;
  absl::Status Run(absl::Span<const void* const> operands, absl::Span<void* const> results,
                   const Compute& compute) const;

 private:
  absl::Status RunUnchecked(absl::Span<const void* const> operands, absl::Span<void* const> results,
                            const Compute& compute) const;

  const hlo::HloInstruction* contraction_ = nullptr;  // compile time only
  std::string name_;                                   // for run-time errors
  int slots_[2] = {-1, -1};
  int num_operands_ = 0;
  std::shared_ptr<const TileProgram> epilogue_;
  bool per_block_ = false;  // the epilogue reads the contraction at its own positions only
  bool in_place_ = false;   // ... and writes its result type: the result buffer holds both
  int64_t contraction_bytes_ = 0, out_elements_ = 0;
};

}  // namespace jx::cpu::internal
