#include "jx/nn/optax/alias.h"

#include <utility>

namespace jx::optax {

GradientTransformation sgd(ScalarOrSchedule learning_rate, const SgdOptions& options) {
  return chain(options.momentum ? trace(*options.momentum, options.nesterov, options.accumulator_dtype) : identity(),
               scale_by_learning_rate(std::move(learning_rate)));
}

GradientTransformation adam(ScalarOrSchedule learning_rate, const AdamOptions& options) {
  return chain(scale_by_adam(options), scale_by_learning_rate(std::move(learning_rate)));
}

GradientTransformation adamw(ScalarOrSchedule learning_rate, const AdamWOptions& options) {
  AdamOptions adam_options{.b1 = options.b1,
                           .b2 = options.b2,
                           .eps = options.eps,
                           .eps_root = options.eps_root,
                           .nesterov = options.nesterov,
                           .mu_dtype = options.mu_dtype};
  return chain(scale_by_adam(adam_options), add_decayed_weights(options.weight_decay, options.mask),
               scale_by_learning_rate(std::move(learning_rate)));
}

GradientTransformation rmsprop(ScalarOrSchedule learning_rate, const RmsPropOptions& options) {
  RmsOptions rms{.decay = options.decay,
                 .eps = options.eps,
                 .initial_scale = options.initial_scale,
                 .eps_in_sqrt = options.eps_in_sqrt,
                 .bias_correction = options.bias_correction};
  return chain(options.centered ? scale_by_stddev(rms) : scale_by_rms(rms),
               scale_by_learning_rate(std::move(learning_rate)),
               options.momentum ? trace(*options.momentum, options.nesterov) : identity());
}

}  // namespace jx::optax
