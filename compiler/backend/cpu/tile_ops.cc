// The tile loops. Float arithmetic and transcendentals (f16, bf16, f32, f64) are the kernel
// library's (lax/kernels/elementwise.h), the very functions eager runs, so a lone op under jit
// equals eager bit for bit. The rest is one tight loop per (op, element type), written so
// g++ -O3 -march=native vectorizes it, with the reference evaluator's semantics (wrapping
// integer arithmetic, saturating float->int convert).
#include "jx/compiler/backend/cpu/tile_ops.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <optional>
#include <type_traits>

#include "jx/lax/kernels/elementwise.h"

namespace jx::cpu::internal {
namespace {

using hlo::ComparisonDirection;
using hlo::ComparisonType;
using hlo::HloInstruction;
using hlo::HloOpcode;
using hlo::PrimitiveType;

namespace kernels = ::jx::lax::kernels;

template <typename T>
const T* In(const void* const* in, int i) {
  return static_cast<const T*>(in[i]);
}

// Operand k of a loop: n elements, or (bit k of kScalars) one value for the whole tile, kept
// in a register instead of being splatted into a scratch tile first.
template <typename T, unsigned kScalars, int k, bool kScalar = ((kScalars >> k) & 1) != 0>
struct Operand {
  explicit Operand(const void* const* in) : p(static_cast<const T*>(in[k])) {}
  T operator[](int64_t i) const { return p[i]; }
  const T* __restrict p;
};
template <typename T, unsigned kScalars, int k>
struct Operand<T, kScalars, k, true> {
  explicit Operand(const void* const* in) : v(*static_cast<const T*>(in[k])) {}
  T operator[](int64_t) const { return v; }
  T v;
};

// ---- Float ops: the kernel library's (lax/kernels/elementwise.h), shared with eager.

std::optional<kernels::UnaryOp> SharedUnaryOp(HloOpcode op) {
  using U = kernels::UnaryOp;
  switch (op) {
    case HloOpcode::kNegate: return U::kNeg;
    case HloOpcode::kAbs: return U::kAbs;
    case HloOpcode::kSign: return U::kSign;
    case HloOpcode::kFloor: return U::kFloor;
    case HloOpcode::kCeil: return U::kCeil;
    case HloOpcode::kRoundNearestAfz: return U::kRoundAwayFromZero;
    case HloOpcode::kRoundNearestEven: return U::kRoundNearestEven;
    case HloOpcode::kExp: return U::kExp;
    case HloOpcode::kLog: return U::kLog;
    case HloOpcode::kLog1p: return U::kLog1p;
    case HloOpcode::kExpm1: return U::kExpm1;
    case HloOpcode::kTanh: return U::kTanh;
    case HloOpcode::kLogistic: return U::kLogistic;
    case HloOpcode::kSin: return U::kSin;
    case HloOpcode::kCos: return U::kCos;
    case HloOpcode::kTan: return U::kTan;
    case HloOpcode::kSqrt: return U::kSqrt;
    case HloOpcode::kRsqrt: return U::kRsqrt;
    case HloOpcode::kCbrt: return U::kCbrt;
    case HloOpcode::kErf: return U::kErf;
    default: return std::nullopt;
  }
}

std::optional<kernels::BinaryOp> SharedBinaryOp(HloOpcode op) {
  using B = kernels::BinaryOp;
  switch (op) {
    case HloOpcode::kAdd: return B::kAdd;
    case HloOpcode::kSubtract: return B::kSub;
    case HloOpcode::kMultiply: return B::kMul;
    case HloOpcode::kDivide: return B::kDiv;
    case HloOpcode::kRemainder: return B::kRem;
    case HloOpcode::kPower: return B::kPow;
    case HloOpcode::kMaximum: return B::kMax;
    case HloOpcode::kMinimum: return B::kMin;
    case HloOpcode::kAtan2: return B::kAtan2;
    default: return std::nullopt;
  }
}

// The library kernel of a float op (f16, bf16, f32, f64), or nullptr.
TileOpFn SharedFloatOp(const HloInstruction& instr, unsigned scalars, DType dtype) {
  if (const auto op = SharedBinaryOp(instr.opcode())) return kernels::FindBinaryFn(*op, dtype, scalars);
  if (instr.opcode() == HloOpcode::kClamp) return kernels::FindClampFn(dtype, scalars);
  if (scalars != 0) return nullptr;
  if (const auto op = SharedUnaryOp(instr.opcode())) return kernels::FindUnaryFn(*op, dtype);
  return nullptr;
}

template <typename T>
void CopyLoop(const void* const* in, void* out, int64_t n) {
  std::memcpy(out, in[0], n * sizeof(T));
}

// ---- Integer ops (wrapping through the unsigned type).

enum class IOp { kAdd, kSub, kMul, kMax, kMin, kAnd, kOr, kXor, kNeg, kAbs, kNot, kLogicalNot, kSign, kCopy };

template <typename T, IOp kOp, unsigned kScalars = 0>
void IntOp(const void* const* in, void* out, int64_t n) {
  using U = std::make_unsigned_t<T>;
  // Promote narrow types so u8*u8 and u16*u16 cannot overflow a signed int.
  using W = std::conditional_t<(sizeof(T) < sizeof(unsigned)), unsigned, U>;
  const T* __restrict a = In<T>(in, 0);
  T* __restrict o = static_cast<T*>(out);
  if constexpr (kOp == IOp::kNeg) {
    for (int64_t i = 0; i < n; ++i) o[i] = static_cast<T>(W(0) - static_cast<W>(static_cast<U>(a[i])));
  } else if constexpr (kOp == IOp::kAbs) {
    for (int64_t i = 0; i < n; ++i) {
      o[i] = a[i] < 0 ? static_cast<T>(W(0) - static_cast<W>(static_cast<U>(a[i]))) : a[i];
    }
  } else if constexpr (kOp == IOp::kNot) {
    for (int64_t i = 0; i < n; ++i) o[i] = static_cast<T>(~a[i]);
  } else if constexpr (kOp == IOp::kLogicalNot) {  // PRED (stored as uint8_t, like u8)
    for (int64_t i = 0; i < n; ++i) o[i] = a[i] ^ 1;
  } else if constexpr (kOp == IOp::kSign) {
    for (int64_t i = 0; i < n; ++i) o[i] = static_cast<T>((a[i] > 0) - (a[i] < 0));
  } else if constexpr (kOp == IOp::kCopy) {
    std::memcpy(o, a, n * sizeof(T));
  } else {
    const Operand<T, kScalars, 0> l(in);
    const Operand<T, kScalars, 1> r(in);
    for (int64_t i = 0; i < n; ++i) {
      const T p = l[i], q = r[i];
      const W x = static_cast<W>(static_cast<U>(p)), y = static_cast<W>(static_cast<U>(q));
      if constexpr (kOp == IOp::kAdd) o[i] = static_cast<T>(x + y);
      if constexpr (kOp == IOp::kSub) o[i] = static_cast<T>(x - y);
      if constexpr (kOp == IOp::kMul) o[i] = static_cast<T>(x * y);
      if constexpr (kOp == IOp::kMax) o[i] = p > q ? p : q;
      if constexpr (kOp == IOp::kMin) o[i] = p < q ? p : q;
      if constexpr (kOp == IOp::kAnd) o[i] = static_cast<T>(p & q);
      if constexpr (kOp == IOp::kOr) o[i] = static_cast<T>(p | q);
      if constexpr (kOp == IOp::kXor) o[i] = static_cast<T>(p ^ q);
    }
  }
}

// ---- compare / select / clamp / convert.

template <typename T, ComparisonDirection kDir, unsigned kScalars>
void Compare(const void* const* in, void* out, int64_t n) {
  const Operand<T, kScalars, 0> a(in);
  const Operand<T, kScalars, 1> b(in);
  uint8_t* __restrict o = static_cast<uint8_t*>(out);
  for (int64_t i = 0; i < n; ++i) {
    bool r;
    if constexpr (kDir == ComparisonDirection::kEq) r = a[i] == b[i];
    if constexpr (kDir == ComparisonDirection::kNe) r = a[i] != b[i];
    if constexpr (kDir == ComparisonDirection::kLt) r = a[i] < b[i];
    if constexpr (kDir == ComparisonDirection::kLe) r = a[i] <= b[i];
    if constexpr (kDir == ComparisonDirection::kGt) r = a[i] > b[i];
    if constexpr (kDir == ComparisonDirection::kGe) r = a[i] >= b[i];
    o[i] = r;
  }
}

// The instantiation of a loop template for a scalar-operand mask: binary loops take masks
// 0-2, ternary ones 0-6 (an all-scalar op is left to the caller's splat).
template <template <unsigned> class Loop>
TileOpFn ForScalars(unsigned scalars, int arity) {
  if (scalars >= (1u << arity) - (arity > 1 ? 1 : 0)) return nullptr;
  switch (scalars) {
    case 0: return &Loop<0>::Run;
    case 1: return &Loop<1>::Run;
    case 2: return &Loop<2>::Run;
    case 3: return arity > 2 ? &Loop<3>::Run : nullptr;
    case 4: return arity > 2 ? &Loop<4>::Run : nullptr;
    case 5: return arity > 2 ? &Loop<5>::Run : nullptr;
    case 6: return arity > 2 ? &Loop<6>::Run : nullptr;
    default: return nullptr;
  }
}

template <typename T, ComparisonDirection kDir>
struct CompareLoop {
  template <unsigned kScalars>
  struct L {
    static void Run(const void* const* in, void* out, int64_t n) {
      Compare<T, kDir, kScalars>(in, out, n);
    }
  };
};

template <typename T>
TileOpFn CompareFor(ComparisonDirection d, unsigned scalars) {
  using D = ComparisonDirection;
  switch (d) {
    case D::kEq: return ForScalars<CompareLoop<T, D::kEq>::template L>(scalars, 2);
    case D::kNe: return ForScalars<CompareLoop<T, D::kNe>::template L>(scalars, 2);
    case D::kLt: return ForScalars<CompareLoop<T, D::kLt>::template L>(scalars, 2);
    case D::kLe: return ForScalars<CompareLoop<T, D::kLe>::template L>(scalars, 2);
    case D::kGt: return ForScalars<CompareLoop<T, D::kGt>::template L>(scalars, 2);
    case D::kGe: return ForScalars<CompareLoop<T, D::kGe>::template L>(scalars, 2);
  }
  return nullptr;
}

// select by element size: the bits are copied, whatever the type.
template <typename Bits, unsigned kScalars>
void Select(const void* const* in, void* out, int64_t n) {
  const Operand<uint8_t, kScalars, 0> p(in);
  const Operand<Bits, kScalars, 1> a(in);
  const Operand<Bits, kScalars, 2> b(in);
  Bits* __restrict o = static_cast<Bits*>(out);
  for (int64_t i = 0; i < n; ++i) o[i] = p[i] ? a[i] : b[i];
}

template <typename T, unsigned kScalars>
void Clamp(const void* const* in, void* out, int64_t n) {
  const Operand<T, kScalars, 0> lo(in);
  const Operand<T, kScalars, 1> x(in);
  const Operand<T, kScalars, 2> hi(in);
  T* __restrict o = static_cast<T*>(out);
  for (int64_t i = 0; i < n; ++i) {
    const T m = x[i] >= lo[i] ? x[i] : lo[i];
    o[i] = m <= hi[i] ? m : hi[i];
  }
}

// The jx dtype of an HLO element type (pred is bool: one byte, 0 or 1).
std::optional<DType> ToDType(PrimitiveType t) {
  switch (t) {
    case hlo::PRED: return DType::kBool;
    case hlo::S8: return DType::kInt8;
    case hlo::S16: return DType::kInt16;
    case hlo::S32: return DType::kInt32;
    case hlo::S64: return DType::kInt64;
    case hlo::U8: return DType::kUInt8;
    case hlo::U16: return DType::kUInt16;
    case hlo::U32: return DType::kUInt32;
    case hlo::U64: return DType::kUInt64;
    case hlo::F16: return DType::kFloat16;
    case hlo::BF16: return DType::kBFloat16;
    case hlo::F32: return DType::kFloat32;
    case hlo::F64: return DType::kFloat64;
    default: return std::nullopt;
  }
}

// convert: the kernel library's, as eager's convert_element_type.
TileOpFn ConvertFor(PrimitiveType from, PrimitiveType to) {
  const std::optional<DType> f = ToDType(from), t = ToDType(to);
  return f && t ? kernels::FindConvertFn(*f, *t) : nullptr;
}

template <typename T, IOp kOp>
struct IntLoop {
  template <unsigned kScalars>
  struct L {
    static void Run(const void* const* in, void* out, int64_t n) {
      IntOp<T, kOp, kScalars>(in, out, n);
    }
  };
};
template <typename T>
struct ClampLoop {
  template <unsigned kScalars>
  struct L {
    static void Run(const void* const* in, void* out, int64_t n) { Clamp<T, kScalars>(in, out, n); }
  };
};
template <typename Bits>
struct SelectLoop {
  template <unsigned kScalars>
  struct L {
    static void Run(const void* const* in, void* out, int64_t n) {
      Select<Bits, kScalars>(in, out, n);
    }
  };
};

template <typename T, IOp kOp>
TileOpFn BinaryIntFor(unsigned scalars) {
  return ForScalars<IntLoop<T, kOp>::template L>(scalars, 2);
}

template <typename T>
TileOpFn FloatOp(const HloInstruction& instr, unsigned scalars) {
  constexpr DType kDType = std::is_same_v<T, float> ? DType::kFloat32 : DType::kFloat64;
  if (TileOpFn fn = SharedFloatOp(instr, scalars, kDType)) return fn;
  return instr.opcode() == HloOpcode::kCopy && scalars == 0 ? &CopyLoop<T> : nullptr;
}

// f16/bf16: the library's f32 kernels on widened blocks, rounded once per op (as eager).
TileOpFn HalfOp(const HloInstruction& instr, unsigned scalars, DType dtype) {
  if (TileOpFn fn = SharedFloatOp(instr, scalars, dtype)) return fn;
  return instr.opcode() == HloOpcode::kCopy && scalars == 0 ? &CopyLoop<uint16_t> : nullptr;
}

template <typename T>
TileOpFn IntegerOp(const HloInstruction& instr, unsigned scalars) {
  constexpr bool kSigned = std::is_signed_v<T>;
  switch (instr.opcode()) {
    case HloOpcode::kAdd: return BinaryIntFor<T, IOp::kAdd>(scalars);
    case HloOpcode::kSubtract: return BinaryIntFor<T, IOp::kSub>(scalars);
    case HloOpcode::kMultiply: return BinaryIntFor<T, IOp::kMul>(scalars);
    case HloOpcode::kMaximum: return BinaryIntFor<T, IOp::kMax>(scalars);
    case HloOpcode::kMinimum: return BinaryIntFor<T, IOp::kMin>(scalars);
    case HloOpcode::kAnd: return BinaryIntFor<T, IOp::kAnd>(scalars);
    case HloOpcode::kOr: return BinaryIntFor<T, IOp::kOr>(scalars);
    case HloOpcode::kXor: return BinaryIntFor<T, IOp::kXor>(scalars);
    case HloOpcode::kClamp: return ForScalars<ClampLoop<T>::template L>(scalars, 3);
    default: break;
  }
  if (scalars != 0) return nullptr;
  switch (instr.opcode()) {
    case HloOpcode::kNot: return &IntOp<T, IOp::kNot>;
    case HloOpcode::kCopy: return &IntOp<T, IOp::kCopy>;
    case HloOpcode::kNegate: return kSigned ? &IntOp<T, IOp::kNeg> : nullptr;
    case HloOpcode::kAbs: return kSigned ? &IntOp<T, IOp::kAbs> : nullptr;
    case HloOpcode::kSign: return kSigned ? &IntOp<T, IOp::kSign> : nullptr;
    default: return nullptr;
  }
}

template <typename T>
TileOpFn CompareOf(const HloInstruction& instr, unsigned scalars) {
  const ComparisonType ct = instr.comparison_type();
  if (ct == ComparisonType::kTotalOrder) return nullptr;  // scalar fallback
  return CompareFor<T>(instr.comparison_direction(), scalars);
}

// ---- Reductions: 16 independent lanes, combined in a fixed tree.

enum class ROp { kAdd, kMul, kMax, kMin };

template <typename T, ROp kOp>
T Combine(T a, T b) {
  if constexpr (std::is_floating_point_v<T>) {
    if constexpr (kOp == ROp::kAdd) return a + b;
    if constexpr (kOp == ROp::kMul) return a * b;
    if constexpr (kOp == ROp::kMax) {
      T r = (a > b || (a == b && !std::signbit(a))) ? a : b;
      r = a != a ? a : r;
      return b != b ? b : r;
    }
    if constexpr (kOp == ROp::kMin) {
      T r = (a < b || (a == b && std::signbit(a))) ? a : b;
      r = a != a ? a : r;
      return b != b ? b : r;
    }
  } else {
    using U = std::make_unsigned_t<T>;
    using W = std::conditional_t<(sizeof(T) < sizeof(unsigned)), unsigned, U>;
    if constexpr (kOp == ROp::kAdd) return static_cast<T>(static_cast<W>(static_cast<U>(a)) + static_cast<W>(static_cast<U>(b)));
    if constexpr (kOp == ROp::kMul) return static_cast<T>(static_cast<W>(static_cast<U>(a)) * static_cast<W>(static_cast<U>(b)));
    if constexpr (kOp == ROp::kMax) return a > b ? a : b;
    if constexpr (kOp == ROp::kMin) return a < b ? a : b;
  }
}

template <typename T, ROp kOp>
constexpr T Identity() {
  if constexpr (kOp == ROp::kAdd) return T(0);
  if constexpr (kOp == ROp::kMul) return T(1);
  if constexpr (kOp == ROp::kMax) {
    return std::is_floating_point_v<T> ? -std::numeric_limits<T>::infinity()
                                       : std::numeric_limits<T>::lowest();
  }
  if constexpr (kOp == ROp::kMin) {
    return std::is_floating_point_v<T> ? std::numeric_limits<T>::infinity()
                                       : std::numeric_limits<T>::max();
  }
}

template <typename T, ROp kOp>
void ReduceSpan(const void* xv, int64_t n, void* accv) {
  constexpr int kLanes = 16;
  const T* __restrict x = static_cast<const T*>(xv);
  T lanes[kLanes];
  for (int k = 0; k < kLanes; ++k) lanes[k] = Identity<T, kOp>();
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (int k = 0; k < kLanes; ++k) lanes[k] = Combine<T, kOp>(lanes[k], x[i + k]);
  }
  for (int k = 0; i < n; ++i, ++k) lanes[k] = Combine<T, kOp>(lanes[k], x[i]);
  for (int width = kLanes / 2; width > 0; width /= 2) {
    for (int k = 0; k < width; ++k) lanes[k] = Combine<T, kOp>(lanes[k], lanes[k + width]);
  }
  T* acc = static_cast<T*>(accv);
  *acc = Combine<T, kOp>(*acc, lanes[0]);
}

template <typename T>
ReduceSpanFn ReduceFor(HloOpcode op) {
  switch (op) {
    case HloOpcode::kAdd: return &ReduceSpan<T, ROp::kAdd>;
    case HloOpcode::kMultiply: return &ReduceSpan<T, ROp::kMul>;
    case HloOpcode::kMaximum: return &ReduceSpan<T, ROp::kMax>;
    case HloOpcode::kMinimum: return &ReduceSpan<T, ROp::kMin>;
    default: return nullptr;
  }
}

template <typename T>
void IndexToValue(const int64_t* index, void* out, int64_t n) {
  T* __restrict o = static_cast<T*>(out);
  for (int64_t i = 0; i < n; ++i) o[i] = static_cast<T>(index[i]);
}

}  // namespace

TileOpFn FindNativeTileOp(const HloInstruction& instr, unsigned scalar_operands) {
  const unsigned sc = scalar_operands;
  const PrimitiveType out = instr.shape().element_type();
  const PrimitiveType in0 =
      instr.operand_count() > 0 ? instr.operand(0)->shape().element_type() : out;
  switch (instr.opcode()) {
    case HloOpcode::kCompare:
      switch (in0) {
        case hlo::F32: return CompareOf<float>(instr, sc);
        case hlo::F64: return CompareOf<double>(instr, sc);
        case hlo::S32: return CompareOf<int32_t>(instr, sc);
        case hlo::S64: return CompareOf<int64_t>(instr, sc);
        case hlo::U32: return CompareOf<uint32_t>(instr, sc);
        case hlo::U64: return CompareOf<uint64_t>(instr, sc);
        case hlo::S8: return CompareOf<int8_t>(instr, sc);
        case hlo::U8: case hlo::PRED: return CompareOf<uint8_t>(instr, sc);
        default: return nullptr;
      }
    case HloOpcode::kSelect:
      switch (hlo::ByteSizeOfPrimitiveType(out)) {
        case 1: return ForScalars<SelectLoop<uint8_t>::template L>(sc, 3);
        case 2: return ForScalars<SelectLoop<uint16_t>::template L>(sc, 3);
        case 4: return ForScalars<SelectLoop<uint32_t>::template L>(sc, 3);
        case 8: return ForScalars<SelectLoop<uint64_t>::template L>(sc, 3);
        default: return nullptr;
      }
    case HloOpcode::kConvert:
      return sc == 0 ? ConvertFor(in0, out) : nullptr;
    default:
      break;
  }
  switch (out) {
    case hlo::F32: return FloatOp<float>(instr, sc);
    case hlo::F64: return FloatOp<double>(instr, sc);
    case hlo::F16: return HalfOp(instr, sc, DType::kFloat16);
    case hlo::BF16: return HalfOp(instr, sc, DType::kBFloat16);
    case hlo::S8: return IntegerOp<int8_t>(instr, sc);
    case hlo::S32: return IntegerOp<int32_t>(instr, sc);
    case hlo::S64: return IntegerOp<int64_t>(instr, sc);
    case hlo::U8: return IntegerOp<uint8_t>(instr, sc);
    case hlo::U32: return IntegerOp<uint32_t>(instr, sc);
    case hlo::U64: return IntegerOp<uint64_t>(instr, sc);
    case hlo::PRED:
      switch (instr.opcode()) {
        case HloOpcode::kAnd: return BinaryIntFor<uint8_t, IOp::kAnd>(sc);
        case HloOpcode::kOr: return BinaryIntFor<uint8_t, IOp::kOr>(sc);
        case HloOpcode::kXor: return BinaryIntFor<uint8_t, IOp::kXor>(sc);
        case HloOpcode::kNot: return sc == 0 ? &IntOp<uint8_t, IOp::kLogicalNot> : nullptr;
        case HloOpcode::kCopy: return sc == 0 ? &IntOp<uint8_t, IOp::kCopy> : nullptr;
        default: return nullptr;
      }
    default:
      return nullptr;
  }
}

ReduceSpanFn FindReduceSpan(HloOpcode reducer, PrimitiveType type) {
  switch (type) {
    case hlo::F32: return ReduceFor<float>(reducer);
    case hlo::F64: return ReduceFor<double>(reducer);
    case hlo::S32: return ReduceFor<int32_t>(reducer);
    case hlo::S64: return ReduceFor<int64_t>(reducer);
    case hlo::U32: return ReduceFor<uint32_t>(reducer);
    case hlo::U64: return ReduceFor<uint64_t>(reducer);
    default: return nullptr;
  }
}

IndexToValueFn FindIndexToValue(PrimitiveType type) {
  switch (type) {
    case hlo::F32: return &IndexToValue<float>;
    case hlo::F64: return &IndexToValue<double>;
    case hlo::S8: return &IndexToValue<int8_t>;
    case hlo::S32: return &IndexToValue<int32_t>;
    case hlo::S64: return &IndexToValue<int64_t>;
    case hlo::U8: return &IndexToValue<uint8_t>;
    case hlo::U32: return &IndexToValue<uint32_t>;
    case hlo::U64: return &IndexToValue<uint64_t>;
    default: return nullptr;
  }
}

}  // namespace jx::cpu::internal
