// Optax's popular optimizers as chains of transforms.h, with Optax's defaults. The learning
// rate is a number or a Schedule; the other arguments are an options struct.
//
//   auto opt = jx::optax::sgd(0.1, {.momentum = 0.9, .nesterov = true});
//   auto opt = jx::optax::adamw(jx::optax::cosine_decay_schedule(1e-3, 10000),
//                               {.weight_decay = 0.05,
//                                .mask = [](std::string_view, const jx::Array& p) { return p.ndim() > 1; }});
#pragma once

#include <optional>

#include "jx/nn/optax/base.h"
#include "jx/nn/optax/transforms.h"

namespace jx::optax {

struct SgdOptions {
  std::optional<double> momentum{};  // none: plain SGD
  bool nesterov = false;
  std::optional<DType> accumulator_dtype{};
};
// chain(trace(momentum, nesterov) when momentum is set, scale_by_learning_rate(lr)).
GradientTransformation sgd(ScalarOrSchedule learning_rate, const SgdOptions& options = {});

// chain(scale_by_adam(options), scale_by_learning_rate(lr)).
GradientTransformation adam(ScalarOrSchedule learning_rate, const AdamOptions& options = {});

struct AdamWOptions {
  double b1 = 0.9;
  double b2 = 0.999;
  double eps = 1e-8;
  double eps_root = 0.0;
  double weight_decay = 1e-4;
  MaskFn mask{};            // decay only the parameters it selects (all when empty)
  bool nesterov = false;
  std::optional<DType> mu_dtype{};
};
// chain(scale_by_adam, add_decayed_weights(weight_decay, mask), scale_by_learning_rate(lr)):
// decoupled weight decay, scaled by the learning rate.
GradientTransformation adamw(ScalarOrSchedule learning_rate, const AdamWOptions& options = {});

struct RmsPropOptions {
  double decay = 0.9;
  double eps = 1e-8;
  double initial_scale = 0.0;
  bool eps_in_sqrt = true;
  bool centered = false;           // scale_by_stddev instead of scale_by_rms
  std::optional<double> momentum{};  // a trace after the learning rate
  bool nesterov = false;
  bool bias_correction = false;
};
// chain(scale_by_rms or scale_by_stddev, scale_by_learning_rate(lr), trace(momentum) if set).
GradientTransformation rmsprop(ScalarOrSchedule learning_rate, const RmsPropOptions& options = {});

}  // namespace jx::optax
