// checkpoint (remat): the function's forward computation is not saved for the backward pass
// but recomputed there. Staged as a `checkpoint` primitive carrying the function's jaxpr; its
// transpose reruns the forward part next to the backward part, and make_jaxpr shows it.
//
//   auto block = jx::checkpoint([](const Array& x) { return jnp::tanh(jnp::tanh(x)); });
//   Array g = jx::grad([&](const Array& x) { return jnp::sum(block(x)); })(x);
//
// A policy (JAX's jax.checkpoint(f, policy=...); the policies are jx::policies::*, in
// lax/checkpoint_policies.h) names the values of f's equations that are saved for the
// backward pass; the rest is recomputed there. checkpoint_name(x, "name") tags a value for the
// name-based policies:
//   auto block = jx::checkpoint(f, jx::policies::save_only_these_names("hidden"));
//   ... Array h = jx::checkpoint_name(jnp::sin(x), "hidden"); ...
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

#include "jx/core/pytree.h"
#include "jx/core/registry.h"
#include "jx/transforms/ad.h"
#include "jx/transforms/builtin_rules.h"

namespace jx {

// Which equations' outputs the backward pass reads from the forward pass instead of
// recomputing (JAX's policy(prim, *avals, **params) -> bool). Applies to the top-level
// equations of the checkpointed function.
struct CheckpointPolicy {
  std::string name;  // printed in the checkpoint equation: policy=dots_saveable
  std::function<bool(Primitive, absl::Span<const ShapedArray> in_avals, const ParamMap& params)> saveable;
};

Arrays CheckpointCall(const ArraysFn& f, absl::Span<const Array> args,
                      std::shared_ptr<const CheckpointPolicy> policy = nullptr);
void RegisterCheckpoint(Registry& r);

// x unchanged, tagged `name` for save_only_these_names / save_any_names_but_these (JAX's
// jax.ad_checkpoint.checkpoint_name; a `name` equation in the jaxpr).
Array checkpoint_name(const Array& x, const std::string& name);
namespace ad_checkpoint {
using jx::checkpoint_name;
}  // namespace ad_checkpoint
// The values reverse mode saves between the forward and the backward pass of fn at args (the
// residuals of its linearization), one line each as JAX's print_saved_residuals prints them:
// "f32[5,4] from the argument 0" (argument leaf 0) or "f32[5] computed in the forward pass".
std::vector<std::string> SavedResidualsFlat(const ArraysFn& fn, absl::Span<const Array> args);
// The `name` primitive's equation params' name, when eqn is one (for policies).
const std::string* CheckpointNameOf(Primitive p, const ParamMap& params);

// jax.ad_checkpoint.print_saved_residuals(f, *args), returning the lines:
//   for (const std::string& line : jx::ad_checkpoint::saved_residuals(f, w, x)) std::cout << line << "\n";
namespace ad_checkpoint {
template <typename F, typename... Args>
std::vector<std::string> saved_residuals(F f, const Args&... args) {
  using Tuple = std::tuple<Args...>;
  lax::RegisterAll();
  auto [leaves, def] = tree::flatten(Tuple{args...});
  ArraysFn flat = [&f, &def = def](absl::Span<const Array> l) {
    auto [out, d] = tree::flatten(std::apply(f, tree::unflatten<Tuple>(def, l)));
    return Arrays(out.begin(), out.end());
  };
  return SavedResidualsFlat(flat, leaves);
}
}  // namespace ad_checkpoint

// checkpoint(f)(args...): f(args...), recomputed in the backward pass instead of saved;
// checkpoint(f, policy): the values the policy saves are not recomputed.
template <typename F>
auto checkpoint(F f, std::optional<CheckpointPolicy> policy = std::nullopt) {
  std::shared_ptr<const CheckpointPolicy> shared =
      policy ? std::make_shared<const CheckpointPolicy>(*std::move(policy)) : nullptr;
  return [f, shared](const auto&... args) {
    using Tuple = std::tuple<std::decay_t<decltype(args)>...>;
    using R = std::decay_t<std::invoke_result_t<F&, decltype(args)...>>;
    lax::RegisterAll();
    auto [leaves, def] = tree::flatten(Tuple{args...});
    auto out_def = std::make_shared<tree::TreeDef>();
    ArraysFn flat = [f, def = def, out_def](absl::Span<const Array> l) mutable {
      auto [out, d] = tree::flatten(std::apply(f, tree::unflatten<Tuple>(def, l)));
      *out_def = d;
      return Arrays(out.begin(), out.end());
    };
    Arrays outs = CheckpointCall(flat, leaves, shared);
    return tree::unflatten<R>(*out_def, outs);
  };
}

}  // namespace jx
