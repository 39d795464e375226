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
      acc.dims[i] = SpanToVector(b->dimensions());
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
  // Sums a GEMM can take in another order: floats (reassociated) and integers (exact, wrapping);
  // not pred (whose add and multiply are or and and).
  const PrimitiveType type = next->shape().element_type();
  if (!IsIntegralType(type) && !IsFloatingPointType(type)) return std::nullopt;
  if (acc.product == read || acc.product->user_count() != 1 ||
      acc.product->shape().element_type() != next->shape().element_type() || !MatchOuterProduct(acc.product, acc)) {
    return std::nullopt;
  }
  acc.type = acc.product->shape().element_type();
  // Simplification may have left the product without metadata; the add has the source op's.
  acc.metadata = acc.product->metadata().empty() ? next->metadata() : acc.product->metadata();
  return acc;
}

// The stacked shape of a factor: [trips] + its shape.
Shape StackShape(const HloInstruction* factor, int64_t trips) {
  std::vector<int64_t> dims = {trips};
  absl::Span<const int64_t> d = factor->shape().dimensions();
  dims.insert(dims.end(), d.begin(), d.end());
  return ShapeUtil::MakeShape(factor->shape().element_type(), dims);
}

// A factor that is one whole row of a stack the loop carries unchanged, at an index taking each
// row once: [reshape of] dynamic-slice(stack, index, 0, ..., 0). After the loop the stack holds
// the factor's rows as they are: nothing needs stacking.
struct CarriedRow {
  int64_t source = 0;  // the stack's state element
  HloInstruction* index = nullptr;
};

std::optional<CarriedRow> RowOfCarriedStack(const HloInstruction* factor, const HloInstruction& loop, const Counter& c) {
  const HloInstruction* slice = factor->opcode() == HloOpcode::kReshape ? factor->operand(0) : factor;
  if (slice->opcode() != HloOpcode::kDynamicSlice) return std::nullopt;
  const HloInstruction* stack = slice->operand(0);
  const HloComputation* body = loop.while_body();
  if (stack->opcode() != HloOpcode::kGetTupleElement || stack->operand(0) != body->parameter_instruction(0)) {
    return std::nullopt;
  }
  const int64_t source = stack->tuple_index();
  const HloInstruction* next = body->root_instruction()->operand(source);
  if (next->opcode() != HloOpcode::kGetTupleElement || next->operand(0) != stack->operand(0) ||
      next->tuple_index() != source) {
    return std::nullopt;  // the loop writes it
  }
  absl::Span<const int64_t> dims = stack->shape().dimensions();
  const std::vector<int64_t>& sizes = slice->dynamic_slice_sizes();
  if (dims.empty() || dims[0] != c.trips || sizes[0] != 1) return std::nullopt;
  for (size_t d = 1; d < dims.size(); ++d) {
    if (sizes[d] != dims[d] || IntegerConstant(slice->operand(static_cast<int64_t>(d) + 1)) != 0) return std::nullopt;
  }
  if (!TakesEachRowOnce(slice->operand(1), loop, c)) return std::nullopt;
  return CarriedRow{.source = source, .index = slice->mutable_operand(1)};
}

// How one accumulation is rewritten: each factor's rows over the trips come from a stack the
// loop already carries (source >= 0) or from a new one written at `row` (slot: its state
// element; the first new stack takes the accumulator's element, which the loop no longer needs).
struct Rewrite {
  Accumulation acc;
  std::array<int64_t, 2> source = {-1, -1};
  std::array<int64_t, 2> slot = {-1, -1};
  HloInstruction* row = nullptr;  // null: the trip index
  std::array<Shape, 2> stacks;    // [trips] + each factor's shape (the factors go with the body's rewrite)
};

Rewrite PlanRewrite(const Accumulation& acc, const HloInstruction& loop, const Counter& c) {
  Rewrite r;
  r.acc = acc;
  r.stacks = {StackShape(acc.factors[0], c.trips), StackShape(acc.factors[1], c.trips)};
  const std::optional<CarriedRow> rows[2] = {RowOfCarriedStack(acc.factors[0], loop, c),
                                             RowOfCarriedStack(acc.factors[1], loop, c)};
  // Both factors' rows must pair up trip by trip: one index for every stack.
  for (int f = 0; f < 2 && r.row == nullptr; ++f) {
    if (!rows[f]) continue;
    r.row = rows[f]->index;
    r.source[f] = rows[f]->source;
    const int g = 1 - f;
    if (rows[g] && rows[g]->index == r.row) r.source[g] = rows[g]->source;
  }
  return r;
}

int64_t NewStackBytes(const Rewrite& r) {
  int64_t bytes = 0;
  for (int f = 0; f < 2; ++f) {
    if (r.source[f] < 0) bytes += ShapeUtil::ByteSizeOf(r.stacks[f]);
  }
  return bytes;
}

// In the body: each factor without a carried stack is written into its new stack at its row;
// the accumulations are removed.
absl::Status StackFactorsInBody(HloInstruction* loop, const Counter& counter, const std::vector<Rewrite>& rewrites) {
  HloComputation* body = loop->while_body();
  HloInstruction* param = body->parameter_instruction(0);
  HloInstruction* old_root = body->root_instruction();
  HloBuilder b(body);
  b.set_metadata(old_root->metadata());
  std::vector<HloInstruction*> elements(old_root->operands().begin(), old_root->operands().end());
  elements.resize(static_cast<size_t>(loop->shape().tuple_shapes_size()), nullptr);
  HLO_ASSIGN_OR_RETURN(HloInstruction * trip, b.GetTupleElement(param, counter.index));
  const PrimitiveType index_type = trip->shape().element_type();
  if (counter.start != 0) {
    HLO_ASSIGN_OR_RETURN(HloInstruction * start, b.Constant(Literal::CreateScalar(index_type, counter.start)));
    HLO_ASSIGN_OR_RETURN(trip, b.Subtract(trip, start));
  }
  HLO_ASSIGN_OR_RETURN(HloInstruction * zero, b.Constant(Literal::CreateScalar(index_type, 0)));
  for (const Rewrite& r : rewrites) {
    // Until a stack takes it, the accumulator's element passes through.
    HloInstruction* read = r.acc.add->mutable_operand(r.acc.add->operand(0) == r.acc.product ? 1 : 0);
    elements[static_cast<size_t>(r.acc.index)] = read;
    for (int f = 0; f < 2; ++f) {
      if (r.source[f] >= 0) continue;
      HLO_ASSIGN_OR_RETURN(HloInstruction * stacked, b.GetTupleElement(param, r.slot[f]));
      std::vector<int64_t> row = SpanToVector(stacked->shape().dimensions());
      row[0] = 1;
      HLO_ASSIGN_OR_RETURN(HloInstruction * update, b.Reshape(r.acc.factors[f], row));
      std::vector<HloInstruction*> starts(row.size(), zero);
      starts[0] = r.row != nullptr ? r.row : trip;
      HLO_ASSIGN_OR_RETURN(elements[static_cast<size_t>(r.slot[f])], b.DynamicUpdateSlice(stacked, update, starts));
    }
  }
  HLO_ASSIGN_OR_RETURN(HloInstruction * root, b.Tuple(elements));
  body->set_root_instruction(root);
  HLO_RETURN_IF_ERROR(body->RemoveInstruction(old_root));
  for (const Rewrite& r : rewrites) HLO_RETURN_IF_ERROR(body->RemoveInstructionAndUnusedOperands(r.acc.add));
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
  std::vector<Rewrite> rewrites;
  int64_t stack_bytes = 0;
  for (int64_t i = 0; i < size; ++i) {
    const auto k = static_cast<size_t>(i);
    std::optional<Accumulation> acc = MatchAccumulation(*loop, i, (*body_reads)[k], !(*cond_reads)[k].empty());
    if (!acc) continue;
    Rewrite r = PlanRewrite(*acc, *loop, *counter);
    const int64_t bytes = NewStackBytes(r);
    if (stack_bytes + bytes > max_stack_bytes) continue;
    stack_bytes += bytes;
    rewrites.push_back(std::move(r));
  }
  if (rewrites.empty()) return false;

  // The new stacks: the first of an accumulation replaces its accumulator, the others append.
  std::vector<Shape> shapes = loop->shape().tuple_shapes();
  for (Rewrite& r : rewrites) {
    bool accumulator_free = true;
    for (int f = 0; f < 2; ++f) {
      if (r.source[f] >= 0) continue;
      const Shape& stack = r.stacks[f];
      if (accumulator_free) {
        r.slot[f] = r.acc.index;
        shapes[static_cast<size_t>(r.acc.index)] = stack;
        accumulator_free = false;
      } else {
        r.slot[f] = static_cast<int64_t>(shapes.size());
        shapes.push_back(stack);
      }
    }
  }
  HloInstruction* init = loop->mutable_operand(0);
  std::vector<HloInstruction*> initial(init->operands().begin(), init->operands().end());
  const InstructionVector users = loop->users();

  const Shape state = ShapeUtil::MakeTupleShape(shapes);
  *body->parameter_instruction(0)->mutable_shape() = state;
  *loop->while_condition()->parameter_instruction(0)->mutable_shape() = state;
  *loop->mutable_shape() = state;
  HLO_RETURN_IF_ERROR(StackFactorsInBody(loop, *counter, rewrites));

  // Into the loop: the new stacks start at zero.
  HloBuilder pb(parent);
  pb.set_metadata(loop->metadata());
  std::vector<HloInstruction*> elements = initial;
  elements.resize(shapes.size(), nullptr);
  for (const Rewrite& r : rewrites) {
    for (int64_t slot : r.slot) {
      if (slot < 0) continue;
      HLO_ASSIGN_OR_RETURN(elements[static_cast<size_t>(slot)], Zeros(pb, state.tuple_shapes(slot)));
    }
  }
  HLO_ASSIGN_OR_RETURN(HloInstruction * new_init, pb.Tuple(elements));
  loop->DetachFromOperands();  // the state's shape changed: ReplaceOperandWith would refuse it
  loop->AppendOperand(new_init);

  // After the loop: the accumulator's reads become init + dot(rows of a, rows of b) over the trips.
  for (const Rewrite& r : rewrites) {
    std::vector<HloInstruction*> reads;
    for (HloInstruction* user : users) {
      if (user->tuple_index() == r.acc.index) reads.push_back(user);
    }
    if (reads.empty()) continue;
    pb.set_metadata(r.acc.metadata);
    std::array<HloInstruction*, 2> rows = {};
    for (int f = 0; f < 2; ++f) {
      const int64_t element = r.source[f] >= 0 ? r.source[f] : r.slot[f];
      HLO_ASSIGN_OR_RETURN(rows[f], pb.GetTupleElement(loop, element));
      if (rows[f]->shape().dimensions() != r.stacks[f].dimensions()) {
        HLO_ASSIGN_OR_RETURN(rows[f], pb.Reshape(rows[f], r.stacks[f].dimensions()));
      }
    }
    DotDimensionNumbers dn;
    dn.lhs_contracting_dims = {0};
    dn.rhs_contracting_dims = {0};
    HLO_ASSIGN_OR_RETURN(HloInstruction * sum, pb.Dot(rows[0], rows[1], dn, r.acc.type));
    // The dot's dimensions are the first factor's then the second's; the product's interleave.
    std::vector<int64_t> permutation(r.acc.dims[0].size() + r.acc.dims[1].size());
    int64_t at = 0;
    for (const std::vector<int64_t>& dims : r.acc.dims) {
      for (int64_t d : dims) permutation[static_cast<size_t>(d)] = at++;
    }
    if (!std::is_sorted(permutation.begin(), permutation.end())) {
      HLO_ASSIGN_OR_RETURN(sum, pb.Transpose(sum, permutation));
    }
    HloInstruction* start = initial[static_cast<size_t>(r.acc.index)];
    if (!Match(start, m::ConstantSplat(0))) {
      HLO_ASSIGN_OR_RETURN(sum, pb.Add(start, sum));
    }
    for (HloInstruction* read : reads) {
      HLO_RETURN_IF_ERROR(read->ReplaceAllUsesWith(sum));
      HLO_RETURN_IF_ERROR(parent->RemoveInstruction(read));
    }
  }
  if (init->user_count() == 0 && !init->IsRoot()) HLO_RETURN_IF_ERROR(parent->RemoveInstructionAndUnusedOperands(init));
  return true;
}

}  // namespace

absl::StatusOr<bool> WhileLoopOuterProductToDot::Run(HloModule* module) {
  if (!MayHoldWhileLoops(*module)) return false;
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
