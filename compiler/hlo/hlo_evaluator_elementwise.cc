// Elementwise ops for the reference evaluator: unary and binary math, compare, select,
// clamp, convert, bitcast-convert, reduce-precision and iota.
#include <bit>
#include <cmath>
#include <limits>

#include "jx/compiler/hlo/hlo_evaluator_internal.h"
#include "jx/compiler/hlo/status_macros.h"

namespace jx::hlo::eval_internal {
namespace {

template <PrimitiveType T>
constexpr bool kIsFloat = T == F16 || T == BF16 || T == F32 || T == F64;
template <PrimitiveType T>
constexpr bool kIsInt = (T >= S8 && T <= S64) || (T >= U8 && T <= U64);

// ---- Float semantics. ----

template <typename F>
F RoundHalfEven(F x) {
  F r = std::round(x);
  if (std::fabs(x - std::trunc(x)) == F(0.5)) r = F(2) * std::round(x / F(2));
  return r;
}

// NaN-propagating maximum/minimum; on +0 vs -0 max picks +0 and min -0 (IEEE 754-2019).
template <typename F>
F FloatMax(F a, F b) {
  if (std::isnan(a) || std::isnan(b)) return std::numeric_limits<F>::quiet_NaN();
  if (a == b) return std::signbit(a) ? b : a;
  return a > b ? a : b;
}
template <typename F>
F FloatMin(F a, F b) {
  if (std::isnan(a) || std::isnan(b)) return std::numeric_limits<F>::quiet_NaN();
  if (a == b) return std::signbit(a) ? a : b;
  return a < b ? a : b;
}

template <typename F>
F FloatSign(F x) {
  if (std::isnan(x) || x == 0) return x;
  return x > 0 ? F(1) : F(-1);
}

// ---- Integer semantics (wraparound through the unsigned type). ----

template <typename I>
using U = std::make_unsigned_t<I>;

template <typename I>
I WrapAdd(I a, I b) { return static_cast<I>(static_cast<U<I>>(a) + static_cast<U<I>>(b)); }
template <typename I>
I WrapSub(I a, I b) { return static_cast<I>(static_cast<U<I>>(a) - static_cast<U<I>>(b)); }
template <typename I>
I WrapMul(I a, I b) {
  // Promote to at least unsigned int so u16*u16 cannot overflow a signed int.
  using W = std::conditional_t<(sizeof(I) < sizeof(unsigned)), unsigned, U<I>>;
  return static_cast<I>(static_cast<W>(static_cast<U<I>>(a)) *
                        static_cast<W>(static_cast<U<I>>(b)));
}
template <typename I>
I WrapNeg(I a) { return WrapSub<I>(0, a); }

template <typename I>
I IntDivide(I a, I b) {
  if (b == 0) return static_cast<I>(~U<I>{0});  // all bits set: -1, or the unsigned max
  if constexpr (std::is_signed_v<I>) {
    if (a == std::numeric_limits<I>::min() && b == -1) return a;
  }
  return static_cast<I>(a / b);
}
template <typename I>
I IntRemainder(I a, I b) {
  if (b == 0) return a;
  if constexpr (std::is_signed_v<I>) {
    if (a == std::numeric_limits<I>::min() && b == -1) return 0;
  }
  return static_cast<I>(a % b);
}
template <typename I>
I IntPower(I base, I exponent) {
  if constexpr (std::is_signed_v<I>) {
    if (exponent < 0) return base == 1 ? 1 : 0;
  }
  I result = 1;
  U<I> e = static_cast<U<I>>(exponent);
  while (e != 0) {
    if (e & 1) result = WrapMul(result, base);
    base = WrapMul(base, base);
    e >>= 1;
  }
  return result;
}
template <typename I>
I ShiftLeft(I a, I b) {
  const U<I> amount = static_cast<U<I>>(b);
  if (amount >= sizeof(I) * 8) return 0;
  return static_cast<I>(static_cast<U<I>>(a) << amount);
}
template <typename I>
I ShiftRightLogical(I a, I b) {
  const U<I> amount = static_cast<U<I>>(b);
  if (amount >= sizeof(I) * 8) return 0;
  return static_cast<I>(static_cast<U<I>>(a) >> amount);
}
template <typename I>
I ShiftRightArithmetic(I a, I b) {
  using S = std::make_signed_t<I>;
  const U<I> amount = static_cast<U<I>>(b);
  const S sa = static_cast<S>(a);
  if (amount >= sizeof(I) * 8) return static_cast<I>(sa < 0 ? S(-1) : S(0));
  return static_cast<I>(sa >> amount);  // arithmetic on every compiler we build with
}

// Float bits as a signed integer ordered like IEEE totalOrder (-NaN < -inf < -0 < +0 < NaN).
int64_t TotalOrderKey(uint64_t bits, int nbits) {
  const uint64_t sign = uint64_t{1} << (nbits - 1);
  const uint64_t magnitude = bits & (sign - 1);
  const int64_t m = static_cast<int64_t>(magnitude);
  return (bits & sign) ? -m - 1 : m;
}

template <PrimitiveType T>
uint64_t RawBits(const Literal& lit, int64_t i) {
  using S = typename TypeInfo<T>::storage;
  S v;
  std::memcpy(&v, lit.untyped_data().data() + i * sizeof(S), sizeof(S));
  if constexpr (T == F16 || T == BF16) {
    return v.bits;
  } else if constexpr (T == F32) {
    return std::bit_cast<uint32_t>(v);
  } else {
    return std::bit_cast<uint64_t>(v);
  }
}

// ---- Unary. ----

// The element-wise families write into `out`, which already has the instruction's shape
// (a fresh literal, or a scalar slot a ScalarCaller reuses across calls).
template <PrimitiveType T>
absl::Status Unary(HloOpcode op, const Literal& in, Literal& out) {
  using C = ComputeT<T>;
  const int64_t n = in.element_count();
  if (op == HloOpcode::kIsFinite) {
    if constexpr (kIsFloat<T>) {
      for (int64_t i = 0; i < n; ++i) Store<PRED>(out, i, std::isfinite(Load<T>(in, i)));
      return absl::OkStatus();
    }
    return Invalid("is-finite needs a floating-point operand");
  }
  auto map = [&](auto fn) -> absl::Status {
    for (int64_t i = 0; i < n; ++i) Store<T>(out, i, static_cast<C>(fn(Load<T>(in, i))));
    return absl::OkStatus();
  };
  if constexpr (T == PRED) {
    if (op == HloOpcode::kNot) return map([](bool x) { return !x; });
  } else if constexpr (kIsInt<T>) {
    using UC = U<C>;
    switch (op) {
      case HloOpcode::kAbs:
        if constexpr (std::is_signed_v<C>) return map([](C x) { return x < 0 ? WrapNeg(x) : x; });
        return map([](C x) { return x; });
      case HloOpcode::kNegate: return map([](C x) { return WrapNeg(x); });
      case HloOpcode::kSign:
        return map([](C x) { return static_cast<C>(x > 0 ? 1 : (x == 0 ? 0 : -1)); });
      case HloOpcode::kNot: return map([](C x) { return static_cast<C>(~x); });
      case HloOpcode::kPopulationCount:
        return map([](C x) { return static_cast<C>(std::popcount(static_cast<UC>(x))); });
      case HloOpcode::kClz:
        return map([](C x) { return static_cast<C>(std::countl_zero(static_cast<UC>(x))); });
      default: break;
    }
  } else {
    switch (op) {
      case HloOpcode::kAbs: return map([](C x) { return std::fabs(x); });
      case HloOpcode::kNegate: return map([](C x) { return -x; });
      case HloOpcode::kSign: return map([](C x) { return FloatSign(x); });
      case HloOpcode::kCbrt: return map([](C x) { return std::cbrt(x); });
      case HloOpcode::kCeil: return map([](C x) { return std::ceil(x); });
      case HloOpcode::kCos: return map([](C x) { return std::cos(x); });
      case HloOpcode::kErf: return map([](C x) { return std::erf(x); });
      case HloOpcode::kExp: return map([](C x) { return std::exp(x); });
      case HloOpcode::kExpm1: return map([](C x) { return std::expm1(x); });
      case HloOpcode::kFloor: return map([](C x) { return std::floor(x); });
      case HloOpcode::kLog: return map([](C x) { return std::log(x); });
      case HloOpcode::kLog1p: return map([](C x) { return std::log1p(x); });
      case HloOpcode::kLogistic:
        return map([](C x) { return C(1) / (C(1) + std::exp(-x)); });
      case HloOpcode::kRoundNearestAfz: return map([](C x) { return std::round(x); });
      case HloOpcode::kRoundNearestEven: return map([](C x) { return RoundHalfEven(x); });
      case HloOpcode::kRsqrt: return map([](C x) { return C(1) / std::sqrt(x); });
      case HloOpcode::kSin: return map([](C x) { return std::sin(x); });
      case HloOpcode::kSqrt: return map([](C x) { return std::sqrt(x); });
      case HloOpcode::kTan: return map([](C x) { return std::tan(x); });
      case HloOpcode::kTanh: return map([](C x) { return std::tanh(x); });
      default: break;
    }
  }
  return Invalid(HloOpcodeString(op), " does not accept ", PrimitiveTypeName(T));
}

// ---- Binary. ----

template <PrimitiveType T>
absl::Status Compare(const HloInstruction& instr, const Literal& a, const Literal& b,
                     Literal& out) {
  using C = ComputeT<T>;
  const int64_t n = a.element_count();
  const ComparisonDirection dir = instr.comparison_direction();
  auto emit = [&](auto less, auto equal) {
    for (int64_t i = 0; i < n; ++i) {
      const auto x = less.load(a, i), y = less.load(b, i);
      bool r = false;
      switch (dir) {
        case ComparisonDirection::kEq: r = equal(x, y); break;
        case ComparisonDirection::kNe: r = !equal(x, y); break;
        case ComparisonDirection::kLt: r = less(x, y); break;
        case ComparisonDirection::kLe: r = less(x, y) || equal(x, y); break;
        case ComparisonDirection::kGt: r = less(y, x); break;
        case ComparisonDirection::kGe: r = less(y, x) || equal(x, y); break;
      }
      Store<PRED>(out, i, r);
    }
  };
  if constexpr (kIsFloat<T>) {
    if (instr.comparison_type() == ComparisonType::kTotalOrder) {
      struct Less {
        int64_t load(const Literal& l, int64_t i) const {
          return TotalOrderKey(RawBits<T>(l, i), BitWidth(T));
        }
        bool operator()(int64_t x, int64_t y) const { return x < y; }
      };
      emit(Less{}, [](int64_t x, int64_t y) { return x == y; });
      return absl::OkStatus();
    }
  }
  // IEEE order for floats (NaN unordered: only NE holds), natural order otherwise.
  struct Less {
    C load(const Literal& l, int64_t i) const { return Load<T>(l, i); }
    bool operator()(C x, C y) const { return x < y; }
  };
  emit(Less{}, [](C x, C y) { return x == y; });
  return absl::OkStatus();
}

template <PrimitiveType T>
absl::Status Binary(const HloInstruction& instr, const Literal& a, const Literal& b,
                    Literal& out) {
  using C = ComputeT<T>;
  const HloOpcode op = instr.opcode();
  if (op == HloOpcode::kCompare) return Compare<T>(instr, a, b, out);
  const int64_t n = a.element_count();
  auto map = [&](auto fn) -> absl::Status {
    for (int64_t i = 0; i < n; ++i) {
      Store<T>(out, i, static_cast<C>(fn(Load<T>(a, i), Load<T>(b, i))));
    }
    return absl::OkStatus();
  };
  if constexpr (T == PRED) {
    switch (op) {
      case HloOpcode::kAdd: case HloOpcode::kMaximum: case HloOpcode::kOr:
        return map([](bool x, bool y) { return x || y; });
      case HloOpcode::kMultiply: case HloOpcode::kMinimum: case HloOpcode::kAnd:
        return map([](bool x, bool y) { return x && y; });
      case HloOpcode::kXor: return map([](bool x, bool y) { return x != y; });
      default: break;
    }
  } else if constexpr (kIsInt<T>) {
    switch (op) {
      case HloOpcode::kAdd: return map([](C x, C y) { return WrapAdd(x, y); });
      case HloOpcode::kSubtract: return map([](C x, C y) { return WrapSub(x, y); });
      case HloOpcode::kMultiply: return map([](C x, C y) { return WrapMul(x, y); });
      case HloOpcode::kDivide: return map([](C x, C y) { return IntDivide(x, y); });
      case HloOpcode::kRemainder: return map([](C x, C y) { return IntRemainder(x, y); });
      case HloOpcode::kPower: return map([](C x, C y) { return IntPower(x, y); });
      case HloOpcode::kMaximum: return map([](C x, C y) { return x >= y ? x : y; });
      case HloOpcode::kMinimum: return map([](C x, C y) { return x <= y ? x : y; });
      case HloOpcode::kAnd: return map([](C x, C y) { return static_cast<C>(x & y); });
      case HloOpcode::kOr: return map([](C x, C y) { return static_cast<C>(x | y); });
      case HloOpcode::kXor: return map([](C x, C y) { return static_cast<C>(x ^ y); });
      case HloOpcode::kShiftLeft: return map([](C x, C y) { return ShiftLeft(x, y); });
      case HloOpcode::kShiftRightLogical:
        return map([](C x, C y) { return ShiftRightLogical(x, y); });
      case HloOpcode::kShiftRightArithmetic:
        return map([](C x, C y) { return ShiftRightArithmetic(x, y); });
      default: break;
    }
  } else {
    switch (op) {
      case HloOpcode::kAdd: return map([](C x, C y) { return x + y; });
      case HloOpcode::kSubtract: return map([](C x, C y) { return x - y; });
      case HloOpcode::kMultiply: return map([](C x, C y) { return x * y; });
      case HloOpcode::kDivide: return map([](C x, C y) { return x / y; });
      case HloOpcode::kRemainder: return map([](C x, C y) { return std::fmod(x, y); });
      case HloOpcode::kPower: return map([](C x, C y) { return std::pow(x, y); });
      case HloOpcode::kAtan2: return map([](C x, C y) { return std::atan2(x, y); });
      case HloOpcode::kMaximum: return map([](C x, C y) { return FloatMax(x, y); });
      case HloOpcode::kMinimum: return map([](C x, C y) { return FloatMin(x, y); });
      default: break;
    }
  }
  return Invalid(HloOpcodeString(op), " does not accept ", PrimitiveTypeName(T));
}

// clamp(lo, x, hi) = min(max(x, lo), hi); lo and hi may be scalars.
template <PrimitiveType T>
absl::Status Clamp(const Literal& lo, const Literal& x, const Literal& hi, Literal& out) {
  using C = ComputeT<T>;
  const int64_t n = x.element_count();
  const bool lo_scalar = lo.shape().rank() == 0, hi_scalar = hi.shape().rank() == 0;
  for (int64_t i = 0; i < n; ++i) {
    const C l = Load<T>(lo, lo_scalar ? 0 : i), h = Load<T>(hi, hi_scalar ? 0 : i);
    const C v = Load<T>(x, i);
    if constexpr (kIsFloat<T>) {
      Store<T>(out, i, FloatMin(FloatMax(v, l), h));
    } else {
      const C m = v >= l ? v : l;
      Store<T>(out, i, m <= h ? m : h);
    }
  }
  return absl::OkStatus();
}

}  // namespace

// ---- Conversions shared by convert, iota, dot and convolution. ----

namespace {

// Rounds |v| to 53 bits with round-to-odd, so a later rounding to fewer bits is correct.
double Uint64ToDoubleRoundToOdd(uint64_t v) {
  if (v < (uint64_t{1} << 53)) return static_cast<double>(v);
  const int drop = 64 - std::countl_zero(v) - 53;
  uint64_t mantissa = v >> drop;
  if ((v & ((uint64_t{1} << drop) - 1)) != 0) mantissa |= 1;
  return std::ldexp(static_cast<double>(mantissa), drop);
}

float DoubleToFloatRoundToOdd(double d) {
  float f = static_cast<float>(d);
  if (std::isnan(d) || static_cast<double>(f) == d) return f;
  if (std::fabs(static_cast<double>(f)) > std::fabs(d)) f = std::nextafter(f, 0.0f);
  uint32_t bits = std::bit_cast<uint32_t>(f) | 1u;
  return std::bit_cast<float>(bits);
}

// Converts a value known exactly, or rounded to odd at >= 2 extra bits, to a 16-bit float.
void StoreNarrowFloat(Literal& lit, int64_t i, double v) {
  const float f = DoubleToFloatRoundToOdd(v);
  if (lit.shape().element_type() == F16) {
    Store<F16>(lit, i, f);
  } else {
    Store<BF16>(lit, i, f);
  }
}

template <typename I>
I SaturatingFloatToInt(double v) {
  if (std::isnan(v)) return 0;
  // 2^(bits) bounds are exact in double; the truncation happens inside the range.
  const double lo = static_cast<double>(std::numeric_limits<I>::min());
  const double hi_excl = std::ldexp(1.0, std::numeric_limits<I>::digits);
  if (v <= lo) return std::numeric_limits<I>::min();
  if (v >= hi_excl) return std::numeric_limits<I>::max();
  return static_cast<I>(v);
}

}  // namespace

double ElementAsDouble(const Literal& lit, int64_t i) { return lit.GetAsDouble(i); }

uint64_t ElementAsBits64(const Literal& lit, int64_t i) {
  const PrimitiveType t = lit.shape().element_type();
  if (IsFloatingPointType(t)) {
    return static_cast<uint64_t>(SaturatingFloatToInt<int64_t>(lit.GetAsDouble(i)));
  }
  return lit.GetAsUint64(i);  // sign-extends signed types, zero-extends unsigned
}

void StoreDouble(Literal& lit, int64_t i, double v) {
  switch (lit.shape().element_type()) {
    case PRED: Store<PRED>(lit, i, v != 0); break;
    case S8: Store<S8>(lit, i, SaturatingFloatToInt<int8_t>(v)); break;
    case S16: Store<S16>(lit, i, SaturatingFloatToInt<int16_t>(v)); break;
    case S32: Store<S32>(lit, i, SaturatingFloatToInt<int32_t>(v)); break;
    case S64: Store<S64>(lit, i, SaturatingFloatToInt<int64_t>(v)); break;
    case U8: Store<U8>(lit, i, SaturatingFloatToInt<uint8_t>(v)); break;
    case U16: Store<U16>(lit, i, SaturatingFloatToInt<uint16_t>(v)); break;
    case U32: Store<U32>(lit, i, SaturatingFloatToInt<uint32_t>(v)); break;
    case U64: Store<U64>(lit, i, SaturatingFloatToInt<uint64_t>(v)); break;
    case F16: case BF16: StoreNarrowFloat(lit, i, v); break;
    case F32: Store<F32>(lit, i, static_cast<float>(v)); break;
    case F64: Store<F64>(lit, i, v); break;
    default: break;
  }
}

void StoreUint64(Literal& lit, int64_t i, uint64_t v) {
  switch (lit.shape().element_type()) {
    case F16: case BF16: StoreNarrowFloat(lit, i, Uint64ToDoubleRoundToOdd(v)); break;
    case F32: Store<F32>(lit, i, static_cast<float>(v)); break;
    case F64: Store<F64>(lit, i, static_cast<double>(v)); break;
    default: lit.SetFromUint64(i, v); break;  // integers: truncate (wrap); pred: v != 0
  }
}

void StoreInt64(Literal& lit, int64_t i, int64_t v) {
  switch (lit.shape().element_type()) {
    case F16: case BF16: {
      const uint64_t magnitude = v < 0 ? 0 - static_cast<uint64_t>(v) : static_cast<uint64_t>(v);
      const double d = Uint64ToDoubleRoundToOdd(magnitude);
      StoreNarrowFloat(lit, i, v < 0 ? -d : d);
      break;
    }
    case F32: Store<F32>(lit, i, static_cast<float>(v)); break;
    case F64: Store<F64>(lit, i, static_cast<double>(v)); break;
    default: lit.SetFromInt64(i, v); break;
  }
}

Literal ConvertLiteral(const Literal& in, PrimitiveType type) {
  Literal out(ShapeUtil::ChangeElementType(in.shape(), type));
  const PrimitiveType from = in.shape().element_type();
  const int64_t n = in.element_count();
  if (from == type) return LiteralWithBytes(out.shape(), in.untyped_data());
  for (int64_t i = 0; i < n; ++i) {
    if (IsFloatingPointType(from)) {
      StoreDouble(out, i, in.GetAsDouble(i));
    } else if (IsUnsignedIntegralType(from) || from == PRED) {
      StoreUint64(out, i, in.GetAsUint64(i));
    } else {
      StoreInt64(out, i, in.GetAsInt64(i));
    }
  }
  return out;
}

absl::Status EvalElementwiseInto(const HloInstruction& instr, Operands ops, Literal& out) {
  const HloOpcode op = instr.opcode();
  if (op == HloOpcode::kSelect) {
    const Literal &pred = *ops[0], &on_true = *ops[1], &on_false = *ops[2];
    const bool scalar_pred = pred.shape().rank() == 0;
    for (int64_t i = 0; i < out.element_count(); ++i) {
      const bool p = pred.GetAsBool(scalar_pred ? 0 : i);
      CopyElement(p ? on_true : on_false, i, out, i);
    }
    return absl::OkStatus();
  }
  if (op == HloOpcode::kClamp) {
    return SwitchType(ops[1]->shape().element_type(), [&](auto t) {
      return Clamp<decltype(t)::value>(*ops[0], *ops[1], *ops[2], out);
    });
  }
  if (ops.size() == 1) {
    return SwitchType(ops[0]->shape().element_type(), [&](auto t) {
      return Unary<decltype(t)::value>(op, *ops[0], out);
    });
  }
  if (ops.size() == 2) {
    if (!ShapeUtil::Compatible(ops[0]->shape(), ops[1]->shape())) {
      return Invalid("operand shapes differ: ", ops[0]->shape().ToString(false), " vs ",
                     ops[1]->shape().ToString(false));
    }
    return SwitchType(ops[0]->shape().element_type(), [&](auto t) {
      return Binary<decltype(t)::value>(instr, *ops[0], *ops[1], out);
    });
  }
  return Invalid("unexpected operand count ", ops.size());
}

absl::StatusOr<Literal> EvalElementwise(const HloInstruction& instr, Operands ops) {
  Literal out(instr.shape());
  HLO_RETURN_IF_ERROR(EvalElementwiseInto(instr, ops, out));
  return out;
}

absl::StatusOr<Literal> EvalConvert(const HloInstruction& instr, Operands ops) {
  if (!instr.shape().IsArray() || !ops[0]->shape().IsArray()) {
    return Invalid("convert needs arrays");
  }
  Literal out = ConvertLiteral(*ops[0], instr.shape().element_type());
  return LiteralWithBytes(instr.shape(), out.untyped_data());
}

absl::StatusOr<Literal> EvalBitcastConvert(const HloInstruction& instr, Operands ops) {
  // Row-major element bytes line up for same-width and for width-changing bitcasts (the
  // extra minor dimension holds the pieces of one element, least significant first).
  if (ShapeUtil::ByteSizeOf(instr.shape()) != ShapeUtil::ByteSizeOf(ops[0]->shape())) {
    return Invalid("byte sizes differ: ", ops[0]->shape().ToString(false), " -> ",
                   instr.shape().ToString(false));
  }
  return LiteralWithBytes(instr.shape(), ops[0]->untyped_data());
}

absl::StatusOr<Literal> EvalReducePrecision(const HloInstruction& instr, Operands ops) {
  const Literal& in = *ops[0];
  const PrimitiveType t = in.shape().element_type();
  int src_exponent_bits, src_mantissa_bits;
  switch (t) {
    case F16: src_exponent_bits = 5; src_mantissa_bits = 10; break;
    case BF16: src_exponent_bits = 8; src_mantissa_bits = 7; break;
    case F32: src_exponent_bits = 8; src_mantissa_bits = 23; break;
    case F64: src_exponent_bits = 11; src_mantissa_bits = 52; break;
    default: return Invalid("operand must be floating-point");
  }
  const int exponent_bits = instr.exponent_bits(), mantissa_bits = instr.mantissa_bits();
  if (exponent_bits < 1 || mantissa_bits < 0) {
    return Invalid("bad exponent_bits=", exponent_bits, " mantissa_bits=", mantissa_bits);
  }
  const int nbits = BitWidth(t);
  const int64_t bytes = nbits / 8;
  const uint64_t all = nbits == 64 ? ~uint64_t{0} : (uint64_t{1} << nbits) - 1;
  Literal out(instr.shape());
  for (int64_t i = 0; i < in.element_count(); ++i) {
    uint64_t x = 0;
    std::memcpy(&x, in.untyped_data().data() + i * bytes, bytes);
    const uint64_t original = x;
    const uint64_t exp_mask = ((uint64_t{1} << src_exponent_bits) - 1) << src_mantissa_bits;
    const uint64_t mant_mask = (uint64_t{1} << src_mantissa_bits) - 1;
    const bool is_nan = (x & exp_mask) == exp_mask && (x & mant_mask) != 0;
    if (mantissa_bits < src_mantissa_bits) {
      // Round to nearest even at the new last mantissa bit.
      const int shift = src_mantissa_bits - mantissa_bits;
      const uint64_t last_bit = uint64_t{1} << shift;
      const uint64_t bias = (last_bit >> 1) - 1 + ((x & last_bit) >> shift);
      x = ((x + bias) & ~(last_bit - 1)) & all;
    }
    if (exponent_bits < src_exponent_bits) {
      // Out-of-range exponents become inf / signed zero (denormals flush to zero).
      const uint64_t sign = uint64_t{1} << (nbits - 1);
      const int64_t bias = (int64_t{1} << (src_exponent_bits - 1)) - 1;
      const int64_t reduced_bias = (int64_t{1} << (exponent_bits - 1)) - 1;
      const uint64_t max_exp = static_cast<uint64_t>(bias + reduced_bias) << src_mantissa_bits;
      const uint64_t min_exp = static_cast<uint64_t>(bias - reduced_bias) << src_mantissa_bits;
      const uint64_t e = x & exp_mask;
      if (e > max_exp) {
        x = (x & sign) | exp_mask;
      } else if (e <= min_exp) {
        x = x & sign;
      }
    }
    if (is_nan) x = mantissa_bits > 0 ? original : (exp_mask);  // NaN stays NaN, or +inf
    std::memcpy(out.mutable_untyped_data().data() + i * bytes, &x, bytes);
  }
  return out;
}

absl::StatusOr<Literal> EvalIota(const HloInstruction& instr) {
  const Shape& shape = instr.shape();
  if (!shape.IsArray() || instr.iota_dimension() < 0 ||
      instr.iota_dimension() >= shape.rank()) {
    return Invalid("bad iota_dimension=", instr.iota_dimension(), " for ",
                   shape.ToString(false));
  }
  Literal out(shape);
  const std::vector<int64_t> strides = RowMajorStrides(shape.dimensions());
  const int64_t d = instr.iota_dimension();
  for (int64_t i = 0; i < out.element_count(); ++i) {
    StoreInt64(out, i, (i / strides[d]) % shape.dimensions(d));
  }
  return out;
}

}  // namespace jx::hlo::eval_internal
