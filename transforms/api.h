// The user-facing transformations, as JAX spells them. Each takes a C++ callable over
// pytrees of jx::Array and returns a callable; they compose freely.
//
//   auto loss = [](const Params& p, const Array& x) { return jnp::sum(jnp::tanh(x * p.w)); };
//   Params g = jx::grad(loss)(params, x);                       // d/d params
//   auto [v, g] = jx::value_and_grad(loss)(params, x);
//   auto [gw, gx] = jx::grad(f, jx::argnums{0, 1})(w, x);        // arguments of one type
//   auto [y, y_dot] = jx::jvp(f, std::tuple{x}, std::tuple{t});
//   auto [y, f_vjp] = jx::vjp(f, x, w);  auto [ct_x, ct_w] = f_vjp(ct);
//   Array ys = jx::vmap(f, jx::in_axes{0, jx::none})(xs, w);
//   jx::ClosedJaxpr j = jx::make_jaxpr(f)(x);  std::cout << j;
#pragma once

#include <array>
#include <functional>
#include <optional>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "jx/core/errors.h"
#include "jx/core/pytree.h"
#include "jx/transforms/ad.h"
#include "jx/transforms/ad_util.h"
#include "jx/transforms/builtin_rules.h"
#include "jx/transforms/check_grads.h"
#include "jx/transforms/checkpoint.h"
#include "jx/transforms/custom_derivatives.h"
#include "jx/transforms/eval_shape.h"
#include "jx/transforms/jacobian.h"
#include "jx/transforms/jit.h"
#include "jx/transforms/jvp.h"
#include "jx/transforms/staging.h"
#include "jx/transforms/vmap.h"

namespace jx {

// jx::none: an unmapped argument in vmap's in_axes (JAX's None).
struct NoneType {
  friend bool operator==(NoneType, NoneType) { return true; }
};
inline constexpr NoneType none{};

// grad(f, jx::has_aux): f returns std::pair{scalar loss, aux pytree}.
struct HasAux {};
inline constexpr HasAux has_aux{};

// Which positional arguments grad differentiates: jx::argnums{0, 2}. The gradients come back
// as a std::tuple in that order; the selected arguments must share one type.
template <size_t N>
struct argnums {
  std::array<int, N> indices;
  template <typename... I>
  constexpr argnums(I... i) : indices{static_cast<int>(i)...} {}
};
template <typename... I>
argnums(I...) -> argnums<sizeof...(I)>;

// A pytree prefix of vmap axes for one argument, by key path: each leaf takes the entry
// whose path is the longest prefix of its own (".layers" covers ".layers[2].w"; "" covers
// everything). JAX's in_axes=({"w": 0, "b": None},) is
//   jx::in_axes{jx::axes_by_path{{".w", 0}, {".b", jx::none}}}
struct axes_by_path {
  std::vector<std::pair<std::string, std::optional<int64_t>>> entries;
  axes_by_path(std::initializer_list<std::pair<std::string, std::variant<int, NoneType>>> list) {
    for (const auto& [path, a] : list) {
      entries.emplace_back(path, std::holds_alternative<int>(a) ? std::optional<int64_t>(std::get<int>(a)) : std::nullopt);
    }
  }
};

// One vmap axis entry: an int (negative counts from the end), jx::none, or an axes_by_path
// prefix for the leaves below it.
using AxisSpec = std::variant<std::optional<int64_t>, axes_by_path>;
namespace api_internal {
inline std::vector<AxisSpec> AxisSpecs(std::initializer_list<std::variant<int, NoneType, axes_by_path>> list) {
  std::vector<AxisSpec> axes;
  for (const auto& a : list) {
    if (const auto* by_path = std::get_if<axes_by_path>(&a)) {
      axes.emplace_back(*by_path);
    } else {
      axes.emplace_back(std::holds_alternative<int>(a) ? std::optional<int64_t>(std::get<int>(a)) : std::nullopt);
    }
  }
  return axes;
}
}  // namespace api_internal

// vmap in_axes: one entry per argument, or a single entry for all arguments.
struct in_axes {
  std::vector<AxisSpec> axes;
  in_axes(std::initializer_list<std::variant<int, NoneType, axes_by_path>> list)
      : axes(api_internal::AxisSpecs(list)) {}
};
// vmap out_axes, a prefix of the output pytree as in JAX: a single entry covers the whole
// output; otherwise one entry per child of the output's root (a tuple's elements, a
// struct's fields), each an int, jx::none or an axes_by_path prefix of that child.
struct out_axes {
  std::vector<AxisSpec> axes;
  out_axes(std::initializer_list<std::variant<int, NoneType, axes_by_path>> list)
      : axes(api_internal::AxisSpecs(list)) {}
};
// vmap's axis_size, needed only when no argument is mapped.
struct axis_size {
  int64_t value;
};

namespace api_internal {

struct FlatArg {
  std::vector<Array> leaves;
  tree::TreeDef def;
};

template <typename... Args>
std::vector<FlatArg> FlattenArgs(const Args&... args) {
  lax::RegisterAll();  // every transformation flattens its arguments first
  std::vector<FlatArg> flat;
  (
      [&] {
        auto [leaves, def] = tree::flatten(args);
        flat.push_back(FlatArg{std::move(leaves), std::move(def)});
      }(),
      ...);
  return flat;
}

template <typename Tuple, size_t... I>
Tuple UnflattenArgs(const std::vector<FlatArg>& flat, std::index_sequence<I...>) {
  return Tuple{tree::unflatten<std::tuple_element_t<I, Tuple>>(flat[I].def, flat[I].leaves)...};
}

// Calls f on arguments rebuilt from flat, and flattens its result (its TreeDef lands in
// *out_def).
template <typename F, typename... Args>
Arrays CallFlat(F& f, const std::vector<FlatArg>& flat, tree::TreeDef* out_def) {
  using Tuple = std::tuple<std::decay_t<Args>...>;
  Tuple args = UnflattenArgs<Tuple>(flat, std::index_sequence_for<Args...>{});
  auto result = std::apply(f, args);
  auto [leaves, def] = tree::flatten(result);
  *out_def = std::move(def);
  return Arrays(leaves.begin(), leaves.end());
}

// The flat arguments with the leaves of the selected arguments replaced by `leaves`.
std::vector<FlatArg> Substitute(const std::vector<FlatArg>& flat, absl::Span<const int> selected,
                                absl::Span<const Array> leaves);
// Leaves of the selected arguments, checked to be floating point (grad's rule).
std::vector<Array> DiffLeaves(const std::vector<FlatArg>& flat, absl::Span<const int> selected,
                              std::string_view transform);
void CheckArgnums(absl::Span<const int> selected, size_t num_args);
// The vmap axis of leaf `leaf` of argument `arg` under one in_axes entry (kNotMapped: none).
int64_t LeafAxis(const AxisSpec& entry, const FlatArg& flat, size_t arg, size_t leaf);
// The out_axes of every output leaf, resolved against the output's structure.
std::vector<int64_t> ResolveOutAxes(const std::vector<AxisSpec>& outs, const tree::TreeDef& out_def);
// Names of every leaf for error messages: "argument 0", "argument 1 at .layers[2].w".
std::vector<std::string> ArgLabels(const std::vector<FlatArg>& flat);
// grad's output check: a real scalar.
void CheckScalarOutput(const Array& out, std::string_view transform);
// Cotangents of the selected arguments split per argument.
std::vector<std::vector<Array>> SplitPerArg(const std::vector<FlatArg>& flat, absl::Span<const int> selected,
                                            const Arrays& cts);

// value_and_grad's core over flat arguments: (f's flat outputs, out def, grads per selected arg).
struct ValueAndGradFlat {
  Arrays outs;
  tree::TreeDef out_def;
  std::vector<std::vector<Array>> grads;
};
template <typename F, typename... Args>
ValueAndGradFlat ValueAndGradCall(F& f, absl::Span<const int> selected, bool aux, const Args&... args) {
  const std::vector<FlatArg> flat = FlattenArgs(args...);
  CheckArgnums(selected, flat.size());
  ValueAndGradFlat r;
  const std::vector<Array> diff = DiffLeaves(flat, selected, aux ? "grad(has_aux)" : "grad");
  ArraysFn fn = [&](absl::Span<const Array> leaves) {
    return CallFlat<F, Args...>(f, Substitute(flat, selected, leaves), &r.out_def);
  };
  auto [outs, pullback] = VjpCall(fn, diff);
  if (outs.empty()) throw TypeError("grad requires a function returning a scalar Array");
  CheckScalarOutput(outs[0], "grad");
  Arrays cts(outs.size());
  cts[0] = Array::Scalar(1.0, outs[0].dtype());
  r.grads = SplitPerArg(flat, selected, pullback(cts));
  r.outs = std::move(outs);
  return r;
}

template <typename T>
T Rebuild(const tree::TreeDef& def, absl::Span<const Array> leaves) {
  return tree::unflatten<T>(def, leaves);
}

template <typename T>
using FirstArgT = std::tuple_element_t<0, std::tuple<T>>;

}  // namespace api_internal

namespace api_internal {

// Which arguments a value_and_grad differentiates: argument 0 (gradient shaped like it), or
// jx::argnums{...} (a std::tuple of gradients in that order).
struct FirstArg {};

// value_and_grad for every combination of argnums and has_aux: std::pair{f(args...), grads}.
// With has_aux, f returns std::pair{loss, aux} and the value is that pair (JAX's
// ((value, aux), grad)).
template <typename F, typename Which, typename... Args>
auto ValueAndGradOf(F& f, const Which& which, bool has_aux, const Args&... args) {
  using R = std::invoke_result_t<F&, const Args&...>;
  using A0 = std::decay_t<std::tuple_element_t<0, std::tuple<Args...>>>;
  if constexpr (std::is_same_v<Which, FirstArg>) {
    const int selected[] = {0};
    auto r = ValueAndGradCall<F, Args...>(f, selected, has_aux, args...);
    return std::pair<R, A0>{tree::unflatten<R>(r.out_def, r.outs),
                            tree::unflatten<A0>(tree::structure(std::get<0>(std::tie(args...))), r.grads[0])};
  } else {
    static_assert((std::is_same_v<A0, Args> && ...),
                  "jx::grad with jx::argnums{...}: the arguments must share one type (the gradient tuple's "
                  "element type); differentiate heterogeneous arguments by grouping them in one struct");
    auto r = ValueAndGradCall<F, Args...>(f, which.indices, has_aux, args...);
    const std::array<tree::TreeDef, sizeof...(Args)> defs = {tree::structure(args)...};
    auto grads = [&]<size_t... I>(std::index_sequence<I...>) {
      return std::tuple{tree::unflatten<A0>(defs[which.indices[I]], r.grads[I])...};
    }(std::make_index_sequence<std::tuple_size_v<decltype(which.indices)>>{});
    return std::pair<R, decltype(grads)>{tree::unflatten<R>(r.out_def, r.outs), std::move(grads)};
  }
}

template <typename F, typename Which>
auto ValueAndGradFn(F f, Which which, bool has_aux) {
  return [f, which, has_aux](const auto&... args) mutable {
    return ValueAndGradOf<F, Which, std::decay_t<decltype(args)>...>(f, which, has_aux, args...);
  };
}

// grad with has_aux: std::pair{grads, aux} from value_and_grad's ((loss, aux), grads).
template <typename F, typename Which>
auto GradWithAuxFn(F f, Which which) {
  return [vg = ValueAndGradFn(std::move(f), which, true)](const auto&... args) mutable {
    auto [value, grads] = vg(args...);
    using Aux = std::decay_t<decltype(value.second)>;
    return std::pair<decltype(grads), Aux>{std::move(grads), std::move(value.second)};
  };
}

}  // namespace api_internal

// value_and_grad(f)(args...) -> std::pair{f(args...), df/d(arg 0)}.
template <typename F>
auto value_and_grad(F f) {
  return api_internal::ValueAndGradFn(std::move(f), api_internal::FirstArg{}, false);
}
// value_and_grad(f, jx::argnums{i, j, ...})(args...) -> std::pair{f(args...), std::tuple of grads}.
template <typename F, size_t N>
auto value_and_grad(F f, argnums<N> nums) {
  return api_internal::ValueAndGradFn(std::move(f), nums, false);
}
// value_and_grad(f, jx::has_aux)(args...) -> std::pair{std::pair{loss, aux}, df/d(arg 0)}.
template <typename F>
auto value_and_grad(F f, HasAux) {
  return api_internal::ValueAndGradFn(std::move(f), api_internal::FirstArg{}, true);
}
// value_and_grad(f, jx::argnums{...}, jx::has_aux) -> std::pair{std::pair{loss, aux}, std::tuple of grads}.
template <typename F, size_t N>
auto value_and_grad(F f, argnums<N> nums, HasAux) {
  return api_internal::ValueAndGradFn(std::move(f), nums, true);
}

// grad(f)(args...) -> df/d(arg 0), shaped like arg 0.
template <typename F>
auto grad(F f) {
  return [vg = value_and_grad(std::move(f))](const auto&... args) mutable { return vg(args...).second; };
}

// grad(f, jx::argnums{i, j, ...})(args...) -> std::tuple of gradients.
template <typename F, size_t N>
auto grad(F f, argnums<N> nums) {
  return [vg = value_and_grad(std::move(f), nums)](const auto&... args) mutable { return vg(args...).second; };
}

// grad(f, jx::has_aux)(args...) -> std::pair{grad, aux}: f returns std::pair{loss, aux}.
template <typename F>
auto grad(F f, HasAux) {
  return api_internal::GradWithAuxFn(std::move(f), api_internal::FirstArg{});
}

// grad(f, jx::argnums{...}, jx::has_aux)(args...) -> std::pair{std::tuple of grads, aux}.
template <typename F, size_t N>
auto grad(F f, argnums<N> nums, HasAux) {
  return api_internal::GradWithAuxFn(std::move(f), nums);
}

// jvp(f, std::tuple{primals...}, std::tuple{tangents...}) -> std::pair{f(primals), tangent out}.
template <typename F, typename... P, typename... T>
auto jvp(F f, const std::tuple<P...>& primals, const std::tuple<T...>& tangents) {
  static_assert(sizeof...(P) == sizeof...(T), "jx::jvp: primals and tangents must have the same length");
  using R = std::invoke_result_t<F&, const P&...>;
  const std::vector<api_internal::FlatArg> flat = std::apply(
      [](const auto&... a) { return api_internal::FlattenArgs(a...); }, primals);
  const std::vector<api_internal::FlatArg> flat_t = std::apply(
      [](const auto&... a) { return api_internal::FlattenArgs(a...); }, tangents);
  std::vector<Array> p_leaves, t_leaves;
  for (size_t i = 0; i < flat.size(); ++i) {
    if (!(flat[i].def == flat_t[i].def)) {
      throw TypeError(StrCat("jvp: primal and tangent argument ", i, " have different structures: ",
                             tree::FirstDifference(flat[i].def, flat_t[i].def)));
    }
    p_leaves.insert(p_leaves.end(), flat[i].leaves.begin(), flat[i].leaves.end());
    t_leaves.insert(t_leaves.end(), flat_t[i].leaves.begin(), flat_t[i].leaves.end());
  }
  tree::TreeDef out_def;
  std::vector<int> all(flat.size());
  for (size_t i = 0; i < all.size(); ++i) all[i] = static_cast<int>(i);
  ArraysFn fn = [&](absl::Span<const Array> leaves) {
    return api_internal::CallFlat<F, P...>(f, api_internal::Substitute(flat, all, leaves), &out_def);
  };
  auto [outs, touts] = JvpCall(fn, p_leaves, t_leaves);
  for (size_t i = 0; i < touts.size(); ++i) {
    if (!touts[i].defined()) touts[i] = Zeros(ShapedArray{outs[i].shape(), outs[i].dtype()});
  }
  return std::pair<R, R>{tree::unflatten<R>(out_def, outs), tree::unflatten<R>(out_def, touts)};
}

// vjp(f, args...) -> std::pair{f(args), f_vjp}; f_vjp(ct) -> std::tuple of cotangents, one
// per argument (zeros for integer arguments).
template <typename F, typename... Args>
auto vjp(F f, const Args&... args) {
  using R = std::invoke_result_t<F&, const Args&...>;
  auto flat = std::make_shared<std::vector<api_internal::FlatArg>>(api_internal::FlattenArgs(args...));
  std::vector<int> all(flat->size());
  for (size_t i = 0; i < all.size(); ++i) all[i] = static_cast<int>(i);
  std::vector<Array> leaves;
  for (const auto& a : *flat) leaves.insert(leaves.end(), a.leaves.begin(), a.leaves.end());
  auto out_def = std::make_shared<tree::TreeDef>();
  ArraysFn fn = [&](absl::Span<const Array> l) {
    return api_internal::CallFlat<F, Args...>(f, api_internal::Substitute(*flat, all, l), out_def.get());
  };
  auto [outs, pullback] = VjpCall(fn, leaves);
  auto f_vjp = [flat, out_def, all, pullback = std::move(pullback)](const R& ct) {
    auto [ct_leaves, ct_def] = tree::flatten(ct);
    if (!(ct_def == *out_def)) {
      throw TypeError(StrCat("vjp: the cotangent's structure differs from the output's: ",
                             tree::FirstDifference(*out_def, ct_def)));
    }
    Arrays cts = pullback(ct_leaves);
    const std::vector<std::vector<Array>> per_arg = api_internal::SplitPerArg(*flat, all, cts);
    return [&]<size_t... I>(std::index_sequence<I...>) {
      return std::tuple<Args...>{tree::unflatten<Args>((*flat)[I].def, per_arg[I])...};
    }(std::index_sequence_for<Args...>{});
  };
  return std::pair{tree::unflatten<R>(*out_def, outs), std::move(f_vjp)};
}

// vmap(f, in_axes, out_axes)(args...): f mapped over the given axes of its arguments.
template <typename F>
auto vmap(F f, in_axes ins = {0}, out_axes outs = {0}, std::optional<axis_size> size = std::nullopt) {
  return [f, ins, outs, size](const auto&... args) mutable {
    using R = std::invoke_result_t<F&, decltype(args)...>;
    const std::vector<api_internal::FlatArg> flat = api_internal::FlattenArgs(args...);
    if (ins.axes.size() != flat.size() && ins.axes.size() != 1) {
      throw ValueError(StrCat("vmap in_axes must have one entry per argument (", flat.size(), ") or one for all, got ",
                              ins.axes.size()));
    }
    std::vector<Array> leaves;
    std::vector<int64_t> leaf_axes;
    std::vector<int> all;
    for (size_t i = 0; i < flat.size(); ++i) {
      all.push_back(static_cast<int>(i));
      const auto& entry = ins.axes.size() == 1 ? ins.axes[0] : ins.axes[i];
      for (size_t j = 0; j < flat[i].leaves.size(); ++j) {
        leaves.push_back(flat[i].leaves[j]);
        leaf_axes.push_back(api_internal::LeafAxis(entry, flat[i], i, j));
      }
    }
    tree::TreeDef out_def;
    ArraysFn fn = [&](absl::Span<const Array> l) {
      return api_internal::CallFlat<F, std::decay_t<decltype(args)>...>(f, api_internal::Substitute(flat, all, l),
                                                                       &out_def);
    };
    auto resolve_out_axes = [&] {
      return VmapOutAxes(api_internal::ResolveOutAxes(outs.axes, out_def), [&] { return out_def.KeyPaths(); });
    };
    Arrays ys = VmapCallDeferredOutAxes(fn, leaves, leaf_axes, resolve_out_axes,
                                        size ? std::optional<int64_t>(size->value) : std::nullopt,
                                        api_internal::ArgLabels(flat));
    return tree::unflatten<R>(out_def, ys);
  };
}

namespace api_internal {

// jacfwd/jacrev over argument 0. With an Array output the Jacobian is shaped like argument 0
// (each leaf: out.shape ++ leaf.shape); with an Array argument it is shaped like the output.
template <bool kForward, typename F>
auto Jacobian(F f) {
  return [f](const auto&... args) mutable {
    using R = std::decay_t<std::invoke_result_t<F&, decltype(args)...>>;
    using A0 = std::decay_t<std::tuple_element_t<0, std::tuple<decltype(args)...>>>;
    static_assert(std::is_same_v<R, Array> || std::is_same_v<A0, Array>,
                  "jx::jacfwd/jacrev: either the output or argument 0 must be a single Array (a Jacobian "
                  "between two pytrees has no single C++ type; differentiate one leaf at a time)");
    const std::vector<FlatArg> flat = FlattenArgs(args...);
    const int selected[] = {0};
    const char* name = kForward ? "jacfwd" : "jacrev";
    const std::vector<Array> diff = DiffLeaves(flat, selected, name);
    tree::TreeDef out_def;
    ArraysFn fn = [&](absl::Span<const Array> leaves) {
      return CallFlat<F, std::decay_t<decltype(args)>...>(f, Substitute(flat, selected, leaves), &out_def);
    };
    const JacobianBlocks jac = kForward ? JacfwdFlat(fn, diff) : JacrevFlat(fn, diff);
    if constexpr (std::is_same_v<R, Array>) {
      return tree::unflatten<A0>(flat[0].def, jac[0]);
    } else {
      std::vector<Array> leaves;
      for (const std::vector<Array>& row : jac) leaves.push_back(row[0]);
      return tree::unflatten<R>(out_def, leaves);
    }
  };
}

}  // namespace api_internal

// jacfwd(f)(args...): the Jacobian of f with respect to argument 0, by forward mode (one jvp
// per input element, batched with vmap). For f: f32[n] -> f32[m], an f32[m, n] array.
template <typename F>
auto jacfwd(F f) {
  return api_internal::Jacobian<true>(std::move(f));
}

// jacrev(f)(args...): the same Jacobian by reverse mode (one vjp per output element, batched).
template <typename F>
auto jacrev(F f) {
  return api_internal::Jacobian<false>(std::move(f));
}

// hessian(f)(x): jacfwd(jacrev(f)), f32[n] -> f32[] giving f32[n, n].
template <typename F>
auto hessian(F f) {
  return jacfwd(jacrev(std::move(f)));
}

// make_jaxpr(f)(args...) -> the ClosedJaxpr of f traced on the arguments' shapes and dtypes.
template <typename F>
auto make_jaxpr(F f) {
  return [f](const auto&... args) mutable {
    const std::vector<api_internal::FlatArg> flat = api_internal::FlattenArgs(args...);
    std::vector<ShapedArray> avals;
    std::vector<int> all;
    for (size_t i = 0; i < flat.size(); ++i) {
      all.push_back(static_cast<int>(i));
      for (const Array& l : flat[i].leaves) avals.push_back(ShapedArray{l.shape(), l.dtype(), l.weak_type()});
    }
    tree::TreeDef out_def;
    return TraceToJaxpr(
        [&](absl::Span<const Array> l) {
          return api_internal::CallFlat<F, std::decay_t<decltype(args)>...>(f, api_internal::Substitute(flat, all, l),
                                                                           &out_def);
        },
        avals, "make_jaxpr", api_internal::ArgLabels(flat));
  };
}

// check_grads(f, std::tuple{args...}, order): f's derivatives against finite differences
// (forward) and the dot-product identity (reverse), recursively to `order`. Throws
// jx::ValueError on a mismatch.
template <typename F, typename... Args>
void check_grads(F f, const std::tuple<Args...>& args, int order = 1, CheckGradsOptions options = {}) {
  options.order = order;
  const std::vector<api_internal::FlatArg> flat =
      std::apply([](const auto&... a) { return api_internal::FlattenArgs(a...); }, args);
  std::vector<Array> leaves;
  std::vector<int> all;
  for (size_t i = 0; i < flat.size(); ++i) {
    all.push_back(static_cast<int>(i));
    leaves.insert(leaves.end(), flat[i].leaves.begin(), flat[i].leaves.end());
  }
  ArraysFn fn = [f, flat, all](absl::Span<const Array> l) mutable {
    tree::TreeDef out_def;
    return api_internal::CallFlat<F, Args...>(f, api_internal::Substitute(flat, all, l), &out_def);
  };
  CheckGradsFlat(fn, leaves, options);
}

}  // namespace jx
