// Binary floating-point kernels (elementwise.h) and the parallel driver both eager rules use.
#include <cmath>

#include "jx/core/parallel.h"
#include "jx/lax/kernels/elementwise.h"
#include "jx/lax/kernels/elementwise_runner.h"

namespace jx::lax::kernels {
namespace internal {
namespace {

// XLA's max/min (dispatch.h): NaN-propagating, -0 < +0.
template <template <typename> class FloatOp>
struct MaxMin {
  template <typename S>
  static constexpr bool kVectorized = Eigen::internal::packet_traits<S>::HasCmp;
  template <typename S>
  S Scalar(S x, S y) const { return FloatOp<S>()(x, y); }
  template <typename P>
  P Packet(const P& x, const P& y) const {
    return FloatOp<typename Eigen::internal::unpacket_traits<P>::type>().packetOp(x, y);
  }
};

// clamp(lo, x, hi) = min(hi, max(lo, x)) with XLA's max/min.
struct ClampOp {
  template <typename S>
  static constexpr bool kVectorized = Eigen::internal::packet_traits<S>::HasCmp;
  template <typename S>
  S Scalar(S lo, S x, S hi) const { return MinFloatOp<S>()(hi, MaxFloatOp<S>()(lo, x)); }
  template <typename P>
  P Packet(const P& lo, const P& x, const P& hi) const {
    using S = typename Eigen::internal::unpacket_traits<P>::type;
    return MinFloatOp<S>().packetOp(hi, MaxFloatOp<S>().packetOp(lo, x));
  }
};

template <bool kMul>
struct PinnedAddMul {
  template <typename S>
  static constexpr bool kVectorized = true;
  template <typename S>
  S Scalar(S x, S y) const { return kMul ? x * y : x + y; }
  template <typename P>
  P Packet(const P& x, const P& y) const { return kMul ? PinnedMul(x, y) : PinnedAdd(x, y); }
};

struct FmodFn {
  template <typename S>
  S operator()(S x, S y) const { return std::fmod(x, y); }
};
struct Atan2Fn {
  template <typename S>
  S operator()(S x, S y) const { return std::atan2(x, y); }
};

template <typename Op>
ElementwiseFn Binary(DType dtype, unsigned scalars, StoreMode store) {
  switch (scalars) {
    case 0: return KernelForDType<Op, 2, 0>(dtype, store);
    case 1: return KernelForDType<Op, 2, 1>(dtype, store);
    case 2: return KernelForDType<Op, 2, 2>(dtype, store);
    default: return nullptr;
  }
}

}  // namespace
}  // namespace internal

ElementwiseFn FindBinaryFn(BinaryOp op, DType dtype, unsigned scalar_operands, StoreMode store) {
  using namespace internal;  // NOLINT
  using namespace Eigen::internal;  // NOLINT
  const unsigned sc = scalar_operands;
  if (!IsFloating(dtype)) return FindIntegerBinaryFn(op, dtype, sc);
  switch (op) {
    case BinaryOp::kAdd: return Binary<PinnedAddMul<false>>(dtype, sc, store);
    case BinaryOp::kSub: return Binary<EigenBinary<scalar_difference_op>>(dtype, sc, store);
    case BinaryOp::kMul: return Binary<PinnedAddMul<true>>(dtype, sc, store);
    case BinaryOp::kDiv: return Binary<EigenBinary<scalar_quotient_op>>(dtype, sc, store);
    case BinaryOp::kRem: return Binary<ScalarOnly<FmodFn>>(dtype, sc, store);
    case BinaryOp::kPow: return Binary<EigenBinary<scalar_pow_op>>(dtype, sc, store);
    case BinaryOp::kMax: return Binary<MaxMin<MaxFloatOp>>(dtype, sc, store);
    case BinaryOp::kMin: return Binary<MaxMin<MinFloatOp>>(dtype, sc, store);
    case BinaryOp::kAtan2: return Binary<ScalarOnly<Atan2Fn>>(dtype, sc, store);
    default: return nullptr;  // bitwise ops
  }
  return nullptr;
}

ElementwiseFn FindClampFn(DType dtype, unsigned scalar_operands, StoreMode store) {
  using internal::ClampOp;
  using internal::KernelForDType;
  switch (scalar_operands) {
    case 0: return KernelForDType<ClampOp, 3, 0>(dtype, store);
    case 1: return KernelForDType<ClampOp, 3, 1>(dtype, store);
    case 2: return KernelForDType<ClampOp, 3, 2>(dtype, store);
    case 3: return KernelForDType<ClampOp, 3, 3>(dtype, store);
    case 4: return KernelForDType<ClampOp, 3, 4>(dtype, store);
    case 5: return KernelForDType<ClampOp, 3, 5>(dtype, store);
    case 6: return KernelForDType<ClampOp, 3, 6>(dtype, store);
    default: return nullptr;
  }
}

bool IsExpensive(BinaryOp op) {
  return op == BinaryOp::kRem || op == BinaryOp::kPow || op == BinaryOp::kAtan2;
}

bool UseStreamingStores(int64_t out_bytes) { return out_bytes >= StreamingStoreBytes(); }

void RunElementwise(ElementwiseFn fn, int arity, const void* const* in, unsigned scalar_operands,
                    int64_t in_esize, void* out, int64_t out_esize, int64_t n, int64_t grain) {
  if (n <= 0) return;
  ParallelFor(n, grain, [&](int64_t begin, int64_t end) {
    const void* chunk[3] = {nullptr, nullptr, nullptr};
    for (int k = 0; k < arity; ++k) {
      chunk[k] = ((scalar_operands >> k) & 1) ? in[k] : static_cast<const char*>(in[k]) + begin * in_esize;
    }
    fn(chunk, static_cast<char*>(out) + begin * out_esize, end - begin);
  });
}

}  // namespace jx::lax::kernels
