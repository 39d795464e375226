// Optax's learning-rate schedules: functions of the step count (an int32 scalar, traced under
// jit) returning a float32 scalar, with Optax's names, arguments and formulas.
//
//   auto lr = jx::optax::warmup_cosine_decay_schedule(0.0, 1e-3, /*warmup_steps=*/100,
//                                                     /*decay_steps=*/1000);
//   auto opt = jx::optax::adam(lr);
//   lr(100).item<float>();  // 1e-3, the peak
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <vector>

#include "jx/nn/optax/base.h"

namespace jx::optax {

// value at every step.
Schedule constant_schedule(double value);

// From init_value to end_value over transition_steps steps starting at transition_begin:
// (init - end) * (1 - clip(count - begin, 0, steps) / steps)^power + end. transition_steps <= 0
// gives constant_schedule(init_value) with a warning on stderr, as Optax.
Schedule polynomial_schedule(double init_value, double end_value, double power, int64_t transition_steps,
                             int64_t transition_begin = 0);
// polynomial_schedule with power 1.
Schedule linear_schedule(double init_value, double end_value, int64_t transition_steps, int64_t transition_begin = 0);

// init_value * ((1 - alpha) * (0.5 * (1 + cos(pi * min(count, decay_steps) / decay_steps)))^exponent
// + alpha). decay_steps must be positive (ValueError).
Schedule cosine_decay_schedule(double init_value, int64_t decay_steps, double alpha = 0.0, double exponent = 1.0);

// init_value * decay_rate^((count - transition_begin) / transition_steps) (the exponent floored
// when staircase), init_value before transition_begin; end_value bounds it (a floor when
// decay_rate < 1, a ceiling when > 1). decay_rate 0 and a negative transition_begin are
// ValueErrors; transition_steps <= 0 gives constant_schedule(init_value) with a warning.
Schedule exponential_decay(double init_value, int64_t transition_steps, double decay_rate,
                           int64_t transition_begin = 0, bool staircase = false,
                           std::optional<double> end_value = std::nullopt);

// init_value, multiplied by scale once count reaches each boundary (boundary -> scale).
Schedule piecewise_constant_schedule(double init_value, const std::map<int64_t, double>& boundaries_and_scales);

// schedules[0] until boundaries[0], then schedules[1](count - boundaries[0]), and so on;
// boundaries.size() must be schedules.size() - 1 (ValueError).
Schedule join_schedules(std::vector<Schedule> schedules, std::vector<int64_t> boundaries);

// Linear warmup from init_value to peak_value over warmup_steps, then cosine decay to
// end_value at decay_steps (decay_steps counts the warmup, as Optax's).
Schedule warmup_cosine_decay_schedule(double init_value, double peak_value, int64_t warmup_steps,
                                      int64_t decay_steps, double end_value = 0.0, double exponent = 1.0);

}  // namespace jx::optax
