// lax::map: f applied to each slice of xs along its leading axis, as a scan with no carry
// (JAX's lax.map). With batch_size, chunks of batch_size slices go through a vmapped f, one
// chunk per scan iteration, and the leftover slices through one more vmapped call.
//
//   Array ys = lax::map([](const Array& x) { return jnp::sum(x); }, xs);            // lax.map(f, xs)
//   Array ys = lax::map(f, xs, {.batch_size = 4});                    // lax.map(f, xs, batch_size=4)
#pragma once

#include <memory>
#include <optional>
#include <type_traits>

#include "jx/core/errors.h"
#include "jx/core/pytree.h"
#include "jx/transforms/ad.h"

namespace jx::lax {

// JAX's lax.map keyword arguments.
struct MapOptions {
  // Slices per vmapped call; 0 vmaps f over all of xs at once; nullopt maps one slice at a
  // time.
  std::optional<int64_t> batch_size = std::nullopt;
};

// f over flat leaves: xs (at least one, all with the same leading size) sliced along axis 0;
// f's outputs stacked along a new leading axis.
Arrays map_flat(const ArraysFn& f, absl::Span<const Array> xs, std::optional<int64_t> batch_size);

// map(f, xs, options): the stack of f(x) for x along the leading axis of the pytree xs.
template <typename F, typename X>
auto map(F f, const X& xs, MapOptions options = {}) {
  using Y = std::decay_t<std::invoke_result_t<F&, const X&>>;
  auto [leaves, def] = tree::flatten(xs);
  auto out_def = std::make_shared<tree::TreeDef>();
  // Structured bindings are captured through init-captures: clang before 16 cannot capture them.
  ArraysFn flat = [&f, &def = def, out_def](absl::Span<const Array> l) {
    auto [out, d] = tree::flatten(f(tree::unflatten<X>(def, l)));
    *out_def = std::move(d);
    return Arrays(out.begin(), out.end());
  };
  Arrays ys = map_flat(flat, leaves, options.batch_size);
  return tree::unflatten<Y>(*out_def, ys);
}

}  // namespace jx::lax
