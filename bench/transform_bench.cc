// Tracing and transformation cost per equation, at 1k, 10k and 100k equations: staging
// (make_jaxpr), jvp, vmap and grad (linearize + transpose) of a straight-line program, each
// traced into a jaxpr so only the transformation runs (no kernels). The summary prints the
// cost per equation and its growth from 1k to 100k (1.0 = linear).
//
// Also: grad of an MLP loss (784-512-512-10, tanh, softmax cross-entropy, batch 128) run
// eagerly, with the ratio to the same forward pass alone.
//
// And transformations of jit per call, for one small MLP layer (x f32[32,128], tanh(x w + b),
// squared-sum loss): grad(jit(f)) and vmap(jit(f)) reuse the transformed jaxprs and their
// executables, so a call should cost about what jit(grad(f)) / jit(vmap(f)) costs. The summary
// prints the ratios (filter with --benchmark_filter=Layer to run only these).
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <new>
#include <string>
#include <vector>

#include <jx/jx.h>

#include "mlp_model.h"
#include "chain_program.h"

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

using chain::Chain;

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

// ----- Transformations of jit, per call, on one MLP layer -----

struct Layer {
  BOOST_HANA_DEFINE_STRUCT(Layer, (Array, w), (Array, b));
};

Array LayerLoss(const Layer& p, const Array& x) {
  const Array h = lax::tanh(mlp::Dense(x, p.w, p.b));
  return lax::reduce_sum(lax::mul(h, h), {0, 1});
}

struct LayerData {
  Layer params;
  Array x, xs;  // xs: a batch of 8 inputs for vmap
};

const LayerData& Layer128() {
  static const LayerData d = [] {
    auto keys = jx::random::split(jx::random::key(1), 3);
    Layer p{lax::mul(jx::random::normal(keys[0], {128, 128}), Array::Scalar(1.0 / std::sqrt(128.0), jx::float32)),
            jnp::zeros({128})};
    return LayerData{p, jx::random::normal(keys[1], {32, 128}), jx::random::normal(keys[2], {8, 32, 128})};
  }();
  return d;
}

template <typename F>
void RunLayer(benchmark::State& state, F f) {
  benchmark::DoNotOptimize(f());  // traces and compiles outside the timed loop
  for (auto _ : state) benchmark::DoNotOptimize(f());
}

void BM_LayerGradOfJit(benchmark::State& state) {
  const LayerData& d = Layer128();
  auto g = jx::grad(jx::jit(LayerLoss));
  RunLayer(state, [&] { return g(d.params, d.x); });
}
void BM_LayerJitOfGrad(benchmark::State& state) {
  const LayerData& d = Layer128();
  auto g = jx::jit(jx::grad(LayerLoss));
  RunLayer(state, [&] { return g(d.params, d.x); });
}
void BM_LayerGradEager(benchmark::State& state) {
  const LayerData& d = Layer128();
  auto g = jx::value_and_grad(LayerLoss);
  RunLayer(state, [&] { return g(d.params, d.x); });
}
void BM_LayerVmapOfJit(benchmark::State& state) {
  const LayerData& d = Layer128();
  auto f = jx::vmap(jx::jit(LayerLoss), jx::in_axes{jx::none, 0});
  RunLayer(state, [&] { return f(d.params, d.xs); });
}
void BM_LayerJitOfVmap(benchmark::State& state) {
  const LayerData& d = Layer128();
  auto f = jx::jit(jx::vmap(LayerLoss, jx::in_axes{jx::none, 0}));
  RunLayer(state, [&] { return f(d.params, d.xs); });
}
// Repeated, interleaved at random (main turns that on) and summarized by the best
// repetition, so the ratios compare runs that shared the machine's state. CPU time is the
// whole process's (the programs' worker threads included): on a loaded machine it is the
// steadier measure; with JX_NUM_THREADS=1 it is the work done per call.
BENCHMARK(BM_LayerGradOfJit)->Unit(benchmark::kMicrosecond)->MeasureProcessCPUTime()->UseRealTime()->Repetitions(5);
BENCHMARK(BM_LayerJitOfGrad)->Unit(benchmark::kMicrosecond)->MeasureProcessCPUTime()->UseRealTime()->Repetitions(5);
BENCHMARK(BM_LayerGradEager)->Unit(benchmark::kMicrosecond)->MeasureProcessCPUTime()->UseRealTime()->Repetitions(5);
BENCHMARK(BM_LayerVmapOfJit)->Unit(benchmark::kMicrosecond)->MeasureProcessCPUTime()->UseRealTime()->Repetitions(5);
BENCHMARK(BM_LayerJitOfVmap)->Unit(benchmark::kMicrosecond)->MeasureProcessCPUTime()->UseRealTime()->Repetitions(5);

class SummaryReporter : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    for (const Run& r : runs) {
      if (r.run_type != Run::RT_Iteration) continue;
      const double ms = r.GetAdjustedRealTime();  // in the benchmark's unit (ms)
      times_[r.benchmark_name()] = ms;
      if (auto it = r.counters.find("news_per_eqn"); it != r.counters.end()) news_[r.benchmark_name()] = it->second;
      // Repeated benchmarks: the best repetition, in microseconds, of wall and CPU time.
      const std::string& fn = r.run_name.function_name;
      if (r.repetitions > 1) {
        for (auto [best, t] : {std::pair{&best_us_, ms}, std::pair{&best_cpu_us_, r.GetAdjustedCPUTime()}}) {
          auto [it, fresh] = best->try_emplace(fn, t);
          if (!fresh) it->second = std::min(it->second, t);
        }
      }
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
    auto ratio = [&](const char* label, const char* a, const char* b) {
      auto x = best_us_.find(a), y = best_us_.find(b);
      auto cx = best_cpu_us_.find(a), cy = best_cpu_us_.find(b);
      if (x == best_us_.end() || y == best_us_.end()) return;
      std::printf("  %s: %.2f wall (%.1f vs %.1f us), %.2f CPU (%.1f vs %.1f us); best of the repetitions\n", label,
                  x->second / y->second, x->second, y->second, cx->second / cy->second, cx->second, cy->second);
    };
    ratio("layer grad(jit(f)) / jit(grad(f))", "BM_LayerGradOfJit", "BM_LayerJitOfGrad");
    ratio("layer value_and_grad eager / jit(grad(f))", "BM_LayerGradEager", "BM_LayerJitOfGrad");
    ratio("layer grad(jit(f)) / value_and_grad eager", "BM_LayerGradOfJit", "BM_LayerGradEager");
    ratio("layer vmap(jit(f)) / jit(vmap(f))", "BM_LayerVmapOfJit", "BM_LayerJitOfVmap");
  }

 private:
  std::map<std::string, double> times_;
  std::map<std::string, double> news_;
  std::map<std::string, double> best_us_, best_cpu_us_;
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
  // Repetitions of different benchmarks interleaved, so a ratio is not skewed by a burst of
  // other work on the machine during one of them.
  std::vector<char*> args(argv, argv + argc);
  char interleave[] = "--benchmark_enable_random_interleaving=true";
  args.insert(args.begin() + 1, interleave);
  argc = static_cast<int>(args.size());
  argv = args.data();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  SummaryReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  reporter.Summarize();
  benchmark::Shutdown();
  return 0;
}
