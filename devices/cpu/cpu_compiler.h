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
#include <memory>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "jx/core/device.h"
#include "jx/core/executable.h"
#include "jx/core/jaxpr.h"

namespace jx {

struct CpuJitStats {
  int64_t compiles = 0;    // programs optimized and compiled for the CPU device
  int64_t cache_hits = 0;  // compiles that found their program already compiled
};
// Counters since process start (for tests and diagnostics).
CpuJitStats GetCpuJitStats();

namespace cpu_device {

std::shared_ptr<const Lowering> LowerForCpu(const ClosedJaxpr& jaxpr, const LoweringOptions& options,
                                            const Device& device);

// "jit_<name>" with other characters than [A-Za-z0-9_] as '_': HLO module names are identifiers.
std::string ModuleName(std::string_view name);

// The devices layer's one Status -> exception boundary: "<what>: <message>" as
// NotImplementedError, ResourceExhaustedError or InternalError by the status code.
[[noreturn]] void ThrowStatus(std::string_view what, const absl::Status& status);

}  // namespace cpu_device
}  // namespace jx
