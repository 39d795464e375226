#include "jx/compiler/backend/cpu/buffer_assignment.h"

#include <algorithm>
#include <iterator>
#include <map>

#include "jx/compiler/hlo/str_util.h"

namespace jx::cpu {

using hlo::HloInstruction;
using hlo::HloOpcode;
using hlo::Literal;
using hlo::Shape;
using hlo::ShapeUtil;

namespace {

constexpr int64_t kAlignment = 64;

int64_t AlignUp(int64_t v) { return (v + kAlignment - 1) / kAlignment * kAlignment; }

void AppendLeaves(const Shape& shape, std::vector<Shape>& out) {
  // Iterative depth-first walk (nested tuples can be deep).
  std::vector<const Shape*> stack{&shape};
  while (!stack.empty()) {
    const Shape* s = stack.back();
    stack.pop_back();
    if (s->IsTuple()) {
      for (int64_t i = s->tuple_shapes_size() - 1; i >= 0; --i) stack.push_back(&s->tuple_shapes(i));
    } else {
      out.push_back(*s);
    }
  }
}

void AppendLiteralLeaves(const Literal& lit, std::vector<const Literal*>& out) {
  std::vector<const Literal*> stack{&lit};
  while (!stack.empty()) {
    const Literal* l = stack.back();
    stack.pop_back();
    if (l->shape().IsTuple()) {
      for (auto it = l->tuple_elements().rbegin(); it != l->tuple_elements().rend(); ++it) {
        stack.push_back(&*it);
      }
    } else {
      out.push_back(l);
    }
  }
}

// First-fit allocator over the arena's free ranges (offset -> size), coalescing on free.
class ArenaAllocator {
 public:
  int64_t Allocate(int64_t size) {
    size = AlignUp(std::max<int64_t>(size, 1));
    for (auto it = free_.begin(); it != free_.end(); ++it) {
      if (it->second >= size) {
        const int64_t offset = it->first, rest = it->second - size;
        free_.erase(it);
        if (rest > 0) free_.emplace(offset + size, rest);
        return offset;
      }
    }
    // Grow: a free range at the end is extended.
    int64_t offset = end_;
    if (!free_.empty()) {
      auto last = std::prev(free_.end());
      if (last->first + last->second == end_) {
        offset = last->first;
        free_.erase(last);
      }
    }
    end_ = offset + size;
    return offset;
  }
  void Free(int64_t offset, int64_t size) {
    size = AlignUp(std::max<int64_t>(size, 1));
    auto [it, inserted] = free_.emplace(offset, size);
    auto next = std::next(it);
    if (next != free_.end() && it->first + it->second == next->first) {
      it->second += next->second;
      free_.erase(next);
    }
    if (it != free_.begin()) {
      auto prev = std::prev(it);
      if (prev->first + prev->second == it->first) {
        prev->second += it->second;
        free_.erase(it);
      }
    }
  }
  int64_t size() const { return end_; }

 private:
  std::map<int64_t, int64_t> free_;
  int64_t end_ = 0;
};

// Whether `user` may write its result into the memory of its operand `i` while reading it:
// it reads that operand only at the index it writes, element by element (XLA's
// CanShareOperandBufferWithUser, for the elementwise cases).
bool ReadsOperandInPlace(const HloInstruction& user, int64_t i) {
  const Shape& operand = user.operand(i)->shape();
  if (!user.shape().IsArray() || !operand.IsArray() ||
      operand.dimensions() != user.shape().dimensions() ||
      operand.element_type() != user.shape().element_type()) {
    return false;
  }
  if (user.IsElementwise()) return true;
  if (user.opcode() != HloOpcode::kFusion || user.fusion_kind() != hlo::FusionKind::kLoop) {
    return false;
  }
  // Every transitive use of the fused parameter is elementwise over the result's dims.
  const HloInstruction* param = user.fused_instructions_computation()->parameter_instruction(i);
  std::vector<const HloInstruction*> work{param};
  absl::flat_hash_map<const HloInstruction*, bool> seen;
  while (!work.empty()) {
    const HloInstruction* v = work.back();
    work.pop_back();
    for (const HloInstruction* u : v->users()) {
      if (!seen.emplace(u, true).second) continue;
      if (!u->IsElementwise() || u->shape().dimensions() != operand.dimensions()) return false;
      work.push_back(u);
    }
  }
  return true;
}

bool SameArrayShape(const Shape& a, const Shape& b) {
  return a.IsArray() && b.IsArray() && a.element_type() == b.element_type() &&
         a.dimensions() == b.dimensions();
}

}  // namespace

std::vector<Shape> LeafShapes(const Shape& shape) {
  std::vector<Shape> leaves;
  AppendLeaves(shape, leaves);
  return leaves;
}

absl::StatusOr<BufferAssignment> BufferAssignment::Run(
    const hlo::HloComputation& computation, absl::Span<HloInstruction* const> schedule,
    const std::vector<bool>& donated_arguments) {
  BufferAssignment ba;
  absl::flat_hash_map<const HloInstruction*, int64_t> position;
  for (size_t i = 0; i < schedule.size(); ++i) position[schedule[i]] = static_cast<int64_t>(i);

  // Argument leaves are numbered in parameter order.
  std::vector<int64_t> param_base(computation.num_parameters(), 0);
  for (int64_t p = 0; p < computation.num_parameters(); ++p) {
    param_base[p] = ba.num_argument_leaves_;
    ba.num_argument_leaves_ += static_cast<int64_t>(
        LeafShapes(computation.parameter_instruction(p)->shape()).size());
  }

  auto new_buffer = [&](LogicalBuffer::Kind kind, const Shape& shape, const HloInstruction* def) {
    LogicalBuffer b;
    b.kind = kind;
    b.size = ShapeUtil::ByteSizeOf(shape);
    b.defining = def;
    b.defined_at = b.last_use = position.at(def);
    ba.buffers_.push_back(b);
    return static_cast<int>(ba.buffers_.size() - 1);
  };

  for (HloInstruction* instr : schedule) {
    std::vector<int> bufs;
    switch (instr->opcode()) {
      case HloOpcode::kParameter: {
        int64_t leaf = param_base.at(instr->parameter_number());
        for (const Shape& s : LeafShapes(instr->shape())) {
          const int b = new_buffer(LogicalBuffer::kParameter, s, instr);
          ba.buffers_[b].index = leaf++;
          bufs.push_back(b);
        }
        break;
      }
      case HloOpcode::kConstant: {
        std::vector<const Literal*> leaves;
        AppendLiteralLeaves(instr->literal(), leaves);
        for (const Literal* l : leaves) {
          const int b = new_buffer(LogicalBuffer::kConstant, l->shape(), instr);
          ba.buffers_[b].data = l->untyped_data().data();
          bufs.push_back(b);
        }
        break;
      }
      case HloOpcode::kTuple:
        for (const HloInstruction* op : instr->operands()) {
          const std::vector<int>& ob = ba.buffers_of_.at(op);
          bufs.insert(bufs.end(), ob.begin(), ob.end());
        }
        break;
      case HloOpcode::kGetTupleElement: {
        const Shape& ts = instr->operand(0)->shape();
        size_t begin = 0;
        for (int64_t i = 0; i < instr->tuple_index(); ++i) {
          begin += LeafShapes(ts.tuple_shapes(i)).size();
        }
        const size_t count = LeafShapes(instr->shape()).size();
        const std::vector<int>& ob = ba.buffers_of_.at(instr->operand(0));
        bufs.assign(ob.begin() + begin, ob.begin() + begin + count);
        break;
      }
      default:
        for (const Shape& s : LeafShapes(instr->shape())) {
          bufs.push_back(new_buffer(LogicalBuffer::kTemp, s, instr));
        }
        break;
    }
    ba.buffers_of_[instr] = std::move(bufs);
    // Reading an operand keeps all of its buffers (aliases included) alive until here.
    for (const HloInstruction* op : instr->operands()) {
      for (int b : ba.buffers_of_.at(op)) {
        ba.buffers_[b].last_use = std::max(ba.buffers_[b].last_use, position.at(instr));
      }
    }
  }

  // The root's leaves go to the caller's output buffers.
  const HloInstruction* root = computation.root_instruction();
  ba.output_shapes_ = LeafShapes(root->shape());
  const std::vector<int>& root_bufs = ba.buffers_of_.at(root);
  for (size_t leaf = 0; leaf < root_bufs.size(); ++leaf) {
    LogicalBuffer& b = ba.buffers_[root_bufs[leaf]];
    if (b.kind == LogicalBuffer::kTemp) {
      b.kind = LogicalBuffer::kOutput;
      b.index = static_cast<int64_t>(leaf);
    } else {
      ba.output_copies_.push_back({static_cast<int64_t>(leaf), root_bufs[leaf]});
    }
  }

  // Donated argument leaves that outputs may be written into.
  if (!donated_arguments.empty()) {
    if (static_cast<int64_t>(donated_arguments.size()) != ba.num_argument_leaves_) {
      return absl::InvalidArgumentError(hlo::StrCat("buffer assignment: ", donated_arguments.size(),
                                                    " donation flags for ", ba.num_argument_leaves_,
                                                    " argument leaves"));
    }
    std::vector<int> argument_buffer(ba.num_argument_leaves_, -1);
    for (size_t b = 0; b < ba.buffers_.size(); ++b) {
      if (ba.buffers_[b].kind == LogicalBuffer::kParameter) {
        argument_buffer[ba.buffers_[b].index] = static_cast<int>(b);
      }
    }
    std::vector<bool> taken(ba.num_argument_leaves_, false);
    for (size_t leaf = 0; leaf < root_bufs.size(); ++leaf) {
      const LogicalBuffer& out = ba.buffers_[root_bufs[leaf]];
      if (out.kind != LogicalBuffer::kOutput || out.index != static_cast<int64_t>(leaf)) continue;
      const HloInstruction& def = *out.defining;
      for (int64_t a = 0; a < ba.num_argument_leaves_; ++a) {
        const int pb = argument_buffer[a];
        if (!donated_arguments[a] || taken[a] || pb < 0 ||
            !SameArrayShape(ba.output_shapes_[leaf], ba.buffers_[pb].defining->shape())) {
          continue;
        }
        bool usable = ba.buffers_[pb].last_use < out.defined_at;
        if (ba.buffers_[pb].last_use == out.defined_at) {
          // The defining instruction is the argument's last reader: it must read it in place.
          usable = true;
          for (int64_t i = 0; i < def.operand_count(); ++i) {
            const std::vector<int>& ob = ba.buffers_of_.at(def.operand(i));
            if (std::find(ob.begin(), ob.end(), pb) == ob.end()) continue;
            usable &= def.operand(i) == ba.buffers_[pb].defining && ReadsOperandInPlace(def, i);
          }
        }
        if (!usable) continue;
        taken[a] = true;
        ba.output_aliases_.push_back({static_cast<int64_t>(leaf), a});
        ba.memory_.alias_bytes += out.size;
        break;
      }
    }
  }

  // Walk the schedule: place an instruction's temps, then release buffers read last here.
  MemoryAnalysis& m = ba.memory_;
  std::vector<std::vector<int>> release_at(schedule.size());
  for (size_t b = 0; b < ba.buffers_.size(); ++b) {
    const LogicalBuffer& buf = ba.buffers_[b];
    if (buf.kind == LogicalBuffer::kTemp) release_at[buf.last_use].push_back(static_cast<int>(b));
    if (buf.kind == LogicalBuffer::kParameter) m.argument_bytes += buf.size;
    if (buf.kind == LogicalBuffer::kConstant) m.constant_bytes += buf.size;
  }
  for (const Shape& s : ba.output_shapes_) m.output_bytes += ShapeUtil::ByteSizeOf(s);
  ArenaAllocator arena;
  int64_t live = 0;
  for (size_t pos = 0; pos < schedule.size(); ++pos) {
    for (int b : ba.buffers_of_.at(schedule[pos])) {
      LogicalBuffer& buf = ba.buffers_[b];
      if (buf.kind != LogicalBuffer::kTemp || buf.defining != schedule[pos]) continue;
      buf.offset = arena.Allocate(buf.size);
      m.temp_bytes_without_reuse += AlignUp(std::max<int64_t>(buf.size, 1));
      live += buf.size;
    }
    m.peak_live_temp_bytes = std::max(m.peak_live_temp_bytes, live);
    for (int b : release_at[pos]) {
      arena.Free(ba.buffers_[b].offset, ba.buffers_[b].size);
      live -= ba.buffers_[b].size;
    }
  }
  m.temp_bytes = arena.size();
  m.peak_bytes =
      m.argument_bytes + m.output_bytes + m.constant_bytes + m.temp_bytes - m.alias_bytes;
  return ba;
}

}  // namespace jx::cpu
