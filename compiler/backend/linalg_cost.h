// The cost analyses' rules for the linalg custom-calls ("jx_linalg_cholesky", ..., which
// lax.linalg lowers to, as XLA lowers to LAPACK calls): each call's LAPACK flop count
// (lax::kernels::LinalgFlops) from its operand shapes and backend_config. Registered with
// HloCostAnalysis::RegisterCustomCallCost by the backends that compile those calls (the CPU
// compiler, the TPU cost model) before they cost a module.
#pragma once

namespace jx::backend {

// Registers the rules once per process; later calls do nothing. Thread-safe.
void RegisterLinalgCustomCallCosts();

}  // namespace jx::backend
