// Transformations of jit are cached: the second call of grad(jit(f)), vjp/jvp(jit(f)),
// vmap(jit(f)) or of a jit inside a scan/fori_loop body traces, transforms, lowers and
// compiles nothing; new avals or new transformation parameters do; results stay correct;
// the caches never keep another transformation's tracers and never grow without bound;
// jx::clear_caches() empties them all.
#include <cmath>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <jx/jx.h>

#include "jx/devices/cpu/cpu_compiler.h"
#include "jx/transforms/jit_rules.h"

namespace jx::jit_transform_cache_test {
namespace {

namespace jnp = jx::numpy;
namespace lax = jx::lax;

// Everything a call might redo, summed over the caches, plus the CPU backend's lowerings
// (every lowering either compiles or hits the program cache).
struct Work {
  int64_t jvp, partial_eval, transpose, batch, executables, lowerings, compiles;

  static Work Now() {
    const jit_internal::JitTransformCacheStats t = jit_internal::GetJitTransformCacheStats();
    const CpuJitStats cpu = GetCpuJitStats();
    return Work{t.jvp.misses,
                t.partial_eval.misses,
                t.transpose.misses,
                t.batch.misses,
                jit_internal::GetJitExecutableCacheStats().misses,
                cpu.compiles + cpu.cache_hits,
                cpu.compiles};
  }
  Work operator-(const Work& o) const {
    return Work{jvp - o.jvp,          partial_eval - o.partial_eval, transpose - o.transpose,
                batch - o.batch,      executables - o.executables,   lowerings - o.lowerings,
                compiles - o.compiles};
  }
  bool none() const {
    return jvp == 0 && partial_eval == 0 && transpose == 0 && batch == 0 && executables == 0 && lowerings == 0;
  }
};

std::ostream& operator<<(std::ostream& os, const Work& w) {
  return os << "jvp " << w.jvp << ", partial_eval " << w.partial_eval << ", transpose " << w.transpose << ", batch "
            << w.batch << ", executables " << w.executables << ", lowerings " << w.lowerings << ", compiles "
            << w.compiles;
}

// Tests run in f64 so jit and eager agree to rounding.
Array F64(std::initializer_list<double> v) { return jnp::array(v).astype(float64); }
Array Range64(int64_t n, double scale) { return lax::mul(jnp::arange(static_cast<double>(n), float64), scale); }

struct Layer {
  BOOST_HANA_DEFINE_STRUCT(Layer, (Array, w), (Array, b));
};

Array LayerLoss(const Layer& p, const Array& x) {
  const Array y = jnp::matmul(x, p.w);
  const Array h = lax::tanh(lax::add(y, lax::broadcast_in_dim(p.b, y.shape(), {1})));
  return jnp::sum(lax::mul(h, h));
}

Layer MakeLayer(int64_t n, double scale) {
  return Layer{Range64(n * n, scale / static_cast<double>(n * n)).reshape({n, n}),
               Range64(n, -scale / static_cast<double>(n))};
}

void ExpectNear(const Array& got, const Array& want, double rtol = 1e-12) {
  ASSERT_EQ(got.shape(), want.shape());
  const std::vector<double> g = got.to_vector<double>(), w = want.to_vector<double>();
  for (size_t i = 0; i < g.size(); ++i) EXPECT_NEAR(g[i], w[i], rtol * (1 + std::abs(w[i]))) << "element " << i;
}

TEST(JitTransformCacheTest, GradOfJitTransformsAndCompilesOnce) {
  auto jf = jit(LayerLoss);
  auto g = grad(jf);
  const Layer p = MakeLayer(4, 1.0);
  const Array x = Range64(12, 1.0).reshape({3, 4});
  const Work before = Work::Now();
  ExpectNear(g(p, x).w, grad(LayerLoss)(p, x).w);
  const Work first = Work::Now() - before;
  // jvp, then its partial evaluation, then the transpose of the tangent program; the
  // known part and the backward pass each compile once.
  EXPECT_EQ(first.jvp, 1) << first;
  EXPECT_EQ(first.partial_eval, 1) << first;
  EXPECT_EQ(first.transpose, 1) << first;
  EXPECT_EQ(first.executables, 2) << first;

  // Other values, same avals: nothing is traced, transformed, lowered or compiled.
  const Layer p2 = MakeLayer(4, -2.0);
  const Work mid = Work::Now();
  const Layer got = g(p2, x);
  const Work second = Work::Now() - mid;
  EXPECT_TRUE(second.none()) << second;
  EXPECT_EQ(jf.num_traces(), 1u);
  const Layer want = grad(LayerLoss)(p2, x);
  ExpectNear(got.w, want.w);
  ExpectNear(got.b, want.b);
}

TEST(JitTransformCacheTest, NewAvalsTransformAgain) {
  auto g = grad(jit(LayerLoss));
  const Layer p = MakeLayer(4, 1.0);
  g(p, jnp::ones({3, 4}, float64));
  const Work before = Work::Now();
  const Array x5 = jnp::ones({5, 4}, float64);
  ExpectNear(g(p, x5).w, grad(LayerLoss)(p, x5).w);
  const Work d = Work::Now() - before;
  EXPECT_EQ(d.jvp, 1) << d;
  EXPECT_EQ(d.partial_eval, 1) << d;
  EXPECT_EQ(d.transpose, 1) << d;
  EXPECT_EQ(d.executables, 2) << d;
  EXPECT_GE(d.compiles, 1) << d;
  // Both signatures stay cached.
  const Work again = Work::Now();
  g(p, jnp::ones({3, 4}, float64));
  g(p, x5);
  EXPECT_TRUE((Work::Now() - again).none()) << (Work::Now() - again);
}

TEST(JitTransformCacheTest, WhichInputsAreDifferentiatedIsPartOfTheKey) {
  auto f = [](const Array& a, const Array& b) { return jnp::sum(lax::mul(lax::sin(a), b)); };
  auto jf = jit(f);
  const Array a = F64({0.5, 1.0, 2.0}), b = F64({3.0, -1.0, 0.25});
  const Work before = Work::Now();
  ExpectNear(grad(jf)(a, b), grad(f)(a, b));
  ExpectNear(std::get<1>(grad(jf, argnums{0, 1})(a, b)), lax::sin(a));
  ExpectNear(std::get<0>(grad(jf, argnums{0, 1})(a, b)), lax::mul(lax::cos(a), b));
  const Work d = Work::Now() - before;
  // grad in a only, then in (a, b): two tangent masks, each jvp'd, split and transposed once.
  EXPECT_EQ(d.jvp, 2) << d;
  EXPECT_EQ(d.partial_eval, 2) << d;
  EXPECT_EQ(d.transpose, 2) << d;
}

// JAX's known-input forwarding: a residual or known output that is just a known input is
// passed through, not copied out by the known program.
TEST(JitTransformCacheTest, KnownInputsAreForwardedNotCopied) {
  auto jf = jit(LayerLoss);
  const Layer p = MakeLayer(4, 1.0);
  const Array x = Range64(12, 1.0).reshape({3, 4});
  const ClosedJaxpr g = make_jaxpr(grad(jf))(p, x);
  ASSERT_GE(g.jaxpr->eqns.size(), 2u) << g;
  const Eqn& known = g.jaxpr->eqns[0];
  ASSERT_EQ(known.primitive.name(), "jit") << g;
  // The loss and two residuals (tanh and its derivative); x, also needed by the backward
  // pass, goes to the staged jit straight from the input.
  EXPECT_EQ(known.outputs.size(), 3u) << g;
  const Eqn& backward = g.jaxpr->eqns.back();
  EXPECT_EQ(std::get<Var>(backward.inputs[0]).index, g.jaxpr->invars[2].index) << g;

  // Forwarded and computed known outputs mixed.
  auto first_and_product = jit([](const Array& a, const Array& b) { return std::pair{a, lax::mul(a, b)}; });
  const Array a = F64({1.0, 2.0}), b = F64({3.0, 5.0});
  auto [outs, pullback] = vjp(first_and_product, a, b);
  ExpectNear(outs.first, a);
  ExpectNear(outs.second, lax::mul(a, b));
  auto [ct_a, ct_b] = pullback(std::pair{F64({1.0, 1.0}), F64({1.0, 10.0})});
  ExpectNear(ct_a, F64({4.0, 51.0}));
  ExpectNear(ct_b, F64({1.0, 20.0}));
  // When every known output is forwarded the known program does not run at all: only the
  // backward pass is compiled.
  auto swap = jit([](const Array& u, const Array& v) { return std::pair{v, u}; });
  auto loss = [&](const Array& u, const Array& v) {
    auto [s, t] = swap(u, v);
    return jnp::sum(lax::add(s, lax::mul(t, 2.0)));
  };
  const Work before = Work::Now();
  auto [ga, gb] = grad(loss, argnums{0, 1})(a, b);
  ExpectNear(ga, F64({2.0, 2.0}));
  ExpectNear(gb, F64({1.0, 1.0}));
  EXPECT_EQ((Work::Now() - before).executables, 1);
}

TEST(JitTransformCacheTest, VjpAndJvpOfJitAreCached) {
  auto f = [](const Array& x) { return lax::mul(lax::exp(x), lax::sin(x)); };
  auto jf = jit(f);
  const Array x = F64({0.1, 0.7, -1.5}), t = F64({1.0, 2.0, 3.0});
  for (int call = 0; call < 2; ++call) {
    const Work before = Work::Now();
    auto [y, pullback] = vjp(jf, x);
    const Array ct = std::get<0>(pullback(t));
    auto [y2, y_dot] = jvp(jf, std::tuple{x}, std::tuple{t});
    const Work d = Work::Now() - before;
    if (call == 1) {
      EXPECT_TRUE(d.none()) << d;
    }
    ExpectNear(y, f(x));
    ExpectNear(y2, f(x));
    const Array df = lax::add(lax::mul(lax::exp(x), lax::sin(x)), lax::mul(lax::exp(x), lax::cos(x)));
    ExpectNear(ct, lax::mul(df, t));
    ExpectNear(y_dot, lax::mul(df, t));
  }
}

TEST(JitTransformCacheTest, VmapOfJitIsCachedPerAxesAndAvals) {
  auto f = [](const Array& w, const Array& x) { return lax::tanh(jnp::matmul(x, w)); };
  auto jf = jit(f);
  const Array w = Range64(12, 0.1).reshape({4, 3});
  const Array xs = Range64(24, 0.05).reshape({6, 4});  // 6 examples of f64[4]
  auto rows = vmap(jf, in_axes{none, 0});
  auto cols = vmap(jf, in_axes{none, 1});
  const Array xt = jnp::transpose(xs);
  const Work before = Work::Now();
  const Array by_rows = rows(w, xs);
  const Array by_cols = cols(w, xt);  // same avals per example, batch dimension elsewhere
  const Work first = Work::Now() - before;
  EXPECT_EQ(first.batch, 2) << first;
  for (int i = 0; i < 6; ++i) {
    ExpectNear(by_rows[i], f(w, xs[i]));
    ExpectNear(by_cols[i], f(w, xs[i]));
  }
  const Work mid = Work::Now();
  rows(w, lax::mul(xs, 2.0));
  cols(w, lax::mul(xt, 2.0));
  EXPECT_TRUE((Work::Now() - mid).none()) << (Work::Now() - mid);
  // A new batch size is a new batched program.
  const Work later = Work::Now();
  ExpectNear(rows(w, xs.reshape({3, 2, 4})[0])[1], f(w, xs[1]));
  EXPECT_EQ((Work::Now() - later).batch, 1);
}

TEST(JitTransformCacheTest, JitInsideLoopBodiesIsCachedUnderTransforms) {
  auto cell = jit([](const Array& h, const Array& x) { return lax::tanh(lax::add(lax::mul(h, 0.5), x)); });
  auto rnn = [&](const Array& xs) {
    auto [h, hs] = lax::scan(
        [&](const Array& c, const Array& x) {
          const Array next = cell(c, x);
          return std::pair{next, next};
        },
        jnp::zeros({3}, float64), xs);
    return jnp::sum(hs);
  };
  auto loop = [&](const Array& x) {
    return jnp::sum(lax::fori_loop(
        0, 4, [&](const Array&, const Array& c) { return cell(c, x); }, x));
  };
  const Array xs = Range64(12, 0.1).reshape({4, 3});
  const Array batch = Range64(24, 0.1).reshape({2, 4, 3});
  auto unjitted_cell = [](const Array& h, const Array& x) { return lax::tanh(lax::add(lax::mul(h, 0.5), x)); };
  auto rnn_eager = [&](const Array& v) {
    auto [h, hs] = lax::scan(
        [&](const Array& c, const Array& x) {
          const Array next = unjitted_cell(c, x);
          return std::pair{next, next};
        },
        jnp::zeros({3}, float64), v);
    return jnp::sum(hs);
  };
  // while: the state grows by 1 + cell / 2 (at least 0.5) per step until its first element
  // reaches 2.
  auto until = [](auto step) {
    return [step](const Array& x) {
      return lax::while_loop(
          [](const Array& c) { return lax::lt(c[0], Array(2.0)); },
          [&step, x](const Array& c) { return lax::add(c, lax::add(lax::mul(step(c, x), 0.5), 1.0)); }, x);
    };
  };
  auto run = [&] {
    ExpectNear(vmap(until(cell))(xs), vmap(until(unjitted_cell))(xs));
    ExpectNear(jvp(until(cell), std::tuple{xs[1]}, std::tuple{xs[2]}).second,
               jvp(until(unjitted_cell), std::tuple{xs[1]}, std::tuple{xs[2]}).second);
    ExpectNear(grad(rnn)(xs), grad(rnn_eager)(xs));
    ExpectNear(vmap(rnn)(batch)[1], rnn_eager(batch[1]));
    ExpectNear(grad(loop)(xs[0]), grad([&](const Array& x) {
                 return jnp::sum(lax::fori_loop(
                     0, 4, [&](const Array&, const Array& c) { return unjitted_cell(c, x); }, x));
               })(xs[0]));
  };
  run();
  const jit_internal::JitTransformCacheStats before = jit_internal::GetJitTransformCacheStats();
  const Work work_before = Work::Now();
  run();
  const Work work = Work::Now() - work_before;
  const jit_internal::JitTransformCacheStats after = jit_internal::GetJitTransformCacheStats();
  // The loops retrace their bodies per call; the jit equation inside finds its transforms,
  // and their executables (run once per iteration) are neither lowered nor compiled again.
  EXPECT_TRUE(work.none()) << work;
  EXPECT_GT(after.jvp.hits + after.batch.hits, before.jvp.hits + before.batch.hits);
  EXPECT_EQ(cell.num_traces(), 1u);
}

// A jit that closes over another transformation's tracer passes it as an argument: its
// jaxpr (and so every transform of it) holds no tracer, and is never reused after that
// transformation ends: the jit object is not cached, and its transforms die with it.
TEST(JitTransformCacheTest, ClosuresOverTracersNeitherLeakNorAccumulate) {
  auto per_scale = [](const Array& s) {
    auto scaled = jit([s](const Array& y) { return jnp::sum(lax::sin(lax::mul(y, s))); });
    return grad(scaled)(F64({0.5, 1.5}));
  };
  const Array scales = F64({1.0, 2.0, 3.0});
  auto want = [&](int i) { return lax::mul(lax::cos(lax::mul(F64({0.5, 1.5}), scales[i])), scales[i]); };
  const Array a = vmap(per_scale)(scales);
  for (int i = 0; i < 3; ++i) ExpectNear(a[i], want(i));
  const jit_internal::JitTransformCacheStats mid = jit_internal::GetJitTransformCacheStats();
  const Array b = vmap(per_scale)(scales);
  for (int i = 0; i < 3; ++i) ExpectNear(b[i], want(i));
  const jit_internal::JitTransformCacheStats after = jit_internal::GetJitTransformCacheStats();
  // A fresh jit object per call: its jaxpr is new, so it is transformed again, and the
  // previous call's entries (whose jaxpr died) were swept, not accumulated.
  EXPECT_EQ(after.jvp.misses, mid.jvp.misses + 1);
  EXPECT_LE(after.jvp.entries, mid.jvp.entries);
  EXPECT_LE(after.transpose.entries, mid.transpose.entries);
}

TEST(JitTransformCacheTest, EntriesDieWithTheirJaxprs) {
  const Array x = F64({0.25, 0.5});
  auto make_and_grad = [&](int k) {
    auto jf = jit([k](const Array& y) { return jnp::sum(lax::mul(lax::exp(y), static_cast<double>(k))); });
    ExpectNear(grad(jf)(x), lax::mul(lax::exp(x), static_cast<double>(k)));
  };
  make_and_grad(0);
  const jit_internal::JitTransformCacheStats before = jit_internal::GetJitTransformCacheStats();
  const JaxprCacheStats exe_before = jit_internal::GetJitExecutableCacheStats();
  for (int k = 1; k <= 50; ++k) make_and_grad(k);
  const jit_internal::JitTransformCacheStats after = jit_internal::GetJitTransformCacheStats();
  const JaxprCacheStats exe_after = jit_internal::GetJitExecutableCacheStats();
  EXPECT_EQ(after.jvp.misses, before.jvp.misses + 50);
  // Each dead jit's entries are swept by the next insert: at most the last one's remain.
  EXPECT_LE(after.jvp.entries, before.jvp.entries + 1);
  EXPECT_LE(after.partial_eval.entries, before.partial_eval.entries + 1);
  EXPECT_LE(after.transpose.entries, before.transpose.entries + 1);
  // The executables are keyed on the transformed jaxprs, which die with those entries.
  EXPECT_LE(exe_after.entries, exe_before.entries + 4);
}

TEST(JitTransformCacheTest, ConcurrentTransformsShareTheCaches) {
  auto g = grad(jit(LayerLoss));
  const Layer p = MakeLayer(4, 1.0);
  const Array x = Range64(12, 1.0).reshape({3, 4});
  const std::vector<double> want = grad(LayerLoss)(p, x).w.to_vector<double>();
  std::vector<std::thread> threads;
  std::vector<int> ok(4, 0);
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      auto mine = g;  // copies share the jit object's cache, and the transform caches are global
      for (int i = 0; i < 50; ++i) {
        const std::vector<double> got = mine(p, x).w.to_vector<double>();
        bool same = got.size() == want.size();
        for (size_t k = 0; same && k < got.size(); ++k)
          same = std::abs(got[k] - want[k]) <= 1e-12 * (1 + std::abs(want[k]));
        ok[t] += same ? 1 : 0;
      }
    });
  }
  for (std::thread& t : threads) t.join();
  for (int t = 0; t < 4; ++t) EXPECT_EQ(ok[t], 50);
}

// jax.clear_caches(): the next call of a jit object, and of a transformation of it, traces,
// transforms and compiles again, with the same results; what the caller holds stays valid.
TEST(JitTransformCacheTest, ClearCachesMakesEveryCallTraceTransformAndCompileAgain) {
  auto jf = jit(LayerLoss);
  auto g = grad(jf);
  const Layer p = MakeLayer(4, 1.0);
  const Array x = Range64(12, 1.0).reshape({3, 4});
  const Array loss = jf(p, x);
  const Layer dp = g(p, x);
  const std::shared_ptr<const Executable> held =
      cpu_device::LowerForCpu(make_jaxpr(LayerLoss)(p, x), {.name = "held"}, *devices().front())->Compile();

  clear_caches();
  const Work before = Work::Now();
  ExpectNear(jf(p, x), loss);
  EXPECT_EQ(jf.num_traces(), 2u);
  const Layer again = g(p, x);
  ExpectNear(again.w, dp.w);
  ExpectNear(again.b, dp.b);
  const Work d = Work::Now() - before;
  EXPECT_EQ(d.jvp, 1) << d;
  EXPECT_EQ(d.partial_eval, 1) << d;
  EXPECT_EQ(d.transpose, 1) << d;
  EXPECT_EQ(d.executables, 2) << d;
  EXPECT_GE(d.compiles, 3) << d;  // jf's program and the two of grad's split
  // A program the caller kept still runs.
  std::vector<Array> leaves = {p.w, p.b, x};
  ExpectNear(held->Execute(leaves).at(0), loss);
}

}  // namespace
}  // namespace jx::jit_transform_cache_test
