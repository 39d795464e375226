// nn::BatchNorm: statistics over every axis but the feature axis, computed in float32 or wider.
#include "jx/nn/batch_norm.h"

#include <vector>

#include "jx/core/errors.h"
#include "jx/core/shape.h"
#include "jx/lax/numpy/creation.h"
#include "jx/lax/numpy/math.h"
#include "jx/lax/numpy/operators.h"
#include "jx/lax/numpy/reductions.h"
#include "jx/lax/shape_ops.h"

namespace jx::nn {

namespace jnp = jx::numpy;

BatchNorm::BatchNorm(int64_t features, const BatchNormOptions& options)
    : num_features{features},
      axis{options.axis},
      momentum{options.momentum},
      eps{options.eps},
      param_dtype{options.dtype} {
  constexpr std::string_view kOp = "nn.BatchNorm";
  if (features < 1) ThrowOpError<ValueError>(kOp, "num_features must be positive, got ", features);
  if (!(options.momentum >= 0.0 && options.momentum <= 1.0)) {
    ThrowOpError<ValueError>(kOp, "momentum must be in [0, 1], got ", options.momentum);
  }
  if (!(options.eps >= 0.0)) ThrowOpError<ValueError>(kOp, "eps must be nonnegative, got ", options.eps);
  if (!IsFloating(options.dtype)) {
    ThrowOpError<TypeError>(kOp, "dtype must be floating point, got ", dtype_name(options.dtype));
  }
  if (options.use_scale) scale = jnp::ones({features}, options.dtype);
  if (options.use_bias) bias = jnp::zeros({features}, options.dtype);
}

BatchNormState BatchNorm::init_state() const {
  return {jnp::zeros({num_features.value}, param_dtype.value), jnp::ones({num_features.value}, param_dtype.value)};
}

std::pair<Array, BatchNormState> BatchNorm::operator()(const Array& x, const BatchNormState& state,
                                                       bool training) const {
  constexpr std::string_view kOp = "nn.BatchNorm";
  if (!IsFloating(x.dtype())) {
    ThrowOpError<TypeError>(kOp, "expects a floating-point input, got x ", x.aval().str());
  }
  const int64_t ax = CanonicalizeAxis(axis.value, x.ndim(), kOp);
  const int64_t f = num_features.value;
  if (x.shape()[ax] != f) {
    ThrowOpError<ShapeError>(kOp, "x ", x.aval().str(), " has ", x.shape()[ax], " features on axis ", axis.value,
                             " but the module has num_features=", f);
  }
  if (state.mean.shape() != Shape{f} || state.var.shape() != Shape{f}) {
    ThrowOpError<ShapeError>(kOp, "state mean ", state.mean.aval().str(), " and var ", state.var.aval().str(),
                             " must both be [", f, "] (from init_state())");
  }
  // Statistics in float32 at least, as Flax's _compute_stats.
  const DType compute = promote_types(x.dtype(), float32);
  const Array xc = x.astype(compute);
  std::vector<int64_t> reduce_axes;
  for (int64_t i = 0; i < x.ndim(); ++i) {
    if (i != ax) reduce_axes.push_back(i);
  }
  Shape bshape(x.ndim(), 1);
  bshape[ax] = f;

  Array mean, var;
  BatchNormState next = state;
  if (training) {
    mean = jnp::mean(xc, reduce_axes);
    var = jnp::mean(jnp::square(xc - lax::reshape(mean, bshape)), reduce_axes);
    const double m = momentum.value;
    next.mean = (state.mean.astype(compute) * m + mean * (1.0 - m)).astype(state.mean.dtype());
    next.var = (state.var.astype(compute) * m + var * (1.0 - m)).astype(state.var.dtype());
  } else {
    mean = state.mean.astype(compute);
    var = state.var.astype(compute);
  }
  Array y = (xc - lax::reshape(mean, bshape)) * lax::reshape(jnp::rsqrt(var + eps.value), bshape);
  if (scale) y = y * lax::reshape(scale->astype(compute), bshape);
  if (bias) y = y + lax::reshape(bias->astype(compute), bshape);
  return {y.astype(x.dtype()), next};
}

}  // namespace jx::nn
