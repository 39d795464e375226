// Control flow that stays inside the IR, as JAX's lax: cond, switch_, while_loop, fori_loop
// and scan are higher-order primitives carrying sub-jaxprs, so every transformation sees
// through them. Operands, carries and xs are pytrees.
//
//   Array y = lax::cond(x > 0, [](Array v) { return v * 2; }, [](Array v) { return -v; }, x);
//   Array n = lax::while_loop([](Array i) { return i < 10; }, [](Array i) { return i + 1; }, Array(0));
//   Array s = lax::fori_loop(0, 5, [](Array i, Array acc) { return acc + i; }, Array(0));
//   auto [h, hs] = lax::scan([&](Array h, Array x) { auto h2 = jnp::tanh(h * w + x); return std::pair{h2, h2}; },
//                            h0, xs);
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "jx/core/errors.h"
#include "jx/core/pytree.h"
#include "jx/lax/binary_ops.h"
#include "jx/transforms/ad.h"

namespace jx::lax {

// ----- flat cores (leaves in, leaves out) -----

// Runs branches[clamp(index, 0, n - 1)] on operands; index is an integer scalar.
// branch_names name the branches in errors ("branch i" when empty).
Arrays cond_flat(const Array& index, const std::vector<ArraysFn>& branches, absl::Span<const Array> operands,
                 const std::vector<std::string>& branch_names = {});
// cond_fn(carry) -> bool scalar; body_fn(carry) -> carry.
Arrays while_loop_flat(const ArraysFn& cond_fn, const ArraysFn& body_fn, absl::Span<const Array> init);
// f(carry..., x...) -> (carry..., y...); xs are sliced along axis 0 (length from xs, or
// `length` when there are none). Returns (carry..., ys...). unroll (>= 1) is recorded in
// the scan equation (JAX's param).
Arrays scan_flat(const ArraysFn& f, absl::Span<const Array> init, absl::Span<const Array> xs,
                 std::optional<int64_t> length, bool reverse, int64_t unroll = 1);
// cond's branch index for a scalar predicate: int32 1 where pred is nonzero, else 0.
Array cond_index_from_predicate(const Array& pred);
// switch_'s branch index: index converted to int32 and clamped to [0, num_branches - 1].
Array switch_index(const Array& index, size_t num_branches);

namespace control_flow_internal {

// f over a tuple of pytrees as a function of flat leaves; the result's structure lands in
// *out_def.
template <typename Tuple, typename F>
ArraysFn FlatFn(F f, tree::TreeDef in_def, std::shared_ptr<tree::TreeDef> out_def) {
  return [f = std::move(f), in_def = std::move(in_def), out_def](absl::Span<const Array> leaves) mutable {
    Tuple args = tree::unflatten<Tuple>(in_def, leaves);
    auto result = std::apply(f, args);
    auto [out, def] = tree::flatten(result);
    *out_def = std::move(def);
    return Arrays(out.begin(), out.end());
  };
}

void CheckSameStructure(const tree::TreeDef& a, const tree::TreeDef& b, std::string_view op, std::string_view what);

template <typename R, typename... Ops, typename Branches>
R SwitchImpl(const Array& index, Branches& branches, const std::vector<std::string>& names, const Ops&... operands) {
  using Tuple = std::tuple<Ops...>;
  auto [leaves, def] = tree::flatten(Tuple{operands...});
  std::vector<std::shared_ptr<tree::TreeDef>> out_defs;
  std::vector<ArraysFn> fns;
  for (auto& b : branches) {
    out_defs.push_back(std::make_shared<tree::TreeDef>());
    fns.push_back(FlatFn<Tuple>(b, def, out_defs.back()));
  }
  Arrays outs = cond_flat(index, fns, leaves, names);
  for (size_t i = 1; i < out_defs.size(); ++i) CheckSameStructure(*out_defs[0], *out_defs[i], "cond", "branch outputs");
  return tree::unflatten<R>(*out_defs[0], outs);
}

}  // namespace control_flow_internal

// cond(pred, true_fn, false_fn, operands...): true_fn(operands...) if pred else
// false_fn(operands...). Both branches are traced; they must return the same structure,
// shapes and dtypes.
template <typename TrueFn, typename FalseFn, typename... Ops>
auto cond(const Array& pred, TrueFn true_fn, FalseFn false_fn, const Ops&... operands) {
  using R = std::decay_t<std::invoke_result_t<TrueFn&, const Ops&...>>;
  std::vector<std::function<R(const Ops&...)>> branches = {std::move(false_fn), std::move(true_fn)};
  return control_flow_internal::SwitchImpl<R>(cond_index_from_predicate(pred), branches, {"false_fn", "true_fn"},
                                              operands...);
}

// switch_(index, branches, operands...): branches[clamp(index, 0, n - 1)](operands...).
template <typename F, typename... Ops>
auto switch_(const Array& index, std::vector<F> branches, const Ops&... operands) {
  using R = std::decay_t<std::invoke_result_t<F&, const Ops&...>>;
  if (branches.empty()) throw ValueError("switch_ requires at least one branch");
  return control_flow_internal::SwitchImpl<R>(switch_index(index, branches.size()), branches, {}, operands...);
}

// while_loop(cond_fn, body_fn, init): while cond_fn(carry): carry = body_fn(carry).
// Forward mode and vmap only: reverse mode needs a static trip count (scan, fori_loop).
template <typename CondFn, typename BodyFn, typename T>
T while_loop(CondFn cond_fn, BodyFn body_fn, const T& init) {
  using Tuple = std::tuple<T>;
  auto [leaves, def] = tree::flatten(Tuple{init});
  auto cond_def = std::make_shared<tree::TreeDef>(), body_def = std::make_shared<tree::TreeDef>();
  Arrays outs = while_loop_flat(control_flow_internal::FlatFn<Tuple>(std::move(cond_fn), def, cond_def),
                                control_flow_internal::FlatFn<Tuple>(
                                    [body_fn = std::move(body_fn)](const T& c) mutable { return std::tuple<T>{body_fn(c)}; },
                                    def, body_def),
                                leaves);
  control_flow_internal::CheckSameStructure(def, *body_def, "while_loop", "body output and carry");
  return std::get<0>(tree::unflatten<Tuple>(def, outs));
}

// jax.lax.scan's keyword arguments, named so that a bare value cannot take the wrong slot
// (lax::scan(f, init, xs, 3) does not compile):
//   lax::scan(f, init, xs, {.length = 3, .reverse = true})
struct ScanOptions {
  // The number of iterations; must equal the leading axis of xs when given (JAX's length).
  std::optional<int64_t> length = std::nullopt;
  // Iterate from the end of xs to its start; ys keep xs's order (JAX's reverse).
  bool reverse = false;
  // JAX's unroll (>= 1): iterations per loop step in the compiled loop. A performance hint
  // with no effect on the values; jx's scan primitive runs one iteration per step today.
  int unroll = 1;
};
namespace control_flow_internal {
// Throws ValueError for unroll < 1 (scan's other checks are scan_flat's).
void CheckScanOptions(const ScanOptions& options);
}  // namespace control_flow_internal

// scan(f, init, xs, options): f(carry, x) -> std::pair{carry, y} over the leading axis of
// xs; returns std::pair{final carry, ys stacked along a new leading axis}.
template <typename F, typename C, typename X>
auto scan(F f, const C& init, const X& xs, ScanOptions options = {}) {
  using Result = std::decay_t<std::invoke_result_t<F&, const C&, const X&>>;
  using Y = std::decay_t<typename Result::second_type>;
  auto [init_leaves, init_def] = tree::flatten(init);
  auto [xs_leaves, xs_def] = tree::flatten(xs);
  const size_t num_carry = init_leaves.size();
  auto carry_def = std::make_shared<tree::TreeDef>(), y_def = std::make_shared<tree::TreeDef>();
  // Structured bindings are captured through init-captures: clang before 16 cannot capture them.
  ArraysFn body = [&, &init_def = init_def, &xs_def = xs_def, f = std::move(f)](absl::Span<const Array> leaves) mutable {
    C carry = tree::unflatten<C>(init_def, leaves.subspan(0, num_carry));
    X x = tree::unflatten<X>(xs_def, leaves.subspan(num_carry));
    Result r = f(carry, x);
    auto [c_out, c_def] = tree::flatten(r.first);
    auto [y_out, y_def_now] = tree::flatten(r.second);
    *carry_def = std::move(c_def);
    *y_def = std::move(y_def_now);
    Arrays out(c_out.begin(), c_out.end());
    out.insert(out.end(), y_out.begin(), y_out.end());
    return out;
  };
  control_flow_internal::CheckScanOptions(options);
  Arrays outs = scan_flat(body, init_leaves, xs_leaves, options.length, options.reverse, options.unroll);
  control_flow_internal::CheckSameStructure(init_def, *carry_def, "scan", "carry output and init");
  absl::Span<const Array> all(outs);
  return std::pair<C, Y>{tree::unflatten<C>(init_def, all.subspan(0, num_carry)),
                         tree::unflatten<Y>(*y_def, all.subspan(num_carry))};
}

// fori_loop(lo, hi, body, init): for i in [lo, hi): carry = body(i, carry), i an int32
// scalar Array. With static bounds it is a scan (so reverse mode works); with traced
// bounds, a while_loop.
template <typename B, typename T>
T fori_loop(int64_t lo, int64_t hi, B body, const T& init) {
  const int64_t n = std::max<int64_t>(0, hi - lo);
  auto [leaves, def] = tree::flatten(std::pair<Array, T>{Array::Scalar(static_cast<double>(lo), int32), init});
  auto carry_def = std::make_shared<tree::TreeDef>();
  ArraysFn flat_body = [&, &def = def](absl::Span<const Array> l) {  // init-capture: see scan
    auto carry = tree::unflatten<std::pair<Array, T>>(def, l);
    auto [out, d] = tree::flatten(std::pair<Array, T>{add(carry.first, Array(1)), body(carry.first, carry.second)});
    *carry_def = d;
    return Arrays(out.begin(), out.end());
  };
  Arrays outs = scan_flat(flat_body, leaves, {}, n, false);
  control_flow_internal::CheckSameStructure(def, *carry_def, "fori_loop", "body output and carry");
  return tree::unflatten<std::pair<Array, T>>(def, outs).second;
}

template <typename B, typename T>
T fori_loop(const Array& lo, const Array& hi, B body, const T& init) {
  if (lo.is_concrete() && hi.is_concrete()) return fori_loop(lo.item<int64_t>(), hi.item<int64_t>(), std::move(body), init);
  using Carry = std::tuple<Array, Array, T>;
  Carry start{lo, hi, init};
  Carry done = while_loop([](const Carry& c) { return lt(std::get<0>(c), std::get<1>(c)); },
                          [&](const Carry& c) {
                            return Carry{add(std::get<0>(c), Array(1)), std::get<1>(c), body(std::get<0>(c), std::get<2>(c))};
                          },
                          start);
  return std::get<2>(done);
}

}  // namespace jx::lax
