// jx::random's closed-form samplers (laplace, logistic, cauchy) and poisson, following
// jax/_src/random.py operation by operation so values match JAX.
#include <cmath>
#include <limits>

#include "jx/core/errors.h"
#include "jx/lax/binary_ops.h"
#include "jx/lax/control_flow.h"
#include "jx/lax/convert_ops.h"
#include "jx/lax/unary_ops.h"
#include "jx/lax/numpy/creation.h"
#include "jx/lax/numpy/dtype_info.h"
#include "jx/lax/numpy/math.h"
#include "jx/lax/numpy/reductions.h"
#include "jx/lax/random/random.h"
#include "jx/lax/random/random_internal.h"

namespace jx::random {
namespace {

namespace jnp = ::jx::numpy;
using internal::CheckFloat;
using internal::CheckKey;
using jnp::internal::ScalarOf;

}  // namespace

Array laplace(const Array& key, const Shape& shape, DType dtype) {
  CheckKey("laplace", key);
  CheckFloat("laplace", dtype);
  Array u = uniform(key, shape, dtype, internal::Finfo(dtype).neg_one_up, 1.0);
  return lax::mul(lax::sign(u), lax::log1p(lax::neg(lax::abs(u))));
}

Array logistic(const Array& key, const Shape& shape, DType dtype) {
  CheckKey("logistic", key);
  CheckFloat("logistic", dtype);
  Array x = uniform(key, shape, dtype, internal::Finfo(dtype).tiny, 1.0);
  return lax::sub(lax::log(x), lax::log1p(lax::neg(x)));
}

Array cauchy(const Array& key, const Shape& shape, DType dtype) {
  CheckKey("cauchy", key);
  CheckFloat("cauchy", dtype);
  Array u = uniform(key, shape, dtype, internal::Finfo(dtype).eps, 1.0);
  Array centered = lax::sub(u, jnp::full(shape, 0.5, dtype));
  return lax::tan(lax::mul(jnp::full(shape, M_PI, dtype), centered));
}

namespace {

// Knuth: count uniforms until their product drops below exp(-lam); all lanes step together
// while any is unfinished.
Array PoissonKnuth(const Array& key, const Array& lam, DType dtype, int64_t max_iters) {
  const Shape& shape = lam.shape();
  using Carry = std::tuple<Array, Array, Array, Array>;  // i, k, key, log_prod
  Array neg_lam = lax::neg(lam);
  Carry init{ScalarOf(int64_t{0}, int32), jnp::zeros(shape, dtype), key, jnp::zeros(shape, float32)};
  Carry out = lax::while_loop(
      [&](const Carry& c) {
        return jnp::logical_and(jnp::any(lax::gt(std::get<3>(c), neg_lam)),
                                lax::lt(std::get<0>(c), ScalarOf(max_iters, int32)));
      },
      [&](const Carry& c) {
        auto [i, k, rng, log_prod] = c;
        auto [next, subkey] = split(rng);
        k = lax::select(lax::gt(log_prod, neg_lam), lax::add(k, jnp::ones(shape, dtype)), k);
        Array u = uniform(subkey, shape, float32);
        return Carry{lax::add(i, ScalarOf(int64_t{1}, int32)), k, Array(next), lax::add(log_prod, lax::log(u))};
      },
      init);
  return lax::sub(std::get<1>(out), jnp::ones(shape, dtype));
}

// Hormann's transformed rejection (PTRS) for large lam.
Array PoissonRejection(const Array& key, const Array& lam, DType dtype, int64_t max_iters) {
  const Shape& shape = lam.shape();
  const DType f = lam.dtype();
  auto c = [&](double v) { return jnp::full(shape, v, f); };
  Array log_lam = lax::log(lam);
  Array b = lax::add(c(0.931), lax::mul(c(2.53), lax::sqrt(lam)));
  Array a = lax::add(c(-0.059), lax::mul(c(0.02483), b));
  Array inv_alpha = lax::add(c(1.1239), lax::div(c(1.1328), lax::sub(b, c(3.4))));
  Array v_r = lax::sub(c(0.9277), lax::div(c(3.6224), lax::sub(b, c(2))));
  using Carry = std::tuple<Array, Array, Array, Array>;  // i, k_out, accepted, key
  Carry init{ScalarOf(int64_t{0}, int32), c(-1), jnp::zeros(shape, bool_), key};
  Carry out = lax::while_loop(
      [&](const Carry& s) {
        return jnp::logical_and(jnp::any(jnp::logical_not(std::get<2>(s))),
                                lax::lt(std::get<0>(s), ScalarOf(max_iters, int32)));
      },
      [&](const Carry& s) {
        auto [i, k_out, accepted, rng] = s;
        Array keys = split(rng, 3);
        Array u = lax::sub(uniform(internal::KeyAt(keys, 1), shape, f), c(0.5));
        Array v = uniform(internal::KeyAt(keys, 2), shape, f);
        Array u_shifted = lax::sub(c(0.5), lax::abs(u));
        Array k = lax::floor(lax::add(
            lax::add(lax::mul(lax::add(lax::div(lax::mul(c(2), a), u_shifted), b), u), lam), c(0.43)));
        Array s_val = lax::log(lax::div(lax::mul(v, inv_alpha), lax::add(lax::div(a, lax::mul(u_shifted, u_shifted)), b)));
        Array t = lax::sub(lax::add(lax::neg(lam), lax::mul(k, log_lam)), lax::lgamma(lax::add(k, c(1))));
        Array accept1 = jnp::logical_and(lax::ge(u_shifted, c(0.07)), lax::le(v, v_r));
        Array reject = jnp::logical_or(lax::lt(k, c(0)),
                                       jnp::logical_and(lax::lt(u_shifted, c(0.013)), lax::gt(v, u_shifted)));
        Array accept2 = lax::le(s_val, t);
        Array accept = jnp::logical_or(accept1, jnp::logical_and(jnp::logical_not(reject), accept2));
        return Carry{lax::add(i, ScalarOf(int64_t{1}, int32)), lax::select(accept, k, k_out), jnp::logical_or(accepted, accept),
                     internal::KeyAt(keys, 0)};
      },
      init);
  return lax::convert_element_type(std::get<1>(out), dtype);
}

}  // namespace

Array poisson(const Array& key, const numpy::ArrayLike& lam_like, std::optional<Shape> shape, DType dtype) {
  CheckKey("poisson", key);
  if (!IsInteger(dtype)) ThrowOpError<ValueError>("poisson", "dtype argument must be an integer dtype, got ", dtype_name(dtype));
  Array lam0 = lam_like.is_array() ? lam_like.array() : lam_like.as(float32, false);
  const Shape s = shape.value_or(lam0.shape());
  internal::CheckShape("poisson", s, lam0.shape());
  Array lam = jnp::broadcast_to(lax::convert_element_type(lam0, float32), s);
  // Knuth below 10 (and for NaN), rejection above; each branch sees a harmless lam elsewhere.
  Array use_knuth = jnp::logical_or(jnp::isnan(lam), lax::lt(lam, jnp::full(s, 10.0, float32)));
  Array lam_knuth = lax::select(use_knuth, lam, jnp::zeros(s, float32));
  Array lam_rejection = lax::select(use_knuth, jnp::full(s, 1e5, float32), lam);
  // JAX's (insanely conservative) iteration cap: the dtype's max, in the int32 loop counter.
  const int64_t max_iters = std::min<int64_t>(static_cast<int64_t>(jnp::iinfo(dtype).max), 2147483647);
  Array result = lax::select(use_knuth, PoissonKnuth(key, lam_knuth, dtype, max_iters),
                             PoissonRejection(key, lam_rejection, dtype, max_iters));
  return lax::select(lax::eq(lam, jnp::zeros(s, float32)), jnp::zeros(s, dtype), result);
}

}  // namespace jx::random
