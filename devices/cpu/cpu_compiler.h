// The CPU device's compiler driver: a traced jaxpr is lowered to HLO (LowerJaxpr, module
// "jit_<name>"), optimized by the CPU pass pipeline (cpu_pipeline.h) and compiled by the CPU
// backend into a CpuProgram that runs on the arrays' buffers. Compiled programs are shared
// through the ProgramCache. The CpuClient's Lower is LowerForCpu.
//
//   std::shared_ptr<const Lowering> lowering = LowerForCpu(jaxpr, {.name = "f"}, cpu_device);
//   lowering->as_text();                    // HLO as lowered
//   auto exe = lowering->Compile();         // optimized, compiled (or found in the cache)
//
// JX_CPU_FALLBACK=error: an instruction without a native CPU kernel fails the compile instead
// of running on the reference evaluator (how the no-fallback test proves coverage).
// Dumps and compile-time logs: compile_log.h.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "jx/compiler/hlo/hlo_fingerprint.h"
#include "jx/core/device.h"
#include "jx/core/executable.h"
#include "jx/core/jaxpr.h"
#include "jx/devices/cpu/compile_log.h"

namespace jx {

struct CpuJitStats {
  int64_t compiles = 0;    // programs optimized and compiled for the CPU device
  int64_t cache_hits = 0;  // compiles that found their program already compiled
};
// Counters since process start (for tests and diagnostics).
CpuJitStats GetCpuJitStats();

namespace hlo {
class HloModule;
}
namespace cpu {
class CpuExecutable;
}

namespace cpu_device {

// A jaxpr lowered to HLO, before any pass: what every client that compiles through the
// host's backend starts from (the CPU's, and the simulated chips').
struct LoweredModule {
  std::unique_ptr<hlo::HloModule> module;  // "jit_<name>", the root a tuple of the outputs
  // Lowers the same jaxpr again into an equal module (the same text, names and ids): what a
  // Lowering whose module a compile took hands out afterwards (HloLowering).
  std::function<std::unique_ptr<hlo::HloModule>()> lower_again;
  hlo::HloFingerprint fingerprint;         // module's, for the program cache key
  std::vector<bool> donated_params;        // per entry parameter; empty when none is donated
  CompileDump dump;                        // this compile's JX_DUMP_TO files
  std::string what;                        // "jit(<name>)", for messages
};
// Lowers (writing the jaxpr and lowered HLO dumps) and checks the donation flags against
// the parameters; throws like LowerForCpu.
LoweredModule LowerToHlo(const ClosedJaxpr& jaxpr, const LoweringOptions& options);

// Compiles an optimized module into a host executable with the donations given and the
// evaluator fallback JX_CPU_FALLBACK allows, warning about donations no output can take.
// `verified`: the module is as a verifying pipeline left it (the backend need not verify it
// again unless its own rewrites change it).
std::unique_ptr<cpu::CpuExecutable> CompileOnHost(std::unique_ptr<hlo::HloModule> module,
                                                  const std::vector<bool>& donated_params, std::string_view what,
                                                  bool verified = false);
// Whether JX_CPU_FALLBACK lets an instruction without a native kernel run on the evaluator
// (program caches key on it).
bool EvaluatorFallbackAllowed();

std::shared_ptr<const Lowering> LowerForCpu(const ClosedJaxpr& jaxpr, const LoweringOptions& options,
                                            const Device& device);

// A Lowering whose program is an HLO module: every client that compiles through the host's
// backend (the CPU's, a TPU chip's, a pod's). Analyses of the program as lowered read it here
// and copy it with HloModule::Clone when they rewrite it, instead of printing and parsing it.
//
// The first compile takes the lowered module for its pipeline to rewrite in place: a module
// of 100k instructions is ~150 MB, and copying it cost as much as a third of the passes while
// the usual caller (jit: lower, compile, drop the lowering) never reads it again. Whoever asks
// for the module after that gets it lowered again (LoweredModule::lower_again: the same
// program), so as_text() gives the lowered program before and after compiling, and a Lowering
// compiles any number of times. A module someone has read through module() is never taken:
// the reference stays valid, and compiles copy it.
class HloLowering : public Lowering {
 public:
  // Takes `lowered`'s module and lower_again; the subclass keeps the rest.
  explicit HloLowering(LoweredModule& lowered);
  // The module as lowered, before any pass.
  const hlo::HloModule& module() const;
  std::string as_text() const override;  // module()'s text
  // A module as lowered for a compile's pipeline (or a pod plan) to rewrite: the lowered one
  // itself when nobody has read it (no copy), else a copy of it.
  std::unique_ptr<hlo::HloModule> ModuleToCompile() const;

 private:
  // The lowered module under mutex_, lowered again when a compile took it.
  const hlo::HloModule& LoweredLocked() const;

  mutable std::mutex mutex_;
  mutable std::unique_ptr<hlo::HloModule> module_;  // null once a compile took it
  mutable bool read_ = false;                       // module() handed out a reference to module_
  std::function<std::unique_ptr<hlo::HloModule>()> lower_again_;
};
// lowering's module; InternalError naming `what` when lowering is not an HloLowering.
const hlo::HloModule& LoweredHloModule(const Lowering& lowering, std::string_view what);
// lowering's ModuleToCompile(): a module as lowered the caller may rewrite; InternalError
// naming `what` when lowering is not an HloLowering.
std::unique_ptr<hlo::HloModule> LoweredModuleToRewrite(const Lowering& lowering, std::string_view what);

// "jit_<name>" with other characters than [A-Za-z0-9_] as '_': HLO module names are identifiers.
std::string ModuleName(std::string_view name);

// The devices layer's one Status -> exception boundary: "<what>: <message>" as
// NotImplementedError, ResourceExhaustedError or InternalError by the status code.
[[noreturn]] void ThrowStatus(std::string_view what, const absl::Status& status);

}  // namespace cpu_device
}  // namespace jx
