// jx::optax's core types, as Optax's base module: a GradientTransformation is a pair of pure
// functions, init(params) -> state and update(updates, state, params) -> (updates, state),
// over any pytree; the state is itself a pytree (OptState), so it goes through jx::jit
// arguments and results, donate_argnums and checkpoints like the parameters.
//
//   auto opt = jx::optax::adam(1e-3);
//   jx::optax::OptState state = opt.init(params);
//   auto [updates, new_state] = opt.update(grads, state, params);
//   params = jx::optax::apply_updates(params, updates);
//
// A transformation works on the flattened leaves of the tree (in jx::tree order) with its
// TreeDef; the templated init/update flatten and rebuild the user's type. Writing a new
// transformation means writing the two leaf functions (see transforms.cc for examples).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "jx/core/array.h"
#include "jx/core/errors.h"
#include "jx/core/pytree.h"

namespace jx::optax {

// The state of a transformation, Optax's NamedTuple states in one pytree type: `name` is the
// Optax class (ScaleByAdamState, TraceState, EmptyState, ...), `fields` its named values (a
// step count is a one-element list holding an int32 scalar; a moment such as `mu` holds one
// leaf per parameter leaf, in jx::tree order), `inner` the states of wrapped or chained
// transformations (chain's tuple, masked's inner_state).
//
//   state.field("mu")[0]        // the first moment of the first parameter
//   state.inner[0].name.value   // "ScaleByAdamState" for adam = chain(scale_by_adam, scale)
struct OptState {
  BOOST_HANA_DEFINE_STRUCT(OptState,
                           (Static<std::string>, name),
                           (std::map<std::string, std::vector<Array>>, fields),
                           (std::vector<OptState>, inner));

  // The named field; throws ValueError naming the state and its fields when it is absent.
  const std::vector<Array>& field(std::string_view key) const;
  // A one-leaf field (a step count) as that leaf.
  const Array& scalar(std::string_view key) const;
};

}  // namespace jx::optax

// OptState nests itself (a chain's inner states). jx::tree decides at compile time whether a
// struct is a pytree by recursing through its field types, which cannot see through a
// self-reference; OptState's fields are all pytrees, so it declares itself a struct node.
template <>
struct jx::tree_internal::NodeTraits<jx::optax::OptState> {
  static constexpr Category kCategory = Category::kStruct;
  static constexpr bool kValid = true;
};

namespace jx::optax {

// Optax's EmptyState(): a transformation without state (scale, clip_by_global_norm, ...).
OptState EmptyState();

// A step-size schedule: count (an int32 scalar, traced under jit) -> the value at that step
// (a float32 scalar). Callable with a C++ integer for a value at a named step.
//
//   jx::optax::Schedule lr = jx::optax::cosine_decay_schedule(0.1, 1000);
//   float at_500 = lr(500).item<float>();
class Schedule {
 public:
  Schedule() = default;
  template <typename F>
    requires(!std::is_same_v<std::decay_t<F>, Schedule> &&
             std::is_invocable_r_v<Array, const F&, const Array&>)
  Schedule(F f) : fn_(std::move(f)) {}  // NOLINT: a lambda is a schedule

  Array operator()(const Array& count) const;
  template <std::integral I>
  Array operator()(I count) const {
    return (*this)(Step(static_cast<int64_t>(count)));
  }
  explicit operator bool() const { return static_cast<bool>(fn_); }

 private:
  static Array Step(int64_t count);  // an int32 scalar
  std::function<Array(const Array&)> fn_;
};

// Optax's ScalarOrSchedule: a learning rate given as a number or as a Schedule.
class ScalarOrSchedule {
 public:
  ScalarOrSchedule(double value) : value_(value) {}  // NOLINT: adam(1e-3)
  ScalarOrSchedule(Schedule schedule) : schedule_(std::move(schedule)) {}  // NOLINT
  template <typename F>
    requires(!std::is_arithmetic_v<F> && !std::is_same_v<std::decay_t<F>, Schedule> &&
             !std::is_same_v<std::decay_t<F>, ScalarOrSchedule> &&
             std::is_invocable_r_v<Array, const F&, const Array&>)
  ScalarOrSchedule(F f) : schedule_(Schedule(std::move(f))) {}  // NOLINT

  bool is_schedule() const { return static_cast<bool>(schedule_); }
  double value() const { return value_; }
  const Schedule& schedule() const { return schedule_; }

 private:
  double value_ = 0.0;
  Schedule schedule_;
};

// The flattened form transformations work on: updates, gradients or parameters as leaves in
// jx::tree order. `def` describes the tree the leaves came from (masks read its key paths).
using Leaves = std::vector<Array>;

class GradientTransformation {
 public:
  // init(params, def) -> state.
  using InitFn = std::function<OptState(const Leaves& params, const tree::TreeDef& def)>;
  // update(updates, state, params or nullptr when none were given, def) -> (updates, state).
  using UpdateFn = std::function<std::pair<Leaves, OptState>(
      Leaves updates, const OptState& state, const Leaves* params, const tree::TreeDef& def)>;

  GradientTransformation(std::string name, InitFn init, UpdateFn update)
      : name_(std::move(name)), init_(std::move(init)), update_(std::move(update)) {}

  // Optax's name for the transformation ("scale_by_adam", "chain", ...): errors say it.
  const std::string& name() const { return name_; }

  template <Pytree P>
  OptState init(const P& params) const {
    auto [leaves, def] = tree::flatten(params);
    return init_leaves(leaves, def);
  }

  // The updates keep the type and structure of `grads`; `params` must have the same structure
  // (ValueError naming the first difference otherwise).
  template <Pytree G, Pytree P>
  std::pair<G, OptState> update(const G& grads, const OptState& state, const P& params) const {
    auto [g, def] = tree::flatten(grads);
    auto [p, params_def] = tree::flatten(params);
    CheckSameStructure(def, params_def);
    auto [u, new_state] = update_leaves(std::move(g), state, &p, def);
    return {tree::unflatten<G>(def, u), std::move(new_state)};
  }
  // Without params (Optax's params=None); transformations that need them throw ValueError.
  template <Pytree G>
  std::pair<G, OptState> update(const G& grads, const OptState& state) const {
    auto [g, def] = tree::flatten(grads);
    auto [u, new_state] = update_leaves(std::move(g), state, nullptr, def);
    return {tree::unflatten<G>(def, u), std::move(new_state)};
  }

  // The leaf-level functions, for transformations built from others (chain, masked).
  OptState init_leaves(const Leaves& params, const tree::TreeDef& def) const;
  std::pair<Leaves, OptState> update_leaves(Leaves updates, const OptState& state,
                                            const Leaves* params, const tree::TreeDef& def) const;

 private:
  void CheckSameStructure(const tree::TreeDef& grads, const tree::TreeDef& params) const;

  std::string name_;
  InitFn init_;
  UpdateFn update_;
};

// param + update in the parameter's dtype: one leaf of apply_updates.
Array AddUpdate(const Array& param, const Array& update);

// params + updates, leaf by leaf, keeping each parameter's dtype (Optax's apply_updates).
template <Pytree P>
P apply_updates(const P& params, const P& updates) {
  return tree::map([](const Array& p, const Array& u) { return AddUpdate(p, u); }, params, updates);
}

}  // namespace jx::optax
