// The jx dtype of an HLO element type: how backend kernels name types to the kernel library.
#include "jx/compiler/backend/cpu/cpu_kernels.h"

namespace jx::cpu::internal {

std::optional<DType> KernelDTypeOf(hlo::PrimitiveType type) {
  switch (type) {
    case hlo::PRED: return DType::kBool;
    case hlo::S8: return DType::kInt8;
    case hlo::S16: return DType::kInt16;
    case hlo::S32: return DType::kInt32;
    case hlo::S64: return DType::kInt64;
    case hlo::U8: return DType::kUInt8;
    case hlo::U16: return DType::kUInt16;
    case hlo::U32: return DType::kUInt32;
    case hlo::U64: return DType::kUInt64;
    case hlo::F16: return DType::kFloat16;
    case hlo::BF16: return DType::kBFloat16;
    case hlo::F32: return DType::kFloat32;
    case hlo::F64: return DType::kFloat64;
    default: return std::nullopt;
  }
}

}  // namespace jx::cpu::internal
