// Gradient accumulation on MaxText 32B (examples/validation's configuration: d_model 6144, 48
// heads, d_ff 21504, 32 layers, seq 2048, remat full, flash attention; FSDP over 256 v5e chips)
// with the 1024-sequence batch split into microbatches summed in a scan: the weight gradients
// are reduce-scattered into the parameters' FSDP blocks every microbatch. Prints, as written and
// with the accumulators unreduced (WhileLoopAllReduceCodeMotion's reduce-scatter mode, priced as
// the TPU pipeline prices it): reduce-scatter runs per step, their bytes and ICI seconds, what
// each hoist would cost in HBM, and what the pipeline decided under the chip's HBM and with no
// memory limit (priced by the step time the runs cost as the chip's schedule runs them), the
// memory check's peak for the hoists taken, and the plan's step and peak. Timed: host seconds
// to plan and analyze the step (one iteration).
//   --microbatches=N (default 4), --layers=N (default 32: quicker looks with fewer).
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <limits>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <jx/jx.h>

#include "jx/devices/tpu/all_reduce_tally.h"
#include "jx/devices/tpu/unreduced_accumulation.h"
#include "jx/nn/models/transformer.h"
#include "jx/sharding/spmd/spmd_jit.h"

namespace {

namespace jnp = jx::numpy;
namespace models = jx::nn::models;
using jx::Array;

int64_t g_microbatches = 4;
int64_t g_layers = 32;

// MaxText's configs/v5e/32b.sh as examples/validation's MaxTextDefault(32, 1024) sets it.
models::TransformerConfig MaxText32B() {
  models::TransformerConfig cfg;
  cfg.d_model = 6144;
  cfg.num_heads = 48;
  cfg.d_ff = 21504;
  cfg.num_layers = g_layers;
  cfg.vocab_size = 32000;
  cfg.seq_len = 2048;
  cfg.batch_size = 1024;
  cfg.remat = true;
  cfg.remat_policy = jx::policies::nothing_saveable;
  cfg.attention = "flash";
  cfg.attention_block = 1024;
  return cfg;
}

// One SGD step on the mean of the microbatches' gradients (MaxText's
// gradient_accumulation_steps): the accumulators start as zeros in the parameters' shardings.
struct AccumulatingTrainStep {
  models::TransformerConfig cfg;
  jx::Mesh mesh;
  int64_t microbatches;

  models::TransformerParams operator()(const models::TransformerParams& params, const Array& tokens,
                                       const Array& targets) const {
    models::TransformerConfig micro = cfg;
    micro.batch_size = cfg.batch_size / microbatches;
    auto [leaves, def] = jx::tree::flatten(params);
    const std::vector<jx::NamedSharding> shardings = models::transformer_param_shardings(cfg, mesh);
    std::vector<Array> zeros;
    for (size_t i = 0; i < leaves.size(); ++i) {
      zeros.push_back(jx::lax::with_sharding_constraint(jnp::zeros_like(leaves[i]), shardings[i]));
    }
    // [batch, seq] -> [microbatches, batch / microbatches, seq], each chip's rows staying its own.
    auto split = [&](const Array& x) {
      return x.reshape({micro.batch_size, microbatches, cfg.seq_len}).swapaxes(0, 1);
    };
    const Array xs = jnp::stack({split(tokens), split(targets)}, 1);
    auto [sum, unused] = jx::lax::scan(
        [&](const std::vector<Array>& acc, const Array& x) {
          auto loss = [&](const models::TransformerParams& p) {
            return models::transformer_loss(p, x[0], x[1], micro, &mesh);
          };
          const auto [g, g_def] = jx::tree::flatten(jx::grad(loss)(params));
          std::vector<Array> next;
          for (size_t i = 0; i < acc.size(); ++i) next.push_back(acc[i] + g[i]);
          return std::pair{next, jnp::zeros({})};
        },
        zeros, xs);
    std::vector<Array> updated;
    const double lr = cfg.learning_rate / static_cast<double>(microbatches);
    for (size_t i = 0; i < leaves.size(); ++i) {
      updated.push_back(leaves[i] - (sum[i] * lr).astype(leaves[i].dtype()));
    }
    return jx::tree::unflatten<models::TransformerParams>(def, updated);
  }
};

std::string GiB(int64_t bytes) { return std::to_string(static_cast<double>(bytes) / (1 << 30)) + " GiB"; }

void Summarize(const char* what, const jx::tpu::UnreducedAccumulation& u) {
  const jx::tpu::AllReduceTally written = u.reduced.Of("reduce-scatter"), hoisted = u.unreduced.Of("reduce-scatter");
  std::map<std::string, int64_t> outcomes;
  using Outcome = jx::hlo::ReduceScatterHoist::Outcome;
  int64_t checked_peak = 0;  // the memory check's estimate of the program with every hoist taken
  double predicted = 0;      // the step time the hoists taken save, as priced
  for (const jx::hlo::ReduceScatterHoist& h : u.reduce_scatter_hoists) {
    if (h.outcome == Outcome::kHoisted) {
      checked_peak = std::max(checked_peak, h.peak_bytes + h.grown_bytes());
      predicted += h.saved_seconds;
    }
    outcomes[h.outcome == Outcome::kHoisted          ? "hoisted"
             : h.outcome == Outcome::kDoesNotPay     ? "does not pay"
             : h.outcome == Outcome::kStepNotFaster  ? "not faster in the planned step"
                                                     : "over the memory limit"]++;
  }
  std::cout << what << ":\n  reduce-scatters as written: " << written.runs() << " runs per step, " << GiB(written.bytes())
            << " per chip, " << written.seconds() << " s on the ICI\n  with the pipeline's hoisting: " << hoisted.runs()
            << " runs, " << GiB(hoisted.bytes()) << ", " << hoisted.seconds() << " s\n  all-reduces: "
            << u.reduced.Of("all-reduce").runs() << " -> " << u.unreduced.Of("all-reduce").runs()
            << " runs\n  accumulations:";
  for (const auto& [outcome, n] : outcomes) std::cout << " " << n << " " << outcome << ";";
  std::cout << " HBM for the hoisted full-size accumulators: +" << GiB(u.extra_accumulator_bytes())
            << " per chip; the memory check's peak with them: " << GiB(checked_peak) << "; priced to save "
            << predicted << " s per step\n";
  if (!u.reduce_scatter_hoists.empty()) std::cout << "  e.g. " << u.reduce_scatter_hoists.front().ToString() << "\n";
}

void BM_MaxText32BGradientAccumulation(benchmark::State& state) {
  const models::TransformerConfig cfg = MaxText32B();
  const jx::tpu::Pod pod = jx::tpu::make_pod("v5e", {16, 16});
  const jx::Mesh mesh = jx::make_mesh({256, 1}, {cfg.data_axis, cfg.model_axis}, pod.devices());
  const jx::NamedSharding batch = models::transformer_batch_sharding(cfg, mesh);
  std::vector<const jx::tpu::TpuChip*> chips;
  for (const jx::Device* d : pod.devices()) chips.push_back(static_cast<const jx::tpu::TpuChip*>(d));
  for (auto _ : state) {
    const auto began = std::chrono::steady_clock::now();
    auto step = jx::jit(AccumulatingTrainStep{cfg, mesh, g_microbatches}, jx::in_shardings{std::nullopt, batch, batch});
    const jx::spmd::SpmdCompiled compiled = step.lower(models::abstract_transformer_params(cfg, mesh),
                                                 models::abstract_transformer_batch(cfg, mesh),
                                                 models::abstract_transformer_batch(cfg, mesh))
                                          .compile();
    const jx::tpu::PodPlan plan = compiled.plan();
    auto lowering = pod.client().Lower(compiled.program().local_jaxpr(),
                                       {.name = "step", .donated = {}, .device_assignment = pod.devices()});
    const jx::tpu::UnreducedAccumulation at_hbm = jx::tpu::AnalyzeUnreducedAccumulation(*lowering, pod.client(), chips);
    const jx::tpu::UnreducedAccumulation unlimited = jx::tpu::AnalyzeUnreducedAccumulation(
        *lowering, pod.client(), chips, {.memory_limit_bytes = std::numeric_limits<int64_t>::max()});
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
    state.SetIterationTime(seconds);
    std::cout << cfg.ToString() << ", " << g_microbatches << " microbatches of " << cfg.batch_size / g_microbatches
              << " on " << mesh.ToString() << "\n";
    Summarize("under the chip's HBM (the pipeline's limit)", at_hbm);
    Summarize("with no memory limit", unlimited);
    int64_t planned_runs = 0, planned_bytes = 0;
    for (const jx::tpu::CollectiveStepEntry& e : plan.step.collectives) {
      if (e.kind != "reduce-scatter") continue;
      planned_runs += e.runs;
      planned_bytes += e.runs * e.bytes;
    }
    std::cout << "the plan (the TPU pipeline): " << planned_runs << " reduce-scatter runs per step, "
              << GiB(planned_bytes) << " per chip\n";
    std::cout << "plan: " << plan.step.wall_seconds << " s per step, HBM peak " << GiB(plan.hbm_peak_bytes) << " of "
              << GiB(plan.hbm_capacity_bytes) << (plan.fits() ? " (fits)" : " (does not fit)") << ", MFU "
              << 100 * plan.mfu(cfg.train_flops_per_step()) << "%\n\n";
    state.counters["rs_runs_written"] = static_cast<double>(at_hbm.reduced.Of("reduce-scatter").runs());
    state.counters["rs_runs_planned"] = static_cast<double>(at_hbm.unreduced.Of("reduce-scatter").runs());
    state.counters["rs_runs_unlimited"] = static_cast<double>(unlimited.unreduced.Of("reduce-scatter").runs());
    state.counters["extra_GiB_unlimited"] = static_cast<double>(unlimited.extra_accumulator_bytes()) / (1 << 30);
  }
}

BENCHMARK(BM_MaxText32BGradientAccumulation)->UseManualTime()->Unit(benchmark::kSecond)->Iterations(1);

}  // namespace

int main(int argc, char** argv) {
  std::vector<char*> rest = {argv[0]};
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], "--microbatches=", 15) == 0) {
      g_microbatches = std::atoll(argv[i] + 15);
    } else if (std::strncmp(argv[i], "--layers=", 9) == 0) {
      g_layers = std::atoll(argv[i] + 9);
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
