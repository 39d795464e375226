#include "jx/devices/tpu/pod_plan.h"

#include <algorithm>
#include <map>
#include <tuple>

#include "absl/strings/str_format.h"
#include "jx/devices/tpu/step_communication.h"

namespace jx::tpu {
namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

// "1.234 s", "12.3 ms", "45.6 us".
std::string Seconds(double s) {
  if (s >= 1) return absl::StrFormat("%.3f s", s);
  if (s >= 1e-3) return absl::StrFormat("%.3f ms", s * 1e3);
  return absl::StrFormat("%.3f us", s * 1e6);
}

std::string Bytes(double b) {
  if (b >= kGiB) return absl::StrFormat("%.2f GiB", b / kGiB);
  if (b >= 1 << 20) return absl::StrFormat("%.2f MiB", b / (1 << 20));
  if (b >= 1 << 10) return absl::StrFormat("%.2f KiB", b / (1 << 10));
  return absl::StrFormat("%.0f B", b);
}

}  // namespace

double PodPlan::flops_utilization() const {
  const double denom = peak_flops_per_chip * step.wall_seconds;
  return denom > 0 ? flops_per_chip / denom : 0;
}

double PodPlan::mfu(double model_flops) const {
  const double denom = static_cast<double>(num_chips) * peak_flops_per_chip * step.wall_seconds;
  return denom > 0 ? model_flops / denom : 0;
}

std::string PodPlan::ToString(size_t max_lines) const {
  // What the per-device numbers are per: a chip, unless a chip is several devices.
  const char* device = devices_per_chip > 1 ? "device" : "chip";
  const std::string devices =
      devices_per_chip > 1 ? absl::StrFormat("%d devices (%d chips of %d TensorCores)", num_chips,
                                             num_chips / devices_per_chip, devices_per_chip)
                           : absl::StrFormat("%d chips", num_chips);
  std::string out = absl::StrFormat("%s planned on %s: %s, %s of host time\n", what, pod, devices,
                                    Seconds(planning_seconds));
  // Chips with equal numbers are one line (a timeline class, or several that agree).
  using Key = std::tuple<double, double, double, double, int64_t>;
  std::map<Key, std::pair<int64_t, const ChipStepReport*>> groups;
  double compute = 0, communication = 0, idle = 0;
  for (const ChipStepReport& c : step.chips) {
    const Key key{c.end_seconds - c.start_seconds, c.compute_seconds, c.communication_seconds, c.idle_seconds,
                  c.hbm_high_water_bytes};
    auto [it, inserted] = groups.emplace(key, std::make_pair(int64_t{0}, &c));
    ++it->second.first;
    if (c.end_seconds - c.start_seconds >= step.wall_seconds * (1 - 1e-12)) {
      compute = c.compute_seconds, communication = c.communication_seconds, idle = c.idle_seconds;
    }
  }
  absl::StrAppendFormat(&out, "step %s (slowest %s): compute %s, communication %s, idle %s\n",
                        Seconds(step.wall_seconds), device, Seconds(compute), Seconds(communication), Seconds(idle));
  if (!step.collectives.empty()) {
    absl::StrAppendFormat(&out, "communication over collectives %s: exposed %s, overlapped %s\n",
                          Seconds(step.communication_seconds()), Seconds(step.exposed_communication_seconds()),
                          Seconds(step.overlapped_communication_seconds()));
    for (const CollectiveKindTotals& k : CommunicationByKind(step)) {
      absl::StrAppendFormat(&out, "  %-18s %12s: exposed %s, overlapped %s (%d collective%s, %d run%s)\n", k.kind,
                            Seconds(k.seconds), Seconds(k.exposed_seconds), Seconds(k.overlapped_seconds()),
                            static_cast<int>(k.collectives), k.collectives == 1 ? "" : "s",
                            static_cast<int>(k.runs), k.runs == 1 ? "" : "s");
    }
  }
  absl::StrAppendFormat(&out, "HBM peak per %s %s of %s: %s\n", device, Bytes(static_cast<double>(hbm_peak_bytes)),
                        Bytes(static_cast<double>(hbm_capacity_bytes)),
                        fits() ? "fits"
                               : absl::StrFormat("DOES NOT FIT (%s over)",
                                                 Bytes(static_cast<double>(hbm_peak_bytes - hbm_capacity_bytes))));
  if (!hbm.buffers.empty()) out += hbm.ToString(max_lines);
  absl::StrAppendFormat(&out, "FLOPs per %s %.4g: %.1f%% of the %.4g FLOP/s peak\n", device, flops_per_chip,
                        100 * flops_utilization(), peak_flops_per_chip);
  // Slowest first; beyond max_lines, the slowest and the fastest groups.
  std::vector<std::pair<Key, std::pair<int64_t, const ChipStepReport*>>> sorted(groups.begin(), groups.end());
  std::stable_sort(sorted.begin(), sorted.end(),
                   [](const auto& a, const auto& b) { return std::get<0>(a.first) > std::get<0>(b.first); });
  absl::StrAppendFormat(&out, "%ss: %d groups with equal numbers (%d timeline classes scheduled)\n", device,
                        static_cast<int>(sorted.size()), static_cast<int>(num_timeline_classes));
  absl::StrAppendFormat(&out, "  %8s  %-36s %12s %12s %12s %12s %12s\n", std::string(device) + "s", "like", "total", "compute", "comm",
                        "idle", "hbm peak");
  auto line = [&](const auto& g) {
    const ChipStepReport& c = *g.second.second;
    absl::StrAppendFormat(&out, "  %8d  %-36s %12s %12s %12s %12s %12s\n", static_cast<int>(g.second.first), c.chip,
                          Seconds(c.end_seconds - c.start_seconds), Seconds(c.compute_seconds),
                          Seconds(c.communication_seconds), Seconds(c.idle_seconds),
                          Bytes(static_cast<double>(c.hbm_high_water_bytes)));
  };
  const size_t lines = std::max<size_t>(max_lines, 2);
  if (sorted.size() <= lines) {
    for (const auto& g : sorted) line(g);
  } else {
    for (size_t i = 0; i + 1 < lines; ++i) line(sorted[i]);
    absl::StrAppendFormat(&out, "  ... %d more groups, down to the fastest:\n",
                          static_cast<int>(sorted.size() - lines));
    line(sorted.back());
  }
  if (!costliest_instructions.empty()) {
    absl::StrAppendFormat(&out, "costliest instructions:\n");
    for (size_t i = 0; i < std::min(costliest_instructions.size(), max_lines); ++i) {
      const InstructionCost& c = costliest_instructions[i];
      absl::StrAppendFormat(&out, "  %-28s %-14s %12s on %s, %s bound, %.4g FLOPs, %s\n", c.name, c.opcode,
                            Seconds(c.seconds), c.unit, c.bound_by.empty() ? "?" : c.bound_by, c.flops,
                            Bytes(c.bytes));
    }
  }
  if (!kernel_categories.empty()) {
    absl::StrAppendFormat(&out, "kernel time by category:\n%s", FormatKernelCategories(kernel_categories));
  }
  if (!step.collectives.empty()) {
    std::vector<const CollectiveStepEntry*> costliest;
    for (const CollectiveStepEntry& c : step.collectives) costliest.push_back(&c);
    std::stable_sort(costliest.begin(), costliest.end(),
                     [](const auto* a, const auto* b) { return a->seconds > b->seconds; });
    absl::StrAppendFormat(&out, "collectives: %d in the step, costliest:\n", static_cast<int>(costliest.size()));
    for (size_t i = 0; i < std::min(costliest.size(), max_lines); ++i) {
      const CollectiveStepEntry& c = *costliest[i];
      absl::StrAppendFormat(&out, "  %-28s %-18s %12s %12s (exposed %s) %s\n", c.name, c.kind,
                            Bytes(static_cast<double>(c.bytes)), Seconds(c.seconds), Seconds(c.exposed_seconds),
                            c.algorithm);
    }
  }
  absl::StrAppendFormat(&out, "links: %d carried %s, busiest:\n", static_cast<int>(step.links.size()),
                        Bytes(static_cast<double>(step.total_link_bytes())));
  for (size_t i = 0; i < std::min(step.links.size(), max_lines); ++i) {
    absl::StrAppendFormat(&out, "  %s: %s\n", step.links[i].link, Bytes(static_cast<double>(step.links[i].bytes)));
  }
  return out;
}

}  // namespace jx::tpu
