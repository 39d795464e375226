#include "jx/compiler/backend/tpu/reduce_scatter_hoist_pricing.h"

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "jx/compiler/backend/tpu/tpu_cost_model.h"
#include "jx/compiler/backend/tpu/tpu_pipeline.h"
#include "jx/compiler/hlo/hlo_module.h"
#include "jx/compiler/hlo/status_macros.h"

namespace jx::tpu {
namespace {

using hlo::HloInstruction;
using hlo::HloOpcode;

// Where a reduce-scatter was in the program as written: its computation's and its own name
// (a copy keeps both).
std::string Key(const HloInstruction& reduce_scatter) {
  return absl::StrCat(reduce_scatter.parent()->name(), "/", reduce_scatter.name());
}

// One computation of the compiled copy, replayed in its order on the latency-hiding
// scheduler's clock (latency_hiding_scheduler.cc): compute advances it; a collective's transfer
// begins when the clock and the interconnect are both free; a done waits for its transfer's
// end; a synchronous collective holds the chip until it ends.
class Replay {
 public:
  Replay(std::vector<const HloInstruction*> order, std::vector<double> seconds)
      : order_(std::move(order)), seconds_(std::move(seconds)), start_of_(order_.size(), -1) {
    absl::flat_hash_map<const HloInstruction*, int64_t> position;
    for (size_t i = 0; i < order_.size(); ++i) position[order_[i]] = static_cast<int64_t>(i);
    for (size_t i = 0; i < order_.size(); ++i) {
      if (hlo::IsAsyncCollectiveDone(order_[i]->opcode())) start_of_[i] = position.at(order_[i]->operand(0));
    }
    now_ = Seconds(gone_, added_);
  }

  // The clock at the end of the order with the collectives at positions `gone` left out and
  // `added` seconds of compute at positions.
  double Seconds(const absl::flat_hash_set<int64_t>& gone, const absl::flat_hash_map<int64_t, double>& added) const {
    double now = 0, interconnect_free = 0;
    std::vector<double> end(order_.size(), 0);
    for (size_t k = 0; k < order_.size(); ++k) {
      const auto i = static_cast<int64_t>(k);
      if (auto it = added.find(i); it != added.end()) now += it->second;
      const HloOpcode op = order_[k]->opcode();
      const bool start = hlo::IsAsyncCollectiveStart(op);
      if (start || hlo::AsyncStartOpcode(op).has_value()) {  // a start, or a synchronous collective
        if (gone.contains(i)) continue;
        interconnect_free = std::max(now, interconnect_free) + seconds_[k];
        end[k] = interconnect_free;
        if (!start) now = end[k];
      } else if (start_of_[k] >= 0) {
        if (!gone.contains(start_of_[k])) now = std::max(now, end[static_cast<size_t>(start_of_[k])]);
      } else {
        now += seconds_[k];
      }
    }
    return now;
  }

  // Seconds the replay loses when the collective at `collective` goes and `add` seconds of
  // compute come at `at`, beside the ones taken before.
  double Saved(int64_t collective, int64_t at, double add) const {
    absl::flat_hash_set<int64_t> gone = gone_;
    gone.insert(collective);
    absl::flat_hash_map<int64_t, double> added = added_;
    added[at] += add;
    return now_ - Seconds(gone, added);
  }

  void Take(int64_t collective, int64_t at, double add) {
    gone_.insert(collective);
    added_[at] += add;
    now_ = Seconds(gone_, added_);
  }

 private:
  std::vector<const HloInstruction*> order_;
  std::vector<double> seconds_;  // compute: its time; a start or a synchronous collective: its transfer's
  std::vector<int64_t> start_of_;  // a done's start's position; -1 for the rest
  absl::flat_hash_set<int64_t> gone_;
  absl::flat_hash_map<int64_t, double> added_;
  double now_ = 0;  // the replay with the hoists taken
};

// A reduce-scatter of the program as written, in the compiled copy: its computation's replay,
// its collective's position (the start, or the synchronous collective) and its done's.
struct Located {
  const hlo::HloComputation* computation = nullptr;
  int64_t collective = 0;
  int64_t done = 0;
};

class ScheduleReplayPricing final : public hlo::ReduceScatterPricing {
 public:
  ScheduleReplayPricing(std::unique_ptr<hlo::HloModule> compiled, absl::flat_hash_map<std::string, Located> located,
                        const TpuTargetOptions& options)
      : compiled_(std::move(compiled)),
        located_(std::move(located)),
        model_(*options.chip, options.collective_timer),
        timer_(options.collective_timer),
        hbm_bandwidth_(options.chip->hbm_bandwidth) {}

  absl::StatusOr<double> Savings(const HloInstruction& reduce_scatter, const hlo::ReduceScatterHoist& h) override {
    if (h.trips < 0 || h.reduced_bytes <= 0) return 0.0;  // nothing known to save
    auto it = located_.find(Key(reduce_scatter));
    if (it == located_.end()) return 0.0;  // made after the copy: its exposure is unknown
    const Located& at = it->second;
    const double per_run = ReplayOf(*at.computation).Saved(at.collective, at.done, BiggerAdd(h));
    if (h.loop.empty()) return per_run;  // an unrolled pair: one run fewer, one bigger add
    HLO_ASSIGN_OR_RETURN(const double run, timer_->Seconds(reduce_scatter));
    // The reduce-scatter after the loop reduces the whole accumulator: as many of the loop's
    // runs as it holds blocks (one for a plain sum, one per row for a stack of rows).
    const double after = run * static_cast<double>(h.accumulator_bytes) / static_cast<double>(h.reduced_bytes);
    // And the loop starts each step from full-size zeros, written at the HBM bandwidth.
    const double zeros = static_cast<double>(h.hoisted_bytes) / hbm_bandwidth_;
    return static_cast<double>(h.trips) * per_run - after - zeros;
  }

  absl::Status Take(const HloInstruction& reduce_scatter, const hlo::ReduceScatterHoist& h) override {
    auto it = located_.find(Key(reduce_scatter));
    if (it == located_.end()) return absl::OkStatus();
    ReplayOf(*it->second.computation).Take(it->second.collective, it->second.done, BiggerAdd(h));
    return absl::OkStatus();
  }

 private:
  // Hoisted, a trip's add (an unrolled pair's one add) reads the accumulator and the value and
  // writes the sum at the full size instead of the block's.
  double BiggerAdd(const hlo::ReduceScatterHoist& h) const {
    return 3.0 * static_cast<double>(h.extra_bytes()) / hbm_bandwidth_;
  }

  Replay& ReplayOf(const hlo::HloComputation& computation) {
    auto it = replays_.find(&computation);
    if (it != replays_.end()) return it->second;
    std::vector<const HloInstruction*> order;
    std::vector<double> seconds;
    for (const HloInstruction* instr : computation.MakeSequentialOrder()) {
      order.push_back(instr);
      seconds.push_back(model_.Cost(*instr).target.seconds);
    }
    return replays_.try_emplace(&computation, std::move(order), std::move(seconds)).first->second;
  }

  std::unique_ptr<hlo::HloModule> compiled_;
  absl::flat_hash_map<std::string, Located> located_;
  TpuCostModel model_;
  const CollectiveTimer* timer_;
  double hbm_bandwidth_;
  absl::flat_hash_map<const hlo::HloComputation*, Replay> replays_;
};

// A copy of `module` compiled for the chip, and where each of its reduce-scatters went. The
// copy's reduce-scatters get channel ids of their own first, which their starts keep.
absl::StatusOr<std::unique_ptr<hlo::ReduceScatterPricing>> Price(const hlo::HloModule& module,
                                                                 const TpuTargetOptions& options) {
  if (!options.chip.has_value() || options.collective_timer == nullptr) {
    return absl::InvalidArgumentError("reduce-scatter hoist pricing needs a chip and a collective timer");
  }
  HLO_ASSIGN_OR_RETURN(std::unique_ptr<hlo::HloModule> copy, module.Clone());
  int64_t next_channel = 0;
  for (const hlo::HloComputation* c : copy->computations()) {
    for (const HloInstruction* instr : c->instructions()) {
      if (instr->has_channel_id()) next_channel = std::max(next_channel, instr->channel_id());
    }
  }
  absl::flat_hash_map<int64_t, std::string> key_of_channel;
  for (hlo::HloComputation* c : copy->computations()) {
    if (c->IsFusionComputation()) continue;
    for (HloInstruction* instr : c->instructions()) {
      if (instr->opcode() != HloOpcode::kReduceScatter) continue;
      instr->set_channel_id(++next_channel);
      key_of_channel[next_channel] = Key(*instr);
    }
  }
  HLO_RETURN_IF_ERROR(CompileKernelsAndSchedule(copy.get(), options));
  absl::flat_hash_map<std::string, Located> located;
  for (const hlo::HloComputation* c : copy->computations()) {
    if (c->IsFusionComputation()) continue;
    const std::vector<HloInstruction*> order = c->MakeSequentialOrder();
    absl::flat_hash_map<const HloInstruction*, int64_t> position;
    for (size_t i = 0; i < order.size(); ++i) position[order[i]] = static_cast<int64_t>(i);
    for (size_t i = 0; i < order.size(); ++i) {
      const HloInstruction& instr = *order[i];
      const bool start = instr.opcode() == HloOpcode::kReduceScatterStart;
      if ((!start && instr.opcode() != HloOpcode::kReduceScatter) || !instr.has_channel_id()) continue;
      auto key = key_of_channel.find(instr.channel_id());
      if (key == key_of_channel.end()) continue;
      Located at{.computation = c, .collective = static_cast<int64_t>(i), .done = static_cast<int64_t>(i)};
      if (start) {
        for (const HloInstruction* user : instr.users()) {
          if (hlo::IsAsyncCollectiveDone(user->opcode())) at.done = position.at(user);
        }
      }
      located[key->second] = at;
    }
  }
  return std::make_unique<ScheduleReplayPricing>(std::move(copy), std::move(located), options);
}

}  // namespace

hlo::ReduceScatterPricer ReduceScatterHoistPricer(const TpuTargetOptions& options) {
  return [options](const hlo::HloModule& module) { return Price(module, options); };
}

}  // namespace jx::tpu
