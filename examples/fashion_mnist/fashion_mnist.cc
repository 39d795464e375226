// The main demo: Fashion-MNIST with jx, as a JAX user writes it with Equinox-style modules and
// Optax. Trains an MLP and a small CNN on the CPU with jit(value_and_grad) + adam and prints
// the test accuracy of each, then runs the same CNN step data-parallel on a simulated TPU v5e
// 2x2 pod (shard_map over a 4-way "data" mesh axis; the loss is pmean'd, so the gradients are
// the global batch's) and prints its simulated step time, writing a Perfetto trace.
//
//   fashion_mnist                       full run (a few minutes on 2 cores)
//   fashion_mnist --quick               a few hundred steps, checking that the losses fall
//   fashion_mnist --trace PATH          where the pod trace goes (default fashion_mnist.trace.json)
//   fashion_mnist --checkpoint PATH     where the trained CNN is saved (default fashion_mnist_cnn.safetensors)
//   fashion_mnist --mlp-epochs N --cnn-epochs N --cnn-batch N --cnn-lr X    other training settings
//
// bench/fashion_mnist_bench times the epochs against the PyTorch peer.
//
// The dataset comes from Debian's dataset-fashion-mnist package (or $JX_FASHION_MNIST_DIR);
// without it the program says what to install and exits with 77 (ctest's skip code).
#include <chrono>
#include <climits>
#include <cstdint>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <string>
#include <tuple>

#include <jx/jx.h>

#include "models.h"

namespace jnp = jx::numpy;
namespace lax = jx::lax;
namespace nn = jx::nn;
namespace optax = jx::optax;
using jx::Array;
using jx::P;
using fashion_mnist::Cnn;
using fashion_mnist::Loss;
using fashion_mnist::Mlp;

// ---- data -----------------------------------------------------------------------------------

struct Split {
  Array images;  // f32[N, 28, 28, 1], standardized
  Array labels;  // int32[N]
};

// The first `limit` examples as standardized float images and int32 labels.
Split Prepare(const jx::data::FashionMnist& d, int64_t limit = INT64_MAX) {
  const int64_t n = std::min<int64_t>(limit, d.images.shape()[0]);
  Array x = d.images[jx::slice(0, n)].astype(jx::float32).reshape({n, 28, 28, 1});
  x = (x / 255.0 - 0.2860) / 0.3530;  // the training set's pixel mean and std
  return {x, d.labels[jx::slice(0, n)].astype(jx::int32)};
}

// ---- training -------------------------------------------------------------------------------

struct Config {
  int epochs = 1;
  int64_t max_steps = -1;  // per model; -1: whole epochs
  int64_t batch_size = 128;
  double learning_rate = 1e-3;
};

double Seconds(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
}

template <typename Model>
double TestAccuracy(const Model& model, const Split& test) {
  auto acc = jx::jit([](const Model& m, const Array& x, const Array& y) { return nn::accuracy(m(x), y); },
                     jx::name{"eval"});
  jx::data::DataLoader loader(std::tuple{test.images, test.labels}, {.batch_size = 1000});
  double sum = 0;
  int64_t n = 0;
  for (const auto& [x, y] : loader.epoch()) {
    sum += acc(model, x, y).template item<double>() * double(x.shape()[0]);
    n += x.shape()[0];
  }
  return sum / double(n);
}

struct TrainResult {
  double final_loss = 0;     // mean over the last epoch's (or run's) steps
  double test_accuracy = 0;
  double seconds_per_epoch = 0;
};

// Trains `model` in place with adam; one line per epoch.
template <typename Model>
TrainResult Train(const char* name, Model& model, const Split& train, const Split& test, const Config& cfg,
                  const Array& key) {
  jx::data::DataLoader loader(std::tuple{train.images, train.labels},
                              {.batch_size = cfg.batch_size, .drop_last = true});
  const int64_t total_steps = cfg.max_steps > 0 ? cfg.max_steps : cfg.epochs * loader.num_batches();
  // optax.adam(optax.cosine_decay_schedule(lr, total_steps)): the step size decays to 0 by the end.
  const optax::GradientTransformation opt = optax::adam(optax::cosine_decay_schedule(cfg.learning_rate, total_steps));
  optax::OptState state = opt.init(model);
  auto step = fashion_mnist::MakeTrainStep<Model>(opt, std::string(name) + "_train_step");
  TrainResult result;
  int64_t steps = 0;
  double train_seconds = 0;
  jx::nn::EpochLogger log(cfg.epochs);
  for (int epoch = 0; epoch < cfg.epochs; ++epoch) {
    const auto start = std::chrono::steady_clock::now();
    log.start_epoch();
    // A bar on a terminal only; in a log or pipe just the epoch lines.
    jx::nn::ProgressBar bar(cfg.max_steps > 0 ? cfg.max_steps : loader.num_batches(),
                            {.desc = jx::StrCat("  ", name, " epoch ", epoch + 1), .unit = "step"});
    Array loss_sum = jnp::zeros({});
    int64_t epoch_steps = 0;
    for (const auto& [x, y] : loader.epoch(jx::random::fold_in(key, uint32_t(epoch)))) {
      Array loss;
      std::tie(model, state, loss) = step(model, state, x, y);
      loss_sum = loss_sum + loss;  // summed on the device: no host sync per step
      ++epoch_steps;
      if (bar.enabled() && epoch_steps % 20 == 0) bar.set_postfix(jx::StrCat("loss=", loss.item<float>()));
      bar.update();
      if (++steps == cfg.max_steps) break;
    }
    bar.close();
    result.final_loss = loss_sum.item<double>() / double(epoch_steps);
    train_seconds += Seconds(start);
    result.test_accuracy = TestAccuracy(model, test);
    std::cout << "  " << name << " ";
    log.end_epoch(result.final_loss, result.test_accuracy, epoch_steps * cfg.batch_size);
    if (steps == cfg.max_steps) break;
  }
  result.seconds_per_epoch = train_seconds / cfg.epochs;
  return result;
}

// ---- the same CNN step, data-parallel on a simulated v5e 2x2 pod --------------------------

struct PodResult {
  double first_loss = 0, last_loss = 0;
  double host_loss = 0;  // the first batch's loss on the host, for comparison
  double step_seconds = 0;
};

// Fine-tunes the trained CNN on the pod for `steps` steps with a fresh adam (the CPU run's
// cosine schedule has decayed to 0).
PodResult TrainOnPod(const Cnn& cnn, const Split& train, int64_t steps, int64_t global_batch,
                     const std::string& trace_path) {
  auto pod = jx::tpu::make_pod("v5e", {2, 2});
  jx::Mesh mesh = jx::make_mesh({4}, {"data"}, pod.devices());
  std::cout << "\n" << mesh << "\n";
  const optax::GradientTransformation opt = optax::adam(1e-4);
  // One chip's part: its quarter of the batch; the pmean'd loss makes grad return the mean
  // gradient of the global batch on every chip (the transpose of the implicit pvary of the
  // replicated parameters is a psum), so the replicated update stays identical everywhere.
  auto local_step = [opt](const Cnn& m, const optax::OptState& s, const Array& x, const Array& y) {
    auto global_loss = [](const Cnn& m, const Array& x, const Array& y) { return lax::pmean(Loss(m, x, y), "data"); };
    auto [loss, grads] = jx::value_and_grad(global_loss)(m, x, y);
    auto [updates, new_state] = opt.update(grads, s, m);
    return std::tuple{optax::apply_updates(m, updates), new_state, loss};
  };
  auto step = jx::jit(jx::shard_map(local_step, mesh, jx::in_specs{P(), P(), P("data"), P("data")},
                                    jx::out_specs{P(), P(), P()}),
                      jx::name{"cnn_train_step_dp"});
  const jx::NamedSharding replicated(mesh, P());
  const jx::NamedSharding batch_sharded(mesh, P("data"));
  Cnn model = jx::device_put(cnn, replicated);
  optax::OptState state = jx::device_put(opt.init(cnn), replicated);

  jx::data::DataLoader loader(std::tuple{train.images, train.labels}, {.batch_size = global_batch, .drop_last = true});
  PodResult result;
  jx::profiler::start_trace(trace_path);
  int64_t i = 0;
  for (const auto& [x, y] : loader.epoch(jx::random::key(7))) {
    if (i == 0) result.host_loss = Loss(cnn, x, y).item<double>();
    Array loss;
    std::tie(model, state, loss) = step(model, state, jx::device_put(x, batch_sharded), jx::device_put(y, batch_sharded));
    const double l = loss.item<double>();
    if (i == 0) result.first_loss = l;
    result.last_loss = l;
    if (++i == steps) break;
  }
  jx::profiler::stop_trace();
  const jx::tpu::StepReport report = pod.last_step();
  result.step_seconds = report.wall_seconds;
  std::cout << "last step on the pod:\n" << report.ToString() << "\n";
  return result;
}

// ---- main -----------------------------------------------------------------------------------

int Run(int argc, char** argv) {
  bool quick = false;
  std::string trace_path = "fashion_mnist.trace.json";
  std::string checkpoint_path = "fashion_mnist_cnn.safetensors";
  Config mlp_cfg{.epochs = 10};
  Config cnn_cfg{.epochs = 4, .batch_size = 64, .learning_rate = 2e-3};
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const bool has_value = i + 1 < argc;
    if (a == "--quick") {
      quick = true;
      mlp_cfg = {.epochs = 1, .max_steps = 300};
      cnn_cfg = {.epochs = 1, .max_steps = 300, .batch_size = 64, .learning_rate = 2e-3};
    } else if (a == "--mlp-epochs" && has_value) {
      mlp_cfg.epochs = std::atoi(argv[++i]);
    } else if (a == "--cnn-epochs" && has_value) {
      cnn_cfg.epochs = std::atoi(argv[++i]);
    } else if (a == "--cnn-batch" && has_value) {
      cnn_cfg.batch_size = std::atoll(argv[++i]);
    } else if (a == "--cnn-lr" && has_value) {
      cnn_cfg.learning_rate = std::atof(argv[++i]);
    } else if (a == "--trace" && i + 1 < argc) {
      trace_path = argv[++i];
    } else if (a == "--checkpoint" && i + 1 < argc) {
      checkpoint_path = argv[++i];
    } else {
      std::cerr << "usage: fashion_mnist [--quick] [--trace PATH] [--checkpoint PATH] [--mlp-epochs N]\n"
                   "                     [--cnn-epochs N] [--cnn-batch N] [--cnn-lr X]\n";
      return 2;
    }
  }
  const auto start = std::chrono::steady_clock::now();
  jx::data::FashionMnist raw_train, raw_test;
  try {
    raw_train = jx::data::load_fashion_mnist("train");
    raw_test = jx::data::load_fashion_mnist("test");
  } catch (const jx::data::DatasetNotFoundError& e) {
    std::cerr << e.what() << "\nSkipping the demo.\n";
    return 77;
  }
  const Split train = Prepare(raw_train);
  const Split test = Prepare(raw_test, quick ? 2000 : 10000);
  std::printf("Fashion-MNIST: %lld training and %lld test images (%.1f s to load)\n",
              (long long)train.images.shape()[0], (long long)test.images.shape()[0], Seconds(start));

  const Array key = jx::random::key(0);
  auto [mlp_key, cnn_key] = jx::random::split(key);

  std::printf("\nMLP 784-256-10, adam(cosine decay from %g), batch %lld (accuracy on the test set):\n",
              mlp_cfg.learning_rate, (long long)mlp_cfg.batch_size);
  Mlp mlp(mlp_key);
  const TrainResult mlp_result = Train("mlp", mlp, train, test, mlp_cfg, jx::random::fold_in(mlp_key, 1));

  std::printf("\nCNN conv3x3(16)-pool-conv3x3(32)-pool-128-10, adam(cosine decay from %g), batch %lld:\n",
              cnn_cfg.learning_rate, (long long)cnn_cfg.batch_size);
  Cnn cnn(cnn_key);
  const TrainResult cnn_result = Train("cnn", cnn, train, test, cnn_cfg, jx::random::fold_in(cnn_key, 1));

  // A safetensors checkpoint of the trained CNN, read back into a freshly initialized one.
  jx::save(checkpoint_path, cnn, {{"model", "Cnn"}, {"test_accuracy", std::to_string(cnn_result.test_accuracy)}});
  const Cnn restored = jx::load(checkpoint_path, Cnn(jx::random::key(123)));
  const double restored_accuracy = TestAccuracy(restored, test);
  std::printf("  saved to %s and loaded back: test accuracy %.2f%%\n", checkpoint_path.c_str(),
              100 * restored_accuracy);

  const PodResult pod = TrainOnPod(cnn, train, quick ? 2 : 10, 256, trace_path);
  std::printf("CNN data-parallel on a simulated v5e 2x2 pod (global batch 256, 64 per chip, adam(1e-4)):\n"
              "  loss %.4f at the first step (%.4f on the host), %.4f after the last\n"
              "  simulated step time %.1f us; trace written to %s (open it in ui.perfetto.dev)\n",
              pod.first_loss, pod.host_loss, pod.last_loss, pod.step_seconds * 1e6, trace_path.c_str());

  std::printf("\nTest accuracy: MLP %.2f%%, CNN %.2f%%   (whole demo %.1f s)\n", 100 * mlp_result.test_accuracy,
              100 * cnn_result.test_accuracy, Seconds(start));
  int failures = 0;
  auto check = [&](bool ok, const std::string& what) {
    if (!ok) {
      std::fprintf(stderr, "FAILED: %s\n", what.c_str());
      ++failures;
    }
  };
  if (quick) {
    check(mlp_result.final_loss < 0.65, "MLP loss below 0.65 after 300 steps");
    check(cnn_result.final_loss < 0.9, "CNN loss below 0.9 after 300 steps");
  } else {
    check(mlp_result.test_accuracy >= 0.88, "MLP test accuracy >= 88%");
    check(cnn_result.test_accuracy >= 0.90, "CNN test accuracy >= 90%");
  }
  check(std::abs(pod.first_loss - pod.host_loss) < 0.02 * pod.host_loss + 1e-3,
        "the pod's first loss matches the host's on the same batch");
  check(restored_accuracy == cnn_result.test_accuracy, "the loaded checkpoint gives the same accuracy");
  check(pod.step_seconds > 0, "the pod reports a simulated step time");
  return failures == 0 ? 0 : 1;
}

int main(int argc, char** argv) {
  try {
    return Run(argc, argv);
  } catch (const jx::Error& e) {
    std::cerr << "fashion_mnist: " << e.what() << "\n";
    return 1;
  }
}
