#include "jx/compiler/passes/hlo_scheduling.h"

#include <algorithm>
#include <limits>
#include <string_view>
#include <set>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/functional/function_ref.h"
#include "jx/compiler/hlo/donated_aliases.h"
#include "jx/compiler/hlo/hlo_module.h"

namespace jx::hlo {
namespace {

using LeafBytes = absl::FunctionRef<int64_t(const HloInstruction&, const Shape&)>;
using LiveOut = absl::FunctionRef<bool(const HloInstruction&)>;
using OperandBytes = absl::FunctionRef<int64_t(const HloInstruction&)>;

int64_t HostBytes(const HloInstruction&, const Shape& shape) { return ShapeUtil::ByteSizeOf(shape); }
int64_t NoOperandBuffer(const HloInstruction&) { return 0; }

// Shapes nest only as deep as tuples do, so recursion here is bounded by the text form.
void AppendLeafSizes(const HloInstruction& instr, const Shape& shape, LeafBytes leaf_bytes,
                     std::vector<int64_t>* sizes) {
  if (shape.IsTuple()) {
    for (const Shape& e : shape.tuple_shapes()) AppendLeafSizes(instr, e, leaf_bytes, sizes);
    return;
  }
  sizes->push_back(shape.IsArray() ? leaf_bytes(instr, shape) : 0);
}

int64_t LeafCount(const Shape& shape) {
  if (!shape.IsTuple()) return 1;
  int64_t n = 0;
  for (const Shape& e : shape.tuple_shapes()) n += LeafCount(e);
  return n;
}

// Buffers and who defines and reads them, for instructions in one topological order (operands
// outside the order hold no buffer); `live_out` instructions' buffers live to the end.
struct BufferModel {
  std::vector<int64_t> size;             // per buffer
  std::vector<bool> pinned;              // a parameter's or the root's: never freed early
  std::vector<bool> parameter;           // live from the start
  std::vector<bool> live_out;            // the root's: live to the end
  std::vector<std::vector<int>> defines;  // per instruction: buffers it allocates
  std::vector<std::vector<int>> reads;    // per instruction: distinct buffers it reads
};

// `operand_bytes`: what an operand from outside the order holds, from its first reader to its
// last (a buffer no instruction defines).
BufferModel BuildModel(absl::Span<HloInstruction* const> order, LiveOut live_out, LeafBytes leaf_bytes,
                       OperandBytes operand_bytes = NoOperandBuffer) {
  BufferModel m;
  const size_t n = order.size();
  m.defines.resize(n);
  m.reads.resize(n);
  absl::flat_hash_map<const HloInstruction*, size_t> index;
  std::vector<std::vector<int>> leaves(n);  // the buffers each instruction's value is
  for (size_t i = 0; i < n; ++i) index[order[i]] = i;
  absl::flat_hash_map<const HloInstruction*, std::vector<int>> outside;  // operands' buffers
  auto leaves_of = [&](const HloInstruction* operand) -> const std::vector<int>* {
    auto it = index.find(operand);
    if (it != index.end()) return &leaves[it->second];
    auto [held, added] = outside.try_emplace(operand);
    if (added) {
      const int64_t bytes = operand_bytes(*operand);
      if (bytes > 0) {
        held->second.push_back(static_cast<int>(m.size.size()));
        m.size.push_back(bytes);
        m.parameter.push_back(false);
        m.live_out.push_back(false);
      }
    }
    return held->second.empty() ? nullptr : &held->second;
  };
  for (size_t i = 0; i < n; ++i) {
    const HloInstruction* instr = order[i];
    std::vector<int>& reads = m.reads[i];
    if (instr->opcode() == HloOpcode::kGetTupleElement) {
      // Aliases one element of its operand: reads just that element's buffers.
      const std::vector<int>* tuple = leaves_of(instr->operand(0));
      const Shape& tuple_shape = instr->operand(0)->shape();
      if (tuple != nullptr && tuple_shape.IsTuple()) {
        int64_t offset = 0;
        for (int64_t j = 0; j < instr->tuple_index(); ++j) {
          offset += LeafCount(tuple_shape.tuple_shapes(j));
        }
        const int64_t count = LeafCount(instr->shape());
        if (offset + count <= static_cast<int64_t>(tuple->size())) {
          leaves[i].assign(tuple->begin() + offset, tuple->begin() + offset + count);
        }
      }
      reads = leaves[i];
    } else {
      for (const HloInstruction* operand : instr->operands()) {
        const std::vector<int>* l = leaves_of(operand);
        if (l == nullptr) continue;
        reads.insert(reads.end(), l->begin(), l->end());
        if (instr->opcode() == HloOpcode::kTuple) {
          leaves[i].insert(leaves[i].end(), l->begin(), l->end());
        }
      }
      if (instr->opcode() != HloOpcode::kTuple) {
        std::vector<int64_t> sizes;
        AppendLeafSizes(*instr, instr->shape(), leaf_bytes, &sizes);
        const bool is_parameter = instr->opcode() == HloOpcode::kParameter;
        for (int64_t bytes : sizes) {
          const int b = static_cast<int>(m.size.size());
          m.size.push_back(bytes);
          m.parameter.push_back(is_parameter);
          m.live_out.push_back(false);
          leaves[i].push_back(b);
          m.defines[i].push_back(b);
        }
      }
    }
    std::sort(reads.begin(), reads.end());
    reads.erase(std::unique(reads.begin(), reads.end()), reads.end());
  }
  for (size_t i = 0; i < n; ++i) {
    if (!live_out(*order[i])) continue;
    for (int b : leaves[i]) m.live_out[b] = true;
  }
  m.pinned.resize(m.size.size());
  for (size_t b = 0; b < m.size.size(); ++b) m.pinned[b] = m.parameter[b] || m.live_out[b];
  return m;
}

// Dependencies for scheduling: operands, plus the post order of side-effecting
// instructions (there are no control edges in the IR).
struct DependencyGraph {
  std::vector<int> pending;                  // unscheduled predecessors
  std::vector<std::vector<int>> successors;  // distinct
};

DependencyGraph BuildDependencies(absl::Span<HloInstruction* const> order,
                                  absl::Span<const OrderingEdge> edges = {}) {
  const size_t n = order.size();
  absl::flat_hash_map<const HloInstruction*, int> index;
  for (size_t i = 0; i < n; ++i) index[order[i]] = static_cast<int>(i);
  DependencyGraph g;
  g.pending.assign(n, 0);
  g.successors.resize(n);
  std::vector<std::vector<int>> edge_preds(n);
  for (const OrderingEdge& e : edges) {
    auto before = index.find(e.before), after = index.find(e.after);
    if (before != index.end() && after != index.end()) edge_preds[after->second].push_back(before->second);
  }
  int last_side_effect = -1;
  std::vector<int> preds;
  for (size_t i = 0; i < n; ++i) {
    preds = edge_preds[i];
    for (const HloInstruction* operand : order[i]->operands()) {
      auto it = index.find(operand);
      if (it != index.end()) preds.push_back(it->second);
    }
    if (order[i]->HasSideEffect()) {
      if (last_side_effect >= 0) preds.push_back(last_side_effect);
      last_side_effect = static_cast<int>(i);
    }
    // Deduplicated per instruction, so a value read by thousands costs no scans.
    std::sort(preds.begin(), preds.end());
    preds.erase(std::unique(preds.begin(), preds.end()), preds.end());
    for (int pred : preds) g.successors[pred].push_back(static_cast<int>(i));
    g.pending[i] = static_cast<int>(preds.size());
  }
  return g;
}

}  // namespace

int64_t PeakMemoryBytes(const HloComputation& computation,
                        absl::Span<HloInstruction* const> order) {
  return FindMemoryPeak(computation, order).bytes;
}

MemoryPeak FindMemoryPeak(const HloComputation& computation, absl::Span<HloInstruction* const> order) {
  const HloInstruction* root = computation.root_instruction();
  return FindMemoryPeak(order, [root](const HloInstruction& x) { return &x == root; }, HostBytes, NoOperandBuffer);
}

MemoryPeak FindMemoryPeak(absl::Span<HloInstruction* const> order,
                          absl::FunctionRef<bool(const HloInstruction&)> live_out,
                          absl::FunctionRef<int64_t(const HloInstruction&, const Shape&)> leaf_bytes,
                          absl::FunctionRef<int64_t(const HloInstruction&)> operand_bytes) {
  if (order.empty()) return {};
  const BufferModel m = BuildModel(order, live_out, leaf_bytes, operand_bytes);
  const int64_t n = static_cast<int64_t>(order.size());
  // A buffer no instruction defines (an outside operand's) is live from its first reader.
  std::vector<int64_t> first(m.size.size(), n), last(m.size.size(), 0);
  for (int64_t i = 0; i < n; ++i) {
    for (int b : m.defines[i]) first[b] = last[b] = i;
  }
  for (int64_t i = 0; i < n; ++i) {
    for (int b : m.reads[i]) {
      first[b] = std::min(first[b], i);
      last[b] = std::max(last[b], i);
    }
  }
  // Bytes entering at each position and leaving after it.
  std::vector<int64_t> delta(n + 1, 0);
  for (size_t b = 0; b < m.size.size(); ++b) {
    const int64_t from = m.parameter[b] ? 0 : first[b];
    const int64_t to = m.parameter[b] || m.live_out[b] ? n - 1 : last[b];
    delta[from] += m.size[b];
    delta[to + 1] -= m.size[b];
  }
  int64_t live = 0;
  MemoryPeak peak;
  for (int64_t i = 0; i < n; ++i) {
    live += delta[i];
    if (live > peak.bytes) peak = {live, i};
  }
  return peak;
}

namespace {

// The greedy list scheduler over instructions in one topological order (see the header).
std::vector<HloInstruction*> ListSchedule(absl::Span<HloInstruction* const> post_order, const BufferModel& m,
                                          DependencyGraph g) {
  const int n = static_cast<int>(post_order.size());

  std::vector<int> unread(m.size.size(), 0);  // readers not yet scheduled
  std::vector<std::vector<int>> readers(m.size.size());
  for (int i = 0; i < n; ++i) {
    for (int b : m.reads[i]) {
      ++unread[b];
      readers[b].push_back(i);
    }
  }
  std::vector<bool> scheduled(n, false);
  // Bytes freed minus bytes allocated if i ran now.
  auto net_freed = [&](int i) {
    int64_t net = 0;
    for (int b : m.reads[i]) {
      if (!m.pinned[b] && unread[b] == 1) net += m.size[b];
    }
    for (int b : m.defines[i]) {
      if (!m.parameter[b]) net -= m.size[b];
    }
    return net;
  };
  // Ordered best first: most bytes freed, then earliest in post order.
  std::set<std::pair<int64_t, int>> ready;
  std::vector<int64_t> key(n, 0);
  std::vector<bool> in_ready(n, false);
  auto push = [&](int i) {
    key[i] = -net_freed(i);
    ready.emplace(key[i], i);
    in_ready[i] = true;
  };
  for (int i = 0; i < n; ++i) {
    if (g.pending[i] == 0) push(i);
  }

  std::vector<HloInstruction*> order;
  order.reserve(n);
  while (!ready.empty()) {
    const int i = ready.begin()->second;
    ready.erase(ready.begin());
    in_ready[i] = false;
    scheduled[i] = true;
    order.push_back(post_order[i]);
    for (int b : m.reads[i]) {
      if (--unread[b] != 1 || m.pinned[b]) continue;
      // The buffer's last reader would now free it: it gets more attractive.
      for (int r : readers[b]) {
        if (scheduled[r] || !in_ready[r]) continue;
        ready.erase({key[r], r});
        push(r);
      }
    }
    for (int s : g.successors[i]) {
      if (--g.pending[s] == 0) push(s);
    }
  }
  return order;
}

}  // namespace

std::vector<HloInstruction*> ListScheduleOrder(const HloComputation& computation,
                                               absl::Span<const OrderingEdge> edges) {
  const std::vector<HloInstruction*> post_order = computation.MakeInstructionPostOrder();
  const HloInstruction* root = computation.root_instruction();
  const BufferModel m = BuildModel(post_order, [root](const HloInstruction& x) { return &x == root; }, HostBytes);
  return ListSchedule(post_order, m, BuildDependencies(post_order, edges));
}

std::vector<HloInstruction*> ListScheduleOrder(absl::Span<HloInstruction* const> order,
                                               absl::FunctionRef<bool(const HloInstruction&)> live_out,
                                               absl::FunctionRef<int64_t(const HloInstruction&, const Shape&)> leaf_bytes,
                                               absl::FunctionRef<int64_t(const HloInstruction&)> operand_bytes) {
  return ListSchedule(order, BuildModel(order, live_out, leaf_bytes, operand_bytes), BuildDependencies(order));
}

namespace {

// The post order, with each edge's `before` run no later than its `after` needs: ready
// instructions in post order position.
std::vector<HloInstruction*> ConstrainedPostOrder(const HloComputation& computation,
                                                  absl::Span<const OrderingEdge> edges) {
  std::vector<HloInstruction*> post_order = computation.MakeInstructionPostOrder();
  if (edges.empty()) return post_order;
  DependencyGraph g = BuildDependencies(post_order, edges);
  std::set<int> ready;
  for (int i = 0; i < static_cast<int>(post_order.size()); ++i) {
    if (g.pending[i] == 0) ready.insert(i);
  }
  std::vector<HloInstruction*> order;
  order.reserve(post_order.size());
  while (!ready.empty()) {
    const int i = *ready.begin();
    ready.erase(ready.begin());
    order.push_back(post_order[i]);
    for (int s : g.successors[i]) {
      if (--g.pending[s] == 0) ready.insert(s);
    }
  }
  return order;
}

// Whether `to` is reachable from `from` through users and the extra edges.
bool Reaches(const HloInstruction* from, const HloInstruction* to,
             const absl::flat_hash_map<const HloInstruction*, std::vector<const HloInstruction*>>& extra) {
  std::vector<const HloInstruction*> work{from};
  absl::flat_hash_set<const HloInstruction*> seen{from};
  while (!work.empty()) {
    const HloInstruction* v = work.back();
    work.pop_back();
    if (v == to) return true;
    auto visit = [&](const HloInstruction* u) {
      if (seen.insert(u).second) work.push_back(u);
    };
    for (const HloInstruction* u : v->users()) visit(u);
    if (auto it = extra.find(v); it != extra.end()) {
      for (const HloInstruction* u : it->second) visit(u);
    }
  }
  return false;
}

}  // namespace

std::vector<OrderingEdge> DonationOrderingEdges(const HloComputation& computation, const std::vector<bool>& donated) {
  std::vector<OrderingEdge> edges;
  const std::vector<DonatedAlias> pairs = PairDonatedArguments(computation, donated);
  if (pairs.empty()) return edges;
  // The parameter holding each argument leaf (array parameters only: a tuple parameter's
  // leaves are read through get-tuple-elements).
  std::vector<const HloInstruction*> parameter_of_leaf;
  for (int64_t p = 0; p < computation.num_parameters(); ++p) {
    const HloInstruction* param = computation.parameter_instruction(p);
    const size_t leaves = ArrayLeaves(param->shape()).size();
    for (size_t k = 0; k < leaves; ++k) parameter_of_leaf.push_back(param->shape().IsArray() ? param : nullptr);
  }
  // The instruction writing each output leaf: the root, or an array operand of a root tuple.
  const HloInstruction* root = computation.root_instruction();
  auto producer = [&](int64_t leaf) -> const HloInstruction* {
    if (root->shape().IsArray()) return leaf == 0 ? root : nullptr;
    if (root->opcode() != HloOpcode::kTuple || leaf >= root->operand_count()) return nullptr;
    for (const HloInstruction* op : root->operands()) {
      if (!op->shape().IsArray()) return nullptr;  // leaves are not the operands
    }
    return root->operand(leaf);
  };
  absl::flat_hash_map<const HloInstruction*, std::vector<const HloInstruction*>> extra;
  for (const DonatedAlias& pair : pairs) {
    const HloInstruction* writer = producer(pair.output_leaf);
    const HloInstruction* param = static_cast<size_t>(pair.argument_leaf) < parameter_of_leaf.size()
                                      ? parameter_of_leaf[pair.argument_leaf]
                                      : nullptr;
    if (writer == nullptr || param == nullptr || writer == param) continue;
    std::vector<const HloInstruction*> readers;
    bool possible = true;
    for (const HloInstruction* reader : param->users()) {
      if (reader == writer) continue;
      if (Reaches(writer, reader, extra)) {  // the reader needs the output: no order helps
        possible = false;
        break;
      }
      readers.push_back(reader);
    }
    if (!possible) continue;
    for (const HloInstruction* reader : readers) {
      edges.push_back({reader, writer});
      extra[reader].push_back(writer);
    }
  }
  return edges;
}

std::vector<HloInstruction*> ScheduleComputation(const HloComputation& computation,
                                                 absl::Span<const OrderingEdge> edges) {
  std::vector<HloInstruction*> post_order = ConstrainedPostOrder(computation, edges);
  std::vector<HloInstruction*> list = ListScheduleOrder(computation, edges);
  if (list.size() == post_order.size() &&
      PeakMemoryBytes(computation, list) < PeakMemoryBytes(computation, post_order)) {
    return list;
  }
  return post_order;
}

std::vector<HloInstruction*> OrderFollowingNames(const HloComputation& computation,
                                                 absl::Span<const std::string> names) {
  absl::flat_hash_map<std::string_view, int64_t> named;
  for (size_t i = 0; i < names.size(); ++i) named.emplace(names[i], static_cast<int64_t>(i));
  const std::vector<HloInstruction*> post_order = computation.MakeInstructionPostOrder();
  const int64_t n = static_cast<int64_t>(post_order.size());
  // Rank: the named position, else just before the first user's (users come later in the
  // post order, so walk it backwards).
  absl::flat_hash_map<const HloInstruction*, int64_t> rank;
  constexpr int64_t kLast = std::numeric_limits<int64_t>::max();
  for (int64_t i = n - 1; i >= 0; --i) {
    const HloInstruction* instr = post_order[i];
    auto it = named.find(instr->name());
    int64_t r = kLast;
    if (it != named.end()) {
      r = it->second;
    } else {
      for (const HloInstruction* user : instr->users()) {
        auto u = rank.find(user);
        if (u != rank.end()) r = std::min(r, u->second);
      }
    }
    rank[instr] = r;
  }
  DependencyGraph g = BuildDependencies(post_order);
  // Ready instructions by (rank, post order position).
  std::set<std::pair<int64_t, int64_t>> ready;
  for (int64_t i = 0; i < n; ++i) {
    if (g.pending[i] == 0) ready.emplace(rank.at(post_order[i]), i);
  }
  std::vector<HloInstruction*> order;
  order.reserve(n);
  while (!ready.empty()) {
    const int64_t i = ready.begin()->second;
    ready.erase(ready.begin());
    order.push_back(post_order[i]);
    for (int s : g.successors[i]) {
      if (--g.pending[s] == 0) ready.emplace(rank.at(post_order[s]), s);
    }
  }
  return order;
}

absl::StatusOr<bool> HloScheduling::Run(HloModule* module) {
  bool changed = false;
  for (HloComputation* computation : module->computations()) {
    if (computation->IsFusionComputation()) continue;
    std::vector<HloInstruction*> before = computation->MakeSequentialOrder();
    const std::vector<OrderingEdge> edges = computation == module->entry_computation() && !donated_.empty()
                                                ? DonationOrderingEdges(*computation, donated_)
                                                : std::vector<OrderingEdge>{};
    std::vector<HloInstruction*> order = ScheduleComputation(*computation, edges);
    changed |= order != before;
    computation->set_schedule(std::move(order));
  }
  return changed;
}

}  // namespace jx::hlo
