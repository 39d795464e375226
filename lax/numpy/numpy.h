// jx::numpy (jnp): the NumPy API of JAX on jx arrays, with NumPy broadcasting and JAX's type
// promotion (weakly typed C++ scalars, 32-bit defaults, explicit 64-bit types kept).
//
//   #include <jx/jx.h>
//   namespace jnp = jx::numpy;
//   jx::Array x = jnp::linspace(0.0, 1.0, 6).reshape({2, 3});
//   jx::Array y = jnp::sum(jnp::sin(x) * 2.0, 1);          // f32[2]
//   jx::Array z = jnp::einsum("ij,kj->ik", x, x);           // f32[2,2]
//   bool ok = jnp::allclose(z, jnp::matmul(x, x.T()));
#pragma once

#include "jx/lax/numpy/creation.h"
#include "jx/lax/numpy/linalg.h"
#include "jx/lax/numpy/linalg_ops.h"
#include "jx/lax/numpy/manipulation.h"
#include "jx/lax/numpy/math.h"
#include "jx/lax/numpy/operators.h"
#include "jx/lax/numpy/promotion.h"
#include "jx/lax/numpy/reductions.h"

namespace jx::numpy {
// jnp.float32, jnp.int32, ...: the dtypes under their jnp names.
using ::jx::bfloat16;
using ::jx::bool_;
using ::jx::float16;
using ::jx::float32;
using ::jx::float64;
using ::jx::int16;
using ::jx::int32;
using ::jx::int64;
using ::jx::int8;
using ::jx::uint16;
using ::jx::uint32;
using ::jx::uint64;
using ::jx::uint8;
}  // namespace jx::numpy
