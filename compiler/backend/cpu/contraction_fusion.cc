#include "jx/compiler/backend/cpu/contraction_fusion.h"

#include <algorithm>
#include <exception>
#include <string>
#include <vector>

#include "jx/compiler/backend/cpu/cpu_kernels.h"
#include "jx/compiler/hlo/hlo_computation.h"
#include "jx/compiler/hlo/status_macros.h"
#include "jx/compiler/hlo/str_util.h"
#include "jx/core/buffer.h"

namespace jx::cpu::internal {

using hlo::HloInstruction;
using hlo::HloOpcode;

absl::StatusOr<ContractionFusion> ContractionFusion::Make(const HloInstruction& instr, HloOpcode opcode,
                                                          int64_t tile_elements) {
  const std::string_view name = hlo::HloOpcodeString(opcode);
  ContractionFusion f;
  f.num_operands_ = static_cast<int>(instr.operand_count());
  const HloInstruction* root = nullptr;
  if (instr.opcode() == HloOpcode::kFusion) {
    const hlo::HloComputation* body = instr.fused_instructions_computation();
    if (body == nullptr) return absl::InvalidArgumentError("fusion without a fused computation");
    for (const HloInstruction* i : body->instructions()) {
      if (i->opcode() != opcode) continue;
      if (f.contraction_ != nullptr) return absl::UnimplementedError(hlo::StrCat("more than one ", name));
      f.contraction_ = i;
    }
    if (f.contraction_ == nullptr) return absl::UnimplementedError(hlo::StrCat("no ", name, " in the fusion"));
    if (body->root_instruction() != f.contraction_) root = body->root_instruction();
    for (int i = 0; i < 2; ++i) {
      const HloInstruction* op = f.contraction_->operand(i);
      if (op->opcode() == HloOpcode::kParameter) f.slots_[i] = static_cast<int>(op->parameter_number());
    }
  } else {
    if (instr.opcode() != opcode) return absl::UnimplementedError(hlo::StrCat("not a ", name));
    f.contraction_ = &instr;
    f.slots_[0] = 0;
    f.slots_[1] = 1;
  }
  if (f.contraction_->operand_count() != 2 || f.slots_[0] < 0 || f.slots_[1] < 0) {
    return absl::UnimplementedError(hlo::StrCat(name, " operand computed inside the fusion"));
  }
  f.name_ = f.contraction_->name();
  const hlo::Shape& cshape = f.contraction_->shape();
  if (!cshape.IsArray()) return absl::UnimplementedError(hlo::StrCat(name, " with a tuple result"));
  f.contraction_bytes_ = hlo::ShapeUtil::ByteSizeOf(cshape);
  f.out_elements_ = hlo::ShapeUtil::ElementsIn(instr.shape());
  if (root == nullptr) return f;
  if (!root->shape().IsArray()) return absl::UnimplementedError("tuple root");
  const int slot = f.num_operands_;  // the epilogue reads the contraction after the operands
  const HloInstruction* contraction = f.contraction_;
  LeafResolver leaves = [contraction, slot](const HloInstruction* i) -> int {
    if (i == contraction) return slot;
    return i->opcode() == HloOpcode::kParameter ? static_cast<int>(i->parameter_number()) : -1;
  };
  HLO_ASSIGN_OR_RETURN(std::unique_ptr<TileProgram> program, TileProgram::Compile(root, leaves, tile_elements));
  f.per_block_ = root->shape().dimensions() == cshape.dimensions() && program->InputReadInPlace(slot);
  f.in_place_ = f.per_block_ && root->shape().element_type() == cshape.element_type();
  f.epilogue_ = std::move(program);
  return f;
}

absl::Status ContractionFusion::Run(absl::Span<const void* const> operands, absl::Span<void* const> results,
                                    const Compute& compute) const {
  // The library checks its arguments before any work starts and throws on bad ones.
  try {
    return RunUnchecked(operands, results, compute);
  } catch (const std::exception& e) {
    return absl::InvalidArgumentError(hlo::StrCat(name_, ": ", e.what()));
  }
}

absl::Status ContractionFusion::RunUnchecked(absl::Span<const void* const> operands,
                                             absl::Span<void* const> results, const Compute& compute) const {
  if (epilogue_ == nullptr) {
    compute(results[0], {});
    return absl::OkStatus();
  }
  // The contraction's result: in the result buffer when the epilogue can overwrite it in
  // place, else in scratch.
  std::shared_ptr<Buffer> scratch;
  void* contraction_out = results[0];
  if (!in_place_) {
    scratch = Buffer::Allocate(std::max<int64_t>(contraction_bytes_, 1));
    contraction_out = scratch->data();
  }
  std::vector<const void*> inputs(operands.begin(), operands.end());
  inputs.push_back(contraction_out);
  const TileProgram& program = *epilogue_;
  const int64_t tile = program.tile_elements(), esize = program.element_size();
  uint8_t* out = static_cast<uint8_t*>(results[0]);
  auto evaluate = [&](int64_t begin, int64_t end) {
    for (int64_t s = begin; s < end; s += tile) {
      program.Evaluate(inputs.data(), s, std::min(tile, end - s), out + s * esize, in_place_);
    }
  };
  if (per_block_) {
    compute(contraction_out, evaluate);
    return absl::OkStatus();
  }
  compute(contraction_out, {});
  // Chunks of at least 16K elements, whole tiles: enough work per task to be worth a thread.
  ParallelChunks(out_elements_, std::max<int64_t>(1, 16384 / tile) * tile, evaluate);
  return absl::OkStatus();
}

}  // namespace jx::cpu::internal
