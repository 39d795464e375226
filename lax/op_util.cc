#include "jx/lax/op_util.h"

#include "absl/strings/str_join.h"

namespace jx::lax::internal {

std::string AvalsToString(InAvals in) {
  return absl::StrJoin(in, ", ", [](std::string* out, const ShapedArray* a) { out->append(a->str()); });
}

void CheckArity(std::string_view op, InAvals in, size_t n) {
  if (in.size() != n) ThrowOpError<TypeError>(op, "expects ", n, " operands, got ", in.size(), " (", AvalsToString(in), ")");
}

void CheckSameShapes(std::string_view op, InAvals in) {
  for (size_t i = 1; i < in.size(); ++i) {
    if (in[i]->shape != in[0]->shape) {
      ThrowOpError<ShapeError>(op, "operands must have equal shapes, got ", AvalsToString(in),
                               " (argument ", i, " differs from argument 0)");
    }
  }
}

void CheckSameDTypes(std::string_view op, InAvals in) {
  for (size_t i = 1; i < in.size(); ++i) {
    if (in[i]->dtype != in[0]->dtype) {
      ThrowOpError<TypeError>(op, "operands must have equal dtypes, got ", AvalsToString(in),
                              " (argument ", i, " is ", dtype_name(in[i]->dtype), ", argument 0 is ",
                              dtype_name(in[0]->dtype), ")");
    }
  }
}

std::string_view ClassName(DTypeClass c) {
  switch (c) {
    case DTypeClass::kAny: return "any";
    case DTypeClass::kNumeric: return "numeric";
    case DTypeClass::kFloating: return "floating";
    case DTypeClass::kInteger: return "integer";
    case DTypeClass::kIntegerOrBool: return "integer or boolean";
    case DTypeClass::kSignedNumeric: return "signed numeric";
    case DTypeClass::kFloatingOrInteger: return "floating or integer";
  }
  return "?";
}

void CheckDTypeClass(std::string_view op, InAvals in, DTypeClass c) {
  for (size_t i = 0; i < in.size(); ++i) {
    if (!InClass(in[i]->dtype, c)) {
      ThrowOpError<TypeError>(op, "does not accept dtype ", dtype_name(in[i]->dtype), " (argument ", i,
                              " is ", in[i]->str(), "); expected a ", ClassName(c), " dtype");
    }
  }
}

ShapedArray ElementwiseResult(InAvals in, DType dtype) {
  bool weak = true;
  for (const ShapedArray* a : in) weak = weak && a->weak_type;
  return ShapedArray{in[0]->shape, dtype, weak};
}

}  // namespace jx::lax::internal
