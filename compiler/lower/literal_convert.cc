#include "jx/compiler/lower/literal_convert.h"

#include <cstring>
#include <string>

#include "jx/core/errors.h"

namespace jx {

hlo::PrimitiveType PrimitiveTypeOf(DType dtype) {
  switch (dtype) {
    case DType::kBool: return hlo::PRED;
    case DType::kInt8: return hlo::S8;
    case DType::kInt16: return hlo::S16;
    case DType::kInt32: return hlo::S32;
    case DType::kInt64: return hlo::S64;
    case DType::kUInt8: return hlo::U8;
    case DType::kUInt16: return hlo::U16;
    case DType::kUInt32: return hlo::U32;
    case DType::kUInt64: return hlo::U64;
    case DType::kFloat16: return hlo::F16;
    case DType::kBFloat16: return hlo::BF16;
    case DType::kFloat32: return hlo::F32;
    case DType::kFloat64: return hlo::F64;
  }
  return hlo::PRIMITIVE_TYPE_INVALID;
}

absl::StatusOr<DType> DTypeOf(hlo::PrimitiveType type) {
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
    default:
      return absl::InvalidArgumentError(
          std::string("no jx dtype for HLO element type ") + std::string(hlo::PrimitiveTypeName(type)));
  }
}

hlo::Shape ShapeOfAval(const ShapedArray& aval) { return hlo::Shape(PrimitiveTypeOf(aval.dtype), aval.shape); }

hlo::Literal ArrayToLiteral(const Array& array) {
  hlo::Literal literal(ShapeOfAval(array.aval()));
  const int64_t bytes = array.nbytes();
  if (bytes > 0) std::memcpy(literal.mutable_untyped_data().data(), array.data(), static_cast<size_t>(bytes));
  return literal;
}

Array LiteralToArray(const hlo::Literal& literal) {
  absl::StatusOr<DType> dtype = DTypeOf(literal.shape().element_type());
  if (!dtype.ok()) throw InternalError(std::string(dtype.status().message()));
  Shape shape(literal.shape().dimensions().begin(), literal.shape().dimensions().end());
  return Array::FromData(literal.untyped_data().data(), std::move(shape), *dtype);
}

}  // namespace jx
