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
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>

#include "jx/core/errors.h"
#include "jx/core/pytree.h"
#include "jx/core/registry.h"
#include "jx/transforms/ad.h"
#include "jx/transforms/builtin_rules.h"

namespace jx {

// (primals, tangents) -> (primal outputs, tangent outputs), over flat leaves.
using FlatJvpFn = std::function<std::pair<Arrays, Arrays>(absl::Span<const Array>, absl::Span<const Array>)>;
// primals -> (outputs, residuals), over flat leaves.
using FlatFwdFn = std::function<std::pair<Arrays, Arrays>(absl::Span<const Array>)>;
// (residuals, output cotangents) -> one cotangent per input leaf.
using FlatBwdFn = std::function<Arrays(absl::Span<const Array>, absl::Span<const Array>)>;

Arrays CustomJvpCall(const ArraysFn& f, FlatJvpFn jvp, absl::Span<const Array> args);
Arrays CustomVjpCall(const ArraysFn& f, FlatFwdFn fwd, FlatBwdFn bwd, absl::Span<const Array> args);

// Registers custom_jvp_call, custom_vjp_call and custom_lin (called by lax::RegisterAll).
void RegisterCustomDerivatives(Registry& r);

namespace custom_internal {

template <typename Tuple, typename R>
std::pair<Arrays, Arrays> FlattenPair(const R& a, const R& b, std::string_view what) {
  auto [la, da] = tree::flatten(a);
  auto [lb, db] = tree::flatten(b);
  if (!(da == db)) throw TypeError(StrCat(what, ": the two outputs have different structures: ", tree::FirstDifference(da, db)));
  return {Arrays(la.begin(), la.end()), Arrays(lb.begin(), lb.end())};
}

}  // namespace custom_internal

// custom_jvp(f, rule)(args...): f(args...), differentiated in forward mode (and so in reverse
// mode) by rule(std::tuple{primals...}, std::tuple{tangents...}) -> std::pair{out, tangent_out}.
template <typename F, typename Rule>
auto custom_jvp(F f, Rule rule) {
  return [f, rule](const auto&... args) {
    using Tuple = std::tuple<std::decay_t<decltype(args)>...>;
    using R = std::decay_t<std::invoke_result_t<F&, decltype(args)...>>;
    lax::RegisterAll();
    auto [leaves, def] = tree::flatten(Tuple{args...});
    auto out_def = std::make_shared<tree::TreeDef>();
    ArraysFn flat_f = [f, def = def, out_def](absl::Span<const Array> l) mutable {
      auto [out, d] = tree::flatten(std::apply(f, tree::unflatten<Tuple>(def, l)));
      *out_def = d;
      return Arrays(out.begin(), out.end());
    };
    FlatJvpFn flat_jvp = [rule, def = def](absl::Span<const Array> p, absl::Span<const Array> t) mutable {
      auto [out, tangent] = rule(tree::unflatten<Tuple>(def, p), tree::unflatten<Tuple>(def, t));
      return custom_internal::FlattenPair<Tuple, R>(R(out), R(tangent), "custom_jvp rule");
    };
    Arrays outs = CustomJvpCall(flat_f, std::move(flat_jvp), leaves);
    return tree::unflatten<R>(*out_def, outs);
  };
}

// custom_vjp(f, fwd, bwd)(args...): f(args...), differentiated in reverse mode by
// fwd(args...) -> std::pair{out, residuals} and bwd(residuals, ct) -> std::tuple{ct per arg}.
// Forward mode (jvp) through it is an error, as in JAX.
template <typename F, typename Fwd, typename Bwd>
auto custom_vjp(F f, Fwd fwd, Bwd bwd) {
  return [f, fwd, bwd](const auto&... args) {
    using Tuple = std::tuple<std::decay_t<decltype(args)>...>;
    using R = std::decay_t<std::invoke_result_t<F&, decltype(args)...>>;
    using FwdOut = std::decay_t<std::invoke_result_t<Fwd&, decltype(args)...>>;
    using Res = std::decay_t<typename FwdOut::second_type>;
    lax::RegisterAll();
    auto [leaves, def] = tree::flatten(Tuple{args...});
    auto out_def = std::make_shared<tree::TreeDef>();
    auto res_def = std::make_shared<tree::TreeDef>();
    ArraysFn flat_f = [f, def = def, out_def](absl::Span<const Array> l) mutable {
      auto [out, d] = tree::flatten(std::apply(f, tree::unflatten<Tuple>(def, l)));
      *out_def = d;
      return Arrays(out.begin(), out.end());
    };
    FlatFwdFn flat_fwd = [fwd, def = def, res_def](absl::Span<const Array> l) mutable {
      FwdOut r = std::apply(fwd, tree::unflatten<Tuple>(def, l));
      auto [out, od] = tree::flatten(R(r.first));
      auto [res, rd] = tree::flatten(r.second);
      *res_def = rd;
      return std::pair{Arrays(out.begin(), out.end()), Arrays(res.begin(), res.end())};
    };
    FlatBwdFn flat_bwd = [bwd, def = def, res_def, out_def](absl::Span<const Array> res, absl::Span<const Array> ct) mutable {
      auto cts = bwd(tree::unflatten<Res>(*res_def, res), tree::unflatten<R>(*out_def, ct));
      auto [l, d] = tree::flatten(Tuple(cts));
      if (!(d == def)) throw TypeError(StrCat("custom_vjp bwd must return one cotangent per argument, shaped like the arguments: ", tree::FirstDifference(def, d)));
      return Arrays(l.begin(), l.end());
    };
    Arrays outs = CustomVjpCall(flat_f, std::move(flat_fwd), std::move(flat_bwd), leaves);
    return tree::unflatten<R>(*out_def, outs);
  };
}

}  // namespace jx
