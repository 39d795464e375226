// The CPU pipeline's passes one by one on compile_bench's traced sin/mul chain at 10k and 100k
// equations (issue 16 item 3): each pass's CPU time (this thread's, with the verifier's run
// after it where it ran: the VM is shared, wall time is not the pass's) in ns per equation,
// averaged over several runs of the pipeline on fresh clones of the lowered module (cloning
// not timed), and the verifier alone on the lowered module. A pass that costs more per
// equation at 100k than at 10k walks memory that has left the cache; the summary prints the
// growth of each.
//
//   build/bench/pass_bench                       # both sizes and the summary
//   build/bench/pass_bench --benchmark_filter=/100000
#include <benchmark/benchmark.h>

#include <time.h>

#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include <jx/jx.h>
#include <jx/compiler/hlo/hlo_module.h>
#include <jx/compiler/hlo/hlo_verifier.h>
#include <jx/devices/cpu/cpu_compiler.h>
#include <jx/devices/cpu/cpu_pipeline.h>

#include "chain_program.h"

namespace {

namespace jnp = jx::numpy;

double ThreadCpuSeconds() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

// Per pass (in pipeline order, "name#k" for its k-th run), CPU seconds summed over the runs.
struct PassTimes {
  std::vector<std::string> order;
  std::map<std::string, double> seconds;
  std::map<std::string, bool> verified;
  std::map<std::string, bool> skipped;  // the pipeline skipped it (at a fixed point, nothing changed since)
  int64_t runs = 0;
};
std::map<int64_t, PassTimes> g_times;

jx::cpu_device::LoweredModule LowerChain(int64_t n) {
  const jx::ClosedJaxpr jaxpr = jx::make_jaxpr([n](const jx::Array& x) { return chain::Chain(x, n); })(jnp::ones({8}));
  return jx::cpu_device::LowerToHlo(jaxpr, {.name = "chain"});
}

void BM_CpuPasses(benchmark::State& state) {
  const int64_t n = state.range(0);
  jx::cpu_device::LoweredModule lowered = LowerChain(n);
  PassTimes& times = g_times[n];
  for (auto _ : state) {
    state.PauseTiming();
    std::unique_ptr<jx::hlo::HloModule> module = *lowered.module->Clone();
    state.ResumeTiming();
    jx::hlo::HloPassPipeline pipeline("cpu");
    jx::AddCpuPasses(pipeline, lowered.donated_params);
    // Called after each pass and its verifier run: the CPU time since the last call is theirs.
    std::vector<double> seconds;
    double last = ThreadCpuSeconds();
    pipeline.set_dump_callback([&](std::string_view, const jx::hlo::HloModule&) {
      const double now = ThreadCpuSeconds();
      seconds.push_back(now - last);
      last = ThreadCpuSeconds();
    });
    if (!pipeline.Run(module.get()).ok()) state.SkipWithError("the pipeline failed");
    state.PauseTiming();
    std::map<std::string, int> seen;
    for (size_t i = 0; i < pipeline.timings().size(); ++i) {
      const jx::hlo::HloPassPipeline::PassTiming& t = pipeline.timings()[i];
      const std::string key = t.name + "#" + std::to_string(++seen[t.name]);
      if (times.runs == 0) times.order.push_back(key);
      times.seconds[key] += seconds[i];
      times.verified[key] = t.verify_seconds > 0;
      times.skipped[key] = t.skipped;
    }
    ++times.runs;
    module.reset();
    state.ResumeTiming();
  }
}
BENCHMARK(BM_CpuPasses)->Arg(10000)->Arg(100000)->MinTime(2.0)->Unit(benchmark::kMillisecond);

// The verifier alone, on the module as lowered.
void BM_Verifier(benchmark::State& state) {
  const int64_t n = state.range(0);
  jx::cpu_device::LoweredModule lowered = LowerChain(n);
  for (auto _ : state) {
    if (!jx::hlo::VerifyHloModule(*lowered.module).ok()) state.SkipWithError("the verifier failed");
  }
}
BENCHMARK(BM_Verifier)->Arg(10000)->Arg(100000)->MinTime(1.0)->Unit(benchmark::kMillisecond);

void Summarize() {
  auto it10 = g_times.find(10000), it100 = g_times.find(100000);
  for (const auto& [n, times] : g_times) {
    std::printf("\nCPU ns per equation at %lld (%lld runs), each pass with the verifier's run after it (+v)\n",
                static_cast<long long>(n), static_cast<long long>(times.runs));
    for (const std::string& key : times.order) {
      const double scale = 1e9 / static_cast<double>(times.runs) / static_cast<double>(n);
      const char* note = times.skipped.at(key) ? " skipped" : times.verified.at(key) ? " +v" : "";
      std::printf("  %-40s %8.1f", (key + note).c_str(), times.seconds.at(key) * scale);
      if (n == 100000 && it10 != g_times.end() && it10->second.seconds.contains(key)) {
        const PassTimes& small = it10->second;
        const double a = small.seconds.at(key) / small.runs / 1e4, b = times.seconds.at(key) / times.runs / 1e5;
        if (a > 0) std::printf("   growth %.2fx", b / a);
      }
      std::printf("\n");
    }
  }
  if (it10 != g_times.end() && it100 != g_times.end()) {
    auto total = [](const PassTimes& t, int64_t n) {
      double s = 0;
      for (const auto& [k, v] : t.seconds) s += v;
      return s * 1e9 / static_cast<double>(t.runs) / static_cast<double>(n);
    };
    const double a = total(it10->second, 10000), b = total(it100->second, 100000);
    std::printf("\nThe pipeline with its verifier runs: %.1f CPU ns per equation at 10k, %.1f at 100k (%.2fx)\n", a, b, b / a);
  }
}

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  Summarize();
  benchmark::Shutdown();
  return 0;
}
