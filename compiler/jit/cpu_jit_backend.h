// jit's compiler backend for the host CPU: a traced jaxpr is lowered to HLO (LowerJaxpr),
// optimized by the CPU pass pipeline (cpu_pipeline.h) and compiled into a CpuExecutable
// that runs on the arrays' buffers directly. Compiled programs are cached on the lowered
// program's text, so equal programs (re-jitted functions, jit objects sharing code, the
// same jit equation bound twice) compile once.
//
// <jx/jx.h> installs it; a program that includes only lower layers runs jit op by op.
//
// JX_DUMP_TO=dir writes, per compile, "<dir>/NNNN.<module>.jaxpr.txt", the HLO as lowered
// and after every pass ("<dir>/NNNN.<module>.MMM.<pass>.txt") and "<dir>/NNNN.<module>.dot",
// a Graphviz drawing of the optimized program with fusions as boxes.
#pragma once

#include <cstdint>

namespace jx {

// Makes the CPU compiler jit's backend (SetJitBackend); idempotent. Returns true.
bool InstallCpuJitBackend();

struct CpuJitStats {
  int64_t compiles = 0;    // programs optimized and compiled
  int64_t cache_hits = 0;  // lowerings whose program was already compiled
};
// Counters since process start (for tests and diagnostics).
CpuJitStats GetCpuJitStats();

namespace jit_backend_internal {
// Every translation unit that includes this header installs the backend before main.
inline const bool kCpuJitBackendInstalled = InstallCpuJitBackend();
}  // namespace jit_backend_internal

}  // namespace jx
