#include "jx/devices/tpu/tpu_program.h"

#include <utility>
#include <vector>

#include "jx/core/str_util.h"
#include "jx/devices/profiler/profiler.h"

namespace jx::tpu {
namespace {

constexpr double kMicros = 1e6;

}  // namespace

TpuProgram::TpuProgram(std::shared_ptr<const Executable> host, std::unique_ptr<hlo::HloModule> module,
                       CostAnalysis cost, const TpuChip& chip, std::string what)
    : host_(std::move(host)), module_(std::move(module)), cost_(std::move(cost)), chip_(chip), what_(std::move(what)) {}

Arrays TpuProgram::Execute(absl::Span<const Array> args) const {
  Arrays outs;
  {
    const int64_t scratch = host_->memory_analysis().temp_size_in_bytes;
    ScopedReservation temps(*chip_.hbm(), scratch, StrCat("reserving ", what_, "'s scratch of"));
    outs = host_->Execute(args);
  }
  const StepTimeline step = chip_.RunStep(cost_);
  if (profiler::is_tracing()) RecordTrace(step);
  return outs;
}

void TpuProgram::RecordTrace(const StepTimeline& step) const {
  std::vector<profiler::Slice> slices;
  slices.reserve(step.instructions.size() + 1);
  slices.push_back({.lane = std::string(profiler::kStepsLane),
                    .name = what_,
                    .start_us = step.start_seconds * kMicros,
                    .duration_us = step.seconds * kMicros,
                    .args = {{"flops", cost_.flops},
                             {"bytes_accessed", cost_.bytes_accessed},
                             {"mxu_utilization", cost_.mxu_utilization}}});
  for (const PlacedInstruction& p : step.instructions) {
    slices.push_back({.lane = p.lane,
                      .name = p.name,
                      .start_us = p.start_seconds * kMicros,
                      .duration_us = p.seconds * kMicros,
                      .args = {{"opcode", p.cost->opcode},
                               {"flops", p.cost->flops},
                               {"bytes", p.cost->bytes},
                               {"bound_by", p.cost->bound_by}}});
  }
  profiler::Record(chip_, std::move(slices));
}

}  // namespace jx::tpu
