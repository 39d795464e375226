// CPU backend kernels against hand-written baselines, all on 2 threads:
//   1. The 8-op chain tanh(x*1.5 + 0.5) * x - exp(-x*x) on 16M f32 as one kLoop fusion,
//      vs the same chain as one Eigen array expression per chunk (hand fused, one pass).
//      Target: jit / hand-fused <= 1.5x. Also on 256K f32 (L2-resident), which isolates the
//      op loops from the memory stream. Process CPU time per run (both threads) is reported
//      too: on a shared, loaded machine it is steadier than the wall clock. The machine's
//      limit for the chain is a copy of the same bytes (read 16M f32, write 16M f32, the same
//      chunks on 2 threads): the chain's time is also given as a multiple of it.
//   2. A dense layer 128x784 @ 784x512 + bias, tanh as one kOutput fusion (epilogue applied
//      per output block), vs Eigen GEMM followed by a separate bias+tanh pass; GFLOP/s also
//      as a fraction of the machine's measured single-thread GEMM rate.
// A summary with the ratios is printed after the runs: medians over the repetitions (run
// with --benchmark_repetitions=5), or the one run of each without repetitions. JX_BENCH_TILE=n sets the loop kernels'
// tile size.
#include <algorithm>
#include <cstdlib>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>
#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>

#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wignored-attributes"
#include <Eigen/Core>

#include "jx/compiler/backend/cpu/cpu_executable.h"
#include "jx/compiler/hlo/hlo_parser.h"
#include "median_reporter.h"

namespace {

constexpr int kThreads = 2;
constexpr int64_t kN = int64_t{16} << 20;
// The chain also on an L2-resident size: the op loops alone, without the memory stream.
constexpr int64_t kSmallN = int64_t{256} << 10;
constexpr int64_t kM = 128, kK = 784, kCols = 512;

using ArrayF = Eigen::Array<float, Eigen::Dynamic, 1>;
using RowMat = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

// The chain module for 16M elements (ChainHlo substitutes other sizes).
constexpr char kChainHlo[] = R"(HloModule chain
%fused_computation (param_0: f32[16777216]) -> f32[16777216] {
  %param_0 = f32[16777216] parameter(0)
  %c15 = f32[] constant(1.5)
  %b15 = f32[16777216] broadcast(%c15), dimensions={}
  %m = f32[16777216] multiply(%param_0, %b15)
  %c05 = f32[] constant(0.5)
  %b05 = f32[16777216] broadcast(%c05), dimensions={}
  %a = f32[16777216] add(%m, %b05)
  %t = f32[16777216] tanh(%a)
  %tx = f32[16777216] multiply(%t, %param_0)
  %xx = f32[16777216] multiply(%param_0, %param_0)
  %n = f32[16777216] negate(%xx)
  %e = f32[16777216] exponential(%n)
  ROOT %r = f32[16777216] subtract(%tx, %e)
}
ENTRY %main (x: f32[16777216]) -> f32[16777216] {
  %x = f32[16777216] parameter(0)
  ROOT %fusion = f32[16777216] fusion(%x), kind=kLoop, calls=%fused_computation
})";

constexpr char kDenseHlo[] = R"(HloModule dense
%fused_computation (p0: f32[128,784], p1: f32[784,512], p2: f32[512]) -> f32[128,512] {
  %p0 = f32[128,784] parameter(0)
  %p1 = f32[784,512] parameter(1)
  %d = f32[128,512] dot(%p0, %p1), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  %p2 = f32[512] parameter(2)
  %b = f32[128,512] broadcast(%p2), dimensions={1}
  %a = f32[128,512] add(%d, %b)
  ROOT %t = f32[128,512] tanh(%a)
}
ENTRY %main (x: f32[128,784], w: f32[784,512], bias: f32[512]) -> f32[128,512] {
  %x = f32[128,784] parameter(0)
  %w = f32[784,512] parameter(1)
  %bias = f32[512] parameter(2)
  ROOT %fusion = f32[128,512] fusion(%x, %w, %bias), kind=kOutput, calls=%fused_computation
})";

std::vector<float> Random(int64_t n, float lo, float hi, int seed) {
  std::vector<float> v(n);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  for (float& x : v) x = dist(rng);
  return v;
}

std::string ChainHlo(int64_t n) {
  std::string text = kChainHlo;
  const std::string from = "16777216", to = std::to_string(n);
  for (size_t pos = text.find(from); pos != std::string::npos; pos = text.find(from, pos)) {
    text.replace(pos, from.size(), to);
    pos += to.size();
  }
  return text;
}

std::unique_ptr<jx::cpu::CpuExecutable> Compile(const std::string& text) {
  jx::cpu::CpuCompileOptions options;
  options.max_threads = kThreads;
  if (const char* t = std::getenv("JX_BENCH_TILE")) options.tile_elements = std::atoll(t);
  auto module = jx::hlo::ParseHloModule(text);
  if (!module.ok()) std::abort();
  auto exe = jx::cpu::CompileForCpu(*std::move(module), options);
  if (!exe.ok()) std::abort();
  return *std::move(exe);
}

struct ChainData {
  explicit ChainData(int64_t n)
      : x(Random(n, -3, 3, 0)), out(n), exe(Compile(ChainHlo(n))) {}
  std::vector<float> x, out;
  std::unique_ptr<jx::cpu::CpuExecutable> exe;
};
ChainData& Chain(int64_t n) {
  static auto* data = new std::map<int64_t, std::unique_ptr<ChainData>>;
  std::unique_ptr<ChainData>& d = (*data)[n];
  if (d == nullptr) d = std::make_unique<ChainData>(n);
  return *d;
}

struct DenseData {
  std::vector<float> x = Random(kM * kK, -1, 1, 1), w = Random(kK * kCols, -0.05f, 0.05f, 2),
                     bias = Random(kCols, -1, 1, 3), out = std::vector<float>(kM * kCols);
  std::unique_ptr<jx::cpu::CpuExecutable> exe = Compile(kDenseHlo);
};
DenseData& Dense() {
  static DenseData* d = new DenseData;
  return *d;
}

using bench::CpuTimer;

tbb::task_arena& Arena() {
  static tbb::task_arena* a = new tbb::task_arena(kThreads);
  return *a;
}

void BM_HandFusedChain(benchmark::State& state) {
  const int64_t n_all = state.range(0);
  ChainData& d = Chain(n_all);
  CpuTimer cpu(state);
  for (auto _ : state) {
    Arena().execute([&] {
      tbb::parallel_for(tbb::blocked_range<int64_t>(0, n_all, 1 << 16),
                        [&](const tbb::blocked_range<int64_t>& r) {
                          const int64_t n = r.end() - r.begin();
                          Eigen::Map<const ArrayF> x(d.x.data() + r.begin(), n);
                          Eigen::Map<ArrayF>(d.out.data() + r.begin(), n) =
                              (x * 1.5f + 0.5f).tanh() * x - (-x * x).exp();
                        });
    });
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations() * n_all);
}

// The memory limit for the chain: the same bytes copied, in the hand-fused loop's chunks.
void BM_CopyChainBytes(benchmark::State& state) {
  const int64_t n_all = state.range(0);
  ChainData& d = Chain(n_all);
  CpuTimer cpu(state);
  for (auto _ : state) {
    Arena().execute([&] {
      tbb::parallel_for(tbb::blocked_range<int64_t>(0, n_all, 1 << 16),
                        [&](const tbb::blocked_range<int64_t>& r) {
                          std::memcpy(d.out.data() + r.begin(), d.x.data() + r.begin(),
                                      (r.end() - r.begin()) * sizeof(float));
                        });
    });
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * n_all * 2 * int64_t{sizeof(float)});
}

void BM_JitChain(benchmark::State& state) {
  ChainData& d = Chain(state.range(0));
  const void* args[] = {d.x.data()};
  void* outs[] = {d.out.data()};
  CpuTimer cpu(state);
  for (auto _ : state) {
    if (!d.exe->Run(args, outs).ok()) state.SkipWithError("run failed");
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations() * state.range(0));
}

// Plain Eigen GEMM on one thread: the machine's single-GEMM rate.
void BM_EigenGemm1Thread(benchmark::State& state) {
  DenseData& d = Dense();
  Eigen::Map<const RowMat> x(d.x.data(), kM, kK), w(d.w.data(), kK, kCols);
  Eigen::Map<RowMat> out(d.out.data(), kM, kCols);
  for (auto _ : state) {
    out.noalias() = x * w;
    benchmark::ClobberMemory();
  }
  state.counters["GFLOP/s"] = benchmark::Counter(2.0 * kM * kK * kCols * state.iterations(),
                                                 benchmark::Counter::kIsRate);
}

// Eigen GEMM (row halves on 2 threads), then bias + tanh as a separate pass.
void BM_EigenGemmThenEpilogue(benchmark::State& state) {
  DenseData& d = Dense();
  for (auto _ : state) {
    Arena().execute([&] {
      tbb::parallel_for(int64_t{0}, int64_t{kThreads}, [&](int64_t t) {
        const int64_t r0 = t * kM / kThreads, r1 = (t + 1) * kM / kThreads;
        Eigen::Map<RowMat>(d.out.data() + r0 * kCols, r1 - r0, kCols).noalias() =
            Eigen::Map<const RowMat>(d.x.data() + r0 * kK, r1 - r0, kK) *
            Eigen::Map<const RowMat>(d.w.data(), kK, kCols);
      });
      tbb::parallel_for(int64_t{0}, int64_t{kThreads}, [&](int64_t t) {
        const int64_t r0 = t * kM / kThreads, r1 = (t + 1) * kM / kThreads;
        Eigen::Map<RowMat> o(d.out.data() + r0 * kCols, r1 - r0, kCols);
        o = (o.rowwise() + Eigen::Map<const Eigen::RowVectorXf>(d.bias.data(), kCols))
                .array()
                .tanh()
                .matrix();
      });
    });
    benchmark::ClobberMemory();
  }
  state.counters["GFLOP/s"] = benchmark::Counter(2.0 * kM * kK * kCols * state.iterations(),
                                                 benchmark::Counter::kIsRate);
}

void BM_JitDenseOutputFusion(benchmark::State& state) {
  DenseData& d = Dense();
  const void* args[] = {d.x.data(), d.w.data(), d.bias.data()};
  void* outs[] = {d.out.data()};
  for (auto _ : state) {
    if (!d.exe->Run(args, outs).ok()) state.SkipWithError("run failed");
    benchmark::ClobberMemory();
  }
  state.counters["GFLOP/s"] = benchmark::Counter(2.0 * kM * kK * kCols * state.iterations(),
                                                 benchmark::Counter::kIsRate);
}

BENCHMARK(BM_HandFusedChain)->Arg(kN)->Arg(kSmallN)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_JitChain)->Arg(kN)->Arg(kSmallN)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_CopyChainBytes)->Arg(kN)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_EigenGemm1Thread)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_EigenGemmThenEpilogue)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_JitDenseOutputFusion)->Unit(benchmark::kMicrosecond)->UseRealTime();

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  bench::MedianReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  benchmark::Shutdown();

  std::printf("\nSummary (%d threads; median of each benchmark's repetitions)\n", kThreads);
  for (const int64_t n : {kN, kSmallN}) {
    const std::string arg = "/" + std::to_string(n);
    const double jit_chain = reporter.Median("BM_JitChain" + arg);
    const double hand_chain = reporter.Median("BM_HandFusedChain" + arg);
    if (jit_chain <= 0 || hand_chain <= 0) continue;
    std::printf("  8-op chain on %lld f32%s: jit kLoop fusion / hand-fused Eigen = %.2fx%s\n",
                static_cast<long long>(n), n == kSmallN ? " (L2-resident)" : "",
                jit_chain / hand_chain, n == kN ? " (target <= 1.5x)" : "");
    const double jit_cpu = reporter.MedianCpu("BM_JitChain" + arg);
    const double hand_cpu = reporter.MedianCpu("BM_HandFusedChain" + arg);
    if (jit_cpu > 0 && hand_cpu > 0) {
      std::printf("    in process CPU time (both threads; robust to a loaded machine): %.2f / "
                  "%.2f ms = %.2fx\n",
                  jit_cpu, hand_cpu, jit_cpu / hand_cpu);
    }
    const double copy = reporter.Median("BM_CopyChainBytes" + arg);
    if (copy > 0) {
      std::printf("    memory limit (a copy of the same bytes, %.1f GB/s): %.2f ms; jit = %.2fx it, "
                  "hand-fused = %.2fx it\n",
                  2.0 * sizeof(float) * n / (copy * 1e-3) * 1e-9, copy, jit_chain / copy,
                  hand_chain / copy);
      const double copy_cpu = reporter.MedianCpu("BM_CopyChainBytes" + arg);
      if (copy_cpu > 0 && jit_cpu > 0 && hand_cpu > 0) {
        std::printf("    in process CPU time: copy %.2f ms; jit = %.2fx it, hand-fused = %.2fx it\n",
                    copy_cpu, jit_cpu / copy_cpu, hand_cpu / copy_cpu);
      }
    }
  }
  const double gemm1 = reporter.Median("BM_EigenGemm1Thread");
  const double separate = reporter.Median("BM_EigenGemmThenEpilogue");
  const double fused = reporter.Median("BM_JitDenseOutputFusion");
  if (gemm1 > 0 && separate > 0 && fused > 0) {
    const double flop = 2.0 * kM * kK * kCols;
    // Median times are in the benchmarks' units (microseconds here).
    const double rate1 = flop / gemm1 * 1e-3, rate_fused = flop / fused * 1e-3;
    std::printf("  dense %lldx%lld @ %lldx%lld + bias + tanh: jit kOutput fusion / (Eigen GEMM + "
                "separate epilogue) = %.2fx\n",
                static_cast<long long>(kM), static_cast<long long>(kK),
                static_cast<long long>(kK), static_cast<long long>(kCols), fused / separate);
    std::printf("  fused kernel %.1f GFLOP/s = %.2fx the single-thread Eigen GEMM rate (%.1f "
                "GFLOP/s), %.0f%% of %d x that rate\n",
                rate_fused, rate_fused / rate1, rate1, 100 * rate_fused / (kThreads * rate1),
                kThreads);
  }
  return 0;
}
