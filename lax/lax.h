// jx::lax: the primitives by JAX's names.
#pragma once

#include "jx/lax/binary_ops.h"
#include "jx/lax/control_flow.h"
#include "jx/lax/convert_ops.h"
#include "jx/lax/convolution.h"
#include "jx/lax/cumulative_ops.h"
#include "jx/lax/dot_general.h"
#include "jx/lax/primitives.h"
#include "jx/lax/random_ops.h"
#include "jx/lax/reduction_ops.h"
#include "jx/lax/registration.h"
#include "jx/lax/shape_ops.h"
#include "jx/lax/slicing_ops.h"
#include "jx/lax/sort_ops.h"
#include "jx/lax/stop_gradient.h"
#include "jx/lax/unary_ops.h"
#include "jx/lax/window_ops.h"
