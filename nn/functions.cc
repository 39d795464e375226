#include "jx/nn/functions.h"

#include <cmath>
#include <numbers>
#include <tuple>
#include <utility>
#include <vector>

#include "jx/core/errors.h"
#include "jx/lax/lax.h"
#include "jx/lax/numpy/numpy.h"
#include "jx/transforms/custom_derivatives.h"

namespace jx::nn {
namespace {

namespace jnp = jx::numpy;

// x as an inexact array (integers and bool compute in float32), as jnp's float functions.
Array Inexact(const Array& x, std::string_view op) { return jnp::promote_args_inexact(op, {x})[0]; }

Array ZerosLike(const Array& x) { return jnp::zeros_like(x); }

}  // namespace

Array relu(const Array& x) {
  // JAX's relu is a custom_jvp whose tangent is g where x > 0 and 0 elsewhere (0 at x == 0,
  // where max's own rule would give g / 2).
  static const auto impl = custom_jvp([](const Array& a) { return lax::max(a, ZerosLike(a)); },
                                      [](const std::tuple<Array>& p, const std::tuple<Array>& t) {
                                        const auto& [a] = p;
                                        const auto& [ta] = t;
                                        const Array zero = ZerosLike(a);
                                        return std::pair{lax::max(a, zero), lax::select(lax::gt(a, zero), ta, ZerosLike(ta))};
                                      });
  return impl(x);
}

Array relu6(const Array& x) {
  // As JAX's: the tangent is g strictly inside (0, 6), 0 at and beyond both kinks.
  static const auto impl = custom_jvp(
      [](const Array& a) { return jnp::minimum(jnp::maximum(a, 0), 6.0); },
      [](const std::tuple<Array>& p, const std::tuple<Array>& t) {
        const auto& [a] = p;
        const auto& [ta] = t;
        Array inside = jnp::logical_and(jnp::greater(a, 0), jnp::less(a, 6.0));
        return std::pair{jnp::minimum(jnp::maximum(a, 0), 6.0), lax::select(inside, ta, ZerosLike(ta))};
      });
  return impl(x);
}

Array leaky_relu(const Array& x, double negative_slope) {
  return jnp::where(jnp::greater_equal(x, 0), x, jnp::multiply(negative_slope, x));
}

Array elu(const Array& x, double alpha) {
  const Array a = Inexact(x, "elu");
  // expm1 sees only the non-positive side, so a large x cannot overflow into the unused branch
  // (whose infinite derivative would otherwise poison the gradient).
  const Array positive = jnp::greater(a, 0);
  const Array safe = jnp::where(positive, 0.0, a);
  return jnp::where(positive, a, jnp::multiply(alpha, jnp::expm1(safe)));
}

Array celu(const Array& x, double alpha) {
  const Array a = Inexact(x, "celu");
  return jnp::add(jnp::maximum(a, 0.0), jnp::multiply(alpha, jnp::expm1(jnp::divide(jnp::minimum(a, 0.0), alpha))));
}

Array selu(const Array& x) {
  constexpr double kAlpha = 1.6732632423543772848170429916717;
  constexpr double kScale = 1.0507009873554804934193349852946;
  return jnp::multiply(kScale, elu(x, kAlpha));
}

Array gelu(const Array& x, bool approximate) {
  const Array a = Inexact(x, "gelu");
  if (approximate) {
    const double sqrt_2_over_pi = std::sqrt(2.0 / std::numbers::pi);
    Array inner = jnp::multiply(sqrt_2_over_pi, jnp::add(a, jnp::multiply(0.044715, lax::integer_pow(a, 3))));
    Array cdf = jnp::multiply(0.5, jnp::add(1.0, jnp::tanh(inner)));
    return jnp::multiply(a, cdf);
  }
  Array cdf = jnp::multiply(0.5, jnp::add(lax::erf(jnp::multiply(a, 1.0 / std::numbers::sqrt2)), 1.0));
  return jnp::multiply(a, cdf);
}

Array sigmoid(const Array& x) { return lax::logistic(Inexact(x, "sigmoid")); }
Array silu(const Array& x) {
  const Array a = Inexact(x, "silu");
  return jnp::multiply(a, lax::logistic(a));
}
Array swish(const Array& x) { return silu(x); }
Array softplus(const Array& x) {
  // logaddexp(x, 0) with JAX's logaddexp derivative t * exp(x - out) = t * sigmoid(x): exact
  // everywhere, including x == 0 where max's and abs's kinks meet (jnp::logaddexp's own
  // derivative gives 0 there, not 1/2).
  static const auto impl = custom_jvp([](const Array& a) { return jnp::logaddexp(a, 0.0); },
                                      [](const std::tuple<Array>& p, const std::tuple<Array>& t) {
                                        const auto& [a] = p;
                                        const auto& [ta] = t;
                                        return std::pair{jnp::logaddexp(a, 0.0), jnp::multiply(ta, lax::logistic(a))};
                                      });
  return impl(Inexact(x, "softplus"));
}
Array log_sigmoid(const Array& x) { return jnp::negative(softplus(jnp::negative(Inexact(x, "log_sigmoid")))); }
Array soft_sign(const Array& x) {
  const Array a = Inexact(x, "soft_sign");
  return jnp::divide(a, jnp::add(jnp::abs(a), 1.0));
}
Array mish(const Array& x) {
  const Array a = Inexact(x, "mish");
  return jnp::multiply(a, jnp::tanh(softplus(a)));
}

Array hard_tanh(const Array& x) {
  return jnp::where(jnp::greater(x, 1.0), 1.0, jnp::where(jnp::less(x, -1.0), -1.0, x));
}
Array hard_sigmoid(const Array& x) { return jnp::divide(relu6(jnp::add(Inexact(x, "hard_sigmoid"), 3.0)), 6.0); }
Array hard_silu(const Array& x) {
  const Array a = Inexact(x, "hard_silu");
  return jnp::multiply(a, hard_sigmoid(a));
}
Array hard_swish(const Array& x) { return hard_silu(x); }

Array glu(const Array& x, int64_t axis) {
  const int64_t ax = Axis(axis).Canonical(x.ndim(), "glu")[0];
  JX_CHECK_OP(x.shape()[ax] % 2 == 0, ShapeError, "glu", "axis ", axis, " of ", x.aval().str(),
              " must have an even size to split in two halves");
  const std::vector<Array> halves = jnp::split(x, 2, ax);
  return jnp::multiply(halves[0], sigmoid(halves[1]));
}

Array softmax(const Array& x, const Axis& axis) {
  const Array a = Inexact(x, "softmax");
  // JAX's custom_jvp: y * (t - sum(y * t)), cheaper and better conditioned than
  // differentiating through exp and the division.
  auto impl = custom_jvp(
      [axis](const Array& v) {
        Array unnormalized = jnp::exp(jnp::subtract(v, lax::stop_gradient(jnp::max(v, axis, true))));
        return jnp::divide(unnormalized, jnp::sum(unnormalized, axis, true));
      },
      [axis](const std::tuple<Array>& p, const std::tuple<Array>& t) {
        const auto& [v] = p;
        const auto& [tv] = t;
        Array unnormalized = jnp::exp(jnp::subtract(v, jnp::max(v, axis, true)));
        Array y = jnp::divide(unnormalized, jnp::sum(unnormalized, axis, true));
        Array ty = jnp::multiply(y, jnp::subtract(tv, jnp::sum(jnp::multiply(y, tv), axis, true)));
        return std::pair{y, ty};
      });
  return impl(a);
}

Array log_softmax(const Array& x, const Axis& axis) {
  const Array a = Inexact(x, "log_softmax");
  const Array shifted = jnp::subtract(a, lax::stop_gradient(jnp::max(a, axis, true)));
  return jnp::subtract(shifted, jnp::log(jnp::sum(jnp::exp(shifted), axis, true)));
}

Array logsumexp(const Array& x, const Axis& axis, bool keepdims) { return jnp::logsumexp(x, axis, keepdims); }

Array standardize(const Array& x, const Axis& axis, const std::optional<Array>& mean,
                  const std::optional<Array>& variance, double epsilon) {
  const Array a = Inexact(x, "standardize");
  const Array m = mean.has_value() ? *mean : jnp::mean(a, axis, true);
  // E[(x - m)^2]: the two-pass form, which cannot go negative as E[x^2] - m^2 can.
  const Array v = variance.has_value() ? *variance : jnp::mean(jnp::square(jnp::subtract(a, m)), axis, true);
  return jnp::multiply(jnp::subtract(a, m), jnp::rsqrt(jnp::add(v, epsilon)));
}

Array one_hot(const Array& x, int64_t num_classes, DType dtype, int64_t axis) {
  JX_CHECK_OP(IsInteger(x.dtype()), TypeError, "one_hot", "class ids must have an integer dtype, got ",
              x.aval().str());
  JX_CHECK_OP(num_classes >= 0, ValueError, "one_hot", "num_classes must be nonnegative, got ", num_classes);
  // The new axis's position in the output (rank x.ndim() + 1).
  const int64_t out_axis = Axis(axis).Canonical(x.ndim() + 1, "one_hot")[0];
  Shape iota_shape(x.ndim() + 1, 1);
  iota_shape[out_axis] = num_classes;
  const Array ids = lax::expand_dims(x, {out_axis});
  const Array classes = lax::broadcasted_iota(x.dtype(), iota_shape, out_axis);
  return jnp::equal(ids, classes).astype(dtype);
}

}  // namespace jx::nn
