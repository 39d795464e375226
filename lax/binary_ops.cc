// Binary elementwise primitives: abstract eval, CPU kernels, registration. Comparisons,
// select_n and clamp live in comparison_ops.cc.
//
// Floats use Eigen array expressions (packet math); 16-bit floats compute in f32 and round
// once. Integers use plain wrapping loops with XLA's semantics where C++ has UB: division by
// zero, INT_MIN / -1, shifts by >= the bit width.
#include "jx/lax/binary_ops.h"

#include "jx/lax/rule_util.h"

#include <cmath>
#include <limits>

#include "jx/lax/kernels/dispatch.h"
#include "jx/lax/op_util.h"
#include "jx/lax/primitives.h"

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

// Registers a binary primitive over equal shapes and dtypes whose result has that dtype.
// kernel(const T* a, const T* b, T* out, n) is instantiated for the accepted types only.
template <DTypeClass kAccepted, typename Kernel>
void DefineBinary(Registry& r, Primitive p, Kernel kernel) {
  PrimitiveRules& rules = r.Define(p);
  rules.abstract_eval = [p](InAvals in, const ParamMap&) -> Avals {
    CheckArity(p.name(), in, 2);
    CheckSameDTypes(p.name(), in);
    CheckDTypeClass(p.name(), in, kAccepted);
    CheckSameShapes(p.name(), in);
    return OneAval(ElementwiseResult(in, in[0]->dtype));
  };
  rules.impl = [kernel](absl::Span<const Array> in, const ParamMap&,
                        absl::Span<const ShapedArray> out_avals) -> Arrays {
    Array out = Array::Empty(out_avals[0]);
    const int64_t n = out.size();
    if (n == 0) return OneArray(std::move(out));
    kernels::DispatchDType(in[0].dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      if constexpr (InClass(kernels::KernelDType<T>(), kAccepted)) {
        kernel(kernels::Data<T>(in[0]), kernels::Data<T>(in[1]), kernels::MutableData<T>(out), n);
      }
    });
    return OneArray(std::move(out));
  };
}

// Float kernel from an Eigen expression, integer (and bool) kernel from a scalar function.
template <typename Expr, typename IntFn>
auto Numeric2(Expr expr, IntFn int_fn, int64_t float_grain = kernels::kParallelGrain) {
  return [expr, int_fn, float_grain](const auto* a, const auto* b, auto* out, int64_t n) {
    using T = Elem<decltype(a)>;
    if constexpr (kIsFloat<T>) {
      kernels::BinaryMap(a, b, out, n, expr, float_grain);
    } else {
      kernels::MapLoop2(a, b, out, n, [&](T x, T y) { return static_cast<T>(int_fn(x, y)); });
    }
  };
}

// A float-only kernel from a scalar function (no packet version exists).
template <typename F>
auto ScalarFloat2(F f) {
  return [f](const auto* a, const auto* b, auto* out, int64_t n) {
    kernels::MapLoop2(a, b, out, n, f, kExpensiveGrain);
  };
}

// Integer operations with XLA's results where C++ has undefined behaviour.
template <typename T>
T WrapAdd(T a, T b) { return static_cast<T>(static_cast<WrapType<T>>(a) + static_cast<WrapType<T>>(b)); }
template <typename T>
T WrapSub(T a, T b) { return static_cast<T>(static_cast<WrapType<T>>(a) - static_cast<WrapType<T>>(b)); }
template <typename T>
T WrapMul(T a, T b) { return static_cast<T>(static_cast<WrapType<T>>(a) * static_cast<WrapType<T>>(b)); }

// x / 0 = -1 (all ones); INT_MIN / -1 = INT_MIN; otherwise rounds toward zero.
template <typename T>
T IntDiv(T x, T y) {
  if (y == 0) return static_cast<T>(~T(0));
  if constexpr (std::is_signed_v<T>) {
    if (x == std::numeric_limits<T>::min() && y == T(-1)) return x;
  }
  return static_cast<T>(x / y);
}
// x % 0 = x; INT_MIN % -1 = 0; otherwise the sign of the dividend.
template <typename T>
T IntRem(T x, T y) {
  if (y == 0) return x;
  if constexpr (std::is_signed_v<T>) {
    if (y == T(-1)) return T(0);
  }
  return static_cast<T>(x % y);
}

// XLA's integer pow: square-and-multiply over the low 6 exponent bits; a negative exponent
// gives 1 for base 1 and 0 otherwise.
template <typename T>
T IntPow(T base, T exponent) {
  using W = WrapType<T>;
  W acc = 1, b = static_cast<W>(base);
  auto e = static_cast<std::make_unsigned_t<T>>(exponent);
  for (int i = 0; i < 6; ++i) {
    acc = (e & 1) ? static_cast<W>(acc * b) : acc;
    b = static_cast<W>(b * b);
    e >>= 1;
  }
  const bool negative = static_cast<std::make_signed_t<T>>(exponent) < 0;
  return negative ? static_cast<T>(base == T(1)) : static_cast<T>(acc);
}

// Shift amounts are read as unsigned: negative or >= the bit width saturate.
template <typename T>
T ShiftLeft(T x, T y) {
  constexpr auto kBits = static_cast<std::make_unsigned_t<T>>(sizeof(T) * 8);
  const auto s = static_cast<std::make_unsigned_t<T>>(y);
  return s >= kBits ? T(0) : static_cast<T>(static_cast<WrapType<T>>(x) << s);
}
template <typename T>
T ShiftRightLogical(T x, T y) {
  using U = std::make_unsigned_t<T>;
  constexpr auto kBits = static_cast<U>(sizeof(T) * 8);
  const auto s = static_cast<U>(y);
  return s >= kBits ? T(0) : static_cast<T>(static_cast<U>(x) >> s);
}
template <typename T>
T ShiftRightArithmetic(T x, T y) {
  using U = std::make_unsigned_t<T>;
  using S = std::make_signed_t<T>;
  constexpr auto kBits = static_cast<U>(sizeof(T) * 8);
  const auto s = static_cast<U>(y);
  const auto sx = static_cast<S>(x);  // unsigned inputs shift their bits as signed, as XLA
  return static_cast<T>(s >= kBits ? S(sx < 0 ? -1 : 0) : static_cast<S>(sx >> s));
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

// pow: float^float (Eigen's vectorized pow), float^int (exponent converted to the float type,
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
    CheckSameShapes("pow", in);
    return OneAval(ElementwiseResult(in, x));
  };
  rules.impl = [](absl::Span<const Array> in, const ParamMap&, absl::Span<const ShapedArray> out_avals) -> Arrays {
    Array out = Array::Empty(out_avals[0]);
    const int64_t n = out.size();
    if (n == 0) return OneArray(std::move(out));
    kernels::DispatchDType(in[0].dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      if constexpr (kIsFloat<T>) {
        using C = ComputeType<T>;
        const T* a = kernels::Data<T>(in[0]);
        T* o = kernels::MutableData<T>(out);
        if (in[1].dtype() == in[0].dtype()) {
          kernels::BinaryMap(a, kernels::Data<T>(in[1]), o, n,
                             [](const auto& x, const auto& y) { return x.pow(y); }, kExpensiveGrain);
        } else {
          kernels::DispatchDType(in[1].dtype(), [&](auto etag) {
            using E = typename decltype(etag)::type;
            if constexpr (kernels::kIsInt<E>) {
              kernels::BinaryBlocks(a, kernels::Data<E>(in[1]), o, n, [](const C* x, const E* y, C* z, int64_t m) {
                alignas(64) C ybuf[1024];
                for (int64_t b = 0; b < m; b += 1024) {
                  const int64_t k = std::min<int64_t>(1024, m - b);
                  for (int64_t i = 0; i < k; ++i) ybuf[i] = static_cast<C>(y[b + i]);
                  kernels::ArrayMap<C>(z + b, k) =
                      kernels::ConstArrayMap<C>(x + b, k).pow(kernels::ConstArrayMap<C>(ybuf, k));
                }
              }, kExpensiveGrain);
            }
          });
        }
      } else if constexpr (kernels::kIsInt<T>) {
        kernels::MapLoop2(kernels::Data<T>(in[0]), kernels::Data<T>(in[1]), kernels::MutableData<T>(out), n,
                          [](T x, T y) { return IntPow(x, y); });
      }
    });
    return OneArray(std::move(out));
  };
}

}  // namespace

void RegisterBinaryOps(Registry& r) {
  constexpr DTypeClass kNumeric = DTypeClass::kNumeric;
  constexpr DTypeClass kFloat = DTypeClass::kFloating;
  constexpr DTypeClass kInt = DTypeClass::kInteger;
  constexpr DTypeClass kIntOrBool = DTypeClass::kIntegerOrBool;

  DefineBinary<kNumeric>(r, kAdd, Numeric2([](const auto& a, const auto& b) { return a + b; },
                                           [](auto a, auto b) { return WrapAdd(a, b); }));
  DefineBinary<kNumeric>(r, kSub, Numeric2([](const auto& a, const auto& b) { return a - b; },
                                           [](auto a, auto b) { return WrapSub(a, b); }));
  DefineBinary<kNumeric>(r, kMul, Numeric2([](const auto& a, const auto& b) { return a * b; },
                                           [](auto a, auto b) { return WrapMul(a, b); }));
  DefineBinary<kNumeric>(r, kDiv, Numeric2([](const auto& a, const auto& b) { return a / b; },
                                           [](auto a, auto b) { return IntDiv(a, b); }));
  // Float rem is C's fmod (exact; scalar: Eigen has no packet fmod).
  DefineBinary<kNumeric>(r, kRem, [](const auto* a, const auto* b, auto* out, int64_t n) {
    using T = Elem<decltype(a)>;
    if constexpr (kIsFloat<T>) {
      kernels::MapLoop2(a, b, out, n, [](auto x, auto y) { return std::fmod(x, y); }, kExpensiveGrain);
    } else {
      kernels::MapLoop2(a, b, out, n, [](T x, T y) { return IntRem(x, y); });
    }
  });
  DefinePow(r);

  // max/min: NaN-propagating, -0 < +0 (as XLA's); logical or/and on bool.
  DefineBinary<DTypeClass::kAny>(r, kMax, [](const auto* a, const auto* b, auto* out, int64_t n) {
    using T = Elem<decltype(a)>;
    if constexpr (kIsFloat<T>) {
      kernels::BinaryMap(a, b, out, n, [](const auto& x, const auto& y) {
        return x.binaryExpr(y, kernels::MaxFloatOp<ComputeType<T>>());
      });
    } else {
      kernels::MapLoop2(a, b, out, n, [](T x, T y) { return x < y ? y : x; });
    }
  });
  DefineBinary<DTypeClass::kAny>(r, kMin, [](const auto* a, const auto* b, auto* out, int64_t n) {
    using T = Elem<decltype(a)>;
    if constexpr (kIsFloat<T>) {
      kernels::BinaryMap(a, b, out, n, [](const auto& x, const auto& y) {
        return x.binaryExpr(y, kernels::MinFloatOp<ComputeType<T>>());
      });
    } else {
      kernels::MapLoop2(a, b, out, n, [](T x, T y) { return y < x ? y : x; });
    }
  });
  // Scalar: Eigen 3.4 has no packet atan2.
  DefineBinary<kFloat>(r, kAtan2, ScalarFloat2([](auto y, auto x) { return std::atan2(y, x); }));

  DefineBinary<kIntOrBool>(r, kAnd, [](const auto* a, const auto* b, auto* out, int64_t n) {
    using T = Elem<decltype(a)>;
    kernels::MapLoop2(a, b, out, n, [](T x, T y) { return static_cast<T>(x & y); });
  });
  DefineBinary<kIntOrBool>(r, kOr, [](const auto* a, const auto* b, auto* out, int64_t n) {
    using T = Elem<decltype(a)>;
    kernels::MapLoop2(a, b, out, n, [](T x, T y) { return static_cast<T>(x | y); });
  });
  DefineBinary<kIntOrBool>(r, kXor, [](const auto* a, const auto* b, auto* out, int64_t n) {
    using T = Elem<decltype(a)>;
    kernels::MapLoop2(a, b, out, n, [](T x, T y) { return static_cast<T>(x ^ y); });
  });
  DefineBinary<kInt>(r, kShiftLeft, [](const auto* a, const auto* b, auto* out, int64_t n) {
    kernels::MapLoop2(a, b, out, n, [](auto x, auto y) { return ShiftLeft(x, y); });
  });
  DefineBinary<kInt>(r, kShiftRightLogical, [](const auto* a, const auto* b, auto* out, int64_t n) {
    kernels::MapLoop2(a, b, out, n, [](auto x, auto y) { return ShiftRightLogical(x, y); });
  });
  DefineBinary<kInt>(r, kShiftRightArithmetic, [](const auto* a, const auto* b, auto* out, int64_t n) {
    kernels::MapLoop2(a, b, out, n, [](auto x, auto y) { return ShiftRightArithmetic(x, y); });
  });
  // nextafter works on the storage type's bits (a plain loop, no widening).
  DefineBinary<kFloat>(r, kNextafter, [](const auto* a, const auto* b, auto* out, int64_t n) {
    kernels::ForChunks(n, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) out[i] = NextAfter(a[i], b[i]);
    });
  });

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
