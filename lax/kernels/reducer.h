// Kernel-side reduction monoids (internal; includes Eigen), shared by the reduction,
// cumulative and window families: accumulation types, identities and vectorized
// accumulate / row-reduce loops.
//
// Accumulation: float sums and products (16-bit, f32 and f64) accumulate in f64 lanes, so a
// long or cancelling f32 sum is still correctly rounded; max/min of 16-bit floats compare in
// f32 (exact). Integer sums and
// products wrap (two's complement, as XLA) and are computed in an unsigned type of at least
// 32 bits, which has no overflow UB and no promotion to int. Booleans are processed as 0/1
// bytes; their identities differ from uint8's (and: true, max: false, min: true).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

#include "jx/lax/kernels/dispatch.h"

namespace jx::lax::kernels {

enum class ReduceKind { kSum, kProd, kMax, kMin, kAnd, kOr };

// Elements processed per block: small enough that f32 partial sums stay exact-ish and the
// widened copies of 16-bit floats stay in L1.
inline constexpr int64_t kReduceBlock = 256;
// Columns per block of the column kernels: long contiguous runs of each row (good for the
// prefetcher) while f64 accumulators (16 KiB) stay in L1.
inline constexpr int64_t kColumnBlock = 2048;

// Converts m elements between a 16-bit float and f32 with Eigen's vectorized casts.
template <typename T>
inline void ToFloat(const T* in, float* out, int64_t m) {
  ArrayMap<float>(out, m) = ConstArrayMap<T>(in, m).template cast<float>();
}
template <typename T>
inline void FromFloat(const float* in, T* out, int64_t m) {
  ArrayMap<T>(out, m) = ConstArrayMap<float>(in, m).template cast<T>();
}

// The element type K's kernels run T as. Wrapping sums and products (in unsigned
// accumulators) and bitwise and/or give the same bits on a signed integer as on the unsigned
// integer of its width, so signed integers run their unsigned counterpart's kernels: one
// instantiation per width instead of two, most of the reduction, window and cumulative
// kernels' compile time. Max and min order the two differently and keep their own.
template <ReduceKind K, typename T>
using SharedElement =
    typename std::conditional_t<kIsInt<T> && std::is_signed_v<T> && K != ReduceKind::kMax && K != ReduceKind::kMin,
                                std::make_unsigned<T>, std::type_identity<T>>::type;

template <ReduceKind K, typename T>
struct Reducer {
  static constexpr bool kFloat = kIsFloat<T>;
  static constexpr bool kArith = K == ReduceKind::kSum || K == ReduceKind::kProd;
  using Unsigned = std::conditional_t<sizeof(T) <= 4, uint32_t, uint64_t>;
  // Element type of the accumulators (vectorized lanes and carried partial results).
  using Acc = std::conditional_t<kFloat, std::conditional_t<kArith, double, ComputeType<T>>,
                                 std::conditional_t<kArith, Unsigned, T>>;

  template <typename A>
  static A Identity(bool is_bool) {
    switch (K) {
      case ReduceKind::kSum: case ReduceKind::kOr: return A(0);
      case ReduceKind::kProd: return A(1);
      case ReduceKind::kAnd:
        if constexpr (std::is_integral_v<A>) return is_bool ? A(1) : static_cast<A>(~A(0));
        return A(1);
      case ReduceKind::kMax:
        if (is_bool) return A(0);
        if constexpr (kFloat) return -std::numeric_limits<A>::infinity();
        else return static_cast<A>(std::numeric_limits<T>::lowest());
      case ReduceKind::kMin:
        if (is_bool) return A(1);
        if constexpr (kFloat) return std::numeric_limits<A>::infinity();
        else return static_cast<A>(std::numeric_limits<T>::max());
    }
    return A(0);
  }

  static Acc Load(T x) {
    if constexpr (kIsHalf<T>) return static_cast<float>(x);
    else return static_cast<Acc>(x);  // signed -> unsigned is modular
  }
  static T Store(Acc w) {
    if constexpr (kIsHalf<T>) return T(static_cast<float>(w));
    else return static_cast<T>(w);  // unsigned -> signed is modular (C++20)
  }

  // The monoid, branch-free so loops over it vectorize. max/min propagate NaN.
  template <typename A>
  static A Combine(A a, A b) {
    if constexpr (K == ReduceKind::kSum) return a + b;
    else if constexpr (K == ReduceKind::kProd) return a * b;
    else if constexpr (K == ReduceKind::kAnd) return a & b;
    else if constexpr (K == ReduceKind::kOr) return a | b;
    else if constexpr (K == ReduceKind::kMax) {
      if constexpr (std::is_floating_point_v<A>) return (a > b || a != a) ? a : b;
      else return a > b ? a : b;
    } else {
      if constexpr (std::is_floating_point_v<A>) return (a < b || a != a) ? a : b;
      else return a < b ? a : b;
    }
  }

  // acc[k] = acc[k] op x[k] for k < m (16-bit floats are widened in blocks first).
  static void Accumulate(Acc* __restrict acc, const T* __restrict x, int64_t m) {
    if constexpr (kIsHalf<T>) {
      alignas(64) float buf[kReduceBlock];
      for (int64_t b = 0; b < m; b += kReduceBlock) {
        const int64_t n = std::min(kReduceBlock, m - b);
        ToFloat(x + b, buf, n);
        Acc* a = acc + b;
        for (int64_t k = 0; k < n; ++k) a[k] = Combine(a[k], static_cast<Acc>(buf[k]));
      }
    } else {
      for (int64_t k = 0; k < m; ++k) acc[k] = Combine(acc[k], Load(x[k]));
    }
  }

  // acc[k] = acc[k] op x[k] op x[k + stride] op x[k + 2 stride] op x[k + 3 stride]: four
  // rows per pass over the accumulators.
  static void Accumulate4(Acc* __restrict acc, const T* __restrict x, int64_t stride, int64_t m) {
    const T* x0 = x;
    const T* x1 = x + stride;
    const T* x2 = x + 2 * stride;
    const T* x3 = x + 3 * stride;
    if constexpr (kIsHalf<T>) {
      alignas(64) float buf[4][kReduceBlock];
      for (int64_t b = 0; b < m; b += kReduceBlock) {
        const int64_t n = std::min(kReduceBlock, m - b);
        ToFloat(x0 + b, buf[0], n);
        ToFloat(x1 + b, buf[1], n);
        ToFloat(x2 + b, buf[2], n);
        ToFloat(x3 + b, buf[3], n);
        Acc* a = acc + b;
        for (int64_t k = 0; k < n; ++k) {
          a[k] = Combine(a[k], Combine(Combine(static_cast<Acc>(buf[0][k]), static_cast<Acc>(buf[1][k])),
                                       Combine(static_cast<Acc>(buf[2][k]), static_cast<Acc>(buf[3][k]))));
        }
      }
    } else {
      for (int64_t k = 0; k < m; ++k) {
        acc[k] = Combine(acc[k], Combine(Combine(Load(x0[k]), Load(x1[k])), Combine(Load(x2[k]), Load(x3[k]))));
      }
    }
  }

  // The reduction of n contiguous elements (not yet combined with an identity).
  static Acc Row(const T* x, int64_t n, bool is_bool) {
    if constexpr (kFloat && kArith && !std::is_same_v<T, double>) {
      // f32 / 16-bit into f64: independent lanes, so the loop vectorizes without reassociation.
      constexpr int kLanes = 16;
      double lanes[kLanes];
      for (double& l : lanes) l = Identity<double>(false);
      alignas(64) float buf[kReduceBlock];
      for (int64_t b = 0; b < n; b += kReduceBlock) {
        const int64_t m = std::min(kReduceBlock, n - b);
        const float* p;
        if constexpr (kIsHalf<T>) {
          ToFloat(x + b, buf, m);
          p = buf;
        } else {
          p = x + b;
        }
        int64_t i = 0;
        for (; i + kLanes <= m; i += kLanes) {
          for (int l = 0; l < kLanes; ++l) lanes[l] = Combine(lanes[l], static_cast<double>(p[i + l]));
        }
        for (; i < m; ++i) lanes[0] = Combine(lanes[0], static_cast<double>(p[i]));
      }
      for (int l = 1; l < kLanes; ++l) lanes[0] = Combine(lanes[0], lanes[l]);
      return lanes[0];
    } else if constexpr (kFloat) {
      // f64 sums and products, max/min: kRowLanes lanes by position (element i of each block
      // in lane i % kRowLanes), combined in lane order at the end, so the association depends
      // only on n, never on the buffer's address (Eigen's reductions start at the first
      // aligned packet: an f64 sum's last bits, or which NaN a max returned, moved with the
      // allocation, and jit and eager disagreed).
      alignas(64) Acc lanes[kRowLanes];
      std::fill(lanes, lanes + kRowLanes, Identity<Acc>(false));
      alignas(64) float buf[kIsHalf<T> ? kReduceBlock : 1];
      for (int64_t b = 0; b < n; b += kReduceBlock) {
        const int64_t m = std::min(kReduceBlock, n - b);
        const Acc* p;
        if constexpr (kIsHalf<T>) {
          ToFloat(x + b, buf, m);
          p = buf;
        } else {
          p = x + b;
        }
        FoldLanes(lanes, p, m / kRowLanes);
        for (int64_t i = m / kRowLanes * kRowLanes, l = 0; i < m; ++i, ++l) lanes[l] = Combine(lanes[l], p[i]);
      }
      Acc total = lanes[0];
      for (int l = 1; l < kRowLanes; ++l) total = Combine(total, lanes[l]);
      return total;
    } else {
      Acc a = Identity<Acc>(is_bool);
      for (int64_t i = 0; i < n; ++i) a = Combine(a, Load(x[i]));
      return a;
    }
  }

 private:
  static constexpr int kRowLanes = 16;

  // lanes[l] = op(lanes[l], p[b * kRowLanes + l]) for b < blocks, in Eigen packets.
  static void FoldLanes(Acc* lanes, const Acc* p, int64_t blocks) {
    namespace ei = Eigen::internal;
    using Packet = typename ei::packet_traits<Acc>::type;
    constexpr int kSize = ei::unpacket_traits<Packet>::size;
    static_assert(kRowLanes % kSize == 0, "a packet holds a whole number of lanes");
    constexpr int kPackets = kRowLanes / kSize;
    Packet acc[kPackets];
    for (int k = 0; k < kPackets; ++k) acc[k] = ei::ploadu<Packet>(lanes + k * kSize);
    for (int64_t b = 0; b < blocks; ++b) {
      for (int k = 0; k < kPackets; ++k) {
        const Packet v = ei::ploadu<Packet>(p + b * kRowLanes + k * kSize);
        if constexpr (K == ReduceKind::kSum) acc[k] = ei::padd(acc[k], v);
        else if constexpr (K == ReduceKind::kProd) acc[k] = ei::pmul(acc[k], v);
        else if constexpr (K == ReduceKind::kMax) acc[k] = ei::pmax<Eigen::PropagateNaN>(acc[k], v);
        else acc[k] = ei::pmin<Eigen::PropagateNaN>(acc[k], v);
      }
    }
    for (int k = 0; k < kPackets; ++k) ei::pstoreu(lanes + k * kSize, acc[k]);
  }
};

// The reduction family's monoid with XLA's float max/min (the HLO evaluator's, so compiled
// and eager window and cumulative ops agree with it bit for bit): a NaN operand gives the
// quiet NaN, and equal operands pick +0 over -0 for max (-0 for min). Branch-free selects,
// so loops over it still vectorize.
template <ReduceKind K, typename T>
struct XlaReducer {
  using Red = Reducer<K, T>;
  using W = typename Red::Acc;
  static constexpr bool kXlaMinMax =
      std::is_floating_point_v<W> && (K == ReduceKind::kMax || K == ReduceKind::kMin);

  static W Load(T x) { return static_cast<W>(Red::Load(x)); }
  static T Store(W w) { return Red::Store(w); }
  static W Combine(W a, W b) {
    if constexpr (kXlaMinMax) {
      constexpr bool kMax = K == ReduceKind::kMax;
      const W better = (kMax ? a > b : a < b) ? a : b;
      const W tie = std::signbit(a) == kMax ? b : a;
      const W r = a == b ? tie : better;
      return (a != a || b != b) ? std::numeric_limits<W>::quiet_NaN() : r;
    } else {
      return Red::Combine(a, b);
    }
  }
  // acc[k] = acc[k] op x[k] for k < m.
  static void Accumulate(W* __restrict acc, const T* __restrict x, int64_t m) {
    if constexpr (kIsHalf<T>) {
      alignas(64) float buf[kReduceBlock];
      for (int64_t b = 0; b < m; b += kReduceBlock) {
        const int64_t n = std::min(kReduceBlock, m - b);
        ToFloat(x + b, buf, n);
        W* a = acc + b;
        for (int64_t k = 0; k < n; ++k) a[k] = Combine(a[k], static_cast<W>(buf[k]));
      }
    } else {
      for (int64_t k = 0; k < m; ++k) acc[k] = Combine(acc[k], Load(x[k]));
    }
  }
};

}  // namespace jx::lax::kernels
