// jax.nn's functions (jax.nn.relu, gelu, softmax, ...), with JAX's names, defaults, numerics
// and derivatives: numerically stable for large inputs (softplus(1000) = 1000,
// log_softmax([1000, 0]) = [0, -1000], sigmoid(-1000) = 0), and derivatives finite where JAX's
// are (relu and relu6 use JAX's custom_jvp rules: d relu(0) = 0; softmax's is JAX's custom rule
// y * (t - sum(y * t))). Integer inputs of the float functions compute in float32, as jnp's.
//
//   namespace nn = jx::nn;
//   Array h = nn::relu(x);                      // jax.nn.relu(x)
//   Array g = nn::gelu(x, /*approximate=*/false); // jax.nn.gelu(x, approximate=False)
//   Array p = nn::softmax(logits);              // along the last axis, as jax.nn.softmax
//   Array l = nn::logsumexp(x, {0, 1}, /*keepdims=*/true);
//   Array y = nn::one_hot(labels, 10);          // f32[..., 10]
#pragma once

#include <cstdint>
#include <optional>

#include "jx/core/array.h"
#include "jx/core/axis.h"
#include "jx/core/dtype.h"

namespace jx::nn {

// Rectifiers and their smooth relatives.
Array relu(const Array& x);        // max(x, 0); d/dx at 0 is 0 (JAX's custom_jvp)
Array relu6(const Array& x);       // min(max(x, 0), 6); derivative 0 at 0 and 6, as JAX's
Array leaky_relu(const Array& x, double negative_slope = 0.01);  // where(x >= 0, x, slope * x)
Array elu(const Array& x, double alpha = 1.0);   // where(x > 0, x, alpha * expm1(x))
Array celu(const Array& x, double alpha = 1.0);  // max(x, 0) + alpha * expm1(min(x, 0) / alpha)
Array selu(const Array& x);                      // scale * elu(x, alpha), JAX's constants
// x * Phi(x): the tanh approximation when approximate (JAX's default), else erf.
Array gelu(const Array& x, bool approximate = true);
Array silu(const Array& x);   // x * sigmoid(x)
Array swish(const Array& x);  // = silu
Array mish(const Array& x);   // x * tanh(softplus(x))
Array hard_tanh(const Array& x);     // clip(x, -1, 1)
Array hard_sigmoid(const Array& x);  // relu6(x + 3) / 6
Array hard_silu(const Array& x);     // x * hard_sigmoid(x)
Array hard_swish(const Array& x);    // = hard_silu

// Sigmoids.
Array sigmoid(const Array& x);      // 1 / (1 + exp(-x)) (lax.logistic)
Array log_sigmoid(const Array& x);  // -softplus(-x)
Array softplus(const Array& x);     // log(1 + exp(x)) = logaddexp(x, 0)
Array soft_sign(const Array& x);    // x / (|x| + 1)

// Gated linear unit: x split in two halves a, b along axis (its size must be even);
// a * sigmoid(b).
Array glu(const Array& x, int64_t axis = -1);

// Normalizers along axis (the last by default; several axes or all with Axis{}).
// The max is subtracted first (under stop_gradient) so large logits neither overflow nor lose
// precision; a slice of all -inf gives NaN for softmax and -inf for log_softmax, as JAX's.
Array softmax(const Array& x, const Axis& axis = -1);
Array log_softmax(const Array& x, const Axis& axis = -1);
// log(sum(exp(x))) over axis (all axes by default), shifted by the finite max: an all -inf
// slice gives -inf and a +inf element gives +inf (jax.nn.logsumexp = jnp's).
Array logsumexp(const Array& x, const Axis& axis = {}, bool keepdims = false);
// (x - mean) * rsqrt(variance + epsilon) along axis; mean and variance are computed (keepdims)
// unless given, as jax.nn.standardize.
Array standardize(const Array& x, const Axis& axis = -1, const std::optional<Array>& mean = std::nullopt,
                  const std::optional<Array>& variance = std::nullopt, double epsilon = 1e-5);

// x's integer class ids as one-hot vectors of num_classes along axis (the new last axis by
// default): an id outside [0, num_classes) gives an all-zero vector, as jax.nn.one_hot.
Array one_hot(const Array& x, int64_t num_classes, DType dtype = float32, int64_t axis = -1);

}  // namespace jx::nn
