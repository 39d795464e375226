#include "jx/devices/tpu/chip_memory.h"

#include <algorithm>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "jx/compiler/backend/cpu/buffer_assignment.h"
#include "jx/compiler/backend/cpu/generic_reduce_expander.h"
#include "jx/compiler/backend/cpu/masked_gather_fusion.h"
#include "jx/compiler/backend/cpu/widened_window_fusion.h"
#include "jx/compiler/backend/tpu/mxu_operand_reads.h"
#include "jx/compiler/passes/hlo_scheduling.h"
#include "jx/compiler/passes/layout_assignment.h"
#include "jx/core/errors.h"
#include "jx/core/str_util.h"
#include "jx/devices/cpu/cpu_compiler.h"
#include "jx/devices/cpu/cpu_program.h"
#include "jx/devices/tpu/hbm_peak_analysis.h"

namespace jx::tpu {
namespace {

using cpu_device::ThrowStatus;
using cpu_device::ToMemoryAnalysis;

// Rewrites `computation` of the host program into the chip's view of its memory
// (mxu_operand_reads.h): the MXU's operands read as they are stored, and each async
// collective's result one buffer from its start to its last reader.
void ReadAsTheChipHoldsIt(hlo::HloComputation* computation, const std::string& what) {
  for (absl::StatusOr<int64_t> ran : {ReadMxuOperandsAsStored(computation), ShareAsyncCollectiveResults(computation)}) {
    if (!ran.ok()) ThrowStatus(StrCat(what, ": the chip's view of the memory failed"), ran.status());
  }
}

// The arenas of the computations a program calls, on the chip: a loop needs its condition's
// and its body's (the body's temps beside the loop state it updates in place), a conditional
// its largest branch's, a call its callee's, each its own temps after reuse plus the largest
// arena of what it calls in turn (the rule the host compile sizes nested arenas by,
// control_flow_kernels.cc). A fusion is one kernel on the chip: no arena. Memoized per
// computation, which it rewrites into the chip's view once.
class NestedArenas {
 public:
  explicit NestedArenas(std::string what) : what_(std::move(what)) {}

  // The largest arena one of `schedule`'s instructions runs a called computation in.
  int64_t LargestIn(absl::Span<hlo::HloInstruction* const> schedule) {
    int64_t largest = 0;
    for (const hlo::HloInstruction* instr : schedule) largest = std::max(largest, Of(*instr));
    return largest;
  }

 private:
  int64_t Of(const hlo::HloInstruction& instr) {
    switch (instr.opcode()) {
      case hlo::HloOpcode::kWhile:
        return Arena(instr.while_condition(), cpu::OutputBinding::kSeparate) +
               Arena(instr.while_body(), cpu::OutputBinding::kLoopState);
      case hlo::HloOpcode::kConditional: {
        int64_t largest = 0;
        for (hlo::HloComputation* branch : instr.branch_computations()) {
          largest = std::max(largest, Arena(branch, cpu::OutputBinding::kSeparate));
        }
        return largest;
      }
      case hlo::HloOpcode::kCall:
        return Arena(instr.to_apply(), cpu::OutputBinding::kSeparate);
      default:
        return 0;
    }
  }

  int64_t Arena(hlo::HloComputation* computation, cpu::OutputBinding binding) {
    if (auto it = arena_.find(computation); it != arena_.end()) return it->second;
    ReadAsTheChipHoldsIt(computation, what_);
    const std::vector<hlo::HloInstruction*> schedule = computation->MakeSequentialOrder();
    absl::StatusOr<cpu::BufferAssignment> assignment = cpu::BufferAssignment::Run(*computation, schedule, {}, binding);
    if (!assignment.ok()) {
      ThrowStatus(StrCat(what_, ": buffer assignment of ", computation->name(), " failed"), assignment.status());
    }
    const int64_t bytes = assignment->memory().temp_bytes + LargestIn(schedule);
    arena_[computation] = bytes;
    return bytes;
  }

  std::string what_;
  absl::flat_hash_map<const hlo::HloComputation*, int64_t> arena_;
};

}  // namespace

std::unique_ptr<hlo::HloModule> HostModuleOf(const hlo::HloModule& module, const std::string& what) {
  absl::StatusOr<std::unique_ptr<hlo::HloModule>> host_module = module.Clone();
  if (!host_module.ok()) ThrowStatus(StrCat(what, ": clone failed"), host_module.status());
  if (absl::StatusOr<bool> ran = hlo::LayoutAssignment().Run(host_module->get()); !ran.ok()) {
    ThrowStatus(StrCat(what, ": host layout assignment failed"), ran.status());
  }
  for (const hlo::HloComputation* computation : module.computations()) {
    hlo::HloComputation* host = (*host_module)->GetComputationWithName(computation->name());
    if (computation->IsFusionComputation() || host == nullptr) continue;
    std::vector<std::string> names;
    for (const hlo::HloInstruction* instr : computation->MakeSequentialOrder()) names.push_back(instr->name());
    host->set_schedule(hlo::OrderFollowingNames(*host, names));
  }
  return *std::move(host_module);
}

// The optimized module's memory on one chip as the TPU holds it, and what holds its peak:
// buffer assignment of the host program (as the host compile computes it) in the chip's view
// (ReadAsTheChipHoldsIt), not through the f32 copies the host's emulation of the MXU makes or
// a second copy of each collective's result. The loops', branches' and callees' arenas
// (NestedArenas) add the largest of them to the entry's, as the host compile does.
std::pair<MemoryAnalysis, HbmPeakReport> ChipMemory(const hlo::HloModule& module, const std::vector<bool>& donated,
                                                    const std::string& what) {
  std::unique_ptr<hlo::HloModule> host = HostModuleOf(module, what);
  for (absl::StatusOr<bool> ran : {cpu::GenericReduceExpander().Run(host.get()), cpu::WidenedWindowFusion().Run(host.get()),
                                    cpu::MaskedGatherFusion().Run(host.get())}) {
    if (!ran.ok()) ThrowStatus(StrCat(what, ": planning the memory failed"), ran.status());
  }
  hlo::HloComputation& entry = *host->entry_computation();
  ReadAsTheChipHoldsIt(&entry, what);
  const std::vector<hlo::HloInstruction*> schedule = entry.MakeSequentialOrder();
  if (schedule != entry.schedule()) {
    throw InternalError(StrCat(what, ": the chip's view of the memory lost the program's schedule"));
  }
  absl::StatusOr<cpu::BufferAssignment> assignment = cpu::BufferAssignment::Run(entry, schedule, donated);
  if (!assignment.ok()) ThrowStatus(StrCat(what, ": buffer assignment failed"), assignment.status());
  MemoryAnalysis memory = ToMemoryAnalysis(assignment->memory());
  HbmPeakReport hbm = AnalyzeHbmPeak(*assignment, schedule);
  hbm.loop_scratch_bytes = NestedArenas(what).LargestIn(schedule);
  memory.temp_size_in_bytes += hbm.loop_scratch_bytes;
  memory.peak_memory_in_bytes += hbm.loop_scratch_bytes;
  return {memory, std::move(hbm)};
}

}  // namespace jx::tpu
