// Printing for HloInstruction, HloComputation and HloModule (see hlo_printer.h).
#include "jx/compiler/hlo/hlo_printer.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "jx/compiler/hlo/hlo_attr_table.h"
#include "jx/compiler/hlo/str_util.h"

namespace jx::hlo {

std::string HloInstruction::OperandsToString(const HloPrintOptions& options) const {
  if (opcode_ == HloOpcode::kParameter) return StrCat(parameter_number());
  if (opcode_ == HloOpcode::kConstant) return literal().ToString();
  std::string out;
  for (size_t i = 0; i < operands_.size(); ++i) {
    if (i > 0) out += ", ";
    if (options.print_operand_shapes) StrAppend(&out, operands_[i]->shape().ToString(), " ");
    StrAppend(&out, "%", operands_[i]->name());
  }
  return out;
}

std::vector<std::string> HloInstruction::ExtraAttributesToString(
    const HloPrintOptions& options) const {
  std::vector<std::string> attrs;
  for (int a = 0; a < kNumHloAttrs; ++a) {
    if (!HasAttr(static_cast<HloAttr>(a))) continue;
    const HloAttrInfo& info = GetHloAttrInfo(static_cast<HloAttr>(a));
    attrs.push_back(StrCat(info.key, "=", info.print(*this)));
  }
  if (options.print_metadata && metadata_ != nullptr) {
    attrs.push_back(StrCat("metadata=", OpMetadataToString(*metadata_)));
  }
  return attrs;
}

std::string HloInstruction::ToString(const HloPrintOptions& options) const {
  std::string out = StrCat(IsRoot() ? "ROOT " : "", "%", name_, " = ", shape_.ToString(),
                                 " ", HloOpcodeString(opcode_), "(", OperandsToString(options),
                                 ")");
  for (const std::string& attr : ExtraAttributesToString(options)) {
    StrAppend(&out, ", ", attr);
  }
  return out;
}

std::string HloComputation::ToString(const HloPrintOptions& options) const {
  std::vector<std::string> params;
  for (const HloInstruction* p : parameters_) {
    if (p != nullptr) params.push_back(StrCat(p->name(), ": ", p->shape().ToString(false)));
  }
  std::string out = StrCat(IsEntryComputation() ? "ENTRY " : "", "%", name_, " (",
                                 absl::StrJoin(params, ", "), ") -> ",
                                 root_ != nullptr ? root_->shape().ToString(false) : "()",
                                 " {\n");
  for (const HloInstruction* instr : MakeInstructionPostOrder()) {
    StrAppend(&out, "  ", instr->ToString(options), "\n");
  }
  return out + "}";
}

std::string HloModule::ToString(const HloPrintOptions& options) const {
  std::string out = StrCat("HloModule ", name_);
  if (entry_ != nullptr) {
    StrAppend(&out, ", entry_computation_layout={",
                    entry_->ComputeProgramShape().ToString(), "}");
  }
  out += "\n";
  for (const HloComputation* c : MakeComputationPostOrder()) {
    StrAppend(&out, "\n", c->ToString(options), "\n");
  }
  return out;
}

}  // namespace jx::hlo
