#include "jx/compiler/passes/while_loop_outer_product_to_dot.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <optional>
#include <vector>

#include "jx/compiler/hlo/hlo_builder.h"
#include "jx/compiler/hlo/hlo_module.h"
#include "jx/compiler/hlo/literal.h"
#include "jx/compiler/hlo/pattern_matcher.h"
#include "jx/compiler/hlo/status_macros.h"
#include "jx/compiler/passes/while_loop_utils.h"

namespace jx::hlo {
namespace {

namespace m = ::jx::hlo::match;

// The value of an integer scalar constant.
std::optional<int64_t> IntegerConstant(const HloInstruction* v) {
  if (v->opcode() != HloOpcode::kConstant || !ShapeUtil::IsScalar(v->shape()) ||
      !IsIntegralType(v->shape().element_type())) {
    return std::nullopt;
  }
  return v->literal().GetAsInt64(0);
}

// The loop's trip counter: state element `index` starts at `start`, the body adds 1 to it and
// the condition is counter < limit (limit a constant), so trip t sees start + t, t in [0, trips).
struct Counter {
  int64_t index = 0;
  int64_t start = 0;
  int64_t trips = 0;
};

std::optional<Counter> UnitStepCounter(const HloInstruction& loop) {
  const HloInstruction* init = loop.operand(0);
  const HloInstruction* cond_param = loop.while_condition()->parameter_instruction(0);
  const HloInstruction* body_param = loop.while_body()->parameter_instruction(0);
  HloInstruction* compare = loop.while_condition()->root_instruction();
  HloInstruction* root = loop.while_body()->root_instruction();
  if (init->opcode() != HloOpcode::kTuple || root->opcode() != HloOpcode::kTuple ||
      compare->opcode() != HloOpcode::kCompare) {
    return std::nullopt;
  }
  // counter < limit, or limit > counter.
  const ComparisonDirection dir = compare->comparison_direction();
  const HloInstruction* counter = nullptr;
  const HloInstruction* limit = nullptr;
  if (dir == ComparisonDirection::kLt) {
    counter = compare->operand(0), limit = compare->operand(1);
  } else if (dir == ComparisonDirection::kGt) {
    counter = compare->operand(1), limit = compare->operand(0);
  } else {
    return std::nullopt;
  }
  const std::optional<int64_t> bound = IntegerConstant(limit);
  if (!bound || counter->opcode() != HloOpcode::kGetTupleElement || counter->operand(0) != cond_param) {
    return std::nullopt;
  }
  const int64_t k = counter->tuple_index();
  if (k >= init->operand_count() || k >= root->operand_count()) return std::nullopt;
  const std::optional<int64_t> start = IntegerConstant(init->operand(k));
  HloInstruction* read = nullptr;
  if (!start || !Match(root->mutable_operand(k), m::AddAnyOrder(m::Op(&read), m::ConstantScalar(1))) ||
      read->opcode() != HloOpcode::kGetTupleElement || read->operand(0) != body_param || read->tuple_index() != k) {
    return std::nullopt;
  }
  return Counter{.index = k, .start = *start, .trips = std::max<int64_t>(0, *bound - *start)};
}

// acc' = acc + product, product the outer product of two factors: product element p is
// factors[0][p at dims[0]] * factors[1][p at dims[1]].
struct Accumulation {
  int64_t index = 0;  // the accumulator's state element
  HloInstruction* add = nullptr;
  HloInstruction* product = nullptr;
  std::array<HloInstruction*, 2> factors = {};
  std::array<std::vector<int64_t>, 2> dims;  // each factor's dimensions in the product
  // The product's type and metadata, kept for the dot after the loop (the body's product is
  // gone by then).
  PrimitiveType type = PRIMITIVE_TYPE_INVALID;
  OpMetadata metadata;
};

// The two factors of an outer product and where their dimensions go; false if `product` is not
// one (or its factors are not smaller than it, when stacking them would not pay).
bool MatchOuterProduct(HloInstruction* product, Accumulation& acc) {
  const int64_t rank = product->shape().rank();
  if (product->opcode() == HloOpcode::kMultiply) {
    for (int i = 0; i < 2; ++i) {
      const HloInstruction* b = product->operand(i);
      if (b->opcode() != HloOpcode::kBroadcast) return false;
      acc.factors[i] = b->mutable_operand(0);
      acc.dims[i] = b->dimensions();
    }
  } else if (product->opcode() == HloOpcode::kDot) {
    const DotDimensionNumbers& dn = product->dot_dimension_numbers();
    if (!dn.lhs_contracting_dims.empty() || !dn.lhs_batch_dims.empty()) return false;
    const int64_t lhs_rank = product->operand(0)->shape().rank();
    for (int i = 0; i < 2; ++i) {
      acc.factors[i] = product->mutable_operand(i);
      acc.dims[i].resize(static_cast<size_t>(acc.factors[i]->shape().rank()));
      for (size_t d = 0; d < acc.dims[i].size(); ++d) acc.dims[i][d] = static_cast<int64_t>(d) + (i == 0 ? 0 : lhs_rank);
    }
  } else {
    return false;
  }
  // The factors' dimensions split the product's: each product dimension comes from one factor.
  std::vector<int> from(static_cast<size_t>(rank), 0);
  for (const std::vector<int64_t>& dims : acc.dims) {
    if (dims.empty()) return false;  // a scaling by a scalar, not an outer product
    for (int64_t d : dims) ++from[static_cast<size_t>(d)];
  }
  if (std::any_of(from.begin(), from.end(), [](int n) { return n != 1; })) return false;
  return ShapeUtil::ElementsIn(acc.factors[0]->shape()) + ShapeUtil::ElementsIn(acc.factors[1]->shape()) <
         ShapeUtil::ElementsIn(product->shape());
}

std::optional<Accumulation> MatchAccumulation(const HloInstruction& loop, int64_t index,
                                              const std::vector<HloInstruction*>& body_reads, bool cond_reads) {
  // The accumulator is read once in the body, by the add, and never by the condition.
  if (cond_reads || body_reads.size() != 1) return std::nullopt;
  const HloInstruction* root = loop.while_body()->root_instruction();
  HloInstruction* read = body_reads[0];
  HloInstruction* next = root->mutable_operand(index);
  if (next->opcode() != HloOpcode::kAdd || next->user_count() != 1 || read->user_count() != 1 ||
      read->users()[0] != next || std::count(root->operands().begin(), root->operands().end(), next) != 1) {
    return std::nullopt;
  }
  Accumulation acc;
  acc.index = index;
  acc.add = next;
  acc.product = next->mutable_operand(next->operand(0) == read ? 1 : 0);
  if (acc.product == read || acc.product->user_count() != 1 ||
      acc.product->shape().element_type() != next->shape().element_type() || !MatchOuterProduct(acc.product, acc)) {
    return std::nullopt;
  }
  acc.type = acc.product->shape().element_type();
  acc.metadata = acc.product->metadata();
  return acc;
}

// The stacked shape of a factor: [trips] + its shape.
Shape StackShape(const HloInstruction* factor, int64_t trips) {
  std::vector<int64_t> dims = {trips};
  const std::vector<int64_t>& d = factor->shape().dimensions();
  dims.insert(dims.end(), d.begin(), d.end());
  return ShapeUtil::MakeShape(factor->shape().element_type(), dims);
}

// In the body: the accumulators pass through unchanged and the factors are written into their
// stacks (state elements first_stack, first_stack + 1, ... in pairs) at the trip index.
absl::Status StackFactorsInBody(HloInstruction* loop, const Counter& counter, const std::vector<Accumulation>& accs,
                                int64_t first_stack) {
  HloComputation* body = loop->while_body();
  HloInstruction* param = body->parameter_instruction(0);
  HloInstruction* old_root = body->root_instruction();
  HloBuilder b(body);
  b.set_metadata(old_root->metadata());
  std::vector<HloInstruction*> elements(old_root->operands().begin(), old_root->operands().end());
  HLO_ASSIGN_OR_RETURN(HloInstruction * trip, b.GetTupleElement(param, counter.index));
  const PrimitiveType index_type = trip->shape().element_type();
  if (counter.start != 0) {
    HLO_ASSIGN_OR_RETURN(HloInstruction * start, b.Constant(Literal::CreateScalar(index_type, counter.start)));
    HLO_ASSIGN_OR_RETURN(trip, b.Subtract(trip, start));
  }
  HLO_ASSIGN_OR_RETURN(HloInstruction * zero, b.Constant(Literal::CreateScalar(index_type, 0)));
  int64_t stack = first_stack;
  for (const Accumulation& acc : accs) {
    elements[static_cast<size_t>(acc.index)] = acc.add->mutable_operand(acc.add->operand(0) == acc.product ? 1 : 0);
    for (HloInstruction* factor : acc.factors) {
      HLO_ASSIGN_OR_RETURN(HloInstruction * stacked, b.GetTupleElement(param, stack++));
      std::vector<int64_t> row = stacked->shape().dimensions();
      row[0] = 1;
      HLO_ASSIGN_OR_RETURN(HloInstruction * update, b.Reshape(factor, row));
      std::vector<HloInstruction*> starts(row.size(), zero);
      starts[0] = trip;
      HLO_ASSIGN_OR_RETURN(HloInstruction * written, b.DynamicUpdateSlice(stacked, update, starts));
      elements.push_back(written);
    }
  }
  HLO_ASSIGN_OR_RETURN(HloInstruction * root, b.Tuple(elements));
  body->set_root_instruction(root);
  HLO_RETURN_IF_ERROR(body->RemoveInstruction(old_root));
  for (const Accumulation& acc : accs) HLO_RETURN_IF_ERROR(body->RemoveInstructionAndUnusedOperands(acc.add));
  return absl::OkStatus();
}

absl::StatusOr<bool> RewriteLoop(HloInstruction* loop, int64_t max_stack_bytes) {
  HloComputation* parent = loop->parent();
  HloComputation* body = loop->while_body();
  if (!loop->shape().IsTuple() || loop->IsRoot()) return false;
  for (const HloInstruction* user : loop->users()) {
    if (user->opcode() != HloOpcode::kGetTupleElement) return false;
  }
  const std::optional<Counter> counter = UnitStepCounter(*loop);
  if (!counter || counter->trips == 0) return false;
  const int64_t size = loop->shape().tuple_shapes_size();
  const auto body_reads = TupleReads(*body, size);
  const auto cond_reads = TupleReads(*loop->while_condition(), size);
  if (!body_reads || !cond_reads) return false;
  std::vector<Accumulation> accs;
  int64_t stack_bytes = 0;
  for (int64_t i = 0; i < size; ++i) {
    const auto k = static_cast<size_t>(i);
    std::optional<Accumulation> acc = MatchAccumulation(*loop, i, (*body_reads)[k], !(*cond_reads)[k].empty());
    if (!acc) continue;
    const int64_t bytes = ShapeUtil::ByteSizeOf(StackShape(acc->factors[0], counter->trips)) +
                          ShapeUtil::ByteSizeOf(StackShape(acc->factors[1], counter->trips));
    if (stack_bytes + bytes > max_stack_bytes) continue;
    stack_bytes += bytes;
    accs.push_back(*std::move(acc));
  }
  if (accs.empty()) return false;

  // The state grows by two stacks per accumulation.
  std::vector<Shape> shapes = loop->shape().tuple_shapes();
  for (const Accumulation& acc : accs) {
    for (const HloInstruction* factor : acc.factors) shapes.push_back(StackShape(factor, counter->trips));
  }
  const Shape state = ShapeUtil::MakeTupleShape(shapes);
  *body->parameter_instruction(0)->mutable_shape() = state;
  *loop->while_condition()->parameter_instruction(0)->mutable_shape() = state;
  *loop->mutable_shape() = state;
  HLO_RETURN_IF_ERROR(StackFactorsInBody(loop, *counter, accs, size));

  // Into the loop: the stacks start at zero.
  HloBuilder pb(parent);
  pb.set_metadata(loop->metadata());
  HloInstruction* init = loop->mutable_operand(0);
  std::vector<HloInstruction*> elements(init->operands().begin(), init->operands().end());
  for (int64_t i = size; i < state.tuple_shapes_size(); ++i) {
    HLO_ASSIGN_OR_RETURN(HloInstruction * zeros, Zeros(pb, state.tuple_shapes(i)));
    elements.push_back(zeros);
  }
  HLO_ASSIGN_OR_RETURN(HloInstruction * new_init, pb.Tuple(elements));
  loop->DetachFromOperands();  // the state's shape changed: ReplaceOperandWith would refuse it
  loop->AppendOperand(new_init);

  // After the loop: the accumulator's reads become init + dot(stack_a, stack_b) over the trips.
  const std::vector<HloInstruction*> users = loop->users();
  int64_t stack = size;
  for (const Accumulation& acc : accs) {
    const int64_t a_index = stack, b_index = stack + 1;
    stack += 2;
    std::vector<HloInstruction*> reads;
    for (HloInstruction* user : users) {
      if (user->tuple_index() == acc.index) reads.push_back(user);
    }
    if (reads.empty()) continue;
    pb.set_metadata(acc.metadata);
    HLO_ASSIGN_OR_RETURN(HloInstruction * as, pb.GetTupleElement(loop, a_index));
    HLO_ASSIGN_OR_RETURN(HloInstruction * bs, pb.GetTupleElement(loop, b_index));
    DotDimensionNumbers dn;
    dn.lhs_contracting_dims = {0};
    dn.rhs_contracting_dims = {0};
    HLO_ASSIGN_OR_RETURN(HloInstruction * sum, pb.Dot(as, bs, dn, acc.type));
    // The dot's dimensions are the first factor's then the second's; the product's interleave.
    std::vector<int64_t> permutation(acc.dims[0].size() + acc.dims[1].size());
    int64_t at = 0;
    for (const std::vector<int64_t>& dims : acc.dims) {
      for (int64_t d : dims) permutation[static_cast<size_t>(d)] = at++;
    }
    if (!std::is_sorted(permutation.begin(), permutation.end())) {
      HLO_ASSIGN_OR_RETURN(sum, pb.Transpose(sum, permutation));
    }
    HloInstruction* initial = elements[static_cast<size_t>(acc.index)];
    if (!Match(initial, m::ConstantSplat(0))) {
      HLO_ASSIGN_OR_RETURN(sum, pb.Add(initial, sum));
    }
    for (HloInstruction* read : reads) {
      HLO_RETURN_IF_ERROR(read->ReplaceAllUsesWith(sum));
      HLO_RETURN_IF_ERROR(parent->RemoveInstruction(read));
    }
  }
  if (init->user_count() == 0 && !init->IsRoot()) HLO_RETURN_IF_ERROR(parent->RemoveInstruction(init));
  return true;
}

}  // namespace

absl::StatusOr<bool> WhileLoopOuterProductToDot::Run(HloModule* module) {
  const auto callers = CallerCounts(*module);
  bool changed = false;
  for (HloComputation* computation : module->MakeComputationPostOrder()) {
    if (computation->IsFusionComputation()) continue;
    for (HloInstruction* loop : LoopsWithOwnComputations(*computation, callers)) {
      HLO_ASSIGN_OR_RETURN(bool rewritten, RewriteLoop(loop, max_stack_bytes_));
      changed |= rewritten;
    }
  }
  return changed;
}

}  // namespace jx::hlo
