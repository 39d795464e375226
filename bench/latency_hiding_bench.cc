// The latency-hiding scheduler's overlap on its own: each training step is partitioned once,
// and its per-device program is planned on the pod twice from the same HLO (tpu::PlanPodOverlap):
// with asynchronous collectives ordered by the scheduler, and with every collective
// synchronous where it was lowered. Counters, all from one run:
//   speedup      step without the scheduler / step with it
//   comm_s       communication on the interconnect per step (the same both ways)
//   exposed_s    of that, what chips waited for with the scheduler (without it: all of it)
//   hidden       overlapped / communication with the scheduler
//   sync_step_s, step_s  the two step times
// Programs (bf16, forward + backward + SGD, FSDP over 'data' x Megatron over 'model' on a v5e
// 16x16 pod of 256 chips):
//   MlpStackUnrolled  L two-matmul blocks in a C++ loop: one straight-line program.
//   MlpStackScanned   the same blocks as lax::scan over stacked weights: the collectives sit
//                     inside while-loop bodies, so this measures overlap within a loop body
//                     (the scheduler orders each body on its own; nothing is pipelined across
//                     trips, so a layer's weight all-gather can only hide behind that trip's
//                     independent work).
//   Transformer       nn::models' Llama-style step, 4 layers of d_model 4096.
// Each plan is printed once.
#include <benchmark/benchmark.h>

#include <iostream>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <jx/jx.h>

#include "jx/compiler/hlo/hlo_parser.h"
#include "jx/devices/tpu/pod_overlap.h"
#include "jx/devices/tpu/tpu_client.h"
#include "jx/nn/models/transformer.h"

namespace {

namespace jnp = jx::numpy;
using jx::Array;

constexpr int64_t kLayers = 8, kTokens = 65536, kModel = 4096, kHidden = 16384;

struct Pod16x16 {
  jx::tpu::Pod pod = jx::tpu::make_pod("v5e", {16, 16});
  jx::Mesh mesh = jx::make_mesh({16, 16}, {"data", "model"}, pod.devices());
  jx::ShapeDtypeStruct Abstract(jx::Shape shape, jx::PartitionSpec spec) const {
    return jx::ShapeDtypeStruct{.shape = std::move(shape),
                                .dtype = jx::bfloat16,
                                .sharding = std::make_shared<jx::NamedSharding>(mesh, std::move(spec))};
  }
};

// One block: x + gelu(x w1) w2, w1 [D, F] and w2 [F, D].
Array Block(const Array& x, const Array& w1, const Array& w2) {
  return x + jnp::matmul(jx::nn::gelu(jnp::matmul(x, w1)), w2);
}

Array Loss(const Array& h) { return jnp::mean(jnp::square(h.astype(jx::float32))); }

struct UnrolledStep {
  std::pair<std::vector<Array>, Array> operator()(const std::vector<Array>& w1s, const std::vector<Array>& w2s,
                                                  const Array& x) const {
    auto loss = [&](const std::vector<Array>& a, const std::vector<Array>& b) {
      Array h = x;
      for (size_t l = 0; l < a.size(); ++l) h = Block(h, a[l], b[l]);
      return Loss(h);
    };
    auto [value, grads] = jx::value_and_grad(loss, jx::argnums{0, 1})(w1s, w2s);
    std::vector<Array> next;
    for (size_t l = 0; l < w1s.size(); ++l) next.push_back(w1s[l] - std::get<0>(grads)[l] * 0.01f);
    for (size_t l = 0; l < w2s.size(); ++l) next.push_back(w2s[l] - std::get<1>(grads)[l] * 0.01f);
    return {next, value};
  }
};

struct ScannedStep {
  std::pair<std::vector<Array>, Array> operator()(const Array& w1s, const Array& w2s, const Array& x) const {
    auto loss = [&](const Array& a, const Array& b) {
      auto [h, unused] = jx::lax::scan(
          [](const Array& carry, const std::vector<Array>& w) {
            return std::pair{Block(carry, w[0], w[1]), Array(0.0f)};
          },
          x, std::vector<Array>{a, b});
      return Loss(h);
    };
    auto [value, grads] = jx::value_and_grad(loss, jx::argnums{0, 1})(w1s, w2s);
    return {{w1s - std::get<0>(grads) * 0.01f, w2s - std::get<1>(grads) * 0.01f}, value};
  }
};

// Plans the per-device program of `program` both ways and reports.
void Report(benchmark::State& state, const jx::spmd::SpmdProgram& program, const jx::tpu::Pod& pod,
            const std::string& name, bool* printed) {
  jx::LoweringOptions options;
  options.name = name;
  options.device_assignment = program.mesh().devices();
  const std::shared_ptr<const jx::Lowering> lowering = pod.client().Lower(program.local_jaxpr(), options);
  absl::StatusOr<std::unique_ptr<jx::hlo::HloModule>> module = jx::hlo::ParseHloModule(lowering->as_text());
  if (!module.ok()) {
    state.SkipWithError(std::string(module.status().message()).c_str());
    return;
  }
  std::vector<const jx::tpu::TpuChip*> chips;
  for (const jx::Device* d : program.mesh().devices()) chips.push_back(static_cast<const jx::tpu::TpuChip*>(d));
  const jx::tpu::PodOverlap o =
      jx::tpu::PlanPodOverlap(**module, pod.client(), chips, program.local_jaxpr().jaxpr->out_avals(), name);
  const jx::tpu::StepReport& s = o.scheduled.step;
  state.counters["speedup"] = o.speedup();
  state.counters["step_s"] = s.wall_seconds;
  state.counters["sync_step_s"] = o.synchronous.step.wall_seconds;
  state.counters["comm_s"] = s.communication_seconds();
  state.counters["exposed_s"] = s.exposed_communication_seconds();
  state.counters["hidden"] =
      s.communication_seconds() > 0 ? s.overlapped_communication_seconds() / s.communication_seconds() : 0;
  if (!*printed) {
    std::cout << name << " with the latency-hiding scheduler:\n"
              << o.scheduled.ToString(4) << "without it: step " << o.synchronous.step.wall_seconds
              << " s, communication " << o.synchronous.step.communication_seconds() << " s, exposed "
              << o.synchronous.step.exposed_communication_seconds() << " s\n\n";
    *printed = true;
  }
}

// A fresh jit of `step` each iteration (nothing cached), lowered for `args`, reported.
template <typename Step, typename... Args>
void Run(benchmark::State& state, const Pod16x16& p, Step step_fn, const std::string& name, const Args&... args) {
  bool printed = false;
  for (auto _ : state) {
    auto step = jx::jit(step_fn, jx::in_shardings{std::nullopt}, jx::name{name});
    Report(state, step.lower(args...).compile().program(), p.pod, name, &printed);
  }
}

void BM_MlpStackUnrolled(benchmark::State& state) {
  Pod16x16 p;
  // A list of kLayers abstract weights (its structure from a list of scalars).
  auto layers = [&](jx::Shape shape, jx::PartitionSpec spec) {
    jx::ShapeDtypeTree t{jx::tree::flatten(std::vector<Array>(kLayers, jnp::zeros({}))).second, {}};
    t.leaves.assign(kLayers, p.Abstract(std::move(shape), std::move(spec)));
    return t;
  };
  const jx::ShapeDtypeTree w1s = layers({kModel, kHidden}, jx::P("data", "model"));
  const jx::ShapeDtypeTree w2s = layers({kHidden, kModel}, jx::P("model", "data"));
  Run(state, p, UnrolledStep{}, "mlp_unrolled", w1s, w2s, p.Abstract({kTokens, kModel}, jx::P("data", jx::none)));
}

void BM_MlpStackScanned(benchmark::State& state) {
  Pod16x16 p;
  const jx::ShapeDtypeStruct w1s = p.Abstract({kLayers, kModel, kHidden}, jx::P(jx::none, "data", "model"));
  const jx::ShapeDtypeStruct w2s = p.Abstract({kLayers, kHidden, kModel}, jx::P(jx::none, "model", "data"));
  Run(state, p, ScannedStep{}, "mlp_scanned", w1s, w2s, p.Abstract({kTokens, kModel}, jx::P("data", jx::none)));
}

void BM_Transformer(benchmark::State& state) {
  Pod16x16 p;
  jx::nn::models::TransformerConfig cfg = jx::nn::models::TransformerConfig::Llama70B(256);
  cfg.num_layers = 4;
  cfg.d_model = 4096;
  cfg.num_heads = 32;
  cfg.d_ff = 14336;
  cfg.seq_len = 2048;
  Run(state, p, jx::nn::models::TransformerTrainStep{cfg, p.mesh}, "transformer",
      jx::nn::models::abstract_transformer_params(cfg, p.mesh), jx::nn::models::abstract_transformer_batch(cfg, p.mesh),
      jx::nn::models::abstract_transformer_batch(cfg, p.mesh));
}

BENCHMARK(BM_MlpStackUnrolled)->Unit(benchmark::kSecond)->Iterations(1);
BENCHMARK(BM_MlpStackScanned)->Unit(benchmark::kSecond)->Iterations(1);
BENCHMARK(BM_Transformer)->Unit(benchmark::kSecond)->Iterations(1);

}  // namespace

BENCHMARK_MAIN();
