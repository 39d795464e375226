// The user-facing transformations, as JAX spells them. Each takes a C++ callable over
// pytrees of jx::Array and returns a callable; they compose freely.
//
//   auto loss = [](const Params& p, const Array& x) { return jnp::sum(jnp::tanh(x * p.w)); };
//   Params g = jx::grad(loss)(params, x);                       // d/d params
//   auto [v, g] = jx::value_and_grad(loss)(params, x);
//   Array gx = jx::grad(f, 1)(w, x);                              // argnums=1: one gradient
//   auto [gp, gx] = jx::grad(f, jx::argnums{0, 1})(params, x);    // argnums=(0, 1): a tuple
//   Array g = jx::grad([](Array x) { return x * x; })(3.0);       // a C++ scalar: weak f32
//   auto H = jx::hessian(f)(dict);                                 // H["c"]["a"]["b"], as JAX
//   auto [y, y_dot] = jx::jvp(f, std::tuple{x}, std::tuple{t});
//   auto [y, f_vjp] = jx::vjp(f, x, w);  auto [ct_x, ct_w] = f_vjp(ct);
//   Array ys = jx::vmap(f, jx::in_axes{0, jx::none})(xs, w);
//   jx::ClosedJaxpr j = jx::make_jaxpr(f)(x);  std::cout << j;
#pragma once

#include <array>
#include <concepts>
#include <functional>
#include <optional>
#include <string>
#include <tuple>
#include <type_traits>
#include <typeinfo>
#include <utility>
#include <variant>
#include <vector>

#include "jx/core/abstract_mesh_context.h"
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
#include "jx/transforms/jacobian_tree.h"
#include "jx/core/none.h"  // jx::none: an unmapped argument in vmap's in_axes
#include "jx/transforms/jit.h"
#include "jx/transforms/jvp.h"
#include "jx/transforms/staging.h"
#include "jx/transforms/vmap.h"

namespace jx {

// grad(f, jx::has_aux): f returns std::pair{scalar loss, aux pytree}.
struct HasAux {};
inline constexpr HasAux has_aux{};

// Which positional arguments grad, value_and_grad, jacfwd, jacrev, jacobian and hessian
// differentiate, as JAX's argnums (an int gives one result, a tuple gives a tuple):
//   jx::grad(f, 1)                      grad(f, argnums=1)       one gradient
//   jx::grad(f, jx::argnums{1})         grad(f, argnums=1)       one gradient
//   jx::grad(f, jx::argnums{0, 2})      grad(f, argnums=(0, 2))  std::tuple of two gradients
//   jx::grad(f, jx::argnums_tuple{1})   grad(f, argnums=(1,))    std::tuple of one gradient
//   jx::grad<0, 2>(f)                   grad(f, argnums=(0, 2))  indices fixed at compile time
// Each gradient has its argument's C++ type (jx::Array for a C++ scalar argument). C++ must
// know that type at compile time, and a runtime index cannot say which argument it picks, so:
// when all arguments share one type, any runtime selection works; when they differ, gradient
// k has the type of argument k (argnums{0, 1} over (params, x, y) gives (Params, Array), and
// so does argnums{0, 2} since y is an Array like x), and a selection that breaks this
// (grad(f, 1)(params, x)) throws TypeError naming the compile-time spelling
// jx::grad<1>(f), which takes any selection over any argument types.
template <size_t N>
struct argnums {
  std::array<int, N> indices;
  template <std::convertible_to<int>... I>
  constexpr argnums(I... i) : indices{static_cast<int>(i)...} {}
};
template <typename... I>
argnums(I...) -> argnums<sizeof...(I)>;
// argnums that always give a std::tuple, even of one: JAX's argnums=(1,).
template <size_t N>
struct argnums_tuple {
  std::array<int, N> indices;
  template <std::convertible_to<int>... I>
  constexpr argnums_tuple(I... i) : indices{static_cast<int>(i)...} {}
};
template <typename... I>
argnums_tuple(I...) -> argnums_tuple<sizeof...(I)>;

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

// A transformed function sees each argument as a pytree of Arrays; a C++ arithmetic scalar
// argument becomes a weakly typed 0-d Array (f32 for floating point, i32 for integers), as
// JAX treats a Python float or int.
template <typename T>
using ArgT = std::conditional_t<std::is_arithmetic_v<std::decay_t<T>>, Array, std::decay_t<T>>;

template <typename T>
decltype(auto) AsPytree(const T& x) {
  if constexpr (std::is_arithmetic_v<T>) {
    return Array(x);
  } else {
    return (x);
  }
}

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
        auto [leaves, def] = tree::flatten(AsPytree(args));
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
  using Tuple = std::tuple<ArgT<Args>...>;
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
// Differentiates f at flat's arguments with respect to the selected ones (already checked).
template <typename F, typename... Args>
ValueAndGradFlat ValueAndGradCall(F& f, const std::vector<FlatArg>& flat, absl::Span<const int> selected,
                                  std::string_view name) {
  ValueAndGradFlat r;
  const std::vector<Array> diff = DiffLeaves(flat, selected, name);
  ArraysFn fn = [&](absl::Span<const Array> leaves) {
    return CallFlat<F, Args...>(f, Substitute(flat, selected, leaves), &r.out_def);
  };
  auto [outs, pullback] = VjpCall(fn, diff);
  if (outs.empty()) throw TypeError("grad requires a function returning a scalar Array");
  CheckScalarOutput(outs[0], "grad");
  Arrays cts(outs.size());
  // JAX's _one(ans): the seed is typed as the output, weak type included, so the cotangents
  // of weak primals stay weak without a convert.
  cts[0] = Array::Scalar(1.0, outs[0].dtype(), outs[0].weak_type());
  r.grads = SplitPerArg(flat, selected, pullback(cts));
  r.outs = std::move(outs);
  return r;
}

}  // namespace api_internal

namespace api_internal {

// The default selection: argument 0, one result.
struct FirstArg {};
// argnums fixed at compile time: jx::grad<0, 2>(f).
template <int... I>
struct StaticArgnums {};

// What a selection means: its indices, and whether results come back as a std::tuple.
template <typename Which>
struct Selection;
template <>
struct Selection<FirstArg> {
  static constexpr bool kTuple = false;
  static std::array<int, 1> Indices(const FirstArg&) { return {0}; }
};
template <size_t N>
struct Selection<argnums<N>> {
  static constexpr bool kTuple = N != 1;
  static std::array<int, N> Indices(const argnums<N>& w) { return w.indices; }
};
template <size_t N>
struct Selection<argnums_tuple<N>> {
  static constexpr bool kTuple = true;
  static std::array<int, N> Indices(const argnums_tuple<N>& w) { return w.indices; }
};
template <int... I>
struct Selection<StaticArgnums<I...>> {
  static constexpr bool kTuple = sizeof...(I) != 1;
  static std::array<int, sizeof...(I)> Indices(const StaticArgnums<I...>&) { return {I...}; }
};

// An int, jx::argnums{...} or jx::argnums_tuple{...}: the second argument of grad & co.
template <typename A>
struct IsArgnumsSpecT : std::bool_constant<std::is_integral_v<A> && !std::is_same_v<A, bool>> {};
template <size_t N>
struct IsArgnumsSpecT<argnums<N>> : std::true_type {};
template <size_t N>
struct IsArgnumsSpecT<argnums_tuple<N>> : std::true_type {};
template <typename A>
concept ArgnumsSpec = IsArgnumsSpecT<A>::value;

template <ArgnumsSpec A>
auto ToSelection(A nums) {
  if constexpr (std::is_integral_v<A>) {
    return argnums<1>{static_cast<int>(nums)};
  } else {
    return nums;
  }
}

template <size_t I, typename... Args>
using NthArgT = ArgT<std::tuple_element_t<I, std::tuple<Args...>>>;

// The C++ types of the selected arguments' derivatives, as a std::tuple (see jx::argnums):
// compile-time indices pick their arguments' types; runtime ones take the arguments' common
// type, or argument k's type for slot k.
template <typename Which, typename... Args>
struct SlotTypesT {
  using type = std::tuple<NthArgT<0, Args...>>;  // FirstArg
};
template <int... I, typename... Args>
struct SlotTypesT<StaticArgnums<I...>, Args...> {
  static_assert(((I >= 0 && I < static_cast<int>(sizeof...(Args))) && ...),
                "jx::grad<i...>(f): an index is out of range for the arguments given");
  using type = std::tuple<NthArgT<static_cast<size_t>(I), Args...>...>;
};
template <typename Seq, typename... Args>
struct RuntimeSlotsT;
template <size_t... K, typename... Args>
struct RuntimeSlotsT<std::index_sequence<K...>, Args...> {
  static constexpr bool kSame = (std::is_same_v<NthArgT<0, Args...>, ArgT<Args>> && ...);
  static constexpr size_t kLast = sizeof...(Args) - 1;
  using type = std::tuple<NthArgT<kSame ? 0 : (K < kLast ? K : kLast), Args...>...>;
};
template <size_t N, typename... Args>
struct SlotTypesT<argnums<N>, Args...> : RuntimeSlotsT<std::make_index_sequence<N>, Args...> {};
template <size_t N, typename... Args>
struct SlotTypesT<argnums_tuple<N>, Args...> : RuntimeSlotsT<std::make_index_sequence<N>, Args...> {};
template <typename Which, typename... Args>
using SlotTypes = typename SlotTypesT<Which, Args...>::type;

// One derivative, or the std::tuple of them.
template <typename Which, typename Slots>
using SelectedT = std::conditional_t<Selection<Which>::kTuple, Slots, std::tuple_element_t<0, Slots>>;

// Throws TypeError when a runtime selection's argument types differ from the slot types the
// result was built with (argnums{1, 2} over arguments of different types).
void CheckSlotType(const std::type_info& slot, const std::type_info& arg, absl::Span<const int> indices, size_t k,
                   std::string_view transform);
template <typename Slots, typename... Args, size_t N>
void CheckSlotTypes(const std::array<int, N>& indices, std::string_view transform) {
  const std::array<const std::type_info*, sizeof...(Args)> arg_types = {&typeid(ArgT<Args>)...};
  [&]<size_t... K>(std::index_sequence<K...>) {
    (CheckSlotType(typeid(std::tuple_element_t<K, Slots>), *arg_types[static_cast<size_t>(indices[K])], indices, K,
                   transform),
     ...);
  }(std::make_index_sequence<N>{});
}

// The selected arguments' values of type SelectedT from their flat leaves (per argument).
template <typename Which, typename Slots, size_t N>
SelectedT<Which, Slots> BuildSelected(const std::vector<FlatArg>& flat, const std::array<int, N>& indices,
                                      const std::vector<std::vector<Array>>& per_arg) {
  Slots all = [&]<size_t... K>(std::index_sequence<K...>) {
    return Slots{tree::unflatten<std::tuple_element_t<K, Slots>>(flat[static_cast<size_t>(indices[K])].def,
                                                                  per_arg[K])...};
  }(std::make_index_sequence<N>{});
  if constexpr (Selection<Which>::kTuple) {
    return all;
  } else {
    return std::get<0>(std::move(all));
  }
}

// value_and_grad for every selection and has_aux: std::pair{f(args...), gradients}. With
// has_aux, f returns std::pair{loss, aux} and the value is that pair (JAX's
// ((value, aux), grad)).
template <typename F, typename Which, typename... Args>
auto ValueAndGradOf(F& f, const Which& which, bool has_aux, const Args&... args) {
  using R = std::decay_t<std::invoke_result_t<F&, const ArgT<Args>&...>>;
  using Slots = SlotTypes<Which, Args...>;
  const auto indices = Selection<Which>::Indices(which);
  const std::vector<FlatArg> flat = FlattenArgs(args...);
  const std::string_view name = has_aux ? "grad(has_aux)" : "grad";
  CheckArgnums(indices, flat.size());
  CheckSlotTypes<Slots, Args...>(indices, name);
  auto r = ValueAndGradCall<F, Args...>(f, flat, indices, name);
  auto grads = BuildSelected<Which, Slots>(flat, indices, r.grads);
  return std::pair<R, decltype(grads)>{tree::unflatten<R>(r.out_def, r.outs), std::move(grads)};
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

template <typename F, typename Which>
auto GradFn(F f, Which which) {
  return [vg = ValueAndGradFn(std::move(f), which, false)](const auto&... args) mutable { return vg(args...).second; };
}

}  // namespace api_internal

// value_and_grad(f)(args...) -> std::pair{f(args...), df/d(arg 0)}.
template <typename F>
auto value_and_grad(F f) {
  return api_internal::ValueAndGradFn(std::move(f), api_internal::FirstArg{}, false);
}
// value_and_grad(f, argnums)(args...) -> std::pair{f(args...), gradient(s)}: argnums is an
// int, jx::argnums{...} or jx::argnums_tuple{...} (see jx::argnums for what comes back).
template <typename F, api_internal::ArgnumsSpec A>
auto value_and_grad(F f, A nums) {
  return api_internal::ValueAndGradFn(std::move(f), api_internal::ToSelection(nums), false);
}
// value_and_grad<i, ...>(f): compile-time argnums, for arguments of different types.
template <int I, int... Rest, typename F>
auto value_and_grad(F f) {
  return api_internal::ValueAndGradFn(std::move(f), api_internal::StaticArgnums<I, Rest...>{}, false);
}
// value_and_grad(f, jx::has_aux)(args...) -> std::pair{std::pair{loss, aux}, df/d(arg 0)}.
template <typename F>
auto value_and_grad(F f, HasAux) {
  return api_internal::ValueAndGradFn(std::move(f), api_internal::FirstArg{}, true);
}
// value_and_grad(f, argnums, jx::has_aux) -> std::pair{std::pair{loss, aux}, gradient(s)}.
template <typename F, api_internal::ArgnumsSpec A>
auto value_and_grad(F f, A nums, HasAux) {
  return api_internal::ValueAndGradFn(std::move(f), api_internal::ToSelection(nums), true);
}

// grad(f)(args...) -> df/d(arg 0), shaped like arg 0.
template <typename F>
auto grad(F f) {
  return api_internal::GradFn(std::move(f), api_internal::FirstArg{});
}
// grad(f, 1) / grad(f, jx::argnums{1}) -> one gradient; grad(f, jx::argnums{0, 2}) -> a
// std::tuple of gradients (see jx::argnums).
template <typename F, api_internal::ArgnumsSpec A>
auto grad(F f, A nums) {
  return api_internal::GradFn(std::move(f), api_internal::ToSelection(nums));
}
// grad<i, ...>(f): compile-time argnums, any argument types: grad<1>(f)(params, x) -> dx.
template <int I, int... Rest, typename F>
auto grad(F f) {
  return api_internal::GradFn(std::move(f), api_internal::StaticArgnums<I, Rest...>{});
}

// grad(f, jx::has_aux)(args...) -> std::pair{grad, aux}: f returns std::pair{loss, aux}.
template <typename F>
auto grad(F f, HasAux) {
  return api_internal::GradWithAuxFn(std::move(f), api_internal::FirstArg{});
}

// grad(f, argnums, jx::has_aux)(args...) -> std::pair{gradient(s), aux}.
template <typename F, api_internal::ArgnumsSpec A>
auto grad(F f, A nums, HasAux) {
  return api_internal::GradWithAuxFn(std::move(f), api_internal::ToSelection(nums));
}
// grad<i, ...>(f, jx::has_aux).
template <int I, int... Rest, typename F>
auto grad(F f, HasAux) {
  return api_internal::GradWithAuxFn(std::move(f), api_internal::StaticArgnums<I, Rest...>{});
}

// jvp(f, std::tuple{primals...}, std::tuple{tangents...}) -> std::pair{f(primals), tangent out}.
template <typename F, typename... P, typename... T>
auto jvp(F f, const std::tuple<P...>& primals, const std::tuple<T...>& tangents) {
  static_assert(sizeof...(P) == sizeof...(T), "jx::jvp: primals and tangents must have the same length");
  using R = std::decay_t<std::invoke_result_t<F&, const api_internal::ArgT<P>&...>>;
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
  using R = std::decay_t<std::invoke_result_t<F&, const api_internal::ArgT<Args>&...>>;
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
      return std::tuple<api_internal::ArgT<Args>...>{
          tree::unflatten<api_internal::ArgT<Args>>((*flat)[I].def, per_arg[I])...};
    }(std::index_sequence_for<Args...>{});
  };
  return std::pair{tree::unflatten<R>(*out_def, outs), std::move(f_vjp)};
}

// vmap(f, in_axes, out_axes)(args...): f mapped over the given axes of its arguments.
template <typename F>
auto vmap(F f, in_axes ins = {0}, out_axes outs = {0}, std::optional<axis_size> size = std::nullopt) {
  return [f, ins, outs, size](const auto&... args) mutable {
    using R = std::decay_t<std::invoke_result_t<F&, const api_internal::ArgT<decltype(args)>&...>>;
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

// jacfwd/jacrev over the selected arguments, as JAX: the Jacobian is the output's structure
// with each leaf replaced by a tree shaped like the input (the selected argument, or the
// std::tuple of them); each block has shape out_leaf.shape ++ in_leaf.shape.
template <bool kForward, typename F, typename Which>
auto Jacobian(F f, Which which) {
  return [f, which](const auto&... args) mutable {
    using R = std::decay_t<std::invoke_result_t<F&, const ArgT<decltype(args)>&...>>;
    using Slots = SlotTypes<Which, std::decay_t<decltype(args)>...>;
    using In = SelectedT<Which, Slots>;
    const char* name = kForward ? "jacfwd" : "jacrev";
    const auto indices = Selection<Which>::Indices(which);
    const std::vector<FlatArg> flat = FlattenArgs(args...);
    CheckArgnums(indices, flat.size());
    CheckSlotTypes<Slots, std::decay_t<decltype(args)>...>(indices, name);
    const std::vector<Array> diff = DiffLeaves(flat, indices, name);
    tree::TreeDef out_def;
    ArraysFn fn = [&](absl::Span<const Array> leaves) {
      return CallFlat<F, std::decay_t<decltype(args)>...>(f, Substitute(flat, indices, leaves), &out_def);
    };
    const JacobianBlocks jac = kForward ? JacfwdFlat(fn, diff) : JacrevFlat(fn, diff);
    tree::TreeDef in_def;
    if constexpr (Selection<Which>::kTuple) {
      std::vector<tree::TreeDef> defs;
      for (int i : indices) defs.push_back(flat[static_cast<size_t>(i)].def);
      in_def = tree::TreeDef::Tuple(defs);
    } else {
      in_def = flat[static_cast<size_t>(indices[0])].def;
    }
    // The output's structure (its values are not needed), each leaf then replaced by its block.
    const R out_structure =
        tree::unflatten<R>(out_def, std::vector<Array>(out_def.num_leaves(), Array::Scalar(0.0, float32)));
    size_t k = 0;
    auto block = [&](const Array&) { return tree::unflatten<In>(in_def, jac[k++]); };
    return jacobian_internal::ReplaceLeaves<In>(out_structure, block);
  };
}

}  // namespace api_internal

// jacfwd(f)(args...): the Jacobian of f with respect to argument 0, by forward mode (one jvp
// per input element, batched with vmap). For f: f32[n] -> f32[m], an f32[m, n] array; for
// pytrees, a tree of trees (see Jacobian above and transforms/jacobian_tree.h).
template <typename F>
auto jacfwd(F f) {
  return api_internal::Jacobian<true>(std::move(f), api_internal::FirstArg{});
}
// jacfwd(f, argnums): with respect to the selected arguments (an int, jx::argnums{...} or
// jx::argnums_tuple{...}, as grad); a tuple selection gives a std::tuple per output leaf.
template <typename F, api_internal::ArgnumsSpec A>
auto jacfwd(F f, A nums) {
  return api_internal::Jacobian<true>(std::move(f), api_internal::ToSelection(nums));
}
template <int I, int... Rest, typename F>
auto jacfwd(F f) {
  return api_internal::Jacobian<true>(std::move(f), api_internal::StaticArgnums<I, Rest...>{});
}

// jacrev(f, [argnums])(args...): the same Jacobian by reverse mode (one vjp per output
// element, batched).
template <typename F>
auto jacrev(F f) {
  return api_internal::Jacobian<false>(std::move(f), api_internal::FirstArg{});
}
template <typename F, api_internal::ArgnumsSpec A>
auto jacrev(F f, A nums) {
  return api_internal::Jacobian<false>(std::move(f), api_internal::ToSelection(nums));
}
template <int I, int... Rest, typename F>
auto jacrev(F f) {
  return api_internal::Jacobian<false>(std::move(f), api_internal::StaticArgnums<I, Rest...>{});
}

// jacobian(f, [argnums]): jax.jacobian, which is jacrev.
template <typename F>
auto jacobian(F f) {
  return jacrev(std::move(f));
}
template <typename F, api_internal::ArgnumsSpec A>
auto jacobian(F f, A nums) {
  return jacrev(std::move(f), nums);
}

// hessian(f, [argnums])(args...): jacfwd(jacrev(f, argnums), argnums). f32[n] -> f32[] gives
// f32[n, n]; for a dict input, H[out][a][b] as in the jax.hessian docstring.
template <typename F>
auto hessian(F f) {
  return jacfwd(jacrev(std::move(f)));
}
template <typename F, api_internal::ArgnumsSpec A>
auto hessian(F f, A nums) {
  return jacfwd(jacrev(std::move(f), nums), nums);
}
template <int I, int... Rest, typename F>
auto hessian(F f) {
  return jacfwd<I, Rest...>(jacrev<I, Rest...>(std::move(f)));
}

// make_jaxpr(f)(args...) -> the ClosedJaxpr of f traced on the arguments' types (shapes, dtypes,
// weak types and, for sharded arrays, their mesh axes). As jit does, arguments sharded over a
// mesh put it in context while f traces (unless a mesh is in context already), so
// explicit-sharding type rules see its axis sizes.
template <typename F>
auto make_jaxpr(F f) {
  return [f](const auto&... args) mutable {
    const std::vector<api_internal::FlatArg> flat = api_internal::FlattenArgs(args...);
    std::vector<ShapedArray> avals;
    std::vector<Array> leaves;
    std::vector<int> all;
    for (size_t i = 0; i < flat.size(); ++i) {
      all.push_back(static_cast<int>(i));
      // The whole type: a sharded argument's spec shows in the jaxpr (a:f32[8@x,4]).
      for (const Array& l : flat[i].leaves) {
        avals.push_back(l.aval());
        leaves.push_back(l);
      }
    }
    std::optional<ScopedContextMeshAxes> arguments_mesh;
    if (ContextMeshAxes() == nullptr) {
      if (std::optional<MeshAxisSizes> axes = MeshAxesOfArguments(leaves)) arguments_mesh.emplace(*std::move(axes));
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
