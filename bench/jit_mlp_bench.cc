// jit on the workloads, as ratios measured in one run (2 threads):
//   - compile time of jit(value_and_grad(mlp_loss)) for the 784-512-512-10 tanh MLP (trace,
//     lower, every pass, executable; target under 20 ms);
//   - one SGD training step (value_and_grad + update), jit vs eager, and as a multiple of
//     the same step's GEMMs run back to back (the bound the issue names, about 2 ms here);
//   - per-example gradients jit(vmap(grad(loss), in_axes{none, 0})) at batch 128 (target
//     under 40 ms);
//   - compile time per equation of an elementwise chain at 1k, 10k and 100k equations
//     (linear growth: the per-equation cost should stay flat).
// The PyTorch peer for the step is bench/peers/torch_peer.py (run it beside this program).
#include <benchmark/benchmark.h>

#include <cstdio>
#include <map>
#include <string>

#include <jx/jx.h>

#include "mlp_model.h"

namespace {

using jx::Array;
using mlp::Mlp;
namespace lax = jx::lax;
namespace jnp = jx::numpy;

// A step scaled by a static learning rate: each benchmark iteration may pick a new rate, so
// the compile benchmarks never hit the program cache.
Mlp SgdStep(const Mlp& p, const Array& x, const Array& onehot, double lr) {
  auto [loss, g] = jx::value_and_grad(mlp::Loss)(p, x, onehot);
  (void)loss;
  auto upd = [lr](const Array& w, const Array& dw) { return w - dw * lr; };
  return Mlp{upd(p.w1, g.w1), upd(p.b1, g.b1), upd(p.w2, g.w2), upd(p.b2, g.b2), upd(p.w3, g.w3), upd(p.b3, g.b3)};
}

void BM_CompileValueAndGradMlp(benchmark::State& state) {
  const mlp::MlpData& d = mlp::Data();
  int64_t salt = 0;
  for (auto _ : state) {
    // A different static value per iteration (a different constant in the program): a new
    // trace and a new program each time, never a program-cache hit.
    auto f = jx::jit([](const Mlp& p, const Array& x, const Array& y, int64_t s) {
      return jx::value_and_grad(mlp::Loss)(p, x, y * static_cast<double>(s + 1));
    }, jx::static_argnums{3});
    benchmark::DoNotOptimize(f.lower(d.params, d.x, d.onehot, ++salt).compile());
  }
}
BENCHMARK(BM_CompileValueAndGradMlp)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_TrainStepEager(benchmark::State& state) {
  const mlp::MlpData& d = mlp::Data();
  for (auto _ : state) benchmark::DoNotOptimize(SgdStep(d.params, d.x, d.onehot, 0.01));
}
void BM_TrainStepJit(benchmark::State& state) {
  const mlp::MlpData& d = mlp::Data();
  auto step = jx::jit(SgdStep, jx::static_argnums{3});
  step(d.params, d.x, d.onehot, 0.01);  // compile
  for (auto _ : state) benchmark::DoNotOptimize(step(d.params, d.x, d.onehot, 0.01));
}
// The step as a training loop runs it in JAX: the parameters donated, so the update is
// written into their memory and the next step reads the result.
void BM_TrainStepJitDonated(benchmark::State& state) {
  const mlp::MlpData& d = mlp::Data();
  auto copy = [](const Array& a) { return Array::FromData(a.data(), a.shape(), a.dtype()); };
  Mlp p{copy(d.params.w1), copy(d.params.b1), copy(d.params.w2), copy(d.params.b2), copy(d.params.w3),
        copy(d.params.b3)};
  auto step = jx::jit(SgdStep, jx::static_argnums{3}, jx::donate_argnums{0});
  p = step(p, d.x, d.onehot, 0.0);  // compile; a zero rate keeps the parameters as they are
  for (auto _ : state) {
    p = step(p, d.x, d.onehot, 0.0);
    benchmark::DoNotOptimize(p.w1.data());
  }
}
// The step's GEMMs alone: forward x@w1, h1@w2, h2@w3; backward dh@w^T for layers 3 and 2,
// and the three weight gradients h^T@dh.
void BM_TrainStepGemmsOnly(benchmark::State& state) {
  const mlp::MlpData& d = mlp::Data();
  const Array h1 = jnp::ones({128, 512}), h2 = jnp::ones({128, 512}), dl = jnp::ones({128, 10});
  auto gemms = jx::jit([](const Mlp& p, const Array& x, const Array& h1, const Array& h2, const Array& dl) {
    Array a = jnp::matmul(x, p.w1), b = jnp::matmul(h1, p.w2), c = jnp::matmul(h2, p.w3);
    Array d2 = jnp::matmul(dl, p.w3.T()), d1 = jnp::matmul(h2, p.w2.T());
    Array g3 = jnp::matmul(h2.T(), dl), g2 = jnp::matmul(h1.T(), h2), g1 = jnp::matmul(x.T(), h1);
    return std::vector<Array>{a, b, c, d2, d1, g3, g2, g1};
  });
  gemms(d.params, d.x, h1, h2, dl);
  for (auto _ : state) benchmark::DoNotOptimize(gemms(d.params, d.x, h1, h2, dl));
}
BENCHMARK(BM_TrainStepEager)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_TrainStepJit)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_TrainStepJitDonated)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_TrainStepGemmsOnly)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_PerExampleGradsJit(benchmark::State& state) {
  const mlp::MlpData& d = mlp::Data();
  auto per_example = jx::jit(jx::vmap(jx::grad(mlp::Loss), jx::in_axes{jx::none, 0, 0}));
  // One example per row: loss of a [1, 784] batch.
  const Array xs = d.x.reshape({128, 1, 784}), ys = d.onehot.reshape({128, 1, 10});
  per_example(d.params, xs, ys);
  for (auto _ : state) benchmark::DoNotOptimize(per_example(d.params, xs, ys));
}
BENCHMARK(BM_PerExampleGradsJit)->Unit(benchmark::kMillisecond)->UseRealTime();

// Compile time of a chain of n elementwise equations (alternating ops so no pass folds it).
void BM_CompileChain(benchmark::State& state) {
  const int64_t n = state.range(0);
  const Array x = jnp::ones({256});
  int64_t salt = 0;
  for (auto _ : state) {
    auto f = jx::jit([n](const Array& x, int64_t s) {
      Array y = x * static_cast<double>(s + 1);
      for (int64_t i = 0; i < n / 2; ++i) y = lax::sin(y) * 0.5;
      return y;
    }, jx::static_argnums{1});
    benchmark::DoNotOptimize(f.lower(x, ++salt).compile());
  }
}
BENCHMARK(BM_CompileChain)->Arg(1000)->Arg(10000)->Arg(100000)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(2);

class SummaryReporter : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    for (const Run& r : runs) {
      if (r.run_type == Run::RT_Iteration) times_[r.benchmark_name()] = r.GetAdjustedRealTime();  // ms
    }
    ConsoleReporter::ReportRuns(runs);
  }
  void Summarize() const {
    auto t = [&](const std::string& name) {
      auto it = times_.find(name + "/real_time");
      if (it == times_.end()) it = times_.find(name);
      return it == times_.end() ? -1.0 : it->second;
    };
    std::printf("\nSummary (2 threads, one run):\n");
    const double compile = t("BM_CompileValueAndGradMlp");
    if (compile > 0) std::printf("  compile jit(value_and_grad(mlp)): %.1f ms (target < 20 ms)\n", compile);
    const double eager = t("BM_TrainStepEager"), jit = t("BM_TrainStepJit"), gemms = t("BM_TrainStepGemmsOnly");
    if (eager > 0 && jit > 0 && gemms > 0) {
      std::printf("  SGD step: jit %.2f ms, jit/eager = %.2f, jit / its GEMMs alone (%.2f ms) = %.2f\n", jit,
                  jit / eager, gemms, jit / gemms);
    }
    const double donated = t("BM_TrainStepJitDonated");
    if (donated > 0 && gemms > 0) {
      std::printf("  SGD step, parameters donated: %.2f ms, / its GEMMs alone = %.2f (PyTorch: bench/peers)\n",
                  donated, donated / gemms);
    }
    const double pe = t("BM_PerExampleGradsJit");
    if (pe > 0) std::printf("  per-example grads, batch 128: %.1f ms (target < 40 ms)\n", pe);
    double first = -1;
    for (int n : {1000, 10000, 100000}) {
      const double ms = t("BM_CompileChain/" + std::to_string(n) + "/iterations:2");
      if (ms <= 0) continue;
      const double us_per_eqn = ms * 1e3 / n;
      if (first < 0) first = us_per_eqn;
      std::printf("  compile chain %6d eqns: %8.1f ms, %.2f us/eqn (growth vs 1k: %.2f)\n", n, ms, us_per_eqn,
                  us_per_eqn / first);
    }
  }

 private:
  std::map<std::string, double> times_;
};

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  SummaryReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  reporter.Summarize();
  benchmark::Shutdown();
  return 0;
}
