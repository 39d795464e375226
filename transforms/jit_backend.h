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
#include "jx/core/executable.h"
#include "jx/core/jaxpr.h"

namespace jx {

// The interfaces moved to core (core/executable.h); these names remain until jit picks its
// target per call from the arguments' devices.
using JitExecutable = Executable;
using JitLowering = Lowering;

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
