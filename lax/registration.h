// Registration of every lax primitive family's rules into the global registry. Each family
// file defines one RegisterX(Registry&); RegisterAll calls them all, once.
#pragma once

#include "jx/core/registry.h"

namespace jx::lax {

// Registers all built-in primitives. Idempotent and thread-safe; lax ops call it lazily, so
// users never need to.
void RegisterAll();

namespace internal {
void RegisterUnaryOps(Registry& r);
void RegisterBinaryOps(Registry& r);
void RegisterConvertOps(Registry& r);
void RegisterReductionOps(Registry& r);
void RegisterCumulativeOps(Registry& r);
void RegisterShapeOps(Registry& r);
void RegisterSlicingOps(Registry& r);
void RegisterGatherScatter(Registry& r);
void RegisterDotGeneral(Registry& r);
void RegisterConvolution(Registry& r);
void RegisterWindowOps(Registry& r);
void RegisterSortOps(Registry& r);
void RegisterRandomOps(Registry& r);
void RegisterStopGradient(Registry& r);
void RegisterControlFlow(Registry& r);
}  // namespace internal
}  // namespace jx::lax
