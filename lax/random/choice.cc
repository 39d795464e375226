// jx::random.choice, following jax/_src/random.py's choice step by step.
#include "jx/core/errors.h"
#include "jx/lax/numpy/creation.h"
#include "jx/lax/numpy/manipulation.h"
#include "jx/lax/numpy/math.h"
#include "jx/lax/numpy/reductions.h"
#include "jx/lax/numpy/searching.h"
#include "jx/lax/random/random.h"
#include "jx/lax/random/random_internal.h"
#include "jx/lax/slicing_ops.h"

namespace jx::random {
namespace {

namespace jnp = ::jx::numpy;

// Draws indices into n_inputs entries (the body of JAX's choice); `arr` is null for the
// integer form.
Array Choice(const Array& key, const Array* arr, int64_t n_inputs, const Shape& shape, bool replace,
             const std::optional<Array>& p, int64_t axis) {
  internal::CheckKey("choice", key);
  const int64_t n_draws = NumElements(shape);
  const DType out_dtype = arr ? arr->dtype() : int32;
  auto out_shape = [&] {
    if (!arr) return shape;
    Shape s = arr->shape();
    s.erase(s.begin() + axis);
    s.insert(s.begin() + axis, shape.begin(), shape.end());
    return s;
  };
  if (n_draws == 0) return jnp::zeros(out_shape(), out_dtype);
  if (n_inputs <= 0) ThrowOpError<ValueError>("choice", "a must be greater than 0 unless no samples are taken");
  if (!replace && n_draws > n_inputs) {
    ThrowOpError<ValueError>("choice", "Cannot take a larger sample (", n_draws,
                             ") than population (", n_inputs, ") when 'replace=False'");
  }
  Array result;
  if (!p) {
    if (replace) {
      Array ind = randint(key, shape, 0, n_inputs);
      result = arr ? jnp::take(*arr, ind, axis) : ind;
    } else {
      Array perm = arr ? permutation(key, *arr, axis) : permutation(key, n_inputs);
      std::vector<int64_t> lo(static_cast<size_t>(perm.ndim()), 0);
      std::vector<int64_t> hi = perm.shape();
      hi[static_cast<size_t>(arr ? axis : 0)] = n_draws;
      result = lax::slice(perm, lo, hi);
    }
  } else {
    Array p_arr = jnp::promote_args_inexact("choice", {*p})[0];
    if (p_arr.shape() != Shape{n_inputs}) {
      ThrowOpError<ValueError>("choice", "p must be None or match the shape of a: p ", p->aval().str(), ", ",
                               n_inputs, " entries to choose from");
    }
    Array ind;
    if (replace) {
      Array p_cuml = jnp::cumsum(p_arr);
      Array total = p_cuml[static_cast<int64_t>(-1)];
      Array r = jnp::multiply(total, jnp::subtract(1.0, uniform(key, shape, p_cuml.dtype())));
      ind = jnp::searchsorted(p_cuml, r);
    } else {
      // Gumbel top-k: the n_draws largest log(p) + Gumbel noise.
      Array g = jnp::subtract(jnp::negative(gumbel(key, {n_inputs}, p_arr.dtype())), jnp::log(p_arr));
      ind = lax::slice(jnp::argsort(g), {0}, {n_draws});
    }
    result = arr ? jnp::take(*arr, ind, axis) : ind;
  }
  return jnp::reshape(result, out_shape());
}

}  // namespace

Array choice(const Array& key, const Array& a, const Shape& shape, bool replace, const std::optional<Array>& p,
             int64_t axis) {
  if (a.ndim() == 0) {
    if (!IsInteger(a.dtype())) ThrowOpError<TypeError>("choice", "a must be an integer or an array of at least one dimension, got ", a.aval().str());
    return Choice(key, nullptr, a.item<int64_t>(), shape, replace, p, 0);
  }
  const int64_t ax = CanonicalizeAxis(axis, a.ndim(), "choice");
  return Choice(key, &a, a.shape()[static_cast<size_t>(ax)], shape, replace, p, ax);
}

Array choice(const Array& key, int64_t n, const Shape& shape, bool replace, const std::optional<Array>& p) {
  return Choice(key, nullptr, n, shape, replace, p, 0);
}

}  // namespace jx::random
