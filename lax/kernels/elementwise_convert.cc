// convert_element_type kernels (elementwise.h) for every pair of dtypes, with XLA's CPU
// semantics: float -> int truncates toward zero, saturates and maps NaN to 0; any -> bool is
// x != 0 (NaN -> true); int -> int wraps; into 16-bit floats rounds to nearest even (f64 -> bf16
// through f32 as XLA does; f64 -> f16 rounds once: narrow_float.h). Every element runs the same scalar code.
// Also reduce_precision, a rounding of a float's bits in place.
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>

#include "jx/lax/kernels/elementwise.h"
#include "jx/lax/kernels/elementwise_runner.h"
#include "jx/lax/kernels/narrow_float.h"

namespace jx::lax::kernels {
namespace internal {
namespace {

// One element, S -> D, both compute types (16-bit floats appear as f32 here).
template <typename D, typename S>
D ConvertScalar(S x) {
  if constexpr (std::is_same_v<D, bool>) {
    return x != S(0);
  } else if constexpr (std::is_floating_point_v<S> && std::is_integral_v<D>) {
    constexpr D kMin = std::numeric_limits<D>::min();
    constexpr D kMax = std::numeric_limits<D>::max();
    if constexpr (std::is_signed_v<D>) {
      if (x != x) return D(0);
      if (x <= static_cast<S>(kMin)) return kMin;
      if (x >= static_cast<S>(kMax)) return kMax;  // (S)kMax rounds up to 2^(bits-1)
      return static_cast<D>(x);
    } else {
      if (!(x > S(0))) return D(0);  // also NaN
      if (x >= static_cast<S>(kMax)) return kMax;
      return static_cast<D>(x);
    }
  } else {
    return static_cast<D>(x);
  }
}

template <typename S, typename D>
void Convert(const void* const* in, void* out, int64_t n) {
  const S* x = static_cast<const S*>(in[0]);
  D* o = static_cast<D*>(out);
  if constexpr (std::is_same_v<S, D>) {
    std::memcpy(o, x, n * sizeof(S));
  } else if constexpr (std::is_same_v<S, double> && std::is_same_v<D, Eigen::half>) {
    for (int64_t i = 0; i < n; ++i) o[i] = NarrowFromF64<Eigen::half>(x[i]);
  } else {
    using Cd = ComputeType<D>;
    UnaryBlocks(x, o, n, [](const ComputeType<S>* __restrict a, Cd* __restrict b, int64_t m) {
      for (int64_t i = 0; i < m; ++i) b[i] = ConvertScalar<Cd>(a[i]);
    }, int64_t{1} << 60);  // one chunk: the caller (RunElementwise) parallelizes
  }
}

// XLA's ReducePrecision on the storage bits of a float type with kExp exponent and kMant
// mantissa bits: round the mantissa to nearest even, then overflow to +-inf and flush values
// below the reduced normal range to +-0; NaN stays NaN (becomes +inf with no mantissa bits).
// in[1] holds the ReducePrecisionBits; wider than the type changes nothing.
template <typename U, int kExp, int kMant>
void ReducePrecision(const void* const* in, void* out, int64_t n) {
  const auto* bits = static_cast<const ReducePrecisionBits*>(in[1]);
  const int exponent_bits = std::min<int>(bits->exponent_bits, kExp);
  const int mantissa_bits = std::min<int>(bits->mantissa_bits, kMant);
  constexpr int kBits = static_cast<int>(sizeof(U) * 8);
  constexpr U kSign = U(U(1) << (kBits - 1));
  constexpr U kExpMask = U(((U(1) << kExp) - 1) << kMant);
  const bool round = mantissa_bits < kMant;
  const int shift = kMant - mantissa_bits;
  const U last_bit = round ? U(U(1) << shift) : U(0);
  const U base_bias = round ? U((last_bit >> 1) - 1) : U(0);
  const U trunc_mask = round ? U(~U(last_bit - 1)) : U(~U(0));
  const bool clip = exponent_bits < kExp;
  const U bias = U((U(1) << (kExp - 1)) - 1);
  const U reduced_bias = clip ? U((U(1) << (exponent_bits - 1)) - 1) : U(0);
  const U max_exp = U(U(bias + reduced_bias) << kMant);
  const U min_exp = U(U(bias - reduced_bias) << kMant);
  const U* x_in = static_cast<const U*>(in[0]);
  U* o = static_cast<U*>(out);
  for (int64_t i = 0; i < n; ++i) {
    const U x = x_in[i];
    const U abs = U(x & ~kSign);
    U v = x;
    if (round) v = U(U(v + U(((v & last_bit) >> shift) + base_bias)) & trunc_mask);
    if (clip) {
      const U e = U(v & kExpMask);
      if (e > max_exp) v = U((v & kSign) | kExpMask);
      if (e <= min_exp) v = U(v & kSign);
    }
    if (abs > kExpMask) v = mantissa_bits > 0 ? x : kExpMask;  // NaN: kept, or +inf as XLA
    o[i] = v;
  }
}

}  // namespace
}  // namespace internal

ElementwiseFn FindReducePrecisionFn(DType dtype) {
  switch (dtype) {
    case DType::kFloat16: return &internal::ReducePrecision<uint16_t, 5, 10>;
    case DType::kBFloat16: return &internal::ReducePrecision<uint16_t, 8, 7>;
    case DType::kFloat32: return &internal::ReducePrecision<uint32_t, 8, 23>;
    case DType::kFloat64: return &internal::ReducePrecision<uint64_t, 11, 52>;
    default: return nullptr;
  }
}

ElementwiseFn FindConvertFn(DType from, DType to) {
  return DispatchDType(from, [&](auto from_tag) {
    using S = typename decltype(from_tag)::type;
    return DispatchDType(to, [&](auto to_tag) -> ElementwiseFn {
      using D = typename decltype(to_tag)::type;
      return &internal::Convert<S, D>;
    });
  });
}

}  // namespace jx::lax::kernels
