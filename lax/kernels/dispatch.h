// Kernel-side helpers (internal; includes Eigen): dispatch on dtype to a C++ element type and
// run elementwise loops with Eigen packet math over TBB chunks.
//
// Two loop flavours, both one pass over memory:
//   UnaryMap: an Eigen array expression (packet math: exp, tanh, ...).
//   MapLoop1: a plain loop over a scalar functor (GCC vectorizes these at -O3).
// (Binary elementwise ops are elementwise.h's FindBinaryFn kernels.)
// 16-bit floats are widened to f32 in L1-sized blocks and rounded once on the way out.
#pragma once

#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include <unistd.h>

#include <Eigen/Core>

#include "jx/core/array.h"
#include "jx/core/errors.h"
#include "jx/core/parallel.h"

namespace jx::lax::kernels {

template <typename T>
struct TypeTag {
  using type = T;
};

// Elements below this count run on the calling thread.
inline constexpr int64_t kParallelGrain = 1 << 15;
// Grain for kernels that spend tens of cycles per element (transcendentals): smaller arrays
// are already worth splitting.
inline constexpr int64_t kExpensiveGrain = 1 << 12;

// Calls f(TypeTag<T>{}) with the C++ element type of d. 16-bit floats dispatch to Eigen::half
// and Eigen::bfloat16 (layout-identical to jx::float16_t and jx::bfloat16_t).
template <typename F>
decltype(auto) DispatchDType(DType d, F&& f) {
  switch (d) {
    case DType::kBool: return f(TypeTag<bool>{});
    case DType::kInt8: return f(TypeTag<int8_t>{});
    case DType::kInt16: return f(TypeTag<int16_t>{});
    case DType::kInt32: return f(TypeTag<int32_t>{});
    case DType::kInt64: return f(TypeTag<int64_t>{});
    case DType::kUInt8: return f(TypeTag<uint8_t>{});
    case DType::kUInt16: return f(TypeTag<uint16_t>{});
    case DType::kUInt32: return f(TypeTag<uint32_t>{});
    case DType::kUInt64: return f(TypeTag<uint64_t>{});
    case DType::kFloat16: return f(TypeTag<Eigen::half>{});
    case DType::kBFloat16: return f(TypeTag<Eigen::bfloat16>{});
    case DType::kFloat32: return f(TypeTag<float>{});
    case DType::kFloat64: return f(TypeTag<double>{});
  }
  throw InternalError("bad dtype");
}

template <typename T>
inline constexpr bool kIsHalf = std::is_same_v<T, Eigen::half> || std::is_same_v<T, Eigen::bfloat16>;
template <typename T>
inline constexpr bool kIsFloat = std::is_floating_point_v<T> || kIsHalf<T>;
template <typename T>
inline constexpr bool kIsInt = std::is_integral_v<T> && !std::is_same_v<T, bool>;

// The jx dtype of a kernel element type.
template <typename T>
constexpr DType KernelDType() {
  if constexpr (std::is_same_v<T, Eigen::half>) return DType::kFloat16;
  else if constexpr (std::is_same_v<T, Eigen::bfloat16>) return DType::kBFloat16;
  else return DTypeOf<T>();
}

// The type arithmetic on T is carried out in: 16-bit floats compute in f32 and round once.
template <typename T>
using ComputeType = std::conditional_t<kIsHalf<T>, float, T>;

// Unsigned type of the same width as integer T, at least 32 bits wide so that arithmetic on
// it never promotes to (overflowing) int: wrapping integer arithmetic without signed UB.
template <typename T>
using WrapType = typename std::conditional_t<(sizeof(T) < 4), std::type_identity<uint32_t>, std::make_unsigned<T>>::type;

template <typename T>
T* MutableData(const Array& a) { return static_cast<T*>(a.mutable_data()); }
template <typename T>
const T* Data(const Array& a) { return static_cast<const T*>(a.data()); }

// Splits [0, n) over the pool in chunks of at least `grain` elements.
template <typename F>
void ForChunks(int64_t n, F&& f, int64_t grain = kParallelGrain) {
  ParallelFor(n, grain, [&](int64_t begin, int64_t end) { f(begin, end); });
}

template <typename T>
using ArrayMap = Eigen::Map<Eigen::Array<T, Eigen::Dynamic, 1>, Eigen::Unaligned>;
template <typename T>
using ConstArrayMap = Eigen::Map<const Eigen::Array<T, Eigen::Dynamic, 1>, Eigen::Unaligned>;

namespace detail {
// Elements per widening block: 4 KiB of f32, so inputs and output stay in L1.
inline constexpr int64_t kBlock = 1024;

// Widens m elements of a 16-bit float (vectorized cast) into buf; other types pass through.
template <typename T>
const ComputeType<T>* Widen(const T* in, ComputeType<T>* buf, int64_t m) {
  if constexpr (kIsHalf<T>) {
    ArrayMap<float>(buf, m) = ConstArrayMap<T>(in, m).template cast<float>();
    return buf;
  } else {
    return in;
  }
}
template <typename T>
using Buf = ComputeType<T>[kIsHalf<T> ? kBlock : 1];
}  // namespace detail

// Runs kernel(const C* in, Co* out, m) over [0, n) in parallel chunks, where C/Co are the
// compute types of T/Out: 16-bit floats pass through f32 blocks on the way in and out.
template <typename T, typename Out, typename Kernel>
void UnaryBlocks(const T* in, Out* out, int64_t n, Kernel kernel, int64_t grain = kParallelGrain) {
  ForChunks(n, [&](int64_t begin, int64_t end) {
    if constexpr (!kIsHalf<T> && !kIsHalf<Out>) {
      kernel(in + begin, out + begin, end - begin);
    } else {
      alignas(64) detail::Buf<T> ib;
      alignas(64) detail::Buf<Out> ob;
      for (int64_t b = begin; b < end; b += detail::kBlock) {
        const int64_t m = std::min(detail::kBlock, end - b);
        const ComputeType<T>* ip = detail::Widen(in + b, ib, m);
        if constexpr (kIsHalf<Out>) {
          kernel(ip, ob, m);
          ArrayMap<Out>(out + b, m) = ConstArrayMap<float>(ob, m).template cast<Out>();
        } else {
          kernel(ip, out + b, m);
        }
      }
    }
  }, grain);
}

// Runs kernel(a, b, out, m) over [0, n) where an operand flagged as a scalar (a 0-d operand
// of a broadcasting elementwise op) is read with stride 0: its value is splatted into an
// L1-sized block once per parallel chunk and the kernel runs block by block on it, so no
// n-element copy is made. With no scalar operand this is the single call kernel(a, b, out, n).
template <typename A, typename B, typename Out, typename Kernel>
void WithScalarOperands(const A* a, bool a_scalar, const B* b, bool b_scalar, Out* out, int64_t n, Kernel kernel,
                        int64_t grain = kParallelGrain) {
  if (!a_scalar && !b_scalar) {
    kernel(a, b, out, n);
    return;
  }
  ForChunks(n, [&](int64_t begin, int64_t end) {
    alignas(64) A abuf[detail::kBlock];
    alignas(64) B bbuf[detail::kBlock];
    const int64_t fill = std::min(detail::kBlock, end - begin);
    if (a_scalar) std::fill(abuf, abuf + fill, a[0]);
    if (b_scalar) std::fill(bbuf, bbuf + fill, b[0]);
    for (int64_t k = begin; k < end; k += detail::kBlock) {
      const int64_t m = std::min(detail::kBlock, end - k);
      kernel(a_scalar ? abuf : a + k, b_scalar ? bbuf : b + k, out + k, m);
    }
  }, grain);
}

// ---- Non-temporal stores for large outputs.
//
// An output much larger than the last-level cache is evicted before anyone reads it again;
// writing it with streaming stores skips the read-for-ownership of every destination line
// (a third of the traffic of out = a + b). Smaller outputs keep ordinary stores so that the
// next op finds them in cache.
inline int64_t StreamingStoreBytes() {
  static const int64_t bytes = [] {
    int64_t l3 = 0;
#ifdef _SC_LEVEL3_CACHE_SIZE
    l3 = sysconf(_SC_LEVEL3_CACHE_SIZE);
#endif
    if (l3 <= 0) l3 = int64_t{32} << 20;
    return std::clamp<int64_t>(l3 / 2, int64_t{4} << 20, int64_t{64} << 20);
  }();
  return bytes;
}

namespace detail {
#if defined(EIGEN_VECTORIZE_SSE2)
inline constexpr bool kHasStreamStore = true;
inline void StreamStore(float* p, const Eigen::internal::Packet4f& v) { _mm_stream_ps(p, v); }
inline void StreamStore(double* p, const Eigen::internal::Packet2d& v) { _mm_stream_pd(p, v); }
inline void StreamFence() { _mm_sfence(); }
#else
inline constexpr bool kHasStreamStore = false;
inline void StreamFence() {}
#endif
#if defined(EIGEN_VECTORIZE_AVX)
inline void StreamStore(float* p, const Eigen::internal::Packet8f& v) { _mm256_stream_ps(p, v); }
inline void StreamStore(double* p, const Eigen::internal::Packet4d& v) { _mm256_stream_pd(p, v); }
#endif
#if defined(EIGEN_VECTORIZE_AVX512)
inline void StreamStore(float* p, const Eigen::internal::Packet16f& v) { _mm512_stream_ps(p, v); }
inline void StreamStore(double* p, const Eigen::internal::Packet8d& v) { _mm512_stream_pd(p, v); }
#endif

// Whether an Eigen expression producing S can be evaluated packet by packet into a stream.
template <typename S, typename Expr>
inline constexpr bool kCanStream =
    kHasStreamStore && (std::is_same_v<S, float> || std::is_same_v<S, double>) &&
    std::is_same_v<typename Expr::Scalar, S> &&
    (Eigen::internal::evaluator<Expr>::Flags & Eigen::PacketAccessBit) != 0;
}  // namespace detail

// out[0, m) = expr, with streaming stores when `stream` is set and the expression vectorizes.
template <typename S, typename Expr>
void AssignExpr(S* out, const Expr& expr, int64_t m, bool stream) {
  if constexpr (detail::kCanStream<S, Expr>) {
    if (stream) {
      using Packet = typename Eigen::internal::packet_traits<S>::type;
      constexpr int64_t kSize = Eigen::internal::packet_traits<S>::size;
      Eigen::internal::evaluator<Expr> ev(expr);
      int64_t i = 0;
      for (; i < m && reinterpret_cast<uintptr_t>(out + i) % sizeof(Packet) != 0; ++i) out[i] = ev.coeff(i);
      for (; i + kSize <= m; i += kSize) {
        detail::StreamStore(out + i, ev.template packet<Eigen::Unaligned, Packet>(i));
      }
      for (; i < m; ++i) out[i] = ev.coeff(i);
      detail::StreamFence();  // order the weakly ordered stores before the chunk reports done
      return;
    }
  }
  ArrayMap<S>(out, m) = expr;
}

// Elementwise unary map: out[i] = expr(in[i]) where expr maps an Eigen array expression
// (vectorized with packet math).
template <typename T, typename Out, typename Expr>
void UnaryMap(const T* in, Out* out, int64_t n, Expr expr, int64_t grain = kParallelGrain) {
  using C = ComputeType<T>;
  using Co = ComputeType<Out>;
  const bool stream = n * static_cast<int64_t>(sizeof(Out)) >= StreamingStoreBytes();
  UnaryBlocks(in, out, n, [&](const C* i, Co* o, int64_t m) {
    AssignExpr(o, expr(ConstArrayMap<C>(i, m)), m, stream && !kIsHalf<Out>);
  }, grain);
}

// Plain loops over a scalar functor (f sees compute types: f32 for 16-bit floats).
template <typename T, typename Out, typename F>
void MapLoop1(const T* in, Out* out, int64_t n, F f, int64_t grain = kParallelGrain) {
  using C = ComputeType<T>;
  using Co = ComputeType<Out>;
  UnaryBlocks(in, out, n, [&](const C* __restrict i, Co* __restrict o, int64_t m) {
    for (int64_t k = 0; k < m; ++k) o[k] = f(i[k]);
  }, grain);
}

// XLA's float max/min: NaN-propagating, and -0 < +0 (equal operands combine their bits, so
// max(-0, +0) = +0 and min(-0, +0) = -0). Vectorized; usable as x.binaryExpr(y, MaxFloatOp<S>()).
template <typename S>
struct MaxFloatOp {
  S operator()(const S& a, const S& b) const {
    if (a != a) return a;
    if (b != b) return b;
    if (a == b) return std::bit_cast<S>(std::bit_cast<Bits>(a) & std::bit_cast<Bits>(b));
    return a < b ? b : a;
  }
  template <typename P>
  P packetOp(const P& a, const P& b) const {
    using namespace Eigen::internal;
    P m = pselect(pcmp_lt(a, b), b, a);  // a NaN: a
    m = pselect(pcmp_eq(a, b), pand(a, b), m);
    return pselect(pcmp_eq(b, b), m, b);  // b NaN: b
  }
  using Bits = std::conditional_t<sizeof(S) == 4, uint32_t, uint64_t>;
};
template <typename S>
struct MinFloatOp {
  S operator()(const S& a, const S& b) const {
    if (a != a) return a;
    if (b != b) return b;
    if (a == b) return std::bit_cast<S>(std::bit_cast<Bits>(a) | std::bit_cast<Bits>(b));
    return b < a ? b : a;
  }
  template <typename P>
  P packetOp(const P& a, const P& b) const {
    using namespace Eigen::internal;
    P m = pselect(pcmp_lt(b, a), b, a);
    m = pselect(pcmp_eq(a, b), por(a, b), m);
    return pselect(pcmp_eq(b, b), m, b);
  }
  using Bits = std::conditional_t<sizeof(S) == 4, uint32_t, uint64_t>;
};

}  // namespace jx::lax::kernels

namespace Eigen::internal {
template <typename S>
struct functor_traits<jx::lax::kernels::MaxFloatOp<S>> {
  enum { Cost = 4, PacketAccess = packet_traits<S>::HasCmp };
};
template <typename S>
struct functor_traits<jx::lax::kernels::MinFloatOp<S>> {
  enum { Cost = 4, PacketAccess = packet_traits<S>::HasCmp };
};
}  // namespace Eigen::internal
