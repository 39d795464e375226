// Fashion-MNIST epoch time for the demo's MLP and CNN (examples/fashion_mnist/models.h): jx's
// jitted training step (value_and_grad + adam, donated) against the PyTorch peer
// (bench/peers/fashion_mnist_torch.py, the same models, optimizer and batch sizes as the demo,
// run by /usr/bin/python3 in the same run), side by side with the ratio jx / PyTorch (below 1:
// jx is faster). An epoch is 60,000 images in whole batches (the MLP's batches are 128, the
// CNN's 64, as in the demo); both sides time steps on random data after a warm-up and multiply. Each side reports wall-clock time and process
// CPU time (all threads): on a shared machine the wall clock measures the load as much as the
// code, and the CPU time is the steadier comparison. The peer is skipped, with a message, when
// torch does not import. Both sides use 2 threads (JX_NUM_THREADS, torch.set_num_threads).
//
//   fashion_mnist_bench [--peer PATH] [google benchmark flags]
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
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

constexpr int64_t kMlpBatch = 128, kCnnBatch = 64;  // the demo's
int64_t StepsPerEpoch(int64_t batch) { return 60000 / batch; }

struct StepTimes {
  double wall = 0, cpu = 0;  // seconds per step
};
// Measured by the benchmarks (by benchmark name), for the table.
std::map<std::string, StepTimes> g_jx_steps;

double ProcessCpuSeconds() {
  timespec t;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return double(t.tv_sec) + 1e-9 * double(t.tv_nsec);
}

template <typename Model>
void BM_TrainStep(benchmark::State& state, const char* name, const char* bench, int64_t batch) {
  Model model(jx::random::key(0));
  const auto opt = jx::optax::adam(1e-3);
  jx::optax::OptState opt_state = opt.init(model);
  auto step = fashion_mnist::MakeTrainStep<Model>(opt, std::string(name) + "_train_step");
  const Array x = jx::random::normal(jx::random::key(1), {batch, 28, 28, 1});
  const Array y = jx::random::randint(jx::random::key(2), {batch}, 0, 10);
  Array loss;
  for (int i = 0; i < 2; ++i) std::tie(model, opt_state, loss) = step(model, opt_state, x, y);  // compile, warm up
  loss.block_until_ready();
  const auto wall0 = std::chrono::steady_clock::now();
  const double cpu0 = ProcessCpuSeconds();
  for (auto _ : state) {
    std::tie(model, opt_state, loss) = step(model, opt_state, x, y);
    loss.block_until_ready();
  }
  const double n = double(state.iterations());
  const StepTimes t{std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count() / n,
                    (ProcessCpuSeconds() - cpu0) / n};
  g_jx_steps[bench] = t;  // the last (longest) run of the benchmark
  state.counters["epoch_s"] = t.wall * StepsPerEpoch(batch);
  state.counters["epoch_cpu_s"] = t.cpu * StepsPerEpoch(batch);
}

void BM_JxMlpStep(benchmark::State& state) { BM_TrainStep<Mlp>(state, "mlp", "BM_JxMlpStep", kMlpBatch); }
void BM_JxCnnStep(benchmark::State& state) { BM_TrainStep<Cnn>(state, "cnn", "BM_JxCnnStep", kCnnBatch); }
BENCHMARK(BM_JxMlpStep)->Unit(benchmark::kMillisecond)->MinTime(2.0);
BENCHMARK(BM_JxCnnStep)->Unit(benchmark::kMillisecond)->MinTime(3.0);

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
  const std::string cmd = env + "/usr/bin/python3 '" + script + "' 2 20 " + std::to_string(kMlpBatch) + " " +
                          std::to_string(kCnnBatch) + " 2>&1";
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
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();

  const std::optional<std::string> peer = FindPeer(peer_flag);
  std::string json;
  if (!peer) {
    json = "{\"skipped\": \"bench/peers/fashion_mnist_torch.py not found (pass --peer PATH)\"}";
  } else {
    json = RunPeer(*peer);
  }
  std::printf("\nFashion-MNIST epoch time (60,000 images; MLP batch %lld, CNN batch %lld), 2 threads:\n",
              (long long)kMlpBatch, (long long)kCnnBatch);
  std::printf("%-6s %20s %20s %20s\n", "", "jx", "PyTorch", "jx / PyTorch");
  std::printf("%-6s %10s %9s %10s %9s %10s %9s\n", "model", "wall (s)", "CPU (s)", "wall (s)", "CPU (s)", "wall", "CPU");
  const bool skipped = json.find("\"skipped\"") != std::string::npos || json.find("mlp_step_s") == std::string::npos;
  for (const auto& [label, bench, key, batch] :
       {std::tuple{"MLP", "BM_JxMlpStep", "mlp", kMlpBatch}, std::tuple{"CNN", "BM_JxCnnStep", "cnn", kCnnBatch}}) {
    const int64_t steps = StepsPerEpoch(batch);
    auto it = g_jx_steps.find(bench);
    if (it == g_jx_steps.end()) continue;  // filtered out
    const double jx_wall = it->second.wall * steps, jx_cpu = it->second.cpu * steps;
    const std::optional<double> peer_wall = skipped ? std::nullopt : JsonNumber(json, std::string(key) + "_step_s");
    const std::optional<double> peer_cpu = skipped ? std::nullopt : JsonNumber(json, std::string(key) + "_step_cpu_s");
    if (peer_wall && peer_cpu) {
      const double pw = *peer_wall * steps, pc = *peer_cpu * steps;
      std::printf("%-6s %10.2f %9.2f %10.2f %9.2f %10.2f %9.2f\n", label, jx_wall, jx_cpu, pw, pc, jx_wall / pw,
                  jx_cpu / pc);
    } else {
      std::printf("%-6s %10.2f %9.2f %10s %9s %10s %9s\n", label, jx_wall, jx_cpu, "-", "-", "-", "-");
    }
  }
  if (skipped) std::printf("PyTorch peer skipped: %s\n", json.c_str());
  return 0;
}
