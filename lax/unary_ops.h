// Unary elementwise lax primitives.
//
//   lax::sin(x); lax::integer_pow(x, 3); lax::logistic(x);
#pragma once

#include "jx/core/array.h"

namespace jx::lax {

Array neg(const Array& x);
Array exp(const Array& x);
Array sin(const Array& x);
Array tanh(const Array& x);

}  // namespace jx::lax
