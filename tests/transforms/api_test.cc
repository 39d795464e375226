// The user-facing transformations end to end: make_jaxpr's text, grad/value_and_grad/
// has_aux/argnums, jvp, vjp, vmap, their compositions, and the errors they raise.
#include "jx/transforms/api.h"

#include <cmath>

#include <gtest/gtest.h>
#include <jx/jx.h>

namespace jx::api_test {
namespace {

namespace jnp = jx::numpy;
namespace lax = jx::lax;

struct Layer {
  BOOST_HANA_DEFINE_STRUCT(Layer, (Array, w), (Array, b));
};

TEST(MakeJaxprTest, PrintsJaxText) {
  auto f = [](const Array& x) { return lax::mul(lax::sin(x), 2.0); };
  ClosedJaxpr j = make_jaxpr(f)(jnp::ones({3}));
  EXPECT_EQ(j.ToString(), "{ lambda ; a:f32[3]. let b:f32[3] = sin a; c:f32[3] = mul b 2.0:f32[] in (c,) }");
  j.jaxpr->TypeCheck();
}

TEST(MakeJaxprTest, WrapsLongProgramsOneEquationPerLine) {
  auto f = [](const Array& x, const Array& y) {
    Array ex = lax::exp(x);  // separate statements: C++ leaves argument order unspecified
    Array z = lax::add(ex, lax::tanh(y));
    return lax::reduce_sum(lax::mul(z, z), {0});
  };
  EXPECT_EQ(make_jaxpr(f)(jnp::ones({3}), jnp::ones({3})).ToString(),
            "{ lambda ; a:f32[3] b:f32[3]. let\n"
            "    c:f32[3] = exp a\n"
            "    d:f32[3] = tanh b\n"
            "    e:f32[3] = add c d\n"
            "    f:f32[3] = mul e e\n"
            "    g:f32[] = reduce_sum[axes=(0,)] f\n"
            "  in (g,) }");
}

TEST(MakeJaxprTest, ClosedOverArraysBecomeConstvars) {
  Array w = jnp::arange(3.0);
  auto f = [&](const Array& x) { return lax::mul(x, w); };
  ClosedJaxpr j = make_jaxpr(f)(jnp::ones({3}));
  EXPECT_EQ(j.ToString(), "{ lambda a:f32[3]; b:f32[3]. let c:f32[3] = mul b a in (c,) }");
  ASSERT_EQ(j.consts.size(), 1u);
}

TEST(GradTest, SinAndPolynomial) {
  auto f = [](const Array& x) { return jnp::sum(jnp::sin(x)); };
  Array x = jnp::array({0.f, 0.5f, 1.f});
  std::vector<float> g = grad(f)(x).to_vector<float>();
  for (int i = 0; i < 3; ++i) EXPECT_NEAR(g[i], std::cos(0.5f * i), 1e-6);
  auto p = [](const Array& x) { return x * x * x; };  // d/dx = 3x^2, d2 = 6x
  Array s = Array::Scalar(2.0, float64);
  EXPECT_DOUBLE_EQ(grad(p)(s).item<double>(), 12.0);
  EXPECT_DOUBLE_EQ(grad(grad(p))(s).item<double>(), 12.0);
  EXPECT_DOUBLE_EQ(grad(grad(grad(p)))(s).item<double>(), 6.0);
}

TEST(GradTest, ValueAndGradHasAuxArgnumsAndStructs) {
  Layer layer{jnp::array({1.0, 2.0}), Array::Scalar(0.5, float64)};
  auto loss = [](const Layer& l, const Array& x) { return jnp::sum(l.w * x) + l.b; };
  Array x = jnp::array({3.0, 4.0});
  auto [v, g] = value_and_grad(loss)(layer, x);
  EXPECT_DOUBLE_EQ(v.item<double>(), 11.5);
  EXPECT_EQ(g.w.to_vector<double>(), (std::vector<double>{3.0, 4.0}));
  EXPECT_DOUBLE_EQ(g.b.item<double>(), 1.0);

  auto with_aux = [](const Array& x) { return std::pair{jnp::sum(x * x), x * 2.0}; };
  auto [gx, aux] = grad(with_aux, has_aux)(x);
  EXPECT_EQ(gx.to_vector<double>(), (std::vector<double>{6.0, 8.0}));
  EXPECT_EQ(aux.to_vector<double>(), (std::vector<double>{6.0, 8.0}));

  auto f2 = [](const Array& a, const Array& b, const Array& c) { return jnp::sum(a * b * c); };
  Array a = jnp::array({1.0}), b = jnp::array({2.0}), c = jnp::array({5.0});
  auto [ga, gc] = grad(f2, argnums{0, 2})(a, b, c);
  EXPECT_DOUBLE_EQ(ga.item<double>(), 10.0);
  EXPECT_DOUBLE_EQ(gc.item<double>(), 2.0);
}

TEST(JvpVjpTest, MatchAnalyticDerivatives) {
  auto f = [](const Array& x) { return jnp::sin(x) * x; };
  Array x = jnp::array({0.3, 1.1});
  Array t = jnp::array({1.0, 2.0});
  auto [y, yd] = jvp(f, std::tuple{x}, std::tuple{t});
  const std::vector<double> xs = {0.3, 1.1}, ts = {1.0, 2.0};
  for (int i = 0; i < 2; ++i) {
    EXPECT_NEAR(yd.to_vector<double>()[i], (std::cos(xs[i]) * xs[i] + std::sin(xs[i])) * ts[i], 1e-12);
  }
  auto [y2, f_vjp] = vjp(f, x);
  auto [ct] = f_vjp(jnp::ones_like(y2));
  for (int i = 0; i < 2; ++i) {
    EXPECT_NEAR(ct.to_vector<double>()[i], std::cos(xs[i]) * xs[i] + std::sin(xs[i]), 1e-12);
  }
}

TEST(VmapTest, MapsOverAxesAndComposesWithGrad) {
  auto f = [](const Array& x, const Array& w) { return jnp::sum(x * w); };
  Array xs = jnp::arange(6.0).reshape({3, 2});
  Array w = jnp::array({1.0, 10.0});
  EXPECT_EQ(vmap(f, in_axes{0, none})(xs, w).to_vector<double>(), (std::vector<double>{10, 32, 54}));
  EXPECT_EQ(vmap(f, in_axes{1, none})(xs.T(), w).to_vector<double>(), (std::vector<double>{10, 32, 54}));
  // Per-example gradients: vmap(grad(loss), in_axes{none, 0}).
  auto loss = [](const Array& w, const Array& x) { return jnp::sum(jnp::tanh(x * w)); };
  Array g = vmap(grad(loss), in_axes{none, 0})(w, xs);
  for (int i = 0; i < 3; ++i) {
    Array gi = grad(loss)(w, xs[i]);
    EXPECT_EQ(g[i].to_vector<double>(), gi.to_vector<double>());
  }
}

TEST(NestingTest, PerturbationConfusionIsAvoided) {
  // d/dx [x * d/dy (x + y)] at x=1 is 1 (JAX's perturbation-confusion test).
  auto outer = [](const Array& x) {
    auto inner = [&](const Array& y) { return x + y; };
    return x * grad(inner)(Array::Scalar(1.0, float64));
  };
  EXPECT_DOUBLE_EQ(grad(outer)(Array::Scalar(1.0, float64)).item<double>(), 1.0);
}

TEST(ErrorsTest, GradRejectsIntegerInputsAndVectorOutputs) {
  auto f = [](const Array& x) { return jnp::sum(x); };
  try {
    grad(f)(jnp::arange(3));
    FAIL() << "expected TypeError";
  } catch (const TypeError& e) {
    EXPECT_TRUE(std::string(e.what()).find("i32[3]") != std::string::npos) << e.what();
  }
  EXPECT_THROW(grad([](const Array& x) { return x * 2.0; })(jnp::ones({3})), TypeError);
  EXPECT_DOUBLE_EQ(grad(f)(jnp::ones({3}, float64)).to_vector<double>()[0], 1.0);
}

TEST(ErrorsTest, LeakedTracerIsReported) {
  Array leaked;
  auto f = [&](const Array& x) {
    leaked = x * 2.0;
    return jnp::sum(x);
  };
  grad(f)(jnp::ones({3}));
  try {
    (void)(leaked + 1.0);
    FAIL() << "expected TracerLeakError";
  } catch (const TracerLeakError& e) {
    EXPECT_NE(std::string(e.what()).find("jvp"), std::string::npos) << e.what();
  }
  EXPECT_EQ((jnp::ones({2}) + 1.0).to_vector<float>(), (std::vector<float>{2, 2}));
}

TEST(ErrorsTest, ConcretizationNamesTheArgument) {
  auto f = [](const Layer& p, const Array& x) {
    if (lax::gt(lax::reduce_sum(p.b, {0}), Array(0.0f))) return x;  // a C++ if on a traced value
    return lax::neg(x);
  };
  Layer p{jnp::ones({2}), jnp::ones({2})};
  try {
    make_jaxpr(f)(p, jnp::ones({2}));
    FAIL() << "expected ConcretizationError";
  } catch (const ConcretizationError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("depends on the value of argument 0 at .b."), std::string::npos) << msg;
    EXPECT_NE(msg.find("traced by make_jaxpr"), std::string::npos) << msg;
  }
  auto g = [](const Array& x, const Array& y) { return lax::mul(x, Array::Scalar(lax::add(y, y).item<float>(), float32)); };
  try {
    make_jaxpr(g)(jnp::ones({2}), jnp::ones({}));
    FAIL() << "expected ConcretizationError";
  } catch (const ConcretizationError& e) {
    EXPECT_NE(std::string(e.what()).find("depends on the value of argument 1."), std::string::npos) << e.what();
  }
  EXPECT_EQ(f(p, jnp::ones({2})).to_vector<float>(), (std::vector<float>{1, 1}));  // eager still works
}

TEST(ErrorsTest, HostControlFlowWorksUnderGradAndJvp) {
  // As in JAX, a jvp/grad tracer has a concrete primal: C++ control flow on it is fine.
  auto f = [](const Array& x) { return x.item<float>() > 0 ? lax::mul(x, x) : lax::neg(x); };
  EXPECT_EQ(grad(f)(Array(3.0f)).item<float>(), 6.0f);
  EXPECT_EQ(grad(f)(Array(-3.0f)).item<float>(), -1.0f);
  auto [y, t] = jvp(f, std::tuple{Array(2.0f)}, std::tuple{Array(1.0f)});
  EXPECT_EQ(y.item<float>(), 4.0f);
  EXPECT_EQ(t.item<float>(), 4.0f);
  EXPECT_EQ(grad(grad(f))(Array(3.0f)).item<float>(), 2.0f);
  // Under make_jaxpr the primal itself is staged, so reading it names the argument.
  try {
    make_jaxpr(grad(f))(Array(3.0f));
    FAIL() << "expected ConcretizationError";
  } catch (const ConcretizationError& e) {
    EXPECT_NE(std::string(e.what()).find("depends on the value of argument 0."), std::string::npos) << e.what();
  }
}

TEST(ErrorsTest, ConcretizationUnderVmapNamesTheMappedArgument) {
  auto f = [](const Array& scale, const Layer& p) {
    Array s = lax::reduce_sum(lax::mul(p.w, scale), {0});
    return s.item<float>() > 0 ? p.b : lax::neg(p.b);
  };
  Layer p{jnp::ones({3, 2}), jnp::ones({3, 2})};
  try {
    vmap(f, in_axes{none, 0})(Array(1.0f), p);
    FAIL() << "expected ConcretizationError";
  } catch (const ConcretizationError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("traced by vmap and depends on the value of argument 1 at .w "), std::string::npos) << msg;
  }
  // Through grad inside vmap the jvp primal is the batched value: the same argument is named.
  auto g = [](const Array& x) { return x.item<float>() > 0 ? x : lax::neg(x); };
  try {
    vmap(grad(g))(jnp::ones({3}));
    FAIL() << "expected ConcretizationError";
  } catch (const ConcretizationError& e) {
    EXPECT_NE(std::string(e.what()).find("depends on the value of argument 0 "), std::string::npos) << e.what();
  }
  EXPECT_EQ(vmap(grad([](const Array& x) { return lax::sin(x); }))(jnp::zeros({2})).to_vector<float>(), (std::vector<float>{1, 1}));
}

TEST(ErrorsTest, ShapeErrorsInsideATraceNameTheTransformStack) {
  auto f = [](const Array& x) { return jnp::sum(lax::add(x, jnp::ones({4}))); };
  try {
    vmap(grad(f))(jnp::ones({2, 3}));
    FAIL() << "expected ShapeError";
  } catch (const ShapeError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("[add]"), std::string::npos) << msg;
    EXPECT_NE(msg.find(",4]"), std::string::npos) << msg;  // shapes as the batched op sees them
    EXPECT_NE(msg.find("while tracing vmap > "), std::string::npos) << msg;
    EXPECT_NE(msg.find("jvp"), std::string::npos) << msg;
  }
  try {
    lax::add(jnp::ones({3}), jnp::ones({4}));
    FAIL() << "expected ShapeError";
  } catch (const ShapeError& e) {
    EXPECT_EQ(std::string(e.what()).find("while tracing"), std::string::npos) << e.what();  // eager: no stack
  }
}

TEST(NestingTest, GradOfAFunctionClosingOverAVmappedValue) {
  // Inside vmap, x is a batched tracer; grad differentiates w with x closed over.
  Array xs = jnp::arange(6.0).reshape({3, 2}).astype(float64);
  Array w = jnp::array({0.5, -1.0}).astype(float64);
  Array per_example = vmap([&](const Array& x) {
    return grad([&](const Array& v) { return jnp::sum(jnp::tanh(lax::mul(x, v))); })(w);
  })(xs);
  for (int i = 0; i < 3; ++i) {
    Array want = grad([&](const Array& v) { return jnp::sum(jnp::tanh(lax::mul(xs[i], v))); })(w);
    EXPECT_EQ(per_example[i].to_vector<double>(), want.to_vector<double>()) << i;
  }
}

TEST(VmapTest, InAxesAsAPytreePrefixByKeyPath) {
  // JAX's in_axes=({"w": 0, "b": None}, 0): w is batched, b shared.
  auto f = [](const Layer& p, const Array& x) { return jnp::sum(lax::add(lax::mul(x, p.w), p.b)); };
  Layer p{jnp::arange(6.0f).reshape({3, 2}), jnp::array({1.0f, 2.0f})};
  Array xs = jnp::arange(6.0f).reshape({3, 2});
  std::vector<float> got =
      vmap(f, in_axes{axes_by_path{{".w", 0}, {".b", none}}, 0})(p, xs).to_vector<float>();
  for (int i = 0; i < 3; ++i) EXPECT_EQ(got[i], f(Layer{p.w[i], p.b}, xs[i]).item<float>()) << i;
  // The empty path covers every leaf; a missing leaf is a clear error.
  EXPECT_EQ(vmap(f, in_axes{axes_by_path{{"", 0}}, 0})(Layer{p.w, jnp::ones({3, 2})}, xs).shape(), Shape{3});
  try {
    vmap(f, in_axes{axes_by_path{{".w", 0}}, 0})(p, xs);
    FAIL() << "expected ValueError";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("no entry covering its leaf at .b"), std::string::npos) << e.what();
  }
}

TEST(VmapTest, OutAxesAsAPytreePrefix) {
  // JAX's out_axes=({"w": 1, "b": None}, 0) on an output (Layer, Array).
  Array xs = jnp::arange(6.0f).reshape({3, 2});
  Array b = jnp::array({1.0f, 2.0f});
  auto f = [&](const Array& x) { return std::pair{Layer{lax::mul(x, 2.0), b}, jnp::sum(x)}; };
  auto [layer, sums] = vmap(f, in_axes{0}, out_axes{axes_by_path{{".w", 1}, {".b", none}}, 0})(xs);
  EXPECT_EQ(layer.w.shape(), (Shape{2, 3}));  // stacked along axis 1
  EXPECT_EQ(layer.w.to_vector<float>(), lax::transpose(lax::mul(xs, 2.0), {1, 0}).to_vector<float>());
  EXPECT_EQ(layer.b.shape(), Shape{2});  // unmapped: returned once
  EXPECT_EQ(sums.to_vector<float>(), (std::vector<float>{1, 5, 9}));
  // One entry covers the whole output; a struct child takes one int for all its leaves.
  auto g = [](const Array& x) { return std::pair{Layer{x, lax::neg(x)}, x}; };
  auto [l1, y1] = vmap(g, in_axes{0}, out_axes{-1})(xs);
  EXPECT_EQ(l1.b.shape(), (Shape{2, 3}));
  EXPECT_EQ(y1.shape(), (Shape{2, 3}));
  auto [l2, y2] = vmap(g, in_axes{0}, out_axes{1, 0})(xs);
  EXPECT_EQ(l2.w.shape(), (Shape{2, 3}));
  EXPECT_EQ(l2.b.shape(), (Shape{2, 3}));
  EXPECT_EQ(y2.shape(), (Shape{3, 2}));
}

TEST(VmapTest, OutAxesErrors) {
  Array xs = jnp::ones({3, 2});
  auto g = [](const Array& x) { return std::pair{Layer{x, x}, x}; };
  try {
    vmap(g, in_axes{0}, out_axes{0, 0, 0})(xs);
    FAIL() << "expected ValueError";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("out_axes must be a prefix of the output pytree: it has 3 entries but the "
                                         "output PyTreeDef((Layer(w=*, b=*), *)) has 2 children"),
              std::string::npos)
        << e.what();
  }
  try {
    vmap(g, in_axes{0}, out_axes{axes_by_path{{".w", 0}}, 0})(xs);
    FAIL() << "expected ValueError";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("out_axes for output 0 has no entry covering its leaf at .b"),
              std::string::npos)
        << e.what();
  }
  try {  // a mapped output cannot be returned unmapped
    vmap(g, in_axes{0}, out_axes{none, 0})(xs);
    FAIL() << "expected ValueError";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("out_axes is None"), std::string::npos) << e.what();
  }
  // The process keeps working.
  EXPECT_EQ(vmap(g, in_axes{0}, out_axes{0, 0})(xs).second.shape(), (Shape{3, 2}));
}

// The message of the ValueError/ConcretizationError/... that calling f throws (fails if none).
template <typename E, typename F>
std::string ErrorOf(F&& f) {
  try {
    f();
  } catch (const E& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected an exception";
  return "";
}

TEST(VmapTest, ArgumentErrorsNameLeavesByKeyPath) {
  auto f = [](const Layer& p, const Array& x) { return jnp::sum(lax::add(lax::mul(x, p.w), p.b)); };
  // .w has rank 1 but is mapped along axis 1.
  std::string msg = ErrorOf<ValueError>([&] { vmap(f, in_axes{1, 0})(Layer{jnp::ones({3}), jnp::ones({3, 2})}, jnp::ones({3, 2})); });
  EXPECT_NE(msg.find("vmap was requested to map argument 0 at .w along axis 1, which implies that its rank should be "
                     "at least 2, but is only 1 (its type is f32[3])"),
            std::string::npos)
      << msg;
  // A negative axis counts from the end; a scalar has no axis -1.
  msg = ErrorOf<ValueError>([&] { vmap(f, in_axes{0, -1})(Layer{jnp::ones({3, 2}), jnp::ones({3, 2})}, jnp::ones({})); });
  EXPECT_NE(msg.find("map argument 1 along axis -1, which implies that its rank should be at least 1, but is only 0"),
            std::string::npos)
      << msg;
  // Inconsistent sizes across two arguments (and within one): every distinct size is named
  // with an argument that has it.
  msg = ErrorOf<ValueError>([&] { vmap(f)(Layer{jnp::ones({3, 2}), jnp::ones({3, 2})}, jnp::ones({4, 2})); });
  EXPECT_NE(msg.find("vmap got inconsistent sizes for array axes to be mapped: 2 axes had size 3: e.g. axis 0 of "
                     "argument 0 at .w of type f32[3,2]; one axis had size 4: axis 0 of argument 1 of type f32[4,2]"),
            std::string::npos)
      << msg;
  msg = ErrorOf<ValueError>([&] { vmap(f, in_axes{axes_by_path{{".w", 0}, {".b", 1}}, none})(Layer{jnp::ones({3, 2}), jnp::ones({3, 2})}, jnp::ones({2})); });
  EXPECT_NE(msg.find("one axis had size 3: axis 0 of argument 0 at .w of type f32[3,2]; one axis had size 2: axis 1 "
                     "of argument 0 at .b of type f32[3,2]"),
            std::string::npos)
      << msg;
  // A nested container's key path.
  auto g = [](const std::vector<Layer>& layers) { return jnp::sum(layers[1].b); };
  std::vector<Layer> layers = {Layer{jnp::ones({2}), jnp::ones({2})}, Layer{jnp::ones({2}), jnp::ones({})}};
  msg = ErrorOf<ValueError>([&] { vmap(g)(layers); });
  EXPECT_NE(msg.find("map argument 0 at [1].b along axis 0"), std::string::npos) << msg;
  EXPECT_EQ(vmap(f)(Layer{jnp::ones({3, 2}), jnp::ones({3, 2})}, jnp::ones({3, 2})).shape(), Shape{3});  // still works
}

TEST(VmapTest, OutputErrorsNameTheOutput) {
  Array xs = jnp::ones({3, 2});
  // Through jx::vmap the output leaves are named by their key paths in the returned pytree.
  auto g = [](const Array& x) { return std::pair{Layer{x, jnp::ones({2})}, x}; };
  std::string msg = ErrorOf<ValueError>([&] { vmap(g, in_axes{0}, out_axes{0, none})(xs); });
  EXPECT_NE(msg.find("out_axes is None for output at [1] of type f32[2]"), std::string::npos) << msg;
  msg = ErrorOf<ValueError>([&] { vmap(g, in_axes{0}, out_axes{3, 0})(xs); });
  EXPECT_NE(msg.find("vmap out_axes 3 is out of bounds for output at [0].w of rank 2"), std::string::npos) << msg;
  // With the output tree's key paths (what a caller holding the TreeDef passes), the leaf is
  // named by its path.
  auto fn = [](absl::Span<const Array> a) { return Arrays{a[0], lax::neg(a[0])}; };
  const Array args[] = {xs};
  msg = ErrorOf<ValueError>([&] {
    VmapCallDeferredOutAxes(fn, args, {0}, [] { return VmapOutAxes({0, kNotMapped}, {"[0].w", "[1]"}); });
  });
  EXPECT_NE(msg.find("out_axes is None for output at [1] of type f32[2]"), std::string::npos) << msg;
  msg = ErrorOf<ValueError>([&] { VmapCallDeferredOutAxes(fn, args, {0}, [] { return VmapOutAxes({kNotMapped}, {"", ""}); }); });
  EXPECT_NE(msg.find("out_axes is None for output of type"), std::string::npos) << msg;
}

TEST(VmapTest, AxisSizeBroadcastsWhenNothingIsMapped) {
  // JAX's vmap(f, in_axes=None, axis_size=3): f runs once and its output is stacked 3 times.
  auto f = [](const Array& x) { return lax::mul(x, 2.0); };
  Array x = jnp::array({1.0f, 2.0f});
  Array ys = vmap(f, in_axes{none}, out_axes{0}, axis_size{3})(x);
  EXPECT_EQ(ys.shape(), (Shape{3, 2}));
  EXPECT_EQ(ys.to_vector<float>(), (std::vector<float>{2, 4, 2, 4, 2, 4}));
  Array ys1 = vmap(f, in_axes{none}, out_axes{1}, axis_size{3})(x);
  EXPECT_EQ(ys1.shape(), (Shape{2, 3}));
  EXPECT_EQ(ys1.to_vector<float>(), (std::vector<float>{2, 2, 2, 4, 4, 4}));
  // Under jx::none out_axes an unmapped output comes back once.
  EXPECT_EQ(vmap(f, in_axes{none}, out_axes{none}, axis_size{3})(x).shape(), Shape{2});
  // A consistent axis_size next to mapped arguments is fine.
  auto h = [](const Array& a, const Array& b) { return lax::add(a, b); };
  EXPECT_EQ(vmap(h, in_axes{0, none}, out_axes{0}, axis_size{3})(jnp::ones({3, 2}), x).shape(), (Shape{3, 2}));
  // Without a mapped argument or axis_size the size is unknown.
  std::string msg = ErrorOf<ValueError>([&] { vmap(f, in_axes{none})(x); });
  EXPECT_NE(msg.find("at least one non-None value in in_axes, or an axis_size"), std::string::npos) << msg;
  // axis_size disagreeing with the mapped arguments names the argument.
  msg = ErrorOf<ValueError>([&] { vmap(h, in_axes{0, none}, out_axes{0}, axis_size{4})(jnp::ones({3, 2}), x); });
  EXPECT_NE(msg.find("vmap got axis_size=4 but the mapped arguments have size 3 (one axis had size 3: axis 0 of "
                     "argument 0 of type f32[3,2])"),
            std::string::npos)
      << msg;
}

TEST(ErrorsTest, ToVectorAndBoolConversionOfTracersNameTheArgument) {
  Layer p{jnp::ones({3, 2}), jnp::ones({3, 2})};
  // to_vector under vmap: the value depends on the mapped argument 1 at .b.
  auto read = [](const Array& scale, const Layer& l) {
    std::vector<float> host = lax::mul(l.b, scale).to_vector<float>();
    return lax::mul(l.w, host[0]);
  };
  std::string msg = ErrorOf<ConcretizationError>([&] { vmap(read, in_axes{none, 0})(Array(2.0f), p); });
  EXPECT_NE(msg.find("traced by vmap and depends on the value of argument 1 at .b "), std::string::npos) << msg;
  EXPECT_EQ(msg.find(".w"), std::string::npos) << msg;  // only what the value depends on
  // to_vector under make_jaxpr: every argument is staged; the value depends on argument 0.
  msg = ErrorOf<ConcretizationError>([&] { make_jaxpr(read)(Array(2.0f), Layer{jnp::ones({2}), jnp::ones({2})}); });
  EXPECT_NE(msg.find("traced by make_jaxpr and depends on the value of argument 0, argument 1 at .b."),
            std::string::npos)
      << msg;
  // A C++ if on a comparison (Array's explicit operator bool) under vmap.
  auto relu = [](const Array& x) {
    if (x > 0) return x;
    return lax::neg(x);
  };
  msg = ErrorOf<ConcretizationError>([&] { vmap(relu)(jnp::array({1.0f, -2.0f})); });
  EXPECT_NE(msg.find("bool[] tracer"), std::string::npos) << msg;
  EXPECT_NE(msg.find("traced by vmap and depends on the value of argument 0 "), std::string::npos) << msg;
  // Unmapped arguments are concrete under vmap: reading them is fine.
  auto scale_by = [](const Array& s, const Array& x) { return lax::mul(x, s.to_vector<float>()[0]); };
  EXPECT_EQ(vmap(scale_by, in_axes{none, 0})(Array(3.0f), jnp::ones({2})).to_vector<float>(), (std::vector<float>{3, 3}));
  EXPECT_EQ(relu(Array(-2.0f)).item<float>(), 2.0f);  // eager still works
}

}  // namespace
}  // namespace jx::api_test
