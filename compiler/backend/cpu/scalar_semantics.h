// Internal to the CPU backend: the scalar semantics the native reduce, arg-reduce,
// reduce-window, sort and scatter kernels share, written to give the reference evaluator's
// bits (hlo_evaluator_elementwise.cc):
//   - Elem<T>: an element type as storage + compute type (f16/bf16 stored as bits and
//     computed in float, rounded back on every store, as the evaluator's literals do);
//   - Combine<E, op>: add/multiply/maximum/minimum/and/or/xor of two computed values;
//   - VisitType / VisitReducer: runtime type and opcode to template instantiation;
//   - PredicateTable: a scalar predicate computation (compares of parameter pairs joined by
//     and/or/xor/not) proven equal to a lookup table over the "order class" of each pair,
//     so sort comparators and argmax reducers run without interpreting HLO.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <optional>
#include <type_traits>
#include <utility>
#include <vector>

#include "jx/compiler/hlo/hlo_computation.h"
#include "jx/compiler/hlo/hlo_instruction.h"
#include "jx/compiler/hlo/literal.h"

namespace jx::cpu::internal {

template <hlo::PrimitiveType kType, typename S, typename C>
struct Elem {
  using Storage = S;
  using Compute = C;
  static constexpr hlo::PrimitiveType kPrimitive = kType;
  static constexpr bool kIsFloat = std::is_floating_point_v<C>;
  static constexpr bool kIsNarrowFloat = kType == hlo::F16 || kType == hlo::BF16;
  static C Load(const void* base, int64_t i) {
    const S s = static_cast<const S*>(base)[i];
    if constexpr (kType == hlo::F16) {
      return hlo::HalfToFloat(s);
    } else if constexpr (kType == hlo::BF16) {
      return hlo::BFloat16ToFloat(s);
    } else if constexpr (kType == hlo::PRED) {
      return s != 0;
    } else {
      return s;
    }
  }
  static void Store(void* base, int64_t i, C v) {
    S s;
    if constexpr (kType == hlo::F16) {
      s = hlo::FloatToHalf(v);
    } else if constexpr (kType == hlo::BF16) {
      s = hlo::FloatToBFloat16(v);
    } else {
      s = static_cast<S>(v);
    }
    static_cast<S*>(base)[i] = s;
  }
  // The value a store and reload would give (a 16-bit float's rounding).
  static C Round(C v) {
    if constexpr (kType == hlo::F16) {
      return hlo::HalfToFloat(hlo::FloatToHalf(v));
    } else if constexpr (kType == hlo::BF16) {
      return hlo::BFloat16ToFloat(hlo::FloatToBFloat16(v));
    } else {
      return v;
    }
  }
  // Raw bits, for the total order of floats.
  static int64_t TotalOrderKey(const void* base, int64_t i) {
    constexpr int kBits = sizeof(S) * 8;
    uint64_t bits = 0;
    std::memcpy(&bits, static_cast<const S*>(base) + i, sizeof(S));
    const uint64_t sign = uint64_t{1} << (kBits - 1);
    const int64_t m = static_cast<int64_t>(bits & (sign - 1));
    return (bits & sign) ? -m - 1 : m;
  }
};

using PredElem = Elem<hlo::PRED, uint8_t, bool>;
using S8Elem = Elem<hlo::S8, int8_t, int8_t>;
using S16Elem = Elem<hlo::S16, int16_t, int16_t>;
using S32Elem = Elem<hlo::S32, int32_t, int32_t>;
using S64Elem = Elem<hlo::S64, int64_t, int64_t>;
using U8Elem = Elem<hlo::U8, uint8_t, uint8_t>;
using U16Elem = Elem<hlo::U16, uint16_t, uint16_t>;
using U32Elem = Elem<hlo::U32, uint32_t, uint32_t>;
using U64Elem = Elem<hlo::U64, uint64_t, uint64_t>;
using F16Elem = Elem<hlo::F16, uint16_t, float>;
using BF16Elem = Elem<hlo::BF16, uint16_t, float>;
using F32Elem = Elem<hlo::F32, float, float>;
using F64Elem = Elem<hlo::F64, double, double>;

// Calls fn(E{}) with E the Elem of `type`; false (fn not called) for non-array types.
template <typename Fn>
bool VisitType(hlo::PrimitiveType type, Fn&& fn) {
  switch (type) {
    case hlo::PRED: fn(PredElem{}); return true;
    case hlo::S8: fn(S8Elem{}); return true;
    case hlo::S16: fn(S16Elem{}); return true;
    case hlo::S32: fn(S32Elem{}); return true;
    case hlo::S64: fn(S64Elem{}); return true;
    case hlo::U8: fn(U8Elem{}); return true;
    case hlo::U16: fn(U16Elem{}); return true;
    case hlo::U32: fn(U32Elem{}); return true;
    case hlo::U64: fn(U64Elem{}); return true;
    case hlo::F16: fn(F16Elem{}); return true;
    case hlo::BF16: fn(BF16Elem{}); return true;
    case hlo::F32: fn(F32Elem{}); return true;
    case hlo::F64: fn(F64Elem{}); return true;
    default: return false;
  }
}

// op(a, b) with the evaluator's semantics: integers wrap, pred add/max is or and
// multiply/min is and, float max/min propagate NaN (as the quiet NaN) and order -0 < +0.
template <typename E, hlo::HloOpcode kOp>
typename E::Compute Combine(typename E::Compute a, typename E::Compute b) {
  using C = typename E::Compute;
  using hlo::HloOpcode;
  if constexpr (E::kPrimitive == hlo::PRED) {
    if constexpr (kOp == HloOpcode::kAdd || kOp == HloOpcode::kMaximum || kOp == HloOpcode::kOr) {
      return a || b;
    } else if constexpr (kOp == HloOpcode::kXor) {
      return a != b;
    } else {
      return a && b;
    }
  } else if constexpr (E::kIsFloat) {
    if constexpr (kOp == HloOpcode::kAdd) return a + b;
    if constexpr (kOp == HloOpcode::kMultiply) return a * b;
    if constexpr (kOp == HloOpcode::kMaximum || kOp == HloOpcode::kMinimum) {
      if (std::isnan(a) || std::isnan(b)) return std::numeric_limits<C>::quiet_NaN();
      if (a == b) return (std::signbit(a) == (kOp == HloOpcode::kMaximum)) ? b : a;
      return (kOp == HloOpcode::kMaximum) == (a > b) ? a : b;
    }
    return a;  // unreachable: VisitReducer admits no other float op
  } else {
    using U = std::make_unsigned_t<C>;
    using W = std::conditional_t<(sizeof(C) < sizeof(unsigned)), unsigned, U>;
    if constexpr (kOp == HloOpcode::kAdd) return static_cast<C>(static_cast<W>(static_cast<U>(a)) + static_cast<W>(static_cast<U>(b)));
    if constexpr (kOp == HloOpcode::kMultiply) return static_cast<C>(static_cast<W>(static_cast<U>(a)) * static_cast<W>(static_cast<U>(b)));
    if constexpr (kOp == HloOpcode::kMaximum) return a >= b ? a : b;
    if constexpr (kOp == HloOpcode::kMinimum) return a <= b ? a : b;
    if constexpr (kOp == HloOpcode::kAnd) return static_cast<C>(a & b);
    if constexpr (kOp == HloOpcode::kOr) return static_cast<C>(a | b);
    if constexpr (kOp == HloOpcode::kXor) return static_cast<C>(a ^ b);
    return a;
  }
}

// Whether a fold of op in any order gives the same bits as the evaluator's sequential fold.
template <typename E, hlo::HloOpcode kOp>
constexpr bool kOrderFree = !E::kIsFloat || kOp == hlo::HloOpcode::kMaximum ||
                            kOp == hlo::HloOpcode::kMinimum;

// acc = op(acc, x) as the evaluator computes it (16-bit float sums round every step).
template <typename E, hlo::HloOpcode kOp>
typename E::Compute Step(typename E::Compute acc, typename E::Compute x) {
  if constexpr (E::kIsNarrowFloat &&
                (kOp == hlo::HloOpcode::kAdd || kOp == hlo::HloOpcode::kMultiply)) {
    return E::Round(Combine<E, kOp>(acc, x));
  } else {
    return Combine<E, kOp>(acc, x);
  }
}

// Calls fn(std::integral_constant<HloOpcode, op>{}) for a reducer op that type E accepts
// (and/or/xor only for integers and pred); false otherwise.
template <typename E, typename Fn>
bool VisitReducer(hlo::HloOpcode op, Fn&& fn) {
  using hlo::HloOpcode;
  switch (op) {
    case HloOpcode::kAdd: fn(std::integral_constant<HloOpcode, HloOpcode::kAdd>{}); return true;
    case HloOpcode::kMultiply:
      fn(std::integral_constant<HloOpcode, HloOpcode::kMultiply>{});
      return true;
    case HloOpcode::kMaximum:
      fn(std::integral_constant<HloOpcode, HloOpcode::kMaximum>{});
      return true;
    case HloOpcode::kMinimum:
      fn(std::integral_constant<HloOpcode, HloOpcode::kMinimum>{});
      return true;
    default: break;
  }
  if constexpr (!E::kIsFloat) {
    switch (op) {
      case HloOpcode::kAnd: fn(std::integral_constant<HloOpcode, HloOpcode::kAnd>{}); return true;
      case HloOpcode::kOr: fn(std::integral_constant<HloOpcode, HloOpcode::kOr>{}); return true;
      case HloOpcode::kXor: fn(std::integral_constant<HloOpcode, HloOpcode::kXor>{}); return true;
      default: break;
    }
  }
  return false;
}

// The op of a reducer/combiner whose root is one binary op of its two distinct parameters
// (in either order: every op VisitReducer admits is commutative).
std::optional<hlo::HloOpcode> SimpleBinaryReducer(const hlo::HloComputation& c);

// A pair of scalar parameters (a, b) of one element type that a predicate compares. Its
// order class says everything a compare between a and b (in any order, or of one with
// itself) can observe:
//   3 classes (integers, pred, floats under TOTALORDER): 0 a < b, 1 a == b, 2 a > b;
//   6 classes (floats under IEEE compare): 0-2 as above with neither NaN, 3 a NaN and b
//   not, 4 b NaN and a not, 5 both NaN.
struct ComparedPair {
  int64_t a = -1, b = -1;  // parameter numbers
  hlo::PrimitiveType type = hlo::PRIMITIVE_TYPE_INVALID;
  // How compares order the pair: -1 not compared yet, 0 IEEE/natural, 1 floats under
  // TOTALORDER. One kind per pair.
  int kind = -1;
  bool total_order() const { return kind == 1; }
  // 1 for a pair no compare has looked at: it cannot change the predicate.
  int classes() const {
    if (kind < 0) return 1;
    return hlo::IsFloatingPointType(type) && kind != 1 ? 6 : 3;
  }
};

class PredicateTable {
 public:
  // Analyzes the pred value of `root` (an instruction of a scalar computation) as a
  // function of the pairs: each compare must relate parameters of one pair, of one
  // comparison kind; the rest may only be and/or/xor/not and pred constants. Sets the
  // kind of each pair it compares (a kind already set must agree). nullopt when the
  // predicate is outside that form.
  static std::optional<PredicateTable> Analyze(const hlo::HloInstruction& root,
                                               std::vector<ComparedPair>& pairs);
  // Value for the class tuple, index = sum class_k * stride_k (stride of pair 0 is 1).
  bool At(int64_t index) const { return table_[index] != 0; }
  const std::vector<uint8_t>& table() const { return table_; }

 private:
  std::vector<uint8_t> table_;
};

// Order class of (x, y) (see ComparedPair), for values loaded as E::Compute, or as total
// order keys.
template <typename C>
inline int OrderClass3(C x, C y) {
  return x < y ? 0 : (x == y ? 1 : 2);
}
template <typename C>
inline int OrderClass6(C x, C y) {
  const bool xn = x != x, yn = y != y;
  if (!xn && !yn) return x < y ? 0 : (x == y ? 1 : 2);
  return xn ? (yn ? 5 : 3) : 4;
}

}  // namespace jx::cpu::internal
