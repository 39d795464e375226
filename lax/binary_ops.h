// Binary elementwise lax primitives. Like JAX's lax, operands must have equal shapes and
// dtypes (weakly typed scalars excepted: jnp does broadcasting and promotion).
//
//   lax::add(x, y); lax::atan2(y, x); lax::shift_left(i, 3);
#pragma once

#include "jx/core/array.h"

namespace jx::lax {

Array add(const Array& x, const Array& y);
Array mul(const Array& x, const Array& y);

}  // namespace jx::lax
