// Unary elementwise primitives: abstract eval, CPU kernels (Eigen packet math over TBB
// chunks), registration.
//
// Float kernels are Eigen array expressions: exp, log, log1p, expm1, tanh, logistic, sin, cos,
// sqrt, rsqrt, erf, floor/ceil/round vectorize with Eigen's packet math (for f64 some fall back
// to Eigen's scalar path: sin, cos, tanh, erf, log1p, expm1). Ops Eigen has no packet version
// for (tan, inverse trig and hyperbolic, cbrt, erfc, lgamma, digamma, f64 erf_inv) run a
// scalar loop, noted at each. Integer kernels are plain wrapping loops (no signed overflow UB).
#include "jx/lax/unary_ops.h"

#include <cmath>
#include <limits>

#include <unsupported/Eigen/SpecialFunctions>

#include "jx/lax/kernels/dispatch.h"
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

// ---- Packet functors for what Eigen lacks or gets wrong (scalar operator() serves the tail).

// exp for f32: Eigen's pexp overflows to inf from x ~ 88.4 although exp(x) < FLT_MAX up to
// 88.72; there the result is computed as exp(x/2)^2.
struct ExpF32Op {
  float operator()(float x) const { return std::exp(x); }
  template <typename P>
  P packetOp(const P& x) const {
    using namespace Eigen::internal;
    P r = pexp(x);
    const P big = pcmp_lt(pset1<P>(88.0f), x);
    if (EIGEN_PREDICT_FALSE(predux_any(big))) {
      const P h = pexp(pmul(x, pset1<P>(0.5f)));
      r = pselect(big, pmul(h, h), r);
    }
    return r;
  }
};

// sqrt, correctly rounded: Eigen's AVX/AVX-512 psqrt under EIGEN_FAST_MATH is an rsqrt
// estimate plus one Newton step (not correctly rounded, flushes denormals, sqrt(inf) = NaN),
// so the packet path calls the hardware square root directly.
#if defined(EIGEN_VECTORIZE_SSE2)
inline constexpr bool kHasExactPacketSqrt = true;
inline Eigen::internal::Packet4f ExactSqrt(const Eigen::internal::Packet4f& x) { return _mm_sqrt_ps(x); }
inline Eigen::internal::Packet2d ExactSqrt(const Eigen::internal::Packet2d& x) { return _mm_sqrt_pd(x); }
#else
inline constexpr bool kHasExactPacketSqrt = false;
#endif
#if defined(EIGEN_VECTORIZE_AVX)
inline Eigen::internal::Packet8f ExactSqrt(const Eigen::internal::Packet8f& x) { return _mm256_sqrt_ps(x); }
inline Eigen::internal::Packet4d ExactSqrt(const Eigen::internal::Packet4d& x) { return _mm256_sqrt_pd(x); }
#endif
#if defined(EIGEN_VECTORIZE_AVX512)
inline Eigen::internal::Packet16f ExactSqrt(const Eigen::internal::Packet16f& x) { return _mm512_sqrt_ps(x); }
inline Eigen::internal::Packet8d ExactSqrt(const Eigen::internal::Packet8d& x) { return _mm512_sqrt_pd(x); }
#endif

struct SqrtOp {
  template <typename S>
  S operator()(S x) const { return std::sqrt(x); }
  template <typename P>
  P packetOp(const P& x) const { return ExactSqrt(x); }
};

// exp2(x) = 2^n * exp((x - n) ln 2) with n = rint(x): the reduced argument is exact, so the
// error stays ~1 ulp for large |x| (exp(x * ln2) loses |x| ulps). n is clamped past the
// overflow/underflow range so that +-inf map to inf / 0.
template <typename S>
struct Exp2Op {
  S operator()(S x) const { return std::exp2(x); }
  template <typename P>
  P packetOp(const P& x) const {
    using namespace Eigen::internal;
    const P limit = pset1<P>(S(std::is_same_v<S, float> ? 200 : 1200));
    const P n = pmin(pmax(print(x), pnegate(limit)), limit);
    const P r = pexp(pmul(psub(x, n), pset1<P>(S(0.6931471805599453094172321))));
    const P out = pldexp(r, n);
    return pselect(pcmp_eq(x, x), out, x);  // NaN in, NaN out
  }
};

// XLA's sign: -1/+1 with the input's sign, +-0 and NaN unchanged.
template <typename S>
struct SignFloatOp {
  S operator()(S x) const { return (x != x || x == S(0)) ? x : std::copysign(S(1), x); }
  template <typename P>
  P packetOp(const P& x) const {
    using namespace Eigen::internal;
    const P sign_bit = pset1<P>(S(-0.0));
    const P one_signed = por(pand(x, sign_bit), pset1<P>(S(1)));
    // keep x where x == 0 or x is NaN (x != x)
    const P keep = por(pcmp_eq(x, pzero(x)), pandnot(ptrue(x), pcmp_eq(x, x)));
    return pselect(keep, x, one_signed);
  }
};

// erf_inv for f32: Giles' single-precision approximation ("Approximating the erfinv
// function", GPU Computing Gems), as XLA uses; |x| == 1 gives +-inf, |x| > 1 NaN.
inline float ErfInvF32Scalar(float x) {
  float w = -std::log((1.0f - x) * (1.0f + x));
  float p;
  if (w < 5.0f) {
    w -= 2.5f;
    p = 2.81022636e-08f;
    p = 3.43273939e-07f + p * w;
    p = -3.5233877e-06f + p * w;
    p = -4.39150654e-06f + p * w;
    p = 0.00021858087f + p * w;
    p = -0.00125372503f + p * w;
    p = -0.00417768164f + p * w;
    p = 0.246640727f + p * w;
    p = 1.50140941f + p * w;
  } else {
    w = std::sqrt(w) - 3.0f;
    p = -0.000200214257f;
    p = 0.000100950558f + p * w;
    p = 0.00134934322f + p * w;
    p = -0.00367342844f + p * w;
    p = 0.00573950773f + p * w;
    p = -0.0076224613f + p * w;
    p = 0.00943887047f + p * w;
    p = 1.00167406f + p * w;
    p = 2.83297682f + p * w;
  }
  if (std::fabs(x) == 1.0f) return x * std::numeric_limits<float>::infinity();
  return p * x;
}

struct ErfInvF32Op {
  float operator()(float x) const { return ErfInvF32Scalar(x); }
  template <typename P>
  P packetOp(const P& x) const {
    using namespace Eigen::internal;
    const P one = pset1<P>(1.0f);
    const P w = pnegate(plog(pmul(psub(one, x), padd(one, x))));
    // Central branch (w < 5).
    const P wc = psub(w, pset1<P>(2.5f));
    P pc = pset1<P>(2.81022636e-08f);
    pc = pmadd(pc, wc, pset1<P>(3.43273939e-07f));
    pc = pmadd(pc, wc, pset1<P>(-3.5233877e-06f));
    pc = pmadd(pc, wc, pset1<P>(-4.39150654e-06f));
    pc = pmadd(pc, wc, pset1<P>(0.00021858087f));
    pc = pmadd(pc, wc, pset1<P>(-0.00125372503f));
    pc = pmadd(pc, wc, pset1<P>(-0.00417768164f));
    pc = pmadd(pc, wc, pset1<P>(0.246640727f));
    pc = pmadd(pc, wc, pset1<P>(1.50140941f));
    // Tail branch.
    const P wt = psub(ExactSqrt(w), pset1<P>(3.0f));
    P pt = pset1<P>(-0.000200214257f);
    pt = pmadd(pt, wt, pset1<P>(0.000100950558f));
    pt = pmadd(pt, wt, pset1<P>(0.00134934322f));
    pt = pmadd(pt, wt, pset1<P>(-0.00367342844f));
    pt = pmadd(pt, wt, pset1<P>(0.00573950773f));
    pt = pmadd(pt, wt, pset1<P>(-0.0076224613f));
    pt = pmadd(pt, wt, pset1<P>(0.00943887047f));
    pt = pmadd(pt, wt, pset1<P>(1.00167406f));
    pt = pmadd(pt, wt, pset1<P>(2.83297682f));
    const P p = pselect(pcmp_lt(w, pset1<P>(5.0f)), pc, pt);
    const P inf = pset1<P>(std::numeric_limits<float>::infinity());
    return pselect(pcmp_eq(pabs(x), one), pmul(x, inf), pmul(p, x));
  }
};

// erf_inv for f64 (scalar: Eigen has no f64 packet erf): for |x| >= 0.5 the exact identity
// erfinv(x) = -ndtri((1 - |x|) / 2) / sqrt(2) (1 - |x| is exact there); below, Giles' central
// polynomial refined by two Newton steps on erf, which converge quadratically from ~1e-7.
inline double ErfInvF64(double x) {
  const double a = std::fabs(x);
  if (!(a <= 1.0)) return std::numeric_limits<double>::quiet_NaN();
  if (a == 1.0) return x * std::numeric_limits<double>::infinity();
  double y;
  if (a >= 0.5) {
    y = -Eigen::numext::ndtri((1.0 - a) * 0.5) * 0.70710678118654752440;
  } else {
    double w = -std::log((1.0 - a) * (1.0 + a)) - 2.5;
    double p = 2.81022636e-08;
    p = 3.43273939e-07 + p * w;
    p = -3.5233877e-06 + p * w;
    p = -4.39150654e-06 + p * w;
    p = 0.00021858087 + p * w;
    p = -0.00125372503 + p * w;
    p = -0.00417768164 + p * w;
    p = 0.246640727 + p * w;
    p = 1.50140941 + p * w;
    y = p * a;
    for (int i = 0; i < 2; ++i) {
      y -= (std::erf(y) - a) / (1.12837916709551257390 * std::exp(-y * y));
    }
  }
  return std::copysign(y, x);
}

}  // namespace
}  // namespace internal
}  // namespace jx::lax

namespace Eigen::internal {
template <>
struct functor_traits<jx::lax::internal::ExpF32Op> {
  enum { Cost = 20, PacketAccess = packet_traits<float>::HasExp };
};
template <typename S>
struct functor_traits<jx::lax::internal::Exp2Op<S>> {
  enum { Cost = 25, PacketAccess = packet_traits<S>::HasExp && packet_traits<S>::HasRint };
};
template <typename S>
struct functor_traits<jx::lax::internal::SignFloatOp<S>> {
  enum { Cost = 4, PacketAccess = packet_traits<S>::HasCmp };
};
template <>
struct functor_traits<jx::lax::internal::SqrtOp> {
  enum { Cost = 10, PacketAccess = jx::lax::internal::kHasExactPacketSqrt };
};
template <>
struct functor_traits<jx::lax::internal::ErfInvF32Op> {
  enum { Cost = 40, PacketAccess = packet_traits<float>::HasLog && jx::lax::internal::kHasExactPacketSqrt };
};
}  // namespace Eigen::internal

namespace jx::lax::internal {
namespace {

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

// A float-only kernel from an Eigen array expression (instantiated for f16/bf16 via f32).
template <typename Expr>
auto Eigen1(Expr expr, int64_t grain = kExpensiveGrain) {
  return [expr, grain](const auto* in, auto* out, int64_t n, const ParamMap&) {
    kernels::UnaryMap(in, out, n, expr, grain);
  };
}

// A float-only kernel applying a scalar function per element (no packet version exists).
template <typename F>
auto Scalar1(F f) {
  return Eigen1([f](const auto& x) { return x.unaryExpr(f); });
}

// Float kernel from expr, integer kernel from the scalar function int_fn.
template <typename Expr, typename IntFn>
auto Numeric1(Expr expr, IntFn int_fn) {
  return [expr, int_fn](const auto* in, auto* out, int64_t n, const ParamMap&) {
    using T = std::remove_cv_t<std::remove_pointer_t<decltype(in)>>;
    if constexpr (kIsFloat<T>) {
      kernels::UnaryMap(in, out, n, expr);
    } else {
      kernels::MapLoop1(in, out, n, [&](T x) { return static_cast<T>(int_fn(x)); });
    }
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

// is_finite: f -> bool, on the bits (exponent not all ones), which vectorizes.
void DefineIsFinite(Registry& r) {
  PrimitiveRules& rules = r.Define(kIsFinite);
  rules.abstract_eval = [](InAvals in, const ParamMap&) -> Avals {
    CheckArity("is_finite", in, 1);
    CheckDTypeClass("is_finite", in, DTypeClass::kFloating);
    return OneAval(ShapedArray{in[0]->shape, bool_, false});
  };
  rules.impl = [](absl::Span<const Array> in, const ParamMap&, absl::Span<const ShapedArray> out_avals) -> Arrays {
    Array out = Array::Empty(out_avals[0]);
    const int64_t n = out.size();
    bool* o = kernels::MutableData<bool>(out);
    auto run = [&](const auto* bits, auto exp_mask) {
      kernels::ForChunks(n, [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) o[i] = (bits[i] & exp_mask) != exp_mask;
      });
    };
    switch (in[0].dtype()) {
      case DType::kFloat16: run(kernels::Data<uint16_t>(in[0]), uint16_t{0x7c00}); break;
      case DType::kBFloat16: run(kernels::Data<uint16_t>(in[0]), uint16_t{0x7f80}); break;
      case DType::kFloat32: run(kernels::Data<uint32_t>(in[0]), uint32_t{0x7f800000u}); break;
      case DType::kFloat64: run(kernels::Data<uint64_t>(in[0]), uint64_t{0x7ff0000000000000ull}); break;
      default: break;
    }
    return OneArray(std::move(out));
  };
}

}  // namespace

void RegisterUnaryOps(Registry& r) {
  constexpr DTypeClass kFloat = DTypeClass::kFloating;
  constexpr DTypeClass kNumeric = DTypeClass::kNumeric;

  // Arithmetic (integers wrap).
  DefineUnary<kNumeric>(r, kNeg, Numeric1([](const auto& x) { return -x; }, [](auto x) { return WrapNeg(x); }));
  DefineUnary<kNumeric>(r, kSign, [](const auto* in, auto* out, int64_t n, const ParamMap&) {
    using T = std::remove_cv_t<std::remove_pointer_t<decltype(in)>>;
    if constexpr (kIsFloat<T>) {
      kernels::UnaryMap(in, out, n, [](const auto& x) { return x.unaryExpr(SignFloatOp<ComputeType<T>>()); });
    } else if constexpr (std::is_signed_v<T>) {
      kernels::MapLoop1(in, out, n, [](T x) { return static_cast<T>((x > 0) - (x < 0)); });
    } else {
      kernels::MapLoop1(in, out, n, [](T x) { return static_cast<T>(x != 0); });
    }
  });
  DefineUnary<DTypeClass::kSignedNumeric>(r, kAbs, Numeric1([](const auto& x) { return x.abs(); }, [](auto x) {
    return x < 0 ? WrapNeg(x) : x;  // abs(INT_MIN) wraps to INT_MIN, as XLA
  }));
  DefineUnary<kNumeric>(r, kSquare, Numeric1([](const auto& x) { return x.square(); }, [](auto x) {
    return WrapMul(x, x);
  }));
  DefineUnary<kNumeric>(r, kIntegerPow, [](const auto* in, auto* out, int64_t n, const ParamMap& params) {
    IntegerPowKernel(in, out, n, params.GetInt("y"));
  }, CheckIntegerPow);
  DefineUnary<kFloat>(r, kReciprocal, Eigen1([](const auto& x) { return x.inverse(); }, kernels::kParallelGrain));
  DefineUnary<DTypeClass::kIntegerOrBool>(r, kNot, [](const auto* in, auto* out, int64_t n, const ParamMap&) {
    using T = std::remove_cv_t<std::remove_pointer_t<decltype(in)>>;
    if constexpr (std::is_same_v<T, bool>) {
      kernels::MapLoop1(in, out, n, [](bool x) { return !x; });
    } else {
      kernels::MapLoop1(in, out, n, [](T x) { return static_cast<T>(~x); });
    }
  });

  // Rounding.
  DefineUnary<kFloat>(r, kFloor, Eigen1([](const auto& x) { return x.floor(); }, kernels::kParallelGrain));
  DefineUnary<kFloat>(r, kCeil, Eigen1([](const auto& x) { return x.ceil(); }, kernels::kParallelGrain));
  DefineUnary<kFloat>(r, kRound, [](const auto* in, auto* out, int64_t n, const ParamMap& params) {
    if (params.GetInt("rounding_method") == 0) {
      kernels::UnaryMap(in, out, n, [](const auto& x) { return x.round(); });  // half away from zero
    } else {
      kernels::UnaryMap(in, out, n, [](const auto& x) { return x.rint(); });  // half to even
    }
  }, CheckRoundingMethod);
  DefineIsFinite(r);

  // Exponentials and logarithms.
  DefineUnary<kFloat>(r, kExp, Eigen1([](const auto& x) {
    using S = typename std::decay_t<decltype(x)>::Scalar;
    if constexpr (std::is_same_v<S, float>) {
      return x.unaryExpr(ExpF32Op());
    } else {
      return x.exp();
    }
  }));
  DefineUnary<kFloat>(r, kExp2, Eigen1([](const auto& x) {
    using S = typename std::decay_t<decltype(x)>::Scalar;
    return x.unaryExpr(Exp2Op<S>());
  }));
  DefineUnary<kFloat>(r, kLog, Eigen1([](const auto& x) { return x.log(); }));
  DefineUnary<kFloat>(r, kLog1p, Eigen1([](const auto& x) { return x.log1p(); }));
  DefineUnary<kFloat>(r, kExpm1, Eigen1([](const auto& x) { return x.expm1(); }));
  DefineUnary<kFloat>(r, kTanh, Eigen1([](const auto& x) { return x.tanh(); }));
  DefineUnary<kFloat>(r, kLogistic, Eigen1([](const auto& x) { return x.logistic(); }));
  DefineUnary<kFloat>(r, kSqrt, Eigen1([](const auto& x) { return x.unaryExpr(SqrtOp()); }));
  DefineUnary<kFloat>(r, kRsqrt, Eigen1([](const auto& x) { return x.rsqrt(); }));
  // Scalar: no packet cbrt in Eigen 3.4.
  DefineUnary<kFloat>(r, kCbrt, Scalar1([](auto v) { return std::cbrt(v); }));

  // Trigonometric and hyperbolic. Scalar (libm) where Eigen 3.4 has no packet version: tan,
  // asin, acos, atan, sinh, cosh, asinh, acosh, atanh.
  DefineUnary<kFloat>(r, kSin, Eigen1([](const auto& x) { return x.sin(); }));
  DefineUnary<kFloat>(r, kCos, Eigen1([](const auto& x) { return x.cos(); }));
  DefineUnary<kFloat>(r, kTan, Scalar1([](auto v) { return std::tan(v); }));
  DefineUnary<kFloat>(r, kAsin, Scalar1([](auto v) { return std::asin(v); }));
  DefineUnary<kFloat>(r, kAcos, Scalar1([](auto v) { return std::acos(v); }));
  DefineUnary<kFloat>(r, kAtan, Scalar1([](auto v) { return std::atan(v); }));
  DefineUnary<kFloat>(r, kSinh, Scalar1([](auto v) { return std::sinh(v); }));
  DefineUnary<kFloat>(r, kCosh, Scalar1([](auto v) { return std::cosh(v); }));
  DefineUnary<kFloat>(r, kAsinh, Scalar1([](auto v) { return std::asinh(v); }));
  DefineUnary<kFloat>(r, kAcosh, Scalar1([](auto v) { return std::acosh(v); }));
  DefineUnary<kFloat>(r, kAtanh, Scalar1([](auto v) { return std::atanh(v); }));

  // Special functions. erf vectorizes for f32; erfc, lgamma and digamma are scalar (lgamma_r:
  // std::lgamma writes the global signgam, a data race across chunks); f32 lgamma and digamma
  // are evaluated in f64 so that cancellation near their zeros stays below f32 rounding.
  DefineUnary<kFloat>(r, kErf, Eigen1([](const auto& x) { return x.erf(); }));
  DefineUnary<kFloat>(r, kErfc, Scalar1([](auto v) { return std::erfc(v); }));
  DefineUnary<kFloat>(r, kErfInv, Eigen1([](const auto& x) {
    using S = typename std::decay_t<decltype(x)>::Scalar;
    if constexpr (std::is_same_v<S, float>) {
      return x.unaryExpr(ErfInvF32Op());
    } else {
      return x.unaryExpr([](double v) { return ErfInvF64(v); });  // scalar
    }
  }));
  DefineUnary<kFloat>(r, kLgamma, Scalar1([](auto v) {
    int sign;
    return static_cast<decltype(v)>(::lgamma_r(static_cast<double>(v), &sign));
  }));
  DefineUnary<kFloat>(r, kDigamma, Scalar1([](auto v) {
    return static_cast<decltype(v)>(Eigen::numext::digamma(static_cast<double>(v)));
  }));

  RegisterUnaryRules(r);
}

}  // namespace jx::lax::internal
