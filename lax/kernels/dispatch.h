// Kernel-side helpers (internal; includes Eigen): dispatch on dtype to a C++ element type and
// run elementwise loops with Eigen packet math over TBB chunks.
#pragma once

#include <cstdint>
#include <type_traits>

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

template <typename T>
T* MutableData(const Array& a) { return static_cast<T*>(a.mutable_data()); }
template <typename T>
const T* Data(const Array& a) { return static_cast<const T*>(a.data()); }

// Splits [0, n) over the pool in chunks of at least kParallelGrain elements.
template <typename F>
void ForChunks(int64_t n, F&& f, int64_t grain = kParallelGrain) {
  ParallelFor(n, grain, [&](int64_t begin, int64_t end) { f(begin, end); });
}

template <typename T>
using ArrayMap = Eigen::Map<Eigen::Array<T, Eigen::Dynamic, 1>, Eigen::Unaligned>;
template <typename T>
using ConstArrayMap = Eigen::Map<const Eigen::Array<T, Eigen::Dynamic, 1>, Eigen::Unaligned>;

// Elementwise unary map: out[i] = expr(in[i]) where expr maps an Eigen array expression
// (vectorized with packet math). 16-bit floats are widened to f32 in cache-sized blocks.
template <typename T, typename Out, typename Expr>
void UnaryMap(const T* in, Out* out, int64_t n, Expr expr) {
  ForChunks(n, [&](int64_t begin, int64_t end) {
    if constexpr (kIsHalf<T>) {
      constexpr int64_t kBlock = 1024;
      alignas(64) float buf[kBlock];
      for (int64_t b = begin; b < end; b += kBlock) {
        const int64_t m = std::min(kBlock, end - b);
        ArrayMap<float> fb(buf, m);
        fb = ConstArrayMap<T>(in + b, m).template cast<float>();
        ArrayMap<Out>(out + b, m) = expr(fb).template cast<Out>();
      }
    } else {
      ArrayMap<Out>(out + begin, end - begin) = expr(ConstArrayMap<T>(in + begin, end - begin));
    }
  });
}

// Elementwise binary map: out[i] = expr(a[i], b[i]).
template <typename T, typename Out, typename Expr>
void BinaryMap(const T* a, const T* b, Out* out, int64_t n, Expr expr) {
  ForChunks(n, [&](int64_t begin, int64_t end) {
    if constexpr (kIsHalf<T>) {
      constexpr int64_t kBlock = 1024;
      alignas(64) float ba[kBlock];
      alignas(64) float bb[kBlock];
      for (int64_t k = begin; k < end; k += kBlock) {
        const int64_t m = std::min(kBlock, end - k);
        ArrayMap<float> fa(ba, m), fb(bb, m);
        fa = ConstArrayMap<T>(a + k, m).template cast<float>();
        fb = ConstArrayMap<T>(b + k, m).template cast<float>();
        ArrayMap<Out>(out + k, m) = expr(fa, fb).template cast<Out>();
      }
    } else {
      ArrayMap<Out>(out + begin, end - begin) =
          expr(ConstArrayMap<T>(a + begin, end - begin), ConstArrayMap<T>(b + begin, end - begin));
    }
  });
}

}  // namespace jx::lax::kernels
