// The reducing collectives of one step of an SPMD program on a pod, the all-reduces and the
// reduce-scatters (FSDP's gradients): each instruction (an asynchronous one counted once, by
// its start) with the times it runs per step (the trip counts of the loops around it
// multiplied: hlo::CountComputationRuns), its bytes per chip per run (its result: TPU.md's V
// for an all-reduce, a chip's block for a reduce-scatter, as the step report counts them) and
// its time on the pod's ICI (the collective timings the cost model recorded), and their totals.
//
//   AllReduceTally t = program->all_reduces();      // PodProgram (pod_program.h)
//   t.runs();       // all-reduces and reduce-scatters run per step, loops included
//   t.bytes();      // bytes they leave per chip per step
//   t.seconds();    // their ICI time per step
//   t.Of("reduce-scatter").runs();                  // one kind
//   std::cout << t.ToString();
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "jx/compiler/backend/tpu/collective_timer.h"
#include "jx/compiler/hlo/hlo_module.h"

namespace jx::tpu {

struct AllReduceRuns {
  std::string name;         // "all-reduce.3"
  std::string kind;         // "all-reduce" or "reduce-scatter"
  std::string computation;  // where it is ("main", "scan_body.2")
  int64_t runs = 1;         // per step
  bool runs_known = true;   // false when a loop around it has no constant trip count (counted once)
  int64_t bytes = 0;        // per chip per run
  double seconds = 0;       // one run on the ICI (0 when not timed: a group of one chip)
  std::string algorithm;    // the interconnect's words
};

struct AllReduceTally {
  std::vector<AllReduceRuns> all_reduces;  // entry first, then callees, each in program order
  int64_t instructions() const { return static_cast<int64_t>(all_reduces.size()); }
  int64_t runs() const;
  int64_t bytes() const;   // sum of runs x bytes
  double seconds() const;  // sum of runs x seconds
  // The entries of one kind ("all-reduce", "reduce-scatter").
  AllReduceTally Of(std::string_view kind) const;
  // "3 collectives (2 all-reduces, 1 reduce-scatter), 12 runs per step, 3072 B per chip,
  // 41.2 us" then one line per instruction.
  std::string ToString() const;
};

// timings: the collectives' times by instruction name (IciCollectiveTimer::timings()).
AllReduceTally TallyAllReduces(const hlo::HloModule& module, const std::map<std::string, std::shared_ptr<const CollectiveTiming>>& timings);

}  // namespace jx::tpu
