// A step's communication per collective kind: the collectives of a StepReport summed by kind
// (all-gather, reduce-scatter, all-reduce, all-to-all, collective-permute), each split into
// the part chips waited for (exposed) and the part hidden behind compute (overlapped), as
// XLA's profiles group collective ops by kind. The step and plan reports print it.
//
//   for (const CollectiveKindTotals& k : CommunicationByKind(plan.step)) {
//     k.kind; k.seconds; k.exposed_seconds; k.overlapped_seconds();
//   }
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "jx/devices/tpu/pod_step.h"

namespace jx::tpu {

struct CollectiveKindTotals {
  std::string kind;            // as CollectiveStepEntry::kind
  int64_t collectives = 0;     // instructions of that kind
  int64_t runs = 0;            // their runs this step
  double seconds = 0;          // on the interconnect
  double exposed_seconds = 0;  // waited for at the dones (all of a synchronous one)
  double overlapped_seconds() const { return seconds - exposed_seconds; }
};

// The kinds the step ran, in XLA's collective order (all-gather, reduce-scatter, all-reduce,
// all-to-all, collective-permute, i.e. ppermute), then any other kind by name. Their seconds
// and exposed seconds add up to the step's communication_seconds() and
// exposed_communication_seconds().
std::vector<CollectiveKindTotals> CommunicationByKind(const StepReport& step);

}  // namespace jx::tpu
