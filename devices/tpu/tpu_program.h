// A program compiled for a simulated TPU chip: the host runs its numbers (a CpuProgram of the
// TPU-rewritten module, whose outputs are allocated in the chip's HBM), the program's scratch
// is reserved in the chip's HBM while it runs, and the chip's clock advances by the cost
// model's predicted time, with per-unit busy time from the per-instruction table. Under an
// active profiler trace, the step and each instruction are recorded at their simulated times.
//
//   Arrays outs = program->Execute(args);        // on the chip; chip.activity() moved on
//   program->cost_analysis().instructions;       // where the step's time goes
#pragma once

#include <memory>
#include <string>

#include "jx/compiler/hlo/hlo_module.h"
#include "jx/core/executable.h"
#include "jx/devices/tpu/tpu_chip.h"

namespace jx::tpu {

class TpuProgram final : public Executable {
 public:
  // host: runs the numbers on the host with outputs on chip. module: the TPU-optimized
  // program (as_text() prints it, with its tilings). what: "jit(f)".
  TpuProgram(std::shared_ptr<const Executable> host, std::unique_ptr<hlo::HloModule> module, CostAnalysis cost,
             const TpuChip& chip, std::string what);

  Arrays Execute(absl::Span<const Array> args) const override;
  std::string as_text() const override { return module_->ToString(); }
  CostAnalysis cost_analysis() const override { return cost_; }
  MemoryAnalysis memory_analysis() const override { return host_->memory_analysis(); }
  const TpuChip& chip() const { return chip_; }

 private:
  void RecordTrace(const StepTimeline& step) const;

  std::shared_ptr<const Executable> host_;
  std::unique_ptr<hlo::HloModule> module_;
  CostAnalysis cost_;
  const TpuChip& chip_;
  std::string what_;
};

}  // namespace jx::tpu
