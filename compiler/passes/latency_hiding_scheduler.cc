#include "jx/compiler/passes/latency_hiding_scheduler.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <set>
#include <string_view>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "jx/compiler/hlo/hlo_module.h"
#include "jx/compiler/hlo/status_macros.h"
#include "jx/compiler/hlo/str_util.h"
#include "jx/compiler/passes/hlo_scheduling.h"

namespace jx::hlo {
namespace {

bool LogCompiles() {
  const char* v = std::getenv("JX_LOG_COMPILES");
  return v != nullptr && v[0] != '\0' && std::string_view(v) != "0";
}

int64_t LeafBytes(const Shape& shape) {
  if (!shape.IsTuple()) return shape.IsArray() ? ShapeUtil::ByteSizeOf(shape) : 0;
  int64_t total = 0;
  for (const Shape& e : shape.tuple_shapes()) total += LeafBytes(e);
  return total;
}

// The dependency graph over `base` (an order with every instruction after its operands):
// operands, plus the relative order of side-effecting instructions.
struct Graph {
  std::vector<std::vector<int>> successors;
  std::vector<int> pending;  // unscheduled predecessors
};

Graph BuildGraph(absl::Span<HloInstruction* const> base) {
  const int n = static_cast<int>(base.size());
  absl::flat_hash_map<const HloInstruction*, int> index;
  for (int i = 0; i < n; ++i) index[base[i]] = i;
  Graph g;
  g.successors.resize(n);
  g.pending.assign(n, 0);
  int last_side_effect = -1;
  std::vector<int> preds;
  for (int i = 0; i < n; ++i) {
    preds.clear();
    for (const HloInstruction* operand : base[i]->operands()) {
      auto it = index.find(operand);
      if (it != index.end()) preds.push_back(it->second);
    }
    if (base[i]->HasSideEffect()) {
      if (last_side_effect >= 0) preds.push_back(last_side_effect);
      last_side_effect = i;
    }
    std::sort(preds.begin(), preds.end());
    preds.erase(std::unique(preds.begin(), preds.end()), preds.end());
    for (int p : preds) g.successors[p].push_back(i);
    g.pending[i] = static_cast<int>(preds.size());
  }
  return g;
}

// One top-down pass. serialize: starts whose collective runs without overlap (scheduled in
// the base order, their done right after).
LatencyHidingSchedule ListSchedule(absl::Span<HloInstruction* const> base, absl::Span<const double> seconds,
                                   const LatencyHidingSchedulerOptions& options,
                                   const absl::flat_hash_set<const HloInstruction*>& serialize) {
  const int n = static_cast<int>(base.size());
  Graph g = BuildGraph(base);
  absl::flat_hash_map<const HloInstruction*, int> index;
  for (int i = 0; i < n; ++i) index[base[i]] = i;

  // Compute a start needs goes first (the start then begins as early as it can).
  std::vector<bool> feeds_start(n, false);
  for (int i = n - 1; i >= 0; --i) {
    for (int s : g.successors[i]) {
      if (feeds_start[s] || (IsAsyncCollectiveStart(base[s]->opcode()) && !serialize.contains(base[s]))) {
        feeds_start[i] = true;
        break;
      }
    }
  }
  // Ready instructions by kind: starts by base position, compute feeding starts first.
  std::set<int> ready_starts;
  std::set<std::pair<bool, int>> ready_compute;
  std::set<std::pair<double, int>> ready_dones;  // (collective's end, done)
  std::vector<double> end_of(n, 0);              // a start's collective ends then
  std::map<HloOpcode, int64_t> in_flight;        // per collective kind
  auto start_of = [&](int done) { return index.at(base[done]->operand(0)); };
  auto make_ready = [&](int i) {
    const HloOpcode op = base[i]->opcode();
    if (IsAsyncCollectiveStart(op) && !serialize.contains(base[i])) {
      ready_starts.insert(i);
    } else if (IsAsyncCollectiveDone(op)) {
      ready_dones.emplace(end_of[start_of(i)], i);
    } else {
      ready_compute.emplace(!feeds_start[i], i);
    }
  };
  for (int i = 0; i < n; ++i) {
    if (g.pending[i] == 0) make_ready(i);
  }

  LatencyHidingSchedule out;
  out.order.reserve(n);
  double now = 0;
  double interconnect_free = 0;  // when the collectives started so far have all moved their data
  // When a collective started now ends.
  auto collective_end = [&](int start) {
    const double begin = options.shared_interconnect ? std::max(now, interconnect_free) : now;
    interconnect_free = begin + seconds[start];
    return interconnect_free;
  };
  std::vector<double> began(n, 0);  // per start: the clock when it began
  absl::flat_hash_set<int> serialized_done;  // dones to run right after their start
  auto schedule = [&](int i) {
    out.order.push_back(base[i]);
    for (int s : g.successors[i]) {
      if (--g.pending[s] == 0) make_ready(s);
    }
  };
  while (static_cast<int>(out.order.size()) < n) {
    // A serialized collective's done follows its start at once.
    if (!serialized_done.empty()) {
      const int d = *serialized_done.begin();
      serialized_done.erase(serialized_done.begin());
      ready_dones.erase({end_of[start_of(d)], d});
      now = std::max(now, end_of[start_of(d)]);
      schedule(d);
      continue;
    }
    // A done whose collective has ended costs nothing: it runs at once, except an
    // all-gather's. Its result (a gathered weight) is larger than its operand, so it waits
    // until nothing else is ready (its reader is next), as XLA's scheduler places a done just
    // before its first use; meanwhile it holds its kind's slot, so the next all-gather starts
    // when this one's result is read, one ahead, not every weight gathered up front.
    auto finished = ready_dones.begin();
    while (finished != ready_dones.end() && finished->first <= now &&
           base[finished->second]->opcode() == HloOpcode::kAllGatherDone) {
      ++finished;
    }
    if (finished != ready_dones.end() && finished->first <= now) {
      const int d = finished->second;
      ready_dones.erase(finished);
      --in_flight[SyncCollectiveOpcode(base[d]->opcode())];
      if (now > began[start_of(d)]) ++out.overlapped;
      schedule(d);
      continue;
    }
    int start = -1;
    for (int s : ready_starts) {
      if (in_flight[SyncCollectiveOpcode(base[s]->opcode())] < options.max_in_flight_per_kind) {
        start = s;
        break;
      }
    }
    if (start >= 0) {
      ready_starts.erase(start);
      ++in_flight[SyncCollectiveOpcode(base[start]->opcode())];
      end_of[start] = collective_end(start);
      began[start] = now;
      schedule(start);
      continue;
    }
    if (!ready_compute.empty()) {
      const int c = ready_compute.begin()->second;
      ready_compute.erase(ready_compute.begin());
      if (IsAsyncCollectiveStart(base[c]->opcode())) {
        // Serialized: runs now (after what is in flight), its done next.
        end_of[c] = collective_end(c);
        schedule(c);
        for (const HloInstruction* user : base[c]->users()) {
          if (IsAsyncCollectiveDone(user->opcode())) serialized_done.insert(index.at(user));
        }
        continue;
      }
      now += seconds[c];
      schedule(c);
      continue;
    }
    if (ready_dones.empty()) break;  // a cycle: cannot happen for a verified computation
    const int d = ready_dones.begin()->second;
    ready_dones.erase(ready_dones.begin());
    if (now > began[start_of(d)]) ++out.overlapped;
    now = std::max(now, end_of[start_of(d)]);
    --in_flight[SyncCollectiveOpcode(base[d]->opcode())];
    schedule(d);
  }
  out.estimated_seconds = now;
  return out;
}

bool HasAsyncCollectives(const HloComputation& computation) {
  for (const HloInstruction* instr : computation.instructions()) {
    if (IsAsyncCollectiveStart(instr->opcode())) return true;
  }
  return false;
}

// Under JX_LOG_COMPILES: how an order over the memory limit was brought under it.
void LogSerialized(const HloComputation& computation, const LatencyHidingSchedule& overlapped,
                   const LatencyHidingSchedule& fitting, int64_t limit, size_t collectives, const char* which) {
  if (!LogCompiles()) return;
  std::fprintf(stderr,
               "latency-hiding-scheduler: %s: overlapped order peaks at %lld bytes, over the memory limit of %lld; "
               "%lld of %lld collectives serialized (%s): peak %lld bytes, %lld overlapped, estimate %.6g s (was "
               "%.6g s)\n",
               computation.name().c_str(), static_cast<long long>(overlapped.peak_memory_bytes),
               static_cast<long long>(limit), static_cast<long long>(fitting.serialized),
               static_cast<long long>(collectives), which, static_cast<long long>(fitting.peak_memory_bytes),
               static_cast<long long>(fitting.overlapped), fitting.estimated_seconds, overlapped.estimated_seconds);
}

// The schedule from one base order: overlapped, then with collectives serialized until it
// fits the limit where it can. `fits`: whether it does.
LatencyHidingSchedule ScheduleFrom(const HloComputation& computation, absl::Span<HloInstruction* const> base,
                                   const absl::flat_hash_map<const HloInstruction*, double>& seconds_of,
                                   const LatencyHidingSchedulerOptions& options, const MemoryPeakOfOrder& peak_of,
                                   bool* fits) {
  *fits = true;
  // Overlapped collectives, largest first: the ones to serialize should memory run out.
  std::vector<const HloInstruction*> starts;
  for (const HloInstruction* instr : base) {
    if (IsAsyncCollectiveStart(instr->opcode())) starts.push_back(instr);
  }
  std::stable_sort(starts.begin(), starts.end(), [](const HloInstruction* a, const HloInstruction* b) {
    return LeafBytes(a->shape()) > LeafBytes(b->shape());
  });
  std::vector<double> seconds(base.size(), 0);
  for (size_t i = 0; i < base.size(); ++i) seconds[i] = seconds_of.at(base[i]);
  auto attempt_set = [&](const absl::flat_hash_set<const HloInstruction*>& serialize) {
    LatencyHidingSchedule s = ListSchedule(base, seconds, options, serialize);
    s.peak_memory_bytes = peak_of(s.order).bytes;
    s.serialized = static_cast<int64_t>(serialize.size());
    return s;
  };
  // The schedule with the `k` largest overlapped collectives serialized.
  auto attempt = [&](size_t k) {
    return attempt_set(absl::flat_hash_set<const HloInstruction*>(starts.begin(),
                                                                   starts.begin() + static_cast<ptrdiff_t>(k)));
  };
  LatencyHidingSchedule first = attempt(0);
  if (first.peak_memory_bytes <= options.memory_limit_bytes) return first;
  // Over the limit. Only overlap that is under way where the peak is can lower it: serialize
  // the collectives in flight across the peak (start at or before it, done at or after),
  // largest first until their bytes cover the excess, and look again at the new peak (XLA's
  // scheduler likewise holds back only the starts that would push memory over the limit where
  // they are). Overlap elsewhere in the program is kept.
  {
    absl::flat_hash_set<const HloInstruction*> serialize;
    LatencyHidingSchedule current = first;
    while (true) {
      const MemoryPeak peak = peak_of(current.order);
      if (peak.bytes <= options.memory_limit_bytes) {
        LogSerialized(computation, first, current, options.memory_limit_bytes, starts.size(),
                      "those in flight across the peak");
        return current;
      }
      absl::flat_hash_map<const HloInstruction*, int64_t> position;
      for (size_t i = 0; i < current.order.size(); ++i) position[current.order[i]] = static_cast<int64_t>(i);
      std::vector<const HloInstruction*> across;  // largest first, as `starts`
      for (const HloInstruction* start : starts) {
        if (serialize.contains(start) || position.at(start) > peak.position) continue;
        for (const HloInstruction* user : start->users()) {
          // The done's own position counts: its start's buffer is live there too.
          if (IsAsyncCollectiveDone(user->opcode()) && position.at(user) >= peak.position) {
            across.push_back(start);
            break;
          }
        }
      }
      if (across.empty()) break;  // the peak is not overlap's doing
      int64_t covered = 0;
      for (const HloInstruction* start : across) {
        if (covered >= peak.bytes - options.memory_limit_bytes) break;
        serialize.insert(start);
        covered += LeafBytes(start->shape());
      }
      current = attempt_set(serialize);
    }
  }
  // Still over: serialize the fewest collectives, largest first, found by bisection:
  // serializing more shortens live ranges, so the peak does not grow with k.
  if (!starts.empty() && attempt(starts.size()).peak_memory_bytes <= options.memory_limit_bytes) {
    size_t lo = 0, hi = starts.size();  // lo over the limit, hi under it
    while (hi - lo > 1) {
      const size_t mid = lo + (hi - lo) / 2;
      (attempt(mid).peak_memory_bytes <= options.memory_limit_bytes ? hi : lo) = mid;
    }
    LatencyHidingSchedule fitting = attempt(hi);
    LogSerialized(computation, first, fitting, options.memory_limit_bytes, starts.size(), "largest first");
    return fitting;
  }
  // Even without overlap the order is over the limit: it keeps the overlapped order (the step's
  // time as it would run; its peak is reported).
  *fits = false;
  return first;
}

}  // namespace

absl::StatusOr<LatencyHidingSchedule> ScheduleForLatencyHiding(const HloComputation& computation,
                                                               const LatencyHidingSchedulerOptions& options) {
  const std::vector<HloInstruction*> stored = computation.MakeSequentialOrder();
  // Each instruction's time, estimated once (a TPU estimate plans VMEM tiling and routes
  // collectives: too dear to repeat per attempt).
  absl::flat_hash_map<const HloInstruction*, double> seconds_of;
  for (const HloInstruction* instr : stored) {
    seconds_of[instr] = IsAsyncCollectiveDone(instr->opcode()) ? 0.0 : std::max(0.0, options.estimate_seconds(*instr));
  }
  // Each order's memory as the target holds it (options.memory_model), else as the text says.
  MemoryPeakOfOrder peak_of = [&computation](absl::Span<HloInstruction* const> order) {
    return FindMemoryPeak(computation, order);
  };
  if (options.memory_model) {
    HLO_ASSIGN_OR_RETURN(peak_of, options.memory_model(computation));
  }
  bool fits = false;
  LatencyHidingSchedule best = ScheduleFrom(computation, stored, seconds_of, options, peak_of, &fits);
  if (fits && best.serialized == 0) return best;
  // The stored order (the memory scheduler's, chosen before any overlap and by the program's
  // text) gives up overlap or does not fit: the plain post order, which computes each value
  // near its first reader, may do better once overlapped (MaxText 32B's list order gathered
  // every layer's weights up front: 37.7 GiB on the chip where the post order's schedule holds
  // 9.6). The better of the two: one that fits, then the faster, else the lower peak.
  const std::vector<HloInstruction*> post_order = computation.MakeInstructionPostOrder();
  if (post_order != stored) {
    bool post_fits = false;
    LatencyHidingSchedule other = ScheduleFrom(computation, post_order, seconds_of, options, peak_of, &post_fits);
    const bool better = post_fits != fits ? post_fits
                        : fits            ? other.estimated_seconds < best.estimated_seconds
                                          : other.peak_memory_bytes < best.peak_memory_bytes;
    if (better) {
      if (LogCompiles()) {
        std::fprintf(stderr,
                     "latency-hiding-scheduler: %s: scheduled from the post order (peak %lld bytes, %lld serialized, "
                     "estimate %.6g s) rather than the stored order (peak %lld bytes, %lld serialized, estimate "
                     "%.6g s)\n",
                     computation.name().c_str(), static_cast<long long>(other.peak_memory_bytes),
                     static_cast<long long>(other.serialized), other.estimated_seconds,
                     static_cast<long long>(best.peak_memory_bytes), static_cast<long long>(best.serialized),
                     best.estimated_seconds);
      }
      best = std::move(other);
      fits = post_fits;
    }
  }
  if (!fits && LogCompiles()) {
    std::fprintf(stderr,
                 "latency-hiding-scheduler: %s: no order stays under the memory limit of %lld bytes; keeping the "
                 "overlapped order (peak %lld bytes)\n",
                 computation.name().c_str(), static_cast<long long>(options.memory_limit_bytes),
                 static_cast<long long>(best.peak_memory_bytes));
  }
  return best;
}

absl::StatusOr<bool> LatencyHidingScheduler::Run(HloModule* module) {
  if (!options_.estimate_seconds) {
    return absl::InvalidArgumentError("latency-hiding-scheduler: options.estimate_seconds is required");
  }
  if (options_.max_in_flight_per_kind < 1) {
    return absl::InvalidArgumentError(StrCat("latency-hiding-scheduler: max_in_flight_per_kind=",
                                             options_.max_in_flight_per_kind, " (need at least 1)"));
  }
  bool changed = false;
  for (HloComputation* computation : module->computations()) {
    if (computation->IsFusionComputation() || !HasAsyncCollectives(*computation)) continue;
    std::vector<HloInstruction*> before = computation->MakeSequentialOrder();
    HLO_ASSIGN_OR_RETURN(LatencyHidingSchedule s, ScheduleForLatencyHiding(*computation, options_));
    changed |= s.order != before;
    computation->set_schedule(std::move(s.order));
  }
  return changed;
}

}  // namespace jx::hlo
