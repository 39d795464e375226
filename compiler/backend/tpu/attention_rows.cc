#include "jx/compiler/backend/tpu/attention_rows.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "jx/compiler/hlo/hlo_computation.h"

namespace jx::tpu {
namespace {

using hlo::HloComputation;
using hlo::HloInstruction;
using hlo::HloOpcode;

// Dims of values tied together (one class: one logical dim), a union-find over (value, dim).
class DimClasses {
 public:
  int Find(const HloInstruction* x, int64_t dim) { return Root(Node(x, dim)); }

  // Ties two dims when they have the same extent.
  void Tie(const HloInstruction* a, int64_t da, const HloInstruction* b, int64_t db) {
    if (!a->shape().IsArray() || !b->shape().IsArray() || a->shape().dimensions(da) != b->shape().dimensions(db)) {
      return;
    }
    const int ra = Root(Node(a, da)), rb = Root(Node(b, db));
    if (ra != rb) parent_[ra] = rb;
  }

 private:
  int Node(const HloInstruction* x, int64_t dim) {
    auto [it, added] = id_.try_emplace({x, dim}, static_cast<int>(parent_.size()));
    if (added) parent_.push_back(it->second);
    return it->second;
  }
  int Root(int n) {
    while (parent_[n] != n) n = parent_[n] = parent_[parent_[n]];
    return n;
  }

  absl::flat_hash_map<std::pair<const HloInstruction*, int64_t>, int> id_;
  std::vector<int> parent_;
};

// The non-unit dims of a shape, in order.
std::vector<int64_t> NonUnitDims(const hlo::Shape& s) {
  std::vector<int64_t> dims;
  for (int64_t d = 0; d < s.rank(); ++d) {
    if (s.dimensions(d) != 1) dims.push_back(d);
  }
  return dims;
}

// Ties the dims of x's result to the operand dims they come from (see the header).
void TieOperands(const HloInstruction* x, DimClasses& dims) {
  if (!x->shape().IsArray()) return;
  const int64_t rank = x->shape().rank();
  auto positional = [&](const HloInstruction* o) {
    if (!o->shape().IsArray() || o->shape().rank() != rank) return;
    for (int64_t d = 0; d < rank; ++d) dims.Tie(x, d, o, d);
  };
  switch (x->opcode()) {
    case HloOpcode::kBroadcast:
      for (size_t i = 0; i < x->dimensions().size(); ++i) {
        dims.Tie(x, x->dimensions()[i], x->operand(0), static_cast<int64_t>(i));
      }
      return;
    case HloOpcode::kTranspose:
      for (int64_t d = 0; d < rank; ++d) dims.Tie(x, d, x->operand(0), x->dimensions()[d]);
      return;
    case HloOpcode::kReduce: {
      const HloInstruction* in = x->operand(0);
      int64_t out = 0;
      for (int64_t d = 0; d < in->shape().rank(); ++d) {
        const bool reduced = std::find(x->dimensions().begin(), x->dimensions().end(), d) != x->dimensions().end();
        if (!reduced) dims.Tie(x, out++, in, d);
      }
      return;
    }
    case HloOpcode::kDot: {
      const hlo::DotDimensionNumbers& dn = x->dot_dimension_numbers();
      const HloInstruction* lhs = x->operand(0);
      const HloInstruction* rhs = x->operand(1);
      int64_t out = 0;
      for (size_t i = 0; i < dn.lhs_batch_dims.size(); ++i, ++out) {
        dims.Tie(x, out, lhs, dn.lhs_batch_dims[i]);
        dims.Tie(x, out, rhs, dn.rhs_batch_dims[i]);
      }
      for (size_t i = 0; i < dn.lhs_contracting_dims.size(); ++i) {
        dims.Tie(lhs, dn.lhs_contracting_dims[i], rhs, dn.rhs_contracting_dims[i]);
      }
      auto free_dims = [&](const HloInstruction* o, const std::vector<int64_t>& batch,
                           const std::vector<int64_t>& contracting) {
        for (int64_t d = 0; d < o->shape().rank(); ++d) {
          const bool bound = std::find(batch.begin(), batch.end(), d) != batch.end() ||
                             std::find(contracting.begin(), contracting.end(), d) != contracting.end();
          if (!bound) dims.Tie(x, out++, o, d);
        }
      };
      free_dims(lhs, dn.lhs_batch_dims, dn.lhs_contracting_dims);
      free_dims(rhs, dn.rhs_batch_dims, dn.rhs_contracting_dims);
      return;
    }
    case HloOpcode::kReshape:
    case HloOpcode::kBitcast: {
      // Only unit dims added or dropped: the other dims pair up in order.
      const std::vector<int64_t> to = NonUnitDims(x->shape()), from = NonUnitDims(x->operand(0)->shape());
      if (to.size() != from.size()) return;
      for (size_t i = 0; i < to.size(); ++i) {
        if (x->shape().dimensions(to[i]) != x->operand(0)->shape().dimensions(from[i])) return;
      }
      for (size_t i = 0; i < to.size(); ++i) dims.Tie(x, to[i], x->operand(0), from[i]);
      return;
    }
    case HloOpcode::kCopy:
    case HloOpcode::kSlice:
    case HloOpcode::kDynamicSlice:
    case HloOpcode::kPad:
    case HloOpcode::kReverse:
    case HloOpcode::kConcatenate:
      // Dims that keep their extent (Tie skips the others).
      for (const HloInstruction* o : x->operands()) positional(o);
      return;
    default:
      if (x->IsElementwise()) {
        for (const HloInstruction* o : x->operands()) positional(o);
      }
      return;
  }
}

// The kernel's values and their nested fusions' instructions, walked operands first.
struct Walk {
  DimClasses dims;
  std::vector<const HloInstruction*> values;
  // What each value reads, as far as rows go: its operands; a fused parameter the fusion's
  // operand; a fusion its fused root.
  absl::flat_hash_map<const HloInstruction*, std::vector<const HloInstruction*>> reads;
  absl::flat_hash_set<const HloInstruction*> after_dot;  // computed from a dot's result
  std::vector<std::pair<const HloInstruction*, int64_t>> seeds;  // query-row dims

  void Visit(const HloInstruction* x) {
    const HloComputation* fused =
        x->opcode() == HloOpcode::kFusion ? x->fused_instructions_computation() : nullptr;
    if (fused != nullptr) {
      for (const HloInstruction* p : fused->parameter_instructions()) {
        const HloInstruction* operand = x->operand(p->parameter_number());
        for (int64_t d = 0; p->shape().IsArray() && d < p->shape().rank(); ++d) dims.Tie(p, d, operand, d);
        reads[p] = {operand};
        if (after_dot.contains(operand)) after_dot.insert(p);
        values.push_back(p);
      }
      for (const HloInstruction* y : fused->MakeInstructionPostOrder()) {
        if (y->opcode() != HloOpcode::kParameter) Visit(y);
      }
      const HloInstruction* root = fused->root_instruction();
      for (int64_t d = 0; x->shape().IsArray() && d < x->shape().rank(); ++d) dims.Tie(x, d, root, d);
      reads[x] = {root};
      if (after_dot.contains(root)) after_dot.insert(x);
    } else {
      TieOperands(x, dims);
      std::vector<const HloInstruction*>& r = reads[x];
      for (const HloInstruction* o : x->operands()) {
        r.push_back(o);
        if (after_dot.contains(o)) after_dot.insert(x);
      }
    }
    if (x->opcode() == HloOpcode::kDot && !after_dot.contains(x->operand(0))) {
      // A dot whose lhs no other dot computed (Q, dO): its lhs's free dim is the query rows.
      const hlo::DotDimensionNumbers& dn = x->dot_dimension_numbers();
      const int64_t free = static_cast<int64_t>(dn.lhs_batch_dims.size());
      if (x->shape().IsArray() && free < x->shape().rank()) seeds.emplace_back(x, free);
    }
    if (x->opcode() == HloOpcode::kDot) after_dot.insert(x);
    values.push_back(x);
  }
};

}  // namespace

QueryRows FindQueryRows(absl::Span<HloInstruction* const> members,
                        absl::FunctionRef<bool(const HloInstruction*)> inside) {
  Walk w;
  for (const HloInstruction* m : members) w.Visit(m);
  QueryRows rows;
  if (w.seeds.empty()) return rows;
  absl::flat_hash_set<int> row_classes;
  const int64_t extent = w.seeds.front().first->shape().dimensions(w.seeds.front().second);
  for (const auto& [dot, dim] : w.seeds) {
    if (dot->shape().dimensions(dim) != extent) return rows;  // query blocks of different lengths
    row_classes.insert(w.dims.Find(dot, dim));
  }
  // The row dim of a value (-2: more than one).
  auto row_dim = [&](const HloInstruction* x) -> int64_t {
    int64_t found = -1;
    for (int64_t d = 0; x->shape().IsArray() && d < x->shape().rank(); ++d) {
      if (!row_classes.contains(w.dims.Find(x, d))) continue;
      found = found == -1 ? d : -2;
    }
    return found;
  };
  absl::flat_hash_map<const HloInstruction*, int64_t> dim_of;
  absl::flat_hash_set<const HloInstruction*> summed;
  auto with_rows = [&](const HloInstruction* x) {  // rows, or a sum over them
    auto it = dim_of.find(x);
    return summed.contains(x) || (it != dim_of.end() ? it->second >= 0 : row_dim(x) >= 0);
  };
  for (const HloInstruction* x : w.values) {
    const int64_t dim = row_dim(x);
    if (dim == -2) return rows;
    dim_of[x] = dim;
    bool reads_rows = false;
    for (const HloInstruction* o : w.reads[x]) {
      if (dim >= 0 && summed.contains(o)) return rows;  // rows computed from a sum over all rows
      reads_rows = reads_rows || with_rows(o);
    }
    if (dim < 0 && reads_rows && x->shape().IsArray()) summed.insert(x);
  }
  rows.extent = extent;
  for (const HloInstruction* m : members) {
    if (summed.contains(m)) rows.summed.insert(m);
    if (dim_of.at(m) >= 0) rows.row_dim[m] = dim_of.at(m);
    for (const HloInstruction* o : m->operands()) {
      if (!inside(o) && row_dim(o) >= 0) rows.row_dim[o] = row_dim(o);
    }
  }
  return rows;
}

}  // namespace jx::tpu
