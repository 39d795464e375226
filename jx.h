// jx: JAX for C++. The one header users include.
//
//   #include <jx/jx.h>
//   namespace jnp = jx::numpy;
//   namespace lax = jx::lax;
//   jx::Array x = jnp::arange(6, jx::float32).reshape({2, 3});
//   std::cout << jnp::sum(lax::sin(x) * 2.0, 1) << "\n";
//   jx::Array y = jx::jit(f, jx::name{"step"})(x);   // compiled for x's device (the host CPU)
#pragma once

#include "jx/core/array.h"
#include "jx/core/caches.h"
#include "jx/core/config.h"
#include "jx/core/dtype.h"
#include "jx/core/errors.h"
#include "jx/core/pytree_print.h"
#include "jx/core/sharding.h"
#include "jx/core/shape.h"
#include "jx/core/typeof.h"
#include "jx/lax/lax.h"
#include "jx/lax/numpy/numpy.h"
#include "jx/lax/random/random.h"
#include "jx/transforms/api.h"
#include "jx/devices/device_put.h"
#include "jx/devices/profiler/profiler.h"
#include "jx/devices/tpu/pod.h"
#include "jx/sharding/mesh.h"
#include "jx/sharding/named_sharding.h"
#include "jx/sharding/collectives.h"
#include "jx/sharding/partition_spec.h"
#include "jx/sharding/shard_map.h"
#include "jx/sharding/sharded_put.h"
#include "jx/sharding/use_mesh.h"
#include "jx/sharding/spmd/reshard.h"
#include "jx/sharding/spmd/sharding_constraint.h"
#include "jx/sharding/spmd/spmd_jit.h"
#include "jx/nn/nn.h"
