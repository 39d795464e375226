#include "jx/nn/normalization.h"

#include <numeric>
#include <string>

#include "jx/core/errors.h"
#include "jx/lax/numpy/numpy.h"

namespace jx::nn {

namespace jnp = jx::numpy;

namespace {

void CheckNormalizedShape(const Shape& shape, double eps, std::string_view module) {
  for (int64_t d : shape) {
    JX_CHECK_OP(d > 0, ValueError, module, "normalized_shape must have positive dimensions, got ",
                ShapedArray{shape, float32}.str());
  }
  JX_CHECK_OP(eps >= 0, ValueError, module, "eps must be nonnegative, got ", eps);
}

// The trailing axes x is normalized over, after checking that x ends in normalized_shape.
std::vector<int64_t> TrailingAxes(const Array& x, const Shape& normalized_shape, std::string_view module) {
  const int64_t k = static_cast<int64_t>(normalized_shape.size());
  const bool ok = x.ndim() >= k && std::equal(normalized_shape.begin(), normalized_shape.end(), x.shape().end() - k);
  JX_CHECK_OP(ok, ShapeError, module, "input ", x.aval().str(), " must end in the normalized shape ",
              ShapedArray{normalized_shape, x.dtype()}.str());
  std::vector<int64_t> axes(k);
  std::iota(axes.begin(), axes.end(), x.ndim() - k);
  return axes;
}

}  // namespace

LayerNorm::LayerNorm(int64_t dim, const LayerNormOptions& options) : LayerNorm(Shape{dim}, options) {}

LayerNorm::LayerNorm(const Shape& shape, const LayerNormOptions& options)
    : normalized_shape{shape}, eps{options.eps} {
  CheckNormalizedShape(shape, options.eps, "LayerNorm");
  if (options.elementwise_affine) {
    weight = jnp::ones(shape, options.dtype);
    if (options.use_bias) bias = jnp::zeros(shape, options.dtype);
  }
}

Array LayerNorm::operator()(const Array& x) const {
  const std::vector<int64_t> axes = TrailingAxes(x, normalized_shape.value, "LayerNorm");
  const Array mean = jnp::mean(x, axes, true);
  const Array variance = jnp::var(x, axes, true);
  Array y = jnp::multiply(jnp::subtract(x, mean), jnp::rsqrt(jnp::add(variance, eps.value)));
  if (weight.has_value()) y = jnp::multiply(y, *weight);
  if (bias.has_value()) y = jnp::add(y, *bias);
  return y;
}

RMSNorm::RMSNorm(int64_t dim, const RMSNormOptions& options) : RMSNorm(Shape{dim}, options) {}

RMSNorm::RMSNorm(const Shape& shape, const RMSNormOptions& options) : normalized_shape{shape}, eps{options.eps} {
  CheckNormalizedShape(shape, options.eps, "RMSNorm");
  if (options.elementwise_affine) weight = jnp::ones(shape, options.dtype);
}

Array RMSNorm::operator()(const Array& x) const {
  const std::vector<int64_t> axes = TrailingAxes(x, normalized_shape.value, "RMSNorm");
  const Array mean_square = jnp::mean(jnp::square(x), axes, true);
  Array y = jnp::multiply(x, jnp::rsqrt(jnp::add(mean_square, eps.value)));
  if (weight.has_value()) y = jnp::multiply(y, *weight);
  return y;
}

}  // namespace jx::nn
