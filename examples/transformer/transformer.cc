// A decoder-only transformer learns to copy, on the CPU and then on a simulated TPU pod.
//
// Part 1 trains the model (model.h) on the copy task (copy_task.h) with one jitted step:
// value_and_grad of the cross-entropy on the copied half, then adam (warmup + cosine decay); params and optimizer
// state are donated. Every few steps it prints the loss and the token accuracy on the copied
// half of a held-out batch, and it stops once that exceeds 99%.
//
// Part 2 runs the same model's training step on a simulated v5e 4x2 pod: data-parallel over
// "data" (4 chips split the batch) and tensor-parallel over "model" (2 chips split the
// attention heads and the MLP's hidden units, Megatron-style, one psum per sublayer), as one
// shard_map inside one jit. Its loss and updated parameters are checked against the
// unsharded step's, and the pod's step report gives per-chip memory and the split of the
// step into compute, communication and idle time.
//
//   transformer           a short run (a tiny model, a few steps): the ctest entry
//   transformer --full    d_model 512, 8 heads, 2 layers, trained until it copies
#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdint>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <memory>
#include <regex>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <jx/jx.h>

#include "copy_task.h"
#include "model.h"

namespace jnp = jx::numpy;
namespace lax = jx::lax;
namespace nn = jx::nn;
namespace optax = jx::optax;
using jx::Array;
using jx::P;
using jx::PartitionSpec;
using transformer::Config;
using transformer::CopyTask;
using transformer::Decoder;

struct RunConfig {
  Config model;
  CopyTask task;
  int64_t batch = 32;       // sequences per step (divisible by the 4 data-parallel chips)
  int64_t eval_batch = 256;
  double learning_rate = 1e-3;  // adam's peak: a linear warmup, then cosine decay to 0 at max_steps
  int warmup_steps = 50;
  int max_steps = 1200;
  int eval_every = 25;
  double target_accuracy = 0.99;  // token accuracy on the copied half
};

RunConfig FullRun() {
  RunConfig r;
  r.model.vocab_size = r.task.vocab_size();
  r.model.seq_len = r.task.seq_len();
  return r;
}

RunConfig ShortRun() {
  RunConfig r;
  r.task.half = 4;
  r.model = {.vocab_size = r.task.vocab_size(), .seq_len = r.task.seq_len(), .d_model = 64, .num_heads = 8,
             .num_layers = 1, .d_ff = 128};
  r.batch = 8;
  r.eval_batch = 32;
  r.warmup_steps = 1;
  r.max_steps = 4;
  r.eval_every = 2;
  return r;
}

// Cross-entropy and token accuracy on the copied half, averaged over `total` copied tokens;
// inside shard_map each chip holds part of the batch and the sums run over `data_axis` too.
std::pair<Array, Array> CopyLoss(const Array& logits, const Array& targets, const Array& weights, double total,
                                 const std::string& data_axis) {
  const Array nll = nn::softmax_cross_entropy_with_integer_labels(logits, targets);
  const Array hits = (jnp::argmax(logits, -1) == targets).astype(jx::float32);
  Array loss = jnp::sum(nll * weights) / total;
  Array accuracy = jnp::sum(hits * weights) / total;
  if (!data_axis.empty()) {
    loss = lax::psum(loss, data_axis);
    accuracy = lax::psum(accuracy, data_axis);
  }
  return {loss, accuracy};
}

// One training step, written once: unsharded (empty axis names) or as one chip's part inside
// shard_map, where the model holds this chip's heads and hidden units and the batch this
// chip's sequences.
struct TrainStep {
  CopyTask task;
  optax::GradientTransformation optimizer;
  int64_t global_batch;
  std::string data_axis, model_axis;

  std::tuple<Decoder, optax::OptState, Array, Array> operator()(const Decoder& model, const optax::OptState& state,
                                                                const Array& inputs, const Array& targets) const {
    const Array weights = task.Weights();
    const double total = double(global_batch) * double(task.half);
    auto loss_fn = [&](const Decoder& m) {
      return CopyLoss(m(inputs, model_axis), targets, weights, total, data_axis);
    };
    auto [value, grads] = jx::value_and_grad(loss_fn, jx::has_aux)(model);
    auto [updates, next_state] = optimizer.update(grads, state, model);
    return {optax::apply_updates(model, updates), next_state, value.first, value.second};
  }
  std::pair<Array, Decoder> LossAndGrads(const Decoder& model, const Array& inputs, const Array& targets) const {
    auto [value, grads] = jx::value_and_grad(
        [&](const Decoder& m) {
          return CopyLoss(m(inputs, model_axis), targets, task.Weights(), double(global_batch) * double(task.half),
                          data_axis);
        },
        jx::has_aux)(model);
    return {value.first, grads};
  }
};

// ---- The Megatron layout: a PartitionSpec per parameter, from its path ----

// Column-split layers (query/key/value projections, the MLP's first layer) are split over
// "model" on their output dimension, row-split ones (the attention's output projection, the
// MLP's second layer) on their input dimension; embeddings, LayerNorms and the unembedding
// are replicated.
PartitionSpec ParamSpec(const std::string& path) {
  static const std::regex column_weight(R"(\.(query_proj|key_proj|value_proj|fc1)\.weight$)");
  static const std::regex column_bias(R"(\.(query_proj|key_proj|value_proj|fc1)\.bias$)");
  static const std::regex row_weight(R"(\.(output_proj|fc2)\.weight$)");
  if (std::regex_search(path, column_weight)) return P(jx::none, "model");
  if (std::regex_search(path, column_bias)) return P("model");
  if (std::regex_search(path, row_weight)) return P("model", jx::none);
  return P();
}

// The model's specs as shard_map takes a pytree prefix: ParamSpec of each leaf's key path.
jx::specs_by_path ModelSpecs() { return jx::specs_by_path(ParamSpec); }

// An optimizer state's moments hold one leaf per parameter leaf, in order ("...['mu'][3]" is
// parameter 3's): they split as that parameter does; step counts are replicated.
jx::specs_by_path StateSpecs(const Decoder& model) {
  std::vector<PartitionSpec> params;
  for (const std::string& path : jx::tree::structure(model).KeyPaths()) params.push_back(ParamSpec(path));
  return jx::specs_by_path([params](const std::string& path) {
    static const std::regex moment(R"(\['(mu|nu)'\]\[(\d+)\]$)");
    std::smatch m;
    return std::regex_search(path, m, moment) ? params.at(std::stoul(m[2].str())) : P();
  });
}

// TrainStep on every chip of a ("data", "model") mesh: parameters and optimizer state split
// as above, the batch split over "data", loss and accuracy replicated.
struct ShardedStep {
  TrainStep local;
  jx::Mesh mesh;
  jx::specs_by_path state_specs;

  std::tuple<Decoder, optax::OptState, Array, Array> operator()(const Decoder& model, const optax::OptState& state,
                                                                const Array& inputs, const Array& targets) const {
    const PartitionSpec batch = P("data", jx::none);
    return jx::shard_map(local, mesh, jx::in_specs{ModelSpecs(), state_specs, batch, batch},
                         jx::out_specs{ModelSpecs(), state_specs, P(), P()})(model, state, inputs, targets);
  }
  // The loss and gradients alone (for the check against the unsharded ones).
  std::pair<Array, Decoder> LossAndGrads(const Decoder& model, const Array& inputs, const Array& targets) const {
    auto f = [this](const Decoder& m, const Array& x, const Array& y) { return local.LossAndGrads(m, x, y); };
    const PartitionSpec batch = P("data", jx::none);
    return jx::shard_map(f, mesh, jx::in_specs{ModelSpecs(), batch, batch},
                         jx::out_specs{P(), ModelSpecs()})(model, inputs, targets);
  }
};

double Seconds(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
}

std::string MiB(int64_t bytes) {
  char s[32];
  std::snprintf(s, sizeof s, "%.1f MiB", bytes / 1048576.0);
  return s;
}

int64_t ParamCount(const Decoder& model) {
  int64_t n = 0;
  for (const Array& leaf : jx::tree::leaves(model)) n += leaf.size();
  return n;
}

// ---- Part 1: train on the CPU until it copies ----
Decoder TrainOnCpu(const RunConfig& run, const optax::GradientTransformation& optimizer) {
  const Config& c = run.model;
  Decoder model(c, jx::random::key(0));
  optax::OptState state = optimizer.init(model);
  std::printf("decoder: %lld layers, d_model %lld, %lld heads, d_ff %lld, %.2fM parameters; copying %lld symbols\n",
              (long long)c.num_layers, (long long)c.d_model, (long long)c.num_heads, (long long)c.d_ff,
              ParamCount(model) / 1e6, (long long)run.task.half);

  auto step = jx::jit(TrainStep{run.task, optimizer, run.batch, "", ""}, jx::donate_argnums{0, 1},
                      jx::name{"train_step"});
  auto make_batch = jx::jit([task = run.task](const Array& key, const Array& like) {
    return task.Batch(key, like.shape()[0]);
  });
  auto evaluate = jx::jit([task = run.task](const Decoder& m, const Array& inputs, const Array& targets) {
    return CopyLoss(m(inputs), targets, task.Weights(), double(inputs.shape()[0] * task.half), "");
  });
  auto [eval_inputs, eval_targets] = make_batch(jx::random::key(2), jnp::zeros({run.eval_batch}));
  const Array batch_like = jnp::zeros({run.batch});

  const auto start = std::chrono::steady_clock::now();
  Array key = jx::random::key(1);
  double accuracy = 0;
  int steps = 0;
  while (steps < run.max_steps && accuracy < run.target_accuracy) {
    auto [next_key, batch_key] = jx::random::split(key);
    key = next_key;
    auto [inputs, targets] = make_batch(batch_key, batch_like);
    auto [next_model, next_state, loss, train_accuracy] = step(model, state, inputs, targets);
    model = next_model;
    state = next_state;
    if (++steps % run.eval_every == 0) {
      accuracy = evaluate(model, eval_inputs, eval_targets).second.item<double>();
      std::printf("step %5d  loss %.4f  train accuracy %6.2f%%  held-out copy accuracy %6.2f%%  (%.0f s)\n", steps,
                  loss.item<double>(), 100 * train_accuracy.item<double>(), 100 * accuracy, Seconds(start));
      std::fflush(stdout);
    }
  }
  std::printf("CPU training: %d steps in %.1f s (%.2f s/step), held-out copy accuracy %.2f%%%s\n\n", steps,
              Seconds(start), Seconds(start) / steps, 100 * accuracy,
              accuracy >= run.target_accuracy ? ": it copies" : "");
  return model;
}

// ---- Part 2: the same step on a simulated v5e 4x2 pod ----
int TrainOnPod(const RunConfig& run, const optax::GradientTransformation& optimizer, const Decoder& trained) {
  auto pod = jx::tpu::make_pod("v5e", {4, 2});
  const jx::Mesh mesh = jx::make_mesh({4, 2}, {"data", "model"}, pod.devices());
  std::cout << "pod: " << mesh << "\n";

  const Decoder& model = trained;
  const optax::OptState state = optimizer.init(model);
  const auto [inputs, targets] = run.task.Batch(jx::random::key(3), run.batch);
  const ShardedStep sharded{TrainStep{run.task, optimizer, run.batch, "data", "model"}, mesh, StateSpecs(model)};
  const TrainStep unsharded{run.task, optimizer, run.batch, "", ""};

  // The check, at float32 matmul precision on both sides (the pod's default runs the MXU's
  // bf16 passes): the loss and every gradient, sharded vs unsharded, on the trained model.
  // (Gradients rather than adam's updates: adam's first step is lr * sign(g) and would not
  // see a gradient off by a constant factor.)
  {
    jx::default_matmul_precision highest("highest");
    auto [ref_loss, ref_grads] = jx::jit([&](const Decoder& m, const Array& x, const Array& y) {
      return unsharded.LossAndGrads(m, x, y);
    })(model, inputs, targets);
    auto [pod_loss, pod_grads] = jx::jit([&](const Decoder& m, const Array& x, const Array& y) {
      return sharded.LossAndGrads(m, x, y);
    })(model, inputs, targets);
    double max_diff = 0, max_grad = 0;
    const auto ref_leaves = jx::tree::leaves(ref_grads), pod_leaves = jx::tree::leaves(pod_grads);
    const auto paths = jx::tree::structure(ref_grads).KeyPaths();
    for (size_t i = 0; i < ref_leaves.size(); ++i) {
      const std::vector<float> a = pod_leaves[i].to_vector<float>(), b = ref_leaves[i].to_vector<float>();
      double leaf_diff = 0;
      for (size_t j = 0; j < a.size(); ++j) {
        leaf_diff = std::max(leaf_diff, double(std::abs(a[j] - b[j])));
        max_grad = std::max(max_grad, double(std::abs(b[j])));
      }
      if (leaf_diff > 1e-4 * max_grad) std::printf("  %s differs by up to %.3g\n", paths[i].c_str(), leaf_diff);
      max_diff = std::max(max_diff, leaf_diff);
    }
    std::printf("sharded vs unsharded (f32 matmuls): loss %.6f vs %.6f; gradients: max |difference| %.2g "
                "(largest gradient %.2g)\n",
                pod_loss.item<double>(), ref_loss.item<double>(), max_diff, max_grad);
    // The loss is a mean of per-token terms of order 1 summed in another order on the pod, so
    // its f32 rounding is absolute (~1e-6), however small the trained loss is.
    const double ref = ref_loss.item<double>();
    if (std::abs(pod_loss.item<double>() - ref) > 1e-5 * std::max(1.0, std::abs(ref)) || max_diff > 1e-4 * max_grad) {
      std::cerr << "MISMATCH between the sharded and the unsharded step\n";
      return 1;
    }
  }

  // Training steps at the pod's default precision; the last one's report.
  auto step = jx::jit(sharded, jx::name{"train_step"});
  Decoder m = model;
  optax::OptState s = state;
  for (int i = 0; i < 3; ++i) {
    auto [next_model, next_state, loss, accuracy] = step(m, s, inputs, targets);
    m = next_model;
    s = next_state;
    std::printf("pod step %d  loss %.4f  copy accuracy %.2f%%\n", i, loss.item<double>(),
                100 * accuracy.item<double>());
  }
  const jx::tpu::StepReport report = pod.last_step();
  std::cout << "\nthe last step on the pod (simulated v5e chips):\n" << report.ToString() << "\n";
  double compute = 0, communication = 0, idle = 0;
  for (const jx::tpu::ChipStepReport& chip : report.chips) {
    compute += chip.compute_seconds;
    communication += chip.communication_seconds;
    idle += chip.idle_seconds;
  }
  const double n = double(report.chips.size());
  std::printf("step %.1f us; per chip on average: compute %.1f us, communication %.1f us, idle %.1f us\n",
              report.wall_seconds * 1e6, compute / n * 1e6, communication / n * 1e6, idle / n * 1e6);
  // What each chip holds between steps: its blocks of the parameters and adam's moments, its
  // rows of the batch; the peak adds the step's activations and temporaries.
  int64_t in_use_min = INT64_MAX, in_use_max = 0, peak = 0;
  for (size_t i = 0; i < report.chips.size(); ++i) {
    const int64_t in_use = pod.devices()[i]->memory_stats().bytes_in_use;
    in_use_min = std::min(in_use_min, in_use);
    in_use_max = std::max(in_use_max, in_use);
    peak = std::max(peak, report.chips[i].hbm_high_water_bytes);
  }
  std::printf("HBM per chip: %s%s%s in use after the step, peak %s, of %s\n", MiB(in_use_min).c_str(),
              in_use_max != in_use_min ? " to " : "", in_use_max != in_use_min ? MiB(in_use_max).c_str() : "",
              MiB(peak).c_str(), MiB(pod.spec().hbm_bytes).c_str());
  return 0;
}

int main(int argc, char** argv) {
  const bool full = argc > 1 && std::strcmp(argv[1], "--full") == 0;
  const RunConfig run = full ? FullRun() : ShortRun();
  const optax::GradientTransformation optimizer = optax::adam(
      optax::warmup_cosine_decay_schedule(0.0, run.learning_rate, run.warmup_steps, run.max_steps));
  const Decoder model = TrainOnCpu(run, optimizer);
  return TrainOnPod(run, optimizer, model);
}
