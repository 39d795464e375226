// eval_shape(f)(args...): the shapes and dtypes of f's outputs, computed by tracing f (no
// arithmetic, no memory for the data), as JAX's jax.eval_shape. Arguments are Arrays, pytrees
// of Arrays or ShapeDtypeStructs standing for Arrays. The result has f's output structure
// with every Array replaced by a ShapeDtypeStruct: an Array gives a ShapeDtypeStruct, a
// std::vector / std::array / std::tuple / std::pair / std::map / std::optional the same
// container of those, and a struct (BOOST_HANA_DEFINE_STRUCT; its type cannot hold
// ShapeDtypeStructs) a ShapeDtypeTree: its tree structure and its leaves' ShapeDtypeStructs.
//
//   auto f = [](const Array& x, const Array& w) { return std::pair{jnp::dot(x, w), x.sum()}; };
//   auto [y, s] = jx::eval_shape(f)(jx::ShapeDtypeStruct{{1024, 512}, jx::float32}, w);
//   y.shape;   // {1024, w.shape()[1]}
#pragma once

#include <array>
#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "jx/core/pytree.h"
#include "jx/transforms/jit.h"

namespace jx {

// A struct's ShapeDtypeStructs in leaf order, with its tree structure (their key paths:
// def.KeyPath(i)).
struct ShapeDtypeTree {
  tree::TreeDef def;
  std::vector<ShapeDtypeStruct> leaves;
};

namespace eval_shape_internal {

inline ShapeDtypeStruct ShapeOf(const Array& x) { return ShapeDtypeStruct{x.shape(), x.dtype(), nullptr, x.weak_type()}; }

template <typename T>
auto ToShapes(const T& x);

// Maps one pytree node (by its type) to the same node holding ShapeDtypeStructs.
template <typename T>
struct Shaper {  // a struct
  static ShapeDtypeTree Map(const T& x) {
    auto [leaves, def] = tree::flatten(x);
    ShapeDtypeTree out{std::move(def), {}};
    for (const Array& l : leaves) out.leaves.push_back(ShapeOf(l));
    return out;
  }
};
template <>
struct Shaper<Array> {
  static ShapeDtypeStruct Map(const Array& x) { return ShapeOf(x); }
};
template <typename T>
struct Shaper<Static<T>> {
  static Static<T> Map(const Static<T>& x) { return x; }
};
template <typename T, typename A>
struct Shaper<std::vector<T, A>> {
  static auto Map(const std::vector<T, A>& x) {
    std::vector<decltype(ToShapes(std::declval<const T&>()))> out;
    out.reserve(x.size());
    for (const T& e : x) out.push_back(ToShapes(e));
    return out;
  }
};
template <typename T, size_t N>
struct Shaper<std::array<T, N>> {
  static auto Map(const std::array<T, N>& x) {
    return std::apply([](const auto&... e) { return std::array{ToShapes(e)...}; }, x);
  }
};
template <typename... Ts>
struct Shaper<std::tuple<Ts...>> {
  static auto Map(const std::tuple<Ts...>& x) {
    return std::apply([](const auto&... e) { return std::tuple{ToShapes(e)...}; }, x);
  }
};
template <typename A, typename B>
struct Shaper<std::pair<A, B>> {
  static auto Map(const std::pair<A, B>& x) { return std::pair{ToShapes(x.first), ToShapes(x.second)}; }
};
template <typename T, typename C, typename A>
struct Shaper<std::map<std::string, T, C, A>> {
  static auto Map(const std::map<std::string, T, C, A>& x) {
    std::map<std::string, decltype(ToShapes(std::declval<const T&>()))> out;
    for (const auto& [k, v] : x) out.emplace(k, ToShapes(v));
    return out;
  }
};
template <typename T>
struct Shaper<std::optional<T>> {
  static auto Map(const std::optional<T>& x) {
    using Out = decltype(ToShapes(std::declval<const T&>()));
    return x ? std::optional<Out>(ToShapes(*x)) : std::optional<Out>();
  }
};

template <typename T>
auto ToShapes(const T& x) {
  return Shaper<std::remove_cvref_t<T>>::Map(x);
}

}  // namespace eval_shape_internal

// eval_shape(f): see the top of this file.
template <typename F>
auto eval_shape(F f) {
  return [f](const auto&... args) {
    using R = std::decay_t<std::invoke_result_t<F&, const jit_internal::TracedArg<std::decay_t<decltype(args)>>&...>>;
    using Out = decltype(eval_shape_internal::ToShapes(std::declval<const R&>()));
    std::optional<Out> out;
    // The shapes are read inside the trace, where the outputs' tracers are alive.
    auto shaped = [&f, &out](const auto&... a) {
      R r = f(a...);
      out.emplace(eval_shape_internal::ToShapes(r));
      return r;
    };
    jit(shaped, name{"eval_shape"}).trace(args...);
    return std::move(*out);
  };
}

}  // namespace jx
