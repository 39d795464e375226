// nn::Sequential: modules called in order, itself a module (a pytree whose `layers` tuple holds
// the modules, so jx::grad differentiates all their parameters). An activation sits in it as
// nn::Lambda, a parameter-free module holding a function pointer (a Static, so it is part of
// the tree structure and of jit's cache key).
//
//   nn::Sequential mlp(nn::Linear(784, 128, k1), nn::Lambda(nn::relu, "relu"),
//                      nn::Dropout(0.2), nn::Linear(128, 10, k2));
//   Array logits = mlp(x);                          // inference: Dropout is the identity
//   Array train_logits = mlp(x, key, /*training=*/true);  // one split key per layer, as Equinox
//   nn::Lambda gelu_exact(+[](const Array& x) { return nn::gelu(x, false); });
#pragma once

#include <cstddef>
#include <cstdint>
#include <iosfwd>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "jx/core/array.h"
#include "jx/core/pytree.h"

namespace jx::nn {

using ActivationFn = Array (*)(const Array&);

// A function pointer as a Static value: compared and hashed by address, printed as
// <function NAME> (or its address when unnamed).
struct StaticFunction {
  ActivationFn fn = nullptr;
  std::string name;
  friend bool operator==(const StaticFunction& a, const StaticFunction& b) { return a.fn == b.fn; }
  template <typename H>
  friend H AbslHashValue(H h, const StaticFunction& f) {
    return H::combine(std::move(h), reinterpret_cast<uintptr_t>(f.fn));
  }
  friend std::ostream& operator<<(std::ostream& os, const StaticFunction& f);
};

// A function as a module: Lambda(nn::relu)(x) is nn::relu(x). The optional name shows in the
// model's tree structure: PyTreeDef(Lambda(fn=Static(<function relu>))).
struct Lambda {
  BOOST_HANA_DEFINE_STRUCT(Lambda, (Static<StaticFunction>, fn));

  Lambda() = default;
  explicit Lambda(ActivationFn f, std::string name = "") : fn{StaticFunction{f, std::move(name)}} {}
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
  explicit Sequential(Layers... ls)
    requires(sizeof...(Layers) > 0)
      : layers(std::move(ls)...) {}

  // Each layer called on the previous one's output (inference mode for layers that take a key).
  Array operator()(const Array& x) const {
    Array h = x;
    std::apply([&](const auto&... layer) { ((h = layer(h)), ...); }, layers);
    return h;
  }
  // Layers callable as layer(x, key, training) (Dropout, nested Sequentials) get their own key
  // split from key; the others are called as layer(x).
  Array operator()(const Array& x, const Array& key, bool training) const {
    return Apply(x, internal::SplitKeys(key, sizeof...(Layers)), training, std::index_sequence_for<Layers...>{});
  }

 private:
  template <size_t... I>
  Array Apply(Array h, [[maybe_unused]] const std::vector<Array>& keys, [[maybe_unused]] bool training,
              std::index_sequence<I...>) const {
    ((h = CallLayer(std::get<I>(layers), h, keys[I], training)), ...);
    return h;
  }
  template <typename L>
  static Array CallLayer(const L& layer, const Array& h, const Array& key, bool training) {
    if constexpr (std::is_invocable_r_v<Array, const L&, const Array&, const Array&, bool>) {
      return layer(h, key, training);
    } else {
      return layer(h);
    }
  }
};
template <typename... Layers>
Sequential(Layers...) -> Sequential<Layers...>;

}  // namespace jx::nn
