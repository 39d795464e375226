// x.at[i].set(v) under jit on a 16 MiB array: with x donated the update is a
// dynamic-update-slice written into x's own memory (O(1) work per step); without donation the
// program must first copy x into a fresh output (O(n)). An integer-array index lowers to a
// scatter, which also runs in place when x is donated (or dead) and copies x otherwise.
// Reports the ratios: copy / in place for both, and scatter / dynamic-update-slice in place.
#include <benchmark/benchmark.h>

#include <cstdio>
#include <utility>
#include <vector>
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

// x.at[idx].apply(f) with repeated indices (JAX's scatter_apply): 65536 updates naming 256
// elements of an f32[1M] 256 times each, f = x / 2 + 1. One scatter applying f per update
// (O(updates)), eager and jitted, against the rounds-over-x form it replaced (a while loop of
// 256 passes of f over all of x where a count is still positive: O(n x repeats)).
constexpr int64_t kApplyN = 1 << 20, kApplyUpdates = 1 << 16, kApplyDistinct = 256;

Array ApplyIndices() {
  std::vector<int32_t> idx(kApplyUpdates);
  for (int64_t k = 0; k < kApplyUpdates; ++k) {
    idx[static_cast<size_t>(k)] = static_cast<int32_t>((k % kApplyDistinct) * (kApplyN / kApplyDistinct));
  }
  return Array::FromData(idx.data(), {kApplyUpdates}, jx::int32);
}
Array HalfPlusOne(const Array& e) { return e * 0.5f + 1.0f; }
auto ApplyOnce = [](const Array& x, const Array& i) { return x.at(i).apply(HalfPlusOne); };
auto ApplyByRounds = [](const Array& x, const Array& i) {
  const Array count = jnp::zeros({kApplyN}, jx::int32).at(i).add(Array(1));
  auto [out, left] = jx::lax::while_loop(
      [](const std::pair<Array, Array>& s) { return jnp::any(s.second > 0); },
      [](const std::pair<Array, Array>& s) {
        return std::pair{jnp::where(s.second > 0, HalfPlusOne(s.first), s.first), s.second - 1};
      },
      std::pair{x, count});
  return out;
};

void BM_AtApplyRepeatedEager(benchmark::State& state) {
  const Array x = jnp::zeros({kApplyN}), i = ApplyIndices();
  for (auto _ : state) benchmark::DoNotOptimize(ApplyOnce(x, i).data());
}
BENCHMARK(BM_AtApplyRepeatedEager)->Unit(benchmark::kMillisecond);

void BM_AtApplyRepeatedJit(benchmark::State& state) {
  auto step = jx::jit(ApplyOnce);
  const Array x = jnp::zeros({kApplyN}), i = ApplyIndices();
  for (auto _ : state) benchmark::DoNotOptimize(step(x, i).data());
}
BENCHMARK(BM_AtApplyRepeatedJit)->Unit(benchmark::kMillisecond);

void BM_AtApplyRoundsOverXJit(benchmark::State& state) {
  auto step = jx::jit(ApplyByRounds);
  const Array x = jnp::zeros({kApplyN}), i = ApplyIndices();
  if (!jnp::array_equal(step(x, i), jx::jit(ApplyOnce)(x, i))) state.SkipWithError("results differ");
  for (auto _ : state) benchmark::DoNotOptimize(step(x, i).data());
}
BENCHMARK(BM_AtApplyRoundsOverXJit)->Unit(benchmark::kMillisecond);

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
    const double apply_eager = ns_["BM_AtApplyRepeatedEager"], apply_jit = ns_["BM_AtApplyRepeatedJit"];
    const double rounds = ns_["BM_AtApplyRoundsOverXJit"];
    if (apply_eager > 0 && apply_jit > 0 && rounds > 0) {
      std::printf("x.at[idx].apply(f), 65536 updates x 256 repeats into f32[1M]: jit / eager = %.2f; "
                  "rounds over x / scatter_apply (both jit) = %.1fx\n",
                  apply_jit / apply_eager, rounds / apply_jit);
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
