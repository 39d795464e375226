// lax::reduce and lax::reduce_window with any reducer, as JAX's lax.reduce(operands,
// init_values, computation, dimensions) and lax.reduce_window(operand, init_value,
// computation, window_dimensions, window_strides, padding, ...): operands and init values are
// matching pytrees, computation(a, b) -> c combines two such pytrees of scalars.
//
// As JAX, a computation that is one add/mul/max/min/and/or with its identity as the init value
// binds that monoid's primitive (reduce_sum, reduce_max, reduce_window_min, ...). Any other
// computation must be associative and commutative with init_values its identity (XLA's
// contract); lax::reduce then binds ONE `reduce` equation carrying the computation as a body
// jaxpr over scalars, as JAX's reduce_p:
//   d:f32[3] e:i32[3] = reduce[computation=<reducer> dimensions=(1,) jaxpr={ lambda ; ... }] a b c 0:i32[]
// It lowers to one HLO reduce whose to_apply is that jaxpr; eager mode evaluates it as a tree
// (log2(n) rounds, each one vmapped call of the computation), which is also what its jvp
// differentiates (JAX's _reduce_jvp; non-zero tangents of the init values raise as JAX's).
// vmap moves the mapped axis to the front and binds it again (JAX's _reduce_batch_rule).
// reduce_window with a generic computation is evaluated as window taps (slices combined by
// vmapped calls of the computation), native under jit.
//
//   // lax.reduce(x, -jnp.inf, lax.max, (0,))  -> reduce_max
//   Array m = lax::reduce(x, Array(-INFINITY), [](Array a, Array b) { return lax::max(a, b); }, {0});
//   // argmax over a (value, index) pair: a generic reducer
//   auto [v, i] = lax::reduce(std::pair{x, idx}, std::pair{Array(-INFINITY), Array(0)}, pick_max, {0});
//   // min pooling with a C++ reducer and JAX's padding string
//   Array p = lax::reduce_window(x, Array(INFINITY), min_fn, {1, 2, 2, 1}, {1, 2, 2, 1}, "SAME");
#pragma once

#include <functional>
#include <string_view>
#include <type_traits>
#include <vector>

#include "jx/core/errors.h"
#include "jx/core/pytree.h"
#include "jx/lax/window_ops.h"
#include "jx/transforms/ad.h"

namespace jx::lax {

// (a..., b...) -> c...: the computation over flat scalar leaves (as many as the operands).
using ReducerFn = std::function<Arrays(absl::Span<const Array>, absl::Span<const Array>)>;

Arrays reduce_flat(const ReducerFn& computation, absl::Span<const Array> operands, absl::Span<const Array> init_values,
                   const std::vector<int64_t>& dimensions);
Arrays reduce_window_flat(const ReducerFn& computation, absl::Span<const Array> operands,
                          absl::Span<const Array> init_values, const std::vector<int64_t>& window_dimensions,
                          const std::vector<int64_t>& window_strides, const WindowPaddingLike& padding,
                          const std::vector<int64_t>& base_dilation = {},
                          const std::vector<int64_t>& window_dilation = {});

namespace reduce_internal {

// computation over the flat leaves of two pytrees shaped like `def`.
template <typename T, typename F>
ReducerFn FlatReducer(F& computation, const tree::TreeDef& def) {
  return [&computation, &def](absl::Span<const Array> a, absl::Span<const Array> b) {
    auto [out, d] = tree::flatten(computation(tree::unflatten<T>(def, a), tree::unflatten<T>(def, b)));
    if (!(d == def)) {
      throw jx::TypeError(StrCat("reduce: computation must return the structure of the operands: ",
                                 tree::FirstDifference(def, d)));
    }
    return Arrays(out.begin(), out.end());
  };
}

template <typename T>
Arrays InitLeaves(const T& init_values, const tree::TreeDef& def) {
  auto [leaves, d] = tree::flatten(init_values);
  if (!(d == def)) {
    throw jx::TypeError(StrCat("reduce: init_values must have the structure of the operands: ",
                               tree::FirstDifference(def, d)));
  }
  return Arrays(leaves.begin(), leaves.end());
}

}  // namespace reduce_internal

// reduce(operands, init_values, computation, dimensions): operands reduced over dimensions.
template <typename T, typename I, typename F>
T reduce(const T& operands, const I& init_values, F computation, const std::vector<int64_t>& dimensions) {
  auto [leaves, def] = tree::flatten(operands);
  const Arrays init = reduce_internal::InitLeaves(T(init_values), def);
  const Arrays out = reduce_flat(reduce_internal::FlatReducer<T>(computation, def), leaves, init, dimensions);
  return tree::unflatten<T>(def, out);
}

// reduce_window(operands, init_values, computation, window_dimensions, window_strides,
// padding, base_dilation, window_dilation): padding and base-dilation holes hold init_values.
template <typename T, typename I, typename F>
  requires(!std::is_same_v<std::decay_t<I>, WindowReduction>)
T reduce_window(const T& operands, const I& init_values, F computation, const std::vector<int64_t>& window_dimensions,
                const std::vector<int64_t>& window_strides, const WindowPaddingLike& padding,
                const std::vector<int64_t>& base_dilation = {}, const std::vector<int64_t>& window_dilation = {}) {
  auto [leaves, def] = tree::flatten(operands);
  const Arrays init = reduce_internal::InitLeaves(T(init_values), def);
  const Arrays out = reduce_window_flat(reduce_internal::FlatReducer<T>(computation, def), leaves, init,
                                        window_dimensions, window_strides, padding, base_dilation, window_dilation);
  return tree::unflatten<T>(def, out);
}

}  // namespace jx::lax
