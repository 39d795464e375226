// A data-parallel x tensor-parallel MLP training step on 8 simulated v5e chips (a 4x2 mesh:
// "data" splits the batch, "model" splits the hidden layer, Megatron-style). One shard_map
// holds the whole step: the forward pass psums the second matmul's partial products over
// "model", the loss is psummed over "data", and grad inside the shard_map gives each chip
// the gradient of its own weight blocks (check_vma makes the transposes of the implicit
// pvarys sum the data-parallel gradients, as JAX's shard_map does). jit compiles the step
// once into one program per chip; each step prints the loss and the pod's step report:
// wall time, compute / communication / idle per chip, bytes per link. The first step is
// checked against the same step computed unsharded on one chip, and the run is traced.
//
//   dp_tp_mlp [trace.json]      (default: dp_tp_mlp.trace.json in the current directory)
#include <cmath>
#include <cstdio>
#include <iostream>
#include <string>
#include <tuple>

#include <jx/jx.h>

namespace jnp = jx::numpy;
namespace lax = jx::lax;
using jx::Array;
using jx::P;

constexpr int64_t kBatch = 256, kIn = 512, kHidden = 1024, kOut = 128;
constexpr double kLearningRate = 0.1;

// The loss of one chip's blocks: x [B/4, In], w1 [In, H/2], w2 [H/2, Out], y [B/4, Out].
Array LocalLoss(const Array& w1, const Array& w2, const Array& x, const Array& y) {
  const Array h = jnp::tanh(jnp::matmul(x, w1));
  const Array out = lax::psum(jnp::matmul(h, w2), "model");  // partial sums over the hidden split
  const Array err = out - y;
  return lax::psum(jnp::sum(err * err), "data") / double(kBatch * kOut);
}

std::tuple<Array, Array, Array> LocalStep(const Array& w1, const Array& w2, const Array& x, const Array& y) {
  auto [loss, grads] = jx::value_and_grad(LocalLoss, jx::argnums{0, 1})(w1, w2, x, y);
  auto [g1, g2] = grads;
  return {loss, w1 - g1 * kLearningRate, w2 - g2 * kLearningRate};
}

// The same step on one device, for the check.
std::tuple<Array, Array, Array> ReferenceStep(const Array& w1, const Array& w2, const Array& x, const Array& y) {
  auto loss_fn = [](const Array& a, const Array& b, const Array& xs, const Array& ys) {
    const Array err = jnp::matmul(jnp::tanh(jnp::matmul(xs, a)), b) - ys;
    return jnp::mean(err * err);
  };
  auto [loss, grads] = jx::value_and_grad(loss_fn, jx::argnums{0, 1})(w1, w2, x, y);
  auto [g1, g2] = grads;
  return {loss, w1 - g1 * kLearningRate, w2 - g2 * kLearningRate};
}

int main(int argc, char** argv) {
  const std::string trace_path = argc > 1 ? argv[1] : "dp_tp_mlp.trace.json";
  auto pod = jx::tpu::make_pod("v5e", {4, 2});
  jx::Mesh mesh = jx::make_mesh({4, 2}, {"data", "model"}, pod.devices());
  std::cout << mesh << "\n";

  const Array keys = jx::random::split(jx::random::key(0), 4);
  Array w1 = jx::random::normal(keys[0], {kIn, kHidden}) * (1.0 / std::sqrt(double(kIn)));
  Array w2 = jx::random::normal(keys[1], {kHidden, kOut}) * (1.0 / std::sqrt(double(kHidden)));
  const Array x = jx::random::normal(keys[2], {kBatch, kIn});
  const Array y = jx::random::normal(keys[3], {kBatch, kOut});

  auto step = jx::jit(jx::shard_map(LocalStep, mesh,
                                    jx::in_specs{P(jx::none, "model"), P("model", jx::none), P("data", jx::none),
                                                 P("data", jx::none)},
                                    jx::out_specs{P(), P(jx::none, "model"), P("model", jx::none)}),
                      jx::name{"train_step"});

  // One step unsharded on the host at f32 vs the pod (bf16 MXU passes): close, not equal.
  auto [ref_loss, ref_w1, ref_w2] = ReferenceStep(w1, w2, x, y);
  jx::profiler::start_trace(trace_path);
  for (int i = 0; i < 3; ++i) {
    auto [loss, next_w1, next_w2] = step(w1, w2, x, y);
    if (i == 0) {
      const double dw = jnp::max(jnp::abs(next_w1 - ref_w1)).item<double>();
      std::printf("step 0 vs unsharded: loss %.5f vs %.5f, max |w1 - w1_ref| = %.2g\n", loss.item<float>(),
                  ref_loss.item<float>(), dw);
      if (std::abs(loss.item<double>() - ref_loss.item<double>()) > 2e-2 * ref_loss.item<double>() || dw > 1e-2) {
        std::cerr << "MISMATCH with the unsharded step\n";
        return 1;
      }
    }
    w1 = next_w1;
    w2 = next_w2;
    std::printf("step %d  loss %.5f  w1 %s\n", i, loss.item<float>(), jx::typeof(w1).long_str().c_str());
  }
  jx::profiler::stop_trace();
  std::cout << "\nlast step on the pod:\n" << pod.last_step().ToString() << "\n";
  std::cout << "trace written to " << trace_path << " (open it in ui.perfetto.dev)\n";
  return 0;
}
