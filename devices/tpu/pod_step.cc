#include "jx/devices/tpu/pod_step.h"

#include <algorithm>

#include "absl/strings/str_format.h"

namespace jx::tpu {

PodTimelines SchedulePodStep(const CostAnalysis& cost, const SyncGroups& sync, absl::Span<const double> starts,
                             double hbm_bandwidth) {
  const size_t n = starts.size();
  PodTimelines out;
  out.chips.resize(n);
  out.idle_seconds.assign(n, 0);
  std::vector<double> t(starts.begin(), starts.end());
  // As ScheduleStep: rows that add up past the predicted time are scaled into it.
  double total = 0;
  for (const InstructionCost& row : cost.instructions) {
    if (!LaneOfUnit(row.unit).empty()) total += row.seconds;
  }
  const double scale = total > cost.predicted_seconds && total > 0 ? cost.predicted_seconds / total : 1.0;
  for (size_t i = 0; i < cost.instructions.size(); ++i) {
    const InstructionCost& row = cost.instructions[i];
    const std::string_view lane = LaneOfUnit(row.unit);
    const double seconds = row.seconds * scale;
    if (lane.empty() || seconds <= 0) continue;
    const bool collective = i < sync.size() && !sync[i].empty();
    std::vector<bool> synced(n, false);
    if (collective) {
      for (const std::vector<int64_t>& group : sync[i]) {
        double start = 0;
        for (int64_t q : group) start = std::max(start, t[q]);
        for (int64_t q : group) {
          out.idle_seconds[q] += start - t[q];
          out.chips[q].instructions.push_back({row.name, std::string(lane), start, seconds, &row});
          *BusySecondsOf(out.chips[q].busy, lane) += seconds;
          t[q] = start + seconds;
          synced[q] = true;
        }
      }
    }
    for (size_t p = 0; p < n; ++p) {
      if (synced[p] || collective) continue;  // a chip in no group skips the collective
      StepTimeline& chip = out.chips[p];
      chip.instructions.push_back({row.name, std::string(lane), t[p], seconds, &row});
      *BusySecondsOf(chip.busy, lane) += seconds;
      if (lane != "DMA" && row.bytes > 0 && hbm_bandwidth > 0) {
        const double transfer = std::min(row.bytes / hbm_bandwidth * scale, seconds);
        chip.instructions.push_back({row.name, "DMA", t[p], transfer, &row});
        chip.busy.dma += transfer;
      }
      t[p] += seconds;
    }
  }
  for (size_t p = 0; p < n; ++p) {
    out.chips[p].start_seconds = starts[p];
    out.chips[p].seconds = t[p] - starts[p];
  }
  return out;
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
  std::string out = absl::StrFormat("%s: step %.3f us on %d chips (slowest chip), %d bytes over ICI links\n", what,
                                    wall_seconds * 1e6, static_cast<int>(chips.size()), total_link_bytes());
  size_t w = 4;
  for (const ChipStepReport& c : chips) w = std::max(w, c.chip.size());
  const int width = static_cast<int>(w);
  absl::StrAppendFormat(&out, "%-*s %12s %12s %12s %12s %14s\n", width, "chip", "total(us)", "compute(us)", "comm(us)",
                        "idle(us)", "hbm peak(B)");
  for (const ChipStepReport& c : chips) {
    absl::StrAppendFormat(&out, "%-*s %12.3f %12.3f %12.3f %12.3f %14d\n", width, c.chip,
                          (c.end_seconds - c.start_seconds) * 1e6, c.compute_seconds * 1e6,
                          c.communication_seconds * 1e6, c.idle_seconds * 1e6, c.hbm_high_water_bytes);
  }
  const size_t shown = std::min<size_t>(links.size(), 8);
  for (size_t i = 0; i < shown; ++i) {
    absl::StrAppendFormat(&out, "  link %s: %d bytes\n", links[i].link, links[i].bytes);
  }
  if (links.size() > shown) absl::StrAppendFormat(&out, "  ... %d more links\n", static_cast<int>(links.size() - shown));
  return out;
}

}  // namespace jx::tpu
