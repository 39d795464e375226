// The collective kernels: all-reduce, all-gather, reduce-scatter, all-to-all,
// collective-permute and partition-id (and the asynchronous start/done pairs: a start runs
// its collective, a done forwards the result), on the run's CollectiveContext (the partition this run
// is and the rendezvous with the others). Data moves between the partitions' own buffers: a
// member reads every peer's operand during the exchange and writes only its own result.
// Reductions fold the members in group order, so every member computes the same bits.
#include <cstring>
#include <string>
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
    void* out = results[0];
    if (instr_.opcode() == HloOpcode::kPartitionId) {
      const uint32_t id = static_cast<uint32_t>(ctx.partition_id());
      std::memcpy(out, &id, sizeof(id));
      return absl::OkStatus();
    }
    const void* in = operands[0];
    const HloOpcode op = hlo::SyncCollectiveOpcode(instr_.opcode());
    if (hlo::IsAsyncCollectiveStart(instr_.opcode()) && instr_.opcode() != HloOpcode::kAllReduceStart) {
      // (operand, result) or ((operand), result): the operand leaf keeps a copy of the input
      // (XLA aliases it; the copy is the host's price for running the pair).
      std::memcpy(results[0], in, hlo::ShapeUtil::ByteSizeOf(instr_.operand(0)->shape()));
      out = results[1];
    }
    if (op == HloOpcode::kCollectivePermute) return Permute(ctx, in, out);
    absl::StatusOr<std::vector<int64_t>> group = GroupOf(instr_, ctx);
    if (!group.ok()) return group.status();
    const int64_t n = static_cast<int64_t>(group->size());
    const int64_t rank = IndexIn(*group, ctx.partition_id());
    const hlo::Shape& in_shape = instr_.operand(0)->shape();
    const int64_t elem = hlo::ByteSizeOfPrimitiveType(in_shape.element_type());
    switch (op) {
      case HloOpcode::kAllReduce: {
        const int64_t count = hlo::ShapeUtil::ElementsIn(in_shape);
        return ctx.Exchange(instr_, *group, in, [&](absl::Span<const void* const> peers) {
          fold_(peers, 0, count, out);
        });
      }
      case HloOpcode::kAllGather: {
        const Split s = SplitAt(in_shape, instr_.collective_dimension());
        return ctx.Exchange(instr_, *group, in, [&](absl::Span<const void* const> peers) {
          for (int64_t o = 0; o < s.outer; ++o) {
            for (int64_t j = 0; j < n; ++j) {
              std::memcpy(static_cast<char*>(out) + (o * n + j) * s.inner_bytes,
                          static_cast<const char*>(peers[j]) + o * s.inner_bytes, s.inner_bytes);
            }
          }
        });
      }
      case HloOpcode::kReduceScatter: {
        const Split s = SplitAt(in_shape, instr_.collective_dimension());
        const int64_t block = s.inner_bytes / n / elem;  // elements of one member's block
        return ctx.Exchange(instr_, *group, in, [&](absl::Span<const void* const> peers) {
          for (int64_t o = 0; o < s.outer; ++o) {
            fold_(peers, o * (s.inner_bytes / elem) + rank * block, block,
                  static_cast<char*>(out) + o * block * elem);
          }
        });
      }
      case HloOpcode::kAllToAll: {
        const Split s = SplitAt(in_shape, instr_.collective_dimension());
        const int64_t block = s.inner_bytes / n;  // bytes
        return ctx.Exchange(instr_, *group, in, [&](absl::Span<const void* const> peers) {
          for (int64_t o = 0; o < s.outer; ++o) {
            for (int64_t i = 0; i < n; ++i) {
              std::memcpy(static_cast<char*>(out) + o * s.inner_bytes + i * block,
                          static_cast<const char*>(peers[i]) + o * s.inner_bytes + rank * block, block);
            }
          }
        });
      }
      default:
        return absl::InternalError(StrCat("not a collective: ", hlo::HloOpcodeString(instr_.opcode())));
    }
  }

 private:
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
// the done forwards the result leaf of the start's value.
class AsyncDoneKernel final : public Kernel {
 public:
  explicit AsyncDoneKernel(int64_t bytes) : bytes_(bytes) {}
  std::string_view kind() const override { return "collective"; }
  absl::Status Run(absl::Span<const void* const> operands, absl::Span<void* const> results) const override {
    // The start's leaves: the result is the last one.
    std::memcpy(results[0], operands.back(), bytes_);
    return absl::OkStatus();
  }

 private:
  int64_t bytes_;
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
    if (!instr.shape().IsArray()) {
      return absl::UnimplementedError("collectives of tuples are not supported; one array per collective");
    }
    return std::make_unique<AsyncDoneKernel>(hlo::ShapeUtil::ByteSizeOf(instr.shape()));
  }
  if (op != HloOpcode::kPartitionId && !instr.operand(0)->shape().IsArray()) {
    return absl::UnimplementedError("collectives of tuples are not supported; one array per collective");
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
