// The C++ type of a Jacobian between two pytrees, as JAX builds it: the output's structure
// with every leaf replaced by a tree shaped like the input (jax.jacfwd's "tree of trees").
// For f: {"a", "b"} -> {"c"} (std::map<std::string, Array> both ways), the Jacobian is
// std::map<std::string, std::map<std::string, Array>> and J["c"]["a"] is dc/da.
//
//   using J = jx::jacobian_internal::WithLeaves<In, Out>;    // Out with each leaf an In
//   J j = jx::jacobian_internal::ReplaceLeaves<In>(out, [&](const Array&) { return next_in(); });
//
// Containers (vector, array, tuple, pair, string-keyed map, optional, Static) are rebuilt with
// the new leaf type. A Boost.Hana struct's field types are fixed, so a struct output works only
// when the input is a single Array (the Jacobian then has the output's type).
#pragma once

#include <array>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "jx/core/array.h"
#include "jx/core/pytree.h"

namespace jx::jacobian_internal {

template <typename In, typename Out>
struct WithLeavesT {
  static_assert(std::is_same_v<In, Array>,
                "jx::jacfwd/jacrev/hessian: this output type holds Arrays in fixed fields (a struct), so a "
                "Jacobian with respect to a pytree argument cannot be built in it; return a std::map, "
                "std::vector or std::tuple, or differentiate with respect to an Array argument");
  using type = Out;
};
template <typename In, typename Out>
using WithLeaves = typename WithLeavesT<In, std::remove_cvref_t<Out>>::type;

template <typename In>
struct WithLeavesT<In, Array> {
  using type = In;
};
template <typename In, typename T, typename A>
struct WithLeavesT<In, std::vector<T, A>> {
  using type = std::vector<WithLeaves<In, T>>;
};
template <typename In, typename T, size_t N>
struct WithLeavesT<In, std::array<T, N>> {
  using type = std::array<WithLeaves<In, T>, N>;
};
template <typename In, typename... T>
struct WithLeavesT<In, std::tuple<T...>> {
  using type = std::tuple<WithLeaves<In, T>...>;
};
template <typename In, typename A, typename B>
struct WithLeavesT<In, std::pair<A, B>> {
  using type = std::pair<WithLeaves<In, A>, WithLeaves<In, B>>;
};
template <typename In, typename T, typename C, typename A>
struct WithLeavesT<In, std::map<std::string, T, C, A>> {
  using type = std::map<std::string, WithLeaves<In, T>, C>;
};
template <typename In, typename T>
struct WithLeavesT<In, std::optional<T>> {
  using type = std::optional<WithLeaves<In, T>>;
};
template <typename In, typename T>
struct WithLeavesT<In, Static<T>> {
  using type = Static<T>;
};

// x with each Array leaf replaced by make_leaf(leaf), visiting leaves in tree::flatten order.
template <typename In, typename Out, typename MakeLeaf>
WithLeaves<In, Out> ReplaceLeaves(const Out& x, MakeLeaf& make_leaf) {
  using T = std::remove_cvref_t<Out>;
  if constexpr (std::is_same_v<T, Array>) {
    return make_leaf(x);
  } else if constexpr (std::is_same_v<In, Array>) {  // same structure, structs included
    return tree::map([&](const Array& leaf) { return make_leaf(leaf); }, x);
  } else if constexpr (tree_internal::kCategoryOf<T> == tree_internal::Category::kVector) {
    WithLeaves<In, T> out;
    out.reserve(x.size());
    for (const auto& e : x) out.push_back(ReplaceLeaves<In>(e, make_leaf));
    return out;
  } else if constexpr (tree_internal::kCategoryOf<T> == tree_internal::Category::kStdArray ||
                       tree_internal::kCategoryOf<T> == tree_internal::Category::kTupleLike) {
    // Braced initialization evaluates left to right, keeping the leaf order.
    return std::apply([&](const auto&... e) { return WithLeaves<In, T>{ReplaceLeaves<In>(e, make_leaf)...}; }, x);
  } else if constexpr (tree_internal::kCategoryOf<T> == tree_internal::Category::kDict) {
    WithLeaves<In, T> out;
    for (const auto& [key, value] : x) out.emplace(key, ReplaceLeaves<In>(value, make_leaf));
    return out;
  } else if constexpr (tree_internal::kCategoryOf<T> == tree_internal::Category::kOptional) {
    if (!x.has_value()) return WithLeaves<In, T>{};
    return WithLeaves<In, T>{ReplaceLeaves<In>(*x, make_leaf)};
  } else {
    static_assert(tree_internal::kCategoryOf<T> == tree_internal::Category::kStatic);
    return x;
  }
}

}  // namespace jx::jacobian_internal
