// convert_element_type kernels (elementwise.h) for every pair of dtypes, with XLA's CPU
// semantics: float -> int truncates toward zero, saturates and maps NaN to 0; any -> bool is
// x != 0 (NaN -> true); int -> int wraps; into 16-bit floats rounds to nearest even (f64 -> bf16
// through f32 as XLA does; f64 -> f16 rounds once: narrow_float.h). Every element runs the same scalar code.
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

}  // namespace
}  // namespace internal

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
