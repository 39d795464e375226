#include "jx/nn/optax/state_util.h"

#include <cstdint>
#include <limits>
#include <optional>
#include <utility>

#include "jx/core/str_util.h"
#include "jx/lax/numpy/numpy.h"

namespace jx::optax {

namespace jnp = jx::numpy;

OptState MakeState(std::string name, std::map<std::string, Leaves> fields) {
  return OptState{Static<std::string>{std::move(name)}, std::move(fields), {}};
}

void CheckStateName(const OptState& state, std::string_view expected, std::string_view op) {
  if (state.name.value == expected) return;
  throw ValueError(StrCat("[optax ", op, "] update: the state is a ", state.name.value, ", not the ", expected,
                          " this transformation's init makes (a state from another optimizer?)"));
}

void CheckInnerCount(const OptState& state, size_t expected, std::string_view op) {
  if (state.inner.size() == expected) return;
  throw ValueError(StrCat("[optax ", op, "] update: the ", state.name.value, " holds ", state.inner.size(),
                          " inner states, this transformation has ", expected));
}

const Leaves& Moment(const OptState& state, std::string_view key, size_t num_leaves, std::string_view op) {
  const Leaves& m = state.field(key);
  if (m.size() != num_leaves) {
    throw ValueError(StrCat("[optax ", op, "] update: ", state.name.value, ".", key, " has ", m.size(),
                            " leaves but the updates have ", num_leaves,
                            " (was the state made by init() of params of this structure?)"));
  }
  return m;
}

Array ZeroCount() { return Array::Scalar(0.0, int32); }

Array SafeIncrement(const Array& count) {
  constexpr int32_t kMax = std::numeric_limits<int32_t>::max();
  return jnp::where(count < kMax, count + 1, kMax).astype(count.dtype());
}

Leaves ZerosLike(const Leaves& leaves, std::optional<DType> dtype) {
  Leaves out;
  out.reserve(leaves.size());
  for (const Array& x : leaves) out.push_back(jnp::zeros_like(x, dtype));
  return out;
}

Leaves UpdateMoment(const Leaves& updates, const Leaves& moments, double decay, int order) {
  Leaves out(updates.size());
  for (size_t i = 0; i < updates.size(); ++i) {
    Array g = order == 1 ? updates[i] : jnp::square(updates[i]);
    out[i] = (1.0 - decay) * g + decay * moments[i];
  }
  return out;
}

Leaves BiasCorrection(const Leaves& moments, double decay, const Array& count) {
  Leaves out(moments.size());
  std::optional<Array> correction32, correction64;
  for (size_t i = 0; i < moments.size(); ++i) {
    const DType dt = moments[i].dtype();
    std::optional<Array>& c = dt == float64 ? correction64 : correction32;
    if (!c) c = 1.0 - jnp::power(decay, count.astype(dt == float64 ? float64 : float32));
    out[i] = moments[i] / c->astype(dt);
  }
  return out;
}

}  // namespace jx::optax
