// jx::random.gamma / loggamma / beta / dirichlet, following jax/_src/random.py: one
// Marsaglia-Tsang rejection loop per element (vmapped, as JAX's non-CPU lowering; the values
// equal its lax.map lowering), keys split per element, and the implicit-reparameterization
// derivative in a (JAX's random_gamma_grad) attached with custom_jvp.
#include <cmath>
#include <limits>

#include "jx/core/errors.h"
#include "jx/lax/binary_ops.h"
#include "jx/lax/control_flow.h"
#include "jx/lax/convert_ops.h"
#include "jx/lax/shape_ops.h"
#include "jx/lax/stop_gradient.h"
#include "jx/lax/unary_ops.h"
#include "jx/lax/numpy/creation.h"
#include "jx/lax/numpy/math.h"
#include "jx/lax/numpy/reductions.h"
#include "jx/lax/random/random.h"
#include "jx/lax/random/random_internal.h"
#include "jx/transforms/custom_derivatives.h"
#include "jx/transforms/vmap.h"

namespace jx::random {
namespace {

namespace jnp = ::jx::numpy;
using internal::CheckFloat;
using internal::CheckKey;
using jnp::internal::ScalarOf;

// One Gamma(alpha) sample (alpha, key scalars), JAX's _gamma_one operation by operation.
Array GammaOne(const Array& key, const Array& alpha, bool log_space) {
  const DType dt = alpha.dtype();
  const Array zero = ScalarOf(0.0, dt), one = ScalarOf(1.0, dt), minus_one = ScalarOf(-1.0, dt);
  const Array one_over_two = ScalarOf(0.5, dt), one_over_three = ScalarOf(1.0 / 3.0, dt);
  const Array squeeze_const = ScalarOf(0.0331, dt);
  // alpha < 1: sample Gamma(alpha + 1) and multiply by U^(1/alpha).
  const Array boost_mask = lax::ge(alpha, one);
  const Array alpha_orig = alpha;
  const Array boosted = lax::select(boost_mask, alpha, lax::add(alpha, one));
  const Array d = lax::sub(boosted, one_over_three);
  const Array c = lax::div(one_over_three, lax::sqrt(d));

  using KXVU = std::tuple<Array, Array, Array, Array>;
  auto cond_fn = [&](const KXVU& s) {
    const auto& [k, X, V, U] = s;
    Array squeeze = lax::ge(U, lax::sub(one, lax::mul(squeeze_const, lax::mul(X, X))));
    Array log_test = lax::ge(lax::log(U), lax::add(lax::mul(X, one_over_two),
                                                   lax::mul(d, lax::add(lax::sub(one, V), lax::log(V)))));
    return lax::bitwise_and(squeeze, log_test);
  };
  auto body_fn = [&](const KXVU& s) {
    Array keys = split(std::get<0>(s), 3);
    using KXV = std::tuple<Array, Array, Array>;
    // Draw normals until v = 1 + c x is positive.
    KXV xv = lax::while_loop([&](const KXV& t) { return lax::le(std::get<2>(t), zero); },
                             [&](const KXV& t) {
                               auto [next, subkey] = split(std::get<0>(t));
                               Array x = normal(subkey, {}, dt);
                               return KXV{Array(next), x, lax::add(one, lax::mul(x, c))};
                             },
                             KXV{internal::KeyAt(keys, 1), zero, minus_one});
    const Array& x = std::get<1>(xv);
    const Array& v = std::get<2>(xv);
    return KXVU{internal::KeyAt(keys, 0), lax::mul(x, x), lax::mul(lax::mul(v, v), v),
                uniform(internal::KeyAt(keys, 2), {}, dt)};
  };
  // The initial state makes cond_fn true.
  auto [next, subkey] = split(key);
  Array u_boost = uniform(subkey, {}, dt);
  Array V = std::get<2>(lax::while_loop(cond_fn, body_fn, KXVU{Array(next), zero, one, ScalarOf(2.0, dt)}));
  if (log_space) {
    Array log_boost = lax::select(boost_mask, zero, lax::mul(lax::log(u_boost), lax::div(one, alpha_orig)));
    return lax::add(lax::add(lax::log(d), lax::log(V)), log_boost);
  }
  Array boost = lax::select(boost_mask, one, lax::pow(u_boost, lax::div(one, alpha_orig)));
  Array z = lax::mul(lax::mul(d, V), boost);
  return lax::select(lax::eq(z, zero), ScalarOf(internal::Finfo(dt).tiny, dt), z);
}

// JAX's _gamma_impl: per-element keys split(key, a.size), one GammaOne per element.
Array GammaImpl(const Array& key, const Array& a, bool log_space) {
  const int64_t n = a.size();
  if (n == 0) return a;
  Array keys = split(key, n);
  Arrays out = VmapCall([log_space](absl::Span<const Array> args) { return Arrays{GammaOne(args[0], args[1], log_space)}; },
                        {keys, lax::reshape(a, {n})}, {0, 0}, {0});
  return lax::reshape(out[0], a.shape());
}

// dx/da of a Gamma(a) sample x, by implicit differentiation of P(a, x) = u (JAX's
// random_gamma_grad): -(dP/da) / (dP/dx), with dP/dx = x^(a-1) e^-x / Gamma(a) and dP/da from
// the series P(a, x) = sum_n t_n, t_n = x^(a+n) e^-x / Gamma(a+n+1), whose terms have
// d t_n / da = t_n (log x - digamma(a+n+1)). Summed in float64 elementwise until the terms past
// the peak (a + n > x) stop contributing.
Array GammaGrad(const Array& a_in, const Array& x_in) {
  const DType dt = a_in.dtype();
  Array a = lax::convert_element_type(a_in, float64);
  Array x = lax::convert_element_type(x_in, float64);
  const Shape& s = a.shape();
  auto f = [&](double v) { return jnp::full(s, v, float64); };
  Array log_x = lax::log(x);
  // t_0 = exp(a log x - x - lgamma(a + 1)); psi_0 = digamma(a + 1).
  Array t0 = lax::exp(lax::sub(lax::sub(lax::mul(a, log_x), x), lax::lgamma(lax::add(a, f(1)))));
  Array psi0 = lax::digamma(lax::add(a, f(1)));
  using Carry = std::tuple<Array, Array, Array, Array, Array>;  // n, t_n, psi(a+n+1), sum, done
  Array first = lax::mul(t0, lax::sub(log_x, psi0));
  auto done_after = [&](const Array& n, const Array& term, const Array& total, const Array& t) {
    Array past_peak = lax::gt(lax::add(a, n), x);
    Array negligible = lax::le(lax::abs(term), lax::mul(f(1e-17), lax::abs(total)));
    return jnp::logical_and(past_peak, jnp::logical_or(negligible, lax::eq(t, f(0))));
  };
  // Non-finite or non-positive inputs have no series to sum (their result is NaN or 0 below).
  Array no_series = jnp::logical_not(jnp::logical_and(jnp::logical_and(jnp::isfinite(a), jnp::isfinite(x)), lax::gt(x, f(0))));
  Carry init{f(0), t0, psi0, first, jnp::logical_or(no_series, done_after(f(0), first, first, t0))};
  // Past the peak the terms fall geometrically; kMaxTerms only bounds the loop for
  // pathological inputs (x ~ 1e12), far beyond any sample's needs (~ x - a + 40 sqrt(x)).
  constexpr double kMaxTerms = 1e7;
  Carry out = lax::while_loop(
      [&](const Carry& c) {
        return jnp::logical_and(jnp::logical_not(jnp::all(std::get<4>(c))),
                                lax::lt(jnp::max(std::get<0>(c)), jnp::internal::ScalarOf(kMaxTerms, float64)));
      },
      [&](const Carry& c) {
        auto [n, t, psi, total, done] = c;
        Array n1 = lax::add(n, f(1));
        // t_{n+1} = t_n x / (a + n + 1); psi(z + 1) = psi(z) + 1 / z with z = a + n + 1.
        Array z = lax::add(a, n1);
        Array t1 = lax::div(lax::mul(t, x), z);
        Array psi1 = lax::add(psi, lax::div(f(1), z));
        Array term = lax::mul(t1, lax::sub(log_x, psi1));
        Array total1 = lax::select(done, total, lax::add(total, term));
        return Carry{n1, t1, psi1, total1, jnp::logical_or(done, done_after(n1, term, total1, t1))};
      },
      init);
  Array dp_da = std::get<3>(out);
  Array log_pdf = lax::sub(lax::sub(lax::mul(lax::sub(a, f(1)), log_x), x), lax::lgamma(a));
  Array grad = lax::neg(lax::div(dp_da, lax::exp(log_pdf)));
  return lax::convert_element_type(grad, dt);
}

// JAX's random_gamma_p: the sampler with its jvp in a (the key has none).
Array GammaWithJvp(const Array& key, const Array& a, bool log_space) {
  auto sample = [log_space](const Array& k, const Array& alpha) { return GammaImpl(k, alpha, log_space); };
  auto rule = [log_space](const std::tuple<Array, Array>& primals, const std::tuple<Array, Array>& tangents) {
    const auto& [k, alpha] = primals;
    Array out = GammaImpl(k, alpha, log_space);
    Array x = out;
    if (log_space) {
      // d log(x) = dx / x; exp may round to 0: use tiny there, as gamma() does.
      x = lax::exp(out);
      x = lax::select(lax::eq(x, jnp::zeros_like(x)), jnp::full_like(x, internal::Finfo(x.dtype()).tiny), x);
    }
    Array dx_da = GammaGrad(lax::stop_gradient(alpha), lax::stop_gradient(x));
    if (log_space) dx_da = lax::div(dx_da, x);
    return std::pair{out, lax::mul(std::get<1>(tangents), dx_da)};
  };
  return jx::custom_jvp(sample, rule)(key, a);
}

Array Gamma(std::string_view op, const Array& key, const numpy::ArrayLike& a_like, std::optional<Shape> shape,
            DType dtype, bool log_space) {
  CheckKey(op, key);
  CheckFloat(op, dtype);
  Array a = a_like.as(dtype, false);
  const Shape s = shape.value_or(a.shape());
  if (shape) internal::CheckShape(op, s, a.shape());
  if (a.shape() != s) a = jnp::broadcast_to(a, s);
  return GammaWithJvp(key, a, log_space);
}

}  // namespace

Array gamma(const Array& key, const numpy::ArrayLike& a, std::optional<Shape> shape, DType dtype) {
  return Gamma("gamma", key, a, shape, dtype, /*log_space=*/false);
}

Array loggamma(const Array& key, const numpy::ArrayLike& a, std::optional<Shape> shape, DType dtype) {
  return Gamma("loggamma", key, a, shape, dtype, /*log_space=*/true);
}

Array beta(const Array& key, const numpy::ArrayLike& a_like, const numpy::ArrayLike& b_like, std::optional<Shape> shape,
           DType dtype) {
  CheckKey("beta", key);
  CheckFloat("beta", dtype);
  Array a = a_like.as(dtype, false);
  Array b = b_like.as(dtype, false);
  const Shape s = shape.value_or(jnp::broadcast_shapes(a.shape(), b.shape(), "beta"));
  if (shape) {
    internal::CheckShape("beta", s, a.shape());
    internal::CheckShape("beta", s, b.shape());
  }
  auto [key_a, key_b] = split(key);
  Array log_gamma_a = loggamma(key_a, jnp::broadcast_to(a, s), s, dtype);
  Array log_gamma_b = loggamma(key_b, jnp::broadcast_to(b, s), s, dtype);
  // gamma_a / (gamma_a + gamma_b) without overflow: scale both by the larger.
  Array log_max = lax::max(log_gamma_a, log_gamma_b);
  Array gamma_a_scaled = jnp::exp(lax::sub(log_gamma_a, log_max));
  Array gamma_b_scaled = jnp::exp(lax::sub(log_gamma_b, log_max));
  return lax::div(gamma_a_scaled, lax::add(gamma_a_scaled, gamma_b_scaled));
}

Array dirichlet(const Array& key, const Array& alpha_in, std::optional<Shape> shape, DType dtype) {
  CheckKey("dirichlet", key);
  CheckFloat("dirichlet", dtype);
  if (alpha_in.ndim() < 1) {
    ThrowOpError<ValueError>("dirichlet", "dirichlet requires alpha.ndim >= 1, got ", alpha_in.aval().str());
  }
  Shape batch(alpha_in.shape().begin(), alpha_in.shape().end() - 1);
  const Shape s = shape.value_or(batch);
  if (shape) internal::CheckShape("dirichlet", s, batch);
  Array alpha = lax::convert_element_type(alpha_in, dtype);
  Shape full_shape = s;
  full_shape.push_back(alpha_in.shape().back());
  // Log space: small alpha would otherwise underflow to all-zero rows.
  Array log_gamma = loggamma(key, alpha, full_shape, dtype);
  const int64_t last = static_cast<int64_t>(full_shape.size()) - 1;
  Array x_max = jnp::max(log_gamma, last, /*keepdims=*/true);
  Array unnormalized = jnp::exp(jnp::subtract(log_gamma, lax::stop_gradient(x_max)));
  return jnp::true_divide(unnormalized, jnp::sum(unnormalized, last, /*keepdims=*/true));
}

}  // namespace jx::random
