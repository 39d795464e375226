// Optax's gradient transformations (transform, clipping, combine and wrappers modules): the
// building blocks the optimizers in alias.h chain.
//
//   auto opt = jx::optax::chain(jx::optax::clip_by_global_norm(1.0),
//                               jx::optax::scale_by_adam(),
//                               jx::optax::scale_by_learning_rate(1e-3));
#pragma once

#include <functional>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

#include "jx/core/dtype.h"
#include "jx/nn/optax/base.h"

namespace jx::optax {

// Selects parameters by key path (".layers[0].weight", as jx::tree::TreeDef::KeyPath) and
// value: Optax's callable mask. `[](std::string_view, const Array& p) { return p.ndim() > 1; }`
using MaskFn = std::function<bool(std::string_view key_path, const Array& param)>;

// Updates unchanged; EmptyState.
GradientTransformation identity();

// updates * step_size; EmptyState.
GradientTransformation scale(double step_size);

// updates * schedule(count), count starting at 0; ScaleByScheduleState(count).
GradientTransformation scale_by_schedule(Schedule step_size_fn);

// scale(-lr) or scale_by_schedule(-lr(count)) (without the minus when flip_sign is false).
GradientTransformation scale_by_learning_rate(ScalarOrSchedule learning_rate, bool flip_sign = true);

struct AdamOptions {
  double b1 = 0.9;         // decay of the first moment
  double b2 = 0.999;       // decay of the second moment
  double eps = 1e-8;       // added to sqrt(nu_hat), outside the root
  double eps_root = 0.0;   // added to nu_hat, inside the root
  bool nesterov = false;   // Nesterov momentum on the first moment (NAdam)
  std::optional<DType> mu_dtype{};  // the first moment's dtype (default: the parameter's)
};
// Adam's rescaling: mu = b1 mu + (1 - b1) g, nu = b2 nu + (1 - b2) g^2, updates =
// mu_hat / (sqrt(nu_hat + eps_root) + eps) with bias-corrected mu_hat = mu / (1 - b1^t),
// nu_hat = nu / (1 - b2^t), t the step count from 1; ScaleByAdamState(count, mu, nu).
GradientTransformation scale_by_adam(const AdamOptions& options = {});

struct RmsOptions {
  double decay = 0.9;
  double eps = 1e-8;
  double initial_scale = 0.0;    // the accumulators' initial value
  bool eps_in_sqrt = true;       // rsqrt(nu + eps), else 1 / (sqrt(nu) + eps)
  bool bias_correction = false;  // divide nu (and mu) by 1 - decay^t
};
// RMSProp's rescaling: nu = decay nu + (1 - decay) g^2, updates = g * rsqrt(nu + eps);
// ScaleByRmsState(nu), or ScaleByRmsWithCountState(count, nu) with bias correction.
GradientTransformation scale_by_rms(const RmsOptions& options = {});
// Centered RMSProp: also mu = decay mu + (1 - decay) g, updates = g * rsqrt(nu - mu^2 + eps);
// ScaleByRStdDevState(mu, nu), or ScaleByRStdDevWithCountState(count, mu, nu).
GradientTransformation scale_by_stddev(const RmsOptions& options = {});

// Momentum: trace = g + decay * trace; updates = trace, or g + decay * trace (Nesterov);
// TraceState(trace).
GradientTransformation trace(double decay, bool nesterov = false, std::optional<DType> accumulator_dtype = std::nullopt);

// updates + weight_decay * params on the parameters the mask selects (all without a mask);
// needs params (ValueError without). EmptyState, or MaskedState(inner_state) with a mask.
GradientTransformation add_decayed_weights(double weight_decay, MaskFn mask = {});

// inner on the parameters the mask selects; the other updates pass through unchanged. inner
// sees the selected leaves as a list. MaskedState(inner_state).
GradientTransformation masked(GradientTransformation inner, MaskFn mask);

// Scales all updates by max_norm / global_norm when the global norm exceeds max_norm;
// EmptyState.
GradientTransformation clip_by_global_norm(double max_norm);

// Applies the transformations in order; its state is ChainState with one inner state each
// (Optax's tuple of states).
GradientTransformation chain(std::vector<GradientTransformation> transformations);
template <typename... T>
  requires(std::is_convertible_v<T, GradientTransformation> && ...)
GradientTransformation chain(T... transformations) {
  return chain(std::vector<GradientTransformation>{std::move(transformations)...});
}

// sqrt of the sum of squares of every leaf (Optax's global_norm / tree_utils.tree_l2_norm).
Array global_norm_of_leaves(const Leaves& leaves);
template <Pytree T>
Array global_norm(const T& tree) {
  return global_norm_of_leaves(tree::leaves(tree));
}

}  // namespace jx::optax
