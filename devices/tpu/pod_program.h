// A program compiled for several chips of a pod (an SPMD program: every chip runs the same
// HLO, partition-id tells them apart, collectives exchange data over the ICI). Partition p
// runs on chips()[p]. A run starts one thread per chip (chips block at collectives until
// their group arrives, so they cannot share a task pool), moves the real data between the
// chips' buffers at each collective, then advances the chips' clocks: each chip's
// instructions in program order, the members of a group synchronized at each collective
// (pod_step.h), the collective on the ICI lane. last_step() reports the step.
//
//   auto program = CompilePodProgram(std::move(module), client, chips, out_avals, "jit(f)");
//   std::vector<Arrays> outs = program->ExecuteShards(args);   // args[p]: partition p's inputs
//   std::cout << program->last_step().ToString();
//
// Execute (the Executable entry jit calls) takes each argument as an array sharded over the
// program's chips (shard p to chip p) or as one array every chip gets, and returns the
// chips' outputs chip by chip: outs[p * num_outputs + k] is output k of chip p.
// An error in one chip's program stops the others at their next collective and is thrown
// once, naming the chip.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "jx/compiler/backend/tpu/collective_timer.h"
#include "jx/compiler/hlo/hlo_module.h"
#include "jx/core/executable.h"
#include "jx/devices/tpu/pod_plan.h"
#include "jx/devices/tpu/pod_step.h"
#include "jx/devices/tpu/tpu_chip.h"

namespace jx::cpu {
class CpuExecutable;
}

namespace jx::tpu {

class TpuClient;
struct AllReduceTally;  // all_reduce_tally.h

class PodProgram final : public Executable {
 public:
  using Timings = std::map<std::string, std::shared_ptr<const CollectiveTiming>>;
  // host: the program the chips' threads run; module: the TPU-optimized program; cost: its
  // cost on one chip, collectives timed on the pod's ICI (timings: per collective; equal
  // collectives share one); memory: a chip's memory as the TPU holds it; hbm: what holds its peak.
  PodProgram(std::unique_ptr<cpu::CpuExecutable> host, std::unique_ptr<hlo::HloModule> module, CostAnalysis cost,
             MemoryAnalysis memory, HbmPeakReport hbm, Timings timings, const TpuClient& client,
             std::vector<const TpuChip*> chips, std::vector<ShapedArray> out_avals, std::string what);
  // A plan-only program (a dry run): no host program, so it cannot run; Plan() lays out its
  // step. memory: the per-chip memory analysis of the optimized module; hbm: what holds its peak.
  PodProgram(std::unique_ptr<hlo::HloModule> module, CostAnalysis cost, MemoryAnalysis memory, HbmPeakReport hbm,
             Timings timings, const TpuClient& client,
             std::vector<const TpuChip*> chips, std::vector<ShapedArray> out_avals, std::string what);
  ~PodProgram() override;

  Arrays Execute(absl::Span<const Array> args) const override;
  // args[p]: partition p's arguments (arrays of the per-device shapes); returns each
  // partition's outputs, committed to its chip.
  std::vector<Arrays> ExecuteShards(const std::vector<Arrays>& args) const;

  std::string as_text() const override { return module_->ToString(); }
  CostAnalysis cost_analysis() const override { return cost_; }
  MemoryAnalysis memory_analysis() const override { return memory_; }
  const std::vector<const TpuChip*>& chips() const { return chips_; }
  int64_t num_outputs() const { return static_cast<int64_t>(out_avals_.size()); }
  // The program's all-reduces and reduce-scatters: runs per step (loops included), bytes and
  // ICI time (defined with the tally, all_reduce_tally.cc).
  AllReduceTally all_reduces() const;
  // The report of the latest run (empty before the first).
  StepReport last_step() const;
  // The step laid out as a run from clocks at zero would lay it out (SchedulePodStep), without
  // running it or moving any clock: chips with provably identical timelines (chip_classes.h)
  // are scheduled once. Each chip's HBM peak is the memory analysis' peak; a plan that does not
  // fit says so (PodPlan::fits), it does not throw.
  PodPlan Plan() const;
  // Whether this program was compiled for the host (false: plan-only).
  bool runnable() const { return host_ != nullptr; }

 private:
  StepReport AdvanceClocks() const;
  // The report of a step laid out as `step` (timeline t of chip p: step.chips[timeline_of[p]]).
  StepReport Report(const PodTimelines& step, absl::Span<const int64_t> timeline_of) const;

  std::unique_ptr<cpu::CpuExecutable> host_;
  std::unique_ptr<hlo::HloModule> module_;
  CostAnalysis cost_;
  MemoryAnalysis memory_;
  HbmPeakReport hbm_;  // what holds the per-chip HBM peak
  Timings timings_;
  const TpuClient& client_;
  std::vector<const TpuChip*> chips_;
  std::vector<ShapedArray> out_avals_;
  std::string what_;
  std::vector<PodStepRow> rows_;  // per cost row: collectives' partners, async pairs, loops
  mutable std::mutex mu_;
  mutable StepReport last_step_;
};

// Optimizes and costs an SPMD module as CompilePodProgram does, without compiling it for the
// host: a plan-only program (PodProgram::Plan) whose memory comes from buffer assignment on
// the optimized module. A peak above a chip's HBM is reported by the plan, not thrown.
// The HLO is verified before and after the TPU pipeline (after each pass that changes it with
// jax_enable_checks, JX_ENABLE_CHECKS=1, as every compile does); JX_LOG_COMPILES=2 prints the
// time of each stage and pass.
std::shared_ptr<const PodProgram> PlanPodProgram(std::unique_ptr<hlo::HloModule> module, const TpuClient& client,
                                                 std::vector<const TpuChip*> chips,
                                                 std::vector<ShapedArray> out_avals, std::string what,
                                                 std::vector<bool> donated = {});

// Optimizes an SPMD module for the chips' generation, costs it on the pod (collectives on its
// torus) and compiles it for the host. Fails (ResourceExhaustedError) when its peak cannot
// fit a chip's HBM. out_avals: the per-device outputs. async_collectives: collectives become
// start/done pairs the latency-hiding scheduler spaces (false: they stay synchronous, each
// fully exposed; for comparisons).
std::shared_ptr<const PodProgram> CompilePodProgram(std::unique_ptr<hlo::HloModule> module, const TpuClient& client,
                                                    std::vector<const TpuChip*> chips,
                                                    std::vector<ShapedArray> out_avals, std::string what,
                                                    std::vector<bool> donated = {}, bool async_collectives = true);

}  // namespace jx::tpu
