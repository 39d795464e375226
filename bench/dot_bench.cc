// dot_general and conv_general_dilated throughput, against direct Eigen GEMM calls in the
// same run and with the same thread count (jx's pool size, JX_NUM_THREADS):
//   - EigenTensor: Eigen's Tensor contraction on an Eigen::ThreadPoolDevice (Eigen's own
//     multi-threaded GEMM without OpenMP);
//   - EigenMatmul1T: Eigen's matrix product on one thread (what each jx block runs).
// Prints GFLOP/s per benchmark and, at the end, the jx / Eigen ratios (medians when run with
// --benchmark_repetitions).
//
//   build-x/bench/dot_bench --benchmark_repetitions=3
// GCC 12 reports false positives inside Eigen's AVX-512 intrinsics (jx_lax disables the same).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#define EIGEN_USE_THREADS
#include <array>
#include <cstdio>
#include <map>
#include <vector>
#include <string>

#include <benchmark/benchmark.h>
#include <Eigen/Core>
#include <unsupported/Eigen/CXX11/Tensor>

#include <jx/jx.h>

#include "jx/core/parallel.h"
#include "jx/lax/kernels/gemm.h"

namespace {

using jx::Array;
namespace lax = jx::lax;

Array Filled(const jx::Shape& shape, jx::DType dtype) {
  Array a = Array::Empty(shape, dtype);
  float* p = static_cast<float*>(a.mutable_data());
  const int64_t size = a.size();
  for (int64_t i = 0; i < size; ++i) p[i] = static_cast<float>((i * 7919) % 1000) * 1e-3f - 0.5f;
  return a;
}

void SetFlops(benchmark::State& state, double flops_per_iter) {
  state.counters["GFLOP/s"] = benchmark::Counter(flops_per_iter * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}

void BM_JxDotGeneral(benchmark::State& state) {
  const int64_t n = state.range(0);
  Array a = Filled({n, n}, jx::float32), b = Filled({n, n}, jx::float32);
  for (auto _ : state) {
    Array c = lax::dot_general(a, b, {{1}, {0}, {}, {}});
    benchmark::DoNotOptimize(c.data());
  }
  SetFlops(state, 2.0 * n * n * n);
}

void BM_EigenTensor(benchmark::State& state) {
  const int64_t n = state.range(0);
  Array a = Filled({n, n}, jx::float32), b = Filled({n, n}, jx::float32);
  Array c = Array::Empty({n, n}, jx::float32);
  Eigen::ThreadPool pool(jx::NumThreads());
  Eigen::ThreadPoolDevice device(&pool, jx::NumThreads());
  using Map = Eigen::TensorMap<Eigen::Tensor<const float, 2, Eigen::RowMajor>>;
  Map ta(static_cast<const float*>(a.data()), n, n), tb(static_cast<const float*>(b.data()), n, n);
  Eigen::TensorMap<Eigen::Tensor<float, 2, Eigen::RowMajor>> tc(static_cast<float*>(c.mutable_data()), n, n);
  const Eigen::array<Eigen::IndexPair<int>, 1> dims = {Eigen::IndexPair<int>(1, 0)};
  for (auto _ : state) {
    tc.device(device) = ta.contract(tb, dims);
    benchmark::DoNotOptimize(c.data());
  }
  SetFlops(state, 2.0 * n * n * n);
}

void BM_EigenMatmul1T(benchmark::State& state) {
  const int64_t n = state.range(0);
  Array a = Filled({n, n}, jx::float32), b = Filled({n, n}, jx::float32);
  Array c = Array::Empty({n, n}, jx::float32);
  using M = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  Eigen::Map<const M> ma(static_cast<const float*>(a.data()), n, n), mb(static_cast<const float*>(b.data()), n, n);
  Eigen::Map<M> mc(static_cast<float*>(c.mutable_data()), n, n);
  for (auto _ : state) {
    mc.noalias() = ma * mb;
    benchmark::DoNotOptimize(c.data());
  }
  SetFlops(state, 2.0 * n * n * n);
}

// Batch 32, 56x56x64 -> 64, 3x3, stride 1, SAME: a ResNet-50 stage-1 convolution.
constexpr int64_t kN = 32, kHW = 56, kC = 64, kO = 64, kK = 3;
constexpr double kConvFlops = 2.0 * kN * kHW * kHW * kO * kC * kK * kK;

void BM_JxConvNHWC(benchmark::State& state) {
  Array x = Filled({kN, kHW, kHW, kC}, jx::float32), w = Filled({kK, kK, kC, kO}, jx::float32);
  const auto dn = lax::ConvDimensionNumbers::FromSpecs("NHWC", "HWIO", "NHWC");
  for (auto _ : state) {
    Array y = lax::conv_general_dilated(x, w, {1, 1}, lax::Padding::Same(), {}, {}, dn);
    benchmark::DoNotOptimize(y.data());
  }
  SetFlops(state, kConvFlops);
}

void BM_JxConvNCHW(benchmark::State& state) {
  Array x = Filled({kN, kC, kHW, kHW}, jx::float32), w = Filled({kO, kC, kK, kK}, jx::float32);
  for (auto _ : state) {
    Array y = lax::conv_general_dilated(x, w, {1, 1}, lax::Padding::Same());
    benchmark::DoNotOptimize(y.data());
  }
  SetFlops(state, kConvFlops);
}

// The GEMM the NHWC convolution performs, on pre-built patches: the ceiling im2col aims at.
void BM_JxGemmConvShape(benchmark::State& state) {
  const int64_t m = kN * kHW * kHW, k = kK * kK * kC;
  Array p = Filled({m, k}, jx::float32), w = Filled({k, kO}, jx::float32);
  for (auto _ : state) {
    Array y = lax::dot_general(p, w, {{1}, {0}, {}, {}});
    benchmark::DoNotOptimize(y.data());
  }
  SetFlops(state, kConvFlops);
}

// K-major products (C = A^T B of row-major A [k, m] and B [k, n]: a weight gradient summed
// over a long batch or time axis), one thread, through the kernel library's Gemm (which picks
// the direct K-major kernel where UseKMajorGemm says so) and through Eigen's packed product as
// a user calls it (it allocates its packing buffers per call; the kernel library's own Eigen
// path reuses a per-thread workspace and is faster).
// Args: m, n, k. 256 x 256 x 1000 is the scan RNN's weight gradient (bench/scan_grad_bench).
struct KMajorOperands {
  explicit KMajorOperands(int64_t m, int64_t n, int64_t k)
      : a(Filled({k, m}, jx::float32)), b(Filled({k, n}, jx::float32)), c(Array::Empty({m, n}, jx::float32)) {}
  Array a, b, c;
};

void BM_KMajorGemm(benchmark::State& state) {
  const int64_t m = state.range(0), n = state.range(1), k = state.range(2);
  KMajorOperands x(m, n, k);
  jx::lax::kernels::GemmArgs g;
  g.m = m;
  g.n = n;
  g.k = k;
  g.a = x.a.data();
  g.lda = m;
  g.transpose_a = true;
  g.b = x.b.data();
  g.ldb = n;
  g.c = x.c.mutable_data();
  g.ldc = n;
  g.parallel = false;
  for (auto _ : state) {
    jx::lax::kernels::Gemm(g);
    benchmark::DoNotOptimize(x.c.data());
  }
  SetFlops(state, 2.0 * m * n * k);
}

void BM_KMajorGemmEigen(benchmark::State& state) {
  const int64_t m = state.range(0), n = state.range(1), k = state.range(2);
  KMajorOperands x(m, n, k);
  using M = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  Eigen::Map<const M> ma(static_cast<const float*>(x.a.data()), k, m), mb(static_cast<const float*>(x.b.data()), k, n);
  Eigen::Map<M> mc(static_cast<float*>(x.c.mutable_data()), m, n);
  for (auto _ : state) {
    mc.noalias() = ma.transpose() * mb;
    benchmark::DoNotOptimize(x.c.data());
  }
  SetFlops(state, 2.0 * m * n * k);
}

// The RNN's shape, others where the direct kernel runs, and two where Eigen's stays (m or n
// above 256).
constexpr std::array<std::array<int64_t, 3>, 6> kKMajorShapes = {
    {{256, 256, 1000}, {128, 128, 4096}, {64, 256, 1000}, {256, 256, 256}, {384, 384, 1000}, {512, 512, 512}}};

void KMajorShapes(benchmark::internal::Benchmark* b) {
  for (const auto& [m, n, k] : kKMajorShapes) {
    b->Args({m, n, k});
  }
}

// The machine's GEMM limit for the ratios above: a square f32 product on one thread, in CPU
// time like them (Eigen's packed product, the kernel library's default path).
void BM_SquareGemm1T(benchmark::State& state) {
  const int64_t n = state.range(0);
  Array a = Filled({n, n}, jx::float32), b = Filled({n, n}, jx::float32), c = Array::Empty({n, n}, jx::float32);
  jx::lax::kernels::GemmArgs g;
  g.m = g.n = g.k = n;
  g.a = a.data();
  g.b = b.data();
  g.c = c.mutable_data();
  g.lda = g.ldb = g.ldc = n;
  g.parallel = false;
  for (auto _ : state) {
    jx::lax::kernels::Gemm(g);
    benchmark::DoNotOptimize(c.data());
  }
  SetFlops(state, 2.0 * n * n * n);
}

BENCHMARK(BM_SquareGemm1T)->Arg(1024)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_KMajorGemm)->Apply(KMajorShapes)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_KMajorGemmEigen)->Apply(KMajorShapes)->Unit(benchmark::kMicrosecond);

BENCHMARK(BM_JxDotGeneral)->Arg(1024)->Arg(2048)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_EigenTensor)->Arg(1024)->Arg(2048)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_EigenMatmul1T)->Arg(1024)->Arg(2048)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_JxConvNHWC)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_JxConvNCHW)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_JxGemmConvShape)->Unit(benchmark::kMillisecond)->UseRealTime();

// Console output plus the GFLOP/s of each benchmark (the median aggregate when present).
class RatioReporter : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    for (const Run& r : runs) {
      auto it = r.counters.find("GFLOP/s");
      if (it == r.counters.end() || r.error_occurred) continue;
      const std::string key = r.run_name.function_name + (r.run_name.args.empty() ? "" : "/" + r.run_name.args);
      if (r.run_type == Run::RT_Aggregate) {
        if (r.aggregate_name == "median") medians_[key] = it->second.value;
      } else {
        last_[key] = it->second.value;
      }
    }
    ConsoleReporter::ReportRuns(runs);
  }
  double Get(const std::string& key) const {
    if (auto it = medians_.find(key); it != medians_.end()) return it->second;
    if (auto it = last_.find(key); it != last_.end()) return it->second;
    return 0;
  }
  bool has_medians() const { return !medians_.empty(); }

 private:
  std::map<std::string, double> medians_, last_;
};

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  RatioReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  std::printf("\nSummary (%s GFLOP/s, %d threads):\n", reporter.has_medians() ? "median" : "single-run",
              jx::NumThreads());
  for (const char* n : {"1024", "2048"}) {
    const double jx_g = reporter.Get(std::string("BM_JxDotGeneral/") + n);
    const double et = reporter.Get(std::string("BM_EigenTensor/") + n);
    const double e1 = reporter.Get(std::string("BM_EigenMatmul1T/") + n);
    if (jx_g == 0) continue;
    std::printf("  dot_general f32 %s^3: jx %.1f | Eigen Tensor contraction (%d threads) %.1f -> ratio %.2f | "
                "Eigen matmul 1 thread %.1f -> ratio %.2f\n",
                n, jx_g, jx::NumThreads(), et, et > 0 ? jx_g / et : 0.0, e1, e1 > 0 ? jx_g / e1 : 0.0);
  }
  const double limit = reporter.Get("BM_SquareGemm1T/1024");
  for (const auto& [m, n, k] : kKMajorShapes) {
    const std::string shape = std::to_string(m) + "/" + std::to_string(n) + "/" + std::to_string(k);
    const double direct = reporter.Get("BM_KMajorGemm/" + shape), eigen = reporter.Get("BM_KMajorGemmEigen/" + shape);
    if (direct == 0 || eigen == 0) continue;
    std::printf("  K-major A^T B %s (1 thread, CPU time): kernel library %.1f, Eigen %.1f GFLOP/s -> %.2fx; "
                "%.2f of the square 1024^3 GEMM's %.1f\n",
                shape.c_str(), direct, eigen, direct / eigen, limit > 0 ? direct / limit : 0.0, limit);
  }
  const double nhwc = reporter.Get("BM_JxConvNHWC"), nchw = reporter.Get("BM_JxConvNCHW");
  const double gemm = reporter.Get("BM_JxGemmConvShape");
  if (nhwc > 0 || nchw > 0) {
    std::printf("  conv 32x56x56x64 -> 64, 3x3 SAME: NHWC %.1f, NCHW %.1f GFLOP/s; the same GEMM on prebuilt "
                "patches %.1f GFLOP/s (NHWC conv / GEMM %.2f)\n",
                nhwc, nchw, gemm, gemm > 0 ? nhwc / gemm : 0.0);
  }
  benchmark::Shutdown();
  return 0;
}
