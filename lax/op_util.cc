#include "jx/lax/op_util.h"

#include <algorithm>
#include <cstring>

#include "absl/strings/str_join.h"
#include "jx/core/parallel.h"
#include "jx/lax/convert_ops.h"
#include "jx/lax/shape_ops.h"

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

void CheckElementwiseShapes(std::string_view op, InAvals in) {
  const ShapedArray* first = nullptr;  // the first operand that is not 0-d
  size_t first_index = 0;
  for (size_t i = 0; i < in.size(); ++i) {
    if (in[i]->ndim() == 0) continue;
    if (first == nullptr) {
      first = in[i];
      first_index = i;
    } else if (in[i]->shape != first->shape) {
      ThrowOpError<ShapeError>(op, "operands must have equal shapes (or be 0-d), got ", AvalsToString(in),
                               " (argument ", i, " differs from argument ", first_index, ")");
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
  const ShapedArray* shaped = in[0];
  for (const ShapedArray* a : in) {
    weak = weak && a->weak_type;
    if (shaped->ndim() == 0) shaped = a;
  }
  return ShapedArray{shaped->shape, dtype, weak};
}

namespace {
// A new array of `shape` holding the 0-d concrete array's value everywhere (same dtype and
// weak type).
Array FillLike(const Array& scalar, const Shape& shape) {
  Array out = Array::Empty(ShapedArray{shape, scalar.dtype(), scalar.weak_type()});
  const int64_t n = out.size();
  auto fill = [&](auto tag) {
    using U = decltype(tag);
    U v;
    std::memcpy(&v, scalar.data(), sizeof(U));
    U* dst = static_cast<U*>(out.mutable_data());
    ParallelFor(n, int64_t{1} << 16, [&](int64_t b, int64_t e) { std::fill(dst + b, dst + e, v); });
  };
  switch (ItemSize(scalar.dtype())) {
    case 1: fill(uint8_t{}); break;
    case 2: fill(uint16_t{}); break;
    case 4: fill(uint32_t{}); break;
    default: fill(uint64_t{}); break;
  }
  return out;
}

// True when every operand has the first one's dtype and shape (empty handles count as equal:
// the primitive reports them, naming the op).
bool SameAvals(absl::Span<const Array> ops) {
  for (const Array& op : ops) {
    if (!op.defined()) return true;
  }
  const ShapedArray& a0 = ops[0].aval();
  for (size_t i = 1; i < ops.size(); ++i) {
    const ShapedArray& a = ops[i].aval();
    if (a.dtype != a0.dtype || a.shape != a0.shape) return false;
  }
  return true;
}
}  // namespace

void CoerceWeakOperands(absl::Span<Array> ops, bool broadcast_scalars) {
  if (ops.size() < 2 || SameAvals(ops)) return;
  // The dtype weak operands move to: the first strong operand's, else the weak promotion.
  const Array* strong = nullptr;
  for (const Array& op : ops) {
    if (!op.weak_type()) {
      strong = &op;
      break;
    }
  }
  DType target;
  if (strong != nullptr) {
    target = strong->dtype();
  } else {
    TypeAndWeak acc{ops[0].dtype(), true};
    for (const Array& op : ops) acc = PromoteWeak(acc, {op.dtype(), true});
    target = acc.dtype;
  }
  // The shape 0-d weak operands broadcast to: the strong operand's, else any non-scalar one.
  const Shape* target_shape = nullptr;
  if (strong != nullptr && strong->ndim() > 0) {
    target_shape = &strong->shape();
  } else {
    for (const Array& op : ops) {
      if (op.ndim() > 0) {
        target_shape = &op.shape();
        break;
      }
    }
  }
  // Copied: target_shape may point into an operand that is about to be replaced.
  const Shape shape = target_shape != nullptr && broadcast_scalars ? *target_shape : Shape{};
  for (Array& op : ops) {
    if (!op.weak_type()) continue;
    if (op.dtype() != target) {
      // Only where the weak value fits the target's kind (i* into any number, f* into floats);
      // a weak float against an integer operand stays a TypeError, as in JAX's lax.
      if (PromoteWeak({target, false}, {op.dtype(), true}).dtype != target) continue;
      op = convert_element_type(op, target, /*weak_type=*/true);
    }
    if (broadcast_scalars && op.ndim() == 0 && !shape.empty()) {
      // Eagerly, broadcasting a concrete scalar is a fill (what broadcast_in_dim computes,
      // without a second dispatch); under a transformation it is bound, so it is traced.
      op = CurrentInterpreter() == nullptr && op.is_concrete() ? FillLike(op, shape) : broadcast_in_dim(op, shape, {});
    }
  }
}

Array BindElementwise(Primitive p, std::initializer_list<Array> operands, const ParamMap& params) {
  RegisterAll();
  absl::Span<const Array> span(operands.begin(), operands.size());
  if (span.size() < 2 || SameAvals(span)) return std::move(Bind(p, span, params)[0]);
  absl::InlinedVector<Array, 4> ops(operands.begin(), operands.end());
  CoerceWeakOperands(absl::MakeSpan(ops), /*broadcast_scalars=*/false);
  return std::move(Bind(p, ops, params)[0]);
}

}  // namespace jx::lax::internal
