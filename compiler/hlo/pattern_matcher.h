// Pattern matcher for HLO rewrites, in the spirit of XLA's pattern_matcher: patterns are
// values built from small combinators and tested against an instruction with Match.
// Captures are written only when the whole pattern matches, so a failed match leaves the
// caller's pointers untouched.
//
//   namespace m = ::jx::hlo::match;
//   HloInstruction* x;
//   if (Match(instr, m::AddAnyOrder(m::Op(&x), m::ConstantSplat(0)))) { ... x + 0 ... }
//   Match(instr, m::Transpose(m::Transpose(m::Op(&x)).WithOneUser()));
//   Match(instr, m::Multiply().WithShape(ShapeUtil::MakeShape(F32, {8})));
//
// Operand patterns given to an opcode pattern must match the operands one to one (and the
// instruction must have exactly that many operands); with no operand patterns any operands
// match. `*AnyOrder` variants also try a binary op's operands swapped.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "jx/compiler/hlo/hlo_instruction.h"

namespace jx::hlo {
namespace match {

class Pattern {
 public:
  using Predicate = std::function<bool(const HloInstruction*)>;

  Pattern() = default;  // matches every instruction

  // Refinements (each returns a copy with one more condition).
  Pattern WithOpcode(HloOpcode opcode) const {
    Pattern p = *this;
    p.opcode_ = opcode;
    return p;
  }
  Pattern WithPredicate(Predicate pred) const {
    Pattern p = *this;
    p.predicates_.push_back(std::move(pred));
    return p;
  }
  // Same element type and dimensions (layouts ignored).
  Pattern WithShape(const Shape& shape) const {
    return WithPredicate(
        [shape](const HloInstruction* i) { return ShapeUtil::Compatible(i->shape(), shape); });
  }
  Pattern WithElementType(PrimitiveType type) const {
    return WithPredicate(
        [type](const HloInstruction* i) { return i->shape().element_type() == type; });
  }
  Pattern WithOneUser() const {
    return WithPredicate([](const HloInstruction* i) { return i->user_count() == 1; });
  }
  Pattern WithOperands(std::vector<Pattern> operands) const {
    Pattern p = *this;
    p.operands_ = std::make_shared<const std::vector<Pattern>>(std::move(operands));
    return p;
  }
  // Binary ops: the two operand patterns may match in either order.
  Pattern AnyOrder() const {
    Pattern p = *this;
    p.any_order_ = true;
    return p;
  }
  Pattern CaptureInto(HloInstruction** out) const {
    Pattern p = *this;
    p.capture_ = out;
    return p;
  }

  // True if instr matches; then (and only then) writes every capture.
  bool Match(HloInstruction* instr) const {
    if (!Matches(instr)) return false;
    Capture(instr);
    return true;
  }

 private:
  bool MatchesSelf(const HloInstruction* instr) const {
    if (instr == nullptr) return false;
    if (opcode_.has_value() && instr->opcode() != *opcode_) return false;
    for (const Predicate& pred : predicates_) {
      if (!pred(instr)) return false;
    }
    return true;
  }
  // Operand i of instr is checked against pattern order[i].
  bool OperandsMatch(const HloInstruction* instr, bool swapped) const {
    const std::vector<Pattern>& ops = *operands_;
    if (instr->operand_count() != static_cast<int64_t>(ops.size())) return false;
    for (size_t i = 0; i < ops.size(); ++i) {
      const size_t j = swapped ? ops.size() - 1 - i : i;
      if (!ops[j].Matches(instr->mutable_operand(static_cast<int64_t>(i)))) return false;
    }
    return true;
  }
  bool Matches(const HloInstruction* instr) const {
    if (!MatchesSelf(instr)) return false;
    if (operands_ == nullptr) return true;
    if (OperandsMatch(instr, false)) return true;
    return any_order_ && operands_->size() == 2 && OperandsMatch(instr, true);
  }
  void Capture(HloInstruction* instr) const {
    if (capture_ != nullptr) *capture_ = instr;
    if (operands_ == nullptr) return;
    const bool swapped = !OperandsMatch(instr, false);  // the order Matches accepted
    const std::vector<Pattern>& ops = *operands_;
    for (size_t i = 0; i < ops.size(); ++i) {
      const size_t j = swapped ? ops.size() - 1 - i : i;
      ops[j].Capture(instr->mutable_operand(static_cast<int64_t>(i)));
    }
  }

  std::optional<HloOpcode> opcode_;
  std::vector<Predicate> predicates_;
  std::shared_ptr<const std::vector<Pattern>> operands_;  // null: operands unconstrained
  bool any_order_ = false;
  HloInstruction** capture_ = nullptr;
};

// Any instruction, optionally captured.
inline Pattern Op() { return Pattern(); }
inline Pattern Op(HloInstruction** capture) { return Pattern().CaptureInto(capture); }
// An instruction with the given opcode and (optionally) operands.
inline Pattern Op(HloOpcode opcode) { return Pattern().WithOpcode(opcode); }

inline Pattern Parameter() { return Op(HloOpcode::kParameter); }
inline Pattern Parameter(HloInstruction** capture) { return Parameter().CaptureInto(capture); }
inline Pattern Constant() { return Op(HloOpcode::kConstant); }
inline Pattern Constant(HloInstruction** capture) { return Constant().CaptureInto(capture); }
inline Pattern Iota() { return Op(HloOpcode::kIota); }

// True if every element of the literal equals v (compared as doubles; pred: 0/1).
inline bool LiteralIsAll(const Literal& literal, double v) {
  if (!literal.shape().IsArray()) return false;
  for (int64_t i = 0; i < literal.element_count(); ++i) {
    if (literal.GetAsDouble(i) != v) return false;
  }
  return true;
}

// A rank-0 constant equal to v.
inline Pattern ConstantScalar(double v) {
  return Constant().WithPredicate([v](const HloInstruction* i) {
    return i->shape().rank() == 0 && LiteralIsAll(i->literal(), v);
  });
}
inline Pattern ConstantScalar(HloInstruction** capture, double v) {
  return ConstantScalar(v).CaptureInto(capture);
}
// A rank-0 constant of any value.
inline Pattern ConstantScalar() {
  return Constant().WithPredicate([](const HloInstruction* i) { return i->shape().rank() == 0; });
}

// Whether `instr` may match ConstantSplat: a constant, or a broadcast or reshape (whose
// chain ConstantSplat follows to a constant). A test that builds no pattern, for a pass to
// skip the splat rules of an instruction none of whose operands can match.
inline bool MayBeConstantSplat(const HloInstruction& instr) {
  const HloOpcode op = instr.opcode();
  return op == HloOpcode::kConstant || op == HloOpcode::kBroadcast || op == HloOpcode::kReshape;
}

// A value whose every element is v: a constant of any shape filled with v, or a chain of
// broadcasts/reshapes of one (how a splat usually appears in HLO).
inline Pattern ConstantSplat(double v) {
  return Pattern().WithPredicate([v](const HloInstruction* i) {
    while (i->opcode() == HloOpcode::kBroadcast || i->opcode() == HloOpcode::kReshape) {
      i = i->operand(0);
    }
    return i->opcode() == HloOpcode::kConstant && LiteralIsAll(i->literal(), v);
  });
}

// Opcode patterns: m::Add() (any operands) or m::Add(lhs, rhs).
#define JX_HLO_MATCH_UNARY(Name, opcode)                                           \
  inline Pattern Name() { return Op(HloOpcode::opcode); }                          \
  inline Pattern Name(HloInstruction** capture) { return Name().CaptureInto(capture); } \
  inline Pattern Name(Pattern operand) {                                           \
    return Op(HloOpcode::opcode).WithOperands({std::move(operand)});               \
  }                                                                                \
  inline Pattern Name(HloInstruction** capture, Pattern operand) {                 \
    return Name(std::move(operand)).CaptureInto(capture);                          \
  }
#define JX_HLO_MATCH_BINARY(Name, opcode)                                          \
  inline Pattern Name() { return Op(HloOpcode::opcode); }                          \
  inline Pattern Name(HloInstruction** capture) { return Name().CaptureInto(capture); } \
  inline Pattern Name(Pattern lhs, Pattern rhs) {                                  \
    return Op(HloOpcode::opcode).WithOperands({std::move(lhs), std::move(rhs)});   \
  }                                                                                \
  inline Pattern Name(HloInstruction** capture, Pattern lhs, Pattern rhs) {        \
    return Name(std::move(lhs), std::move(rhs)).CaptureInto(capture);              \
  }                                                                                \
  inline Pattern Name##AnyOrder(Pattern lhs, Pattern rhs) {                        \
    return Name(std::move(lhs), std::move(rhs)).AnyOrder();                        \
  }                                                                                \
  inline Pattern Name##AnyOrder(HloInstruction** capture, Pattern lhs, Pattern rhs) { \
    return Name##AnyOrder(std::move(lhs), std::move(rhs)).CaptureInto(capture);    \
  }
#define JX_HLO_MATCH_TERNARY(Name, opcode)                                         \
  inline Pattern Name() { return Op(HloOpcode::opcode); }                          \
  inline Pattern Name(HloInstruction** capture) { return Name().CaptureInto(capture); } \
  inline Pattern Name(Pattern a, Pattern b, Pattern c) {                           \
    return Op(HloOpcode::opcode).WithOperands({std::move(a), std::move(b), std::move(c)}); \
  }

JX_HLO_MATCH_UNARY(Abs, kAbs)
JX_HLO_MATCH_UNARY(Bitcast, kBitcast)
JX_HLO_MATCH_UNARY(Broadcast, kBroadcast)
JX_HLO_MATCH_UNARY(Convert, kConvert)
JX_HLO_MATCH_UNARY(Copy, kCopy)
JX_HLO_MATCH_UNARY(Exp, kExp)
JX_HLO_MATCH_UNARY(Log, kLog)
JX_HLO_MATCH_UNARY(Logistic, kLogistic)
JX_HLO_MATCH_UNARY(Negate, kNegate)
JX_HLO_MATCH_UNARY(Not, kNot)
JX_HLO_MATCH_UNARY(Reshape, kReshape)
JX_HLO_MATCH_UNARY(Reverse, kReverse)
JX_HLO_MATCH_UNARY(Slice, kSlice)
JX_HLO_MATCH_UNARY(Sqrt, kSqrt)
JX_HLO_MATCH_UNARY(Tanh, kTanh)
JX_HLO_MATCH_UNARY(Transpose, kTranspose)

JX_HLO_MATCH_BINARY(Add, kAdd)
JX_HLO_MATCH_BINARY(And, kAnd)
JX_HLO_MATCH_BINARY(Compare, kCompare)
JX_HLO_MATCH_BINARY(Divide, kDivide)
JX_HLO_MATCH_BINARY(Dot, kDot)
JX_HLO_MATCH_BINARY(Maximum, kMaximum)
JX_HLO_MATCH_BINARY(Minimum, kMinimum)
JX_HLO_MATCH_BINARY(Multiply, kMultiply)
JX_HLO_MATCH_BINARY(Or, kOr)
JX_HLO_MATCH_BINARY(Pad, kPad)
JX_HLO_MATCH_BINARY(Power, kPower)
JX_HLO_MATCH_BINARY(Subtract, kSubtract)
JX_HLO_MATCH_BINARY(Xor, kXor)

JX_HLO_MATCH_TERNARY(Clamp, kClamp)
JX_HLO_MATCH_TERNARY(Select, kSelect)

#undef JX_HLO_MATCH_UNARY
#undef JX_HLO_MATCH_BINARY
#undef JX_HLO_MATCH_TERNARY

// Variadic ops (concatenate, reduce, fusion, ...): match by opcode, refine with
// WithOperands / WithPredicate.
inline Pattern Concatenate() { return Op(HloOpcode::kConcatenate); }
inline Pattern Reduce() { return Op(HloOpcode::kReduce); }
inline Pattern Fusion() { return Op(HloOpcode::kFusion); }

}  // namespace match

// Matches instr against pattern; on success writes the pattern's captures.
inline bool Match(HloInstruction* instr, const match::Pattern& pattern) {
  return pattern.Match(instr);
}

}  // namespace jx::hlo
