// Data-movement kernels: lone (unfused) transpose, broadcast, reverse, slice, pad,
// concatenate, iota, copy, reshape, bitcast and bitcast-convert run the kernel library's
// shape and slicing copies (lax/kernels/shape_ops.h, slicing.h), the same code eager runs,
// so they move bytes at eager speed (SIMD transposes, memcpy runs, replicated broadcast
// blocks) instead of gathering element by element through a tile program. Fused shape ops
// stay in their fusion's tile program.
#include <cstring>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "jx/compiler/backend/cpu/cpu_kernels.h"
#include "jx/compiler/hlo/status_macros.h"
#include "jx/compiler/hlo/str_util.h"
#include "jx/lax/kernels/copy_kernels.h"
#include "jx/lax/kernels/shape_ops.h"
#include "jx/lax/kernels/slicing.h"

namespace jx::cpu::internal {
namespace {

using hlo::HloInstruction;
using hlo::HloOpcode;
namespace kernels = jx::lax::kernels;

class DataMovementKernel : public Kernel {
 public:
  DataMovementKernel(const HloInstruction& instr, int64_t item_size)
      : instr_(instr), opcode_(instr.opcode()), item_(item_size), out_dims_(hlo::SpanToVector(instr.shape().dimensions())) {
    const hlo::Shape& in = instr.operand_count() > 0 ? instr.operand(0)->shape() : instr.shape();
    in_dims_ = hlo::SpanToVector(in.dimensions());
  }

  absl::Status Run(absl::Span<const void* const> operands,
                   absl::Span<void* const> results) const override {
    void* out = results[0];
    const hlo::Shape& out_shape = instr_.shape();
    switch (opcode_) {
      case HloOpcode::kTranspose:
        kernels::Transpose(operands[0], in_dims_, instr_.dimensions(), item_, out);
        break;
      case HloOpcode::kBroadcast:
        kernels::BroadcastInDim(operands[0], in_dims_, out_dims_, instr_.dimensions(), item_, out);
        break;
      case HloOpcode::kReverse:
        kernels::Rev(operands[0], in_dims_, instr_.dimensions(), item_, out);
        break;
      case HloOpcode::kSlice:
        if (hlo::ShapeUtil::ElementsIn(out_shape) > 0) {
          kernels::Slice(operands[0], in_dims_, instr_.slice().starts, instr_.slice().strides, out_dims_, item_, out);
        }
        break;
      case HloOpcode::kPad: {
        absl::InlinedVector<int64_t, 8> low, interior;
        for (const hlo::PaddingDim& p : instr_.padding_config()) {
          low.push_back(p.low);
          interior.push_back(p.interior);
        }
        kernels::Pad(operands[0], in_dims_, operands[1], low, interior, out_dims_, item_, out);
        break;
      }
      case HloOpcode::kConcatenate: {
        if (hlo::ShapeUtil::ElementsIn(out_shape) == 0) break;
        const int64_t dim = instr_.concatenate_dimension();
        absl::InlinedVector<int64_t, 8> sizes;
        for (const HloInstruction* op : instr_.operands()) sizes.push_back(op->shape().dimensions(dim));
        kernels::Concatenate(operands, sizes, out_dims_, dim, item_, out);
        break;
      }
      case HloOpcode::kIota:
        kernels::Iota(iota_dtype_, out_dims_, instr_.iota_dimension(), out);
        break;
      default:  // copy, reshape, bitcast, bitcast-convert: the same bytes
        kernels::ParallelMemcpy(out, operands[0], hlo::ShapeUtil::ByteSizeOf(out_shape));
        break;
    }
    return absl::OkStatus();
  }
  std::string_view kind() const override { return "data-movement"; }

  DType iota_dtype_ = DType::kInt32;

 private:
  const HloInstruction& instr_;
  HloOpcode opcode_;
  int64_t item_;
  std::vector<int64_t> out_dims_, in_dims_;
};

bool DefaultLayout(const hlo::Shape& s) {
  return s.IsArray() && s.layout() == hlo::ShapeUtil::DefaultLayout(s.rank());
}

}  // namespace

absl::StatusOr<std::unique_ptr<Kernel>> MakeDataMovementKernel(const HloInstruction& instr) {
  switch (instr.opcode()) {
    case HloOpcode::kTranspose: case HloOpcode::kBroadcast: case HloOpcode::kReverse:
    case HloOpcode::kSlice: case HloOpcode::kPad: case HloOpcode::kConcatenate: case HloOpcode::kIota:
    case HloOpcode::kCopy: case HloOpcode::kReshape: case HloOpcode::kBitcast:
    case HloOpcode::kBitcastConvert:
      break;
    default:
      return absl::UnimplementedError("not a data-movement op");
  }
  if (!DefaultLayout(instr.shape())) return absl::UnimplementedError("non-row-major result layout");
  for (const HloInstruction* op : instr.operands()) {
    if (!DefaultLayout(op->shape())) return absl::UnimplementedError("non-row-major operand layout");
  }
  const int64_t item = hlo::ByteSizeOfPrimitiveType(instr.shape().element_type());
  if (item != 1 && item != 2 && item != 4 && item != 8) {
    return absl::UnimplementedError(hlo::StrCat("element size ", item));
  }
  if (instr.opcode() != HloOpcode::kIota && instr.opcode() != HloOpcode::kBitcastConvert &&
      instr.operand(0)->shape().element_type() != instr.shape().element_type()) {
    return absl::UnimplementedError("operand and result element types differ");
  }
  auto kernel = std::make_unique<DataMovementKernel>(instr, item);
  if (instr.opcode() == HloOpcode::kIota) {
    const std::optional<DType> dtype = KernelDTypeOf(instr.shape().element_type());
    if (!dtype.has_value() || *dtype == DType::kBool) return absl::UnimplementedError("iota of this type");
    kernel->iota_dtype_ = *dtype;
  }
  return kernel;
}

}  // namespace jx::cpu::internal
