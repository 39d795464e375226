// A training step on a simulated TPU v5e chip: make a pod, put a small MLP's parameters and
// a batch on chip 0, jit the step (forward, gradients, SGD update) so the chip compiles it,
// read the compiled program's cost analysis and per-instruction table (what a real TPU
// would spend where, from the cost model: nothing here is measured), run a few steps,
// read the chip's clock and write a Chrome trace of the run (open it in ui.perfetto.dev).
//
//   tpu_mlp [trace.json]      (default: tpu_mlp.trace.json in the current directory)
#include <cmath>
#include <cstdio>
#include <iostream>
#include <string>

#include <boost/hana.hpp>
#include <jx/compiler/backend/tpu/tpu_cost_model.h>  // tpu::FormatInstructionCosts
#include <jx/jx.h>

namespace jnp = jx::numpy;
using jx::Array;

// 512 -> 1024 -> 1024 -> 256, tanh: MXU-sized layers (multiples of 128) and a batch of 256.
struct Mlp {
  BOOST_HANA_DEFINE_STRUCT(Mlp, (Array, w1), (Array, b1), (Array, w2), (Array, b2), (Array, w3), (Array, b3));
};

Mlp Init(const Array& key) {
  const Array keys = jx::random::split(key, 3);
  auto dense = [&](int i, int64_t in, int64_t out) {
    return jx::random::normal(keys[i], {in, out}) * (1.0 / std::sqrt(double(in)));
  };
  return {dense(0, 512, 1024), jnp::zeros({1024}), dense(1, 1024, 1024), jnp::zeros({1024}),
          dense(2, 1024, 256), jnp::zeros({256})};
}

Array Loss(const Mlp& p, const Array& x, const Array& y) {
  Array h = jnp::tanh(jnp::matmul(x, p.w1) + p.b1);
  h = jnp::tanh(jnp::matmul(h, p.w2) + p.b2);
  const Array err = jnp::matmul(h, p.w3) + p.b3 - y;
  return jnp::mean(err * err);
}

std::pair<Array, Mlp> TrainStep(const Mlp& p, const Array& x, const Array& y) {
  auto [loss, g] = jx::value_and_grad(Loss)(p, x, y);
  const double lr = 0.05;
  return {loss, Mlp{p.w1 - g.w1 * lr, p.b1 - g.b1 * lr, p.w2 - g.w2 * lr, p.b2 - g.b2 * lr,
                    p.w3 - g.w3 * lr, p.b3 - g.b3 * lr}};
}

int main(int argc, char** argv) {
  const std::string trace_path = argc > 1 ? argv[1] : "tpu_mlp.trace.json";

  // A 2x2 slice of v5e chips; everything below runs on chip 0.
  auto pod = jx::tpu::make_pod("v5e", {2, 2});
  const jx::Device* chip = pod.devices()[0];
  std::cout << "pod: " << pod.num_chips() << " x " << chip->device_kind() << ", chip 0 = " << chip->ToString()
            << "\n";

  // Committed arrays: the step runs where its arguments live.
  const Array keys = jx::random::split(jx::random::key(0), 3);
  Mlp params = jx::device_put(Init(keys[0]), chip);
  const Array x = jx::device_put(jx::random::normal(keys[1], {256, 512}), chip);
  const Array y = jx::device_put(jx::random::normal(keys[2], {256, 256}), chip);
  std::cout << "params.w1 on " << params.w1.devices()[0]->ToString() << "\n\n";

  // Compile for the chip and ask what one step costs there.
  auto step = jx::jit(TrainStep, jx::name{"train_step"});
  auto compiled = step.lower(params, x, y).compile();
  const jx::CostAnalysis cost = compiled.cost_analysis();
  std::printf("cost_analysis of train_step on %s:\n", chip->device_kind().c_str());
  std::printf("  flops              %.3e\n", cost.flops);
  std::printf("  transcendentals    %.3e\n", cost.transcendentals);
  std::printf("  bytes accessed     %.3e (HBM %.3e, VMEM %.3e)\n", cost.bytes_accessed, cost.bytes_accessed_hbm,
              cost.bytes_accessed_vmem);
  std::printf("  predicted seconds  %.3e\n", cost.predicted_seconds);
  std::printf("  compute seconds    %.3e\n", cost.compute_seconds);
  std::printf("  memory seconds     %.3e\n", cost.memory_seconds);
  std::printf("  MXU utilization    %.1f%%\n", 100 * cost.mxu_utilization);
  std::printf("  padding waste      %.1f%%\n\n", 100 * cost.padding_waste);
  std::cout << "per-instruction costs (slowest first):\n" << jx::tpu::FormatInstructionCosts(cost) << "\n";

  // A few steps, traced. The chip computes the numbers a TPU would (bf16 MXU passes, f32
  // accumulation) on the host, and its clock advances by each step's predicted time.
  const auto& tpu_chip = static_cast<const jx::tpu::TpuChip&>(*chip);
  jx::profiler::start_trace(trace_path);
  for (int i = 0; i < 5; ++i) {
    auto [loss, next] = compiled(params, x, y);
    params = next;
    std::printf("step %d  loss %.5f  (on %s)\n", i, loss.item<float>(), loss.devices()[0]->ToString().c_str());
  }
  jx::profiler::stop_trace();

  const jx::tpu::ChipActivity clock = tpu_chip.activity();
  std::printf("\nchip 0 clock: %.3e simulated s over %lld steps; busy MXU %.3e s, VPU %.3e s, DMA %.3e s\n",
              clock.now_seconds, static_cast<long long>(clock.steps), clock.busy.mxu, clock.busy.vpu,
              clock.busy.dma);
  std::cout << "trace written to " << trace_path << " (open it in ui.perfetto.dev)\n";
  return 0;
}
