// Internal to elementwise_*.cc (includes Eigen): runs an op functor over a span so that every
// element goes through the same code (elementwise.h).
//
// An op functor provides
//   template <typename S> static constexpr bool kVectorized;  // has a packet version for S
//   template <typename S> S Scalar(S x...) const;              // used only when !kVectorized<S>
//   template <typename P> P Packet(const P& x...) const;       // used only when kVectorized<S>
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <type_traits>

// Packet typedefs carry vector attributes into the templates below (only the elementwise_*.cc
// files include this header).
#pragma GCC diagnostic ignored "-Wignored-attributes"
#include <Eigen/Core>

#include "jx/lax/kernels/dispatch.h"
#include "jx/lax/kernels/elementwise.h"

namespace jx::lax::kernels::internal {

template <typename S>
using PacketOf = typename Eigen::internal::packet_traits<S>::type;

// Elements [0, m) of p (m < the packet size) as a packet with zeros in the other lanes, and
// the store of the first m lanes: masked moves on AVX-512 (no copy through memory), a
// buffer elsewhere.
template <typename P, typename S>
P LoadPartial(const S* p, int64_t m) {
#if defined(EIGEN_VECTORIZE_AVX512)
  if constexpr (std::is_same_v<P, Eigen::internal::Packet16f>) {
    return _mm512_maskz_loadu_ps(static_cast<__mmask16>((1u << m) - 1), p);
  } else if constexpr (std::is_same_v<P, Eigen::internal::Packet8d>) {
    return _mm512_maskz_loadu_pd(static_cast<__mmask8>((1u << m) - 1), p);
  }
#endif
  constexpr int kSize = Eigen::internal::unpacket_traits<P>::size;
  alignas(64) S buf[kSize] = {};
  std::memcpy(buf, p, m * sizeof(S));
  return Eigen::internal::pload<P>(buf);
}
template <typename P, typename S>
void StorePartial(S* p, const P& v, int64_t m) {
#if defined(EIGEN_VECTORIZE_AVX512)
  if constexpr (std::is_same_v<P, Eigen::internal::Packet16f>) {
    _mm512_mask_storeu_ps(p, static_cast<__mmask16>((1u << m) - 1), v);
    return;
  } else if constexpr (std::is_same_v<P, Eigen::internal::Packet8d>) {
    _mm512_mask_storeu_pd(p, static_cast<__mmask8>((1u << m) - 1), v);
    return;
  }
#endif
  constexpr int kSize = Eigen::internal::unpacket_traits<P>::size;
  alignas(64) S buf[kSize];
  Eigen::internal::pstore(buf, v);
  std::memcpy(p, buf, m * sizeof(S));
}

// x + y and x * y as the instruction with x as its first source operand, so that when both
// are NaN the result is x's NaN (x86 returns the first source's) wherever the element sits.
// To the compiler + and * on vectors are commutative and it swaps their operands as it likes,
// not always alike for the full-packet loop and the padded tail (it did in the -O1 sanitizer
// build): two NaNs of different signs then gave a NaN whose sign depended on the position.
// Being asm, they are never contracted into a fused multiply-add either, so a chain of them
// rounds after every op as the same ops run one by one under jit do.
#if defined(__x86_64__) && defined(__AVX__)
#define JX_PINNED_BINARY(Name, P, insn)                                   \
  inline P Name(const P& x, const P& y) {                                 \
    P r;                                                                  \
    asm(insn " %2, %1, %0" : "=v"(r) : "v"(x), "v"(y));                   \
    return r;                                                             \
  }
JX_PINNED_BINARY(PinnedAdd, __m128, "vaddps")
JX_PINNED_BINARY(PinnedAdd, __m128d, "vaddpd")
JX_PINNED_BINARY(PinnedAdd, __m256, "vaddps")
JX_PINNED_BINARY(PinnedAdd, __m256d, "vaddpd")
JX_PINNED_BINARY(PinnedMul, __m128, "vmulps")
JX_PINNED_BINARY(PinnedMul, __m128d, "vmulpd")
JX_PINNED_BINARY(PinnedMul, __m256, "vmulps")
JX_PINNED_BINARY(PinnedMul, __m256d, "vmulpd")
#if defined(__AVX512F__)
JX_PINNED_BINARY(PinnedAdd, __m512, "vaddps")
JX_PINNED_BINARY(PinnedAdd, __m512d, "vaddpd")
JX_PINNED_BINARY(PinnedMul, __m512, "vmulps")
JX_PINNED_BINARY(PinnedMul, __m512d, "vmulpd")
#endif
#undef JX_PINNED_BINARY
#elif defined(__x86_64__)
#define JX_PINNED_BINARY(Name, P, insn)                                   \
  inline P Name(const P& x, const P& y) {                                 \
    P r = x;                                                              \
    asm(insn " %1, %0" : "+x"(r) : "x"(y));                               \
    return r;                                                             \
  }
JX_PINNED_BINARY(PinnedAdd, __m128, "addps")
JX_PINNED_BINARY(PinnedAdd, __m128d, "addpd")
JX_PINNED_BINARY(PinnedMul, __m128, "mulps")
JX_PINNED_BINARY(PinnedMul, __m128d, "mulpd")
#undef JX_PINNED_BINARY
#endif
// Elsewhere (and for other packet types) Eigen's, with whatever operand order results.
template <typename P>
P PinnedAdd(const P& x, const P& y) { return Eigen::internal::padd(x, y); }
template <typename P>
P PinnedMul(const P& x, const P& y) { return Eigen::internal::pmul(x, y); }

// Operand k of a span: n elements, or (bit k of kScalars) one element for all of them.
template <typename S, unsigned kScalars, int k>
struct SpanOperand {
  static constexpr bool kScalar = ((kScalars >> k) & 1) != 0;
  explicit SpanOperand(const void* const* in) : p(static_cast<const S*>(in[k])) {}
  S At(int64_t i) const { return kScalar ? p[0] : p[i]; }
  template <typename P>
  P PacketAt(int64_t i) const {
    if constexpr (kScalar) {
      return Eigen::internal::pset1<P>(p[0]);
    } else {
      return Eigen::internal::ploadu<P>(p + i);
    }
  }
  // Elements [i, i + m) in a full packet padded with zeros (the padding lanes' results are
  // dropped; no op lets one lane affect another).
  template <typename P>
  P PartialAt(int64_t i, int64_t m) const {
    if constexpr (kScalar) {
      return Eigen::internal::pset1<P>(p[0]);
    } else {
      return LoadPartial<P>(p + i, m);
    }
  }
  const S* p;
};

// The streaming store of a full packet (same bits as an ordinary store).
template <typename S, typename P>
void StreamPacket(S* o, const P& v) {
  if constexpr (detail::kHasStreamStore) {
    detail::StreamStore(o, v);
  } else {
    Eigen::internal::pstore(o, v);
  }
}

// op over n elements of S (f32 or f64).
template <typename Op, typename S, int kArity, unsigned kScalars, bool kStream>
void RunFloat(const void* const* in, void* out, int64_t n) {
  using P = PacketOf<S>;
  constexpr int64_t kSize = Eigen::internal::unpacket_traits<P>::size;
  // Operands a, b, c (those past the arity alias the last one and are unused).
  const SpanOperand<S, kScalars, 0> a(in);
  const SpanOperand<S, kScalars, std::min(kArity - 1, 1)> b(in);
  const SpanOperand<S, kScalars, kArity - 1> c(in);
  S* __restrict o = static_cast<S*>(out);
  const Op op;
  if constexpr (Op::template kVectorized<S>) {
    auto full = [&](int64_t i) -> P {
      if constexpr (kArity == 1) {
        return op.Packet(a.template PacketAt<P>(i));
      } else if constexpr (kArity == 2) {
        return op.Packet(a.template PacketAt<P>(i), b.template PacketAt<P>(i));
      } else {
        return op.Packet(a.template PacketAt<P>(i), b.template PacketAt<P>(i), c.template PacketAt<P>(i));
      }
    };
    // Elements [i, i + m), m < kSize, computed as one padded packet.
    auto partial = [&](int64_t i, int64_t m) {
      if (m <= 0) return;
      P r;
      if constexpr (kArity == 1) {
        r = op.Packet(a.template PartialAt<P>(i, m));
      } else if constexpr (kArity == 2) {
        r = op.Packet(a.template PartialAt<P>(i, m), b.template PartialAt<P>(i, m));
      } else {
        r = op.Packet(a.template PartialAt<P>(i, m), b.template PartialAt<P>(i, m), c.template PartialAt<P>(i, m));
      }
      StorePartial(o + i, r, m);
    };
    int64_t i = 0;
    if constexpr (kStream && detail::kHasStreamStore) {
      // Streaming stores need aligned destinations: the unaligned head is a partial packet.
      const int64_t misalign = static_cast<int64_t>(reinterpret_cast<uintptr_t>(o) % sizeof(P));
      if (misalign % sizeof(S) == 0) {
        const int64_t head = std::min<int64_t>(n, misalign == 0 ? 0 : (sizeof(P) - misalign) / sizeof(S));
        partial(0, head);
        i = head;
        for (; i + kSize <= n; i += kSize) StreamPacket(o + i, full(i));
        detail::StreamFence();  // order the weakly ordered stores before the caller reports done
      }
    }
    for (; i + kSize <= n; i += kSize) Eigen::internal::pstoreu(o + i, full(i));
    partial(i, n - i);
  } else {
    for (int64_t i = 0; i < n; ++i) {
      if constexpr (kArity == 1) {
        o[i] = op.Scalar(a.At(i));
      } else if constexpr (kArity == 2) {
        o[i] = op.Scalar(a.At(i), b.At(i));
      } else {
        o[i] = op.Scalar(a.At(i), b.At(i), c.At(i));
      }
    }
  }
}

// op over n elements of a 16-bit float H: widened to f32 in L1-sized blocks, computed by the
// f32 kernel, rounded once to nearest even.
template <typename Op, typename H, int kArity, unsigned kScalars>
void RunHalf(const void* const* in, void* out, int64_t n) {
  constexpr int64_t kBlock = 512;
  alignas(64) float wide[kArity][kBlock];
  alignas(64) float result[kBlock];
  float scalar[kArity] = {};
  const void* f32_in[kArity] = {};
  for (int k = 0; k < kArity; ++k) {
    if ((kScalars >> k) & 1) {
      scalar[k] = static_cast<float>(static_cast<const H*>(in[k])[0]);
      f32_in[k] = &scalar[k];
    } else {
      f32_in[k] = wide[k];
    }
  }
  H* o = static_cast<H*>(out);
  for (int64_t b = 0; b < n; b += kBlock) {
    const int64_t m = std::min(kBlock, n - b);
    for (int k = 0; k < kArity; ++k) {
      if (((kScalars >> k) & 1) == 0) {
        ArrayMap<float>(wide[k], m) = ConstArrayMap<H>(static_cast<const H*>(in[k]) + b, m).template cast<float>();
      }
    }
    RunFloat<Op, float, kArity, kScalars, false>(f32_in, result, m);
    ArrayMap<H>(o + b, m) = ConstArrayMap<float>(result, m).template cast<H>();
  }
}

// The kernel of Op for element type T (a kernel-side type of DispatchDType).
template <typename Op, typename T, int kArity, unsigned kScalars>
ElementwiseFn KernelFor(StoreMode store) {
  if constexpr (kIsHalf<T>) {
    return &RunHalf<Op, T, kArity, kScalars>;
  } else {
    return store == StoreMode::kStreaming ? &RunFloat<Op, T, kArity, kScalars, true>
                                          : &RunFloat<Op, T, kArity, kScalars, false>;
  }
}

template <typename Op, int kArity, unsigned kScalars>
ElementwiseFn KernelForDType(DType dtype, StoreMode store) {
  switch (dtype) {
    case DType::kFloat16: return KernelFor<Op, Eigen::half, kArity, kScalars>(store);
    case DType::kBFloat16: return KernelFor<Op, Eigen::bfloat16, kArity, kScalars>(store);
    case DType::kFloat32: return KernelFor<Op, float, kArity, kScalars>(store);
    case DType::kFloat64: return KernelFor<Op, double, kArity, kScalars>(store);
    default: return nullptr;
  }
}

// Integer and bool kernels (elementwise_integer.cc); nullptr where the op does not apply.
ElementwiseFn FindIntegerUnaryFn(UnaryOp op, DType dtype);
ElementwiseFn FindIntegerBinaryFn(BinaryOp op, DType dtype, unsigned scalars);

// Adapters from Eigen's functors (scalar_exp_op<S>, scalar_sum_op<S, S>, ...): Eigen decides
// whether a packet version exists, exactly as its own array expressions do.
template <template <typename> class EigenOp>
struct EigenUnary {
  template <typename S>
  static constexpr bool kVectorized = Eigen::internal::functor_traits<EigenOp<S>>::PacketAccess;
  template <typename S>
  S Scalar(S x) const { return EigenOp<S>()(x); }
  template <typename P>
  P Packet(const P& x) const {
    return EigenOp<typename Eigen::internal::unpacket_traits<P>::type>().packetOp(x);
  }
};
template <template <typename, typename> class EigenOp>
struct EigenBinary {
  template <typename S>
  static constexpr bool kVectorized = Eigen::internal::functor_traits<EigenOp<S, S>>::PacketAccess;
  template <typename S>
  S Scalar(S x, S y) const { return EigenOp<S, S>()(x, y); }
  template <typename P>
  P Packet(const P& x, const P& y) const {
    using S = typename Eigen::internal::unpacket_traits<P>::type;
    return EigenOp<S, S>().packetOp(x, y);
  }
};

// An op with no packet version: one scalar function for every element.
template <typename Fn>
struct ScalarOnly {
  template <typename S>
  static constexpr bool kVectorized = false;
  template <typename... S>
  auto Scalar(S... x) const { return Fn()(x...); }
  template <typename P>
  P Packet(const P& x) const { return x; }  // never called
  template <typename P>
  P Packet(const P& x, const P&) const { return x; }  // never called
};

}  // namespace jx::lax::kernels::internal
