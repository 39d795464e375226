#include "jx/compiler/backend/cpu/buffer_assignment.h"

#include <algorithm>
#include <iterator>
#include <map>

#include "jx/compiler/hlo/donated_aliases.h"
#include "jx/compiler/hlo/status_macros.h"
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

bool IsRowMajorArray(const Shape& s) {
  return s.IsArray() && s.layout() == ShapeUtil::DefaultLayout(s.rank());
}

bool SameArrayShape(const Shape& a, const Shape& b) {
  return a.IsArray() && b.IsArray() && a.element_type() == b.element_type() &&
         a.dimensions() == b.dimensions();
}

}  // namespace

bool IsBufferAlias(const HloInstruction& instr) {
  if (instr.opcode() != HloOpcode::kReshape && instr.opcode() != HloOpcode::kBitcast) return false;
  const Shape& operand = instr.operand(0)->shape();
  return IsRowMajorArray(instr.shape()) && IsRowMajorArray(operand) &&
         operand.element_type() == instr.shape().element_type();
}

std::vector<Shape> LeafShapes(const Shape& shape) { return hlo::ArrayLeaves(shape); }

bool BufferAssignment::OutputIsItsArgument(int64_t leaf) const {
  const LogicalBuffer& b = buffers_[buffers_of_.at(root_)[leaf]];
  return b.kind == LogicalBuffer::kParameter && b.index == leaf;
}

// Builds a BufferAssignment in stages (see Run).
class BufferAssigner {
 public:
  BufferAssigner(const hlo::HloComputation& computation, absl::Span<HloInstruction* const> schedule,
                 BufferAssignment& ba)
      : computation_(computation), schedule_(schedule), ba_(ba) {
    for (size_t i = 0; i < schedule.size(); ++i) position_[schedule[i]] = static_cast<int64_t>(i);
    ba_.root_ = computation.root_instruction();
  }

  // One logical buffer per leaf (tuple and get-tuple-element alias their operands') and
  // each buffer's live range.
  void CreateBuffers() {
    std::vector<int64_t> param_base(computation_.num_parameters(), 0);
    for (int64_t p = 0; p < computation_.num_parameters(); ++p) {
      param_base[p] = ba_.num_argument_leaves_;
      ba_.num_argument_leaves_ += static_cast<int64_t>(
          LeafShapes(computation_.parameter_instruction(p)->shape()).size());
    }
    for (HloInstruction* instr : schedule_) {
      std::vector<int> bufs;
      switch (instr->opcode()) {
        case HloOpcode::kParameter: {
          int64_t leaf = param_base.at(instr->parameter_number());
          for (const Shape& s : LeafShapes(instr->shape())) {
            const int b = NewBuffer(LogicalBuffer::kParameter, s, instr);
            ba_.buffers_[b].index = leaf++;
            bufs.push_back(b);
          }
          break;
        }
        case HloOpcode::kConstant: {
          std::vector<const Literal*> leaves;
          AppendLiteralLeaves(instr->literal(), leaves);
          for (const Literal* l : leaves) {
            const int b = NewBuffer(LogicalBuffer::kConstant, l->shape(), instr);
            ba_.buffers_[b].data = l->untyped_data().data();
            bufs.push_back(b);
          }
          break;
        }
        case HloOpcode::kTuple:
          for (const HloInstruction* op : instr->operands()) {
            const std::vector<int>& ob = ba_.buffers_of_.at(op);
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
          const std::vector<int>& ob = ba_.buffers_of_.at(instr->operand(0));
          bufs.assign(ob.begin() + begin, ob.begin() + begin + count);
          break;
        }
        case HloOpcode::kReshape: case HloOpcode::kBitcast:
          if (IsBufferAlias(*instr)) {
            bufs = ba_.buffers_of_.at(instr->operand(0));
            break;
          }
          [[fallthrough]];
        default:
          for (const Shape& s : LeafShapes(instr->shape())) {
            bufs.push_back(NewBuffer(LogicalBuffer::kTemp, s, instr));
          }
          break;
      }
      ba_.buffers_of_[instr] = std::move(bufs);
      // Reading an operand keeps all of its buffers (aliases included) alive until here. A
      // get-tuple-element reads nothing: it names some of its operand's buffers, kept alive
      // by its own readers (else a loop body's later get-tuple-element of another leaf would
      // keep every state leaf alive and stop in-place updates of the ones before it). So
      // does a reshape that is a buffer alias (a dynamic-update-slice of a reshaped temp
      // still updates it in place).
      if (instr->opcode() == HloOpcode::kGetTupleElement || IsBufferAlias(*instr)) continue;
      for (const HloInstruction* op : instr->operands()) {
        for (int b : ba_.buffers_of_.at(op)) {
          ba_.buffers_[b].last_use = std::max(ba_.buffers_[b].last_use, position_.at(instr));
        }
      }
    }
  }

  // A dynamic-update-slice, a scatter, or a while leaf, whose result may live in the buffer
  // of the operand leaf it replaces: a temp read last by this instruction (XLA's in-place
  // dynamic-update-slice, scatter and loop state). The merged buffer lives as long as both did.
  void ShareInPlaceUpdates() {
    for (HloInstruction* instr : schedule_) {
      std::vector<std::pair<size_t, int>> candidates;  // (result leaf, operand buffer)
      if (instr->opcode() == HloOpcode::kDynamicUpdateSlice || instr->opcode() == HloOpcode::kScatter) {
        const std::vector<int>& ob = ba_.buffers_of_.at(instr->operand(0));
        if (ob.size() == 1) candidates.push_back({0, ob[0]});
      } else if (instr->opcode() == HloOpcode::kWhile) {
        const std::vector<int>& ob = ba_.buffers_of_.at(instr->operand(0));
        for (size_t leaf = 0; leaf < ob.size(); ++leaf) candidates.push_back({leaf, ob[leaf]});
      }
      for (const auto& [leaf, operand_buffer] : candidates) {
        const int o = Find(operand_buffer);
        const int r = Find(ba_.buffers_of_.at(instr)[leaf]);
        LogicalBuffer& ob = ba_.buffers_[o];
        if (o == r || ob.kind != LogicalBuffer::kTemp || ob.last_use != position_.at(instr) ||
            !WritesInPlace(*instr, leaf, o)) {
          continue;
        }
        ob.last_use = std::max(ob.last_use, ba_.buffers_[r].last_use);
        ba_.buffers_[r].merged_into = o;
      }
    }
    for (auto& [instr, bufs] : ba_.buffers_of_) {
      for (int& b : bufs) b = Find(b);
    }
  }

  // The root's leaves go to the caller's output buffers; the rest are copied at the end.
  void BindOutputs() {
    ba_.output_shapes_ = LeafShapes(ba_.root_->shape());
    const std::vector<int>& root_bufs = ba_.buffers_of_.at(ba_.root_);
    for (size_t leaf = 0; leaf < root_bufs.size(); ++leaf) {
      LogicalBuffer& b = ba_.buffers_[root_bufs[leaf]];
      if (b.kind == LogicalBuffer::kTemp) {
        b.kind = LogicalBuffer::kOutput;
        b.index = static_cast<int64_t>(leaf);
      } else {
        ba_.output_copies_.push_back({static_cast<int64_t>(leaf), root_bufs[leaf]});
      }
    }
  }

  // OutputBinding::kLoopState: output leaf i lives in argument leaf i's memory.
  absl::Status BindLoopState() {
    ba_.output_shapes_ = LeafShapes(ba_.root_->shape());
    const int64_t n = static_cast<int64_t>(ba_.output_shapes_.size());
    const std::vector<int> argument_buffer = ArgumentBuffers();
    if (n != ba_.num_argument_leaves_) {
      return absl::InvalidArgumentError(hlo::StrCat(
          "buffer assignment: a loop body's ", n, " output leaves do not match its ",
          ba_.num_argument_leaves_, " argument leaves"));
    }
    const std::vector<int>& root_bufs = ba_.buffers_of_.at(ba_.root_);
    std::vector<bool> copied(n, false);
    for (int64_t leaf = 0; leaf < n; ++leaf) {
      const int pb = argument_buffer[leaf];
      if (pb < 0 || !SameArrayShape(ba_.output_shapes_[leaf], LeafShapeOf(pb))) {
        return absl::InvalidArgumentError(hlo::StrCat(
            "buffer assignment: a loop body's output leaf ", leaf, " (",
            ba_.output_shapes_[leaf].ToString(false), ") is not its argument leaf's shape"));
      }
      const int src = root_bufs[leaf];
      if (src == pb) continue;  // invariant: the state leaf is never touched
      LogicalBuffer& b = ba_.buffers_[src];
      if (b.kind == LogicalBuffer::kTemp && CanOverwrite(pb, src)) {
        b.kind = LogicalBuffer::kOutput;
        b.index = leaf;
        continue;
      }
      copied[leaf] = true;
      ba_.output_copies_.push_back({leaf, src});
    }
    // A copy reading a parameter leaf whose memory the end also overwrites goes through a
    // staging temp, so copies may run in any order (a swap of two carries).
    const int64_t end = static_cast<int64_t>(schedule_.size()) - 1;
    for (auto& [leaf, src] : ba_.output_copies_) {
      const LogicalBuffer& b = ba_.buffers_[src];
      if (b.kind != LogicalBuffer::kParameter || !copied[b.index]) continue;
      const int staging = NewBuffer(LogicalBuffer::kTemp, ba_.output_shapes_[leaf], ba_.root_);
      ba_.buffers_[staging].defined_at = ba_.buffers_[staging].last_use = end;
      ba_.staging_copies_.push_back({src, staging});
      src = staging;
    }
    return absl::OkStatus();
  }

  // Donated argument leaves that outputs may be written into: a maximum matching of output
  // leaves to the donated argument leaves they may overwrite (same shape, dead in time),
  // seeded with JAX's pairing (hlo::PairDonatedArguments: each output its own argument), so a
  // JAX pair stays unless moving it lets one more output alias.
  absl::Status AliasDonatedArguments(const std::vector<bool>& donated) {
    if (donated.empty()) return absl::OkStatus();
    if (static_cast<int64_t>(donated.size()) != ba_.num_argument_leaves_) {
      return absl::InvalidArgumentError(hlo::StrCat("buffer assignment: ", donated.size(),
                                                    " donation flags for ", ba_.num_argument_leaves_,
                                                    " argument leaves"));
    }
    const std::vector<int> argument_buffer = ArgumentBuffers();
    const std::vector<int>& root_bufs = ba_.buffers_of_.at(ba_.root_);
    const size_t n = root_bufs.size();
    std::vector<int64_t> wish(n, -1);
    for (const hlo::DonatedAlias& pair : hlo::PairDonatedArguments(computation_, donated)) {
      if (pair.output_leaf < static_cast<int64_t>(n)) wish[pair.output_leaf] = pair.argument_leaf;
    }
    std::vector<std::vector<int64_t>> options(n);  // JAX's pair first
    for (size_t leaf = 0; leaf < n; ++leaf) {
      const LogicalBuffer& out = ba_.buffers_[root_bufs[leaf]];
      if (out.kind != LogicalBuffer::kOutput || out.index != static_cast<int64_t>(leaf)) continue;
      auto usable = [&](int64_t a) {
        const int pb = argument_buffer[a];
        return donated[a] && pb >= 0 &&
               SameArrayShape(ba_.output_shapes_[leaf], ba_.buffers_[pb].defining->shape()) &&
               CanOverwrite(pb, root_bufs[leaf]);
      };
      if (wish[leaf] >= 0 && usable(wish[leaf])) options[leaf].push_back(wish[leaf]);
      for (int64_t a = 0; a < ba_.num_argument_leaves_; ++a) {
        if (a != wish[leaf] && usable(a)) options[leaf].push_back(a);
      }
    }
    std::vector<int64_t> argument_of(n, -1), output_of(ba_.num_argument_leaves_, -1);
    for (size_t leaf = 0; leaf < n; ++leaf) {
      if (!options[leaf].empty() && options[leaf][0] == wish[leaf] && output_of[wish[leaf]] < 0) {
        argument_of[leaf] = wish[leaf];
        output_of[wish[leaf]] = static_cast<int64_t>(leaf);
      }
    }
    for (size_t leaf = 0; leaf < n; ++leaf) {
      if (argument_of[leaf] < 0 && !options[leaf].empty()) Augment(leaf, options, argument_of, output_of);
    }
    for (size_t leaf = 0; leaf < n; ++leaf) {
      if (argument_of[leaf] < 0) continue;
      ba_.output_aliases_.push_back({static_cast<int64_t>(leaf), argument_of[leaf]});
      ba_.memory_.alias_bytes += ba_.buffers_[root_bufs[leaf]].size;
    }
    return absl::OkStatus();
  }

  // Walks the schedule: places temps defined at each position, then releases the buffers
  // read last there.
  void PlaceTemps() {
    MemoryAnalysis& m = ba_.memory_;
    std::vector<std::vector<int>> define_at(schedule_.size()), release_at(schedule_.size());
    for (size_t b = 0; b < ba_.buffers_.size(); ++b) {
      const LogicalBuffer& buf = ba_.buffers_[b];
      if (buf.merged_into >= 0) continue;
      if (buf.kind == LogicalBuffer::kTemp) {
        define_at[buf.defined_at].push_back(static_cast<int>(b));
        release_at[buf.last_use].push_back(static_cast<int>(b));
      }
      if (buf.kind == LogicalBuffer::kParameter) m.argument_bytes += buf.size;
      if (buf.kind == LogicalBuffer::kConstant) m.constant_bytes += buf.size;
    }
    for (const Shape& s : ba_.output_shapes_) m.output_bytes += ShapeUtil::ByteSizeOf(s);
    ArenaAllocator arena;
    int64_t live = 0;
    for (size_t pos = 0; pos < schedule_.size(); ++pos) {
      for (int b : define_at[pos]) {
        LogicalBuffer& buf = ba_.buffers_[b];
        buf.offset = arena.Allocate(buf.size);
        m.temp_bytes_without_reuse += AlignUp(std::max<int64_t>(buf.size, 1));
        live += buf.size;
      }
      m.peak_live_temp_bytes = std::max(m.peak_live_temp_bytes, live);
      for (int b : release_at[pos]) {
        arena.Free(ba_.buffers_[b].offset, ba_.buffers_[b].size);
        live -= ba_.buffers_[b].size;
      }
    }
    m.temp_bytes = arena.size();
    m.peak_bytes =
        m.argument_bytes + m.output_bytes + m.constant_bytes + m.temp_bytes - m.alias_bytes;
  }

 private:
  int NewBuffer(LogicalBuffer::Kind kind, const Shape& shape, const HloInstruction* def) {
    LogicalBuffer b;
    b.kind = kind;
    b.size = ShapeUtil::ByteSizeOf(shape);
    b.defining = def;
    b.defined_at = b.last_use = position_.at(def);
    ba_.buffers_.push_back(b);
    return static_cast<int>(ba_.buffers_.size() - 1);
  }

  // An augmenting path (breadth first, iterative) from the unmatched output leaf `start`
  // through the matching: on reaching a free argument, every output on the path moves to the
  // argument that reached it. Returns whether start got an argument.
  static bool Augment(size_t start, const std::vector<std::vector<int64_t>>& options,
                      std::vector<int64_t>& argument_of, std::vector<int64_t>& output_of) {
    std::vector<int64_t> reached_from(output_of.size(), -1);
    std::vector<bool> seen(output_of.size(), false);
    std::vector<size_t> queue{start};
    for (size_t head = 0; head < queue.size(); ++head) {
      const size_t leaf = queue[head];
      for (int64_t a : options[leaf]) {
        if (seen[a]) continue;
        seen[a] = true;
        reached_from[a] = static_cast<int64_t>(leaf);
        if (output_of[a] >= 0) {
          queue.push_back(static_cast<size_t>(output_of[a]));
          continue;
        }
        for (int64_t arg = a; arg >= 0;) {
          const size_t l = static_cast<size_t>(reached_from[arg]);
          const int64_t previous = argument_of[l];
          argument_of[l] = arg;
          output_of[arg] = static_cast<int64_t>(l);
          arg = l == start ? -1 : previous;
        }
        return true;
      }
    }
    return false;
  }

  int Find(int b) const {
    while (ba_.buffers_[b].merged_into >= 0) b = ba_.buffers_[b].merged_into;
    return b;
  }

  // The buffer of each argument leaf (-1 for a leaf no instruction reads).
  std::vector<int> ArgumentBuffers() const {
    std::vector<int> out(ba_.num_argument_leaves_, -1);
    for (size_t b = 0; b < ba_.buffers_.size(); ++b) {
      if (ba_.buffers_[b].kind == LogicalBuffer::kParameter && ba_.buffers_[b].merged_into < 0) {
        out[ba_.buffers_[b].index] = static_cast<int>(b);
      }
    }
    return out;
  }

  // The array shape of buffer b (a leaf of its defining instruction's shape).
  Shape LeafShapeOf(int b) const {
    const HloInstruction* def = ba_.buffers_[b].defining;
    const std::vector<Shape> leaves = LeafShapes(def->shape());
    const std::vector<int>& bufs = ba_.buffers_of_.at(def);
    for (size_t i = 0; i < bufs.size(); ++i) {
      if (bufs[i] == b) return leaves[i];
    }
    return Shape();
  }

  // Whether the memory of buffer pb (whose value is read up to its last use) may hold the
  // value of buffer `out` from the moment out's defining instruction writes it: pb is read
  // last before that, or by that instruction itself, in place.
  bool CanOverwrite(int pb, int out) const {
    const LogicalBuffer& o = ba_.buffers_[out];
    const LogicalBuffer& p = ba_.buffers_[pb];
    if (p.last_use < o.defined_at) return true;
    if (p.last_use > o.defined_at) return false;
    const std::vector<int>& def_bufs = ba_.buffers_of_.at(o.defining);
    const auto it = std::find(def_bufs.begin(), def_bufs.end(), out);
    return it != def_bufs.end() &&
           WritesInPlace(*o.defining, static_cast<size_t>(it - def_bufs.begin()), pb);
  }

  // Whether `user` may write its result leaf `leaf` into the memory of buffer b while
  // reading b: every read of b is at the element being written, before it is written.
  bool WritesInPlace(const HloInstruction& user, size_t leaf, int b) const {
    auto reads_b = [&](const HloInstruction* op) {
      for (int x : ba_.buffers_of_.at(op)) {
        if (Find(x) == b) return true;
      }
      return false;
    };
    auto is_only_b = [&](const HloInstruction* op) {
      const std::vector<int>& ob = ba_.buffers_of_.at(op);
      return ob.size() == 1 && Find(ob[0]) == b;
    };
    switch (user.opcode()) {
      case HloOpcode::kDynamicUpdateSlice:
      case HloOpcode::kScatter:
        // Outside the window (the scattered elements) each element is its own; a written
        // element reads only itself and the updates (the kernel copies the operand only when
        // its memory differs). Indices, updates and start indices must not read b.
        if (leaf != 0 || !user.shape().IsArray() || !is_only_b(user.operand(0))) return false;
        for (int64_t i = 1; i < user.operand_count(); ++i) {
          if (reads_b(user.operand(i))) return false;
        }
        return true;
      case HloOpcode::kWhile: {
        // The state leaf replacing init leaf `leaf` (the kernel copies init leaf k to state
        // leaf k only when their memory differs).
        const std::vector<int>& init = ba_.buffers_of_.at(user.operand(0));
        int count = 0;
        for (size_t k = 0; k < init.size(); ++k) {
          if (Find(init[k]) != b) continue;
          if (k != leaf) return false;
          ++count;
        }
        return count == 1;
      }
      default:
        if (leaf != 0 || !user.shape().IsArray()) return false;
        for (int64_t i = 0; i < user.operand_count(); ++i) {
          if (!reads_b(user.operand(i))) continue;
          if (!is_only_b(user.operand(i)) || !ReadsOperandInPlace(user, i)) return false;
        }
        return true;
    }
  }

  const hlo::HloComputation& computation_;
  absl::Span<HloInstruction* const> schedule_;
  BufferAssignment& ba_;
  absl::flat_hash_map<const HloInstruction*, int64_t> position_;
};

absl::StatusOr<BufferAssignment> BufferAssignment::Run(
    const hlo::HloComputation& computation, absl::Span<HloInstruction* const> schedule,
    const std::vector<bool>& donated_arguments, OutputBinding binding) {
  BufferAssignment ba;
  BufferAssigner assigner(computation, schedule, ba);
  assigner.CreateBuffers();
  assigner.ShareInPlaceUpdates();
  if (binding == OutputBinding::kLoopState) {
    if (!donated_arguments.empty()) {
      return absl::InvalidArgumentError("buffer assignment: a loop body takes no donations");
    }
    HLO_RETURN_IF_ERROR(assigner.BindLoopState());
  } else {
    assigner.BindOutputs();
    HLO_RETURN_IF_ERROR(assigner.AliasDonatedArguments(donated_arguments));
  }
  assigner.PlaceTemps();
  return ba;
}

}  // namespace jx::cpu
