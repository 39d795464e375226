// x.at[i].set(v) under jit on a 16 MiB array: with x donated the update is a
// dynamic-update-slice written into x's own memory (O(1) work per step); without donation the
// program must first copy x into a fresh output (O(n)). An integer-array index lowers to a
// scatter, which also runs in place when x is donated (or dead) and copies x otherwise.
// Reports the ratios: copy / in place for both, and scatter / dynamic-update-slice in place.
#include <benchmark/benchmark.h>

#include <cstdio>
#include <map>
#include <string>

#include <jx/jx.h>

namespace {

using jx::Array;
namespace jnp = jx::numpy;

constexpr int64_t kN = 4 << 20;  // f32[4M] = 16 MiB

auto SetOne = [](const Array& x, const Array& i, const Array& v) { return x.at(i).set(v); };

void BM_AtSetDonated(benchmark::State& state) {
  auto step = jx::jit(SetOne, jx::donate_argnums{0});
  Array x = jnp::zeros({kN});
  const Array i = Array::Scalar(7, jx::int32), v = Array(1.f);
  for (auto _ : state) x = step(x, i, v);
  benchmark::DoNotOptimize(x.data());
}
BENCHMARK(BM_AtSetDonated);

void BM_AtSetNotDonated(benchmark::State& state) {
  auto step = jx::jit(SetOne);
  Array x = jnp::zeros({kN});
  const Array i = Array::Scalar(7, jx::int32), v = Array(1.f);
  for (auto _ : state) x = step(x, i, v);
  benchmark::DoNotOptimize(x.data());
}
BENCHMARK(BM_AtSetNotDonated);

void BM_AtSetArrayIndexScatter(benchmark::State& state) {
  auto step = jx::jit([](const Array& x, const Array& i, const Array& v) { return x.at(i).set(v); },
                      jx::donate_argnums{0});
  Array x = jnp::zeros({kN});
  const Array i = jnp::array({7, 9}), v = jnp::ones({2});
  for (auto _ : state) x = step(x, i, v);
  benchmark::DoNotOptimize(x.data());
}
BENCHMARK(BM_AtSetArrayIndexScatter);

void BM_AtSetArrayIndexScatterNotDonated(benchmark::State& state) {
  auto step = jx::jit([](const Array& x, const Array& i, const Array& v) { return x.at(i).set(v); });
  Array x = jnp::zeros({kN});
  const Array i = jnp::array({7, 9}), v = jnp::ones({2});
  for (auto _ : state) x = step(x, i, v);
  benchmark::DoNotOptimize(x.data());
}
BENCHMARK(BM_AtSetArrayIndexScatterNotDonated);

class RatioReporter : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    for (const Run& r : runs) ns_[r.benchmark_name()] = r.GetAdjustedRealTime();
    ConsoleReporter::ReportRuns(runs);
  }
  void Finalize() override {
    ConsoleReporter::Finalize();
    const double donated = ns_["BM_AtSetDonated"], copied = ns_["BM_AtSetNotDonated"];
    const double scatter = ns_["BM_AtSetArrayIndexScatter"];
    const double scatter_copied = ns_["BM_AtSetArrayIndexScatterNotDonated"];
    if (donated > 0 && copied > 0 && scatter > 0 && scatter_copied > 0) {
      std::printf("\njit x.at[i].set(v), f32[4M]: dynamic-update-slice not donated / donated = %.1fx; "
                  "scatter (array index) not donated / donated = %.1fx; scatter / dynamic-update-slice, "
                  "both donated = %.1fx\n",
                  copied / donated, scatter_copied / scatter, scatter / donated);
    }
  }

 private:
  std::map<std::string, double> ns_;
};

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  RatioReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  benchmark::Shutdown();
  return 0;
}
