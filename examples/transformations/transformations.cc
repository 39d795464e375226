// Every transformation of jx once, as the README's "Transformations" section shows them.
// Exits nonzero if any result disagrees with its closed form.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <iostream>
#include <string>

#include <jx/jx.h>

namespace jnp = jx::numpy;
namespace lax = jx::lax;
using jx::Array;

namespace {

int failures = 0;
void Check(bool ok, const std::string& what) {
  std::printf("%s %s\n", ok ? "ok  " : "FAIL", what.c_str());
  if (!ok) ++failures;
}
bool Near(double a, double b, double tol = 1e-9) { return std::fabs(a - b) <= tol * (1 + std::fabs(b)); }
Array F64(std::vector<double> v) { return jnp::array(v).astype(jx::float64); }
Array S(double v) { return Array::Scalar(v, jx::float64); }

// A pytree of parameters: any Hana struct of Arrays.
struct Layer {
  BOOST_HANA_DEFINE_STRUCT(Layer, (Array, w), (Array, b));
};
// Nested containers and a non-array field (part of the structure, so jit retraces on it).
struct Mlp {
  BOOST_HANA_DEFINE_STRUCT(Mlp, (std::vector<Layer>, layers), (jx::Static<std::string>, act));
};

}  // namespace

int main() {
  // make_jaxpr: the program as JAX prints it.
  auto f = [](const Array& x) { return lax::mul(lax::sin(x), 2.0); };
  std::cout << jx::make_jaxpr(f)(jnp::ones({3})) << "\n";

  // grad, value_and_grad, has_aux, argnums.
  auto loss = [](const Layer& p, const Array& x) { return jnp::sum(jnp::tanh(lax::add(lax::mul(x, p.w), p.b))); };
  Layer p{F64({0.5, -1.0}), F64({0.1, 0.2})};
  Array x = F64({1.0, 2.0});
  Layer g = jx::grad(loss)(p, x);
  auto [value, g2] = jx::value_and_grad(loss)(p, x);
  Check(Near(g.b.to_vector<double>()[0], 1 - std::pow(std::tanh(0.6), 2)), "grad over a struct of parameters");
  Check(Near(value.item<double>(), std::tanh(0.6) + std::tanh(-1.8)), "value_and_grad");
  auto with_aux = [](const Array& x) { return std::pair{jnp::sum(lax::mul(x, x)), lax::neg(x)}; };
  auto [gx, aux] = jx::grad(with_aux, jx::has_aux)(x);
  Check(gx.to_vector<double>()[1] == 4.0 && aux.to_vector<double>()[1] == -2.0, "grad with has_aux");
  auto two = [](const Array& a, const Array& b) { return jnp::sum(lax::mul(a, b)); };
  auto [ga, gb] = jx::grad(two, jx::argnums{0, 1})(x, F64({3.0, 4.0}));
  Check(ga.to_vector<double>()[0] == 3.0 && gb.to_vector<double>()[0] == 1.0, "grad with argnums");
  auto [value_aux, grads] = jx::value_and_grad(with_aux, jx::has_aux)(x);  // ((value, aux), grad) as in JAX
  Check(value_aux.first.item<double>() == 5.0 && grads.to_vector<double>()[0] == 2.0, "value_and_grad with has_aux");
  auto [v2, g_b] = jx::value_and_grad(two, 1)(x, F64({3.0, 4.0}));  // JAX argnums=1: one gradient
  Check(v2.item<double>() == 11.0 && g_b.to_vector<double>()[1] == 2.0, "value_and_grad with argnums");

  // jvp and vjp.
  auto [y, y_dot] = jx::jvp(lax::sin, std::tuple{S(0.5)}, std::tuple{S(1.0)});
  Check(Near(y_dot.item<double>(), std::cos(0.5)), "jvp");
  auto [y2, sin_vjp] = jx::vjp(lax::sin, S(0.5));
  Check(Near(std::get<0>(sin_vjp(S(2.0))).item<double>(), 2 * std::cos(0.5)), "vjp");

  // jacfwd, jacrev, hessian.
  auto cube = [](const Array& v) { return lax::mul(lax::mul(v, v), v); };
  Array J = jx::jacfwd(cube)(x), J2 = jx::jacrev(cube)(x);
  Check(J.shape() == jx::Shape{2, 2} && J.to_vector<double>()[3] == 12.0 && J2.to_vector<double>()[3] == 12.0,
        "jacfwd and jacrev");
  Array H = jx::hessian([&](const Array& v) { return jnp::sum(cube(v)); })(x);
  Check(H.to_vector<double>()[3] == 12.0 && H.to_vector<double>()[1] == 0.0, "hessian");

  // vmap, and per-example gradients.
  Array xs = F64({1.0, 2.0, 3.0, 4.0}).reshape({2, 2});
  Array per_example = jx::vmap(jx::grad(loss), jx::in_axes{jx::none, 0})(p, xs).w;
  Check(per_example.shape() == jx::Shape{2, 2}, "vmap(grad) per-example gradients");
  Check(jx::vmap([](const Array& col) { return jnp::sum(col); }, jx::in_axes{1})(xs).to_vector<double>()[1] == 6.0, "vmap over axis 1");
  // A pytree prefix by key path, as JAX's in_axes=({"w": 0, "b": None}, 0):
  Layer stacked_p{F64({0.5, -1.0, 2.0, 0.3}).reshape({2, 2}), p.b};
  Array ys = jx::vmap(loss, jx::in_axes{jx::axes_by_path{{".w", 0}, {".b", jx::none}}, 0})(stacked_p, xs);
  Check(ys.shape() == jx::Shape{2} && Near(ys.to_vector<double>()[1], loss(Layer{stacked_p.w[1], p.b}, xs[1]).item<double>()),
        "vmap with in_axes by key path");
  // out_axes is a prefix of the output pytree: one entry per child of the output's root.
  auto split = [&](const Array& v) { return std::pair{Layer{lax::mul(v, 2.0), p.b}, jnp::sum(v)}; };
  auto [layer, sums] = jx::vmap(split, jx::in_axes{0}, jx::out_axes{jx::axes_by_path{{".w", 1}, {".b", jx::none}}, 0})(xs);
  Check(layer.w.to_vector<double>() == std::vector<double>{2, 6, 4, 8} && layer.b.shape() == jx::Shape{2} &&
            sums.to_vector<double>() == std::vector<double>{3, 7},
        "vmap with out_axes as an output prefix (w stacked along axis 1, b unmapped)");
  // No argument mapped: axis_size says how many copies, as JAX's vmap(f, in_axes=None, axis_size=3).
  Array copies = jx::vmap(lax::sin, jx::in_axes{jx::none}, jx::out_axes{0}, jx::axis_size{3})(x);  // 3 copies of sin(x)
  Check(copies.shape() == jx::Shape{3, 2} && copies.to_vector<double>()[5] == std::sin(2.0), "vmap with axis_size");

  // Pytrees: flatten to leaves and a structure; key paths name leaves in errors.
  Mlp mlp{{Layer{jnp::array({0.5, -1.0}), jnp::array({0.1, 0.2})}, Layer{jnp::array({2.0, 1.0}), jnp::array({0.0, 0.3})}},
          jx::Static{"tanh"}};
  auto [leaves, def] = jx::tree::flatten(mlp);
  std::cout << def << "\n";  // PyTreeDef(Mlp(layers=[Layer(w=*, b=*), Layer(w=*, b=*)], act=Static('tanh')))
  std::cout << def.KeyPath(2) << "\n";  // .layers[1].w
  Mlp half = jx::tree::map([](const Array& a) { return lax::mul(a, 0.5); }, mlp);
  Mlp same = jx::tree::unflatten<Mlp>(def, leaves);
  Check(leaves.size() == 4 && def.KeyPath(2) == ".layers[1].w" && half.layers[1].w.to_vector<double>()[0] == 1.0 &&
            same.act.value == "tanh",
        "tree::flatten, KeyPath, map and unflatten");
  auto forward = [](const Mlp& m, Array h) {
    for (const Layer& l : m.layers) h = jnp::tanh(lax::add(lax::mul(h, l.w), l.b));
    return jnp::sum(h);
  };
  Mlp g_mlp = jx::grad(forward)(mlp, x);  // gradients have the parameters' structure
  Check(g_mlp.layers.size() == 2 && g_mlp.act.value == "tanh", "grad over nested containers with a Static field");
  try {
    jx::vmap(forward)(mlp, jnp::ones({3, 2}));  // ValueError: in_axes 0 maps mlp's leaves (size 2) too
    Check(false, "vmap with inconsistent sizes must throw");
  } catch (const jx::ValueError& e) {
    std::cout << e.what() << "\n";
    Check(std::string(e.what()).find("argument 0 at .layers[0].w") != std::string::npos, "vmap errors name leaves by key path");
  }

  // Control flow inside the IR: cond, switch_, while_loop, fori_loop, scan.
  auto relu_ish = [](const Array& v) {
    return lax::cond(lax::gt(v, S(0.0)), [](const Array& u) { return lax::mul(u, u); }, [](const Array& u) { return lax::neg(u); }, v);
  };
  Check(jx::grad(relu_ish)(S(3.0)).item<double>() == 6.0 && jx::grad(relu_ish)(S(-3.0)).item<double>() == -1.0,
        "grad through cond");
  std::vector<std::function<Array(const Array&)>> branches = {lax::sin, lax::cos, lax::neg};
  Check(lax::switch_(Array(2), branches, S(1.0)).item<double>() == -1.0, "switch_");
  Array steps = lax::while_loop([](const Array& i) { return lax::lt(i, Array(10)); },
                                [](const Array& i) { return lax::add(i, Array(3)); }, Array(0));
  Check(steps.item<int>() == 12, "while_loop");
  auto power = [](const Array& v) {
    return lax::fori_loop(0, 3, [](const Array&, const Array& acc) { return lax::mul(acc, acc); }, v);  // v^8
  };
  Check(Near(jx::grad(power)(S(1.1)).item<double>(), 8 * std::pow(1.1, 7)), "grad through fori_loop");
  auto cumsum = [](const Array& c, const Array& v) { Array s = lax::add(c, v); return std::pair{s, s}; };
  auto [total, partial] = lax::scan(cumsum, S(0.0), F64({1, 2, 3}));
  Check(total.item<double>() == 6.0 && partial.to_vector<double>()[1] == 3.0, "scan");

  // custom_jvp and custom_vjp.
  auto softplus = jx::custom_jvp([](const Array& v) { return lax::log1p(lax::exp(v)); },
                                 [](const std::tuple<Array>& primal, const std::tuple<Array>& tangent) {
                                   const Array& v = std::get<0>(primal);
                                   return std::pair{lax::log1p(lax::exp(v)), lax::mul(std::get<0>(tangent), lax::logistic(v))};
                                 });
  Check(jx::grad(softplus)(S(1000.0)).item<double>() == 1.0, "custom_jvp (stable where the formula overflows)");
  auto clip_grad = jx::custom_vjp([](const Array& v) { return v; },
                                  [](const Array& v) { return std::pair{v, std::tuple<>{}}; },
                                  [](const std::tuple<>&, const Array& ct) { return std::tuple{lax::clamp(S(-1.0), ct, S(1.0))}; });
  Check(jx::grad([&](const Array& v) { return lax::mul(clip_grad(v), S(5.0)); })(S(2.0)).item<double>() == 1.0,
        "custom_vjp (gradient clipping)");

  // checkpoint: the same gradients, recomputed instead of saved.
  auto block = jx::checkpoint([](const Array& v) { return lax::tanh(lax::sin(v)); });
  Check(jx::grad([&](const Array& v) { return jnp::sum(block(v)); })(x).to_vector<double>() ==
            jx::grad([](const Array& v) { return jnp::sum(lax::tanh(lax::sin(v))); })(x).to_vector<double>(),
        "checkpoint");

  // stop_gradient and check_grads.
  Check(jx::grad([](const Array& v) { return lax::mul(v, lax::stop_gradient(v)); })(S(3.0)).item<double>() == 3.0,
        "stop_gradient");
  jx::check_grads(loss, std::tuple{p, x}, /*order=*/2);
  Check(true, "check_grads to second order");

  // Errors: reading a traced value names the argument it depends on.
  try {
    jx::make_jaxpr([](const Array& v) { return v.item<float>() > 0 ? v : lax::neg(v); })(Array(1.0f));
    Check(false, "item() on a make_jaxpr tracer must throw");
  } catch (const jx::ConcretizationError& e) {
    std::cout << e.what() << "\n";
    Check(std::string(e.what()).find("depends on the value of argument 0") != std::string::npos,
          "ConcretizationError names the argument");
  }
  // Under grad and jvp the primal is concrete, so C++ control flow on it works, as in JAX.
  auto host_if = jx::grad([](const Array& x) { return x.item<float>() > 0 ? x * x : -x; });
  Check(host_if(Array(3.0f)).item<float>() == 6.0f && host_if(Array(-3.0f)).item<float>() == -1.0f,
        "C++ control flow on a grad tracer's concrete primal");
  // A tracer stored outside the function and used after the transformation finished.
  Array leaked;
  jx::vmap([&](const Array& v) { leaked = lax::sin(v); return v; })(xs);
  try {
    Array used_later = leaked * 2.0;
    Check(false, "using a leaked tracer must throw");
  } catch (const jx::TracerLeakError& e) {
    std::cout << e.what() << "\n";  // [mul] argument 0 (f64[2]) is a tracer of vmap used after vmap finished: ...
    Check(std::string(e.what()).find("tracer of vmap used after vmap finished") != std::string::npos,
          "TracerLeakError names the transformation");
  }
  return failures == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
