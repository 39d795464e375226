#include "jx/compiler/passes/algebraic_simplifier.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "jx/compiler/hlo/hlo_builder.h"
#include "jx/compiler/hlo/hlo_module.h"
#include "jx/compiler/hlo/instruction_prefetch.h"
#include "jx/compiler/hlo/pattern_matcher.h"
#include "jx/compiler/hlo/status_macros.h"

namespace jx::hlo {
namespace {

namespace m = ::jx::hlo::match;

// Returned by a rewrite that does not apply.
constexpr HloInstruction* kNoChange = nullptr;

bool IsIntegralOrPred(const Shape& shape) {
  return shape.IsArray() &&
         (IsIntegralType(shape.element_type()) || shape.element_type() == PRED);
}

bool IsIdentityPermutation(absl::Span<const int64_t> perm) {
  for (size_t i = 0; i < perm.size(); ++i) {
    if (perm[i] != static_cast<int64_t>(i)) return false;
  }
  return true;
}

// A pred (or any type) value of `shape` with every element `value`: a scalar constant,
// broadcast when the shape has dimensions.
absl::StatusOr<HloInstruction*> MakeSplat(HloBuilder& b, const Shape& shape, double value) {
  HLO_ASSIGN_OR_RETURN(HloInstruction * scalar,
                       b.Constant(Literal::CreateScalar(shape.element_type(), value)));
  if (shape.rank() == 0) return scalar;
  return b.Broadcast(scalar, shape.dimensions(), {});
}

// True if `init` is the identity of the reducer (a single binary op of its two
// parameters), so that reducing one element gives that element back.
bool InitIsReducerIdentity(const HloInstruction* reduce) {
  const HloComputation* reducer = reduce->to_apply();
  const HloInstruction* init = reduce->operand(1);
  if (reducer == nullptr || reducer->num_parameters() != 2 ||
      init->opcode() != HloOpcode::kConstant) {
    return false;
  }
  const HloInstruction* root = reducer->root_instruction();
  if (root->operand_count() != 2) return false;
  const HloInstruction* p0 = reducer->parameter_instruction(0);
  const HloInstruction* p1 = reducer->parameter_instruction(1);
  if (!((root->operand(0) == p0 && root->operand(1) == p1) ||
        (root->operand(0) == p1 && root->operand(1) == p0))) {
    return false;
  }
  const PrimitiveType type = init->shape().element_type();
  const double v = init->literal().GetAsDouble(0);
  const double inf = std::numeric_limits<double>::infinity();
  switch (root->opcode()) {
    case HloOpcode::kAdd:
    case HloOpcode::kOr:
      return v == 0 && (type != PRED || root->opcode() == HloOpcode::kOr);
    case HloOpcode::kMultiply:
      return v == 1 && type != PRED;
    case HloOpcode::kAnd:
      return type == PRED && v == 1;
    case HloOpcode::kMaximum:
      return IsFloatingPointType(type) && v == -inf;
    case HloOpcode::kMinimum:
      return IsFloatingPointType(type) && v == inf;
    default:
      return false;
  }
}

bool HasOperandThatMayBeConstantSplat(const HloInstruction& instr) {
  const auto& operands = instr.operands();
  return std::any_of(operands.begin(), operands.end(),
                     [](const HloInstruction* operand) { return m::MayBeConstantSplat(*operand); });
}

// Whether Simplifier::Simplify may rewrite instr, from its opcode and its operands' opcodes:
// false for an opcode Simplify has no case for, and for the cases that a glance rules out (a
// binary identity without a splat operand, most adds and multiplies of a big program). Simplify
// asks it first, so a case added there without its opcode here never runs: tests catch it.
// A computation where nothing may be rewritten needs no post order.
bool MayRewrite(const HloInstruction& instr) {
  switch (instr.opcode()) {
    case HloOpcode::kAdd:
    case HloOpcode::kSubtract:
    case HloOpcode::kMultiply:
    case HloOpcode::kDivide:
    case HloOpcode::kAnd:
    case HloOpcode::kOr:
      return HasOperandThatMayBeConstantSplat(instr);
    case HloOpcode::kNegate:
      return instr.operand(0)->opcode() == HloOpcode::kNegate;
    case HloOpcode::kMaximum:
    case HloOpcode::kMinimum:
      return instr.operand(0) == instr.operand(1);
    case HloOpcode::kTranspose:
    case HloOpcode::kReshape:
    case HloOpcode::kBroadcast:
    case HloOpcode::kSlice:
    case HloOpcode::kDynamicSlice:
    case HloOpcode::kConcatenate:
    case HloOpcode::kConvert:
    case HloOpcode::kPad:
    case HloOpcode::kReduce:
    case HloOpcode::kSelect:
    case HloOpcode::kCompare:
    case HloOpcode::kDot:
      return true;
    default:
      return false;
  }
}

class Simplifier {
 public:
  explicit Simplifier(HloComputation* computation) : b_(computation) {}

  // The instruction that replaces instr, or kNoChange.
  absl::StatusOr<HloInstruction*> Simplify(HloInstruction* instr) {
    HloInstruction* x = nullptr;
    HloInstruction* zero = nullptr;
    // Before any pattern is built (several allocations each).
    if (!MayRewrite(*instr)) return kNoChange;
    switch (instr->opcode()) {
      case HloOpcode::kAdd:
        if (Match(instr, m::AddAnyOrder(m::Op(&x), m::ConstantSplat(0)))) return x;
        break;
      case HloOpcode::kSubtract:
        if (Match(instr, m::Subtract(m::Op(&x), m::ConstantSplat(0)))) return x;
        break;
      case HloOpcode::kMultiply:
        if (Match(instr, m::MultiplyAnyOrder(m::Op(&x), m::ConstantSplat(1)))) return x;
        if (IsIntegralOrPred(instr->shape()) &&
            Match(instr, m::MultiplyAnyOrder(m::Op(), m::ConstantSplat(0).CaptureInto(&zero)))) {
          return zero;
        }
        break;
      case HloOpcode::kDivide:
        if (Match(instr, m::Divide(m::Op(&x), m::ConstantSplat(1)))) return x;
        break;
      case HloOpcode::kNegate:
        if (Match(instr, m::Negate(m::Negate(m::Op(&x))))) return x;
        break;
      case HloOpcode::kMaximum:
      case HloOpcode::kMinimum:
        if (instr->operand(0) == instr->operand(1)) return instr->mutable_operand(0);
        break;
      case HloOpcode::kAnd:
        if (instr->shape().element_type() == PRED &&
            Match(instr, m::AndAnyOrder(m::Op(&x), m::ConstantSplat(1)))) {
          return x;
        }
        break;
      case HloOpcode::kOr:
        if (instr->shape().element_type() == PRED &&
            Match(instr, m::OrAnyOrder(m::Op(&x), m::ConstantSplat(0)))) {
          return x;
        }
        break;
      case HloOpcode::kTranspose:
        return SimplifyTranspose(instr);
      case HloOpcode::kReshape:
        return SimplifyReshape(instr);
      case HloOpcode::kBroadcast:
        return SimplifyBroadcast(instr);
      case HloOpcode::kSlice:
        if (IsScalarBroadcast(*instr->operand(0))) return WindowOfSplat(instr);
        return SimplifySlice(instr);
      case HloOpcode::kDynamicSlice:
        if (IsScalarBroadcast(*instr->operand(0))) return WindowOfSplat(instr);
        break;
      case HloOpcode::kConcatenate:
        if (instr->operand_count() == 1) return instr->mutable_operand(0);
        break;
      case HloOpcode::kConvert:
        if (instr->operand(0)->shape().element_type() == instr->shape().element_type()) {
          return instr->mutable_operand(0);
        }
        break;
      case HloOpcode::kPad:
        return SimplifyPad(instr);
      case HloOpcode::kReduce:
        return SimplifyReduce(instr);
      case HloOpcode::kSelect:
        if (Match(instr, m::Select(m::ConstantSplat(1), m::Op(&x), m::Op()))) return x;
        if (Match(instr, m::Select(m::ConstantSplat(0), m::Op(), m::Op(&x)))) return x;
        break;
      case HloOpcode::kCompare:
        return SimplifyCompare(instr);
      case HloOpcode::kDot:
        return SimplifyDot(instr);
      default:
        break;
    }
    return kNoChange;
  }

 private:
  absl::StatusOr<HloInstruction*> SimplifyTranspose(HloInstruction* t) {
    absl::Span<const int64_t> perm = t->dimensions();
    if (IsIdentityPermutation(perm)) return t->mutable_operand(0);
    HloInstruction* inner = t->mutable_operand(0);
    if (inner->opcode() == HloOpcode::kBroadcast) return TransposeOfBroadcast(perm, inner);
    if (inner->opcode() != HloOpcode::kTranspose) return SinkTransposeIntoBroadcasts(perm, inner);
    // Result dim i of t is inner's dim perm[i], which is x's dim inner_perm[perm[i]].
    std::vector<int64_t> composed;
    for (int64_t p : perm) composed.push_back(inner->dimensions(p));
    if (IsIdentityPermutation(composed)) return inner->mutable_operand(0);
    return b_.Transpose(inner->mutable_operand(0), composed);
  }

  // transpose(broadcast(y)) is a broadcast of y with its dims permuted, when they stay in
  // y's order (else y itself would need a transpose).
  absl::StatusOr<HloInstruction*> TransposeOfBroadcast(absl::Span<const int64_t> perm, HloInstruction* bcast) {
    std::vector<int64_t> inverse(perm.size());
    for (size_t i = 0; i < perm.size(); ++i) inverse[perm[i]] = static_cast<int64_t>(i);
    std::vector<int64_t> dims;
    for (int64_t d : bcast->dimensions()) dims.push_back(inverse[d]);
    if (!std::is_sorted(dims.begin(), dims.end())) return kNoChange;
    std::vector<int64_t> shape;
    for (int64_t p : perm) shape.push_back(bcast->shape().dimensions(p));
    return b_.Broadcast(bcast->mutable_operand(0), shape, dims);
  }

  // transpose(op(broadcast(a), broadcast(b))) of an elementwise binary op read only by the
  // transpose is op(transpose(broadcast(a)), transpose(broadcast(b))): the transposes fold
  // into the broadcasts (the next sweep), so a fused loop reads its inputs without a
  // transposed index (an outer product's transpose in a scan's gradient, per step).
  absl::StatusOr<HloInstruction*> SinkTransposeIntoBroadcasts(absl::Span<const int64_t> perm, HloInstruction* op) {
    // (compare carries a direction Binary would not keep.)
    if (!op->IsElementwise() || op->operand_count() != 2 || op->user_count() != 1 ||
        op->opcode() == HloOpcode::kCompare) {
      return kNoChange;
    }
    for (const HloInstruction* x : op->operands()) {
      if (x->opcode() != HloOpcode::kBroadcast) return kNoChange;
    }
    HLO_ASSIGN_OR_RETURN(HloInstruction * lhs, b_.Transpose(op->mutable_operand(0), perm));
    HLO_ASSIGN_OR_RETURN(HloInstruction * rhs, b_.Transpose(op->mutable_operand(1), perm));
    return b_.Binary(op->opcode(), lhs, rhs);
  }

  absl::StatusOr<HloInstruction*> SimplifyReshape(HloInstruction* r) {
    HloInstruction* operand = r->mutable_operand(0);
    if (ShapeUtil::SameDimensions(operand->shape(), r->shape())) return operand;
    if (operand->opcode() == HloOpcode::kReshape) {
      HloInstruction* x = operand->mutable_operand(0);
      if (ShapeUtil::SameDimensions(x->shape(), r->shape())) return x;
      return b_.Reshape(x, r->shape().dimensions());
    }
    return kNoChange;
  }

  absl::StatusOr<HloInstruction*> SimplifyBroadcast(HloInstruction* bcast) {
    HloInstruction* operand = bcast->mutable_operand(0);
    if (ShapeUtil::SameDimensions(operand->shape(), bcast->shape()) &&
        IsIdentityPermutation(bcast->dimensions())) {
      return operand;
    }
    if (operand->opcode() == HloOpcode::kConstant && operand->shape().rank() == 0 &&
        ShapeUtil::ElementsIn(bcast->shape()) <= AlgebraicSimplifier::kMaxFoldedBroadcastElements) {
      Literal filled(ShapeUtil::MakeShape(bcast->shape().element_type(),
                                          bcast->shape().dimensions()));
      const absl::Span<const uint8_t> element = operand->literal().untyped_data();
      absl::Span<uint8_t> out = filled.mutable_untyped_data();
      for (size_t at = 0; at + element.size() <= out.size(); at += element.size()) {
        std::copy(element.begin(), element.end(), out.begin() + at);
      }
      return b_.Constant(std::move(filled));
    }
    return kNoChange;
  }

  static bool IsScalarBroadcast(const HloInstruction& v) {
    return v.opcode() == HloOpcode::kBroadcast && ShapeUtil::IsScalar(v.operand(0)->shape());
  }

  // A slice or dynamic-slice of a broadcast scalar: that scalar broadcast to the window.
  absl::StatusOr<HloInstruction*> WindowOfSplat(HloInstruction* slice) {
    return b_.Broadcast(slice->mutable_operand(0)->mutable_operand(0), slice->shape().dimensions(), {});
  }

  absl::StatusOr<HloInstruction*> SimplifySlice(HloInstruction* slice) {
    const Shape& shape = slice->operand(0)->shape();
    for (int64_t d = 0; d < shape.rank(); ++d) {
      if (slice->slice_starts()[d] != 0 || slice->slice_limits()[d] != shape.dimensions(d) ||
          slice->slice_strides()[d] != 1) {
        return kNoChange;
      }
    }
    return slice->mutable_operand(0);
  }

  absl::StatusOr<HloInstruction*> SimplifyPad(HloInstruction* pad) {
    for (const PaddingDim& d : pad->padding_config()) {
      if (d.low != 0 || d.high != 0 || d.interior != 0) return kNoChange;
    }
    return pad->mutable_operand(0);
  }

  absl::StatusOr<HloInstruction*> SimplifyReduce(HloInstruction* reduce) {
    if (reduce->operand_count() != 2 || !InitIsReducerIdentity(reduce)) return kNoChange;
    HloInstruction* operand = reduce->mutable_operand(0);
    for (int64_t d : reduce->dimensions()) {
      if (operand->shape().dimensions(d) != 1) return kNoChange;
    }
    // Each result element is the reduction of exactly one input element with the identity.
    if (ShapeUtil::SameDimensions(operand->shape(), reduce->shape())) return operand;
    return b_.Reshape(operand, reduce->shape().dimensions());
  }

  absl::StatusOr<HloInstruction*> SimplifyCompare(HloInstruction* cmp) {
    if (cmp->operand(0) != cmp->operand(1) || !IsIntegralOrPred(cmp->operand(0)->shape())) {
      return kNoChange;
    }
    bool value = false;
    switch (cmp->comparison_direction()) {
      case ComparisonDirection::kEq:
      case ComparisonDirection::kLe:
      case ComparisonDirection::kGe:
        value = true;
        break;
      default:
        value = false;
    }
    return MakeSplat(b_, cmp->shape(), value ? 1 : 0);
  }

  // A dot whose only contracting dim has size 1 and that has no batch dims is an outer
  // product: each result element is one product, so a multiply of broadcasts is exact.
  absl::StatusOr<HloInstruction*> SimplifyDot(HloInstruction* dot) {
    const DotDimensionNumbers& dnums = dot->dot_dimension_numbers();
    HloInstruction* lhs = dot->mutable_operand(0);
    HloInstruction* rhs = dot->mutable_operand(1);
    if (!dnums.lhs_batch_dims.empty() || dnums.lhs_contracting_dims.size() != 1 ||
        dnums.rhs_contracting_dims.size() != 1 ||
        lhs->shape().dimensions(dnums.lhs_contracting_dims[0]) != 1 ||
        lhs->shape().element_type() != dot->shape().element_type() ||
        rhs->shape().element_type() != dot->shape().element_type()) {
      return kNoChange;
    }
    // Drop the contracting dim; the result is lhs's other dims, then rhs's.
    auto free_dims = [](const HloInstruction* x, int64_t contracting) {
      std::vector<int64_t> dims;
      for (int64_t d = 0; d < x->shape().rank(); ++d) {
        if (d != contracting) dims.push_back(x->shape().dimensions(d));
      }
      return dims;
    };
    const std::vector<int64_t> lhs_dims = free_dims(lhs, dnums.lhs_contracting_dims[0]);
    const std::vector<int64_t> rhs_dims = free_dims(rhs, dnums.rhs_contracting_dims[0]);
    std::vector<int64_t> lhs_map, rhs_map;
    for (size_t i = 0; i < lhs_dims.size(); ++i) lhs_map.push_back(i);
    for (size_t i = 0; i < rhs_dims.size(); ++i) rhs_map.push_back(lhs_dims.size() + i);
    HLO_ASSIGN_OR_RETURN(HloInstruction * lhs_r, b_.Reshape(lhs, lhs_dims));
    HLO_ASSIGN_OR_RETURN(HloInstruction * rhs_r, b_.Reshape(rhs, rhs_dims));
    HLO_ASSIGN_OR_RETURN(HloInstruction * lhs_b,
                         b_.Broadcast(lhs_r, dot->shape().dimensions(), lhs_map));
    HLO_ASSIGN_OR_RETURN(HloInstruction * rhs_b,
                         b_.Broadcast(rhs_r, dot->shape().dimensions(), rhs_map));
    return b_.Multiply(lhs_b, rhs_b);
  }

  HloBuilder b_;
};

}  // namespace

absl::StatusOr<bool> AlgebraicSimplifier::RunOnComputation(HloComputation* computation) {
  if (!AnyInstruction(*computation, MayRewrite)) return false;  // most computations of a big program
  Simplifier simplifier(computation);
  bool changed = false;
  // Post order: operands are simplified before their users look at them. A replacement
  // removes only the old instruction and operands it leaves dead, which all come earlier
  // in the order, so the remaining entries stay valid.
  for (HloInstruction* instr : computation->MakeInstructionPostOrder()) {
    // Dead code is DCE's business; rewriting it would only churn.
    if (instr->user_count() == 0 && !instr->IsRoot()) continue;
    HLO_ASSIGN_OR_RETURN(HloInstruction * replacement, simplifier.Simplify(instr));
    if (replacement == kNoChange || replacement == instr) continue;
    HLO_RETURN_IF_ERROR(computation->ReplaceInstruction(instr, replacement));
    changed = true;
  }
  return changed;
}

absl::StatusOr<bool> AlgebraicSimplifier::Run(HloModule* module) {
  bool changed = false;
  reached_fixed_point_ = false;
  // Each sweep can expose new patterns (a folded operand makes its user foldable); sweep
  // to a fixed point, bounded in case rewrites ever ping-pong.
  constexpr int kMaxSweeps = 32;
  for (int sweep = 0; sweep < kMaxSweeps; ++sweep) {
    bool sweep_changed = false;
    for (HloComputation* computation : module->MakeComputationPostOrder()) {
      HLO_ASSIGN_OR_RETURN(bool c_changed, RunOnComputation(computation));
      sweep_changed |= c_changed;
    }
    changed |= sweep_changed;
    if (!sweep_changed) {
      reached_fixed_point_ = true;  // the last sweep found nothing to do
      break;
    }
  }
  return changed;
}

}  // namespace jx::hlo
