// Internal to lax: the generic reduction primitive (JAX's reduce_p) and its registrations.
#pragma once

#include "jx/core/primitive.h"
#include "jx/core/registry.h"

namespace jx::lax {

// operands..., init_values... -> outputs...; params computation (a label), dimensions
// (canonical, distinct) and jaxpr (the reducer over scalars: (a..., b...) -> c...).
inline const Primitive kReduce = Primitive::Intern("reduce");

namespace internal {
void RegisterGenericReduce(Registry& r);          // reduce_generic.cc
void RegisterGenericReduceLowering(Registry& r);  // reduce_generic_lowering.cc
}  // namespace internal

}  // namespace jx::lax
