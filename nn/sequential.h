// nn::Sequential: modules called in order, itself a module (a pytree whose `layers` tuple holds
// the modules, so jx::grad differentiates all their parameters). An activation sits in it as
// nn::Lambda, a parameter-free module holding a function pointer (a Static, so it is part of
// the tree structure and of jit's cache key).
//
//   nn::Sequential mlp(nn::Linear(784, 128, k1), nn::Lambda(nn::relu),
//                      nn::Dropout(0.2), nn::Linear(128, 10, k2));
//   Array logits = mlp(x);                          // inference: Dropout is the identity
//   Array train_logits = mlp(x, key, /*training=*/true);  // one split key per layer, as Equinox
//   nn::Lambda gelu_exact(+[](const Array& x) { return nn::gelu(x, false); });
#pragma once

#include <cstddef>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "jx/core/array.h"
#include "jx/core/pytree.h"

namespace jx::nn {

using ActivationFn = Array (*)(const Array&);

// A function as a module: Lambda(nn::relu)(x) is nn::relu(x).
struct Lambda {
  BOOST_HANA_DEFINE_STRUCT(Lambda, (Static<ActivationFn>, fn));

  Lambda() = default;
  explicit Lambda(ActivationFn f) : fn{f} {}
  Array operator()(const Array& x) const;
};

namespace internal {
// n keys split from key (jx::random::split(key, n), unstacked).
std::vector<Array> SplitKeys(const Array& key, size_t n);
}  // namespace internal

template <typename... Layers>
struct Sequential {
  BOOST_HANA_DEFINE_STRUCT(Sequential, (std::tuple<Layers...>, layers));

  Sequential() = default;
  explicit Sequential(Layers... ls) : layers(std::move(ls)...) {}

  // Each layer called on the previous one's output (inference mode for layers that take a key).
  Array operator()(const Array& x) const {
    Array h = x;
    std::apply([&](const auto&... layer) { ((h = layer(h)), ...); }, layers);
    return h;
  }
  // Layers callable as layer(x, key, training) (Dropout, nested Sequentials) get their own key
  // split from key; the others are called as layer(x).
  Array operator()(const Array& x, const Array& key, bool training) const {
    const std::vector<Array> keys = internal::SplitKeys(key, sizeof...(Layers));
    Array h = x;
    size_t i = 0;
    std::apply(
        [&](const auto&... layer) {
          auto call = [&](const auto& l) {
            if constexpr (std::is_invocable_r_v<Array, const std::decay_t<decltype(l)>&, const Array&, const Array&,
                                                bool>) {
              h = l(h, keys[i], training);
            } else {
              h = l(h);
            }
            ++i;
          };
          (call(layer), ...);
        },
        layers);
    return h;
  }
};
template <typename... Layers>
Sequential(Layers...) -> Sequential<Layers...>;

}  // namespace jx::nn
