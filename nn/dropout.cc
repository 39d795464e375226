#include "jx/nn/dropout.h"

#include "jx/core/errors.h"
#include "jx/lax/numpy/numpy.h"
#include "jx/lax/random/random.h"

namespace jx::nn {

namespace jnp = jx::numpy;

Dropout::Dropout(double rate) : rate{rate} {
  JX_CHECK_OP(rate >= 0.0 && rate <= 1.0, ValueError, "Dropout", "rate must be in [0, 1], got ", rate);
}

Array Dropout::operator()(const Array& x, const Array& key, bool training) const {
  const double p = rate.value;
  if (!training || p == 0.0) return x;
  JX_CHECK_OP(IsFloating(x.dtype()), TypeError, "Dropout", "input must be floating point, got ", x.aval().str());
  // Everything dropped: zeros (x / 0 on the kept branch would make the gradient NaN).
  if (p == 1.0) return jnp::zeros_like(x);
  const double keep = 1.0 - p;
  const Array mask = jx::random::bernoulli(key, keep, x.shape());
  return jnp::where(mask, jnp::divide(x, keep), 0.0);
}

}  // namespace jx::nn
