// Host seconds to plan one training step of a 70B-class transformer (nn::models'
// TransformerConfig::Llama70B: 80 layers, d_model 8192, 64 heads, d_ff 28672, seq 4096,
// FSDP over 'data' x TP over 'model') from ShapeDtypeStructs alone: trace, propagate,
// partition, lower, optimize, cost and lay out the step (jit(...).lower(...).compile().plan()).
// Targets: under 10 s each on 4096 v4 chips (16x16x16, mesh data:256 x model:16) and on 9216 v7
// chips (16x24x24: 18432 devices, a TensorCore each as JAX lists TPU7x; mesh replica:576 x
// data:2 x model:16). make_mesh lays the v7 mesh as create_device_mesh does: tensor
// parallelism over the torus axis of 16 (a ring, so each layer's activation all-reduces run on
// its wraparound links), FSDP over each chip's two cores (the on-chip path), pure data
// parallelism over the two axes of 24 (576 replicas, 4 of the 2304 sequences each, 2 per
// core). No weight dim of a power-of-two width splits 24 or 576 ways, so the replicas keep
// whole copies of their 1/32 of the weights (4.9 GB of bf16 per core of 96 GB).
// Each plan is printed once.
//   --layers=N plans an N-layer model of the same width (quicker looks at the report).
//   --readme plans the README's configuration (its "Planning a pod" section and
//   examples/pod_planning --full): each layer rematerialized with nothing_saveable (MaxText's
//   remat_policy=full) and nn::flash_attention in 2048-token tiles. Same as --remat --flash.
//   --remat rematerializes each layer (TransformerConfig::remat, policy nothing_saveable).
//   --flash runs nn::flash_attention (attention_block 2048) instead of dot-product attention.
//   --flash-block=N sets its tiles to N tokens (with --flash or --readme; v4's 16 MiB of VMEM
//   holds no (batch, head)'s 2048 x 2048 f32 score tile, so attention kernels form from 1024).
#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include <jx/jx.h>

#include "jx/nn/models/transformer.h"

namespace {

using jx::nn::models::TransformerConfig;

int64_t g_layers = 80;
bool g_remat = false;
bool g_flash = false;
int64_t g_flash_block = 2048;

struct PodCase {
  const char* generation;
  std::vector<int64_t> torus;
  int64_t replica, data, model, batch;  // replica 1: no pure data-parallel axis
};

void PlanStep(benchmark::State& state, const PodCase& c) {
  TransformerConfig cfg = TransformerConfig::Llama70B(c.batch);
  cfg.num_layers = g_layers;
  cfg.remat = g_remat;
  if (g_remat) cfg.remat_policy = jx::policies::nothing_saveable;
  if (g_flash) {
    cfg.attention = "flash";
    cfg.attention_block = g_flash_block;
  }
  const auto made = std::chrono::steady_clock::now();
  jx::tpu::Pod pod = jx::tpu::make_pod(c.generation, c.torus);
  if (c.replica > 1) cfg.replica_axis = "replica";
  jx::Mesh mesh = c.replica > 1 ? jx::make_mesh({c.replica, c.data, c.model}, {"replica", "data", "model"}, pod.devices())
                                : jx::make_mesh({c.data, c.model}, {"data", "model"}, pod.devices());
  const double pod_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - made).count();
  bool printed = false;
  for (auto _ : state) {
    // A fresh jit each time: nothing cached between iterations.
    auto step = jx::jit(jx::nn::models::TransformerTrainStep{cfg, mesh}, jx::in_shardings{std::nullopt}, jx::name{"train_step"});
    const auto began = std::chrono::steady_clock::now();
    const jx::tpu::PodPlan plan = step.lower(jx::nn::models::abstract_transformer_params(cfg, mesh),
                                             jx::nn::models::abstract_transformer_batch(cfg, mesh),
                                             jx::nn::models::abstract_transformer_batch(cfg, mesh))
                                      .compile()
                                      .plan();
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
    state.SetIterationTime(seconds);
    state.counters["plan_s"] = seconds;
    state.counters["step_s"] = plan.step.wall_seconds;
    state.counters["mfu"] = plan.mfu(cfg.train_flops_per_step());
    state.counters["hbm_GiB"] = static_cast<double>(plan.hbm_peak_bytes) / (1 << 30);
    if (!printed) {
      std::cout << cfg.ToString() << " on " << mesh.ToString() << " (pod made in "
                << pod_seconds << " s)\n"
                << plan.ToString() << "MFU " << 100 * plan.mfu(cfg.train_flops_per_step()) << "% for "
                << cfg.train_flops_per_step() << " model FLOPs per step\n\n";
      printed = true;
    }
  }
}

void BM_PlanLlama70B_V4_4096(benchmark::State& state) { PlanStep(state, {"v4", {16, 16, 16}, 1, 256, 16, 1024}); }
void BM_PlanLlama70B_V7_9216(benchmark::State& state) { PlanStep(state, {"v7", {16, 24, 24}, 576, 2, 16, 2304}); }

BENCHMARK(BM_PlanLlama70B_V4_4096)->UseManualTime()->Unit(benchmark::kSecond)->Iterations(1);
BENCHMARK(BM_PlanLlama70B_V7_9216)->UseManualTime()->Unit(benchmark::kSecond)->Iterations(1);

}  // namespace

int main(int argc, char** argv) {
  std::vector<char*> rest;
  for (int i = 0; i < argc; ++i) {
    if (std::strncmp(argv[i], "--layers=", 9) == 0) {
      g_layers = std::atoll(argv[i] + 9);
    } else if (std::strcmp(argv[i], "--remat") == 0) {
      g_remat = true;
    } else if (std::strncmp(argv[i], "--flash-block=", 14) == 0) {
      g_flash_block = std::atoll(argv[i] + 14);
    } else if (std::strcmp(argv[i], "--flash") == 0) {
      g_flash = true;
    } else if (std::strcmp(argv[i], "--readme") == 0) {
      g_remat = g_flash = true;
    } else {
      rest.push_back(argv[i]);
    }
  }
  int n = static_cast<int>(rest.size());
  benchmark::Initialize(&n, rest.data());
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
