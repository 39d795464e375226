// The collective kernels: all-reduce, all-gather, reduce-scatter, all-to-all,
// collective-permute and partition-id (and the asynchronous start/done pairs: a start runs
// its collective, a done forwards the result), of one operand or several (XLA's variadic
// all-reduce, all-gather, reduce-scatter and all-to-all: one meeting of the group, one result
// per operand), on the run's CollectiveContext (the partition this run
// is and the rendezvous with the others). Data moves between the partitions' own buffers: a
// member reads every peer's operand during the exchange and writes only its own result.
// Reductions fold the members in group order, so every member computes the same bits.
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "jx/compiler/backend/cpu/collective_context.h"
#include "jx/compiler/backend/cpu/collective_kernels.h"
#include "jx/compiler/backend/cpu/cpu_kernels.h"
#include "jx/compiler/backend/cpu/scalar_semantics.h"
#include "jx/compiler/hlo/shape.h"
#include "jx/compiler/hlo/str_util.h"

namespace jx::cpu::internal {
namespace {

using hlo::HloInstruction;
using hlo::HloOpcode;
using hlo::StrCat;

thread_local CollectiveContext* current_context = nullptr;

// A run without a context: partition 0 of 1, groups of itself only.
class SoloContext final : public CollectiveContext {
 public:
  int64_t partition_id() const override { return 0; }
  int64_t num_partitions() const override { return 1; }
  absl::Status Exchange(const HloInstruction& instr, absl::Span<const int64_t> group,
                        const void* send,
                        absl::FunctionRef<void(absl::Span<const void* const>)> read) override {
    if (group.size() != 1 || group[0] != 0) {
      return absl::FailedPreconditionError(StrCat(
          hlo::HloOpcodeString(instr.opcode()), " over partitions ", hlo::IntListToString(group),
          " in a one-device run: run the program on several devices"));
    }
    const void* peers[] = {send};
    read(peers);
    return absl::OkStatus();
  }
};

CollectiveContext& Context() {
  static SoloContext solo;
  return current_context != nullptr ? *current_context : solo;
}

std::string_view OneDeviceHint(const CollectiveContext& ctx) {
  return ctx.num_partitions() == 1 ? " (a one-device run: run the program on several devices)" : "";
}

// The group of this partition: its replica group, or every partition for replica_groups={}.
absl::StatusOr<std::vector<int64_t>> GroupOf(const HloInstruction& instr, const CollectiveContext& ctx) {
  const int64_t me = ctx.partition_id();
  if (instr.replica_groups().empty()) {
    std::vector<int64_t> all(ctx.num_partitions());
    for (int64_t i = 0; i < ctx.num_partitions(); ++i) all[i] = i;
    return all;
  }
  for (const std::vector<int64_t>& group : instr.replica_groups()) {
    for (int64_t id : group) {
      if (id >= ctx.num_partitions()) {
        return absl::InvalidArgumentError(StrCat("replica_groups=", hlo::ReplicaGroupsToString(instr.replica_groups()),
                                                 " name partition ", id, " of a ", ctx.num_partitions(),
                                                 "-partition run", OneDeviceHint(ctx)));
      }
    }
    for (int64_t id : group) {
      if (id == me) return group;
    }
  }
  return absl::InvalidArgumentError(StrCat("partition ", me, " is in no group of replica_groups=",
                                           hlo::ReplicaGroupsToString(instr.replica_groups())));
}

int64_t IndexIn(absl::Span<const int64_t> group, int64_t id) {
  for (size_t i = 0; i < group.size(); ++i) {
    if (group[i] == id) return static_cast<int64_t>(i);
  }
  return -1;
}

// out[i] = fold over peers (in order) of peer[i + offset], for i in [0, count).
using FoldFn = void (*)(absl::Span<const void* const> peers, int64_t offset, int64_t count, void* out);

template <typename E, HloOpcode kOp>
void Fold(absl::Span<const void* const> peers, int64_t offset, int64_t count, void* out) {
  for (int64_t i = 0; i < count; ++i) {
    typename E::Compute acc = E::Load(peers[0], offset + i);
    for (size_t p = 1; p < peers.size(); ++p) acc = Step<E, kOp>(acc, E::Load(peers[p], offset + i));
    E::Store(out, i, acc);
  }
}

absl::StatusOr<FoldFn> FoldFor(const HloInstruction& instr) {
  std::optional<HloOpcode> op =
      instr.to_apply() == nullptr ? std::nullopt : SimpleBinaryReducer(*instr.to_apply());
  FoldFn fn = nullptr;
  if (op.has_value()) {
    VisitType(instr.operand(0)->shape().element_type(), [&](auto e) {
      using E = decltype(e);
      VisitReducer<E>(*op, [&](auto k) { fn = &Fold<E, decltype(k)::value>; });
    });
  }
  if (fn == nullptr) {
    return absl::UnimplementedError(StrCat(
        "collective reducer must be one add/multiply/maximum/minimum/and/or/xor of its two "
        "parameters for ", hlo::PrimitiveTypeName(instr.operand(0)->shape().element_type())));
  }
  return fn;
}

// Sizes of an array split at `dimension`: outer = elements before it, inner = bytes of one
// outer slice.
struct Split {
  int64_t outer = 1, inner_bytes = 0;
};
Split SplitAt(const hlo::Shape& shape, int64_t dimension) {
  Split s;
  int64_t inner = 1;
  for (int64_t d = 0; d < shape.rank(); ++d) (d < dimension ? s.outer : inner) *= shape.dimensions()[d];
  s.inner_bytes = inner * hlo::ByteSizeOfPrimitiveType(shape.element_type());
  return s;
}

class CollectiveKernel final : public Kernel {
 public:
  CollectiveKernel(const HloInstruction& instr, FoldFn fold) : instr_(instr), fold_(fold) {}
  std::string_view kind() const override { return "collective"; }

  absl::Status Run(absl::Span<const void* const> operands,
                   absl::Span<void* const> results) const override {
    CollectiveContext& ctx = Context();
    if (instr_.opcode() == HloOpcode::kPartitionId) {
      const uint32_t id = static_cast<uint32_t>(ctx.partition_id());
      std::memcpy(results[0], &id, sizeof(id));
      return absl::OkStatus();
    }
    const size_t n = operands.size();  // several for XLA's variadic collectives: one result each
    absl::Span<void* const> outs = results;
    if (hlo::IsAsyncCollectiveStart(instr_.opcode()) && instr_.opcode() != HloOpcode::kAllReduceStart) {
      // (operand, result), ((operand), result) or ((operands...), (results...)): the operand
      // leaves keep a copy of the inputs (XLA aliases them; the copy is the host's price for
      // running the pair).
      for (size_t i = 0; i < n; ++i) {
        std::memcpy(results[i], operands[i], hlo::ShapeUtil::ByteSizeOf(instr_.operand(static_cast<int64_t>(i))->shape()));
      }
      outs = results.subspan(n);
    }
    const HloOpcode op = hlo::SyncCollectiveOpcode(instr_.opcode());
    if (op == HloOpcode::kCollectivePermute) return Permute(ctx, operands[0], outs[0]);
    absl::StatusOr<std::vector<int64_t>> group = GroupOf(instr_, ctx);
    if (!group.ok()) return group.status();
    const int64_t rank = IndexIn(*group, ctx.partition_id());
    // One meeting for all the operands: each member publishes its table of operand buffers.
    if (op == HloOpcode::kAllToAll && instr_.dimensions().empty()) {
      // XLA's tuple all-to-all: result i is member i's operand `rank` (one per member).
      const int64_t bytes = hlo::ShapeUtil::ByteSizeOf(instr_.operand(0)->shape());
      return ctx.Exchange(instr_, *group, operands.data(), [&](absl::Span<const void* const> tables) {
        for (size_t i = 0; i < n; ++i) std::memcpy(outs[i], static_cast<const void* const*>(tables[i])[rank], bytes);
      });
    }
    absl::Status combined = absl::OkStatus();
    absl::Status met = ctx.Exchange(instr_, *group, operands.data(), [&](absl::Span<const void* const> tables) {
      std::vector<const void*> peers(tables.size());
      for (size_t i = 0; i < n && combined.ok(); ++i) {
        for (size_t p = 0; p < tables.size(); ++p) peers[p] = static_cast<const void* const*>(tables[p])[i];
        combined = Combine(op, instr_.operand(static_cast<int64_t>(i))->shape(), peers, rank, outs[i]);
      }
    });
    return met.ok() ? combined : met;
  }

 private:
  // One operand's part of the collective: `peers` holds every member's buffer of it (group
  // order), `out` this member's result.
  absl::Status Combine(HloOpcode op, const hlo::Shape& in_shape, absl::Span<const void* const> peers, int64_t rank,
                       void* out) const {
    const int64_t n = static_cast<int64_t>(peers.size());
    const int64_t elem = hlo::ByteSizeOfPrimitiveType(in_shape.element_type());
    switch (op) {
      case HloOpcode::kAllReduce:
        fold_(peers, 0, hlo::ShapeUtil::ElementsIn(in_shape), out);
        return absl::OkStatus();
      case HloOpcode::kAllGather: {
        const Split s = SplitAt(in_shape, instr_.collective_dimension());
        for (int64_t o = 0; o < s.outer; ++o) {
          for (int64_t j = 0; j < n; ++j) {
            std::memcpy(static_cast<char*>(out) + (o * n + j) * s.inner_bytes,
                        static_cast<const char*>(peers[j]) + o * s.inner_bytes, s.inner_bytes);
          }
        }
        return absl::OkStatus();
      }
      case HloOpcode::kReduceScatter: {
        const Split s = SplitAt(in_shape, instr_.collective_dimension());
        const int64_t block = s.inner_bytes / n / elem;  // elements of one member's block
        for (int64_t o = 0; o < s.outer; ++o) {
          fold_(peers, o * (s.inner_bytes / elem) + rank * block, block, static_cast<char*>(out) + o * block * elem);
        }
        return absl::OkStatus();
      }
      case HloOpcode::kAllToAll: {
        const Split s = SplitAt(in_shape, instr_.collective_dimension());
        const int64_t block = s.inner_bytes / n;  // bytes
        for (int64_t o = 0; o < s.outer; ++o) {
          for (int64_t i = 0; i < n; ++i) {
            std::memcpy(static_cast<char*>(out) + o * s.inner_bytes + i * block,
                        static_cast<const char*>(peers[i]) + o * s.inner_bytes + rank * block, block);
          }
        }
        return absl::OkStatus();
      }
      default:
        return absl::InternalError(StrCat("not a collective: ", hlo::HloOpcodeString(instr_.opcode())));
    }
  }

  // Every partition meets (sources and targets may be anyone); a partition that no pair
  // targets receives zeros, as XLA's collective-permute.
  absl::Status Permute(CollectiveContext& ctx, const void* in, void* out) const {
    const int64_t me = ctx.partition_id();
    std::vector<int64_t> all(ctx.num_partitions());
    for (int64_t i = 0; i < ctx.num_partitions(); ++i) all[i] = i;
    int64_t source = -1;
    for (const auto& [s, t] : instr_.source_target_pairs()) {
      if (s >= ctx.num_partitions() || t >= ctx.num_partitions()) {
        return absl::InvalidArgumentError(StrCat(
            "source_target_pairs=", hlo::SourceTargetPairsToString(instr_.source_target_pairs()),
            " name a partition of a ", ctx.num_partitions(), "-partition run", OneDeviceHint(ctx)));
      }
      if (t == me) source = s;
    }
    const int64_t bytes = hlo::ShapeUtil::ByteSizeOf(instr_.operand(0)->shape());
    return ctx.Exchange(instr_, all, in, [&](absl::Span<const void* const> peers) {
      if (source < 0) {
        std::memset(out, 0, bytes);
      } else {
        std::memcpy(out, peers[source], bytes);
      }
    });
  }

  const HloInstruction& instr_;
  FoldFn fold_;
};

// An asynchronous collective's done: its start did the exchange (the host runs it at once);
// the done forwards the result leaves of the start's value (its last ones).
class AsyncDoneKernel final : public Kernel {
 public:
  explicit AsyncDoneKernel(std::vector<int64_t> result_bytes) : result_bytes_(std::move(result_bytes)) {}
  std::string_view kind() const override { return "collective"; }
  absl::Status Run(absl::Span<const void* const> operands, absl::Span<void* const> results) const override {
    const size_t first = operands.size() - result_bytes_.size();
    for (size_t i = 0; i < result_bytes_.size(); ++i) std::memcpy(results[i], operands[first + i], result_bytes_[i]);
    return absl::OkStatus();
  }

 private:
  std::vector<int64_t> result_bytes_;
};

}  // namespace

ScopedCollectiveContext::ScopedCollectiveContext(CollectiveContext* context) : previous_(current_context) {
  current_context = context;
}
ScopedCollectiveContext::~ScopedCollectiveContext() { current_context = previous_; }

absl::StatusOr<std::unique_ptr<Kernel>> MakeCollectiveKernel(const HloInstruction& instr) {
  const HloOpcode op = instr.opcode();
  if (op != HloOpcode::kPartitionId && !hlo::IsCollectiveOpcode(op)) {
    return absl::UnimplementedError("not a collective");
  }
  if (hlo::IsAsyncCollectiveDone(op)) {
    // One array, or a tuple of arrays (a collective of several operands).
    std::vector<int64_t> bytes;
    if (instr.shape().IsArray()) {
      bytes.push_back(hlo::ShapeUtil::ByteSizeOf(instr.shape()));
    } else {
      for (const hlo::Shape& leaf : instr.shape().tuple_shapes()) bytes.push_back(hlo::ShapeUtil::ByteSizeOf(leaf));
    }
    return std::make_unique<AsyncDoneKernel>(std::move(bytes));
  }
  for (const HloInstruction* operand : instr.operands()) {
    if (!operand->shape().IsArray()) {
      return absl::InvalidArgumentError(StrCat(hlo::HloOpcodeString(op), " %", instr.name(), ": operand %",
                                               operand->name(), " is ", operand->shape().ToString(false),
                                               "; a collective takes arrays (several of them for a tuple result)"));
    }
  }
  FoldFn fold = nullptr;
  const HloOpcode sync = hlo::SyncCollectiveOpcode(op);
  if (sync == HloOpcode::kAllReduce || sync == HloOpcode::kReduceScatter) {
    absl::StatusOr<FoldFn> f = FoldFor(instr);
    if (!f.ok()) return f.status();
    fold = *f;
  }
  return std::make_unique<CollectiveKernel>(instr, fold);
}

}  // namespace jx::cpu::internal
