#include "jx/devices/tpu/ici_collective_timer.h"

#include <algorithm>
#include <exception>

#include "absl/hash/hash.h"
#include "jx/compiler/hlo/shape.h"
#include "jx/compiler/hlo/shape_inference.h"
#include "jx/core/str_util.h"
#include "jx/devices/interconnect/collective_cost.h"

namespace jx::tpu {
namespace {

using hlo::HloOpcode;

// Bytes of every operand together: a collective of several operands runs as one (one
// latency, their bytes together on the links), as XLA's combined collectives do.
int64_t OperandBytes(const hlo::HloInstruction& instr) {
  int64_t bytes = 0;
  for (const hlo::HloInstruction* operand : instr.operands()) bytes += hlo::ShapeUtil::ByteSizeOf(operand->shape());
  return bytes;
}

}  // namespace

IciCollectiveTimer::IciCollectiveTimer(const ici::Torus& torus, const std::vector<const TpuChip*>& chips)
    : torus_(torus) {
  for (const TpuChip* chip : chips) torus_index_.push_back(torus.ChipAt(chip->torus_coords()));
}

absl::StatusOr<std::shared_ptr<const CollectiveTiming>> IciCollectiveTimer::Shared(
    const hlo::HloInstruction& instr) const {
  // A collective-permute-start's sends are its pairs, as the synchronous one's: keyed by
  // the replica groups alone, permutes of equal bytes over different pairs shared a timing.
  const bool permute = hlo::SyncCollectiveOpcode(instr.opcode()) == HloOpcode::kCollectivePermute;
  static const hlo::ReplicaGroups kNoGroups;
  static const hlo::SourceTargetPairs kNoPairs;
  const hlo::ReplicaGroups& groups = permute ? kNoGroups : instr.replica_groups();
  const hlo::SourceTargetPairs& pairs = permute ? instr.source_target_pairs() : kNoPairs;
  const Key key{static_cast<int>(instr.opcode()), OperandBytes(instr), absl::HashOf(groups, pairs)};
  auto same = [&](const Timed& t) { return t.groups == groups && t.pairs == pairs; };
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (auto it = by_key_.find(key); it != by_key_.end()) {
      for (const Timed& t : it->second) {
        if (!same(t)) continue;
        timings_[instr.name()] = t.timing;
        return t.timing;
      }
    }
  }
  absl::StatusOr<CollectiveTiming> timing = Cost(instr);
  if (!timing.ok()) return timing.status();
  auto shared = std::make_shared<const CollectiveTiming>(*std::move(timing));
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<Timed>& timed = by_key_[key];
  if (std::none_of(timed.begin(), timed.end(), same)) timed.push_back({groups, pairs, shared});
  timings_[instr.name()] = shared;
  return shared;
}

absl::StatusOr<CollectiveTiming> IciCollectiveTimer::Time(const hlo::HloInstruction& instr) const {
  absl::StatusOr<std::shared_ptr<const CollectiveTiming>> timing = Shared(instr);
  if (!timing.ok()) return timing.status();
  return **timing;
}

absl::StatusOr<double> IciCollectiveTimer::Seconds(const hlo::HloInstruction& instr) const {
  absl::StatusOr<std::shared_ptr<const CollectiveTiming>> timing = Shared(instr);
  if (!timing.ok()) return timing.status();
  return (*timing)->seconds;
}

absl::StatusOr<CollectiveTiming> IciCollectiveTimer::Cost(const hlo::HloInstruction& instr) const {
  const int64_t n = static_cast<int64_t>(torus_index_.size());
  auto chip_of = [&](int64_t partition) -> absl::StatusOr<int64_t> {
    if (partition < 0 || partition >= n) {
      return absl::InvalidArgumentError(StrCat("%", instr.name(), " names partition ", partition, " of a program on ",
                                               n, " chips"));
    }
    return torus_index_[partition];
  };
  const int64_t operand_bytes = OperandBytes(instr);
  // A start runs its collective: its result is what its done gives (the second element of
  // the start's pair, or the start's value for all-reduce-start).
  const HloOpcode opcode = hlo::SyncCollectiveOpcode(instr.opcode());
  if (hlo::IsAsyncCollectiveDone(instr.opcode())) {
    return absl::InvalidArgumentError(StrCat("%", instr.name(), " waits for its start, which runs the collective"));
  }
  hlo::Shape result = instr.shape();
  if (hlo::IsAsyncCollectiveStart(instr.opcode())) {
    absl::StatusOr<hlo::Shape> done = hlo::ShapeInference::InferAsyncDoneShape(instr.opcode(), instr.shape());
    if (!done.ok()) return done.status();
    result = *std::move(done);
  }
  ici::CollectiveCost cost;
  try {
    if (opcode == HloOpcode::kCollectivePermute) {
      std::vector<std::pair<int64_t, int64_t>> pairs;
      for (const auto& [s, t] : instr.source_target_pairs()) {
        absl::StatusOr<int64_t> cs = chip_of(s), ct = chip_of(t);
        if (!cs.ok()) return cs.status();
        if (!ct.ok()) return ct.status();
        pairs.emplace_back(*cs, *ct);
      }
      cost = ici::CostPermute(torus_, pairs, operand_bytes);
    } else {
      std::vector<std::vector<int64_t>> groups;
      if (instr.replica_groups().empty()) {
        groups.push_back(torus_index_);
      } else {
        for (const std::vector<int64_t>& g : instr.replica_groups()) {
          std::vector<int64_t>& chips = groups.emplace_back();
          for (int64_t p : g) {
            absl::StatusOr<int64_t> c = chip_of(p);
            if (!c.ok()) return c.status();
            chips.push_back(*c);
          }
        }
      }
      const int64_t group_size = static_cast<int64_t>(groups.front().size());
      ici::CollectiveKind kind;
      int64_t bytes = operand_bytes;  // V: the full array of one group
      switch (opcode) {
        case HloOpcode::kAllReduce: kind = ici::CollectiveKind::kAllReduce; break;
        case HloOpcode::kAllGather:
          kind = ici::CollectiveKind::kAllGather;
          bytes = hlo::ShapeUtil::ByteSizeOf(result);
          break;
        case HloOpcode::kReduceScatter: kind = ici::CollectiveKind::kReduceScatter; break;
        case HloOpcode::kAllToAll:
          kind = ici::CollectiveKind::kAllToAll;
          bytes = operand_bytes * group_size;
          break;
        default:
          return absl::InvalidArgumentError(StrCat("%", instr.name(), " is not a collective"));
      }
      cost = ici::CostCollective(torus_, kind, groups, bytes);
    }
  } catch (const std::exception& e) {
    return absl::InvalidArgumentError(StrCat("%", instr.name(), ": ", e.what()));
  }
  CollectiveTiming timing;
  timing.seconds = cost.seconds;
  timing.algorithm = cost.algorithm;
  for (const ici::LinkBytes& l : cost.link_bytes) timing.link_bytes.emplace_back(l.link, l.bytes);
  return timing;
}

std::map<std::string, CollectiveTiming> IciCollectiveTimer::timings() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::map<std::string, CollectiveTiming> out;
  for (const auto& [name, t] : timings_) out.emplace(name, *t);
  return out;
}

std::map<std::string, std::shared_ptr<const CollectiveTiming>> IciCollectiveTimer::shared_timings() const {
  std::lock_guard<std::mutex> lock(mu_);
  return timings_;
}

}  // namespace jx::tpu
