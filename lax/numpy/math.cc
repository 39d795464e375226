// jnp elementwise math: promotion and broadcasting (promotion.h), then lax primitives. The
// compound functions (floor_divide, remainder, hypot, isclose, ...) follow jax.numpy's
// formulas so results match JAX's, including its NaN/inf corner cases.
#include "jx/lax/numpy/math.h"

#include <array>
#include <cfloat>
#include <cmath>
#include <numbers>

#include "jx/core/errors.h"
#include "jx/lax/binary_ops.h"
#include "jx/lax/convert_ops.h"
#include "jx/lax/reduction_ops.h"
#include "jx/lax/shape_ops.h"
#include "jx/lax/unary_ops.h"

namespace jx::numpy {
namespace {

using A = const ArrayLike&;
using Binary = Array (*)(const Array&, const Array&);
using Unary = Array (*)(const Array&);

// v as a 0-d array of x's dtype and weakness: JAX's _constant_like / _lax_const. An operand of
// a lax binary op stays 0-d (lax's scalar promotion), so it stages as a literal
// (`eq a inf:f32[]`), as JAX's compound functions do.
Array Scalar(const Array& x, double v) { return internal::ScalarOf(v, x.dtype(), x.weak_type()); }

// v as an array like x (same dtype, shape and weakness): a case of select, which takes no 0-d
// cases (JAX's _where broadcasts it the same way).
Array Like(const Array& x, double v) {
  Array s = Scalar(x, v);
  return x.ndim() == 0 ? s : lax::broadcast_in_dim(s, x.shape(), {});
}

Array PromoteOne(A x) {
  const TypeAndWeak t = x.type();
  return x.as(t.dtype, t.weak);
}

Array PromoteOneInexact(A x) {
  const TypeAndWeak t = to_inexact(x.type());
  return x.as(t.dtype, t.weak);
}

// A numeric operand: bool becomes int32 (JAX's promote_dtypes_numeric).
Array PromoteOneNumeric(A x) {
  TypeAndWeak t = x.type();
  if (IsBool(t.dtype)) t.dtype = int32;
  return x.as(t.dtype, t.weak);
}

// promote_args for ops whose lax primitive accepts a 0-d operand (its scalar promotion, read
// with stride 0): with exactly one 0-d operand nothing is broadcast, as JAX's _promote_shapes
// leaves it to lax, so `x * 3.0` stages `mul a 3.0:f32[]` and `x > 0.0` stages
// `gt a 0.0:f32[]` rather than a broadcast_in_dim. Every jnp binary ufunc that binds one lax
// primitive (or a chain of elementwise ones) takes its operands this way, as JAX's do.
std::array<Array, 2> PromoteArithmetic(std::string_view op, A x, A y, bool inexact) {
  if (x.shape().empty() == y.shape().empty()) {
    if (!inexact) return promote_args(op, x, y);
    std::vector<Array> v = promote_args_inexact(op, {x, y});
    return {std::move(v[0]), std::move(v[1])};
  }
  TypeAndWeak t = result_type_weak({x, y});
  if (inexact) t = to_inexact(t);
  return {x.as(t.dtype, t.weak), y.as(t.dtype, t.weak)};
}

Array ApplyBinary(std::string_view op, A x, A y, Binary f) {
  auto [a, b] = PromoteArithmetic(op, x, y, false);
  return f(a, b);
}

Array ApplyInexact(A x, Unary f) { return f(PromoteOneInexact(x)); }

void RequireIntegerOrBool(std::string_view op, const Array& a) {
  if (!IsInteger(a.dtype()) && !IsBool(a.dtype())) {
    ThrowOpError<TypeError>(op, "only integer and boolean inputs are supported, got ", a.aval().str());
  }
}

void RequireNonBool(std::string_view op, const Array& a) {
  if (IsBool(a.dtype())) ThrowOpError<TypeError>(op, "does not support boolean inputs, got ", a.aval().str());
}

Array ToBool(A x) {
  Array a = PromoteOne(x);
  if (IsBool(a.dtype())) return a;
  return lax::ne(a, Scalar(a, 0));
}

double FinfoMax(DType d) {
  switch (d) {
    case DType::kFloat16: return 65504.0;
    case DType::kBFloat16: return 3.3895313892515355e38;
    case DType::kFloat32: return FLT_MAX;
    default: return DBL_MAX;
  }
}

}  // namespace

// ---- arithmetic ----

Array add(A x, A y) {
  auto [a, b] = PromoteArithmetic("add", x, y, false);
  if (IsBool(a.dtype())) return lax::bitwise_or(a, b);  // NumPy: logical or on bools
  return lax::add(a, b);
}

Array subtract(A x, A y) {
  auto [a, b] = PromoteArithmetic("subtract", x, y, false);
  RequireNonBool("subtract", a);
  return lax::sub(a, b);
}

Array multiply(A x, A y) {
  auto [a, b] = PromoteArithmetic("multiply", x, y, false);
  if (IsBool(a.dtype())) return lax::bitwise_and(a, b);
  return lax::mul(a, b);
}

Array true_divide(A x, A y) {
  auto [a, b] = PromoteArithmetic("true_divide", x, y, true);
  return lax::div(a, b);
}
Array divide(A x, A y) { return true_divide(x, y); }

Array floor_divide(A x, A y) {
  auto [a, b] = PromoteArithmetic("floor_divide", x, y, false);
  const DType d = a.dtype();
  if (IsBool(d)) ThrowOpError<TypeError>("floor_divide", "does not support boolean inputs, got ", a.aval().str());
  if (IsUnsignedInt(d)) return lax::div(a, b);
  if (IsSignedInt(d)) {
    // C division truncates; step down where the signs differ and the division is inexact.
    Array q = lax::div(a, b);
    Array fix = lax::bitwise_and(lax::ne(lax::sign(a), lax::sign(b)), lax::ne(lax::rem(a, b), Scalar(a, 0)));
    return lax::select(fix, lax::sub(q, Scalar(q, 1)), q);
  }
  // Floats: CPython's float_divmod, as jnp.
  Array m = lax::rem(a, b);
  Array div = lax::div(lax::sub(a, m), b);
  Array ind = lax::bitwise_and(lax::ne(m, Scalar(m, 0)), lax::ne(lax::sign(b), lax::sign(m)));
  div = lax::select(ind, lax::sub(div, Scalar(div, 1)), div);
  return lax::round(div, 0);
}

Array remainder(A x, A y) {
  auto [a, b] = PromoteArithmetic("remainder", x, y, false);
  RequireNonBool("remainder", a);
  // Integer x % 0 is 0, as in jnp.
  if (IsInteger(b.dtype())) b = lax::select(lax::eq(b, Scalar(b, 0)), Like(b, 1), b);
  Array zero = Scalar(a, 0);
  Array trunc_mod = lax::rem(a, b);
  Array do_plus = lax::bitwise_and(lax::ne(lax::lt(trunc_mod, zero), lax::lt(b, Scalar(b, 0))), lax::ne(trunc_mod, zero));
  return lax::select(do_plus, lax::add(trunc_mod, b), trunc_mod);
}
Array mod(A x, A y) { return remainder(x, y); }

Array fmod(A x, A y) {
  auto [a, b] = PromoteArithmetic("fmod", x, y, false);
  RequireNonBool("fmod", a);
  if (IsInteger(b.dtype())) b = lax::select(lax::eq(b, Scalar(b, 0)), Like(b, 1), b);
  return lax::rem(a, b);
}

Array power(A x, A y) {
  // A C++ integer exponent: binary exponentiation in x's own dtype (lax.integer_pow).
  if (y.is_integer_scalar()) return lax::integer_pow(PromoteOneNumeric(x), y.int_value());
  auto [a, b] = PromoteArithmetic("power", x, y, false);
  if (IsFloating(a.dtype())) return lax::pow(a, b);  // `pow a 2.0:f32[]`, as JAX's
  {
    auto [pa, pb] = promote_args("power", x, y);  // the integer steps select over one shape
    a = std::move(pa);
    b = std::move(pb);
  }
  if (IsBool(a.dtype())) {
    a = lax::convert_element_type(a, int32, a.weak_type());
    b = lax::convert_element_type(b, int32, b.weak_type());
  }
  // Integer ** integer: 6 squaring steps (more would overflow for any |x| > 1), as jnp.
  Array one = Scalar(b, 1);
  Array acc = lax::select(lax::bitwise_and(lax::eq(a, Scalar(a, 0)), lax::ne(b, Scalar(b, 0))), Like(a, 0), Like(a, 1));
  for (int i = 0; i < 6; ++i) {
    acc = lax::select(lax::ne(lax::bitwise_and(b, one), Scalar(b, 0)), lax::mul(acc, a), acc);
    a = lax::mul(a, a);
    b = lax::shift_right_logical(b, one);
  }
  return acc;
}
Array pow(A x, A y) { return power(x, y); }

Array negative(A x) {
  Array a = PromoteOne(x);
  RequireNonBool("negative", a);
  return lax::neg(a);
}
Array positive(A x) { return PromoteOneNumeric(x); }

Array abs(A x) {
  Array a = PromoteOne(x);
  if (IsBool(a.dtype()) || IsUnsignedInt(a.dtype())) return a;
  return lax::abs(a);
}
Array absolute(A x) { return abs(x); }

Array sign(A x) {
  Array a = PromoteOne(x);
  if (IsBool(a.dtype())) return a;
  if (IsUnsignedInt(a.dtype())) return lax::convert_element_type(lax::ne(a, Scalar(a, 0)), a.dtype(), a.weak_type());
  return lax::sign(a);
}

Array square(A x) { return lax::square(PromoteOneNumeric(x)); }
Array reciprocal(A x) { return lax::integer_pow(PromoteOneInexact(x), -1); }

Array maximum(A x, A y) { return ApplyBinary("maximum", x, y, lax::max); }
Array minimum(A x, A y) { return ApplyBinary("minimum", x, y, lax::min); }

Array fmax(A x, A y) {
  auto [a, b] = promote_args("fmax", x, y);
  if (!IsFloating(a.dtype())) return lax::max(a, b);
  return lax::select(lax::ne(b, b), a, lax::select(lax::ne(a, a), b, lax::max(a, b)));
}

Array fmin(A x, A y) {
  auto [a, b] = promote_args("fmin", x, y);
  if (!IsFloating(a.dtype())) return lax::min(a, b);
  return lax::select(lax::ne(b, b), a, lax::select(lax::ne(a, a), b, lax::min(a, b)));
}

// ---- transcendental ----

Array sqrt(A x) { return ApplyInexact(x, lax::sqrt); }
Array rsqrt(A x) { return ApplyInexact(x, lax::rsqrt); }
Array cbrt(A x) { return ApplyInexact(x, lax::cbrt); }
Array exp(A x) { return ApplyInexact(x, lax::exp); }
Array exp2(A x) { return ApplyInexact(x, lax::exp2); }
Array expm1(A x) { return ApplyInexact(x, lax::expm1); }
Array log(A x) { return ApplyInexact(x, lax::log); }
Array log1p(A x) { return ApplyInexact(x, lax::log1p); }
Array log2(A x) {
  Array a = PromoteOneInexact(x);
  return lax::div(lax::log(a), lax::log(Scalar(a, 2)));
}
Array log10(A x) {
  Array a = PromoteOneInexact(x);
  return lax::div(lax::log(a), lax::log(Scalar(a, 10)));
}
Array sin(A x) { return ApplyInexact(x, lax::sin); }
Array cos(A x) { return ApplyInexact(x, lax::cos); }
Array tan(A x) { return ApplyInexact(x, lax::tan); }
Array arcsin(A x) { return ApplyInexact(x, lax::asin); }
Array arccos(A x) { return ApplyInexact(x, lax::acos); }
Array arctan(A x) { return ApplyInexact(x, lax::atan); }
Array sinh(A x) { return ApplyInexact(x, lax::sinh); }
Array cosh(A x) { return ApplyInexact(x, lax::cosh); }
Array tanh(A x) { return ApplyInexact(x, lax::tanh); }
Array arcsinh(A x) { return ApplyInexact(x, lax::asinh); }
Array arccosh(A x) { return ApplyInexact(x, lax::acosh); }
Array arctanh(A x) { return ApplyInexact(x, lax::atanh); }

Array arctan2(A y, A x) {
  auto [a, b] = PromoteArithmetic("arctan2", y, x, true);
  return lax::atan2(a, b);
}

Array hypot(A x, A y) {
  // A 0-d operand stays 0-d (lax's scalar promotion), as JAX's promote_args_inexact leaves it.
  auto [x1, x2] = PromoteArithmetic("hypot", x, y, true);
  // jnp's overflow-safe form: big * sqrt(1 + (small / big)^2), inf wins over nan.
  Array a = lax::abs(x1);
  Array b = lax::abs(x2);
  Array any_inf = lax::bitwise_or(lax::eq(a, Scalar(a, INFINITY)), lax::eq(b, Scalar(b, INFINITY)));
  Array big = lax::max(a, b);
  Array small = lax::min(a, b);
  Array big_is_zero = lax::eq(big, Scalar(big, 0));
  Array safe_big = lax::select(big_is_zero, Like(big, 1), big);
  Array r = lax::select(big_is_zero, big,
                        lax::mul(big, lax::sqrt(lax::add(Scalar(big, 1), lax::square(lax::div(small, safe_big))))));
  return lax::select(any_inf, Like(r, INFINITY), r);
}

Array logaddexp(A x, A y) {
  // A 0-d operand stays 0-d: `max a 0.0:f32[]`, as JAX's.
  auto [a, b] = PromoteArithmetic("logaddexp", x, y, true);
  Array amax = lax::max(a, b);
  Array delta = lax::sub(a, b);
  return lax::select(lax::ne(delta, delta), lax::add(a, b),
                     lax::add(amax, lax::log1p(lax::exp(lax::neg(lax::abs(delta))))));
}

Array deg2rad(A x) {
  Array a = PromoteOneInexact(x);
  return lax::mul(a, Scalar(a, std::numbers::pi / 180.0));
}
Array rad2deg(A x) {
  Array a = PromoteOneInexact(x);
  return lax::mul(a, Scalar(a, 180.0 / std::numbers::pi));
}
Array radians(A x) { return deg2rad(x); }
Array degrees(A x) { return rad2deg(x); }

// ---- rounding ----

namespace {
Array RoundFloat(A x, Unary f) {
  Array a = PromoteOne(x);
  if (!IsFloating(a.dtype())) return a;
  return f(a);
}
Array RoundEven(const Array& a) { return lax::round(a, 1); }
}  // namespace

Array floor(A x) { return RoundFloat(x, lax::floor); }
Array ceil(A x) { return RoundFloat(x, lax::ceil); }
Array rint(A x) { return RoundFloat(x, RoundEven); }
Array trunc(A x) {
  Array a = PromoteOne(x);
  if (!IsFloating(a.dtype())) return a;
  return lax::select(lax::lt(a, Scalar(a, 0)), lax::ceil(a), lax::floor(a));
}

Array round(A x, int decimals) {
  Array a = PromoteOne(x);
  if (!IsFloating(a.dtype())) {
    if (decimals >= 0) return a;
    ThrowOpError<NotImplementedError>("round", "negative decimals for integer input ", a.aval().str());
  }
  if (decimals == 0) return RoundEven(a);
  Array factor = Scalar(a, std::pow(10.0, decimals));
  return lax::div(RoundEven(lax::mul(a, factor)), factor);
}
Array around(A x, int decimals) { return round(x, decimals); }

// ---- predicates ----

namespace {
Array AllBool(const Array& a, bool value) {
  Array s = internal::ScalarOf(int64_t{value ? 1 : 0}, bool_);
  return a.ndim() == 0 ? s : lax::broadcast_in_dim(s, a.shape(), {});
}
}  // namespace

Array isfinite(A x) {
  Array a = PromoteOne(x);
  if (!IsFloating(a.dtype())) return AllBool(a, true);
  return lax::is_finite(a);
}

Array isnan(A x) {
  Array a = PromoteOne(x);
  if (!IsFloating(a.dtype())) return AllBool(a, false);
  return lax::ne(a, a);
}

Array isinf(A x) {
  Array a = PromoteOne(x);
  if (!IsFloating(a.dtype())) return AllBool(a, false);
  return lax::eq(lax::abs(a), Scalar(a, INFINITY));
}

Array isposinf(A x) {
  Array a = PromoteOne(x);
  if (!IsFloating(a.dtype())) return AllBool(a, false);
  return lax::eq(a, Scalar(a, INFINITY));
}

Array isneginf(A x) {
  Array a = PromoteOne(x);
  if (!IsFloating(a.dtype())) return AllBool(a, false);
  return lax::eq(a, Scalar(a, -INFINITY));
}

Array signbit(A x) {
  Array a = PromoteOne(x);
  const DType d = a.dtype();
  if (IsBool(d) || IsUnsignedInt(d)) return AllBool(a, false);
  if (IsSignedInt(d)) return lax::lt(a, Scalar(a, 0));
  const DType bits = ItemSize(d) == 2 ? uint16 : ItemSize(d) == 4 ? uint32 : uint64;
  Array u = lax::bitcast_convert_type(a, bits);
  Array shifted = lax::shift_right_logical(u, Scalar(u, static_cast<double>(ItemSize(d) * 8 - 1)));
  return lax::ne(shifted, Scalar(shifted, 0));
}

Array equal(A x, A y) { return ApplyBinary("equal", x, y, lax::eq); }
Array not_equal(A x, A y) { return ApplyBinary("not_equal", x, y, lax::ne); }
Array less(A x, A y) { return ApplyBinary("less", x, y, lax::lt); }
Array less_equal(A x, A y) { return ApplyBinary("less_equal", x, y, lax::le); }
Array greater(A x, A y) { return ApplyBinary("greater", x, y, lax::gt); }
Array greater_equal(A x, A y) { return ApplyBinary("greater_equal", x, y, lax::ge); }

Array isclose(A x, A y, double rtol, double atol, bool equal_nan) {
  auto [a, b] = promote_args("isclose", x, y);
  if (!IsFloating(a.dtype())) return lax::eq(a, b);
  Array out = lax::le(lax::abs(lax::sub(a, b)), lax::add(Scalar(a, atol), lax::mul(Scalar(a, rtol), lax::abs(b))));
  Array inf = Scalar(a, INFINITY);
  Array a_inf = lax::eq(lax::abs(a), inf);
  Array b_inf = lax::eq(lax::abs(b), inf);
  // Infinities are close only to the same infinity; NaN is close to nothing (unless equal_nan).
  out = lax::bitwise_and(out, lax::bitwise_not(lax::bitwise_or(a_inf, b_inf)));
  out = lax::bitwise_or(out, lax::bitwise_and(lax::bitwise_and(a_inf, b_inf), lax::eq(a, b)));
  Array a_nan = lax::ne(a, a);
  Array b_nan = lax::ne(b, b);
  out = lax::bitwise_and(out, lax::bitwise_not(lax::bitwise_or(a_nan, b_nan)));
  if (equal_nan) out = lax::bitwise_or(out, lax::bitwise_and(a_nan, b_nan));
  return out;
}

namespace {
bool AllTrue(const Array& b) {
  if (b.size() == 0) return true;
  std::vector<int64_t> axes(static_cast<size_t>(b.ndim()));
  for (int64_t i = 0; i < b.ndim(); ++i) axes[static_cast<size_t>(i)] = i;
  return lax::reduce_and(b, axes).item<bool>();
}
}  // namespace

bool allclose(A x, A y, double rtol, double atol, bool equal_nan) {
  return AllTrue(isclose(x, y, rtol, atol, equal_nan));
}

bool array_equal(A x, A y, bool equal_nan) {
  if (x.shape() != y.shape()) return false;
  auto [a, b] = promote_args("array_equal", x, y);
  Array eq = lax::eq(a, b);
  if (equal_nan && IsFloating(a.dtype())) eq = lax::bitwise_or(eq, lax::bitwise_and(lax::ne(a, a), lax::ne(b, b)));
  return AllTrue(eq);
}

// ---- logical and bitwise ----

namespace {
Array LogicalBinary(std::string_view op, A x, A y, Binary f) {
  Array a = ToBool(x);
  Array b = ToBool(y);
  auto [pa, pb] = PromoteArithmetic(op, a, b, false);
  return f(pa, pb);
}
Array BitwiseBinary(std::string_view op, A x, A y, Binary f) {
  auto [a, b] = PromoteArithmetic(op, x, y, false);
  RequireIntegerOrBool(op, a);
  return f(a, b);
}
}  // namespace

Array logical_and(A x, A y) { return LogicalBinary("logical_and", x, y, lax::bitwise_and); }
Array logical_or(A x, A y) { return LogicalBinary("logical_or", x, y, lax::bitwise_or); }
Array logical_xor(A x, A y) { return LogicalBinary("logical_xor", x, y, lax::bitwise_xor); }
Array logical_not(A x) { return lax::bitwise_not(ToBool(x)); }

Array bitwise_and(A x, A y) { return BitwiseBinary("bitwise_and", x, y, lax::bitwise_and); }
Array bitwise_or(A x, A y) { return BitwiseBinary("bitwise_or", x, y, lax::bitwise_or); }
Array bitwise_xor(A x, A y) { return BitwiseBinary("bitwise_xor", x, y, lax::bitwise_xor); }
Array bitwise_not(A x) {
  Array a = PromoteOne(x);
  RequireIntegerOrBool("bitwise_not", a);
  return lax::bitwise_not(a);
}
Array invert(A x) { return bitwise_not(x); }

Array left_shift(A x, A y) {
  auto [a, b] = PromoteArithmetic("left_shift", x, y, false);
  if (!IsInteger(a.dtype())) ThrowOpError<TypeError>("left_shift", "only integer inputs are supported, got ", a.aval().str());
  return lax::shift_left(a, b);
}

Array right_shift(A x, A y) {
  auto [a, b] = PromoteArithmetic("right_shift", x, y, false);
  if (!IsInteger(a.dtype())) ThrowOpError<TypeError>("right_shift", "only integer inputs are supported, got ", a.aval().str());
  return IsSignedInt(a.dtype()) ? lax::shift_right_arithmetic(a, b) : lax::shift_right_logical(a, b);
}

// ---- selection ----

Array where(A condition, A x, A y) {
  Array c = ToBool(condition);
  std::vector<Array> xy = promote_dtypes({x, y});
  const Shape shape = broadcast_shapes({c.shape(), xy[0].shape(), xy[1].shape()}, "where");
  return lax::select(broadcast_to(c, shape), broadcast_to(xy[0], shape), broadcast_to(xy[1], shape));
}

Array clip(A x, const std::optional<ArrayLike>& lo, const std::optional<ArrayLike>& hi) {
  Array out = PromoteOne(x);
  if (lo) out = maximum(*lo, out);
  if (hi) out = minimum(*hi, out);
  return out;
}

Array nan_to_num(A x, double nan, std::optional<double> posinf, std::optional<double> neginf) {
  Array a = PromoteOne(x);
  if (!IsFloating(a.dtype())) return a;
  const double big = FinfoMax(a.dtype());
  Array out = lax::select(lax::ne(a, a), Like(a, nan), a);
  out = lax::select(lax::eq(out, Scalar(a, INFINITY)), Like(a, posinf.value_or(big)), out);
  out = lax::select(lax::eq(out, Scalar(a, -INFINITY)), Like(a, neginf.value_or(-big)), out);
  return out;
}

}  // namespace jx::numpy
