#include "jx/devices/tpu/chip_clock.h"

#include <algorithm>
#include <deque>
#include <functional>
#include <map>
#include <string>
#include <string_view>

namespace jx::tpu {

std::string_view LaneOfUnit(std::string_view unit) {
  if (unit == "mxu") return "MXU";
  if (unit == "vpu") return "VPU";
  if (unit == "dma") return "DMA";
  if (unit == "ici") return "ICI";
  return "";
}

double* BusySecondsOf(UnitSeconds& busy, std::string_view lane) {
  if (lane == "MXU") return &busy.mxu;
  if (lane == "VPU") return &busy.vpu;
  if (lane == "DMA") return &busy.dma;
  return &busy.ici;
}

StepTimeline ScheduleStep(const CostAnalysis& cost, double start_seconds, double hbm_bandwidth) {
  StepTimeline step;
  step.start_seconds = start_seconds;
  step.seconds = cost.predicted_seconds;
  double total = 0;
  for (const InstructionCost& row : cost.instructions) {
    if (!LaneOfUnit(row.unit).empty()) total += row.seconds;
  }
  const double scale = total > step.seconds && total > 0 ? step.seconds / total : 1.0;
  double t = start_seconds;    // where the program stands
  double ici = start_seconds;  // when the ICI lane is free
  // Asynchronous collectives in flight, per kind ("all-reduce"): when each ends, in order.
  std::map<std::string, std::deque<double>, std::less<>> in_flight;
  for (const InstructionCost& row : cost.instructions) {
    const std::string_view lane = LaneOfUnit(row.unit);
    const double seconds = row.seconds * scale;
    const std::string_view opcode = row.opcode;
    if (opcode.ends_with("-done")) {
      // Waits for the oldest collective of its kind (the scheduler keeps one per kind in flight).
      auto it = in_flight.find(opcode.substr(0, opcode.size() - 5));
      if (it != in_flight.end() && !it->second.empty()) {
        t = std::max(t, it->second.front());
        it->second.pop_front();
      }
      continue;
    }
    if (lane.empty()) continue;
    if (opcode.ends_with("-start")) {
      const double begin = std::max(t, ici);
      if (seconds > 0) {
        step.instructions.push_back({row.name, std::string(lane), begin, seconds, &row});
        *BusySecondsOf(step.busy, lane) += seconds;
      }
      ici = begin + std::max(seconds, 0.0);
      in_flight[std::string(opcode.substr(0, opcode.size() - 6))].push_back(ici);
      continue;
    }
    if (seconds <= 0) continue;
    if (lane == "ICI") {
      const double begin = std::max(t, ici);
      step.instructions.push_back({row.name, std::string(lane), begin, seconds, &row});
      step.busy.ici += seconds;
      t = ici = begin + seconds;
      continue;
    }
    step.instructions.push_back({row.name, std::string(lane), t, seconds, &row});
    *BusySecondsOf(step.busy, lane) += seconds;
    if (lane != "DMA" && row.bytes > 0 && hbm_bandwidth > 0) {
      const double transfer = std::min(row.bytes / hbm_bandwidth * scale, seconds);
      step.instructions.push_back({row.name, "DMA", t, transfer, &row});
      step.busy.dma += transfer;
    }
    t += seconds;
  }
  // Overlapped collectives end the step sooner than the rows' sum.
  if (!in_flight.empty()) step.seconds = std::min(step.seconds, std::max(t, ici) - start_seconds);
  return step;
}

StepTimeline ChipClock::RunStep(const CostAnalysis& cost, double hbm_bandwidth) {
  std::lock_guard<std::mutex> lock(mu_);
  StepTimeline step = ScheduleStep(cost, activity_.now_seconds, hbm_bandwidth);
  activity_.now_seconds += step.seconds;
  activity_.busy.mxu += step.busy.mxu;
  activity_.busy.vpu += step.busy.vpu;
  activity_.busy.dma += step.busy.dma;
  activity_.busy.ici += step.busy.ici;
  ++activity_.steps;
  return step;
}

void ChipClock::Commit(const StepTimeline& step) {
  std::lock_guard<std::mutex> lock(mu_);
  activity_.now_seconds = std::max(activity_.now_seconds, step.start_seconds + step.seconds);
  activity_.busy.mxu += step.busy.mxu;
  activity_.busy.vpu += step.busy.vpu;
  activity_.busy.dma += step.busy.dma;
  activity_.busy.ici += step.busy.ici;
  ++activity_.steps;
}

ChipActivity ChipClock::activity() const {
  std::lock_guard<std::mutex> lock(mu_);
  return activity_;
}

}  // namespace jx::tpu
