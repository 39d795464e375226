// dynamic-slice and dynamic-update-slice on the CPU backend: the start index operands are
// read at run time and the clamped window is copied by the kernel library's code, the same
// that eager lax::dynamic_slice / dynamic_update_slice run (lax/kernels/slicing.h), for
// every element type. A dynamic-update-slice whose result shares its operand's buffer
// (buffer assignment: the operand is dead after it, donated, or the loop state it updates)
// writes only the window, O(update) instead of O(operand).
#include <vector>

#include "absl/container/inlined_vector.h"
#include "jx/compiler/backend/cpu/cpu_kernels.h"
#include "jx/compiler/hlo/str_util.h"
#include "jx/core/dtype.h"
#include "jx/lax/kernels/slicing.h"

namespace jx::cpu::internal {
namespace {

using hlo::HloInstruction;
using hlo::HloOpcode;

using DimVec = absl::InlinedVector<int64_t, 8>;

// The jx dtype of an integer start-index element type.
absl::StatusOr<DType> IndexDType(hlo::PrimitiveType type) {
  const std::optional<DType> dtype = KernelDTypeOf(type);
  if (!dtype.has_value() || !(IsSignedInt(*dtype) || IsUnsignedInt(*dtype))) {
    return absl::UnimplementedError(hlo::StrCat("start index of type ", hlo::PrimitiveTypeName(type)));
  }
  return *dtype;
}

class DynamicSliceKernel : public Kernel {
 public:
  absl::Status Run(absl::Span<const void* const> operands,
                   absl::Span<void* const> results) const override {
    DimVec starts(index_types_.size());
    for (size_t d = 0; d < starts.size(); ++d) {
      starts[d] = lax::kernels::ReadIndexElement(operands[first_index_ + d], index_types_[d], 0);
    }
    if (update_) {
      lax::kernels::DynamicUpdateSlice(operands[0], operands[1], operand_dims_, window_dims_,
                                       starts, item_size_, results[0]);
    } else {
      lax::kernels::DynamicSlice(operands[0], operand_dims_, starts, window_dims_, item_size_,
                                 results[0]);
    }
    return absl::OkStatus();
  }
  std::string_view kind() const override {
    return update_ ? "dynamic-update-slice" : "dynamic-slice";
  }

  bool update_ = false;
  size_t first_index_ = 1;
  int64_t item_size_ = 0;
  DimVec operand_dims_, window_dims_;
  std::vector<DType> index_types_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<Kernel>> MakeDynamicSliceKernel(const HloInstruction& instr) {
  auto k = std::make_unique<DynamicSliceKernel>();
  k->update_ = instr.opcode() == HloOpcode::kDynamicUpdateSlice;
  if (!k->update_ && instr.opcode() != HloOpcode::kDynamicSlice) {
    return absl::UnimplementedError("not a dynamic-slice or dynamic-update-slice");
  }
  k->first_index_ = k->update_ ? 2 : 1;
  const hlo::Shape& operand = instr.operand(0)->shape();
  const hlo::Shape& window = k->update_ ? instr.operand(1)->shape() : instr.shape();
  if (!operand.IsArray() || !window.IsArray() || operand.rank() != window.rank() ||
      instr.operand_count() != static_cast<int64_t>(k->first_index_) + operand.rank()) {
    return absl::UnimplementedError(hlo::StrCat("dynamic slice of ", operand.ToString(false),
                                                " with ", instr.operand_count(), " operands"));
  }
  k->item_size_ = hlo::ByteSizeOfPrimitiveType(operand.element_type());
  if (k->item_size_ != 1 && k->item_size_ != 2 && k->item_size_ != 4 && k->item_size_ != 8) {
    return absl::UnimplementedError(hlo::StrCat("element type ",
                                                hlo::PrimitiveTypeName(operand.element_type())));
  }
  for (int64_t d = 0; d < operand.rank(); ++d) {
    k->operand_dims_.push_back(operand.dimensions(d));
    k->window_dims_.push_back(window.dimensions(d));
    const hlo::Shape& index = instr.operand(k->first_index_ + d)->shape();
    if (!index.IsArray() || index.rank() != 0) {
      return absl::UnimplementedError(hlo::StrCat("start index of shape ", index.ToString(false)));
    }
    absl::StatusOr<DType> type = IndexDType(index.element_type());
    if (!type.ok()) return type.status();
    k->index_types_.push_back(*type);
  }
  return k;
}

}  // namespace jx::cpu::internal
