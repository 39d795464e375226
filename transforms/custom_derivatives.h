// custom_jvp and custom_vjp: user-supplied derivative rules, as JAX's. The function and its
// rules are staged as one primitive (custom_jvp_call / custom_vjp_call), so the rules survive
// tracing, vmap and nesting; other transformations see the function's own jaxpr.
//
//   // log(1 + exp(x)) with a stable derivative:
//   auto softplus = jx::custom_jvp(
//       [](const Array& x) { return jnp::log1p(jnp::exp(x)); },
//       [](const std::tuple<Array>& p, const std::tuple<Array>& t) {
//         auto [x] = p; auto [tx] = t;
//         return std::pair{jnp::log1p(jnp::exp(x)), tx * lax::logistic(x)};
//       });
//   // clip the gradient without changing the value:
//   auto clip = jx::custom_vjp(
//       [](const Array& x) { return x; },
//       [](const Array& x) { return std::pair{x, std::tuple<>{}}; },                // fwd: out, residuals
//       [](const std::tuple<>&, const Array& ct) { return std::tuple{jnp::clip(ct, -1, 1)}; });  // bwd
//   // one jvp per argument, summed (JAX's f.defjvps(lambda x_dot, ans, x, y: ..., ...)):
//   auto f = jx::custom_jvp([](const Array& x, const Array& y) { return jnp::sin(x) * y; })
//                .defjvps([](const Array& x_dot, const Array&, const Array& x, const Array& y) { return jnp::cos(x) * x_dot * y; },
//                         [](const Array& y_dot, const Array&, const Array& x, const Array&) { return jnp::sin(x) * y_dot; });
//   // a non-differentiable argument (JAX's nondiff_argnums=(0,)), passed first to the rules:
//   auto app = jx::custom_vjp(f, fwd, bwd, jx::nondiff_argnums<0>);
// A custom_vjp bwd may return jx::none (or an empty std::optional) for an argument: no
// cotangent, zeros, as JAX's None.
#pragma once

#include <array>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>

#include "jx/core/errors.h"
#include "jx/core/none.h"
#include "jx/core/pytree.h"
#include "jx/core/registry.h"
#include "jx/transforms/ad.h"
#include "jx/transforms/builtin_rules.h"

namespace jx {

// (primals, tangents) -> (primal outputs, tangent outputs), over flat leaves.
using FlatJvpFn = std::function<std::pair<Arrays, Arrays>(absl::Span<const Array>, absl::Span<const Array>)>;
// primals -> (outputs, residuals), over flat leaves.
using FlatFwdFn = std::function<std::pair<Arrays, Arrays>(absl::Span<const Array>)>;
// (residuals, output cotangents) -> one cotangent per input leaf; an undefined Array is no
// cotangent (zeros).
using FlatBwdFn = std::function<Arrays(absl::Span<const Array>, absl::Span<const Array>)>;

Arrays CustomJvpCall(const ArraysFn& f, FlatJvpFn jvp, absl::Span<const Array> args);
Arrays CustomVjpCall(const ArraysFn& f, FlatFwdFn fwd, FlatBwdFn bwd, absl::Span<const Array> args);

// Registers custom_jvp_call, custom_vjp_call and custom_lin (called by lax::RegisterAll).
void RegisterCustomDerivatives(Registry& r);

// Arguments of custom_jvp / custom_vjp that are not differentiated (JAX's nondiff_argnums):
// any C++ values (a function, a size, a config struct) passed to the function as they are and
// to the rules first, before the primals (custom_jvp's rule; custom_vjp's bwd). Indices are
// distinct and ascending:
//   jx::custom_jvp(f, rule, jx::nondiff_argnums<0>)
template <int... I>
struct NondiffArgnums {};
template <int... I>
inline constexpr NondiffArgnums<I...> nondiff_argnums{};

namespace custom_internal {

template <typename Tuple, typename R>
std::pair<Arrays, Arrays> FlattenPair(const R& a, const R& b, std::string_view what) {
  auto [la, da] = tree::flatten(a);
  auto [lb, db] = tree::flatten(b);
  if (!(da == db)) throw TypeError(StrCat(what, ": the two outputs have different structures: ", tree::FirstDifference(da, db)));
  return {Arrays(la.begin(), la.end()), Arrays(lb.begin(), lb.end())};
}

// Splits N arguments into the non-differentiable ones (at I...) and the rest.
template <size_t N, int... I>
struct ArgSplit {
  static constexpr size_t kNondiff = sizeof...(I);
  static_assert(((I >= 0 && static_cast<size_t>(I) < N) && ...), "nondiff_argnums: an index is out of range");
  static constexpr bool Ascending() {
    std::array<int, sizeof...(I) + 1> a{I..., 0};
    for (size_t k = 1; k < sizeof...(I); ++k) {
      if (a[k] <= a[k - 1]) return false;
    }
    return true;
  }
  static_assert(Ascending(), "nondiff_argnums: indices must be distinct and ascending");
  static constexpr bool IsNondiff(size_t i) { return ((static_cast<size_t>(I) == i) || ...); }
  // Positions of the differentiable arguments, then of the others.
  static constexpr std::array<size_t, N - kNondiff> DiffPositions() {
    std::array<size_t, N - kNondiff> out{};
    for (size_t i = 0, k = 0; i < N; ++i) {
      if (!IsNondiff(i)) out[k++] = i;
    }
    return out;
  }
  // Rank of argument i among its group.
  static constexpr size_t Rank(size_t i) {
    size_t r = 0;
    for (size_t j = 0; j < i; ++j) r += IsNondiff(j) == IsNondiff(i);
    return r;
  }
  template <typename Tuple, size_t... K>
  static auto Diff(const Tuple& all, std::index_sequence<K...>) {
    constexpr auto pos = DiffPositions();
    return std::tuple<std::tuple_element_t<pos[K], Tuple>...>{std::get<pos[K]>(all)...};
  }
  template <typename Tuple>
  static auto Diff(const Tuple& all) {
    return Diff(all, std::make_index_sequence<N - kNondiff>{});
  }
  template <typename Tuple>
  static auto Nondiff(const Tuple& all) {
    return std::tuple<std::tuple_element_t<static_cast<size_t>(I), Tuple>...>{std::get<static_cast<size_t>(I)>(all)...};
  }
  // The argument list back in its order, as references into the two groups.
  template <typename NondiffT, typename DiffT, size_t... K>
  static auto Merge(const NondiffT& nondiff, const DiffT& diff, std::index_sequence<K...>) {
    return std::forward_as_tuple(Pick<K>(nondiff, diff)...);
  }
  template <typename NondiffT, typename DiffT>
  static auto Merge(const NondiffT& nondiff, const DiffT& diff) {
    return Merge(nondiff, diff, std::make_index_sequence<N>{});
  }
  template <size_t K, typename NondiffT, typename DiffT>
  static const auto& Pick(const NondiffT& nondiff, const DiffT& diff) {
    if constexpr (IsNondiff(K)) {
      return std::get<Rank(K)>(nondiff);
    } else {
      return std::get<Rank(K)>(diff);
    }
  }
};

template <typename T>
struct IsOptional : std::false_type {};
template <typename T>
struct IsOptional<std::optional<T>> : std::true_type {};

// Appends the leaves of one bwd cotangent for an argument shaped like arg_def: jx::none or
// an empty std::optional appends undefined Arrays (no cotangent, as JAX's None).
template <typename Arg, typename Ct>
void AppendCotangent(const Ct& ct, const tree::TreeDef& arg_def, size_t num_leaves, size_t index, Arrays& out) {
  if constexpr (std::is_same_v<Ct, NoneType>) {
    out.resize(out.size() + num_leaves);
  } else if constexpr (IsOptional<Ct>::value) {
    if (ct) {
      AppendCotangent<Arg>(*ct, arg_def, num_leaves, index, out);
    } else {
      out.resize(out.size() + num_leaves);
    }
  } else {
    auto [l, d] = [&] {
      if constexpr (std::is_constructible_v<Arg, const Ct&>) {
        return tree::flatten(Arg(ct));
      } else {
        return tree::flatten(ct);
      }
    }();
    if (!(d == arg_def)) {
      throw TypeError(StrCat("custom_vjp bwd must return one cotangent per differentiable argument, shaped like "
                             "it (or jx::none): cotangent ", index, ": ", tree::FirstDifference(arg_def, d)));
    }
    out.insert(out.end(), l.begin(), l.end());
  }
}

// The summed tangent of defjvps' per-argument jvps over flat output leaves.
void AccumulateTangent(Arrays& sum, absl::Span<const Array> contribution, size_t arg);
// Zeros shaped like out[k] where sum[k] got no part.
void FillZeroTangents(Arrays& sum, absl::Span<const Array> out);

}  // namespace custom_internal

// custom_jvp(f, rule)(args...): f(args...), differentiated in forward mode (and so in reverse
// mode) by rule(std::tuple{primals...}, std::tuple{tangents...}) -> std::pair{out, tangent_out}.
// With nondiff_argnums, rule(nondiff_args..., primals, tangents) sees only the others in
// primals and tangents.
template <typename F, typename Rule, int... Nd>
auto custom_jvp(F f, Rule rule, NondiffArgnums<Nd...> = {}) {
  return [f, rule](const auto&... args) {
    using All = std::tuple<std::decay_t<decltype(args)>...>;
    using Split = custom_internal::ArgSplit<sizeof...(args), Nd...>;
    using R = std::decay_t<std::invoke_result_t<F&, decltype(args)...>>;
    lax::RegisterAll();
    const All all{args...};
    const auto nondiff = Split::Nondiff(all);
    using Diff = decltype(Split::Diff(all));
    auto [leaves, def] = tree::flatten(Split::Diff(all));
    auto out_def = std::make_shared<tree::TreeDef>();
    ArraysFn flat_f = [f, nondiff, def = def, out_def](absl::Span<const Array> l) mutable {
      const Diff diff = tree::unflatten<Diff>(def, l);
      auto [out, d] = tree::flatten(R(std::apply(f, Split::Merge(nondiff, diff))));
      *out_def = d;
      return Arrays(out.begin(), out.end());
    };
    FlatJvpFn flat_jvp = [rule, nondiff, def = def](absl::Span<const Array> p, absl::Span<const Array> t) mutable {
      const Diff primals = tree::unflatten<Diff>(def, p), tangents = tree::unflatten<Diff>(def, t);
      auto [out, tangent] =
          std::apply([&](const auto&... nd) { return rule(nd..., primals, tangents); }, nondiff);
      return custom_internal::FlattenPair<Diff, R>(R(out), R(tangent), "custom_jvp rule");
    };
    Arrays outs = CustomJvpCall(flat_f, std::move(flat_jvp), leaves);
    return tree::unflatten<R>(*out_def, outs);
  };
}

// JAX's @custom_jvp decorator before its rule: jx::custom_jvp(f) (or
// jx::custom_jvp(f, jx::nondiff_argnums<...>)), then .defjvp(rule) or .defjvps(jvps...),
// each returning the differentiable function.
template <typename F, int... Nd>
class CustomJvp {
 public:
  explicit CustomJvp(F f) : f_(std::move(f)) {}

  // rule as custom_jvp(f, rule)'s.
  template <typename Rule>
  auto defjvp(Rule rule) const {
    return custom_jvp(f_, std::move(rule), NondiffArgnums<Nd...>{});
  }

  // One jvp per argument, jvp_i(tangent_i, primal_out, primals...) -> its part of the tangent
  // output; the parts are summed (JAX's defjvps). jx::none for an argument with no part.
  template <typename... Jvps>
  auto defjvps(Jvps... jvps) const {
    static_assert(sizeof...(Nd) == 0, "defjvps cannot be used with nondiff_argnums (as in JAX): use defjvp");
    auto rule = [f = f_, jvps...](const auto& primals, const auto& tangents) {
      static_assert(std::tuple_size_v<std::decay_t<decltype(primals)>> == sizeof...(Jvps),
                    "defjvps takes one jvp function (or jx::none) per argument");
      using R = std::decay_t<decltype(std::apply(f, primals))>;
      const R out = std::apply(f, primals);
      auto [out_leaves, out_def] = tree::flatten(out);
      Arrays sum(out_leaves.size());
      AddParts(sum, out, primals, tangents, std::index_sequence_for<Jvps...>{}, jvps...);
      custom_internal::FillZeroTangents(sum, out_leaves);
      return std::pair<R, R>{out, tree::unflatten<R>(out_def, sum)};
    };
    return custom_jvp(f_, std::move(rule));
  }

 private:
  template <typename R, typename P, size_t... K, typename... Jvps>
  static void AddParts(Arrays& sum, const R& out, const P& primals, const P& tangents, std::index_sequence<K...>,
                       const Jvps&... jvps) {
    (AddPart<K>(sum, out, primals, tangents, jvps), ...);
  }
  template <size_t K, typename R, typename P, typename Jvp>
  static void AddPart(Arrays& sum, const R& out, const P& primals, const P& tangents, const Jvp& jvp) {
    if constexpr (!std::is_same_v<Jvp, NoneType>) {
      auto part = std::apply([&](const auto&... p) { return jvp(std::get<K>(tangents), out, p...); }, primals);
      auto [leaves, def] = tree::flatten(R(part));
      custom_internal::AccumulateTangent(sum, leaves, K);
    }
  }

  F f_;
};

template <typename F>
auto custom_jvp(F f) {
  return CustomJvp<F>(std::move(f));
}
template <typename F, int... Nd>
auto custom_jvp(F f, NondiffArgnums<Nd...>) {
  return CustomJvp<F, Nd...>(std::move(f));
}

// custom_vjp(f, fwd, bwd)(args...): f(args...), differentiated in reverse mode by
// fwd(args...) -> std::pair{out, residuals} and bwd(residuals, ct) -> std::tuple{ct per arg},
// where a ct may be jx::none or an empty std::optional (zeros, as JAX's None). With
// nondiff_argnums, fwd still takes every argument, bwd(nondiff_args..., residuals, ct) returns
// cotangents for the others only. Forward mode (jvp) through it is an error, as in JAX.
template <typename F, typename Fwd, typename Bwd, int... Nd>
auto custom_vjp(F f, Fwd fwd, Bwd bwd, NondiffArgnums<Nd...> = {}) {
  return [f, fwd, bwd](const auto&... args) {
    using All = std::tuple<std::decay_t<decltype(args)>...>;
    using Split = custom_internal::ArgSplit<sizeof...(args), Nd...>;
    using R = std::decay_t<std::invoke_result_t<F&, decltype(args)...>>;
    using FwdOut = std::decay_t<std::invoke_result_t<Fwd&, decltype(args)...>>;
    using Res = std::decay_t<typename FwdOut::second_type>;
    lax::RegisterAll();
    const All all{args...};
    const auto nondiff = Split::Nondiff(all);
    using Diff = decltype(Split::Diff(all));
    const Diff diff_args = Split::Diff(all);
    auto [leaves, def] = tree::flatten(diff_args);
    // Each differentiable argument's structure, for its cotangent.
    std::vector<tree::TreeDef> arg_defs;
    std::vector<size_t> arg_leaves;
    std::apply(
        [&](const auto&... a) {
          ([&] {
            auto [l, d] = tree::flatten(a);
            arg_defs.push_back(std::move(d));
            arg_leaves.push_back(l.size());
          }(), ...);
        },
        diff_args);
    auto out_def = std::make_shared<tree::TreeDef>();
    auto res_def = std::make_shared<tree::TreeDef>();
    ArraysFn flat_f = [f, nondiff, def = def, out_def](absl::Span<const Array> l) mutable {
      const Diff diff = tree::unflatten<Diff>(def, l);
      auto [out, d] = tree::flatten(R(std::apply(f, Split::Merge(nondiff, diff))));
      *out_def = d;
      return Arrays(out.begin(), out.end());
    };
    FlatFwdFn flat_fwd = [fwd, nondiff, def = def, res_def](absl::Span<const Array> l) mutable {
      const Diff diff = tree::unflatten<Diff>(def, l);
      FwdOut r = std::apply(fwd, Split::Merge(nondiff, diff));
      auto [out, od] = tree::flatten(R(r.first));
      auto [res, rd] = tree::flatten(r.second);
      *res_def = rd;
      return std::pair{Arrays(out.begin(), out.end()), Arrays(res.begin(), res.end())};
    };
    FlatBwdFn flat_bwd = [bwd, nondiff, res_def, out_def, arg_defs, arg_leaves](absl::Span<const Array> res,
                                                                                absl::Span<const Array> ct) mutable {
      const Res residuals = tree::unflatten<Res>(*res_def, res);
      const R cotangent = tree::unflatten<R>(*out_def, ct);
      auto cts = std::apply([&](const auto&... nd) { return bwd(nd..., residuals, cotangent); }, nondiff);
      using Cts = std::decay_t<decltype(cts)>;
      static_assert(std::tuple_size_v<Cts> == std::tuple_size_v<Diff>,
                    "custom_vjp bwd must return a std::tuple with one cotangent per differentiable argument");
      Arrays flat;
      [&]<size_t... K>(std::index_sequence<K...>) {
        (custom_internal::AppendCotangent<std::tuple_element_t<K, Diff>>(std::get<K>(cts), arg_defs[K], arg_leaves[K],
                                                                         K, flat),
         ...);
      }(std::make_index_sequence<std::tuple_size_v<Diff>>{});
      return flat;
    };
    Arrays outs = CustomVjpCall(flat_f, std::move(flat_fwd), std::move(flat_bwd), leaves);
    return tree::unflatten<R>(*out_def, outs);
  };
}

}  // namespace jx
