// checkpoint (remat): the function's forward computation is not saved for the backward pass
// but recomputed there. Staged as a `checkpoint` primitive carrying the function's jaxpr; its
// transpose reruns the forward part next to the backward part, and make_jaxpr shows it.
//
//   auto block = jx::checkpoint([](const Array& x) { return jnp::tanh(jnp::tanh(x)); });
//   Array g = jx::grad([&](const Array& x) { return jnp::sum(block(x)); })(x);
#pragma once

#include <memory>
#include <tuple>
#include <type_traits>

#include "jx/core/pytree.h"
#include "jx/core/registry.h"
#include "jx/transforms/ad.h"
#include "jx/transforms/builtin_rules.h"

namespace jx {

Arrays CheckpointCall(const ArraysFn& f, absl::Span<const Array> args);
void RegisterCheckpoint(Registry& r);

// checkpoint(f)(args...): f(args...), recomputed in the backward pass instead of saved.
template <typename F>
auto checkpoint(F f) {
  return [f](const auto&... args) {
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
    Arrays outs = CheckpointCall(flat, leaves);
    return tree::unflatten<R>(*out_def, outs);
  };
}

}  // namespace jx
