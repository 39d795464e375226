// Internal to the CPU backend's rewrites (widened_window_fusion.cc, masked_gather_fusion.cc):
// keeps a computation's schedule across replacing one instruction by a fusion. Adding or
// removing an instruction clears the schedule, so it is taken before the rewrite adds
// anything; the fusion then runs where the replaced instruction ran, and the instructions
// the replacement leaves dead drop out.
//
//   ScheduleKeeper keeper(computation);          // before adding the fusion
//   ... build the fusion ...
//   HLO_RETURN_IF_ERROR(keeper.Replace(old_root, fusion));
#pragma once

#include <utility>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "jx/compiler/hlo/hlo_computation.h"
#include "jx/compiler/hlo/status_macros.h"

namespace jx::cpu {

class ScheduleKeeper {
 public:
  explicit ScheduleKeeper(hlo::HloComputation* computation)
      : computation_(computation), schedule_(computation->schedule()) {}

  // computation->ReplaceInstruction(old_instr, replacement), then the schedule restored.
  absl::Status Replace(hlo::HloInstruction* old_instr, hlo::HloInstruction* replacement) {
    HLO_RETURN_IF_ERROR(computation_->ReplaceInstruction(old_instr, replacement));
    if (schedule_.empty()) return absl::OkStatus();
    absl::flat_hash_set<const hlo::HloInstruction*> live;
    for (const hlo::HloInstruction* instr : computation_->instructions()) live.insert(instr);
    std::vector<hlo::HloInstruction*> kept;
    kept.reserve(schedule_.size());
    for (hlo::HloInstruction* instr : schedule_) {
      if (instr == old_instr) kept.push_back(replacement);
      else if (live.contains(instr)) kept.push_back(instr);
    }
    computation_->set_schedule(std::move(kept));
    return absl::OkStatus();
  }

 private:
  hlo::HloComputation* computation_;
  std::vector<hlo::HloInstruction*> schedule_;
};

}  // namespace jx::cpu
