#include "jx/devices/tpu/all_reduce_tally.h"

#include "absl/strings/str_format.h"
#include "jx/compiler/analysis/computation_runs.h"
#include "jx/devices/tpu/pod_program.h"

namespace jx::tpu {
namespace {

// An all-reduce, or the start of an asynchronous one (its pair counts once, by the start).
bool IsAllReduce(const hlo::HloInstruction& instr) {
  return instr.opcode() == hlo::HloOpcode::kAllReduce || hlo::HloOpcodeString(instr.opcode()) == "all-reduce-start";
}

}  // namespace

int64_t AllReduceTally::runs() const {
  int64_t n = 0;
  for (const AllReduceRuns& a : all_reduces) n += a.runs;
  return n;
}

int64_t AllReduceTally::bytes() const {
  int64_t n = 0;
  for (const AllReduceRuns& a : all_reduces) n += a.runs * a.bytes;
  return n;
}

double AllReduceTally::seconds() const {
  double s = 0;
  for (const AllReduceRuns& a : all_reduces) s += static_cast<double>(a.runs) * a.seconds;
  return s;
}

std::string AllReduceTally::ToString() const {
  std::string out = absl::StrFormat("%d all-reduces, %d runs per step, %d B per chip, %.3f us\n", instructions(),
                                    runs(), bytes(), seconds() * 1e6);
  for (const AllReduceRuns& a : all_reduces) {
    absl::StrAppendFormat(&out, "  %s (in %s): %d run%s%s x %d B x %.3f us%s%s\n", a.name, a.computation, a.runs,
                          a.runs == 1 ? "" : "s", a.runs_known ? "" : " (trip count unknown)", a.bytes,
                          a.seconds * 1e6, a.algorithm.empty() ? "" : ", ", a.algorithm);
  }
  return out;
}

AllReduceTally TallyAllReduces(const hlo::HloModule& module, const std::map<std::string, std::shared_ptr<const CollectiveTiming>>& timings) {
  const hlo::ComputationRuns runs = hlo::CountComputationRuns(module);
  AllReduceTally tally;
  std::vector<hlo::HloComputation*> order = module.MakeComputationPostOrder();
  for (auto c = order.rbegin(); c != order.rend(); ++c) {
    const int64_t n = runs.RunsOf(*c);
    if (n == 0) continue;
    for (const hlo::HloInstruction* instr : (*c)->MakeSequentialOrder()) {
      if (!IsAllReduce(*instr)) continue;
      AllReduceRuns a{.name = instr->name(),
                      .computation = (*c)->name(),
                      .runs = n,
                      .runs_known = runs.IsExact(*c),
                      .bytes = hlo::ShapeUtil::ByteSizeOf(instr->shape()),
                      .seconds = 0,
                      .algorithm = {}};
      if (auto it = timings.find(instr->name()); it != timings.end()) {
        a.seconds = it->second->seconds;
        a.algorithm = it->second->algorithm;
      }
      tally.all_reduces.push_back(std::move(a));
    }
  }
  return tally;
}

AllReduceTally PodProgram::all_reduces() const { return TallyAllReduces(*module_, timings_); }

}  // namespace jx::tpu
