// Fashion-MNIST epoch time for the demo's MLP and CNN (examples/fashion_mnist/models.h): jx's
// jitted training step (value_and_grad + adam, donated) against the PyTorch peer
// (bench/peers/fashion_mnist_torch.py, the same models, optimizer and batch of 128, run by
// /usr/bin/python3 in the same run), side by side with the ratio jx / PyTorch (below 1: jx is
// faster). An epoch is 468 steps of 128 images (60,000 with drop_last); both sides time steps
// on random data after a warm-up and multiply. The peer is skipped, with a message, when torch
// does not import. Both sides use 2 threads (JX_NUM_THREADS, torch.set_num_threads).
//
//   fashion_mnist_bench [--peer PATH] [google benchmark flags]
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "../examples/fashion_mnist/models.h"

namespace {

using fashion_mnist::Cnn;
using fashion_mnist::Mlp;
using jx::Array;

constexpr int64_t kBatch = 128;
constexpr int64_t kStepsPerEpoch = 60000 / kBatch;

// Seconds per step, measured by the benchmarks, for the table.
std::map<std::string, double> g_jx_step_seconds;

template <typename Model>
void BM_TrainStep(benchmark::State& state, const char* name) {
  Model model(jx::random::key(0));
  const auto opt = jx::optax::adam(1e-3);
  jx::optax::OptState opt_state = opt.init(model);
  auto step = fashion_mnist::MakeTrainStep<Model>(opt, std::string(name) + "_train_step");
  const Array x = jx::random::normal(jx::random::key(1), {kBatch, 28, 28, 1});
  const Array y = jx::random::randint(jx::random::key(2), {kBatch}, 0, 10);
  Array loss;
  for (int i = 0; i < 2; ++i) std::tie(model, opt_state, loss) = step(model, opt_state, x, y);  // compile, warm up
  loss.block_until_ready();
  for (auto _ : state) {
    std::tie(model, opt_state, loss) = step(model, opt_state, x, y);
    loss.block_until_ready();
  }
  state.counters["epoch_s"] =
      benchmark::Counter(1.0 / kStepsPerEpoch, benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
}

void BM_JxMlpStep(benchmark::State& state) { BM_TrainStep<Mlp>(state, "mlp"); }
void BM_JxCnnStep(benchmark::State& state) { BM_TrainStep<Cnn>(state, "cnn"); }
BENCHMARK(BM_JxMlpStep)->Unit(benchmark::kMillisecond)->MinTime(2.0);
BENCHMARK(BM_JxCnnStep)->Unit(benchmark::kMillisecond)->MinTime(3.0);

// Records each benchmark's real time per iteration (seconds) for the side-by-side table.
class Recorder : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    for (const Run& r : runs) {
      if (r.run_type == Run::RT_Iteration && r.iterations > 0) {
        g_jx_step_seconds[r.benchmark_name()] = r.GetAdjustedRealTime() / benchmark::GetTimeUnitMultiplier(r.time_unit);
      }
    }
    ConsoleReporter::ReportRuns(runs);
  }
};

std::optional<std::string> FindPeer(const std::string& flag) {
  std::vector<std::filesystem::path> candidates;
  if (!flag.empty()) candidates.emplace_back(flag);
  const std::filesystem::path here = std::filesystem::path(__FILE__).parent_path();
  candidates.push_back(here / "peers" / "fashion_mnist_torch.py");
  std::error_code ec;
  const std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) candidates.push_back(exe.parent_path() / ".." / ".." / "bench" / "peers" / "fashion_mnist_torch.py");
  for (const auto& c : candidates) {
    if (std::filesystem::is_regular_file(c, ec)) return c.string();
  }
  return std::nullopt;
}

// The number after "key": in the peer's one-line JSON, or nullopt.
std::optional<double> JsonNumber(const std::string& json, const std::string& key) {
  const size_t at = json.find("\"" + key + "\":");
  if (at == std::string::npos) return std::nullopt;
  return std::strtod(json.c_str() + at + key.size() + 3, nullptr);
}

std::string RunPeer(const std::string& script) {
  std::string env;
  std::ifstream cpuinfo("/proc/cpuinfo");
  const std::string info((std::istreambuf_iterator<char>(cpuinfo)), std::istreambuf_iterator<char>());
  // Debian's OpenBLAS and ATen pick slow kernels on this CPU unless told (bench/peers/side_by_side.py).
  if (info.find("avx512f") != std::string::npos) env = "OPENBLAS_CORETYPE=SkylakeX ATEN_CPU_CAPABILITY=avx512 ";
  const std::string cmd = env + "/usr/bin/python3 '" + script + "' 2 20 2>&1";
  std::string out;
  if (FILE* p = ::popen(cmd.c_str(), "r")) {
    char buf[4096];
    while (size_t n = std::fread(buf, 1, sizeof buf, p)) out.append(buf, n);
    ::pclose(p);
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  std::string peer_flag;
  std::vector<char*> args;
  for (int i = 0; i < argc; ++i) {
    if (std::string(argv[i]) == "--peer" && i + 1 < argc) {
      peer_flag = argv[++i];
    } else {
      args.push_back(argv[i]);
    }
  }
  if (std::getenv("JX_NUM_THREADS") == nullptr) ::setenv("JX_NUM_THREADS", "2", 1);
  int n = static_cast<int>(args.size());
  benchmark::Initialize(&n, args.data());
  Recorder recorder;
  benchmark::RunSpecifiedBenchmarks(&recorder);
  benchmark::Shutdown();

  const std::optional<std::string> peer = FindPeer(peer_flag);
  std::string json;
  if (!peer) {
    json = "{\"skipped\": \"bench/peers/fashion_mnist_torch.py not found (pass --peer PATH)\"}";
  } else {
    json = RunPeer(*peer);
  }
  std::printf("\nFashion-MNIST epoch time (%lld steps of %lld), 2 threads:\n", (long long)kStepsPerEpoch,
              (long long)kBatch);
  std::printf("%-6s %12s %12s %14s\n", "model", "jx (s)", "PyTorch (s)", "jx / PyTorch");
  const bool skipped = json.find("\"skipped\"") != std::string::npos || json.find("mlp_step_s") == std::string::npos;
  for (const auto& [label, bench, key] : {std::tuple{"MLP", "BM_JxMlpStep", "mlp_step_s"},
                                          std::tuple{"CNN", "BM_JxCnnStep", "cnn_step_s"}}) {
    // The run's name is the benchmark's plus its arguments ("BM_JxMlpStep/min_time:2.000").
    auto it = g_jx_step_seconds.lower_bound(bench);
    if (it == g_jx_step_seconds.end() || it->first.rfind(bench, 0) != 0) continue;  // filtered out
    const double jx_epoch = it->second * kStepsPerEpoch;
    const std::optional<double> peer_step = skipped ? std::nullopt : JsonNumber(json, key);
    if (peer_step) {
      std::printf("%-6s %12.2f %12.2f %14.2f\n", label, jx_epoch, *peer_step * kStepsPerEpoch,
                  jx_epoch / (*peer_step * kStepsPerEpoch));
    } else {
      std::printf("%-6s %12.2f %12s %14s\n", label, jx_epoch, "-", "-");
    }
  }
  if (skipped) std::printf("PyTorch peer skipped: %s\n", json.c_str());
  return 0;
}
