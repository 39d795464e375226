// A program compiled for the CPU device, as jit runs it (PJRT's loaded executable): runs the
// CPU backend's executable on the arguments' buffers and returns fresh output arrays, or
// donated arguments' memory when the program writes an output in place. Outputs live on
// `device`: on the host CPU committed when any argument was (JAX's rule; else uncommitted,
// free to follow); on any other device (a simulated chip whose numbers the host computes)
// always committed there.
//
//   auto program = std::make_shared<CpuProgram>(std::move(exe), cost, out_avals, "jit(f)", device);
//   Arrays outs = program->Execute(args);
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "jx/compiler/backend/cpu/cpu_executable.h"
#include "jx/core/executable.h"

namespace jx::cpu_device {

// The backend's memory analysis in JAX's terms (compiled.memory_analysis()).
MemoryAnalysis ToMemoryAnalysis(const cpu::MemoryAnalysis& m);

class CpuProgram final : public Executable {
 public:
  // what: "jit(f)" for messages; device: the CPU device it runs on.
  CpuProgram(std::unique_ptr<cpu::CpuExecutable> exe, CostAnalysis cost, std::vector<ShapedArray> out_avals,
             std::string what, const Device* device);

  Arrays Execute(absl::Span<const Array> args) const override;
  // Printed on request: most programs are never asked, and printing a big one costs as much
  // as a pass.
  std::string as_text() const override { return exe_->module().ToString(); }
  CostAnalysis cost_analysis() const override { return cost_; }
  MemoryAnalysis memory_analysis() const override { return memory_; }

 private:
  std::unique_ptr<cpu::CpuExecutable> exe_;
  CostAnalysis cost_;
  MemoryAnalysis memory_;
  std::vector<ShapedArray> out_avals_;
  std::string what_;
  const Device* device_;
};

}  // namespace jx::cpu_device
