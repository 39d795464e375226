// Host time to run one step of a data x tensor-parallel MLP on the 8 chips of a v5e 4x2 pod
// (mesh data:4 x model:2; each chip holds a quarter of the batch and half of the hidden
// units: h = tanh(x @ w1), y = psum(h @ w2, 'model')), with real data moved at the
// all-reduce, as a ratio over the same step unsharded on one chip (jit of the global MLP),
// measured in one run. Both compute the same flops on the host; the ratio is what the pod's
// threads, rendezvous and clock synchronization add (or save: 8 threads share the cores).
//   pod_over_one_chip < 1: the pod step is faster on the host than the unsharded step.
#include <benchmark/benchmark.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include <jx/jx.h>

#include "jx/devices/tpu/pod_program.h"
#include "jx/sharding/collectives.h"
#include "jx/sharding/manual_context.h"

namespace {

using jx::Array;
namespace jnp = jx::numpy;

constexpr int64_t kBatch = 256, kIn = 1024, kHidden = 4096, kData = 4, kModel = 2;

double Seconds(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
}

void BM_DataTensorParallelMlpStep(benchmark::State& state) {
  jx::tpu::Pod pod = jx::tpu::make_pod("v5e", {4, 2});
  const Array keys = jx::random::split(jx::random::key(0), 3);
  const Array x = jx::random::normal(keys[0], {kBatch, kIn});
  const Array w1 = jx::random::normal(keys[1], {kIn, kHidden}) * (1 / 32.0f);
  const Array w2 = jx::random::normal(keys[2], {kHidden, kIn}) * (1 / 64.0f);
  // Per-device program: partition p = (data d, model m), row-major over the mesh.
  auto mesh = std::make_shared<jx::CollectiveMesh>(std::vector<std::string>{"data", "model"},
                                                   std::vector<int64_t>{kData, kModel},
                                                   std::vector<std::string>{"data", "model"});
  auto local = [](const Array& x, const Array& w1, const Array& w2) {
    return jx::lax::psum(jnp::matmul(jnp::tanh(jnp::matmul(x, w1)), w2), "model");
  };
  jx::ClosedJaxpr jaxpr = [&] {
    jx::shard_map_internal::ManualContextScope scope({mesh, /*check_vma=*/false});
    return jx::make_jaxpr(local)(jnp::zeros({kBatch / kData, kIn}), jnp::zeros({kIn, kHidden / kModel}),
                                 jnp::zeros({kHidden / kModel, kIn}));
  }();
  auto program = std::dynamic_pointer_cast<const jx::tpu::PodProgram>(
      pod.client().Lower(jaxpr, {.name = "mlp_dp_tp", .device_assignment = pod.devices()})->Compile());
  std::vector<jx::Arrays> shards;
  for (int64_t p = 0; p < kData * kModel; ++p) {
    const int64_t d = p / kModel, m = p % kModel;
    const jx::Device* chip = pod.devices()[p];
    const int64_t b = kBatch / kData, h = kHidden / kModel;
    shards.push_back({jx::device_put(jx::lax::slice(x, {d * b, 0}, {(d + 1) * b, kIn}), chip),
                      jx::device_put(jx::lax::slice(w1, {0, m * h}, {kIn, (m + 1) * h}), chip),
                      jx::device_put(jx::lax::slice(w2, {m * h, 0}, {(m + 1) * h, kIn}), chip)});
  }
  const jx::Device* one = pod.devices()[0];
  auto mlp = jx::jit([](const Array& x, const Array& w1, const Array& w2) {
    return jnp::matmul(jnp::tanh(jnp::matmul(x, w1)), w2);
  }, jx::name{"mlp"});
  const Array gx = jx::device_put(x, one), gw1 = jx::device_put(w1, one), gw2 = jx::device_put(w2, one);
  program->ExecuteShards(shards);  // warm up both
  benchmark::DoNotOptimize(mlp(gx, gw1, gw2));  // runs synchronously
  double pod_s = 0, one_s = 0;
  for (auto _ : state) {
    auto t0 = std::chrono::steady_clock::now();
    benchmark::DoNotOptimize(program->ExecuteShards(shards));
    pod_s += Seconds(t0);
    t0 = std::chrono::steady_clock::now();
    benchmark::DoNotOptimize(mlp(gx, gw1, gw2));
    one_s += Seconds(t0);
  }
  state.counters["pod_step_ms"] = 1e3 * pod_s / state.iterations();
  state.counters["one_chip_step_ms"] = 1e3 * one_s / state.iterations();
  state.counters["pod_over_one_chip"] = pod_s / one_s;
  state.SetLabel(program->last_step().ToString().substr(0, 80));
}
BENCHMARK(BM_DataTensorParallelMlpStep)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(5);

}  // namespace

BENCHMARK_MAIN();
