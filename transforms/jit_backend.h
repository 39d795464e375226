// The interface between jit (this layer) and a compiler (a layer above): jit traces a
// function into a closed jaxpr, a JitBackend lowers it, and the lowering compiles into an
// executable. The compiler's CPU backend installs itself (compiler/jit/cpu_jit_backend.h,
// included by <jx/jx.h>); without one, programs run op by op on the eager interpreter.
//
//   SetJitBackend(std::make_shared<MyBackend>());
//   std::shared_ptr<const JitLowering> lowered = CurrentJitBackend().Lower(jaxpr, "f", donated);
//   std::shared_ptr<const JitExecutable> exe = lowered->Compile();
//   Arrays outs = exe->Execute(args);
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/types/span.h"
#include "jx/core/array.h"
#include "jx/core/jaxpr.h"

namespace jx {

// What a compiled program costs (JAX's compiled.cost_analysis()): flops and transcendentals
// counted per element, bytes moved to and from memory (fused intermediates excluded).
struct CostAnalysis {
  double flops = 0;
  double transcendentals = 0;
  double bytes_accessed = 0;
  std::vector<double> bytes_accessed_operand;  // per flattened argument
  double bytes_accessed_output = 0;
};

// Where a compiled program's bytes live (JAX's compiled.memory_analysis()).
struct MemoryAnalysis {
  int64_t argument_size_in_bytes = 0;
  int64_t output_size_in_bytes = 0;
  int64_t temp_size_in_bytes = 0;        // scratch buffers the program allocates per run
  int64_t peak_memory_in_bytes = 0;      // arguments + outputs + temps live at once, at most
  int64_t alias_size_in_bytes = 0;       // outputs written into donated arguments' memory
};

// A program ready to run.
class JitExecutable {
 public:
  virtual ~JitExecutable() = default;
  // args: the jaxpr's inputs, concrete; returns its outputs.
  virtual Arrays Execute(absl::Span<const Array> args) const = 0;
  // The optimized program's text (for the compiler: HLO after every pass).
  virtual std::string as_text() const = 0;
  virtual CostAnalysis cost_analysis() const = 0;
  virtual MemoryAnalysis memory_analysis() const = 0;
};

// A program lowered for a backend, not yet optimized or compiled.
class JitLowering {
 public:
  virtual ~JitLowering() = default;
  virtual std::string as_text() const = 0;
  // Compiles (or fetches from the backend's program cache); throws on failure.
  virtual std::shared_ptr<const JitExecutable> Compile() const = 0;
};

class JitBackend {
 public:
  virtual ~JitBackend() = default;
  // jaxpr's consts are part of the program; donated[i] says input i may be overwritten.
  virtual std::shared_ptr<const JitLowering> Lower(const ClosedJaxpr& jaxpr, const std::string& name,
                                                   const std::vector<bool>& donated) const = 0;
};

// Installs the backend every later compile uses (nullptr: op-by-op evaluation).
void SetJitBackend(std::shared_ptr<const JitBackend> backend);
// The installed backend, or the op-by-op one.
std::shared_ptr<const JitBackend> CurrentJitBackend();

}  // namespace jx
