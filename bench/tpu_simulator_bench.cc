// The simulated TPU chip's speed, as ratios measured in one run:
//   - simulated chip-seconds per host second for a matmul-heavy program (an f32 MLP forward,
//     128 x 1024 -> 4096 -> 1024, DEFAULT precision: the chip computes the bf16 MXU passes on
//     the host) and a fusion-heavy one (a 48-op elementwise chain over f32[1024,1024]): how
//     much faster (> 1) or slower (< 1) than a real v5e the simulator runs;
//   - the simulator's overhead per executable launch: host time per call of a tiny program
//     (f32[8] + 1) on a chip over the same call on the host CPU device (the chip adds the
//     committed-argument checks, the clock step and the HBM accounting).
#include <benchmark/benchmark.h>

#include <chrono>
#include <cmath>

#include <jx/jx.h>

namespace {

using jx::Array;
namespace jnp = jx::numpy;

const jx::tpu::TpuChip& Chip() {
  static const auto* chip = static_cast<const jx::tpu::TpuChip*>(jx::tpu::make_pod("v5e", {1, 1}).devices()[0]);
  return *chip;
}

double HostSeconds(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
}

// Runs step(args...) once per iteration on the chip and reports simulated chip-seconds per
// host second (host time includes computing the numbers on the host).
template <typename F, typename... Args>
void ChipSecondsPerHostSecond(benchmark::State& state, F step, const Args&... args) {
  step(args...);  // compile (execution is synchronous: a call returns computed arrays)
  const double chip_before = Chip().activity().now_seconds;
  const auto start = std::chrono::steady_clock::now();
  for (auto _ : state) benchmark::DoNotOptimize(step(args...));
  const double host = HostSeconds(start), chip = Chip().activity().now_seconds - chip_before;
  state.counters["chip_s_per_host_s"] = chip / host;
}

void BM_MatmulHeavyMlp(benchmark::State& state) {
  const Array keys = jx::random::split(jx::random::key(0), 3);
  const jx::Device* chip = &Chip();
  const Array x = jx::device_put(jx::random::normal(keys[0], {128, 1024}), chip);
  const Array w1 = jx::device_put(jx::random::normal(keys[1], {1024, 4096}) * (1 / 32.0), chip);
  const Array w2 = jx::device_put(jx::random::normal(keys[2], {4096, 1024}) * (1 / 64.0), chip);
  auto mlp = jx::jit([](const Array& x, const Array& w1, const Array& w2) {
    return jnp::matmul(jnp::tanh(jnp::matmul(x, w1)), w2);
  }, jx::name{"mlp"});
  ChipSecondsPerHostSecond(state, mlp, x, w1, w2);
}
BENCHMARK(BM_MatmulHeavyMlp)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(5);

void BM_FusionHeavyChain(benchmark::State& state) {
  const Array x = jx::device_put(jx::random::normal(jx::random::key(1), {1024, 1024}), &Chip());
  auto chain = jx::jit([](const Array& x) {
    Array y = x;
    for (int i = 0; i < 16; ++i) y = jnp::tanh(y * 1.01f + 0.5f);  // 3 ops per round
    return y;
  }, jx::name{"chain"});
  ChipSecondsPerHostSecond(state, chain, x);
}
BENCHMARK(BM_FusionHeavyChain)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(10);

// Host time per call on the chip over host time per call on the CPU device, and the tiny
// program's chip-seconds per host second (dominated by the per-launch overhead: 0.7 us of
// simulated kernel overhead against microseconds of host dispatch).
void BM_LaunchOverhead(benchmark::State& state) {
  const Array host_x = jnp::arange(8, jx::float32);
  const Array chip_x = jx::device_put(host_x, &Chip());
  auto tiny = jx::jit([](const Array& x) { return x + 1.0f; }, jx::name{"tiny"});
  tiny(host_x);
  tiny(chip_x);
  constexpr int kCalls = 2000;
  double cpu_seconds = 0, chip_seconds = 0, simulated = 0;
  for (auto _ : state) {
    auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < kCalls; ++i) benchmark::DoNotOptimize(tiny(host_x));
    cpu_seconds += HostSeconds(start);
    const double chip_before = Chip().activity().now_seconds;
    start = std::chrono::steady_clock::now();
    for (int i = 0; i < kCalls; ++i) benchmark::DoNotOptimize(tiny(chip_x));
    chip_seconds += HostSeconds(start);
    simulated += Chip().activity().now_seconds - chip_before;
  }
  state.counters["chip_call_over_cpu_call"] = chip_seconds / cpu_seconds;
  state.counters["tiny_chip_s_per_host_s"] = simulated / chip_seconds;
}
BENCHMARK(BM_LaunchOverhead)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(3);

}  // namespace

BENCHMARK_MAIN();
