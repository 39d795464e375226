// jx::lax: the primitives by JAX's names.
#pragma once

#include "jx/lax/binary_ops.h"
#include "jx/lax/primitives.h"
#include "jx/lax/registration.h"
#include "jx/lax/unary_ops.h"
