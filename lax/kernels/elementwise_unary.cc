// Unary floating-point kernels (elementwise.h). Most ops are Eigen's packet functors run by
// elementwise_runner.h; the functors below fix what Eigen gets wrong at the edges of the range
// (its exp clamps its argument, its log flushes denormal inputs) or rounds inexactly under
// EIGEN_FAST_MATH (sqrt, rsqrt).
#include <cmath>
#include <limits>
#include <type_traits>

#include <unsupported/Eigen/SpecialFunctions>

#include "jx/lax/kernels/elementwise.h"
#include "jx/lax/kernels/elementwise_runner.h"
#include "jx/lax/kernels/erf_inv.h"

namespace jx::lax::kernels {
namespace internal {
namespace {

using namespace Eigen::internal;  // NOLINT: Eigen's packet primitives (pexp, pselect, ...)

template <typename P>
using ScalarOf = typename unpacket_traits<P>::type;

// exp over f32 inputs in [-87, 88]: Eigen's pexp_float (same range reduction and polynomial,
// so the same bits), but 2^m is applied by writing m + 127 into the exponent field: exact for
// the normal range m in [-126, 127] these inputs reach, where Eigen's general pldexp spends
// about a third of the time splitting the scaling into steps. Other inputs give garbage.
template <typename P>
P ExpF32InRange(const P& x) {
  const P m = pfloor(pmadd(x, pset1<P>(1.44269504088896341f), pset1<P>(0.5f)));
  P r = pmadd(m, pset1<P>(-0.693359375f), x);
  r = pmadd(m, pset1<P>(2.12194440e-4f), r);
  const P r2 = pmul(r, r), r3 = pmul(r2, r);
  P y = pmadd(pset1<P>(1.9875691500E-4f), r, pset1<P>(1.3981999507E-3f));
  P y1 = pmadd(pset1<P>(4.1665795894E-2f), r, pset1<P>(1.6666665459E-1f));
  const P y2 = padd(r, pset1<P>(1.0f));
  y = pmadd(y, r, pset1<P>(8.3334519073E-3f));
  y1 = pmadd(y1, r, pset1<P>(5.0000001201E-1f));
  y = pmadd(y, r3, y1);
  y = pmadd(y, r2, y2);
  return pldexp_fast_impl<P>::run(y, m);
}

// Whether every lane of x lies in [lo, hi] (a NaN lane does not). With AVX-512 two compares
// into one mask register: the generic form (compare masks as vectors, and, a horizontal any)
// took a quarter of exp's time.
template <typename P>
bool AllWithin(const P& x, const P& lo, const P& hi) {
  return !predux_any(pandnot(ptrue(x), pand(pcmp_le(lo, x), pcmp_le(x, hi))));
}
#if defined(EIGEN_VECTORIZE_AVX512)
inline bool AllWithin(const Packet16f& x, const Packet16f& lo, const Packet16f& hi) {
  return _mm512_mask_cmp_ps_mask(_mm512_cmp_ps_mask(x, lo, _CMP_GE_OQ), x, hi, _CMP_LE_OQ) == 0xffff;
}
inline bool AllWithin(const Packet8d& x, const Packet8d& lo, const Packet8d& hi) {
  return _mm512_mask_cmp_pd_mask(_mm512_cmp_pd_mask(x, lo, _CMP_GE_OQ), x, hi, _CMP_LE_OQ) == 0xff;
}
#endif

// exp, correct over the whole range: Eigen's pexp clamps its argument to about +-88.72 (f32)
// / +-709.4 (f64), so it overflows early and never gives a denormal. Outside [lo, hi] (NaN
// included) the result is exp(x/2)^2 (one extra rounding), inf and 0 included.
template <typename P>
P Exp(const P& x) {
  using S = ScalarOf<P>;
  constexpr bool kF32 = std::is_same_v<S, float>;
  const P lo = pset1<P>(S(kF32 ? -87 : -708)), hi = pset1<P>(S(kF32 ? 88 : 709));
  P r;
  if constexpr (kF32) {
    r = ExpF32InRange(x);
  } else {
    r = pexp(x);
  }
  if (EIGEN_PREDICT_FALSE(!AllWithin(x, lo, hi))) {
    const P outside = pandnot(ptrue(x), pand(pcmp_le(lo, x), pcmp_le(x, hi)));
    const P h = pexp(pmul(x, pset1<P>(S(0.5))));
    r = pselect(outside, pmul(h, h), r);
  }
  return r;
}

struct ExpOp {
  template <typename S>
  static constexpr bool kVectorized = packet_traits<S>::HasExp;
  template <typename S>
  S Scalar(S x) const { return std::exp(x); }
  template <typename P>
  P Packet(const P& x) const { return Exp(x); }
};

// log, with denormal inputs scaled into the normal range first (Eigen's plog treats them as
// the smallest normal).
struct LogOp {
  template <typename S>
  static constexpr bool kVectorized = packet_traits<S>::HasLog;
  template <typename S>
  S Scalar(S x) const { return std::log(x); }
  template <typename P>
  P Packet(const P& x) const {
    using S = ScalarOf<P>;
    constexpr int kShift = std::numeric_limits<S>::digits;  // 2^digits lifts any denormal
    P r = plog(x);
    const P tiny = pand(pcmp_lt(x, pset1<P>(std::numeric_limits<S>::min())), pcmp_lt(pzero(x), x));
    if (EIGEN_PREDICT_FALSE(predux_any(tiny))) {
      const P scaled = plog(pmul(x, pset1<P>(std::ldexp(S(1), kShift))));
      r = pselect(tiny, psub(scaled, pset1<P>(S(kShift) * S(0.693147180559945309417232121458))), r);
    }
    return r;
  }
};

// expm1: Eigen's is built on its clamped exp, so above hi it is recomputed as exp (equal to
// expm1 there).
struct Expm1Op {
  template <typename S>
  static constexpr bool kVectorized = functor_traits<scalar_expm1_op<S>>::PacketAccess && packet_traits<S>::HasExp;
  template <typename S>
  S Scalar(S x) const { return std::expm1(x); }
  template <typename P>
  P Packet(const P& x) const {
    using S = ScalarOf<P>;
    P r = scalar_expm1_op<S>().packetOp(x);
    const P big = pcmp_lt(pset1<P>(S(std::is_same_v<S, float> ? 80 : 700)), x);
    if (EIGEN_PREDICT_FALSE(predux_any(big))) r = pselect(big, Exp(x), r);
    return r;
  }
};

// logistic(x) = 1 / (1 + e) for x >= 0 and e / (1 + e) below, with e = exp(-|x|): never
// overflows, a few ulps everywhere, and denormal for very negative x. (Eigen's f32 rational
// approximation is accurate only in absolute terms: 1.5e-5 relative at x = -7.5, and its
// clamped exp alone below -9.)
struct LogisticOp {
  template <typename S>
  static constexpr bool kVectorized = packet_traits<S>::HasExp && packet_traits<S>::HasDiv;
  template <typename S>
  S Scalar(S x) const {
    const S e = std::exp(-std::fabs(x));
    return x >= S(0) ? S(1) / (S(1) + e) : e / (S(1) + e);
  }
  template <typename P>
  P Packet(const P& x) const {
    const P one = pset1<P>(ScalarOf<P>(1));
    const P e = Exp(pnegate(pabs(x)));
    return pdiv(pselect(pcmp_le(pzero(x), x), one, e), padd(one, e));
  }
};

// sqrt, correctly rounded: Eigen's AVX/AVX-512 psqrt under EIGEN_FAST_MATH is an rsqrt
// estimate plus a Newton step (not correctly rounded, flushes denormals, sqrt(inf) = NaN), so
// the packet path calls the hardware square root.
#if defined(EIGEN_VECTORIZE_SSE2)
constexpr bool kHasExactSqrt = true;
inline Packet4f ExactSqrt(const Packet4f& x) { return _mm_sqrt_ps(x); }
inline Packet2d ExactSqrt(const Packet2d& x) { return _mm_sqrt_pd(x); }
#else
constexpr bool kHasExactSqrt = false;
template <typename P>
P ExactSqrt(const P& x) { return x; }  // never called
#endif
#if defined(EIGEN_VECTORIZE_AVX)
inline Packet8f ExactSqrt(const Packet8f& x) { return _mm256_sqrt_ps(x); }
inline Packet4d ExactSqrt(const Packet4d& x) { return _mm256_sqrt_pd(x); }
#endif
#if defined(EIGEN_VECTORIZE_AVX512)
inline Packet16f ExactSqrt(const Packet16f& x) { return _mm512_sqrt_ps(x); }
inline Packet8d ExactSqrt(const Packet8d& x) { return _mm512_sqrt_pd(x); }
#endif

struct SqrtOp {
  template <typename S>
  static constexpr bool kVectorized = kHasExactSqrt;
  template <typename S>
  S Scalar(S x) const { return std::sqrt(x); }
  template <typename P>
  P Packet(const P& x) const { return ExactSqrt(x); }
};

// rsqrt as 1 / sqrt(x), both correctly rounded (Eigen's fast-math prsqrt is an estimate).
struct RsqrtOp {
  template <typename S>
  static constexpr bool kVectorized = kHasExactSqrt;
  template <typename S>
  S Scalar(S x) const { return S(1) / std::sqrt(x); }
  template <typename P>
  P Packet(const P& x) const { return pdiv(pset1<P>(ScalarOf<P>(1)), ExactSqrt(x)); }
};

// -x by flipping the sign bit, so -(+0) = -0 (Eigen's AVX-512 pnegate computes 0 - x, which
// gives +0 there).
struct NegOp {
  template <typename S>
  static constexpr bool kVectorized = true;
  template <typename S>
  S Scalar(S x) const { return -x; }
  template <typename P>
  P Packet(const P& x) const { return pxor(x, pset1<P>(ScalarOf<P>(-0.0))); }
};

// XLA's sign: -1/+1 with the input's sign, +-0 and NaN unchanged.
struct SignOp {
  template <typename S>
  static constexpr bool kVectorized = packet_traits<S>::HasCmp;
  template <typename S>
  S Scalar(S x) const { return (x != x || x == S(0)) ? x : std::copysign(S(1), x); }
  template <typename P>
  P Packet(const P& x) const {
    using S = ScalarOf<P>;
    const P one_signed = por(pand(x, pset1<P>(S(-0.0))), pset1<P>(S(1)));
    const P keep = por(pcmp_eq(x, pzero(x)), pandnot(ptrue(x), pcmp_eq(x, x)));  // zero or NaN
    return pselect(keep, x, one_signed);
  }
};

// c[0] ws^(size-1) + ... + c[size-1] by Horner's rule, every product and sum rounded to T
// (never fused into a multiply-add), as the HLO ops of the lowering are.
template <typename T>
T PinnedHorner(const double* c, int size, T ws) {
  T p = static_cast<T>(c[0]);
  for (int i = 1; i < size; ++i) {
    const volatile T product = p * ws;
    p = static_cast<T>(c[i]) + product;
  }
  return p;
}

// erf_inv for f32 (erf_inv.h): the sequence of ops the lowering emits, each one rounded
// (pinned add and multiply, never fused), log and sqrt the library kernels jit runs.
inline float ErfInvF32Scalar(float x) {
  const float w = -std::log((1.0f - x) * (1.0f + x));
  const bool central = w < static_cast<float>(kErfInvTailW);
  const float ws = central ? w - 2.5f : std::sqrt(w) - 3.0f;
  const float p = PinnedHorner(central ? kErfInvCentral : kErfInvTail, 9, ws);
  if (std::fabs(x) == 1.0f) return x * std::numeric_limits<float>::infinity();
  return p * x;
}

// The packet forms' first and last steps (both types): w = -log((1 - x) * (1 + x)), and
// r = |x| == 1 ? x * inf : p * x.
template <typename P>
P ErfInvW(const P& x) {
  const P one = pset1<P>(ScalarOf<P>(1));
  return NegOp().Packet(LogOp().Packet(PinnedMul(psub(one, x), PinnedAdd(one, x))));
}
template <typename P>
P ErfInvResult(const P& x, const P& p) {
  const P inf = pset1<P>(std::numeric_limits<ScalarOf<P>>::infinity());
  return pselect(pcmp_eq(pabs(x), pset1<P>(ScalarOf<P>(1))), PinnedMul(x, inf), PinnedMul(p, x));
}

struct ErfInvF32Op {
  template <typename P>
  P packetOp(const P& x) const {
    const P w = ErfInvW(x);
    const P central = pcmp_lt(w, pset1<P>(static_cast<float>(kErfInvTailW)));
    const P ws = pselect(central, psub(w, pset1<P>(2.5f)), psub(ExactSqrt(w), pset1<P>(3.0f)));
    auto coefficient = [&](int i) {
      return pselect(central, pset1<P>(static_cast<float>(kErfInvCentral[i])),
                     pset1<P>(static_cast<float>(kErfInvTail[i])));
    };
    P p = coefficient(0);
    for (int i = 1; i < 9; ++i) p = PinnedAdd(coefficient(i), PinnedMul(p, ws));
    return ErfInvResult(x, p);
  }
};

// erf_inv for f64 (erf_inv.h): the same kind of sequence with Giles' three double-precision
// polynomials; the scalar form where the build has no f64 packet log.
inline double ErfInvF64Scalar(double x) {
  const double w = -std::log((1.0 - x) * (1.0 + x));
  const bool central = w < kErfInvF64MiddleW, middle = !central && w < kErfInvF64TailW;
  const double ws = central ? w - 3.125 : std::sqrt(w) - (middle ? 3.25 : 5.0);
  const double p = central  ? PinnedHorner(kErfInvF64Central, kErfInvF64CentralSize, ws)
                   : middle ? PinnedHorner(kErfInvF64Middle, kErfInvF64MiddleSize, ws)
                            : PinnedHorner(kErfInvF64Tail, kErfInvF64TailSize, ws);
  if (std::fabs(x) == 1.0) return x * std::numeric_limits<double>::infinity();
  return p * x;
}

struct ErfInvF64Op {
  template <typename P>
  P packetOp(const P& x) const {
    const P w = ErfInvW(x);
    const P central = pcmp_lt(w, pset1<P>(kErfInvF64MiddleW));
    const P middle = pcmp_lt(w, pset1<P>(kErfInvF64TailW));  // or central
    const P ws = pselect(central, psub(w, pset1<P>(3.125)),
                         psub(ExactSqrt(w), pselect(middle, pset1<P>(3.25), pset1<P>(5.0))));
    auto coefficient = [&](int i) {
      P c = pset1<P>(kErfInvF64Central[i]);
      if (i < kErfInvF64MiddleSize) c = pselect(central, c, pset1<P>(kErfInvF64Middle[i]));
      if (i < kErfInvF64TailSize) c = pselect(middle, c, pset1<P>(kErfInvF64Tail[i]));
      return c;
    };
    P p = coefficient(0);
    for (int i = 1; i < kErfInvF64CentralSize; ++i) {
      const P next = PinnedAdd(coefficient(i), PinnedMul(p, ws));
      if (i < kErfInvF64TailSize) {
        p = next;
      } else {
        p = pselect(i < kErfInvF64MiddleSize ? middle : central, next, p);
      }
    }
    return ErfInvResult(x, p);
  }
};

// One sequence per type for eager and jit (erf_inv.h); vectorized exactly when the log kernel
// jit runs is, so both compute log the same way.
struct ErfInvOp {
  template <typename S>
  static constexpr bool kVectorized = LogOp::kVectorized<S> && kHasExactSqrt;
  template <typename S>
  S Scalar(S x) const {
    if constexpr (std::is_same_v<S, float>) {
      return ErfInvF32Scalar(x);
    } else {
      return ErfInvF64Scalar(x);
    }
  }
  template <typename P>
  P Packet(const P& x) const {
    if constexpr (std::is_same_v<ScalarOf<P>, float>) {
      return ErfInvF32Op().packetOp(x);
    } else {
      return ErfInvF64Op().packetOp(x);
    }
  }
};

struct TanFn {
  template <typename S>
  S operator()(S x) const { return std::tan(x); }
};
// atan(x) is atan2(x, 1), which is how it lowers (there is no HLO atan), so eager and jit
// agree bit for bit. glibc's atan2f(y, 1) is atanf(y) (its x == 1 case), the cheaper call;
// for doubles the two differ in the last bit on about 1e-4 of inputs, so f64 calls atan2.
struct AtanFn {
  template <typename S>
  S operator()(S x) const {
    if constexpr (std::is_same_v<S, double>) return std::atan2(x, 1.0);
    else return std::atan(x);
  }
};
struct CbrtFn {
  template <typename S>
  S operator()(S x) const { return std::cbrt(x); }
};

template <typename Op>
ElementwiseFn Unary(DType dtype, StoreMode store) {
  return KernelForDType<Op, 1, 0>(dtype, store);
}

}  // namespace
}  // namespace internal

ElementwiseFn FindUnaryFn(UnaryOp op, DType dtype, StoreMode store) {
  using namespace internal;  // NOLINT
  using namespace Eigen::internal;  // NOLINT
  if (!IsFloating(dtype)) return FindIntegerUnaryFn(op, dtype);
  switch (op) {
    case UnaryOp::kNeg: return Unary<NegOp>(dtype, store);
    case UnaryOp::kAbs: return Unary<EigenUnary<scalar_abs_op>>(dtype, store);
    case UnaryOp::kSign: return Unary<SignOp>(dtype, store);
    case UnaryOp::kFloor: return Unary<EigenUnary<scalar_floor_op>>(dtype, store);
    case UnaryOp::kCeil: return Unary<EigenUnary<scalar_ceil_op>>(dtype, store);
    case UnaryOp::kRoundAwayFromZero: return Unary<EigenUnary<scalar_round_op>>(dtype, store);
    case UnaryOp::kRoundNearestEven: return Unary<EigenUnary<scalar_rint_op>>(dtype, store);
    case UnaryOp::kExp: return Unary<ExpOp>(dtype, store);
    case UnaryOp::kLog: return Unary<LogOp>(dtype, store);
    case UnaryOp::kLog1p: return Unary<EigenUnary<scalar_log1p_op>>(dtype, store);
    case UnaryOp::kExpm1: return Unary<Expm1Op>(dtype, store);
    case UnaryOp::kTanh: return Unary<EigenUnary<scalar_tanh_op>>(dtype, store);
    case UnaryOp::kLogistic: return Unary<LogisticOp>(dtype, store);
    case UnaryOp::kSin: return Unary<EigenUnary<scalar_sin_op>>(dtype, store);
    case UnaryOp::kCos: return Unary<EigenUnary<scalar_cos_op>>(dtype, store);
    case UnaryOp::kTan: return Unary<ScalarOnly<TanFn>>(dtype, store);
    case UnaryOp::kAtan: return Unary<ScalarOnly<AtanFn>>(dtype, store);
    case UnaryOp::kSqrt: return Unary<SqrtOp>(dtype, store);
    case UnaryOp::kRsqrt: return Unary<RsqrtOp>(dtype, store);
    case UnaryOp::kCbrt: return Unary<ScalarOnly<CbrtFn>>(dtype, store);
    case UnaryOp::kErf: return Unary<EigenUnary<scalar_erf_op>>(dtype, store);
    case UnaryOp::kErfInv: return Unary<ErfInvOp>(dtype, store);
    case UnaryOp::kNot: return nullptr;
  }
  return nullptr;
}

bool IsExpensive(UnaryOp op) {
  switch (op) {
    case UnaryOp::kNeg: case UnaryOp::kAbs: case UnaryOp::kSign: case UnaryOp::kFloor:
    case UnaryOp::kCeil: case UnaryOp::kRoundAwayFromZero: case UnaryOp::kRoundNearestEven:
      return false;
    default:
      return true;
  }
}

}  // namespace jx::lax::kernels
