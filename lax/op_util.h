// Helpers shared by the lax primitive families: binding (with lazy registration) and the
// common checks of abstract evaluation, each throwing the documented error naming the op.
#pragma once

#include <initializer_list>
#include <string>
#include <string_view>

#include "jx/core/errors.h"
#include "jx/core/interpreter.h"
#include "jx/lax/registration.h"

namespace jx::lax::internal {

// Binds p after making sure the built-in rules are registered.
inline Arrays BindOp(Primitive p, absl::Span<const Array> inputs, const ParamMap& params = {}) {
  RegisterAll();
  return Bind(p, inputs, params);
}
inline Array BindOp1(Primitive p, std::initializer_list<Array> inputs, const ParamMap& params = {}) {
  RegisterAll();
  return std::move(Bind(p, absl::MakeConstSpan(inputs.begin(), inputs.size()), params)[0]);
}

// One-element results built without the copy an initializer list makes (eager dispatch is
// allocation-bound: a ShapedArray copy is a heap allocation).
inline Avals OneAval(ShapedArray a) {
  Avals out;
  out.push_back(std::move(a));
  return out;
}
inline Arrays OneArray(Array a) {
  Arrays out;
  out.push_back(std::move(a));
  return out;
}

// "f32[2,3], i32[3]": the avals of a list of inputs, for error messages.
std::string AvalsToString(InAvals in);

// Throws TypeError unless the input count is n.
void CheckArity(std::string_view op, InAvals in, size_t n);
// Throws ShapeError unless every input has the same shape as the first.
void CheckSameShapes(std::string_view op, InAvals in);
// JAX's broadcasting_shape_rule for n-ary elementwise ops: 0-d operands broadcast against the
// others, whose shapes must all be equal (else ShapeError naming the op and every shape).
void CheckElementwiseShapes(std::string_view op, InAvals in);
// Throws TypeError unless every input has the same dtype as the first.
void CheckSameDTypes(std::string_view op, InAvals in);

// Dtype classes accepted by elementwise ops.
enum class DTypeClass { kAny, kNumeric, kFloating, kInteger, kIntegerOrBool, kSignedNumeric, kFloatingOrInteger };
constexpr bool InClass(DType d, DTypeClass c) {
  switch (c) {
    case DTypeClass::kAny: return true;
    case DTypeClass::kNumeric: return !IsBool(d);
    case DTypeClass::kFloating: return IsFloating(d);
    case DTypeClass::kInteger: return IsInteger(d);
    case DTypeClass::kIntegerOrBool: return IsInteger(d) || IsBool(d);
    case DTypeClass::kSignedNumeric: return IsFloating(d) || IsSignedInt(d);
    case DTypeClass::kFloatingOrInteger: return IsFloating(d) || IsInteger(d);
  }
  return false;
}
std::string_view ClassName(DTypeClass c);
// Throws TypeError naming the op and the argument unless in[i]'s dtype is in class c.
void CheckDTypeClass(std::string_view op, InAvals in, DTypeClass c);

// The aval of an elementwise result: the operands' common shape (that of the non-0-d ones),
// the given dtype, weak only if every operand is weak.
ShapedArray ElementwiseResult(InAvals in, DType dtype);

// JAX's weak-type rule for the elementwise lax wrappers (lax::add(x, 2.0), lax::lt(i, 0)):
// every weakly typed operand whose dtype differs from the strong operands' dtype is converted
// to it (staying weak), and a weak 0-d operand is broadcast to the other operands' shape when
// broadcast_scalars is set (for select_n's cases, which must have equal shapes; elementwise
// primitives take 0-d operands as they are). With no strong operand the weak dtypes promote
// among themselves. Strong mismatches are left alone for the primitive to reject (TypeError /
// ShapeError, as in JAX's lax). Binds convert_element_type and broadcast_in_dim, so it works
// under tracing.
void CoerceWeakOperands(absl::Span<Array> operands, bool broadcast_scalars = true);

// Binds an elementwise primitive after CoerceWeakOperands (0-d operands stay 0-d: the
// primitive broadcasts them); the fast path (equal avals) costs two comparisons.
Array BindElementwise(Primitive p, std::initializer_list<Array> operands, const ParamMap& params = {});

// Registers the comparison and selection primitives (lax/comparison_ops.cc); called from
// RegisterBinaryOps.
void RegisterComparisonOps(Registry& r);

}  // namespace jx::lax::internal
