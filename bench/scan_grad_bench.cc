// grad of a scan (issue 16 item 1): a 1000-step tanh RNN, h = 256 (h' = tanh(h W + x_t)),
// loss = sum of every hidden state. Compares, in one run, jit(value_and_grad) with the jit
// forward alone (target at most 3x, as JAX: the forward body runs once per step, residuals are
// saved, and the backward scan runs the transposed body) and with the PyTorch peer's unrolled
// RNN backward (autograd over a Python loop; skipped when /usr/bin/python3 has no torch).
#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <jx/jx.h>

namespace {

using jx::Array;
namespace lax = jx::lax;
namespace jnp = jx::numpy;

constexpr int64_t kSteps = 1000, kHidden = 256;

Array RnnLoss(const Array& w, const Array& h0, const Array& xs) {
  auto [h, hs] = lax::scan(
      [w](const Array& h, const Array& x) {
        Array h2 = jnp::tanh(jnp::matmul(h, w) + x);
        return std::pair{h2, h2};
      },
      h0, xs);
  return jnp::sum(hs);
}

struct Inputs {
  Array w = jx::random::normal(jx::random::key(0), {kHidden, kHidden}) * 0.05f;
  Array h0 = jnp::zeros({kHidden});
  Array xs = jx::random::normal(jx::random::key(1), {kSteps, kHidden});
};

const Inputs& In() {
  static const Inputs in;
  return in;
}

void BM_RnnForward(benchmark::State& state) {
  auto f = jx::jit(RnnLoss);
  f(In().w, In().h0, In().xs).block_until_ready();  // compile outside the timing
  for (auto _ : state) f(In().w, In().h0, In().xs).block_until_ready();
}

void BM_RnnValueAndGrad(benchmark::State& state) {
  auto f = jx::jit(jx::value_and_grad(RnnLoss, jx::argnums{0, 1}));
  std::get<0>(f(In().w, In().h0, In().xs).second).block_until_ready();  // compile outside the timing
  for (auto _ : state) {
    auto [v, g] = f(In().w, In().h0, In().xs);
    std::get<0>(g).block_until_ready();
  }
}

// CPU time is the process's (every thread's): on a loaded machine its ratio is the steadier one.
BENCHMARK(BM_RnnForward)->Unit(benchmark::kMillisecond)->UseRealTime()->MeasureProcessCPUTime();
BENCHMARK(BM_RnnValueAndGrad)->Unit(benchmark::kMillisecond)->UseRealTime()->MeasureProcessCPUTime();

// The peer: the same RNN unrolled in PyTorch, seconds per forward and per forward + backward
// (medians). One thread: the steps are 256-wide matvecs that threads do not speed up, and on a
// loaded 2-core machine torch's OpenMP pool of 2 spins at every op's barrier (measured 30x
// slower than 1 thread). {-1, -1} when /usr/bin/python3 has no torch.
std::pair<double, double> TorchSeconds() {
  const char* script = R"PY(
import sys, time, statistics
try:
    import torch
except ImportError:
    print(-1, -1); sys.exit(0)
torch.set_num_threads(1)
w = (torch.randn(256, 256) * 0.05).requires_grad_()
h0 = torch.zeros(256, requires_grad=True)
xs = torch.randn(1000, 256)
def step(backward):
    h = h0; total = 0
    for t in range(1000):
        h = torch.tanh(h @ w + xs[t]); total = total + h.sum()
    if backward:
        w.grad = None; h0.grad = None
        total.backward()
def median(backward):
    step(backward)
    times = []
    for _ in range(5):
        t0 = time.perf_counter(); step(backward); times.append(time.perf_counter() - t0)
    return statistics.median(times)
print(median(False), median(True))
)PY";
  // Debian's OpenBLAS and ATen pick slow kernels on an AVX-512 CPU unless told
  // (bench/peers/side_by_side.py); the peer runs at its best.
  std::ifstream cpuinfo("/proc/cpuinfo");
  const std::string info((std::istreambuf_iterator<char>(cpuinfo)), std::istreambuf_iterator<char>());
  const std::string env =
      info.find("avx512f") != std::string::npos ? "OPENBLAS_CORETYPE=SkylakeX ATEN_CPU_CAPABILITY=avx512 " : "";
  std::string cmd = env + "/usr/bin/python3 - 2>/dev/null <<'EOF'\n" + std::string(script) + "\nEOF";
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) return {-1, -1};
  double forward = -1, grad = -1;
  if (std::fscanf(p, "%lf %lf", &forward, &grad) != 2) forward = grad = -1;
  pclose(p);
  return {forward, grad};
}

class SummaryReporter : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    for (const Run& r : runs) {
      if (r.run_type == Run::RT_Iteration) {
        ms_[r.run_name.function_name] = r.GetAdjustedRealTime();
        cpu_ms_[r.run_name.function_name] = r.GetAdjustedCPUTime();
      }
    }
    ConsoleReporter::ReportRuns(runs);
  }
  void Summarize() const {
    auto f = ms_.find("BM_RnnForward"), g = ms_.find("BM_RnnValueAndGrad");
    if (f == ms_.end() || g == ms_.end()) return;
    std::printf("\nscan RNN 1000x256: value_and_grad / forward = %.2f (target <= 3); in process CPU time %.2f\n",
                g->second / f->second, cpu_ms_.at("BM_RnnValueAndGrad") / cpu_ms_.at("BM_RnnForward"));
    const auto [torch_forward, torch_grad] = TorchSeconds();
    if (torch_grad > 0) {
      std::printf("scan RNN 1000x256: jx value_and_grad / PyTorch unrolled forward+backward = %.3f (%.1f ms vs %.1f ms; "
                  "PyTorch's own grad / forward = %.2f)\n",
                  g->second * 1e-3 / torch_grad, g->second, torch_grad * 1e3, torch_grad / torch_forward);
    } else {
      std::printf("PyTorch peer skipped (/usr/bin/python3 has no torch)\n");
    }
  }

 private:
  std::map<std::string, double> ms_, cpu_ms_;
};

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  SummaryReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  reporter.Summarize();
  benchmark::Shutdown();
  return 0;
}
