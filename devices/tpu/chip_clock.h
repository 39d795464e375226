// A simulated chip's clock: the simulated time the chip has run for and how long each unit
// (MXU, VPU, DMA, ICI) was busy. Running an executable on a chip is one step: the step starts
// at the chip's current time, its instructions (the cost analysis's per-instruction table)
// run one after another, each on its unit with its HBM traffic on the DMA engine beside it,
// and the clock advances by the program's predicted time.
//
//   ChipClock clock;
//   StepTimeline step = clock.RunStep(compiled.cost_analysis(), spec.hbm_bandwidth);
//   step.start_seconds;                  // where the step began on this chip
//   clock.activity().busy.mxu;           // seconds the MXUs were busy so far
#pragma once

#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "jx/core/executable.h"

namespace jx::tpu {

// Seconds per unit.
struct UnitSeconds {
  double mxu = 0, vpu = 0, dma = 0, ici = 0;
};

// One instruction placed on a unit's lane (times in simulated seconds since the chip started).
struct PlacedInstruction {
  std::string name;   // HLO instruction name
  std::string lane;   // "MXU", "VPU", "DMA", "ICI"
  double start_seconds = 0;
  double seconds = 0;
  const InstructionCost* cost = nullptr;  // the row it came from (owned by the caller's analysis)
};

struct StepTimeline {
  double start_seconds = 0;
  double seconds = 0;       // the program's predicted time: how far the clock moved
  std::vector<PlacedInstruction> instructions;
  UnitSeconds busy;         // this step's busy time per unit
};

// The trace lane of a cost row's unit ("mxu" -> "MXU"); "" for rows that run no code
// (parameters, tuples).
std::string_view LaneOfUnit(std::string_view unit);
// The busy-seconds counter of a lane ("MXU", "VPU", "DMA", "ICI").
double* BusySecondsOf(UnitSeconds& busy, std::string_view lane);

// Lays out one run of a program with this cost starting at start_seconds: instructions in
// program order, each after the previous, on the lane of its unit. An asynchronous
// collective's start puts its collective on the ICI lane (once the lane is free) and the
// program goes on; its done waits for the collective's end. An MXU/VPU instruction's
// HBM bytes also occupy the DMA lane from its start for bytes / hbm_bandwidth (at most the
// instruction's time: the transfer overlaps the compute). Should the instructions' times add
// up to more than the predicted time (a cost model that overlaps them), they are scaled into
// it, so a step never runs past its end.
StepTimeline ScheduleStep(const CostAnalysis& cost, double start_seconds, double hbm_bandwidth);

struct ChipActivity {
  double now_seconds = 0;   // simulated time since the chip was made
  UnitSeconds busy;
  int64_t steps = 0;        // executables run
};

// Thread-safe: concurrent runs on one chip are serialized (a chip runs one program at a time).
class ChipClock {
 public:
  // Schedules a run of a program with this cost at the chip's current time and advances the
  // clock past it.
  StepTimeline RunStep(const CostAnalysis& cost, double hbm_bandwidth);
  // Commits a step laid out elsewhere (a pod step, whose collectives wait for other chips):
  // the clock moves to its end and its busy time is added.
  void Commit(const StepTimeline& step);
  ChipActivity activity() const;

 private:
  mutable std::mutex mu_;
  ChipActivity activity_;
};

}  // namespace jx::tpu
