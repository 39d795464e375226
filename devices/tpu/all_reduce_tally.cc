#include "jx/devices/tpu/all_reduce_tally.h"

#include "absl/strings/str_format.h"
#include "jx/compiler/analysis/computation_runs.h"
#include "jx/devices/tpu/pod_program.h"

namespace jx::tpu {
namespace {

// "all-reduce" or "reduce-scatter" for one of those or the start of an asynchronous one (its
// pair counts once, by the start); empty for other instructions.
std::string_view ReducingKind(const hlo::HloInstruction& instr) {
  switch (instr.opcode()) {
    case hlo::HloOpcode::kAllReduce: case hlo::HloOpcode::kAllReduceStart:
      return "all-reduce";
    case hlo::HloOpcode::kReduceScatter: case hlo::HloOpcode::kReduceScatterStart:
      return "reduce-scatter";
    default:
      return {};
  }
}

// The bytes a run leaves a chip: an asynchronous reduce-scatter's start holds (operand, result).
int64_t ResultBytes(const hlo::HloInstruction& instr) {
  if (instr.opcode() == hlo::HloOpcode::kReduceScatterStart && instr.shape().IsTuple()) {
    return hlo::ShapeUtil::ByteSizeOf(instr.shape().tuple_shapes(1));
  }
  return hlo::ShapeUtil::ByteSizeOf(instr.shape());
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

AllReduceTally AllReduceTally::Of(std::string_view kind) const {
  AllReduceTally t;
  for (const AllReduceRuns& a : all_reduces) {
    if (a.kind == kind) t.all_reduces.push_back(a);
  }
  return t;
}

std::string AllReduceTally::ToString() const {
  const int64_t scatters = Of("reduce-scatter").instructions();
  std::string out = absl::StrFormat("%d collectives (%d all-reduces, %d reduce-scatters), %d runs per step, %d B per "
                                    "chip, %.3f us\n",
                                    instructions(), instructions() - scatters, scatters, runs(), bytes(),
                                    seconds() * 1e6);
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
      const std::string_view kind = ReducingKind(*instr);
      if (kind.empty()) continue;
      AllReduceRuns a{.name = instr->name(),
                      .kind = std::string(kind),
                      .computation = (*c)->name(),
                      .runs = n,
                      .runs_known = runs.IsExact(*c),
                      .bytes = ResultBytes(*instr),
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
