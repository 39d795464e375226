#include "jx/nn/linear.h"

#include <cmath>

#include "jx/core/errors.h"
#include "jx/lax/dot_general.h"
#include "jx/lax/numpy/numpy.h"
#include "jx/lax/random/random.h"

namespace jx::nn {

namespace jnp = jx::numpy;

namespace {
// Uniform on [-1/sqrt(fan_in), 1/sqrt(fan_in)) (Equinox's and PyTorch's default).
initializers::Initializer DefaultUniform(int64_t fan_in) {
  const double limit = fan_in > 0 ? 1.0 / std::sqrt(static_cast<double>(fan_in)) : 0.0;
  return [limit](const Array& key, const Shape& shape, DType dtype) {
    return jx::random::uniform(key, shape, dtype, -limit, limit);
  };
}
}  // namespace

Linear::Linear(int64_t in_features, int64_t out_features, const Array& key, const LinearOptions& options) {
  JX_CHECK_OP(in_features >= 0 && out_features >= 0, ValueError, "Linear", "in_features and out_features must be ",
              "nonnegative, got ", in_features, " and ", out_features);
  auto [w_key, b_key] = jx::random::split(key);
  const initializers::Initializer w_init = options.weight_init.value_or(DefaultUniform(in_features));
  weight = w_init(w_key, {in_features, out_features}, options.dtype);
  if (options.use_bias) {
    const initializers::Initializer b_init = options.bias_init.value_or(DefaultUniform(in_features));
    bias = b_init(b_key, {out_features}, options.dtype);
  }
}

Array Linear::operator()(const Array& x) const {
  JX_CHECK_OP(x.ndim() >= 1 && x.shape().back() == in_features(), ShapeError, "Linear",
              "input ", x.aval().str(), " must have last dimension in_features = ", in_features(), " (weight ",
              weight.aval().str(), ")");
  // Contract x's last axis with weight's first: [..., in] x [in, out] -> [..., out].
  Array y = lax::dot_general(x, weight, lax::DotDimensionNumbers{{x.ndim() - 1}, {0}, {}, {}});
  return bias.has_value() ? jnp::add(y, *bias) : y;
}

}  // namespace jx::nn
