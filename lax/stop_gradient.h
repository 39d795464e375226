// lax::stop_gradient: the identity whose derivative is zero (JAX's lax.stop_gradient).
// Integer and bool inputs pass through unchanged.
//
//   Array y = lax::stop_gradient(x);   // grad(f) sees no path through y
#pragma once

#include "jx/core/array.h"
#include "jx/core/primitive.h"

namespace jx::lax {

inline const Primitive kStopGradient = Primitive::Intern("stop_gradient");

Array stop_gradient(const Array& x);

}  // namespace jx::lax
