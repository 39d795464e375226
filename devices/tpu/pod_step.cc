#include "jx/devices/tpu/pod_step.h"

#include <algorithm>
#include <functional>
#include <map>
#include <optional>
#include <utility>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/hash/hash.h"
#include "absl/strings/str_format.h"
#include "jx/compiler/analysis/hlo_cost_analysis.h"
#include "jx/compiler/backend/tpu/tpu_cost_model.h"
#include "jx/compiler/hlo/shape_inference.h"
#include "jx/devices/tpu/step_communication.h"

namespace jx::tpu {

namespace {

// The partners of a collective: its replica groups (every partition for {}), or for a
// collective-permute each pair that moves data.
PartnerGroups::Lists PartnersOf(const hlo::HloInstruction& instr, int64_t num_partitions) {
  if (hlo::SyncCollectiveOpcode(instr.opcode()) == hlo::HloOpcode::kCollectivePermute) {
    std::vector<std::vector<int64_t>> pairs;
    for (const auto& [s, t] : instr.source_target_pairs()) {
      if (s != t) pairs.push_back({s, t});
    }
    return pairs;
  }
  std::vector<std::vector<int64_t>> groups = instr.replica_groups();
  if (groups.empty()) {
    groups.emplace_back();
    for (int64_t p = 0; p < num_partitions; ++p) groups.back().push_back(p);
  }
  std::erase_if(groups, [](const std::vector<int64_t>& g) { return g.size() < 2; });
  return groups;
}

// The partner lists of a module's collectives, one per distinct list: collectives with equal
// groups (or pairs) get one shared PartnerGroups. Found by a hash of the instruction's groups
// or pairs and told apart by comparing them with the first instruction that had them (the
// module outlives the memo), so no list is copied twice.
class PartnersMemo {
 public:
  explicit PartnersMemo(int64_t num_partitions) : num_partitions_(num_partitions) {}

  PartnerGroups Of(const hlo::HloInstruction& instr) {
    const bool permute = hlo::SyncCollectiveOpcode(instr.opcode()) == hlo::HloOpcode::kCollectivePermute;
    const size_t hash = permute ? absl::HashOf(true, instr.source_target_pairs())
                                : absl::HashOf(false, instr.replica_groups());
    std::vector<Seen>& bucket = by_hash_[hash];
    for (const Seen& seen : bucket) {
      if (permute ? seen.permute && seen.instr->source_target_pairs() == instr.source_target_pairs()
                  : !seen.permute && seen.instr->replica_groups() == instr.replica_groups()) {
        return seen.groups;
      }
    }
    bucket.push_back({&instr, permute, PartnerGroups(PartnersOf(instr, num_partitions_))});
    return bucket.back().groups;
  }

 private:
  struct Seen {
    const hlo::HloInstruction* instr;
    bool permute;
    PartnerGroups groups;
  };
  const int64_t num_partitions_;
  absl::flat_hash_map<size_t, std::vector<Seen>> by_hash_;
};

// Whether a computation (or one it calls, fusions aside) holds a collective.
bool HasCollectives(const hlo::HloComputation& computation) {
  for (const hlo::HloInstruction* instr : computation.instructions()) {
    if (hlo::IsCollectiveOpcode(instr->opcode())) return true;
    if (instr->opcode() == hlo::HloOpcode::kFusion) continue;
    for (const hlo::HloComputation* callee : instr->called_computations()) {
      if (callee != nullptr && HasCollectives(*callee)) return true;
    }
  }
  return false;
}

absl::StatusOr<std::shared_ptr<PodStepLoop>> LoopOf(const hlo::HloComputation& body, int64_t trips,
                                                    int64_t num_partitions, const TpuChipSpec& spec,
                                                    const CollectiveTimer* timer, PartnersMemo& partners);

// The rows of one computation, for its cost rows.
absl::StatusOr<std::vector<PodStepRow>> RowsOf(const hlo::HloComputation& computation,
                                               absl::Span<const InstructionCost> costs, int64_t num_partitions,
                                               const TpuChipSpec& spec, const CollectiveTimer* timer,
                                               PartnersMemo& partners) {
  std::map<std::string, const hlo::HloInstruction*, std::less<>> by_name;
  for (const hlo::HloInstruction* instr : computation.instructions()) by_name[instr->name()] = instr;
  std::map<std::string, int64_t, std::less<>> row_of;
  std::vector<PodStepRow> rows(costs.size());
  for (size_t i = 0; i < costs.size(); ++i) {
    row_of[costs[i].name] = static_cast<int64_t>(i);
    auto it = by_name.find(costs[i].name);
    if (it == by_name.end()) continue;
    const hlo::HloInstruction& instr = *it->second;
    const hlo::HloOpcode op = instr.opcode();
    if (hlo::IsAsyncCollectiveDone(op)) {
      auto start = row_of.find(instr.operand(0)->name());
      if (start != row_of.end()) rows[i].start_row = start->second;
    } else if (hlo::IsCollectiveOpcode(op)) {
      rows[i].groups = partners.Of(instr);
      rows[i].async_start = hlo::IsAsyncCollectiveStart(op);
    } else if (op == hlo::HloOpcode::kWhile && instr.while_body() != nullptr && HasCollectives(*instr.while_body())) {
      // Without a known trip count the loop's row stands (the cost model counts one trip).
      const std::optional<int64_t> trips = hlo::ConstantWhileTripCount(instr);
      if (!trips.has_value()) continue;
      absl::StatusOr<std::shared_ptr<PodStepLoop>> loop =
          LoopOf(*instr.while_body(), *trips, num_partitions, spec, timer, partners);
      if (!loop.ok()) return loop.status();
      rows[i].loop = *std::move(loop);
    } else if (op == hlo::HloOpcode::kConditional) {
      // The branch the cost model charges (the costliest) runs once, its collectives
      // synchronized; a branch without collectives leaves the conditional's row as it is.
      const hlo::HloComputation* costliest = nullptr;
      std::shared_ptr<PodStepLoop> chosen;
      double most = -1;
      for (const hlo::HloComputation* branch : instr.branch_computations()) {
        if (branch == nullptr) continue;
        absl::StatusOr<std::shared_ptr<PodStepLoop>> once = LoopOf(*branch, 1, num_partitions, spec, timer, partners);
        if (!once.ok()) return once.status();
        double seconds = 0;
        for (const InstructionCost& c : (*once)->costs) seconds += c.seconds;
        if (seconds > most) {
          most = seconds;
          costliest = branch;
          chosen = *std::move(once);
        }
      }
      if (costliest != nullptr && HasCollectives(*costliest)) rows[i].loop = std::move(chosen);
    }
  }
  return rows;
}

absl::StatusOr<std::shared_ptr<PodStepLoop>> LoopOf(const hlo::HloComputation& body, int64_t trips,
                                                    int64_t num_partitions, const TpuChipSpec& spec,
                                                    const CollectiveTimer* timer, PartnersMemo& partners) {
  auto loop = std::make_shared<PodStepLoop>();
  loop->trips = trips;
  absl::StatusOr<std::vector<InstructionCost>> costs = TpuInstructionCosts(body, spec, timer);
  if (!costs.ok()) return costs.status();
  loop->costs = *std::move(costs);
  absl::StatusOr<std::vector<PodStepRow>> rows = RowsOf(body, loop->costs, num_partitions, spec, timer, partners);
  if (!rows.ok()) return rows.status();
  loop->rows = *std::move(rows);
  return loop;
}

// Lays out rows on every chip's lanes (see the header): one instance per step.
class PodStepScheduler {
 public:
  PodStepScheduler(absl::Span<const double> starts, double scale, double hbm_bandwidth)
      : n_(starts.size()), scale_(scale), hbm_bandwidth_(hbm_bandwidth), t_(starts.begin(), starts.end()),
        ici_(starts.begin(), starts.end()) {
    out_.chips.resize(n_);
    out_.idle_seconds.assign(n_, 0);
    out_.exposed_seconds.assign(n_, 0);
  }

  void Run(absl::Span<const InstructionCost> costs, absl::Span<const PodStepRow> rows) {
    const PodStepRow no_row;
    for (size_t i = 0; i < costs.size(); ++i) {
      const PodStepRow& info = i < rows.size() ? rows[i] : no_row;
      if (info.loop != nullptr) {
        for (int64_t trip = 0; trip < info.loop->trips; ++trip) Run(info.loop->costs, info.loop->rows);
      } else if (info.start_row >= 0) {
        Done(&costs[info.start_row]);
      } else {
        Place(costs[i], info);
      }
    }
  }

  PodTimelines Finish(absl::Span<const double> starts) {
    for (size_t p = 0; p < n_; ++p) {
      out_.chips[p].start_seconds = starts[p];
      out_.chips[p].seconds = std::max(t_[p], ici_[p]) - starts[p];
    }
    return std::move(out_);
  }

 private:
  // Each chip that took part in the start waits for the collective's end.
  void Done(const InstructionCost* start) {
    auto in_flight = in_flight_.find(start);
    if (in_flight == in_flight_.end()) return;  // the start moved nothing between chips
    const auto& [begin, end] = in_flight->second;
    double exposed = 0;
    for (size_t q = 0; q < n_; ++q) {
      if (end[q] <= t_[q]) continue;  // hidden, or the chip took no part
      const double comm = end[q] - std::max(t_[q], begin[q]);
      out_.idle_seconds[q] += std::max(0.0, begin[q] - t_[q]);
      out_.exposed_seconds[q] += comm;
      exposed = std::max(exposed, comm);
      t_[q] = end[q];
    }
    out_.collectives[run_of_.at(start)].exposed_seconds += exposed;
    in_flight_.erase(in_flight);
  }

  void Place(const InstructionCost& row, const PodStepRow& info) {
    const std::string_view lane = LaneOfUnit(row.unit);
    const double seconds = row.seconds * scale_;
    if (lane.empty() || seconds <= 0) return;
    if (info.groups.empty()) {
      Compute(row, lane, seconds);
      return;
    }
    // Each chip begins when its partners have arrived and their ICI lanes are free.
    std::vector<double> arrive(n_), begin(n_, -1), end(n_, 0);
    for (size_t q = 0; q < n_; ++q) arrive[q] = std::max(t_[q], ici_[q]);
    for (const std::vector<int64_t>& group : info.groups) {
      double b = 0;
      for (int64_t q : group) b = std::max(b, arrive[q]);
      for (int64_t q : group) begin[q] = std::max(begin[q], b);
    }
    auto [it, fresh] = run_of_.emplace(&row, out_.collectives.size());
    if (fresh) out_.collectives.push_back({.row = &row});
    CollectiveRun& run = out_.collectives[it->second];
    ++run.runs;
    run.seconds += seconds;
    for (size_t q = 0; q < n_; ++q) {
      if (begin[q] < 0) continue;  // a chip in no group skips the collective
      out_.chips[q].instructions.push_back({row.name, std::string(lane), begin[q], seconds, &row});
      *BusySecondsOf(out_.chips[q].busy, lane) += seconds;
      end[q] = ici_[q] = begin[q] + seconds;
      if (!info.async_start) {
        out_.idle_seconds[q] += begin[q] - t_[q];
        out_.exposed_seconds[q] += seconds;
        t_[q] = end[q];
      }
    }
    if (info.async_start) {
      in_flight_[&row] = {std::move(begin), std::move(end)};
    } else {
      run.exposed_seconds += seconds;
    }
  }

  void Compute(const InstructionCost& row, std::string_view lane, double seconds) {
    for (size_t p = 0; p < n_; ++p) {
      StepTimeline& chip = out_.chips[p];
      chip.instructions.push_back({row.name, std::string(lane), t_[p], seconds, &row});
      *BusySecondsOf(chip.busy, lane) += seconds;
      if (lane != "DMA" && row.bytes > 0 && hbm_bandwidth_ > 0) {
        const double transfer = std::min(row.bytes / hbm_bandwidth_ * scale_, seconds);
        chip.instructions.push_back({row.name, "DMA", t_[p], transfer, &row});
        chip.busy.dma += transfer;
      }
      t_[p] += seconds;
    }
  }

  const size_t n_;
  const double scale_, hbm_bandwidth_;
  std::vector<double> t_;    // where each chip's program stands
  std::vector<double> ici_;  // when each chip's ICI lane is free
  PodTimelines out_;
  std::map<const InstructionCost*, size_t> run_of_;  // a collective's entry in out_.collectives
  // Started collectives: per chip, when each began and ends.
  std::map<const InstructionCost*, std::pair<std::vector<double>, std::vector<double>>> in_flight_;
};

}  // namespace

const PartnerGroups::Lists& PartnerGroups::lists() const {
  static const Lists kNone;
  return lists_ == nullptr ? kNone : *lists_;
}

absl::StatusOr<std::vector<PodStepRow>> PodStepRowsOf(const hlo::HloModule& module, const CostAnalysis& cost,
                                                      int64_t num_partitions, const TpuChipSpec& spec,
                                                      const CollectiveTimer* timer) {
  PartnersMemo partners(num_partitions);
  return RowsOf(*module.entry_computation(), cost.instructions, num_partitions, spec, timer, partners);
}

PodTimelines SchedulePodStep(const CostAnalysis& cost, absl::Span<const PodStepRow> rows,
                             absl::Span<const double> starts, double hbm_bandwidth) {
  // As ScheduleStep: rows that add up past the predicted time are scaled into it.
  double total = 0;
  for (const InstructionCost& row : cost.instructions) {
    if (!LaneOfUnit(row.unit).empty()) total += row.seconds;
  }
  const double scale = total > cost.predicted_seconds && total > 0 ? cost.predicted_seconds / total : 1.0;
  PodStepScheduler scheduler(starts, scale, hbm_bandwidth);
  scheduler.Run(cost.instructions, rows);
  return scheduler.Finish(starts);
}

ChipStepReport ChipStepReportOf(const PodTimelines& step, size_t partition, std::string chip) {
  const StepTimeline& t = step.chips[partition];
  ChipStepReport c;
  c.chip = std::move(chip);
  c.start_seconds = t.start_seconds;
  c.end_seconds = t.start_seconds + t.seconds;
  c.communication_seconds = t.busy.ici;
  c.exposed_communication_seconds = step.exposed_seconds[partition];
  c.idle_seconds = step.idle_seconds[partition];
  c.compute_seconds = t.seconds - c.exposed_communication_seconds - c.idle_seconds;
  return c;
}

void AddCollectivesAndLinks(const PodTimelines& step, const hlo::HloModule& module,
                            absl::FunctionRef<const CollectiveTiming*(std::string_view)> timing_of,
                            absl::FunctionRef<std::string(int64_t)> describe_link, StepReport* report) {
  // Collectives by name, loop bodies' and branches' included.
  std::map<std::string, const hlo::HloInstruction*, std::less<>> collectives;
  for (const hlo::HloComputation* computation : module.computations()) {
    if (computation->IsFusionComputation()) continue;
    for (const hlo::HloInstruction* instr : computation->instructions()) {
      if (hlo::IsCollectiveOpcode(instr->opcode())) collectives.emplace(instr->name(), instr);
    }
  }
  // A link carries its collectives' bytes and is busy (and exposed) for as long as they are.
  // Equal collectives share one timing (IciCollectiveTimer), so their runs are summed per
  // timing first and each timing's links (thousands on a pod) are walked once.
  // (In the order they first appear, so sums do not depend on addresses.)
  struct TimingUse {
    const CollectiveTiming* timing = nullptr;
    int64_t runs = 0;
    double seconds = 0, exposed_seconds = 0;
  };
  std::vector<TimingUse> uses;
  std::map<const CollectiveTiming*, size_t> use_of;
  for (const CollectiveRun& run : step.collectives) {
    const InstructionCost& row = *run.row;
    CollectiveStepEntry entry;
    entry.name = row.name;
    entry.runs = run.runs;
    entry.seconds = run.seconds;
    entry.exposed_seconds = run.exposed_seconds;
    if (auto it = collectives.find(row.name); it != collectives.end()) {
      const hlo::HloInstruction& instr = *it->second;
      entry.kind = std::string(hlo::HloOpcodeString(hlo::SyncCollectiveOpcode(instr.opcode())));
      // A start's result is what its done gives (of several operands, every result).
      absl::StatusOr<hlo::Shape> result = hlo::IsAsyncCollectiveStart(instr.opcode())
                                              ? hlo::ShapeInference::InferAsyncDoneShape(instr.opcode(), instr.shape())
                                              : absl::StatusOr<hlo::Shape>(instr.shape());
      if (result.ok()) entry.bytes = hlo::ShapeUtil::ByteSizeOf(*result);
    }
    if (const CollectiveTiming* timing = timing_of(row.name)) {
      entry.algorithm = timing->algorithm;
      auto [it, fresh] = use_of.emplace(timing, uses.size());
      if (fresh) uses.push_back({.timing = timing});
      TimingUse& use = uses[it->second];
      use.runs += run.runs;
      use.seconds += run.seconds;
      use.exposed_seconds += run.exposed_seconds;
    }
    report->collectives.push_back(std::move(entry));
  }
  int64_t num_links = 0;
  for (const TimingUse& use : uses) {
    for (const auto& [link, bytes] : use.timing->link_bytes) num_links = std::max(num_links, link + 1);
  }
  std::vector<LinkTraffic> links(static_cast<size_t>(num_links));
  std::vector<bool> used(static_cast<size_t>(num_links), false);
  for (const TimingUse& use : uses) {
    for (const auto& [link, bytes] : use.timing->link_bytes) {
      LinkTraffic& l = links[static_cast<size_t>(link)];
      used[static_cast<size_t>(link)] = true;
      l.bytes += bytes * use.runs;
      l.busy_seconds += use.seconds;
      l.exposed_seconds += use.exposed_seconds;
    }
  }
  for (size_t link = 0; link < links.size(); ++link) {
    if (!used[link]) continue;
    links[link].link = describe_link(static_cast<int64_t>(link));
    report->links.push_back(std::move(links[link]));
  }
  std::stable_sort(report->links.begin(), report->links.end(),
                   [](const LinkTraffic& a, const LinkTraffic& b) { return a.bytes > b.bytes; });
}

int64_t StepReport::total_link_bytes() const {
  int64_t total = 0;
  for (const LinkTraffic& l : links) total += l.bytes;
  return total;
}

double StepReport::communication_seconds() const {
  double total = 0;
  for (const CollectiveStepEntry& c : collectives) total += c.seconds;
  return total;
}

double StepReport::exposed_communication_seconds() const {
  double total = 0;
  for (const CollectiveStepEntry& c : collectives) total += c.exposed_seconds;
  return total;
}

std::string StepReport::ToString() const {
  std::string out = absl::StrFormat("%s: step %.3f us on %d devices (slowest device), %d bytes over ICI links\n", what,
                                    wall_seconds * 1e6, static_cast<int>(chips.size()), total_link_bytes());
  size_t w = 4;
  for (const ChipStepReport& c : chips) w = std::max(w, c.chip.size());
  const int width = static_cast<int>(w);
  absl::StrAppendFormat(&out, "%-*s %12s %12s %12s %12s %12s %14s\n", width, "device", "total(us)", "compute(us)",
                        "comm(us)", "exposed(us)", "idle(us)", "hbm peak(B)");
  for (const ChipStepReport& c : chips) {
    absl::StrAppendFormat(&out, "%-*s %12.3f %12.3f %12.3f %12.3f %12.3f %14d\n", width, c.chip,
                          (c.end_seconds - c.start_seconds) * 1e6, c.compute_seconds * 1e6,
                          c.communication_seconds * 1e6, c.exposed_communication_seconds * 1e6, c.idle_seconds * 1e6,
                          c.hbm_high_water_bytes);
  }
  if (!collectives.empty()) {
    absl::StrAppendFormat(&out, "communication %.3f us: exposed %.3f us, overlapped %.3f us\n",
                          communication_seconds() * 1e6, exposed_communication_seconds() * 1e6,
                          overlapped_communication_seconds() * 1e6);
    for (const CollectiveKindTotals& k : CommunicationByKind(*this)) {
      absl::StrAppendFormat(&out, "  %s: %d collective%s, %d run%s: %.3f us, exposed %.3f us, overlapped %.3f us\n",
                            k.kind, k.collectives, k.collectives == 1 ? "" : "s", k.runs, k.runs == 1 ? "" : "s",
                            k.seconds * 1e6, k.exposed_seconds * 1e6, k.overlapped_seconds() * 1e6);
    }
    for (const CollectiveStepEntry& c : collectives) {
      absl::StrAppendFormat(&out, "  %s (%s, %d run%s, %d bytes): %.3f us, exposed %.3f us, overlapped %.3f us%s%s\n",
                            c.name, c.kind, c.runs, c.runs == 1 ? "" : "s", c.bytes, c.seconds * 1e6,
                            c.exposed_seconds * 1e6, (c.seconds - c.exposed_seconds) * 1e6,
                            c.algorithm.empty() ? "" : "; ", c.algorithm);
    }
  }
  const size_t shown = std::min<size_t>(links.size(), 8);
  for (size_t i = 0; i < shown; ++i) {
    absl::StrAppendFormat(&out, "  link %s: %d bytes, busy %.3f us, exposed %.3f us\n", links[i].link, links[i].bytes,
                          links[i].busy_seconds * 1e6, links[i].exposed_seconds * 1e6);
  }
  if (links.size() > shown) absl::StrAppendFormat(&out, "  ... %d more links\n", static_cast<int>(links.size() - shown));
  return out;
}

}  // namespace jx::tpu
