#include "jx/nn/optax/schedules.h"

#include <cmath>
#include <cstdio>
#include <numbers>
#include <utility>

#include "jx/core/str_util.h"
#include "jx/lax/numpy/numpy.h"

namespace jx::optax {

namespace jnp = jx::numpy;

namespace {

Array AsFloat(const Array& x) { return x.astype(float32); }

// Optax logs this case too: a schedule without a transition is constant at init_value.
void WarnConstant(const char* op, int64_t transition_steps, double init_value) {
  std::fprintf(stderr, "jx: optax %s: transition_steps %lld <= 0 gives a constant schedule at init_value %g\n", op,
               static_cast<long long>(transition_steps), init_value);
}

}  // namespace

Schedule constant_schedule(double value) {
  return [value](const Array&) { return jnp::full({}, value, float32); };
}

Schedule polynomial_schedule(double init_value, double end_value, double power, int64_t transition_steps,
                             int64_t transition_begin) {
  if (transition_steps <= 0) {
    WarnConstant("polynomial_schedule", transition_steps, init_value);
    return constant_schedule(init_value);
  }
  if (transition_begin < 0) {
    throw ValueError(StrCat("[optax polynomial_schedule] transition_begin must be >= 0, got ", transition_begin));
  }
  return [=](const Array& count) {
    Array c = AsFloat(jnp::clip(count - transition_begin, 0, transition_steps));
    Array frac = 1.0 - c / static_cast<double>(transition_steps);
    return (init_value - end_value) * jnp::power(frac, power) + end_value;
  };
}

Schedule linear_schedule(double init_value, double end_value, int64_t transition_steps, int64_t transition_begin) {
  return polynomial_schedule(init_value, end_value, 1.0, transition_steps, transition_begin);
}

Schedule cosine_decay_schedule(double init_value, int64_t decay_steps, double alpha, double exponent) {
  if (decay_steps <= 0) {
    throw ValueError(StrCat("[optax cosine_decay_schedule] decay_steps must be positive, got ", decay_steps));
  }
  return [=](const Array& count) {
    Array c = AsFloat(jnp::minimum(count, decay_steps));
    Array cosine_decay = 0.5 * (1.0 + jnp::cos(std::numbers::pi * c / static_cast<double>(decay_steps)));
    Array decayed = (1.0 - alpha) * jnp::power(cosine_decay, exponent) + alpha;
    return init_value * decayed;
  };
}

Schedule exponential_decay(double init_value, int64_t transition_steps, double decay_rate, int64_t transition_begin,
                           bool staircase, std::optional<double> end_value) {
  if (transition_steps <= 0) {
    WarnConstant("exponential_decay", transition_steps, init_value);
    return constant_schedule(init_value);
  }
  if (decay_rate == 0.0) throw ValueError("[optax exponential_decay] decay_rate must be nonzero");
  if (transition_begin < 0) {
    throw ValueError(StrCat("[optax exponential_decay] transition_begin must be >= 0, got ", transition_begin));
  }
  return [=](const Array& count) {
    Array decreased_count = count - transition_begin;
    Array p = AsFloat(decreased_count) / static_cast<double>(transition_steps);
    if (staircase) p = jnp::floor(p);
    Array decayed = jnp::where(decreased_count <= 0, init_value, init_value * jnp::power(decay_rate, p));
    if (end_value) {
      // A floor for a decaying schedule, a ceiling for a growing one.
      decayed = decay_rate < 1.0 ? jnp::maximum(decayed, *end_value) : jnp::minimum(decayed, *end_value);
    }
    return decayed;
  };
}

Schedule piecewise_constant_schedule(double init_value, const std::map<int64_t, double>& boundaries_and_scales) {
  for (const auto& [boundary, s] : boundaries_and_scales) {
    if (s < 0.0) {
      throw ValueError(StrCat("[optax piecewise_constant_schedule] scales must be non-negative, got ", s,
                              " at boundary ", boundary));
    }
  }
  return [init_value, boundaries_and_scales](const Array& count) {
    Array v = jnp::full({}, init_value, float32);
    for (const auto& [boundary, s] : boundaries_and_scales) {
      // 1 before the boundary, 0 from it on.
      Array indicator = jnp::maximum(0.0, jnp::sign(boundary - count)).astype(float32);
      v = v * indicator + (1.0 - indicator) * s * v;
    }
    return v;
  };
}

Schedule join_schedules(std::vector<Schedule> schedules, std::vector<int64_t> boundaries) {
  if (schedules.empty() || boundaries.size() + 1 != schedules.size()) {
    throw ValueError(StrCat("[optax join_schedules] needs one boundary fewer than schedules, got ",
                            schedules.size(), " schedules and ", boundaries.size(), " boundaries"));
  }
  return [schedules = std::move(schedules), boundaries = std::move(boundaries)](const Array& step) {
    Array output = schedules[0](step);
    for (size_t i = 0; i < boundaries.size(); ++i) {
      output = jnp::where(step < boundaries[i], output, schedules[i + 1](step - boundaries[i]));
    }
    return output;
  };
}

Schedule warmup_cosine_decay_schedule(double init_value, double peak_value, int64_t warmup_steps,
                                      int64_t decay_steps, double end_value, double exponent) {
  const double alpha = peak_value == 0.0 ? 0.0 : end_value / peak_value;
  return join_schedules({linear_schedule(init_value, peak_value, warmup_steps),
                         cosine_decay_schedule(peak_value, decay_steps - warmup_steps, alpha, exponent)},
                        {warmup_steps});
}

}  // namespace jx::optax
