// Compile time per equation at 1k, 10k and 100k equations (issue 16 item 3): one traced
// straight-line program (alternating sin and mul on an f32[8]) lowered to HLO, optimized by
// the CPU pipeline and compiled, with the program cache defeated by a fresh name per
// compile. The summary prints the cost per equation and its growth per decade (1.0 = linear;
// target at most 1.2), and JX_LOG_COMPILES=2 breaks a compile down by phase.
//
// Every point is a steady state: each compiled program is dropped (jx::clear_caches(), timed:
// freeing the program is part of the cost, as the eviction is in a full cache), so each compile
// runs on a heap that held a program of that size before, at every size. (Keeping the programs
// would measure something else at 10k and 100k than at 1k: the 1k point's thousands of
// compiles fill the 1024-program cache and reuse evicted memory, while the few compiles of the
// larger points write every program into fresh pages the kernel must clear: ~0.2-0.3 us per
// equation. BM_CompileChainKept/10000 is that case, reported beside the steady one.)
// BM_CompileChainFirst is the process's first compile of the 100k program (its heap faulted
// in fresh). BM_CompileTiny is the fixed cost of one compile (a one-equation program), which
// the opinfo jit column pays thousands of times; BM_LowerChain is the lowering alone at each
// size; BM_CacheHitChain is lowering plus the cache lookup of a program compiled before (what
// a re-traced jit pays).
#include <benchmark/benchmark.h>

#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include <jx/jx.h>
#include <jx/devices/cpu/cpu_compiler.h>

#include "chain_program.h"

namespace {

using jx::Array;
namespace lax = jx::lax;
namespace jnp = jx::numpy;

using chain::Chain;

const jx::ClosedJaxpr& ChainJaxpr(int64_t n) {
  static std::map<int64_t, jx::ClosedJaxpr> jaxprs;
  auto it = jaxprs.find(n);
  if (it == jaxprs.end()) {
    it = jaxprs.emplace(n, jx::make_jaxpr([n](const Array& x) { return Chain(x, n); })(jnp::ones({8}))).first;
  }
  return it->second;
}

// First, while the process is small.
void BM_CompileTiny(benchmark::State& state) {
  const jx::ClosedJaxpr& jaxpr = ChainJaxpr(1);
  const jx::Device& cpu = *jx::devices().front();
  static int64_t fresh = 0;
  for (auto _ : state) {
    auto lowering = jx::cpu_device::LowerForCpu(jaxpr, {.name = "tiny" + std::to_string(fresh++)}, cpu);
    benchmark::DoNotOptimize(lowering->Compile());
    jx::clear_caches();
  }
}
BENCHMARK(BM_CompileTiny)->Unit(benchmark::kMicrosecond)->UseRealTime();

// The first compile of a program this size in the process (before BM_CompileChain's).
void BM_CompileChainFirst(benchmark::State& state) {
  const jx::ClosedJaxpr& jaxpr = ChainJaxpr(state.range(0));
  const jx::Device& cpu = *jx::devices().front();
  for (auto _ : state) {
    auto lowering = jx::cpu_device::LowerForCpu(jaxpr, {.name = "first"}, cpu);
    benchmark::DoNotOptimize(lowering->Compile());
    jx::clear_caches();
  }
}
BENCHMARK(BM_CompileChainFirst)->Arg(100000)->Iterations(1)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_CompileChain(benchmark::State& state) {
  const int64_t n = state.range(0);
  const jx::ClosedJaxpr& jaxpr = ChainJaxpr(n);
  const jx::Device& cpu = *jx::devices().front();
  static int64_t fresh = 0;
  for (auto _ : state) {
    auto lowering = jx::cpu_device::LowerForCpu(jaxpr, {.name = "chain" + std::to_string(fresh++)}, cpu);
    benchmark::DoNotOptimize(lowering->Compile());
    jx::clear_caches();
  }
}
BENCHMARK(BM_CompileChain)->Arg(1000)->Arg(10000)->Arg(100000)->MinTime(3.0)->Unit(benchmark::kMillisecond)->UseRealTime();

// The 10k point with every program kept in the program cache (a process that compiles a few
// hundred distinct programs): each compile's program lands in pages the process never had.
void BM_CompileChainKept(benchmark::State& state) {
  const jx::ClosedJaxpr& jaxpr = ChainJaxpr(state.range(0));
  const jx::Device& cpu = *jx::devices().front();
  static int64_t fresh = 0;
  for (auto _ : state) {
    auto lowering = jx::cpu_device::LowerForCpu(jaxpr, {.name = "kept" + std::to_string(fresh++)}, cpu);
    benchmark::DoNotOptimize(lowering->Compile());
  }
  jx::clear_caches();
}
BENCHMARK(BM_CompileChainKept)->Arg(10000)->MinTime(3.0)->Unit(benchmark::kMillisecond)->UseRealTime();

// Lowering alone (LowerForCpu: the HLO module and its fingerprint, nothing compiled): the
// first phase of BM_CompileChain, whose per-equation cost should not grow with the program.
void BM_LowerChain(benchmark::State& state) {
  const jx::ClosedJaxpr& jaxpr = ChainJaxpr(state.range(0));
  const jx::Device& cpu = *jx::devices().front();
  for (auto _ : state) benchmark::DoNotOptimize(jx::cpu_device::LowerForCpu(jaxpr, {.name = "lower"}, cpu));
}
BENCHMARK(BM_LowerChain)->Arg(1000)->Arg(10000)->Arg(100000)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_CacheHitChain(benchmark::State& state) {
  const jx::ClosedJaxpr& jaxpr = ChainJaxpr(state.range(0));
  const jx::Device& cpu = *jx::devices().front();
  jx::cpu_device::LowerForCpu(jaxpr, {.name = "hit"}, cpu)->Compile();
  for (auto _ : state) {
    benchmark::DoNotOptimize(jx::cpu_device::LowerForCpu(jaxpr, {.name = "hit"}, cpu)->Compile());
  }
}
BENCHMARK(BM_CacheHitChain)->Arg(10000)->Unit(benchmark::kMillisecond)->UseRealTime();

class SummaryReporter : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    for (const Run& r : runs) {
      if (r.run_type != Run::RT_Iteration) continue;
      if (r.run_name.function_name == "BM_CompileChain") {
        real_ms_[r.run_name.args] = r.GetAdjustedRealTime();
        cpu_ms_[r.run_name.args] = r.GetAdjustedCPUTime();
      } else if (r.run_name.function_name == "BM_CompileChainKept") {
        real_ms_["kept " + r.run_name.args] = r.GetAdjustedRealTime();
        cpu_ms_["kept " + r.run_name.args] = r.GetAdjustedCPUTime();
      } else if (r.run_name.function_name == "BM_CompileChainFirst") {
        real_ms_["first " + r.run_name.args] = r.GetAdjustedRealTime();
        cpu_ms_["first " + r.run_name.args] = r.GetAdjustedCPUTime();
      } else if (r.run_name.function_name == "BM_LowerChain") {
        lower_real_ms_[r.run_name.args] = r.GetAdjustedRealTime();
        lower_cpu_ms_[r.run_name.args] = r.GetAdjustedCPUTime();
      }
    }
    ConsoleReporter::ReportRuns(runs);
  }
  // Wall time is the target's measure; the CPU time of the compiling thread (compiles are
  // single-threaded) is printed too, as it is what a loaded machine still measures well.
  void Summarize() const {
    Summarize("Compile", "wall", real_ms_);
    Summarize("Compile", "CPU", cpu_ms_);
    Summarize("Lowering", "wall", lower_real_ms_);
    Summarize("Lowering", "CPU", lower_cpu_ms_);
  }

 private:
  static void Summarize(const char* what, const char* clock, const std::map<std::string, double>& ms) {
    auto per_eqn = [&](const std::string& key) {
      auto it = ms.find(key);
      const std::string n = key.substr(key.find_last_of(' ') + 1);
      return it == ms.end() ? -1.0 : it->second * 1e3 / std::stod(n);  // us per equation
    };
    const double a = per_eqn("1000"), b = per_eqn("10000"), c = per_eqn("100000");
    if (a <= 0 || b <= 0) return;
    std::printf("\n%s time per equation (%s): %.2f us at 1k, %.2f at 10k", what, clock, a, b);
    if (c > 0) std::printf(", %.2f at 100k", c);
    std::printf("; growth per decade %.2f (1k->10k)", b / a);
    if (c > 0) std::printf(", %.2f (10k->100k)", c / b);
    std::printf("; target <= 1.2\n");
    const double first = per_eqn("first 100000");
    if (first > 0) {
      std::printf("  first 100k compile of the process: %.2f us per equation, %.2fx the steady 10k point\n",
                  first, first / b);
    }
    const double kept = per_eqn("kept 10000");
    if (kept > 0) {
      std::printf("  10k compiles keeping every program: %.2f us per equation, %.2fx the steady 10k point\n", kept,
                  kept / b);
    }
  }

  std::map<std::string, double> real_ms_, cpu_ms_, lower_real_ms_, lower_cpu_ms_;
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
