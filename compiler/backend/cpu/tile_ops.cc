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

#include "jx/compiler/backend/cpu/cpu_kernels.h"
#include "jx/lax/kernels/dispatch.h"
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
    case HloOpcode::kNot: return U::kNot;
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
    case HloOpcode::kAnd: return B::kAnd;
    case HloOpcode::kOr: return B::kOr;
    case HloOpcode::kXor: return B::kXor;
    case HloOpcode::kShiftLeft: return B::kShiftLeft;
    case HloOpcode::kShiftRightLogical: return B::kShiftRightLogical;
    case HloOpcode::kShiftRightArithmetic: return B::kShiftRightArithmetic;
    default: return std::nullopt;
  }
}

// Whether instr is the scalar 1 (a constant, or a broadcast of one).
bool IsScalarOne(const HloInstruction& instr) {
  const HloInstruction* c = instr.opcode() == HloOpcode::kBroadcast ? instr.operand(0) : &instr;
  return c->opcode() == HloOpcode::kConstant && c->shape().IsArray() && c->shape().rank() == 0 &&
         c->literal().GetAsDouble(0) == 1.0;
}

// The library kernel of an elementwise op on dtype, or nullptr.
TileOpFn SharedOp(const HloInstruction& instr, unsigned scalars, DType dtype) {
  // atan lowers to atan2(x, 1): the library's atan, which eager runs (atan2's general path
  // costs ~25% more per element).
  if (instr.opcode() == HloOpcode::kAtan2 && scalars == 2 && IsScalarOne(*instr.operand(1))) {
    return kernels::FindUnaryFn(kernels::UnaryOp::kAtan, dtype);
  }
  if (const auto op = SharedBinaryOp(instr.opcode())) return kernels::FindBinaryFn(*op, dtype, scalars);
  if (instr.opcode() == HloOpcode::kClamp && IsFloating(dtype)) return kernels::FindClampFn(dtype, scalars);
  if (scalars != 0) return nullptr;
  if (const auto op = SharedUnaryOp(instr.opcode())) return kernels::FindUnaryFn(*op, dtype);
  return nullptr;
}

template <typename Bits>
void CopyLoop(const void* const* in, void* out, int64_t n) {
  std::memcpy(out, in[0], n * sizeof(Bits));
}

// ---- compare / select / clamp / convert.

// The instantiation of a loop template for a scalar-operand mask: ternary loops take masks
// 0-6 (an all-scalar op is left to the caller's splat).
template <template <unsigned> class Loop>
TileOpFn ForScalars(unsigned scalars) {
  switch (scalars) {
    case 0: return &Loop<0>::Run;
    case 1: return &Loop<1>::Run;
    case 2: return &Loop<2>::Run;
    case 3: return &Loop<3>::Run;
    case 4: return &Loop<4>::Run;
    case 5: return &Loop<5>::Run;
    case 6: return &Loop<6>::Run;
    default: return nullptr;
  }
}

// Floats under TOTALORDER (-NaN < -inf < ... < -0 < +0 < ... < inf < NaN): compared as the
// signed integers whose order matches (magnitude bits, negated for negative values).
template <typename Bits>
struct TotalOrderKey {
  using Signed = std::make_signed_t<Bits>;
  static Signed Of(Bits b) {
    const Signed s = static_cast<Signed>(b);
    const Bits magnitude = static_cast<Bits>(b & (std::numeric_limits<Bits>::max() >> 1));
    return s < 0 ? static_cast<Signed>(Bits(0) - magnitude) - 1 : static_cast<Signed>(magnitude);
  }
};

template <typename Bits, ComparisonDirection kDir>
struct TotalOrderCompareLoop {
  template <unsigned kScalars>
  struct L {
    static void Run(const void* const* in, void* out, int64_t n) {
      const Operand<Bits, kScalars, 0> a(in);
      const Operand<Bits, kScalars, 1> b(in);
      uint8_t* __restrict o = static_cast<uint8_t*>(out);
      for (int64_t i = 0; i < n; ++i) {
        const auto x = TotalOrderKey<Bits>::Of(a[i]), y = TotalOrderKey<Bits>::Of(b[i]);
        bool r = false;
        if constexpr (kDir == ComparisonDirection::kEq) r = x == y;
        if constexpr (kDir == ComparisonDirection::kNe) r = x != y;
        if constexpr (kDir == ComparisonDirection::kLt) r = x < y;
        if constexpr (kDir == ComparisonDirection::kLe) r = x <= y;
        if constexpr (kDir == ComparisonDirection::kGt) r = x > y;
        if constexpr (kDir == ComparisonDirection::kGe) r = x >= y;
        o[i] = r;
      }
    }
  };
};

template <typename Bits>
TileOpFn TotalOrderCompareOfWidth(ComparisonDirection d, unsigned sc) {
  if (sc > 2) return nullptr;
  using D = ComparisonDirection;
  switch (d) {
    case D::kEq: return ForScalars<TotalOrderCompareLoop<Bits, D::kEq>::template L>(sc);
    case D::kNe: return ForScalars<TotalOrderCompareLoop<Bits, D::kNe>::template L>(sc);
    case D::kLt: return ForScalars<TotalOrderCompareLoop<Bits, D::kLt>::template L>(sc);
    case D::kLe: return ForScalars<TotalOrderCompareLoop<Bits, D::kLe>::template L>(sc);
    case D::kGt: return ForScalars<TotalOrderCompareLoop<Bits, D::kGt>::template L>(sc);
    case D::kGe: return ForScalars<TotalOrderCompareLoop<Bits, D::kGe>::template L>(sc);
  }
  return nullptr;
}

TileOpFn TotalOrderCompareFor(PrimitiveType type, ComparisonDirection d, unsigned sc) {
  switch (type) {
    case hlo::F16: case hlo::BF16: return TotalOrderCompareOfWidth<uint16_t>(d, sc);
    case hlo::F32: return TotalOrderCompareOfWidth<uint32_t>(d, sc);
    case hlo::F64: return TotalOrderCompareOfWidth<uint64_t>(d, sc);
    default: return nullptr;  // integers: TOTALORDER is the natural order (not emitted)
  }
}

std::optional<kernels::CompareOp> SharedCompareOp(ComparisonDirection d) {
  using C = kernels::CompareOp;
  switch (d) {
    case ComparisonDirection::kEq: return C::kEq;
    case ComparisonDirection::kNe: return C::kNe;
    case ComparisonDirection::kLt: return C::kLt;
    case ComparisonDirection::kLe: return C::kLe;
    case ComparisonDirection::kGt: return C::kGt;
    case ComparisonDirection::kGe: return C::kGe;
  }
  return std::nullopt;
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

// convert: the kernel library's, as eager's convert_element_type.
TileOpFn ConvertFor(PrimitiveType from, PrimitiveType to) {
  const std::optional<DType> f = KernelDTypeOf(from), t = KernelDTypeOf(to);
  return f && t ? kernels::FindConvertFn(*f, *t) : nullptr;
}

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
    case HloOpcode::kCompare: {
      if (instr.comparison_type() == ComparisonType::kTotalOrder) {
        return TotalOrderCompareFor(in0, instr.comparison_direction(), sc);
      }
      const std::optional<DType> d = KernelDTypeOf(in0);
      const std::optional<kernels::CompareOp> op = SharedCompareOp(instr.comparison_direction());
      return d && op ? kernels::FindCompareFn(*op, *d, sc) : nullptr;
    }
    case HloOpcode::kSelect:
      switch (hlo::ByteSizeOfPrimitiveType(out)) {
        case 1: return ForScalars<SelectLoop<uint8_t>::template L>(sc);
        case 2: return ForScalars<SelectLoop<uint16_t>::template L>(sc);
        case 4: return ForScalars<SelectLoop<uint32_t>::template L>(sc);
        case 8: return ForScalars<SelectLoop<uint64_t>::template L>(sc);
        default: return nullptr;
      }
    case HloOpcode::kConvert:
      return sc == 0 ? ConvertFor(in0, out) : nullptr;
    case HloOpcode::kReducePrecision: {
      // Operand 1 is the program's ReducePrecisionBits for this op (tile_program.cc), read
      // as one value (or as the first of a splatted tile of them); x must be a tile.
      const std::optional<DType> d = KernelDTypeOf(out);
      return (sc & 1) == 0 && d ? kernels::FindReducePrecisionFn(*d) : nullptr;
    }
    case HloOpcode::kIsFinite: {
      const std::optional<DType> d = KernelDTypeOf(in0);
      return sc == 0 && d ? kernels::FindIsFiniteFn(*d) : nullptr;
    }
    case HloOpcode::kCopy:
      if (sc != 0) return nullptr;
      switch (hlo::ByteSizeOfPrimitiveType(out)) {
        case 1: return &CopyLoop<uint8_t>;
        case 2: return &CopyLoop<uint16_t>;
        case 4: return &CopyLoop<uint32_t>;
        case 8: return &CopyLoop<uint64_t>;
        default: return nullptr;
      }
    case HloOpcode::kClamp:
      switch (out) {  // integer and pred clamp; float clamp is the library's (SharedOp)
        case hlo::PRED: return ForScalars<ClampLoop<uint8_t>::template L>(sc);  // 0 < 1
        case hlo::S8: return ForScalars<ClampLoop<int8_t>::template L>(sc);
        case hlo::S16: return ForScalars<ClampLoop<int16_t>::template L>(sc);
        case hlo::S32: return ForScalars<ClampLoop<int32_t>::template L>(sc);
        case hlo::S64: return ForScalars<ClampLoop<int64_t>::template L>(sc);
        case hlo::U8: return ForScalars<ClampLoop<uint8_t>::template L>(sc);
        case hlo::U16: return ForScalars<ClampLoop<uint16_t>::template L>(sc);
        case hlo::U32: return ForScalars<ClampLoop<uint32_t>::template L>(sc);
        case hlo::U64: return ForScalars<ClampLoop<uint64_t>::template L>(sc);
        default: break;
      }
      break;
    default:
      break;
  }
  const std::optional<DType> dtype = KernelDTypeOf(out);
  return dtype ? SharedOp(instr, sc, *dtype) : nullptr;
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

LibraryLoop FindLibraryLoop(const HloInstruction& instr) {
  const std::optional<DType> dtype = KernelDTypeOf(instr.shape().element_type());
  if (!dtype || !instr.shape().IsArray()) return {};
  for (const HloInstruction* op : instr.operands()) {
    if (!op->shape().IsArray() || op->shape().element_type() != instr.shape().element_type() ||
        op->shape().dimensions() != instr.shape().dimensions()) {
      return {};
    }
  }
  const int64_t bytes = hlo::ShapeUtil::ElementsIn(instr.shape()) * ItemSize(*dtype);
  const kernels::StoreMode store =
      kernels::UseStreamingStores(bytes) ? kernels::StoreMode::kStreaming : kernels::StoreMode::kNormal;
  LibraryLoop loop;
  if (const auto op = SharedUnaryOp(instr.opcode()); op && instr.operand_count() == 1) {
    loop = {kernels::FindUnaryFn(*op, *dtype, store), 1,
            kernels::IsExpensive(*op) ? kernels::kExpensiveGrain : kernels::kParallelGrain};
  } else if (const auto op = SharedBinaryOp(instr.opcode()); op && instr.operand_count() == 2) {
    loop = {kernels::FindBinaryFn(*op, *dtype, /*scalar_operands=*/0, store), 2,
            kernels::IsExpensive(*op) ? kernels::kExpensiveGrain : kernels::kParallelGrain};
  }
  return loop.fn != nullptr ? loop : LibraryLoop{};
}

}  // namespace jx::cpu::internal
