#include "jx/compiler/passes/while_loop_all_reduce_code_motion.h"

#include <algorithm>
#include <cstdint>
#include <memory>
#include <optional>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_format.h"
#include "jx/compiler/hlo/hlo_builder.h"
#include "jx/compiler/hlo/hlo_module.h"
#include "jx/compiler/hlo/pattern_matcher.h"
#include "jx/compiler/hlo/status_macros.h"
#include "jx/compiler/passes/all_reduce_utils.h"
#include "jx/compiler/passes/hlo_scheduling.h"
#include "jx/compiler/passes/while_loop_utils.h"

namespace jx::hlo {
namespace {

namespace m = ::jx::hlo::match;

// How many linear ops (convert, scaling, ...) may sit between a collective and its accumulation.
constexpr int kMaxLinearOps = 8;

// One accumulator a loop carries whose collective may move after the loop:
// body: state'[index] = state[index] + linear(collective(g)), or through a slice:
// dynamic-update-slice(state[index], dynamic-slice(state[index], idx) + ..., idx).
struct Accumulation {
  int64_t index = 0;
  HloInstruction* collective = nullptr;  // the all-reduce or reduce-scatter
  HloInstruction* reader = nullptr;      // the collective's one user (the add, or a linear op)
  int64_t reader_operand = 0;            // where reader reads it
  HloInstruction* acc = nullptr;         // the body's read of the accumulator
  HloInstruction* next = nullptr;        // the accumulator's next value: the add, or the update
  HloInstruction* add = nullptr;
  HloInstruction* slice = nullptr;       // the add's slice of the accumulator (slice accumulations)
  std::vector<HloInstruction*> linear;   // the ops from the add down to the collective
};

// Whether v is the same value on every partition and every trip: a constant, possibly
// broadcast or reshaped.
bool IsConstantValue(const HloInstruction* v) {
  while (v->opcode() == HloOpcode::kBroadcast || v->opcode() == HloOpcode::kReshape) v = v->operand(0);
  return v->opcode() == HloOpcode::kConstant;
}

// The scalar constant v splats (a broadcast of it, through reshapes of a scalar), or null.
const HloInstruction* SplatScalar(const HloInstruction* v) {
  while (v->opcode() == HloOpcode::kBroadcast || v->opcode() == HloOpcode::kReshape) v = v->operand(0);
  return v->opcode() == HloOpcode::kConstant && ShapeUtil::IsScalar(v->shape()) ? v : nullptr;
}

// The operand through which v is linear (sum over partitions commutes with v): conversions to
// a floating type, negation, data movement, scaling by a constant. Null if v is not such an op.
HloInstruction* LinearOperand(HloInstruction* v) {
  const bool floating = v->shape().IsArray() && IsFloatingPointType(v->shape().element_type());
  switch (v->opcode()) {
    case HloOpcode::kConvert:  // to an integer type it would round each partial sum
      return floating ? v->mutable_operand(0) : nullptr;
    case HloOpcode::kNegate: case HloOpcode::kCopy: case HloOpcode::kReshape: case HloOpcode::kBitcast:
    case HloOpcode::kTranspose:
      return v->mutable_operand(0);
    case HloOpcode::kMultiply:
      if (IsConstantValue(v->operand(1))) return v->mutable_operand(0);
      return IsConstantValue(v->operand(0)) ? v->mutable_operand(1) : nullptr;
    case HloOpcode::kDivide:  // pmean's psum(x) / n; integer division is not linear
      return floating && IsConstantValue(v->operand(1)) ? v->mutable_operand(0) : nullptr;
    default:
      return nullptr;
  }
}

int64_t OperandIndex(const HloInstruction* user, const HloInstruction* operand) {
  return std::find(user->operands().begin(), user->operands().end(), operand) - user->operands().begin();
}

// For acc' = dynamic-update-slice(acc, dynamic-slice(acc, idx) + reduced, idx): the add, and
// the slice of the accumulator it reads; nullopt when `next` is not that.
std::optional<std::pair<HloInstruction*, HloInstruction*>> MatchSliceAccumulation(HloInstruction* next,
                                                                                 const HloInstruction* acc) {
  HloInstruction* update = next->mutable_operand(1);
  if (next->operand(0) != acc || update->opcode() != HloOpcode::kAdd || update->user_count() != 1) {
    return std::nullopt;
  }
  HloInstruction* slice = nullptr;
  for (HloInstruction* operand : update->operands()) {
    if (operand->opcode() == HloOpcode::kDynamicSlice && operand->operand(0) == acc) slice = operand;
  }
  // The slice read is the one written back: the same start indices.
  if (slice == nullptr || slice->user_count() != 1 || slice->operand_count() + 1 != next->operand_count()) {
    return std::nullopt;
  }
  for (int64_t i = 1; i < slice->operand_count(); ++i) {
    if (slice->operand(i) != next->operand(i + 1)) return std::nullopt;
  }
  return std::pair{update, slice};
}

// Whether the pass may move `collective` out of a loop: a sum, all-reduced (always) or
// reduce-scattered (when enabled).
bool IsMovableSum(const HloInstruction& collective, bool reduce_scatter) {
  const bool kind = collective.opcode() == HloOpcode::kAllReduce ||
                    (reduce_scatter && collective.opcode() == HloOpcode::kReduceScatter);
  return kind && CollectiveReductionOp(collective) == HloOpcode::kAdd;
}

bool IsCollectiveSum(const HloInstruction& v) {
  return v.opcode() == HloOpcode::kAllReduce || v.opcode() == HloOpcode::kReduceScatter;
}

std::optional<Accumulation> MatchAccumulation(const HloInstruction& loop, int64_t index,
                                              const std::vector<HloInstruction*>& body_reads, bool cond_reads,
                                              bool reduce_scatter) {
  // The accumulator is read once in the body, by the accumulation, and never by the condition.
  if (cond_reads || body_reads.size() != 1) return std::nullopt;
  const HloInstruction* root = loop.while_body()->root_instruction();
  Accumulation a;
  a.index = index;
  a.acc = body_reads[0];
  HloInstruction* next = root->mutable_operand(index);
  if (next->user_count() != 1 || std::count(root->operands().begin(), root->operands().end(), next) != 1) {
    return std::nullopt;
  }
  a.next = next;
  // acc' = acc + reduced, or a slice of acc updated so.
  a.add = next;
  const HloInstruction* summand = a.acc;  // the add's operand holding the accumulator
  if (next->opcode() == HloOpcode::kDynamicUpdateSlice) {
    const auto slice_accumulation = MatchSliceAccumulation(next, a.acc);
    if (!slice_accumulation || a.acc->user_count() != 2) return std::nullopt;
    std::tie(a.add, a.slice) = *slice_accumulation;
    summand = a.slice;
  } else if (a.acc->user_count() != 1 || a.acc->users()[0] != next) {
    return std::nullopt;
  }
  if (a.add->opcode() != HloOpcode::kAdd || !a.add->shape().IsArray()) return std::nullopt;
  const int64_t r = a.add->operand(0) == summand ? 1 : 0;
  if (a.add->operand(1 - r) != summand || a.add->operand(r) == summand) return std::nullopt;
  // Down from the add to the collective through ops linear in it, each read only there.
  a.reader = a.add;
  a.reader_operand = r;
  for (int depth = 0; !IsCollectiveSum(*a.reader->operand(a.reader_operand)); ++depth) {
    HloInstruction* v = a.reader->mutable_operand(a.reader_operand);
    HloInstruction* below = LinearOperand(v);
    if (depth == kMaxLinearOps || v->user_count() != 1 || below == nullptr) return std::nullopt;
    a.linear.push_back(v);
    a.reader = v;
    a.reader_operand = OperandIndex(v, below);
  }
  a.collective = a.reader->mutable_operand(a.reader_operand);
  if (a.collective->user_count() != 1 || !IsMovableSum(*a.collective, reduce_scatter)) return std::nullopt;
  return a;
}

// ---- reduce-scatters ---------------------------------------------------------------------

Shape Widened(const Shape& shape, int64_t dim, int64_t factor) {
  std::vector<int64_t> dims = SpanToVector(shape.dimensions());
  dims[static_cast<size_t>(dim)] *= factor;
  return Shape(shape.element_type(), std::move(dims));
}

int64_t Product(absl::Span<const int64_t> dims, int64_t end) {
  int64_t n = 1;
  for (int64_t i = 0; i < end; ++i) n *= dims[static_cast<size_t>(i)];
  return n;
}

// The scattered dimension of v's result, given its operand's (dim): where the chips' blocks
// stay whole blocks of one dimension at the full size; nullopt where they do not.
std::optional<int64_t> ScatteredDimThrough(const HloInstruction& v, int64_t dim) {
  switch (v.opcode()) {
    case HloOpcode::kConvert: case HloOpcode::kNegate: case HloOpcode::kCopy:
      return dim;
    case HloOpcode::kMultiply: case HloOpcode::kDivide: {
      // Widened as a broadcast of the same scalar: only splats.
      for (const HloInstruction* operand : v.operands()) {
        if (IsConstantValue(operand) && SplatScalar(operand) == nullptr) return std::nullopt;
      }
      return dim;
    }
    case HloOpcode::kTranspose: {
      absl::Span<const int64_t> perm = v.dimensions();
      const auto it = std::find(perm.begin(), perm.end(), dim);
      return it == perm.end() ? std::nullopt : std::optional<int64_t>(it - perm.begin());
    }
    case HloOpcode::kReshape: {
      // Row-major: a chip's block is a contiguous run of the dimensions from `dim` on, for
      // each index of the ones before; it is a block of result dimension d when the sizes
      // before d multiply to the same.
      absl::Span<const int64_t> in = v.operand(0)->shape().dimensions();
      absl::Span<const int64_t> out = v.shape().dimensions();
      const int64_t before = Product(in, dim);
      for (int64_t d = 0; d < static_cast<int64_t>(out.size()); ++d) {
        if (Product(out, d) == before && out[static_cast<size_t>(d)] > 1) return d;
        if (Product(out, d) > before) break;
      }
      return std::nullopt;
    }
    default:  // a bitcast's meaning depends on layouts
      return std::nullopt;
  }
}

// How a reduce-scatter accumulation widens: N, the scattered dimension after each linear op
// (bottom-up: the one next to the collective first) and of the accumulator, and its full shape.
struct Widening {
  int64_t group_size = 1;
  std::vector<int64_t> linear_dims;  // for a.linear, in a.linear's order (top-down)
  int64_t acc_dim = 0;
  Shape hoisted;
};

std::optional<Widening> PlanWidening(const Accumulation& a) {
  const HloInstruction& rs = *a.collective;
  if (rs.dimensions().size() != 1 || rs.operand_count() != 1) return std::nullopt;
  Widening w;
  int64_t dim = rs.dimensions(0);
  const int64_t block = rs.shape().dimensions(dim);
  if (block == 0) return std::nullopt;
  w.group_size = rs.operand(0)->shape().dimensions(dim) / block;
  w.linear_dims.resize(a.linear.size());
  for (size_t k = a.linear.size(); k-- > 0;) {
    const std::optional<int64_t> through = ScatteredDimThrough(*a.linear[k], dim);
    if (!through) return std::nullopt;
    dim = w.linear_dims[k] = *through;
  }
  w.acc_dim = dim;
  const Shape& acc = a.acc->shape();
  if (a.slice != nullptr) {
    // A slice accumulator widens only where the slice spans the scattered dimension from 0.
    const std::optional<int64_t> start = IntegerConstant(a.next->operand(2 + dim));
    if (a.slice->shape().dimensions(dim) != acc.dimensions(dim) || start != 0) return std::nullopt;
  }
  w.hoisted = Widened(acc, dim, w.group_size);
  return w;
}

// linear's op v again, at the full size, on `x` (its widened operand); `dim`: v's scattered
// result dimension.
absl::StatusOr<HloInstruction*> WidenedLinearOp(HloBuilder& b, const HloInstruction& v, HloInstruction* x,
                                                int64_t x_operand, int64_t dim, int64_t n) {
  const Shape full = Widened(v.shape(), dim, n);
  switch (v.opcode()) {
    case HloOpcode::kConvert:
      return b.Convert(x, v.shape().element_type());
    case HloOpcode::kNegate: case HloOpcode::kCopy:
      return b.Unary(v.opcode(), x);
    case HloOpcode::kTranspose:
      return b.Transpose(x, v.dimensions());
    case HloOpcode::kReshape:
      return b.Reshape(x, full.dimensions());
    case HloOpcode::kMultiply: case HloOpcode::kDivide: {
      const HloInstruction* scalar = SplatScalar(v.operand(1 - x_operand));
      HLO_ASSIGN_OR_RETURN(HloInstruction * c, b.Constant(scalar->literal()));
      HLO_ASSIGN_OR_RETURN(HloInstruction * splat, b.Broadcast(c, full.dimensions(), {}));
      return x_operand == 0 ? b.Binary(v.opcode(), x, splat) : b.Binary(v.opcode(), splat, x);
    }
    default:
      return absl::InternalError(absl::StrFormat("while-loop-all-reduce-code-motion: cannot widen %s", v.name()));
  }
}

// The body's new next value of a widened accumulator: acc + f'(g) at the full size (or its
// slice updated so). a.acc already has the full shape.
absl::StatusOr<HloInstruction*> WidenInBody(HloComputation* body, const Accumulation& a, const Widening& w) {
  HloBuilder b(body);
  b.set_metadata(a.collective->metadata());
  // Bottom-up: each op reads the value below it at the operand it read the narrow one.
  HloInstruction* x = a.collective->mutable_operand(0);
  for (size_t k = a.linear.size(); k-- > 0;) {
    const HloInstruction& v = *a.linear[k];
    const int64_t operand = k + 1 == a.linear.size() ? a.reader_operand : OperandIndex(&v, a.linear[k + 1]);
    HLO_ASSIGN_OR_RETURN(x, WidenedLinearOp(b, v, x, operand, w.linear_dims[k], w.group_size));
  }
  const int64_t x_operand = a.linear.empty() ? a.reader_operand : OperandIndex(a.add, a.linear.front());
  HloInstruction* summand = a.acc;
  std::vector<HloInstruction*> starts;
  if (a.slice != nullptr) {
    for (int64_t i = 1; i < a.slice->operand_count(); ++i) starts.push_back(a.slice->mutable_operand(i));
    const Shape sizes = Widened(a.slice->shape(), w.acc_dim, w.group_size);
    HLO_ASSIGN_OR_RETURN(summand, b.DynamicSlice(a.acc, starts, sizes.dimensions()));
  }
  HLO_ASSIGN_OR_RETURN(HloInstruction * sum, x_operand == 0 ? b.Add(x, summand) : b.Add(summand, x));
  if (a.slice == nullptr) return sum;
  return b.DynamicUpdateSlice(a.acc, sum, starts);
}

// ---- the rewrite -------------------------------------------------------------------------

// A loop's accumulations the pass may move: all-reduces, and reduce-scatters (when enabled)
// with how they widen. nullopt: the loop is not of a form the pass rewrites.
struct Move {
  Accumulation a;
  std::optional<Widening> widening;  // reduce-scatters
};

std::optional<std::vector<Move>> MovableAccumulations(const HloInstruction& loop, bool reduce_scatter) {
  const HloComputation* body = loop.while_body();
  if (!loop.shape().IsTuple() || loop.IsRoot() || body->root_instruction()->opcode() != HloOpcode::kTuple) {
    return std::nullopt;
  }
  for (const HloInstruction* user : loop.users()) {
    if (user->opcode() != HloOpcode::kGetTupleElement) return std::nullopt;
  }
  const int64_t size = loop.shape().tuple_shapes_size();
  const auto body_reads = TupleReads(*body, size);
  const auto cond_reads = TupleReads(*loop.while_condition(), size);
  if (!body_reads || !cond_reads) return std::nullopt;
  std::vector<Move> moves;
  for (int64_t i = 0; i < size; ++i) {
    const auto k = static_cast<size_t>(i);
    std::optional<Accumulation> a =
        MatchAccumulation(loop, i, (*body_reads)[k], !(*cond_reads)[k].empty(), reduce_scatter);
    if (!a) continue;
    if (a->collective->opcode() == HloOpcode::kAllReduce) {
      moves.push_back({*a, std::nullopt});
    } else if (std::optional<Widening> w = PlanWidening(*a)) {
      moves.push_back({*a, std::move(w)});
    }
  }
  return moves;
}

class Mover {
 public:
  Mover(const WhileLoopAllReduceCodeMotionOptions& options, std::vector<ReduceScatterHoist>* hoists)
      : options_(options), hoists_(hoists) {}
  // A mover that takes exactly `taken` (reduce-scatters by name) of those found, unpriced:
  // for a copy of the module a plan is tried on.
  static Mover Taking(const WhileLoopAllReduceCodeMotionOptions& options, std::vector<ReduceScatterHoist>* hoists,
                      const std::vector<std::string>& taken) {
    Mover mover(options, hoists);
    mover.fixed_ = true;
    for (const std::string& name : taken) mover.taken_[name] = true;
    return mover;
  }

  // Prices every reduce-scatter accumulation of `loops` and takes those that pay, the largest
  // saving first, each priced again beside those taken before it, while the estimated peak
  // plus the accumulators grown so far fits the limit.
  absl::Status Plan(const std::vector<HloInstruction*>& loops);
  absl::StatusOr<bool> MoveOutOf(HloInstruction* loop);
  // The reduce-scatters Plan took, in the order taken (the largest saving first).
  const std::vector<std::string>& taken_in_order() const { return taken_in_order_; }
  // Keeps the first `n` hoists taken; the rest stay in their loops (kStepNotFaster).
  void KeepFirst(size_t n);

 private:
  // The record of a reduce-scatter accumulation, priced (its outcome: pays or not).
  absl::StatusOr<ReduceScatterHoist> Price(const HloInstruction& loop, const Accumulation& a, const Widening& w);
  // What hoisting `rs` saves beside the hoists taken so far (h.saved_seconds), and whether
  // that pays (else h's outcome says it does not).
  absl::StatusOr<bool> Pays(const HloInstruction& rs, ReduceScatterHoist& h);
  // Whether a priced accumulation that pays fits beside the ones grown so far; records it
  // and, when it fits, tells the pricing it is taken. `hoisted`: its full-size shape.
  absl::StatusOr<bool> Fit(const HloInstruction& loop, const HloInstruction& rs, const Shape& hoisted,
                           ReduceScatterHoist& h);

  const WhileLoopAllReduceCodeMotionOptions& options_;
  std::vector<ReduceScatterHoist>* hoists_;
  std::unique_ptr<ReduceScatterPricing> pricing_;  // made at the first candidate
  std::optional<int64_t> peak_;  // the estimated peak before this run
  int64_t grown_ = 0;            // bytes the widened accumulators (and their zeros and sums) added so far
  // The zeros the hoisted accumulators start from, one per computation and shape.
  absl::flat_hash_set<std::pair<const HloComputation*, std::string>> zeros_;
  // Plan's verdicts, by reduce-scatter name; one made later (by a move out of an inner loop)
  // is priced and fitted when its loop is rewritten (unless the verdicts are fixed: not taken).
  absl::flat_hash_map<std::string, bool> taken_;
  std::vector<std::string> taken_in_order_;
  bool fixed_ = false;
};

void Mover::KeepFirst(size_t n) {
  for (size_t i = n; i < taken_in_order_.size(); ++i) {
    taken_[taken_in_order_[i]] = false;
    for (ReduceScatterHoist& h : *hoists_) {
      if (h.reduce_scatter == taken_in_order_[i]) h.outcome = ReduceScatterHoist::Outcome::kStepNotFaster;
    }
  }
  if (n < taken_in_order_.size()) taken_in_order_.resize(n);
}

absl::StatusOr<ReduceScatterHoist> Mover::Price(const HloInstruction& loop, const Accumulation& a,
                                                const Widening& w) {
  ReduceScatterHoist h{.reduce_scatter = a.collective->name(),
                       .loop = loop.name(),
                       .group_size = w.group_size,
                       .accumulator_bytes = ShapeUtil::ByteSizeOf(a.acc->shape()),
                       .hoisted_bytes = ShapeUtil::ByteSizeOf(w.hoisted),
                       .reduced_bytes = ShapeUtil::ByteSizeOf(a.collective->shape())};
  if (const std::optional<Counter> counter = UnitStepCounter(loop)) h.trips = counter->trips;
  h.grown_adds = std::max<int64_t>(h.trips, 0);
  if (a.slice != nullptr) h.add_bytes = (w.group_size - 1) * ShapeUtil::ByteSizeOf(a.slice->shape());
  if (options_.reduce_scatter_pricing && pricing_ == nullptr) {
    HLO_ASSIGN_OR_RETURN(pricing_, options_.reduce_scatter_pricing(*loop.parent()->parent()));
  }
  HLO_RETURN_IF_ERROR(Pays(*a.collective, h).status());
  return h;
}

absl::StatusOr<bool> Mover::Pays(const HloInstruction& rs, ReduceScatterHoist& h) {
  bool pays = h.trips > 1;
  if (pricing_ != nullptr) {
    HLO_ASSIGN_OR_RETURN(h.saved_seconds, pricing_->Savings(rs, h));
    pays = h.saved_seconds > 0;
  }
  h.outcome = pays ? ReduceScatterHoist::Outcome::kHoisted : ReduceScatterHoist::Outcome::kDoesNotPay;
  return pays;
}

absl::StatusOr<bool> Mover::Fit(const HloInstruction& loop, const HloInstruction& rs, const Shape& hoisted,
                                ReduceScatterHoist& h) {
  const HloModule& module = *loop.parent()->parent();
  if (!peak_) {
    HLO_ASSIGN_OR_RETURN(peak_, options_.peak_bytes ? options_.peak_bytes(module) : EstimatedPeakBytes(module));
  }
  h.peak_bytes = *peak_ + grown_;
  h.memory_limit_bytes = options_.memory_limit_bytes;
  const std::pair<const HloComputation*, std::string> zeros{loop.parent(), hoisted.ToString()};
  h.zeros_bytes = zeros_.contains(zeros) ? 0 : h.hoisted_bytes;
  if (h.peak_bytes + h.grown_bytes() > options_.memory_limit_bytes) {
    h.outcome = ReduceScatterHoist::Outcome::kOverMemoryLimit;
    return false;
  }
  grown_ += h.grown_bytes();
  zeros_.insert(zeros);
  if (pricing_ != nullptr) HLO_RETURN_IF_ERROR(pricing_->Take(rs, h));
  return true;
}

absl::Status Mover::Plan(const std::vector<HloInstruction*>& loops) {
  // The records' reduce-scatters as found, their loops and full-size shapes.
  std::vector<const HloInstruction*> collectives, of_loop;
  std::vector<Shape> hoisted;
  for (const HloInstruction* loop : loops) {
    const std::optional<std::vector<Move>> moves = MovableAccumulations(*loop, options_.enable_reduce_scatter);
    if (!moves) continue;
    for (const Move& mv : *moves) {
      if (!mv.widening) continue;
      HLO_ASSIGN_OR_RETURN(ReduceScatterHoist h, Price(*loop, mv.a, *mv.widening));
      hoists_->push_back(std::move(h));
      collectives.push_back(mv.a.collective);
      of_loop.push_back(loop);
      hoisted.push_back(mv.widening->hoisted);
    }
  }
  // The largest saving first (the earlier found on a tie): each, priced again beside those
  // taken before it, takes its bytes while it still pays and they fit.
  std::vector<size_t> paying;
  for (size_t i = 0; i < hoists_->size(); ++i) {
    if ((*hoists_)[i].outcome != ReduceScatterHoist::Outcome::kDoesNotPay) paying.push_back(i);
  }
  std::stable_sort(paying.begin(), paying.end(),
                   [&](size_t x, size_t y) { return (*hoists_)[x].saved_seconds > (*hoists_)[y].saved_seconds; });
  for (size_t i = 0; i < collectives.size(); ++i) taken_[collectives[i]->name()] = false;
  for (size_t i : paying) {
    ReduceScatterHoist& h = (*hoists_)[i];
    if (!taken_in_order_.empty()) {
      HLO_ASSIGN_OR_RETURN(const bool pays, Pays(*collectives[i], h));
      if (!pays) continue;
    }
    HLO_ASSIGN_OR_RETURN(const bool fits, Fit(*of_loop[i], *collectives[i], hoisted[i], h));
    taken_[collectives[i]->name()] = fits;
    if (fits) taken_in_order_.push_back(collectives[i]->name());
  }
  return absl::OkStatus();
}

absl::StatusOr<bool> Mover::MoveOutOf(HloInstruction* loop) {
  HloComputation* parent = loop->parent();
  HloComputation* body = loop->while_body();
  HloInstruction* root = body->root_instruction();
  std::optional<std::vector<Move>> movable = MovableAccumulations(*loop, options_.enable_reduce_scatter);
  if (!movable) return false;
  const int64_t size = loop->shape().tuple_shapes_size();
  std::vector<Move> moves;
  for (Move& mv : *movable) {
    bool take = true;  // all-reduces always move
    if (mv.widening) {
      if (auto it = taken_.find(mv.a.collective->name()); it != taken_.end()) {
        take = it->second;
      } else if (fixed_) {
        take = false;
      } else {  // made by a move out of an inner loop, after Plan
        HLO_ASSIGN_OR_RETURN(ReduceScatterHoist h, Price(*loop, mv.a, *mv.widening));
        take = false;
        if (h.outcome != ReduceScatterHoist::Outcome::kDoesNotPay) {
          HLO_ASSIGN_OR_RETURN(take, Fit(*loop, *mv.a.collective, mv.widening->hoisted, h));
        }
        hoists_->push_back(std::move(h));
      }
    }
    if (take) moves.push_back(std::move(mv));
  }
  if (moves.empty()) return false;
  std::vector<HloInstruction*> users(loop->users().begin(), loop->users().end());

  // In the loop: the accumulators add the unreduced values; widened ones at the full size.
  std::vector<HloInstruction*> next(root->operands().begin(), root->operands().end());
  std::vector<Shape> shapes = loop->shape().tuple_shapes();
  bool widened = false;
  for (const Move& mv : moves) {
    const Accumulation& a = mv.a;
    if (!mv.widening) {
      HLO_RETURN_IF_ERROR(a.reader->ReplaceOperandWith(a.reader_operand, a.collective->mutable_operand(0)));
      continue;
    }
    *a.acc->mutable_shape() = mv.widening->hoisted;
    shapes[static_cast<size_t>(a.index)] = mv.widening->hoisted;
    HLO_ASSIGN_OR_RETURN(next[static_cast<size_t>(a.index)], WidenInBody(body, a, *mv.widening));
    widened = true;
  }
  if (widened) {
    HloBuilder bb(body);
    bb.set_metadata(root->metadata());
    HLO_ASSIGN_OR_RETURN(HloInstruction * new_root, bb.Tuple(next));
    body->set_root_instruction(new_root);
    HLO_RETURN_IF_ERROR(body->RemoveInstruction(root));
    const Shape state = ShapeUtil::MakeTupleShape(shapes);
    *body->parameter_instruction(0)->mutable_shape() = state;
    *loop->while_condition()->parameter_instruction(0)->mutable_shape() = state;
    *loop->mutable_shape() = state;
  }

  HloBuilder pb(parent);
  pb.set_metadata(loop->metadata());
  HloInstruction* init = loop->mutable_operand(0);
  std::vector<HloInstruction*> elements;
  for (int64_t i = 0; i < size; ++i) {
    if (init->opcode() == HloOpcode::kTuple) {
      elements.push_back(init->mutable_operand(i));
    } else {
      HLO_ASSIGN_OR_RETURN(HloInstruction * e, pb.GetTupleElement(init, i));
      elements.push_back(e);
    }
  }
  // After the loop: the accumulator's reads become init + collective(accumulator).
  for (const Move& mv : moves) {
    const Accumulation& a = mv.a;
    std::vector<HloInstruction*> reads;
    for (HloInstruction* user : users) {
      if (user->tuple_index() == a.index) reads.push_back(user);
    }
    if (reads.empty()) continue;  // the sum is never read: nothing to reduce
    const PrimitiveType type = loop->shape().tuple_shapes(a.index).element_type();
    // A sum of the accumulator's type (a convert may sit between it and the collective).
    HloComputation* reducer = a.collective->shape().element_type() == type
                                  ? a.collective->to_apply()
                                  : ScalarCombinerComputation(parent->parent(), HloOpcode::kAdd, type);
    HLO_ASSIGN_OR_RETURN(HloInstruction * sum, pb.GetTupleElement(loop, a.index));
    HloInstruction* reduced = nullptr;
    if (mv.widening) {
      HLO_ASSIGN_OR_RETURN(reduced, AddReduceScatterLike(parent, *a.collective, sum, reducer, mv.widening->acc_dim));
    } else {
      HLO_ASSIGN_OR_RETURN(reduced, AddAllReduceLike(parent, *a.collective, sum, reducer));
    }
    HloInstruction* initial = elements[static_cast<size_t>(a.index)];
    HloInstruction* result = reduced;
    if (!Match(initial, m::ConstantSplat(0))) {
      HLO_ASSIGN_OR_RETURN(result, pb.Add(initial, reduced));
    }
    // The reads are deleted: drop them from `users` first, which the next move walks.
    std::erase_if(users, [&](const HloInstruction* user) { return user->tuple_index() == a.index; });
    for (HloInstruction* read : reads) {
      HLO_RETURN_IF_ERROR(read->ReplaceAllUsesWith(result));
      HLO_RETURN_IF_ERROR(parent->RemoveInstruction(read));
    }
  }
  // Into the loop: the accumulators start at zero.
  for (const Move& mv : moves) {
    HLO_ASSIGN_OR_RETURN(elements[static_cast<size_t>(mv.a.index)],
                         Zeros(pb, loop->shape().tuple_shapes(mv.a.index)));
  }
  HLO_ASSIGN_OR_RETURN(HloInstruction * new_init, pb.Tuple(elements));
  loop->DetachFromOperands();  // a widened state's shape changed: ReplaceOperandWith would refuse it
  loop->AppendOperand(new_init);
  if (init->user_count() == 0 && !init->IsRoot() && init->opcode() != HloOpcode::kParameter) {
    HLO_RETURN_IF_ERROR(parent->RemoveInstructionAndUnusedOperands(init));
  }
  // Last, as they were the new collectives' prototypes: the collectives left in the loop (a
  // widened accumulation's old chain with them).
  for (const Move& mv : moves) {
    if (mv.widening) {
      HLO_RETURN_IF_ERROR(body->RemoveInstructionAndUnusedOperands(mv.a.next));
    } else {
      HLO_RETURN_IF_ERROR(body->RemoveInstruction(mv.a.collective));
    }
  }
  return true;
}

}  // namespace

namespace {

// The arenas the computations a program calls run in (the dry run's rule, pod_program.cc): a
// loop's condition's and body's, a conditional's largest branch's, a call's callee's, each its
// temporaries (its peak less its parameters, which are the caller's buffers) plus the largest
// arena of what it calls in turn. A fusion is one kernel: no arena. Memoized per computation.
class NestedArenas {
 public:
  explicit NestedArenas(const MemoryModel& memory_model) : memory_model_(memory_model) {}

  // The most bytes `computation` holds live at once in the order it runs.
  absl::StatusOr<int64_t> Peak(const HloComputation& computation) {
    const std::vector<HloInstruction*> order = computation.MakeSequentialOrder();
    if (!memory_model_) return FindMemoryPeak(computation, order).bytes;
    HLO_ASSIGN_OR_RETURN(MemoryPeakOfOrder peak_of, memory_model_(computation));
    return peak_of(order).bytes;
  }

  // The largest arena one of `computation`'s instructions runs a called computation in.
  absl::StatusOr<int64_t> LargestIn(const HloComputation& computation) {
    int64_t largest = 0;
    for (const HloInstruction* instr : computation.instructions()) {
      int64_t arena = 0;
      switch (instr->opcode()) {
        case HloOpcode::kWhile: {
          HLO_ASSIGN_OR_RETURN(const int64_t condition, Arena(*instr->while_condition()));
          HLO_ASSIGN_OR_RETURN(const int64_t body, Arena(*instr->while_body()));
          arena = condition + body;
          break;
        }
        case HloOpcode::kConditional:
          for (const HloComputation* branch : instr->branch_computations()) {
            HLO_ASSIGN_OR_RETURN(const int64_t bytes, Arena(*branch));
            arena = std::max(arena, bytes);
          }
          break;
        case HloOpcode::kCall: {
          HLO_ASSIGN_OR_RETURN(arena, Arena(*instr->to_apply()));
          break;
        }
        default:
          break;
      }
      largest = std::max(largest, arena);
    }
    return largest;
  }

 private:
  absl::StatusOr<int64_t> Arena(const HloComputation& computation) {
    if (auto it = arena_.find(&computation); it != arena_.end()) return it->second;
    HLO_ASSIGN_OR_RETURN(const int64_t peak, Peak(computation));
    int64_t parameters = 0;
    for (const HloInstruction* p : computation.parameter_instructions()) parameters += ShapeUtil::ByteSizeOf(p->shape());
    HLO_ASSIGN_OR_RETURN(const int64_t nested, LargestIn(computation));
    const int64_t bytes = std::max<int64_t>(peak - parameters, 0) + nested;
    arena_[&computation] = bytes;
    return bytes;
  }

  const MemoryModel& memory_model_;
  absl::flat_hash_map<const HloComputation*, int64_t> arena_;
};

}  // namespace

absl::StatusOr<int64_t> EstimatedPeakBytes(const HloModule& module, const MemoryModel& memory_model) {
  NestedArenas arenas(memory_model);
  const HloComputation& entry = *module.entry_computation();
  HLO_ASSIGN_OR_RETURN(const int64_t at_entry, arenas.Peak(entry));
  HLO_ASSIGN_OR_RETURN(const int64_t nested, arenas.LargestIn(entry));
  return at_entry + nested;
}

namespace {

class EachAlone final : public ReduceScatterPricing {
 public:
  explicit EachAlone(ReduceScatterSavings savings) : savings_(std::move(savings)) {}
  absl::StatusOr<double> Savings(const HloInstruction& reduce_scatter, const ReduceScatterHoist& hoist) override {
    return savings_(reduce_scatter, hoist);
  }
  absl::Status Take(const HloInstruction&, const ReduceScatterHoist&) override { return absl::OkStatus(); }

 private:
  ReduceScatterSavings savings_;
};

}  // namespace

ReduceScatterPricer PriceEachAlone(ReduceScatterSavings savings) {
  return [savings = std::move(savings)](const HloModule&) -> absl::StatusOr<std::unique_ptr<ReduceScatterPricing>> {
    return std::make_unique<EachAlone>(savings);
  };
}

std::string ReduceScatterHoist::ToString() const {
  // An unrolled sum (ReduceScatterReassociate's) has no loop: its runs are combined or kept apart.
  const bool unrolled = loop.empty();
  const std::string kept = unrolled ? "kept apart" : "kept in the loop";
  const std::string what =
      outcome == Outcome::kHoisted      ? std::string(unrolled ? "combined" : "hoisted")
      : outcome == Outcome::kDoesNotPay ? absl::StrFormat("%s (does not pay)", kept)
      : outcome == Outcome::kStepNotFaster
          ? absl::StrFormat("%s (the step with it is not faster as the target compiles the program)", kept)
                                        : absl::StrFormat("%s (the full-size accumulator would exceed the memory limit: "
                                                          "estimated peak %d B + %d B > %d B)",
                                                          kept, peak_bytes, grown_bytes(), memory_limit_bytes);
  const std::string where = unrolled   ? std::string(" (unrolled")
                            : trips < 0 ? absl::StrFormat(" in %s (trip count unknown", loop)
                                        : absl::StrFormat(" in %s (%d trips", loop, trips);
  return absl::StrFormat("%s%s, %d chips): %s, %d fewer runs, saves %.3f us per step, accumulator %d -> %d B per chip",
                         reduce_scatter, where, group_size, what, trips > 1 ? trips - 1 : 0, saved_seconds * 1e6,
                         accumulator_bytes, hoisted_bytes);
}

namespace {

// The loops of `module` the pass rewrites, callees first: a collective moved out of an inner
// loop may then leave the outer one.
std::vector<HloInstruction*> LoopsToRewrite(const HloModule& module) {
  std::vector<HloInstruction*> loops;
  if (!MayHoldWhileLoops(module)) return loops;
  const auto callers = CallerCounts(module);
  for (HloComputation* computation : module.MakeComputationPostOrder()) {
    if (computation->IsFusionComputation()) continue;
    for (HloInstruction* loop : LoopsWithOwnComputations(*computation, callers)) loops.push_back(loop);
  }
  return loops;
}

absl::StatusOr<bool> MoveOutOfAll(Mover& mover, const std::vector<HloInstruction*>& loops) {
  bool changed = false;
  for (HloInstruction* loop : loops) {
    HLO_ASSIGN_OR_RETURN(bool moved, mover.MoveOutOf(loop));
    changed |= moved;
  }
  return changed;
}

// The step time of `module` with the first `n` of `taken` hoisted (on a copy).
absl::StatusOr<double> StepSecondsWith(const HloModule& module, const WhileLoopAllReduceCodeMotionOptions& options,
                                       const std::vector<std::string>& taken, size_t n) {
  HLO_ASSIGN_OR_RETURN(std::unique_ptr<HloModule> copy, module.Clone());
  std::vector<ReduceScatterHoist> unused;
  Mover mover = Mover::Taking(options, &unused, std::vector<std::string>(taken.begin(), taken.begin() + n));
  HLO_RETURN_IF_ERROR(MoveOutOfAll(mover, LoopsToRewrite(*copy)).status());
  return options.step_seconds(*copy);
}

}  // namespace

absl::StatusOr<bool> WhileLoopAllReduceCodeMotion::Run(HloModule* module) {
  hoists_.clear();
  Mover mover(options_, &hoists_);
  const std::vector<HloInstruction*> loops = LoopsToRewrite(*module);
  HLO_RETURN_IF_ERROR(mover.Plan(loops));
  if (options_.step_seconds && !mover.taken_in_order().empty()) {
    // All of them; else the half with the largest savings; else the largest alone; else none.
    // Each try compiles the program (a dry run plans its step), so they are few.
    HLO_ASSIGN_OR_RETURN(const double as_is, options_.step_seconds(*module));
    const size_t all = mover.taken_in_order().size();
    std::vector<size_t> tries = {all};
    if (all / 2 > 1) tries.push_back(all / 2);
    if (all > 1) tries.push_back(1);
    size_t keep = 0;
    for (const size_t n : tries) {
      HLO_ASSIGN_OR_RETURN(const double hoisted, StepSecondsWith(*module, options_, mover.taken_in_order(), n));
      if (hoisted < as_is) {
        keep = n;
        break;
      }
    }
    mover.KeepFirst(keep);
  }
  return MoveOutOfAll(mover, loops);
}

}  // namespace jx::hlo
