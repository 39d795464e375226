// Binary elementwise primitives: abstract eval, CPU kernels, registration. Comparisons,
// select_n and clamp live in comparison_ops.cc.
//
// Kernels come from the shared elementwise library (kernels/elementwise.h: the CPU backend's
// kernels, so eager and jit agree bit for bit); 16-bit floats compute in f32 and round once;
// integers wrap, with XLA's results where C++ has UB (division by zero, INT_MIN / -1, shifts
// by >= the bit width).
#include "jx/lax/binary_ops.h"

#include <cmath>
#include <limits>

#include "jx/lax/convert_ops.h"
#include "jx/lax/kernels/dispatch.h"
#include "jx/lax/kernels/elementwise.h"
#include "jx/lax/op_util.h"
#include "jx/lax/primitives.h"
#include "jx/lax/rule_util.h"
#include "jx/lax/unary_ops.h"
#include "jx/transforms/jvp.h"

namespace jx::lax {

using internal::BindElementwise;

Array add(const Array& x, const Array& y) { return BindElementwise(kAdd, {x, y}); }
Array sub(const Array& x, const Array& y) { return BindElementwise(kSub, {x, y}); }
Array mul(const Array& x, const Array& y) { return BindElementwise(kMul, {x, y}); }
Array div(const Array& x, const Array& y) { return BindElementwise(kDiv, {x, y}); }
Array rem(const Array& x, const Array& y) { return BindElementwise(kRem, {x, y}); }
Array pow(const Array& x, const Array& y) { return BindElementwise(kPow, {x, y}); }
Array max(const Array& x, const Array& y) { return BindElementwise(kMax, {x, y}); }
Array min(const Array& x, const Array& y) { return BindElementwise(kMin, {x, y}); }
Array atan2(const Array& x, const Array& y) { return BindElementwise(kAtan2, {x, y}); }
Array bitwise_and(const Array& x, const Array& y) { return BindElementwise(kAnd, {x, y}); }
Array bitwise_or(const Array& x, const Array& y) { return BindElementwise(kOr, {x, y}); }
Array bitwise_xor(const Array& x, const Array& y) { return BindElementwise(kXor, {x, y}); }
Array shift_left(const Array& x, const Array& y) { return BindElementwise(kShiftLeft, {x, y}); }
Array shift_right_logical(const Array& x, const Array& y) { return BindElementwise(kShiftRightLogical, {x, y}); }
Array shift_right_arithmetic(const Array& x, const Array& y) {
  return BindElementwise(kShiftRightArithmetic, {x, y});
}
Array nextafter(const Array& x, const Array& y) { return BindElementwise(kNextafter, {x, y}); }

namespace internal {
namespace {

using kernels::ComputeType;
using kernels::kExpensiveGrain;
using kernels::kIsFloat;
using kernels::kIsHalf;
using kernels::WrapType;

template <typename P>
using Elem = std::remove_cv_t<std::remove_pointer_t<P>>;

// Whether in, an operand of an n-element result, is a 0-d operand read with stride 0.
bool ScalarOperand(const Array& in, int64_t n) { return in.ndim() == 0 && n != 1; }

// out = op(a, b) by the shared elementwise library; a 0-d operand is read with stride 0.
void RunShared(kernels::BinaryOp op, DType dtype, const void* a, bool a_scalar, const void* b, bool b_scalar,
               void* out, int64_t n) {
  const int64_t esize = ItemSize(dtype);
  const unsigned scalars = (a_scalar ? 1u : 0u) | (b_scalar ? 2u : 0u);
  const kernels::StoreMode store =
      kernels::UseStreamingStores(n * esize) ? kernels::StoreMode::kStreaming : kernels::StoreMode::kNormal;
  const void* in[] = {a, b};
  kernels::RunElementwise(kernels::FindBinaryFn(op, dtype, scalars, store), 2, in, scalars, esize, out, esize, n,
                          kernels::IsExpensive(op) ? kExpensiveGrain : kernels::kParallelGrain);
}

// Registers a binary primitive over equal shapes and dtypes whose result has that dtype.
// With kShared every dtype runs the kernel library's `shared_op`; otherwise
// kernel(const T* a, const T* b, T* out, n) is instantiated for the accepted types.
template <DTypeClass kAccepted, bool kShared, typename Kernel>
void DefineBinaryImpl(Registry& r, Primitive p, kernels::BinaryOp shared_op, Kernel kernel) {
  PrimitiveRules& rules = r.Define(p);
  rules.abstract_eval = [p](InAvals in, const ParamMap&) -> Avals {
    CheckArity(p.name(), in, 2);
    CheckSameDTypes(p.name(), in);
    CheckDTypeClass(p.name(), in, kAccepted);
    CheckElementwiseShapes(p.name(), in);
    return OneAval(ElementwiseResult(in, in[0]->dtype));
  };
  rules.impl = [shared_op, kernel](absl::Span<const Array> in, const ParamMap&,
                                   absl::Span<const ShapedArray> out_avals) -> Arrays {
    Array out = Array::Empty(out_avals[0]);
    const int64_t n = out.size();
    if (n == 0) return OneArray(std::move(out));
    if constexpr (kShared) {
      RunShared(shared_op, in[0].dtype(), in[0].data(), ScalarOperand(in[0], n), in[1].data(),
                ScalarOperand(in[1], n), out.mutable_data(), n);
      return OneArray(std::move(out));
    }
    kernels::DispatchDType(in[0].dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      if constexpr (!kShared && InClass(kernels::KernelDType<T>(), kAccepted)) {
        kernels::WithScalarOperands(kernels::Data<T>(in[0]), ScalarOperand(in[0], n), kernels::Data<T>(in[1]),
                                    ScalarOperand(in[1], n), kernels::MutableData<T>(out), n, kernel);
      }
    });
    return OneArray(std::move(out));
  };
}

template <DTypeClass kAccepted, typename Kernel>
void DefineBinary(Registry& r, Primitive p, Kernel kernel) {
  DefineBinaryImpl<kAccepted, false>(r, p, kernels::BinaryOp::kAdd, kernel);
}
// Every accepted dtype from the kernel library (the CPU backend runs the same kernels).
template <DTypeClass kAccepted>
void DefineShared(Registry& r, Primitive p, kernels::BinaryOp op) {
  DefineBinaryImpl<kAccepted, true>(r, p, op, [](const auto*, const auto*, auto*, int64_t) {});
}

// nextafter in the storage type (so 16-bit floats step by their own ulp).
template <typename T>
struct FloatBits {
  using type = std::conditional_t<sizeof(T) == 2, uint16_t, std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>>;
};
template <typename T>
T NextAfter(T x, T y) {
  using U = typename FloatBits<T>::type;
  using C = ComputeType<T>;
  const C cx = static_cast<C>(x), cy = static_cast<C>(y);
  if (cx != cx || cy != cy) return static_cast<T>(std::numeric_limits<C>::quiet_NaN());
  if (cx == cy) return y;
  constexpr U kSign = U(U(1) << (sizeof(T) * 8 - 1));
  U bx, by;
  std::memcpy(&bx, static_cast<const void*>(&x), sizeof(T));
  std::memcpy(&by, static_cast<const void*>(&y), sizeof(T));
  U out;
  if (cx == C(0)) {
    out = static_cast<U>((by & kSign) | U(1));  // smallest subnormal towards y
  } else {
    out = ((cx < cy) == (cx > C(0))) ? static_cast<U>(bx + 1) : static_cast<U>(bx - 1);
  }
  T r;
  std::memcpy(static_cast<void*>(&r), &out, sizeof(T));
  return r;
}

// float^int: the exponent is converted to the base's dtype (as JAX lowers it) block by block,
// then the shared float pow.
template <typename T, typename E>
void PowFloatInt(const T* x, bool x_scalar, const E* e, bool e_scalar, T* out, int64_t n) {
  using C = ComputeType<T>;
  const DType dtype = kernels::KernelDType<T>();
  const unsigned scalars = (x_scalar ? 1u : 0u) | (e_scalar ? 2u : 0u);
  const kernels::ElementwiseFn pow = kernels::FindBinaryFn(kernels::BinaryOp::kPow, dtype, scalars);
  kernels::ForChunks(n, [&](int64_t begin, int64_t end) {
    constexpr int64_t kBlock = 1024;
    alignas(64) T ebuf[kBlock];
    for (int64_t b = begin; b < end; b += kBlock) {
      const int64_t m = e_scalar ? 1 : std::min(kBlock, end - b);
      for (int64_t i = 0; i < m; ++i) ebuf[i] = static_cast<T>(static_cast<C>(e[e_scalar ? 0 : b + i]));
      const void* in[] = {x_scalar ? x : x + b, ebuf};
      pow(in, out + b, std::min(kBlock, end - b));
    }
  }, kExpensiveGrain);
}

// pow: float^float (the shared pow), float^int (exponent converted to the float type,
// as JAX lowers it), int^int (XLA's integer pow).
void DefinePow(Registry& r) {
  PrimitiveRules& rules = r.Define(kPow);
  rules.abstract_eval = [](InAvals in, const ParamMap&) -> Avals {
    CheckArity("pow", in, 2);
    CheckDTypeClass("pow", in, DTypeClass::kNumeric);
    const DType x = in[0]->dtype, y = in[1]->dtype;
    const bool ok = x == y || (IsFloating(x) && IsInteger(y));
    if (!ok) {
      ThrowOpError<TypeError>("pow", "exponent must have the base's dtype or (for a floating base) an integer dtype, got ",
                              AvalsToString(in));
    }
    CheckElementwiseShapes("pow", in);
    return OneAval(ElementwiseResult(in, x));
  };
  rules.impl = [](absl::Span<const Array> in, const ParamMap&, absl::Span<const ShapedArray> out_avals) -> Arrays {
    Array out = Array::Empty(out_avals[0]);
    const int64_t n = out.size();
    if (n == 0) return OneArray(std::move(out));
    const bool x_scalar = ScalarOperand(in[0], n), y_scalar = ScalarOperand(in[1], n);
    kernels::DispatchDType(in[0].dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* x = kernels::Data<T>(in[0]);
      T* o = kernels::MutableData<T>(out);
      if constexpr (kIsFloat<T>) {
        if (in[1].dtype() == in[0].dtype()) {
          RunShared(kernels::BinaryOp::kPow, in[0].dtype(), x, x_scalar, in[1].data(), y_scalar, o, n);
        } else {
          kernels::DispatchDType(in[1].dtype(), [&](auto etag) {
            using E = typename decltype(etag)::type;
            if constexpr (kernels::kIsInt<E>) PowFloatInt(x, x_scalar, kernels::Data<E>(in[1]), y_scalar, o, n);
          });
        }
      } else if constexpr (kernels::kIsInt<T>) {
        RunShared(kernels::BinaryOp::kPow, in[0].dtype(), x, x_scalar, in[1].data(), y_scalar, o, n);
      }
    });
    return OneArray(std::move(out));
  };
}


// ---- jvp, transpose and batching rules.

bool AllZero(absl::Span<const Array> tangents) {
  for (const Array& t : tangents) {
    if (t.defined()) return false;
  }
  return true;
}

// A jvp rule that binds p on the primals and computes the output tangent with
// tangent(primals, tangents, out) (written with ops linear in the tangents). Outputs
// without a tangent space (integer, bool) and all-zero tangents give a symbolic zero.
template <typename TangentFn>
JvpRule ElementwiseJvp(Primitive p, TangentFn tangent) {
  return [p, tangent](absl::Span<const Array> primals, absl::Span<const Array> tangents, const ParamMap& params) {
    Array out = BindOp(p, primals, params)[0];
    if (!HasTangentSpace(out.dtype()) || AllZero(tangents)) return JvpResult{{std::move(out)}, {Array()}};
    Array t = tangent(primals, tangents, out);
    return JvpResult{{std::move(out)}, {std::move(t)}};
  };
}

// t * coefficient where t may be a symbolic zero (the coefficient is a primal value).
Array ScaleTangent(const Array& t, const Array& coefficient) {
  return t.defined() ? mul(t, coefficient) : Array();
}

// 1.0 where x == 0, else x (JAX's _replace_zero): keeps log and pow finite at x == 0 where
// the tangent is then zeroed or scaled by 0.
Array ReplaceZero(const Array& x) { return add(x, convert_element_type(eq(x, 0.0), x.dtype())); }

// trunc(x / y) (JAX's rem jvp: sign(q) * floor(|q|)).
Array TruncQuotient(const Array& x, const Array& y) {
  const Array q = div(x, y);
  return mul(sign(q), floor(abs(q)));
}

// The coefficient of max/min's tangent for operand x (other operand y, output out): 1 where
// x alone attains out, 0.5 where both do (JAX splits ties evenly), 0 elsewhere.
Array BalancedWeight(const Array& x, const Array& y, const Array& out) {
  const Array x_wins = convert_element_type(eq(x, out), out.dtype());
  const Array y_wins = convert_element_type(eq(y, out), out.dtype());
  return div(x_wins, add(y_wins, 1.0));
}

Array PowTangent(absl::Span<const Array> p, absl::Span<const Array> t, const Array& out) {
  const Array& x = p[0];
  const Array& y = p[1];
  Array tx;
  if (t[0].defined()) {
    // d/dx x^y = y x^(y-1); for an integer exponent 0 the derivative is 0 (x^-1 may be inf).
    const Array yf = y.dtype() == x.dtype() ? y : convert_element_type(y, x.dtype());
    Array jac = mul(yf, pow(x, sub(yf, 1.0)));
    if (IsInteger(y.dtype())) jac = select(eq(y, 0), Zeros(ShapedArray{jac.shape(), jac.dtype()}), jac);
    tx = mul(t[0], jac);
  }
  // d/dy x^y = log(x) x^y, with log(1) at x == 0.
  const Array ty = IsFloating(y.dtype()) ? ScaleTangent(t[1], mul(log(ReplaceZero(x)), out)) : Array();
  return AddTangents(BroadcastScalarTo(tx, out.shape()), BroadcastScalarTo(ty, out.shape()));
}

// Cotangent rules of the ops linear in one operand (the other a known value).
Arrays TransposeMul(absl::Span<const Array> cts, absl::Span<const TransposeArg> args, const ParamMap&) {
  if (args[0].is_linear() == args[1].is_linear()) {
    throw InternalError("[mul] transpose: exactly one operand must be linear");
  }
  if (!cts[0].defined()) return Arrays{Array(), Array()};
  const size_t lin = args[0].is_linear() ? 0 : 1;
  Arrays out(2);
  out[lin] = UnbroadcastScalar(mul(cts[0], args[1 - lin].value), args[lin].aval);
  return out;
}

Arrays TransposeDiv(absl::Span<const Array> cts, absl::Span<const TransposeArg> args, const ParamMap&) {
  if (!args[0].is_linear() || args[1].is_linear()) {
    throw InternalError("[div] transpose: only the numerator may be linear");
  }
  if (!cts[0].defined()) return Arrays{Array(), Array()};
  return Arrays{UnbroadcastScalar(div(cts[0], args[1].value), args[0].aval), Array()};
}

void RegisterBinaryRules(Registry& r) {
  using Span = absl::Span<const Array>;
  const std::string nonlinear = "not linear: reverse mode transposes the linear ops of its jvp";

  PrimitiveRules& add_rules = r.Define(kAdd);
  add_rules.jvp = ElementwiseJvp(kAdd, [](Span, Span t, const Array& out) {
    return AddTangents(BroadcastScalarTo(t[0], out.shape()), BroadcastScalarTo(t[1], out.shape()));
  });
  add_rules.transpose = [](Span cts, absl::Span<const TransposeArg> args, const ParamMap&) {
    Arrays out(2);
    for (size_t i = 0; i < 2; ++i) {
      if (args[i].is_linear()) out[i] = UnbroadcastScalar(cts[0], args[i].aval);
    }
    return out;
  };

  PrimitiveRules& sub_rules = r.Define(kSub);
  sub_rules.jvp = ElementwiseJvp(kSub, [](Span, Span t, const Array& out) {
    const Array tx = BroadcastScalarTo(t[0], out.shape()), ty = BroadcastScalarTo(t[1], out.shape());
    if (!ty.defined()) return tx;
    return tx.defined() ? sub(tx, ty) : neg(ty);
  });
  sub_rules.transpose = [](Span cts, absl::Span<const TransposeArg> args, const ParamMap&) {
    Arrays out(2);
    if (!cts[0].defined()) return out;
    if (args[0].is_linear()) out[0] = UnbroadcastScalar(cts[0], args[0].aval);
    if (args[1].is_linear()) out[1] = UnbroadcastScalar(neg(cts[0]), args[1].aval);
    return out;
  };

  PrimitiveRules& mul_rules = r.Define(kMul);
  mul_rules.jvp = ElementwiseJvp(kMul, [](Span p, Span t, const Array&) {
    return AddTangents(ScaleTangent(t[0], p[1]), ScaleTangent(t[1], p[0]));
  });
  mul_rules.transpose = TransposeMul;

  PrimitiveRules& div_rules = r.Define(kDiv);
  div_rules.jvp = ElementwiseJvp(kDiv, [](Span p, Span t, const Array& out) {
    const Array tx = t[0].defined() ? div(t[0], p[1]) : Array();
    return AddTangents(tx, ScaleTangent(t[1], neg(div(out, p[1]))));
  });
  div_rules.transpose = TransposeDiv;

  // rem(x, y) = x - trunc(x / y) * y.
  r.Define(kRem).jvp = ElementwiseJvp(kRem, [](Span p, Span t, const Array& out) {
    const Array ty = ScaleTangent(t[1], neg(TruncQuotient(p[0], p[1])));
    return AddTangents(BroadcastScalarTo(t[0], out.shape()), ty);
  });
  r.Define(kPow).jvp = ElementwiseJvp(kPow, PowTangent);
  for (Primitive p : {kMax, kMin}) {
    r.Define(p).jvp = ElementwiseJvp(p, [](Span p, Span t, const Array& out) {
      return AddTangents(ScaleTangent(t[0], BalancedWeight(p[0], p[1], out)),
                         ScaleTangent(t[1], BalancedWeight(p[1], p[0], out)));
    });
  }
  // atan2(x, y): d/dx = y / (x^2 + y^2), d/dy = -x / (x^2 + y^2).
  r.Define(kAtan2).jvp = ElementwiseJvp(kAtan2, [](Span p, Span t, const Array&) {
    const Array denom = add(mul(p[0], p[0]), mul(p[1], p[1]));
    return AddTangents(ScaleTangent(t[0], div(p[1], denom)), ScaleTangent(t[1], div(neg(p[0]), denom)));
  });
  // nextafter(x, y) moves x by one ulp towards y: the identity in x up to that (piecewise
  // constant) step, and constant in y.
  r.Define(kNextafter).jvp = ElementwiseJvp(kNextafter, [](Span, Span t, const Array& out) {
    return BroadcastScalarTo(t[0], out.shape());
  });
  // Integer and bool outputs: ElementwiseJvp gives their tangents as symbolic zeros.
  for (Primitive p : {kAnd, kOr, kXor, kShiftLeft, kShiftRightLogical, kShiftRightArithmetic}) {
    r.Define(p).jvp = ElementwiseJvp(p, [](Span, Span, const Array&) { return Array(); });
  }

  for (Primitive p : {kAdd, kSub, kMul, kDiv, kRem, kPow, kMax, kMin, kAtan2, kAnd, kOr, kXor, kShiftLeft,
                      kShiftRightLogical, kShiftRightArithmetic, kNextafter}) {
    PrimitiveRules& rules = r.Define(p);
    rules.batch = BatchElementwise(p);
    if (!rules.transpose) rules.unsupported["transpose"] = nonlinear;
  }
}

}  // namespace

void RegisterBinaryOps(Registry& r) {
  constexpr DTypeClass kNumeric = DTypeClass::kNumeric;
  constexpr DTypeClass kFloat = DTypeClass::kFloating;
  constexpr DTypeClass kInt = DTypeClass::kInteger;
  constexpr DTypeClass kIntOrBool = DTypeClass::kIntegerOrBool;

  using kernels::BinaryOp;
  DefineShared<kNumeric>(r, kAdd, BinaryOp::kAdd);
  DefineShared<kNumeric>(r, kSub, BinaryOp::kSub);
  DefineShared<kNumeric>(r, kMul, BinaryOp::kMul);
  DefineShared<kNumeric>(r, kDiv, BinaryOp::kDiv);
  DefineShared<kNumeric>(r, kRem, BinaryOp::kRem);  // float rem is C's fmod (exact)
  DefinePow(r);
  // max/min: NaN-propagating, -0 < +0 (as XLA's); logical or/and on bool.
  DefineShared<DTypeClass::kAny>(r, kMax, BinaryOp::kMax);
  DefineShared<DTypeClass::kAny>(r, kMin, BinaryOp::kMin);
  DefineShared<kFloat>(r, kAtan2, BinaryOp::kAtan2);
  DefineShared<kIntOrBool>(r, kAnd, BinaryOp::kAnd);
  DefineShared<kIntOrBool>(r, kOr, BinaryOp::kOr);
  DefineShared<kIntOrBool>(r, kXor, BinaryOp::kXor);
  DefineShared<kInt>(r, kShiftLeft, BinaryOp::kShiftLeft);
  DefineShared<kInt>(r, kShiftRightLogical, BinaryOp::kShiftRightLogical);
  DefineShared<kInt>(r, kShiftRightArithmetic, BinaryOp::kShiftRightArithmetic);
  // nextafter works on the storage type's bits (a plain loop, no widening).
  DefineBinary<kFloat>(r, kNextafter, [](const auto* a, const auto* b, auto* out, int64_t n) {
    kernels::ForChunks(n, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) out[i] = NextAfter(a[i], b[i]);
    });
  });

  RegisterBinaryRules(r);
  RegisterComparisonOps(r);

  // add_any (JAX's add_jaxvals): how the transformations sum tangents and cotangents; it
  // runs add's kernels and is linear in both operands.
  const PrimitiveRules add_rules = r.Define(kAdd);
  PrimitiveRules& add_any = r.Define(kAddAny);
  add_any.abstract_eval = add_rules.abstract_eval;
  add_any.impl = add_rules.impl;
  add_any.jvp = [](absl::Span<const Array> primals, absl::Span<const Array> tangents, const ParamMap&) {
    return JvpResult{{AddAny(primals[0], primals[1])}, {AddTangents(tangents[0], tangents[1])}};
  };
  add_any.transpose = [](absl::Span<const Array> cts, absl::Span<const TransposeArg>, const ParamMap&) {
    return Arrays{cts[0], cts[0]};
  };
  add_any.batch = BatchElementwise(kAddAny);
}

}  // namespace internal
}  // namespace jx::lax
