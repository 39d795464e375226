// jit's cache-hit path: a 3-argument function on tiny arrays, called through jit after its
// first trace. The program is one add, so the jit call is its dispatch overhead (flatten,
// signature, cache lookup, executable, unflatten) plus the same add run eagerly. Reported
// as the jit call's overhead over the eager add, in ns and in eager adds (target: under 1 us;
// JAX's C++ fast path takes 7-9 us on this kind of machine).
#include <benchmark/benchmark.h>

#include <cstdio>
#include <string>

#include <jx/jx.h>

namespace {

using jx::Array;
namespace lax = jx::lax;
namespace jnp = jx::numpy;

auto F = [](const Array& x, const Array& y, const Array& z) {
  (void)z;
  return lax::add(x, y);
};

void BM_EagerAdd3Args(benchmark::State& state) {
  const Array x = jnp::ones({4}), y = jnp::ones({4}), z = jnp::ones({4});
  for (auto _ : state) benchmark::DoNotOptimize(F(x, y, z));
}
BENCHMARK(BM_EagerAdd3Args);

void BM_JitCacheHit3Args(benchmark::State& state) {
  const Array x = jnp::ones({4}), y = jnp::ones({4}), z = jnp::ones({4});
  auto jf = jx::jit(F);
  jf(x, y, z);  // trace once
  for (auto _ : state) benchmark::DoNotOptimize(jf(x, y, z));
}
BENCHMARK(BM_JitCacheHit3Args);

class RatioReporter : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    for (const Run& r : runs) {
      const double ns = r.GetAdjustedRealTime();  // default unit: ns
      if (r.benchmark_name().find("Eager") != std::string::npos) eager_ = ns;
      if (r.benchmark_name().find("Jit") != std::string::npos) jit_ = ns;
    }
    ConsoleReporter::ReportRuns(runs);
  }
  void Finalize() override {
    ConsoleReporter::Finalize();
    if (eager_ > 0 && jit_ > 0) {
      std::printf("\njit cache hit, 3 arguments, f32[4]: overhead over the eager add %.0f ns (%.2f eager adds; "
                  "jit call / eager call = %.2f)\n",
                  jit_ - eager_, (jit_ - eager_) / eager_, jit_ / eager_);
    }
  }

 private:
  double eager_ = 0, jit_ = 0;
};

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  RatioReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  benchmark::Shutdown();
  return 0;
}
