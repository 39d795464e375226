// The compile interface a device's client implements (PJRT's PjRtLoadedExecutable, JAX's
// Lowered/Compiled): a traced program is lowered for a target, compiled, and executed on
// concrete arrays. core owns the interface so jit (transforms) can compile for any device
// without knowing the compilers, which live in higher layers (compiler/, devices/).
//
//   const Client& client = device->client();
//   std::shared_ptr<const Lowering> lowered = client.Lower(jaxpr, {.name = "f"});
//   std::shared_ptr<const Executable> exe = lowered->Compile();
//   Arrays outs = exe->Execute(args);
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/types/span.h"
#include "jx/core/array.h"

namespace jx {

class Device;

// One instruction's row of a cost analysis (what a user prints to see where a step goes).
struct InstructionCost {
  std::string name;       // HLO instruction name ("fusion.3", "dot.1")
  std::string opcode;     // HLO opcode ("fusion", "dot")
  std::string unit;       // where it runs: "mxu", "vpu", "dma", "ici" (a TPU); "cpu" on the host
  double flops = 0;
  double transcendentals = 0;
  double bytes = 0;       // bytes moved to and from HBM (main memory)
  double seconds = 0;     // predicted time (a simulated chip) or 0 when not modelled
  std::string bound_by{};  // "compute", "memory", "overhead" or "" when not modelled
};

// What a compiled program costs (JAX's compiled.cost_analysis()): flops and transcendentals
// counted per element, bytes moved to and from memory (fused intermediates excluded). The
// time fields are filled by targets with a cost model (the simulated TPU chips).
struct CostAnalysis {
  double flops = 0;
  double transcendentals = 0;
  double bytes_accessed = 0;
  std::vector<double> bytes_accessed_operand;  // per flattened argument
  double bytes_accessed_output = 0;
  double bytes_accessed_hbm = 0;               // per memory space (TPU targets)
  double bytes_accessed_vmem = 0;
  double predicted_seconds = 0;
  double compute_seconds = 0;
  double memory_seconds = 0;
  double communication_seconds = 0;
  double mxu_utilization = 0;                  // useful MXU flops / MXU peak over the program
  double padding_waste = 0;                    // fraction of MXU work spent on padding
  bool f64_emulated = false;                   // f64 work emulated in software (TPU): warn once
  std::vector<InstructionCost> instructions;   // per top-level instruction, in program order
};

// Where a compiled program's bytes live (JAX's compiled.memory_analysis()).
struct MemoryAnalysis {
  int64_t argument_size_in_bytes = 0;
  int64_t output_size_in_bytes = 0;
  int64_t temp_size_in_bytes = 0;        // scratch buffers the program allocates per run
  int64_t peak_memory_in_bytes = 0;      // arguments + outputs + temps live at once, at most
  int64_t alias_size_in_bytes = 0;       // outputs written into donated arguments' memory
};

// A program ready to run on the devices it was compiled for.
class Executable {
 public:
  virtual ~Executable() = default;
  // args: the jaxpr's inputs, concrete; returns its outputs, on the executable's device.
  virtual Arrays Execute(absl::Span<const Array> args) const = 0;
  // The optimized program's text (for the compiler: HLO after every pass).
  virtual std::string as_text() const = 0;
  virtual CostAnalysis cost_analysis() const = 0;
  virtual MemoryAnalysis memory_analysis() const = 0;
};

// A program lowered for a target, not yet optimized or compiled.
class Lowering {
 public:
  virtual ~Lowering() = default;
  virtual std::string as_text() const = 0;
  // Compiles (or fetches from the client's program cache); throws on failure.
  virtual std::shared_ptr<const Executable> Compile() const = 0;
};

// Everything lowering needs besides the program (one struct, so a new option is one field).
struct LoweringOptions {
  std::string name;                          // the function's name: "jit_<name>" in HLO, logs, errors
  std::vector<bool> donated = {};            // per argument leaf; empty when none donated
  std::vector<const Device*> device_assignment = {};  // the devices the program runs on (one today)
};

}  // namespace jx
