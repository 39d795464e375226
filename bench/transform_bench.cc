// Tracing and transformation cost per equation, at 1k, 10k and 100k equations: staging
// (make_jaxpr), jvp, vmap and grad (linearize + transpose) of a straight-line program, each
// traced into a jaxpr so only the transformation runs (no kernels). The summary prints the
// cost per equation and its growth from 1k to 100k (1.0 = linear).
//
// Also: grad of an MLP loss (784-512-512-10, tanh, softmax cross-entropy, batch 128) run
// eagerly, with the ratio to the same forward pass alone.
#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstdlib>
#include <new>
#include <map>
#include <string>

#include <jx/jx.h>

#include "mlp_model.h"

// Counts operator new calls (allocations are most of tracing's work per equation), so the
// summary can show the work per equation stays constant while time per equation drifts with
// the working set's size.
// Thread-local: a locked increment per allocation would itself show in the timings (tracing
// runs on the benchmark's thread).
thread_local int64_t g_news = 0;

namespace {

using jx::Array;
namespace lax = jx::lax;
namespace jnp = jx::numpy;
using mlp::Data;
using mlp::Loss;
using mlp::MlpData;

// n equations: alternating sin and mul on an f32[8].
Array Chain(const Array& x, int64_t n) {
  Array y = x;
  for (int64_t i = 0; i < n; i += 2) {
    y = lax::sin(y);
    y = lax::mul(y, x);
  }
  return y;
}

template <typename Make>
void RunPerEquation(benchmark::State& state, Make make) {
  const int64_t n = state.range(0);
  const Array x = jnp::ones({8});
  const int64_t news_before = g_news;
  for (auto _ : state) benchmark::DoNotOptimize(make(x, n));
  const int64_t news = g_news - news_before;
  state.counters["ns_per_eqn"] =
      benchmark::Counter(static_cast<double>(n), benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
  // Work per equation, independent of caches: heap allocations (operator new calls).
  state.counters["news_per_eqn"] = static_cast<double>(news) / static_cast<double>(state.iterations() * n);
}

void BM_TraceStaging(benchmark::State& state) {
  RunPerEquation(state, [](const Array& x, int64_t n) {
    return jx::make_jaxpr([n](const Array& v) { return Chain(v, n); })(x);
  });
}
void BM_TraceJvp(benchmark::State& state) {
  RunPerEquation(state, [](const Array& x, int64_t n) {
    return jx::make_jaxpr([n](const Array& v) {
      return jx::jvp([n](const Array& u) { return Chain(u, n); }, std::tuple{v}, std::tuple{v}).second;
    })(x);
  });
}
void BM_TraceVmap(benchmark::State& state) {
  RunPerEquation(state, [](const Array& x, int64_t n) {
    return jx::make_jaxpr([n](const Array& v) { return jx::vmap([n](const Array& u) { return Chain(u, n); })(v); })(
        jnp::ones({4, 8}));
  });
}
void BM_TraceGrad(benchmark::State& state) {
  RunPerEquation(state, [](const Array& x, int64_t n) {
    return jx::make_jaxpr(jx::grad([n](const Array& u) { return lax::reduce_sum(Chain(u, n), {0}); }))(x);
  });
}
#define EQN_SIZES Arg(1000)->Arg(10000)->Arg(100000)->Unit(benchmark::kMillisecond)
BENCHMARK(BM_TraceStaging)->EQN_SIZES;
BENCHMARK(BM_TraceJvp)->EQN_SIZES;
BENCHMARK(BM_TraceVmap)->EQN_SIZES;
BENCHMARK(BM_TraceGrad)->EQN_SIZES;

// ----- MLP loss and its gradient, eager (the model: mlp_model.h) -----

void BM_MlpLossForward(benchmark::State& state) {
  const MlpData& d = Data();
  for (auto _ : state) benchmark::DoNotOptimize(Loss(d.params, d.x, d.onehot));
}
void BM_MlpLossGrad(benchmark::State& state) {
  const MlpData& d = Data();
  auto g = jx::value_and_grad(Loss);
  for (auto _ : state) benchmark::DoNotOptimize(g(d.params, d.x, d.onehot));
}
BENCHMARK(BM_MlpLossForward)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_MlpLossGrad)->Unit(benchmark::kMillisecond)->UseRealTime();

class SummaryReporter : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    for (const Run& r : runs) {
      if (r.run_type != Run::RT_Iteration) continue;
      const double ms = r.GetAdjustedRealTime();  // in the benchmark's unit (ms)
      times_[r.benchmark_name()] = ms;
      if (auto it = r.counters.find("news_per_eqn"); it != r.counters.end()) news_[r.benchmark_name()] = it->second;
    }
    ConsoleReporter::ReportRuns(runs);
  }
  void Summarize() const {
    std::printf("\nSummary (per-equation cost; growth = per-eqn cost at 100k / at 1k, 1.0 is linear):\n");
    for (const char* name : {"BM_TraceStaging", "BM_TraceJvp", "BM_TraceVmap", "BM_TraceGrad"}) {
      auto at = [&](int n) {
        auto it = times_.find(std::string(name) + "/" + std::to_string(n));
        return it == times_.end() ? -1.0 : it->second * 1e6 / n;  // ns per equation
      };
      auto news = [&](int n) {
        auto it = news_.find(std::string(name) + "/" + std::to_string(n));
        return it == news_.end() ? -1.0 : it->second;
      };
      const double a = at(1000), b = at(10000), c = at(100000);
      if (a <= 0 || c <= 0) continue;
      std::printf("  %-16s %7.0f ns/eqn at 1k, %7.0f at 10k, %7.0f at 100k: growth %.2f (10k->100k %.2f); "
                  "allocations/eqn %.2f, %.2f, %.2f\n",
                  name + 3, a, b, c, c / a, c / b, news(1000), news(10000), news(100000));
    }
    auto f = times_.find("BM_MlpLossForward/real_time"), g = times_.find("BM_MlpLossGrad/real_time");
    if (f != times_.end() && g != times_.end()) {
      std::printf("  MLP 784-512-512-10 batch 128: value_and_grad / forward = %.2f (%.2f ms vs %.2f ms)\n",
                  g->second / f->second, g->second, f->second);
    }
  }

 private:
  std::map<std::string, double> times_;
  std::map<std::string, double> news_;
};

}  // namespace

void* operator new(size_t size) {
  ++g_news;
  if (void* p = std::malloc(size == 0 ? 1 : size)) return p;
  throw std::bad_alloc();
}
// GCC cannot see that operator new above is malloc.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, size_t) noexcept { std::free(p); }
#pragma GCC diagnostic pop

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  SummaryReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  reporter.Summarize();
  benchmark::Shutdown();
  return 0;
}
