// The simulated TPU chip's speed (issue 11's benchmarks): simulated chip-seconds per host
// second for a matmul-heavy and a fusion-heavy program on a v5e chip, and the simulator's
// overhead per executable launch (a tiny program on a chip against the same on the host CPU).
//
//   build/bench/tpu_sim_bench
//   counters: chip_s_per_host_s (simulated time / wall time), us_per_launch
#include <benchmark/benchmark.h>

#include <chrono>

#include "jx/jx.h"

namespace {

namespace jnp = jx::numpy;
using jx::Array;

const jx::tpu::TpuChip& FreshChip() {
  static const jx::tpu::Pod pod = jx::tpu::make_pod("v5e", {1, 1});
  return pod.client().chips().front().operator*();
}

// Runs f until the benchmark stops and reports simulated chip seconds per wall second.
template <typename F>
void RunOnChip(benchmark::State& state, const jx::tpu::TpuChip& chip, F f) {
  f();  // compile outside the timed loop
  const double sim_start = chip.activity().now_seconds;
  const auto wall_start = std::chrono::steady_clock::now();
  for (auto _ : state) benchmark::DoNotOptimize(f());
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
  state.counters["chip_s_per_host_s"] = (chip.activity().now_seconds - sim_start) / wall;
}

// Three 512x512 f32 matmuls per step: MXU work.
void BM_MatmulHeavy(benchmark::State& state) {
  const jx::tpu::TpuChip& chip = FreshChip();
  const Array keys = jx::random::split(jx::random::key(0), 2);
  const Array x = jx::device_put(jx::random::normal(keys[0], {512, 512}), &chip);
  const Array w = jx::device_put(jx::random::normal(keys[1], {512, 512}), &chip);
  auto step = jx::jit([](const Array& a, const Array& b) { return jnp::matmul(jnp::matmul(jnp::matmul(a, b), b), b); },
                      jx::name{"matmul_heavy"});
  RunOnChip(state, chip, [&] { return step(x, w); });
}
BENCHMARK(BM_MatmulHeavy)->Unit(benchmark::kMicrosecond);

// An elementwise and reduction chain over 1M elements: VPU and HBM work.
void BM_FusionHeavy(benchmark::State& state) {
  const jx::tpu::TpuChip& chip = FreshChip();
  const Array x = jx::device_put(jx::random::normal(jx::random::key(1), {1024, 1024}), &chip);
  auto step = jx::jit(
      [](const Array& a) {
        const Array y = jnp::tanh(a * 1.5f + 0.25f) * jnp::exp(-a * a);
        return y - jnp::mean(y, 1, /*keepdims=*/true);
      },
      jx::name{"fusion_heavy"});
  RunOnChip(state, chip, [&] { return step(x); });
}
BENCHMARK(BM_FusionHeavy)->Unit(benchmark::kMicrosecond);

// A launch of a tiny program: the simulator's per-executable cost is the difference between
// the chip's time and the CPU's.
void BM_TinyLaunch(benchmark::State& state, bool on_chip) {
  const jx::Device* device = on_chip ? static_cast<const jx::Device*>(&FreshChip()) : jx::devices("cpu")[0];
  const Array x = jx::device_put(jnp::ones({8}), device);
  auto step = jx::jit([](const Array& a) { return a + 1.0f; }, jx::name{"tiny"});
  benchmark::DoNotOptimize(step(x));
  for (auto _ : state) benchmark::DoNotOptimize(step(x));
}
BENCHMARK_CAPTURE(BM_TinyLaunch, cpu, false)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_TinyLaunch, tpu_chip, true)->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
