// jit's semantics: one trace per signature, static arguments, pytrees, caching of C++
// lambdas and closures, nesting with grad/vmap/make_jaxpr, and the cache diagnostics.
#include "jx/transforms/jit.h"

#include <cmath>
#include <thread>

#include <gtest/gtest.h>
#include <jx/jx.h>

namespace jx::jit_test {
namespace {

namespace jnp = jx::numpy;
namespace lax = jx::lax;

struct Params {
  BOOST_HANA_DEFINE_STRUCT(Params, (Array, w), (Array, b));
};

TEST(JitTest, TracesOncePerSignatureAndMatchesEager) {
  int traces = 0;
  auto f = [&traces](const Array& x, const Array& y) {
    ++traces;  // runs only while tracing
    return lax::add(lax::mul(lax::sin(x), y), 1.0);
  };
  auto jf = jit(f);
  const Array x = jnp::arange(4.0f), y = jnp::ones({4});
  EXPECT_EQ(jf(x, y).to_vector<float>(), f(x, y).to_vector<float>());
  traces = 0;
  jf(x, y);
  jf(lax::neg(x), y);  // same shapes and dtypes: a cache hit
  EXPECT_EQ(traces, 0);
  EXPECT_EQ(jf.num_traces(), 1u);
  jf(jnp::ones({5}), jnp::ones({5}));  // new shape: one more trace
  jf(x.astype(float64), y.astype(float64));  // new dtype
  EXPECT_EQ(jf.num_traces(), 3u);
  auto copy = jf;  // copies share the cache
  copy(x, y);
  EXPECT_EQ(jf.num_traces(), 3u);
}

TEST(JitTest, WeakTypedScalarsAreTheirOwnSignature) {
  auto jf = jit([](const Array& x, const Array& s) { return x * s; });
  const Array x = jnp::ones({2}, float16);
  EXPECT_EQ(jf(x, Array(2.0)).dtype(), float16);  // weak: x's dtype wins, as in eager
  EXPECT_EQ(jf(x, Array::Scalar(2.0, float32)).dtype(), float32);
  EXPECT_EQ(jf.num_traces(), 2u);
}

TEST(JitTest, StaticArgumentsAreCacheKeys) {
  int traces = 0;
  auto f = [&traces](const Array& x, int n, const std::string& op) {
    ++traces;
    Array y = x;
    for (int i = 0; i < n; ++i) y = op == "sin" ? lax::sin(y) : lax::cos(y);
    return y;
  };
  auto jf = jit(f, static_argnums{1, 2});
  const Array x = jnp::arange(3.0f);
  EXPECT_EQ(jf(x, 2, std::string("sin")).to_vector<float>(), f(x, 2, "sin").to_vector<float>());
  jf(x, 2, std::string("sin"));
  EXPECT_EQ(jf.num_traces(), 1u);
  EXPECT_EQ(jf(x, 3, std::string("sin")).to_vector<float>(), f(x, 3, "sin").to_vector<float>());
  EXPECT_EQ(jf(x, 3, std::string("cos")).to_vector<float>(), f(x, 3, "cos").to_vector<float>());
  EXPECT_EQ(jf.num_traces(), 3u);
  // A traced argument used as a C++ value is a ConcretizationError naming it.
  auto g = jit([](const Array& x, const Array& n) { return lax::mul(x, static_cast<double>(n.item<int>())); });
  try {
    g(x, Array(2));
    FAIL() << "expected ConcretizationError";
  } catch (const ConcretizationError& e) {
    EXPECT_NE(std::string(e.what()).find("argument 1"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("jit(<lambda>)"), std::string::npos) << e.what();
  }
}

TEST(JitTest, PytreesInAndOut) {
  auto loss = [](const Params& p, const Array& x) {
    Array y = lax::add(lax::mul(x, p.w), p.b);
    return std::pair{jnp::sum(lax::mul(y, y)), y};
  };
  Params p{jnp::array({1.0f, 2.0f}), jnp::array({0.5f, -0.5f})};
  const Array x = jnp::array({3.0f, 4.0f});
  auto [l, y] = jit(loss)(p, x);
  auto [le, ye] = loss(p, x);
  EXPECT_EQ(l.item<float>(), le.item<float>());
  EXPECT_EQ(y.to_vector<float>(), ye.to_vector<float>());
}

TEST(JitTest, ClosuresOverDifferentArraysNeverShareAnExecutable) {
  auto make = [](Array scale) { return jit([scale](const Array& x) { return lax::mul(x, scale); }); };
  auto by2 = make(jnp::full({3}, 2.0f)), by3 = make(jnp::full({3}, 3.0f));
  const Array x = jnp::ones({3});
  EXPECT_EQ(by2(x).to_vector<float>(), (std::vector<float>{2, 2, 2}));
  EXPECT_EQ(by3(x).to_vector<float>(), (std::vector<float>{3, 3, 3}));
  EXPECT_EQ(by2(x).to_vector<float>(), (std::vector<float>{2, 2, 2}));
}

TEST(JitTest, ComposesWithGradVmapAndMakeJaxpr) {
  auto f = [](const Array& x) { return jnp::sum(lax::tanh(lax::mul(x, x))); };
  auto jf = jit(f);
  const Array x = jnp::array({0.3, -1.2, 2.0}).astype(float64);
  EXPECT_EQ(grad(jf)(x).to_vector<double>(), grad(f)(x).to_vector<double>());
  EXPECT_EQ(jit(grad(f))(x).to_vector<double>(), grad(f)(x).to_vector<double>());
  const Array xs = jnp::arange(6.0).reshape({2, 3}).astype(float64);
  const Array per_row = jit(vmap(grad(jf)))(xs);
  for (int i = 0; i < 2; ++i) EXPECT_EQ(per_row[i].to_vector<double>(), grad(f)(xs[i]).to_vector<double>()) << i;
  check_grads(jf, std::tuple{x}, 2);
  // Under a transformation a jit call is one equation carrying its jaxpr.
  const std::string text = make_jaxpr(jf)(x).ToString();
  EXPECT_NE(text.find("= jit["), std::string::npos) << text;
  EXPECT_NE(text.find("name=<lambda>"), std::string::npos) << text;
  // grad through a jit stages a known jit (primal + residuals) and a jit of the tangent
  // program: the transposed program is one jit as well.
  const std::string g = make_jaxpr(grad(jf))(x).ToString();
  size_t jits = 0;
  for (size_t at = g.find("= jit["); at != std::string::npos; at = g.find("= jit[", at + 1)) ++jits;
  EXPECT_EQ(jits, 2u) << g;
}

TEST(JitTest, JitInsideControlFlowAndAroundIt) {
  auto body = jit([](const Array& c, const Array& x) { return std::pair{lax::add(c, x), lax::mul(c, x)}; });
  auto f = [&](const Array& xs) { return lax::scan(body, jnp::zeros({}, float64), xs).second; };
  const Array xs = jnp::arange(4.0).astype(float64);
  EXPECT_EQ(jit(f)(xs).to_vector<double>(), f(xs).to_vector<double>());
  check_grads([&](const Array& v) { return jnp::sum(f(v)); }, std::tuple{xs}, 1);
}

TEST(JitTest, ErrorsNameTheArgumentAndKeepTheCacheClean) {
  auto jf = jit([](const Array& a, const Array& b) { return jnp::matmul(a, b); });
  const Array a = jnp::ones({2, 3}), good = jnp::ones({3, 4}), bad = jnp::ones({4, 5});
  EXPECT_THROW(jf(a, bad), ShapeError);
  EXPECT_EQ(jf.num_traces(), 0u);  // a failed trace caches nothing
  EXPECT_EQ(jf(a, good).shape(), (Shape{2, 4}));
  EXPECT_THROW(jf(a, bad), ShapeError);
  EXPECT_EQ(jf(a, good).shape(), (Shape{2, 4}));
  EXPECT_THROW(jit([](const Array& x, int) { return x; }, static_argnums{3})(a, 1), ValueError);
  EXPECT_THROW(jit([](const Array& x, int) { return x; })(a, 1), TypeError);  // not static, not arrays
  EXPECT_THROW(jit([](const Array& x) { return x; }, static_argnums{0}, donate_argnums{0}), ValueError);
}

TEST(JitTest, ExplainsCacheMissesAndLogsCompiles) {
  setenv("JX_EXPLAIN_CACHE_MISSES", "1", 1);
  setenv("JX_LOG_COMPILES", "1", 1);
  auto jf = jit([](const Params& p, const Array& x, int n) { return lax::mul(lax::add(x, p.w), static_cast<double>(n)); },
                static_argnums{2});
  Params p{jnp::ones({3}), jnp::ones({3})};
  ::testing::internal::CaptureStderr();
  jf(p, jnp::ones({3}), 1);
  jf(Params{jnp::ones({4}), jnp::ones({3})}, jnp::ones({4}), 1);
  jf(Params{jnp::ones({4}), jnp::ones({3})}, jnp::ones({4}), 2);
  const std::string log = ::testing::internal::GetCapturedStderr();
  unsetenv("JX_EXPLAIN_CACHE_MISSES");
  unsetenv("JX_LOG_COMPILES");
  EXPECT_NE(log.find("jx: traced jit(<lambda>) for (f32[3], f32[3], f32[3])"), std::string::npos) << log;
  EXPECT_NE(log.find("jx: compiled jit(<lambda>)"), std::string::npos) << log;
  EXPECT_NE(log.find("argument 0 at .w changed shape from f32[3] to f32[4]"), std::string::npos) << log;
  EXPECT_NE(log.find("argument 1 changed shape from f32[3] to f32[4]"), std::string::npos) << log;
  EXPECT_NE(log.find("static argument 2 changed from 1 to 2"), std::string::npos) << log;
}

TEST(JitTest, ConcurrentCallsShareOneCache) {
  auto jf = jit([](const Array& x) { return lax::exp(x); });
  const Array x = jnp::arange(8.0f);
  // Every thread's result is bit-identical to a single-threaded call (the compiled exp may
  // round differently from the eager kernel's, within an ulp or two).
  const std::vector<float> want = jf(x).to_vector<float>(), eager = lax::exp(x).to_vector<float>();
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(want[i], eager[i], 3e-7 * eager[i]);
  std::vector<std::thread> threads;
  std::vector<int> ok(4, 0);
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 50; ++i) ok[t] += jf(x).to_vector<float>() == want ? 1 : 0;
    });
  }
  for (std::thread& t : threads) t.join();
  for (int t = 0; t < 4; ++t) EXPECT_EQ(ok[t], 50);
  EXPECT_LE(jf.num_traces(), 4u);  // racing first calls may each trace; later ones hit
}

}  // namespace
}  // namespace jx::jit_test
