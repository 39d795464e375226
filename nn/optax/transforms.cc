#include "jx/nn/optax/transforms.h"

#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "jx/lax/lax.h"
#include "jx/lax/numpy/numpy.h"
#include "jx/nn/optax/state_util.h"

namespace jx::optax {

namespace jnp = jx::numpy;

GradientTransformation identity() {
  return GradientTransformation(
      "identity", [](const Leaves&, const tree::TreeDef&) { return EmptyState(); },
      [](Leaves updates, const OptState& state, const Leaves*, const tree::TreeDef&) {
        CheckStateName(state, "EmptyState", "identity");
        return std::pair{std::move(updates), state};
      });
}

GradientTransformation scale(double step_size) {
  return GradientTransformation(
      "scale", [](const Leaves&, const tree::TreeDef&) { return EmptyState(); },
      [step_size](Leaves updates, const OptState& state, const Leaves*, const tree::TreeDef&) {
        CheckStateName(state, "EmptyState", "scale");
        for (Array& g : updates) g = step_size * g;
        return std::pair{std::move(updates), state};
      });
}

GradientTransformation scale_by_schedule(Schedule step_size_fn) {
  if (!step_size_fn) throw ValueError("[optax scale_by_schedule] the schedule is empty");
  return GradientTransformation(
      "scale_by_schedule",
      [](const Leaves&, const tree::TreeDef&) { return MakeState("ScaleByScheduleState", {{"count", {ZeroCount()}}}); },
      [fn = std::move(step_size_fn)](Leaves updates, const OptState& state, const Leaves*, const tree::TreeDef&) {
        CheckStateName(state, "ScaleByScheduleState", "scale_by_schedule");
        const Array& count = state.scalar("count");
        Array step_size = fn(count);
        for (Array& g : updates) g = step_size.astype(g.dtype()) * g;
        return std::pair{std::move(updates), MakeState("ScaleByScheduleState", {{"count", {SafeIncrement(count)}}})};
      });
}

GradientTransformation scale_by_learning_rate(ScalarOrSchedule learning_rate, bool flip_sign) {
  const double m = flip_sign ? -1.0 : 1.0;
  if (learning_rate.is_schedule()) {
    return scale_by_schedule(
        [lr = learning_rate.schedule(), m](const Array& count) { return m * lr(count); });
  }
  return scale(m * learning_rate.value());
}

GradientTransformation scale_by_adam(const AdamOptions& options) {
  const AdamOptions o = options;
  return GradientTransformation(
      "scale_by_adam",
      [o](const Leaves& params, const tree::TreeDef&) {
        return MakeState("ScaleByAdamState",
                         {{"count", {ZeroCount()}}, {"mu", ZerosLike(params, o.mu_dtype)}, {"nu", ZerosLike(params)}});
      },
      [o](Leaves updates, const OptState& state, const Leaves*, const tree::TreeDef&) {
        CheckStateName(state, "ScaleByAdamState", "scale_by_adam");
        Leaves mu = UpdateMoment(updates, Moment(state, "mu", updates.size(), "scale_by_adam"), o.b1, 1);
        Leaves nu = UpdateMoment(updates, Moment(state, "nu", updates.size(), "scale_by_adam"), o.b2, 2);
        Array count_inc = SafeIncrement(state.scalar("count"));
        Leaves mu_hat;
        if (o.nesterov) {
          // NAdam: b1 * mu_hat(t + 1) + (1 - b1) * g_hat(t), each with its own correction.
          Leaves m = BiasCorrection(mu, o.b1, SafeIncrement(count_inc));
          Leaves g = BiasCorrection(updates, o.b1, count_inc);
          for (size_t i = 0; i < m.size(); ++i) m[i] = o.b1 * m[i] + (1.0 - o.b1) * g[i];
          mu_hat = std::move(m);
        } else {
          mu_hat = BiasCorrection(mu, o.b1, count_inc);
        }
        Leaves nu_hat = BiasCorrection(nu, o.b2, count_inc);
        for (size_t i = 0; i < updates.size(); ++i) {
          updates[i] = mu_hat[i] / (jnp::sqrt(nu_hat[i] + o.eps_root) + o.eps);
        }
        if (o.mu_dtype) {
          for (Array& m : mu) m = m.astype(*o.mu_dtype);
        }
        return std::pair{std::move(updates), MakeState("ScaleByAdamState", {{"count", {count_inc}},
                                                                            {"mu", std::move(mu)},
                                                                            {"nu", std::move(nu)}})};
      });
}

namespace {

// scale_by_rms and scale_by_stddev: the same accumulators, centered or not.
GradientTransformation ScaleByRmsImpl(const RmsOptions& o, bool centered) {
  const char* op = centered ? "scale_by_stddev" : "scale_by_rms";
  std::string state_name = centered ? (o.bias_correction ? "ScaleByRStdDevWithCountState" : "ScaleByRStdDevState")
                                    : (o.bias_correction ? "ScaleByRmsWithCountState" : "ScaleByRmsState");
  return GradientTransformation(
      op,
      [o, centered, state_name](const Leaves& params, const tree::TreeDef&) {
        std::map<std::string, Leaves> fields;
        if (o.bias_correction) fields["count"] = {ZeroCount()};
        if (centered) fields["mu"] = ZerosLike(params);
        Leaves nu;
        for (const Array& p : params) nu.push_back(jnp::full_like(p, o.initial_scale));
        fields["nu"] = std::move(nu);
        return MakeState(state_name, std::move(fields));
      },
      [o, centered, state_name, op](Leaves updates, const OptState& state, const Leaves*, const tree::TreeDef&) {
        CheckStateName(state, state_name, op);
        std::map<std::string, Leaves> fields;
        Leaves nu = UpdateMoment(updates, Moment(state, "nu", updates.size(), op), o.decay, 2);
        Leaves mu;
        if (centered) mu = UpdateMoment(updates, Moment(state, "mu", updates.size(), op), o.decay, 1);
        Leaves nu_hat = nu, mu_hat = mu;
        if (o.bias_correction) {
          Array count_inc = SafeIncrement(state.scalar("count"));
          nu_hat = BiasCorrection(nu, o.decay, count_inc);
          if (centered) mu_hat = BiasCorrection(mu, o.decay, count_inc);
          fields["count"] = {count_inc};
        }
        for (size_t i = 0; i < updates.size(); ++i) {
          Array v = centered ? nu_hat[i] - jnp::square(mu_hat[i]) : nu_hat[i];
          Array scaling = o.eps_in_sqrt ? lax::rsqrt(v + o.eps) : 1.0 / (jnp::sqrt(v) + o.eps);
          updates[i] = scaling * updates[i];
        }
        fields["nu"] = std::move(nu);
        if (centered) fields["mu"] = std::move(mu);
        return std::pair{std::move(updates), MakeState(state_name, std::move(fields))};
      });
}

}  // namespace

GradientTransformation scale_by_rms(const RmsOptions& options) { return ScaleByRmsImpl(options, false); }
GradientTransformation scale_by_stddev(const RmsOptions& options) { return ScaleByRmsImpl(options, true); }

GradientTransformation trace(double decay, bool nesterov, std::optional<DType> accumulator_dtype) {
  return GradientTransformation(
      "trace",
      [accumulator_dtype](const Leaves& params, const tree::TreeDef&) {
        return MakeState("TraceState", {{"trace", ZerosLike(params, accumulator_dtype)}});
      },
      [decay, nesterov, accumulator_dtype](Leaves updates, const OptState& state, const Leaves*,
                                           const tree::TreeDef&) {
        CheckStateName(state, "TraceState", "trace");
        const Leaves& old = Moment(state, "trace", updates.size(), "trace");
        Leaves new_trace(updates.size());
        for (size_t i = 0; i < updates.size(); ++i) {
          new_trace[i] = updates[i] + decay * old[i];
          updates[i] = nesterov ? updates[i] + decay * new_trace[i] : new_trace[i];
          if (accumulator_dtype) new_trace[i] = new_trace[i].astype(*accumulator_dtype);
        }
        return std::pair{std::move(updates), MakeState("TraceState", {{"trace", std::move(new_trace)}})};
      });
}

GradientTransformation add_decayed_weights(double weight_decay, MaskFn mask) {
  GradientTransformation decay(
      "add_decayed_weights", [](const Leaves&, const tree::TreeDef&) { return EmptyState(); },
      [weight_decay](Leaves updates, const OptState& state, const Leaves* params, const tree::TreeDef&) {
        CheckStateName(state, "EmptyState", "add_decayed_weights");
        if (params == nullptr) {
          throw ValueError("[optax add_decayed_weights] update needs the params: call update(grads, state, params)");
        }
        for (size_t i = 0; i < updates.size(); ++i) updates[i] = updates[i] + weight_decay * (*params)[i];
        return std::pair{std::move(updates), state};
      });
  if (!mask) return decay;
  return masked(std::move(decay), std::move(mask));
}

namespace {

// Which leaves the mask selects, by key path and value.
std::vector<bool> Selection(const MaskFn& mask, const Leaves& leaves, const tree::TreeDef& def) {
  std::vector<std::string> paths = def.KeyPaths();
  std::vector<bool> out(leaves.size());
  for (size_t i = 0; i < leaves.size(); ++i) out[i] = mask(paths[i], leaves[i]);
  return out;
}

Leaves Select(const Leaves& leaves, const std::vector<bool>& selection) {
  Leaves out;
  for (size_t i = 0; i < leaves.size(); ++i) {
    if (selection[i]) out.push_back(leaves[i]);
  }
  return out;
}

tree::TreeDef ListOfLeaves(size_t n) { return tree::TreeDef::List(std::vector<tree::TreeDef>(n)); }

}  // namespace

GradientTransformation masked(GradientTransformation inner, MaskFn mask) {
  if (!mask) throw ValueError("[optax masked] the mask is empty");
  return GradientTransformation(
      "masked",
      [inner, mask](const Leaves& params, const tree::TreeDef& def) {
        Leaves selected = Select(params, Selection(mask, params, def));
        OptState state = MakeState("MaskedState", {});
        state.inner.push_back(inner.init_leaves(selected, ListOfLeaves(selected.size())));
        return state;
      },
      [inner, mask](Leaves updates, const OptState& state, const Leaves* params, const tree::TreeDef& def) {
        CheckStateName(state, "MaskedState", "masked");
        CheckInnerCount(state, 1, "masked");
        // As Optax, the mask is applied to the updates here (to the params in init).
        std::vector<bool> selection = Selection(mask, updates, def);
        Leaves selected = Select(updates, selection);
        const size_t num_selected = selected.size();
        Leaves selected_params;
        if (params != nullptr) selected_params = Select(*params, selection);
        auto [inner_updates, inner_state] =
            inner.update_leaves(std::move(selected), state.inner[0], params != nullptr ? &selected_params : nullptr,
                                ListOfLeaves(num_selected));
        for (size_t i = 0, j = 0; i < updates.size(); ++i) {
          if (selection[i]) updates[i] = std::move(inner_updates[j++]);
        }
        OptState new_state = MakeState("MaskedState", {});
        new_state.inner.push_back(std::move(inner_state));
        return std::pair{std::move(updates), std::move(new_state)};
      });
}

GradientTransformation clip_by_global_norm(double max_norm) {
  return GradientTransformation(
      "clip_by_global_norm", [](const Leaves&, const tree::TreeDef&) { return EmptyState(); },
      [max_norm](Leaves updates, const OptState& state, const Leaves*, const tree::TreeDef&) {
        CheckStateName(state, "EmptyState", "clip_by_global_norm");
        Array g_norm = global_norm_of_leaves(updates);
        Array trigger = g_norm < max_norm;
        for (Array& t : updates) t = jnp::where(trigger, t, (t / g_norm.astype(t.dtype())) * max_norm);
        return std::pair{std::move(updates), state};
      });
}

GradientTransformation chain(std::vector<GradientTransformation> transformations) {
  auto ts = std::make_shared<const std::vector<GradientTransformation>>(std::move(transformations));
  return GradientTransformation(
      "chain",
      [ts](const Leaves& params, const tree::TreeDef& def) {
        OptState state = MakeState("ChainState", {});
        for (const GradientTransformation& t : *ts) state.inner.push_back(t.init_leaves(params, def));
        return state;
      },
      [ts](Leaves updates, const OptState& state, const Leaves* params, const tree::TreeDef& def) {
        CheckStateName(state, "ChainState", "chain");
        CheckInnerCount(state, ts->size(), "chain");
        OptState new_state = MakeState("ChainState", {});
        for (size_t i = 0; i < ts->size(); ++i) {
          auto [u, s] = (*ts)[i].update_leaves(std::move(updates), state.inner[i], params, def);
          updates = std::move(u);
          new_state.inner.push_back(std::move(s));
        }
        return std::pair{std::move(updates), std::move(new_state)};
      });
}

Array global_norm_of_leaves(const Leaves& leaves) {
  if (leaves.empty()) return jnp::zeros({}, float32);
  Array total;
  for (size_t i = 0; i < leaves.size(); ++i) {
    Array s = jnp::sum(jnp::square(leaves[i]));
    total = i == 0 ? s : total + s;
  }
  return jnp::sqrt(total);
}

}  // namespace jx::optax
