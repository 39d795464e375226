// Unary elementwise primitives: abstract eval, CPU kernels, registration.
//
// Float kernels of the ops the CPU backend also runs natively (neg, abs, sign, floor, ceil,
// round, exp, exp2, log, log1p, expm1, tanh, logistic, sin, cos, tan, sqrt, rsqrt, cbrt, erf,
// erf_inv) come from the shared elementwise library (kernels/elementwise.h), so eager and jit
// give the same bits and no value depends on its position in the array. The rest (inverse
// trig and hyperbolic, erfc, lgamma, digamma: expansions under jit) are scalar loops. Integer kernels are plain wrapping loops (no signed overflow UB).
#include "jx/lax/unary_ops.h"

#include <cmath>
#include <limits>

#include <unsupported/Eigen/SpecialFunctions>

#include "jx/lax/kernels/dispatch.h"
#include "jx/lax/kernels/elementwise.h"
#include "jx/lax/op_util.h"
#include "jx/lax/primitives.h"
#include "jx/lax/unary_rules.h"

namespace jx::lax {

using internal::BindOp1;

Array neg(const Array& x) { return BindOp1(kNeg, {x}); }
Array sign(const Array& x) { return BindOp1(kSign, {x}); }
Array floor(const Array& x) { return BindOp1(kFloor, {x}); }
Array ceil(const Array& x) { return BindOp1(kCeil, {x}); }
Array round(const Array& x, int rounding_method) {
  return BindOp1(kRound, {x}, ParamMap{{"rounding_method", rounding_method}});
}
Array is_finite(const Array& x) { return BindOp1(kIsFinite, {x}); }
Array exp(const Array& x) { return BindOp1(kExp, {x}); }
Array exp2(const Array& x) { return BindOp1(kExp2, {x}); }
Array log(const Array& x) { return BindOp1(kLog, {x}); }
Array log1p(const Array& x) { return BindOp1(kLog1p, {x}); }
Array expm1(const Array& x) { return BindOp1(kExpm1, {x}); }
Array tanh(const Array& x) { return BindOp1(kTanh, {x}); }
Array logistic(const Array& x) { return BindOp1(kLogistic, {x}); }
Array sin(const Array& x) { return BindOp1(kSin, {x}); }
Array cos(const Array& x) { return BindOp1(kCos, {x}); }
Array tan(const Array& x) { return BindOp1(kTan, {x}); }
Array asin(const Array& x) { return BindOp1(kAsin, {x}); }
Array acos(const Array& x) { return BindOp1(kAcos, {x}); }
Array atan(const Array& x) { return BindOp1(kAtan, {x}); }
Array sinh(const Array& x) { return BindOp1(kSinh, {x}); }
Array cosh(const Array& x) { return BindOp1(kCosh, {x}); }
Array asinh(const Array& x) { return BindOp1(kAsinh, {x}); }
Array acosh(const Array& x) { return BindOp1(kAcosh, {x}); }
Array atanh(const Array& x) { return BindOp1(kAtanh, {x}); }
Array sqrt(const Array& x) { return BindOp1(kSqrt, {x}); }
Array rsqrt(const Array& x) { return BindOp1(kRsqrt, {x}); }
Array cbrt(const Array& x) { return BindOp1(kCbrt, {x}); }
Array abs(const Array& x) { return BindOp1(kAbs, {x}); }
Array erf(const Array& x) { return BindOp1(kErf, {x}); }
Array erfc(const Array& x) { return BindOp1(kErfc, {x}); }
Array erf_inv(const Array& x) { return BindOp1(kErfInv, {x}); }
Array lgamma(const Array& x) { return BindOp1(kLgamma, {x}); }
Array digamma(const Array& x) { return BindOp1(kDigamma, {x}); }
Array integer_pow(const Array& x, int64_t y) { return BindOp1(kIntegerPow, {x}, ParamMap{{"y", y}}); }
Array square(const Array& x) { return BindOp1(kSquare, {x}); }
Array reciprocal(const Array& x) { return BindOp1(kReciprocal, {x}); }
Array bitwise_not(const Array& x) { return BindOp1(kNot, {x}); }

namespace internal {
namespace {

using kernels::ComputeType;
using kernels::kExpensiveGrain;
using kernels::kIsFloat;
using kernels::kIsHalf;
using kernels::WrapType;

// Scalar integer helpers: wrapping arithmetic in the unsigned type of the same width.
template <typename T>
T WrapNeg(T x) { return static_cast<T>(WrapType<T>(0) - static_cast<WrapType<T>>(x)); }
template <typename T>
T WrapMul(T a, T b) { return static_cast<T>(static_cast<WrapType<T>>(a) * static_cast<WrapType<T>>(b)); }

// A kernel: kernel(const T* in, T* out, n, params) for the accepted element types.
using ParamCheck = void (*)(std::string_view op, const ShapedArray& x, const ParamMap& params);

// Registers a unary primitive whose output aval is the input's (dtype and weak type kept).
template <DTypeClass kAccepted, typename Kernel>
void DefineUnary(Registry& r, Primitive p, Kernel kernel, ParamCheck check = nullptr) {
  PrimitiveRules& rules = r.Define(p);
  rules.abstract_eval = [p, check](InAvals in, const ParamMap& params) -> Avals {
    CheckArity(p.name(), in, 1);
    CheckDTypeClass(p.name(), in, kAccepted);
    if (check != nullptr) check(p.name(), *in[0], params);
    return OneAval(*in[0]);
  };
  rules.impl = [kernel](absl::Span<const Array> in, const ParamMap& params,
                        absl::Span<const ShapedArray> out_avals) -> Arrays {
    Array out = Array::Empty(out_avals[0]);
    const int64_t n = out.size();
    if (n == 0) return OneArray(std::move(out));
    kernels::DispatchDType(in[0].dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      if constexpr (InClass(kernels::KernelDType<T>(), kAccepted)) {
        kernel(kernels::Data<T>(in[0]), kernels::MutableData<T>(out), n, params);
      }
    });
    return OneArray(std::move(out));
  };
}

// A float-only kernel applying a scalar function per element (no packet version exists).
template <typename F>
auto Scalar1(F f) {
  return [f](const auto* in, auto* out, int64_t n, const ParamMap&) {
    kernels::UnaryMap(in, out, n, [f](const auto& x) { return x.unaryExpr(f); }, kExpensiveGrain);
  };
}

// out = op(in) by the shared elementwise library (the CPU backend's kernel for the op).
void RunShared(kernels::UnaryOp op, DType dtype, const void* in, void* out, int64_t n) {
  const int64_t esize = ItemSize(dtype);
  const kernels::StoreMode store =
      kernels::UseStreamingStores(n * esize) ? kernels::StoreMode::kStreaming : kernels::StoreMode::kNormal;
  kernels::RunElementwise(kernels::FindUnaryFn(op, dtype, store), 1, &in, 0, esize, out, esize, n,
                          kernels::IsExpensive(op) ? kExpensiveGrain : kernels::kParallelGrain);
}

// A kernel from the shared library (every dtype the op's library kernel takes).
auto Shared1(kernels::UnaryOp op) {
  return [op](const auto* in, auto* out, int64_t n, const ParamMap&) {
    using T = std::remove_cv_t<std::remove_pointer_t<decltype(in)>>;
    RunShared(op, kernels::KernelDType<T>(), in, out, n);
  };
}

// T itself for integers, a placeholder for floats (keeps make_unsigned well-formed).
template <typename T>
using WrapInt = std::conditional_t<kIsFloat<T>, int, T>;

// x^y by repeated squaring over L1-sized blocks (each step one vectorized pass), in the
// compute type: f32 for 16-bit floats, wrapping for integers. Negative y (floats only, checked
// by abstract eval) takes the reciprocal, as JAX's integer_pow.
template <typename T>
void IntegerPowKernel(const T* in, T* out, int64_t n, int64_t y) {
  using C = ComputeType<T>;
  using W = std::conditional_t<kIsFloat<T>, C, WrapType<WrapInt<T>>>;
  const uint64_t e = y < 0 ? uint64_t(0) - static_cast<uint64_t>(y) : static_cast<uint64_t>(y);
  kernels::UnaryBlocks(in, out, n, [&](const C* x, C* o, int64_t m) {
    constexpr int64_t kBlock = 1024;
    alignas(64) W acc[kBlock];
    alignas(64) W base[kBlock];
    for (int64_t b = 0; b < m; b += kBlock) {
      const int64_t k = std::min(kBlock, m - b);
      for (int64_t i = 0; i < k; ++i) {
        acc[i] = W(1);
        base[i] = static_cast<W>(x[b + i]);
      }
      for (uint64_t rest = e; rest != 0; rest >>= 1) {
        if (rest & 1) {
          for (int64_t i = 0; i < k; ++i) acc[i] = static_cast<W>(acc[i] * base[i]);
        }
        if (rest > 1) {
          for (int64_t i = 0; i < k; ++i) base[i] = static_cast<W>(base[i] * base[i]);
        }
      }
      if constexpr (kIsFloat<T>) {
        if (y < 0) {
          for (int64_t i = 0; i < k; ++i) acc[i] = W(1) / acc[i];
        }
      }
      for (int64_t i = 0; i < k; ++i) o[b + i] = static_cast<C>(acc[i]);
    }
  });
}

void CheckRoundingMethod(std::string_view op, const ShapedArray& x, const ParamMap& params) {
  const int64_t m = params.GetInt("rounding_method");
  if (m != 0 && m != 1) {
    ThrowOpError<ValueError>(op, "rounding_method must be 0 (away from zero) or 1 (to nearest even), got ", m,
                             " for ", x.str());
  }
}

void CheckIntegerPow(std::string_view op, const ShapedArray& x, const ParamMap& params) {
  const int64_t y = params.GetInt("y");
  if (y < 0 && !IsFloating(x.dtype)) {
    ThrowOpError<TypeError>(op, "integers cannot be raised to negative powers, got integer_pow(", x.str(), ", ", y,
                            ")");
  }
}

// is_finite: f -> bool, on the bits (the kernel library's, as the CPU backend's).
void DefineIsFinite(Registry& r) {
  PrimitiveRules& rules = r.Define(kIsFinite);
  rules.abstract_eval = [](InAvals in, const ParamMap&) -> Avals {
    CheckArity("is_finite", in, 1);
    CheckDTypeClass("is_finite", in, DTypeClass::kFloating);
    return OneAval(ShapedArray{in[0]->shape, bool_, false});
  };
  rules.impl = [](absl::Span<const Array> in, const ParamMap&, absl::Span<const ShapedArray> out_avals) -> Arrays {
    Array out = Array::Empty(out_avals[0]);
    const void* x = in[0].data();
    kernels::RunElementwise(kernels::FindIsFiniteFn(in[0].dtype()), 1, &x, 0, ItemSize(in[0].dtype()),
                            out.mutable_data(), 1, out.size(), kernels::kParallelGrain);
    return OneArray(std::move(out));
  };
}

}  // namespace

void RegisterUnaryOps(Registry& r) {
  constexpr DTypeClass kFloat = DTypeClass::kFloating;
  constexpr DTypeClass kNumeric = DTypeClass::kNumeric;

  // Arithmetic (integers wrap).
  using kernels::UnaryOp;
  DefineUnary<kNumeric>(r, kNeg, Shared1(UnaryOp::kNeg));  // integers wrap
  DefineUnary<kNumeric>(r, kSign, Shared1(UnaryOp::kSign));
  DefineUnary<DTypeClass::kSignedNumeric>(r, kAbs, Shared1(UnaryOp::kAbs));  // abs(INT_MIN) wraps, as XLA
  // square is x * x and reciprocal 1 / x, as they lower (IEEE ops: any loop gives these bits).
  DefineUnary<kNumeric>(r, kSquare, [](const auto* in, auto* out, int64_t n, const ParamMap&) {
    using T = std::remove_cv_t<std::remove_pointer_t<decltype(in)>>;
    kernels::MapLoop1(in, out, n, [](auto x) {
      if constexpr (kIsFloat<T>) {
        return x * x;
      } else {
        return WrapMul(x, x);
      }
    });
  });
  DefineUnary<kNumeric>(r, kIntegerPow, [](const auto* in, auto* out, int64_t n, const ParamMap& params) {
    IntegerPowKernel(in, out, n, params.GetInt("y"));
  }, CheckIntegerPow);
  DefineUnary<kFloat>(r, kReciprocal, [](const auto* in, auto* out, int64_t n, const ParamMap&) {
    kernels::MapLoop1(in, out, n, [](auto x) { return decltype(x)(1) / x; });
  });
  DefineUnary<DTypeClass::kIntegerOrBool>(r, kNot, Shared1(UnaryOp::kNot));

  // Rounding.
  DefineUnary<kFloat>(r, kFloor, Shared1(UnaryOp::kFloor));
  DefineUnary<kFloat>(r, kCeil, Shared1(UnaryOp::kCeil));
  DefineUnary<kFloat>(r, kRound, [](const auto* in, auto* out, int64_t n, const ParamMap& params) {
    using T = std::remove_cv_t<std::remove_pointer_t<decltype(in)>>;
    RunShared(params.GetInt("rounding_method") == 0 ? UnaryOp::kRoundAwayFromZero : UnaryOp::kRoundNearestEven,
              kernels::KernelDType<T>(), in, out, n);
  }, CheckRoundingMethod);
  DefineIsFinite(r);

  // Exponentials and logarithms.
  DefineUnary<kFloat>(r, kExp, Shared1(UnaryOp::kExp));
  // exp2(x) = pow(2, x), as it lowers: the shared pow with a scalar base.
  DefineUnary<kFloat>(r, kExp2, [](const auto* in, auto* out, int64_t n, const ParamMap&) {
    using T = std::remove_cv_t<std::remove_pointer_t<decltype(in)>>;
    const T two(2.0f);
    const void* operands[] = {&two, in};
    const DType dtype = kernels::KernelDType<T>();
    kernels::RunElementwise(kernels::FindBinaryFn(kernels::BinaryOp::kPow, dtype, /*scalar_operands=*/1), 2, operands,
                            1, ItemSize(dtype), out, ItemSize(dtype), n, kExpensiveGrain);
  });
  DefineUnary<kFloat>(r, kLog, Shared1(UnaryOp::kLog));
  DefineUnary<kFloat>(r, kLog1p, Shared1(UnaryOp::kLog1p));
  DefineUnary<kFloat>(r, kExpm1, Shared1(UnaryOp::kExpm1));
  DefineUnary<kFloat>(r, kTanh, Shared1(UnaryOp::kTanh));
  DefineUnary<kFloat>(r, kLogistic, Shared1(UnaryOp::kLogistic));
  DefineUnary<kFloat>(r, kSqrt, Shared1(UnaryOp::kSqrt));
  DefineUnary<kFloat>(r, kRsqrt, Shared1(UnaryOp::kRsqrt));
  DefineUnary<kFloat>(r, kCbrt, Shared1(UnaryOp::kCbrt));

  // Trigonometric and hyperbolic. Scalar (libm) where Eigen 3.4 has no packet version: tan,
  // atan, asin, acos, sinh, cosh, asinh, acosh, atanh.
  DefineUnary<kFloat>(r, kSin, Shared1(UnaryOp::kSin));
  DefineUnary<kFloat>(r, kCos, Shared1(UnaryOp::kCos));
  DefineUnary<kFloat>(r, kTan, Shared1(UnaryOp::kTan));
  DefineUnary<kFloat>(r, kAsin, Scalar1([](auto v) { return std::asin(v); }));
  DefineUnary<kFloat>(r, kAcos, Scalar1([](auto v) { return std::acos(v); }));
  DefineUnary<kFloat>(r, kAtan, Shared1(UnaryOp::kAtan));  // atan2(x, 1), as it lowers
  DefineUnary<kFloat>(r, kSinh, Scalar1([](auto v) { return std::sinh(v); }));
  DefineUnary<kFloat>(r, kCosh, Scalar1([](auto v) { return std::cosh(v); }));
  DefineUnary<kFloat>(r, kAsinh, Scalar1([](auto v) { return std::asinh(v); }));
  DefineUnary<kFloat>(r, kAcosh, Scalar1([](auto v) { return std::acosh(v); }));
  DefineUnary<kFloat>(r, kAtanh, Scalar1([](auto v) { return std::atanh(v); }));

  // Special functions. erf vectorizes for f32; erfc, lgamma and digamma are scalar (lgamma_r:
  // std::lgamma writes the global signgam, a data race across chunks); f32 lgamma and digamma
  // are evaluated in f64 so that cancellation near their zeros stays below f32 rounding.
  DefineUnary<kFloat>(r, kErf, Shared1(UnaryOp::kErf));
  DefineUnary<kFloat>(r, kErfc, Scalar1([](auto v) { return std::erfc(v); }));
  DefineUnary<kFloat>(r, kErfInv, Shared1(UnaryOp::kErfInv));
  DefineUnary<kFloat>(r, kLgamma, Scalar1([](auto v) {
    int sign;
    return static_cast<decltype(v)>(::lgamma_r(static_cast<double>(v), &sign));
  }));
  DefineUnary<kFloat>(r, kDigamma, Scalar1([](auto v) {
    return static_cast<decltype(v)>(Eigen::numext::digamma(static_cast<double>(v)));
  }));

  RegisterUnaryRules(r);
}

}  // namespace internal
}  // namespace jx::lax
