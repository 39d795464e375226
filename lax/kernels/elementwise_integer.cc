// Integer and bool kernels (elementwise.h) and comparisons of every dtype. Integer arithmetic
// wraps (computed in the unsigned type of the same width) and takes XLA's results where C++
// has undefined behaviour: division by zero, INT_MIN / -1, shifts by >= the bit width. Plain
// loops over one scalar function, which GCC vectorizes at -O3.
#include <cstring>
#include <limits>
#include <type_traits>

#include "jx/lax/kernels/elementwise.h"
#include "jx/lax/kernels/elementwise_runner.h"

namespace jx::lax::kernels {
namespace internal {
namespace {

template <typename T>
T WrapAdd(T a, T b) { return static_cast<T>(static_cast<WrapType<T>>(a) + static_cast<WrapType<T>>(b)); }
template <typename T>
T WrapSub(T a, T b) { return static_cast<T>(static_cast<WrapType<T>>(a) - static_cast<WrapType<T>>(b)); }
template <typename T>
T WrapMul(T a, T b) { return static_cast<T>(static_cast<WrapType<T>>(a) * static_cast<WrapType<T>>(b)); }
template <typename T>
T WrapNeg(T x) { return static_cast<T>(WrapType<T>(0) - static_cast<WrapType<T>>(x)); }

// x / 0 = -1 (all ones); INT_MIN / -1 = INT_MIN; otherwise rounds toward zero.
template <typename T>
T IntDiv(T x, T y) {
  if (y == 0) return static_cast<T>(~T(0));
  if constexpr (std::is_signed_v<T>) {
    if (x == std::numeric_limits<T>::min() && y == T(-1)) return x;
  }
  return static_cast<T>(x / y);
}
// x % 0 = x; INT_MIN % -1 = 0; otherwise the sign of the dividend.
template <typename T>
T IntRem(T x, T y) {
  if (y == 0) return x;
  if constexpr (std::is_signed_v<T>) {
    if (y == T(-1)) return T(0);
  }
  return static_cast<T>(x % y);
}

// XLA's integer pow: square-and-multiply over the low 6 exponent bits; a negative exponent
// gives 1 for base 1 and 0 otherwise.
template <typename T>
T IntPow(T base, T exponent) {
  using W = WrapType<T>;
  W acc = 1, b = static_cast<W>(base);
  auto e = static_cast<std::make_unsigned_t<T>>(exponent);
  for (int i = 0; i < 6; ++i) {
    acc = (e & 1) ? static_cast<W>(acc * b) : acc;
    b = static_cast<W>(b * b);
    e >>= 1;
  }
  const bool negative = static_cast<std::make_signed_t<T>>(exponent) < 0;
  return negative ? static_cast<T>(base == T(1)) : static_cast<T>(acc);
}

// Shift amounts are read as unsigned: negative or >= the bit width saturate.
template <typename T>
T ShiftLeft(T x, T y) {
  constexpr auto kBits = static_cast<std::make_unsigned_t<T>>(sizeof(T) * 8);
  const auto s = static_cast<std::make_unsigned_t<T>>(y);
  return s >= kBits ? T(0) : static_cast<T>(static_cast<WrapType<T>>(x) << s);
}
template <typename T>
T ShiftRightLogical(T x, T y) {
  using U = std::make_unsigned_t<T>;
  constexpr auto kBits = static_cast<U>(sizeof(T) * 8);
  const auto s = static_cast<U>(y);
  return s >= kBits ? T(0) : static_cast<T>(static_cast<U>(x) >> s);
}
template <typename T>
T ShiftRightArithmetic(T x, T y) {
  using U = std::make_unsigned_t<T>;
  using S = std::make_signed_t<T>;
  constexpr auto kBits = static_cast<U>(sizeof(T) * 8);
  const auto s = static_cast<U>(y);
  const auto sx = static_cast<S>(x);  // unsigned inputs shift their bits as signed, as XLA
  return static_cast<T>(s >= kBits ? S(sx < 0 ? -1 : 0) : static_cast<S>(sx >> s));
}

// out[i] = fn(a[i], b[i]) (or fn(a[i])), operand k read with stride 0 when bit k of kScalars.
template <typename T, typename Out, int kArity, unsigned kScalars, typename Fn>
void Loop(const void* const* in, void* out, int64_t n, Fn fn) {
  const T* __restrict a = static_cast<const T*>(in[0]);
  const T* __restrict b = static_cast<const T*>(in[kArity - 1]);
  Out* __restrict o = static_cast<Out*>(out);
  const int64_t sa = (kScalars & 1) ? 0 : 1, sb = (kScalars & 2) ? 0 : 1;
  for (int64_t i = 0; i < n; ++i) {
    if constexpr (kArity == 1) {
      o[i] = static_cast<Out>(fn(a[i]));
    } else {
      o[i] = static_cast<Out>(fn(a[i * sa], b[i * sb]));
    }
  }
}

template <typename T, typename Out, int kArity, typename Fn>
ElementwiseFn LoopFor(unsigned scalars) {
  if constexpr (kArity == 1) {
    if (scalars != 0) return nullptr;
    return [](const void* const* in, void* out, int64_t n) { Loop<T, Out, 1, 0>(in, out, n, Fn()); };
  } else {
    switch (scalars) {
      case 0: return [](const void* const* in, void* out, int64_t n) { Loop<T, Out, 2, 0>(in, out, n, Fn()); };
      case 1: return [](const void* const* in, void* out, int64_t n) { Loop<T, Out, 2, 1>(in, out, n, Fn()); };
      case 2: return [](const void* const* in, void* out, int64_t n) { Loop<T, Out, 2, 2>(in, out, n, Fn()); };
      default: return nullptr;
    }
  }
}

// Calls fn(TypeTag<T>) for integer and bool dtypes; nullptr for the rest.
template <typename F>
ElementwiseFn ForIntegerOrBool(DType dtype, F&& fn) {
  if (IsFloating(dtype)) return nullptr;
  return DispatchDType(dtype, [&](auto tag) -> ElementwiseFn {
    using T = typename decltype(tag)::type;
    if constexpr (kIsFloat<T>) {
      return nullptr;
    } else {
      return fn(tag);
    }
  });
}

#define JX_INT_FN(Name, expr)                   \
  struct Name {                                 \
    template <typename T>                       \
    auto operator()(T a, T b) const { return expr; } \
  }
JX_INT_FN(AddFn, WrapAdd(a, b));
JX_INT_FN(SubFn, WrapSub(a, b));
JX_INT_FN(MulFn, WrapMul(a, b));
JX_INT_FN(DivFn, IntDiv(a, b));
JX_INT_FN(RemFn, IntRem(a, b));
JX_INT_FN(PowFn, IntPow(a, b));
JX_INT_FN(MaxFn, a < b ? b : a);
JX_INT_FN(MinFn, b < a ? b : a);
JX_INT_FN(AndFn, static_cast<T>(a & b));
JX_INT_FN(OrFn, static_cast<T>(a | b));
JX_INT_FN(XorFn, static_cast<T>(a ^ b));
JX_INT_FN(ShlFn, ShiftLeft(a, b));
JX_INT_FN(ShrlFn, ShiftRightLogical(a, b));
JX_INT_FN(ShraFn, ShiftRightArithmetic(a, b));
#undef JX_INT_FN

struct NegFn {
  template <typename T>
  T operator()(T x) const { return WrapNeg(x); }
};
struct AbsFn {
  template <typename T>
  T operator()(T x) const { return x < 0 ? WrapNeg(x) : x; }  // abs(INT_MIN) wraps, as XLA
};
struct SignFn {
  template <typename T>
  T operator()(T x) const {
    if constexpr (std::is_signed_v<T>) {
      return static_cast<T>((x > 0) - (x < 0));
    } else {
      return static_cast<T>(x != 0);
    }
  }
};
struct NotFn {
  template <typename T>
  T operator()(T x) const {
    if constexpr (std::is_same_v<T, bool>) {
      return !x;
    } else {
      return static_cast<T>(~x);
    }
  }
};

template <typename Fn, bool kBoolToo = false>
ElementwiseFn IntBinary(DType dtype, unsigned scalars) {
  return ForIntegerOrBool(dtype, [&](auto tag) -> ElementwiseFn {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_same_v<T, bool> && !kBoolToo) {
      return nullptr;
    } else {
      return LoopFor<T, T, 2, Fn>(scalars);
    }
  });
}

template <typename Fn, bool kBoolToo = false>
ElementwiseFn IntUnary(DType dtype) {
  return ForIntegerOrBool(dtype, [&](auto tag) -> ElementwiseFn {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_same_v<T, bool> && !kBoolToo) {
      return nullptr;
    } else {
      return LoopFor<T, T, 1, Fn>(0);
    }
  });
}

// Comparisons: 16-bit floats are compared as f32 (exact), widened block by block.
template <CompareOp kOp>
struct CompareFn {
  template <typename T>
  bool operator()(T a, T b) const {
    if constexpr (kOp == CompareOp::kEq) return a == b;
    if constexpr (kOp == CompareOp::kNe) return a != b;
    if constexpr (kOp == CompareOp::kLt) return a < b;
    if constexpr (kOp == CompareOp::kLe) return a <= b;
    if constexpr (kOp == CompareOp::kGt) return a > b;
    if constexpr (kOp == CompareOp::kGe) return a >= b;
  }
};

template <typename H, CompareOp kOp, unsigned kScalars>
void CompareHalf(const void* const* in, void* out, int64_t n) {
  constexpr int64_t kBlock = 512;
  alignas(64) float wide[2][kBlock];
  const void* f32_in[2];
  for (int k = 0; k < 2; ++k) {
    if ((kScalars >> k) & 1) {
      wide[k][0] = static_cast<float>(static_cast<const H*>(in[k])[0]);
    }
    f32_in[k] = wide[k];
  }
  bool* o = static_cast<bool*>(out);
  for (int64_t b = 0; b < n; b += kBlock) {
    const int64_t m = std::min(kBlock, n - b);
    for (int k = 0; k < 2; ++k) {
      if (((kScalars >> k) & 1) == 0) {
        ArrayMap<float>(wide[k], m) = ConstArrayMap<H>(static_cast<const H*>(in[k]) + b, m).template cast<float>();
      }
    }
    Loop<float, bool, 2, kScalars>(f32_in, o + b, m, CompareFn<kOp>());
  }
}

template <CompareOp kOp>
ElementwiseFn CompareFor(DType dtype, unsigned scalars) {
  return DispatchDType(dtype, [&](auto tag) -> ElementwiseFn {
    using T = typename decltype(tag)::type;
    if constexpr (kIsHalf<T>) {
      switch (scalars) {
        case 0: return &CompareHalf<T, kOp, 0>;
        case 1: return &CompareHalf<T, kOp, 1>;
        case 2: return &CompareHalf<T, kOp, 2>;
        default: return nullptr;
      }
    } else {
      return LoopFor<T, bool, 2, CompareFn<kOp>>(scalars);
    }
  });
}

}  // namespace

ElementwiseFn FindIntegerUnaryFn(UnaryOp op, DType dtype) {
  switch (op) {
    case UnaryOp::kNeg: return IntUnary<NegFn>(dtype);
    case UnaryOp::kAbs: return IsSignedInt(dtype) ? IntUnary<AbsFn>(dtype) : nullptr;
    case UnaryOp::kSign: return IntUnary<SignFn>(dtype);
    case UnaryOp::kNot: return IntUnary<NotFn, /*kBoolToo=*/true>(dtype);
    default: return nullptr;
  }
}

ElementwiseFn FindIntegerBinaryFn(BinaryOp op, DType dtype, unsigned scalars) {
  switch (op) {
    case BinaryOp::kAdd: return IntBinary<AddFn>(dtype, scalars);
    case BinaryOp::kSub: return IntBinary<SubFn>(dtype, scalars);
    case BinaryOp::kMul: return IntBinary<MulFn>(dtype, scalars);
    case BinaryOp::kDiv: return IntBinary<DivFn>(dtype, scalars);
    case BinaryOp::kRem: return IntBinary<RemFn>(dtype, scalars);
    case BinaryOp::kPow: return IntBinary<PowFn>(dtype, scalars);
    case BinaryOp::kMax: return IntBinary<MaxFn, true>(dtype, scalars);
    case BinaryOp::kMin: return IntBinary<MinFn, true>(dtype, scalars);
    case BinaryOp::kAnd: return IntBinary<AndFn, true>(dtype, scalars);
    case BinaryOp::kOr: return IntBinary<OrFn, true>(dtype, scalars);
    case BinaryOp::kXor: return IntBinary<XorFn, true>(dtype, scalars);
    case BinaryOp::kShiftLeft: return IntBinary<ShlFn>(dtype, scalars);
    case BinaryOp::kShiftRightLogical: return IntBinary<ShrlFn>(dtype, scalars);
    case BinaryOp::kShiftRightArithmetic: return IntBinary<ShraFn>(dtype, scalars);
    case BinaryOp::kAtan2: return nullptr;
  }
  return nullptr;
}

template <typename Bits, Bits kExponent>
void IsFinite(const void* const* in, void* out, int64_t n) {
  const Bits* __restrict x = static_cast<const Bits*>(in[0]);
  bool* __restrict o = static_cast<bool*>(out);
  for (int64_t i = 0; i < n; ++i) o[i] = (x[i] & kExponent) != kExponent;
}

}  // namespace internal

ElementwiseFn FindIsFiniteFn(DType dtype) {
  switch (dtype) {
    case DType::kFloat16: return &internal::IsFinite<uint16_t, 0x7c00>;
    case DType::kBFloat16: return &internal::IsFinite<uint16_t, 0x7f80>;
    case DType::kFloat32: return &internal::IsFinite<uint32_t, 0x7f800000u>;
    case DType::kFloat64: return &internal::IsFinite<uint64_t, 0x7ff0000000000000ull>;
    default: return nullptr;
  }
}

ElementwiseFn FindCompareFn(CompareOp op, DType dtype, unsigned scalar_operands) {
  using namespace internal;  // NOLINT
  switch (op) {
    case CompareOp::kEq: return CompareFor<CompareOp::kEq>(dtype, scalar_operands);
    case CompareOp::kNe: return CompareFor<CompareOp::kNe>(dtype, scalar_operands);
    case CompareOp::kLt: return CompareFor<CompareOp::kLt>(dtype, scalar_operands);
    case CompareOp::kLe: return CompareFor<CompareOp::kLe>(dtype, scalar_operands);
    case CompareOp::kGt: return CompareFor<CompareOp::kGt>(dtype, scalar_operands);
    case CompareOp::kGe: return CompareFor<CompareOp::kGe>(dtype, scalar_operands);
  }
  return nullptr;
}

}  // namespace jx::lax::kernels
