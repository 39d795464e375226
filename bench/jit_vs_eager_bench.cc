// jit against eager, program by program: every lax primitive at a large representative size,
// plus the programs a new user writes first (a CNN block, a bf16 matmul, a row gather,
// pooling, an RNN scan, a fori_loop, in-place updates, sorting, 16-bit elementwise math,
// cumulative sums). Each program runs eagerly and under jx::jit in the same process, with
// results checked equal first (bit for bit for single ops, to a tolerance where jit fuses);
// the summary prints jit / eager per row and the worst ten, in wall time and in process CPU
// time (steadier on a shared, loaded machine), medians over the repetitions. Target (issue
// 10): every row at most 1.1x, fusions well under 1. Runs on JX_NUM_THREADS threads (2 on
// CI-like machines).
//
// Each row also reports minflt, the minor page faults per iteration (fresh output pages).
// --benchmark_enable_random_interleaving=true interleaves the eager and jit repetitions.
//
//   build/bench/jit_vs_eager_bench --benchmark_filter='conv|scan' --benchmark_repetitions=5
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include <sys/resource.h>

#include <benchmark/benchmark.h>

#include <jx/jx.h>

#include "median_reporter.h"

namespace {

using jx::Array;
namespace jnp = jx::numpy;
namespace lax = jx::lax;
using Arrays = std::vector<Array>;
using Program = std::function<Arrays(const Arrays&)>;

struct Row {
  std::string name;
  Program fn;
  Arrays args;
  // Relative tolerance of the jit-vs-eager check (0: bit for bit).
  double rtol = 0;
};

Array Normal(uint32_t seed, const jx::Shape& shape, jx::DType dtype = jx::float32) {
  return jx::random::normal(jx::random::key(seed), shape, dtype);
}

Array Randint(uint32_t seed, const jx::Shape& shape, int64_t lo, int64_t hi) {
  return jx::random::randint(jx::random::key(seed), shape, lo, hi);
}

// The table: the programs that were 3-550x slower under jit.
std::vector<Row> TableRows() {
  std::vector<Row> rows;
  const auto nhwc = lax::ConvDimensionNumbers::FromSpecs("NHWC", "HWIO", "NHWC");
  rows.push_back({"conv3x3_bias_relu_8x56x56x64",
                  [nhwc](const Arrays& a) {
                    Array y = lax::conv_general_dilated(a[0], a[1], {1, 1}, lax::Padding::Same(), {}, {}, nhwc);
                    return Arrays{lax::max(y + a[2], jnp::zeros_like(y))};
                  },
                  {Normal(1, {8, 56, 56, 64}), Normal(2, {3, 3, 64, 64}), Normal(3, {64})},
                  1e-5});
  rows.push_back({"matmul_bf16_1024",
                  [](const Arrays& a) { return Arrays{jnp::matmul(a[0], a[1])}; },
                  {Normal(4, {1024, 1024}, jx::bfloat16), Normal(5, {1024, 1024}, jx::bfloat16)}});
  rows.push_back({"take_4096_rows_of_50000x256",
                  [](const Arrays& a) { return Arrays{jnp::take(a[0], a[1], 0)}; },
                  {Normal(6, {50000, 256}), Randint(7, {4096}, 0, 50000)}});
  rows.push_back({"max_pool_2x2_8x56x56x64",
                  [](const Arrays& a) {
                    return Arrays{lax::reduce_window_max(a[0], {1, 2, 2, 1}, {1, 2, 2, 1},
                                                         {{0, 0}, {0, 0}, {0, 0}, {0, 0}})};
                  },
                  {Normal(8, {8, 56, 56, 64})}});
  rows.push_back({"scan_tanh_rnn_1000x256",
                  [](const Arrays& a) {
                    const Array w = a[1];
                    auto [h, hs] = lax::scan(
                        [w](const Array& h, const Array& x) {
                          Array h2 = jnp::tanh(jnp::matmul(h, w) + x);
                          return std::pair{h2, h2};
                        },
                        a[0], a[2]);
                    return Arrays{h, hs};
                  },
                  {Normal(9, {256}), Normal(10, {256, 256}) * 0.05f, Normal(11, {1000, 256})},
                  1e-5});
  rows.push_back({"fori_loop_100_sin_64k",
                  [](const Arrays& a) {
                    return Arrays{lax::fori_loop(0, 100, [](const Array&, const Array& x) { return jnp::sin(x); },
                                                 a[0])};
                  },
                  {Normal(12, {65536})}});
  rows.push_back({"dynamic_update_slice_256_into_1024",
                  [](const Arrays& a) { return Arrays{lax::dynamic_update_slice(a[0], a[1], {a[2], a[3]})}; },
                  {Normal(13, {1024, 1024}), Normal(14, {256, 256}), Array(100), Array(300)}});
  rows.push_back({"sort_rows_1024x1024",
                  [](const Arrays& a) { return Arrays{lax::sort(a[0], 1)}; },
                  {Normal(15, {1024, 1024})}});
  rows.push_back({"f16_x*x+1_4M",
                  [](const Arrays& a) { return Arrays{a[0] * a[0] + 1.0}; },
                  {Normal(16, {4 << 20}, jx::float16)},
                  1e-3});
  rows.push_back({"cumsum_1024x1024_axis1",
                  [](const Arrays& a) { return Arrays{lax::cumsum(a[0], 1)}; },
                  {Normal(17, {1024, 1024})}});
  return rows;
}

// One row per primitive family member at a size where a kernel's speed, not dispatch, shows.
std::vector<Row> PrimitiveRows() {
  std::vector<Row> rows;
  const jx::Shape big = {4 << 20};
  const Array x = Normal(20, big), y = Normal(21, big);
  const Array pos = jnp::abs(x) + 0.5f;
  auto unary = [&](std::string name, Array (*op)(const Array&), Array arg) {
    rows.push_back({name + "_f32_4M", [op](const Arrays& a) { return Arrays{op(a[0])}; }, {arg}});
  };
  auto binary = [&](std::string name, Array (*op)(const Array&, const Array&), Array a0, Array a1) {
    rows.push_back({name + "_f32_4M", [op](const Arrays& a) { return Arrays{op(a[0], a[1])}; }, {a0, a1}});
  };
  unary("neg", lax::neg, x);
  unary("abs", lax::abs, x);
  unary("floor", lax::floor, x);
  unary("exp", lax::exp, x);
  unary("log", lax::log, pos);
  unary("log1p", lax::log1p, pos);
  unary("tanh", lax::tanh, x);
  unary("logistic", lax::logistic, x);
  unary("sin", lax::sin, x);
  unary("cos", lax::cos, x);
  unary("sqrt", lax::sqrt, pos);
  unary("rsqrt", lax::rsqrt, pos);
  unary("erf", lax::erf, x);
  unary("atan", lax::atan, x);
  binary("add", lax::add, x, y);
  binary("mul", lax::mul, x, y);
  binary("div", lax::div, x, pos);
  binary("max", lax::max, x, y);
  binary("pow", lax::pow, pos, y);
  binary("atan2", lax::atan2, x, y);
  binary("rem", lax::rem, x, pos);
  binary("lt", lax::lt, x, y);
  rows.push_back({"select_n_f32_4M", [](const Arrays& a) { return Arrays{lax::select(a[0] > 0.f, a[0], a[1])}; },
                  {x, y}});
  rows.push_back({"clamp_f32_4M", [](const Arrays& a) { return Arrays{lax::clamp(Array(-1.f), a[0], Array(1.f))}; },
                  {x}});
  rows.push_back({"convert_f32_to_bf16_4M",
                  [](const Arrays& a) { return Arrays{lax::convert_element_type(a[0], jx::bfloat16)}; }, {x}});
  rows.push_back({"convert_f32_to_i32_4M",
                  [](const Arrays& a) { return Arrays{lax::convert_element_type(a[0], jx::int32)}; }, {x}});
  rows.push_back({"integer_pow3_f32_4M", [](const Arrays& a) { return Arrays{lax::integer_pow(a[0], 3)}; }, {x}});
  rows.push_back({"add_i32_4M", [](const Arrays& a) { return Arrays{a[0] + a[1]}; },
                  {Randint(22, big, -1000, 1000), Randint(23, big, -1000, 1000)}});
  rows.push_back({"shift_left_u32_4M",
                  [](const Arrays& a) { return Arrays{lax::shift_left(a[0], a[1])}; },
                  {lax::convert_element_type(Randint(24, big, 0, 1 << 20), jx::uint32),
                   lax::convert_element_type(Randint(25, big, 0, 8), jx::uint32)}});
  rows.push_back({"add_bf16_4M", [](const Arrays& a) { return Arrays{a[0] + a[1]}; },
                  {Normal(26, big, jx::bfloat16), Normal(27, big, jx::bfloat16)}});
  rows.push_back({"exp_f16_4M", [](const Arrays& a) { return Arrays{lax::exp(a[0])}; }, {Normal(28, big, jx::float16)}});

  const Array m = Normal(30, {2048, 2048});
  rows.push_back({"reduce_sum_rows_2048x2048", [](const Arrays& a) { return Arrays{lax::reduce_sum(a[0], {1})}; }, {m}});
  rows.push_back({"reduce_sum_cols_2048x2048", [](const Arrays& a) { return Arrays{lax::reduce_sum(a[0], {0})}; }, {m}});
  rows.push_back({"reduce_sum_sq_cols_fused_2048x2048", [](const Arrays& a) { return Arrays{lax::reduce_sum(a[0] * a[0], {0})}; }, {m}, 1e-6});
  rows.push_back({"reduce_max_all_2048x2048", [](const Arrays& a) { return Arrays{lax::reduce_max(a[0], {0, 1})}; }, {m}});
  rows.push_back({"argmax_rows_2048x2048", [](const Arrays& a) { return Arrays{lax::argmax(a[0], 1)}; }, {m}});
  rows.push_back({"transpose_2048x2048", [](const Arrays& a) { return Arrays{lax::transpose(a[0], {1, 0})}; }, {m}});
  rows.push_back({"broadcast_in_dim_2048_to_2048x2048",
                  [](const Arrays& a) { return Arrays{lax::broadcast_in_dim(a[0], {2048, 2048}, {1})}; },
                  {Normal(31, {2048})}});
  rows.push_back({"slice_strided_2048x2048",
                  [](const Arrays& a) { return Arrays{lax::slice(a[0], {1, 0}, {2048, 2048}, {2, 1})}; }, {m}});
  rows.push_back({"rev_2048x2048", [](const Arrays& a) { return Arrays{lax::rev(a[0], {1})}; }, {m}});
  rows.push_back({"pad_2048x2048",
                  [](const Arrays& a) { return Arrays{lax::pad(a[0], Array(0.f), {{{1, 1, 0}}, {{2, 2, 0}}})}; },
                  {m}});
  rows.push_back({"concatenate_2x2048x2048",
                  [](const Arrays& a) { return Arrays{lax::concatenate({a[0], a[1]}, 0)}; },
                  {m, Normal(32, {2048, 2048})}});
  rows.push_back({"iota_4M", [](const Arrays&) { return Arrays{lax::iota(jx::int32, 4 << 20)}; }, {}});
  rows.push_back({"dynamic_slice_512x512_of_2048x2048",
                  [](const Arrays& a) { return Arrays{lax::dynamic_slice(a[0], {a[1], a[2]}, {512, 512})}; },
                  {m, Array(700), Array(100)}});
  rows.push_back({"cumprod_2048x2048_axis0", [](const Arrays& a) { return Arrays{lax::cumprod(a[0], 0)}; }, {m}});
  rows.push_back({"cummax_2048x2048_axis1", [](const Arrays& a) { return Arrays{lax::cummax(a[0], 1)}; }, {m}});
  rows.push_back({"reduce_window_sum_3x3_2048x2048",
                  [](const Arrays& a) { return Arrays{lax::reduce_window_sum(a[0], {3, 3}, {1, 1}, {{1, 1}, {1, 1}})}; },
                  {m}});
  rows.push_back({"top_k_8_of_2048x2048",
                  [](const Arrays& a) {
                    auto [v, i] = lax::top_k(a[0], 8);
                    return Arrays{v, i};
                  },
                  {m}});
  rows.push_back({"matmul_f32_1024", [](const Arrays& a) { return Arrays{jnp::matmul(a[0], a[1])}; },
                  {Normal(33, {1024, 1024}), Normal(34, {1024, 1024})}});
  rows.push_back({"matmul_f64_512", [](const Arrays& a) { return Arrays{jnp::matmul(a[0], a[1])}; },
                  {Normal(35, {512, 512}, jx::float64), Normal(36, {512, 512}, jx::float64)}});
  rows.push_back({"matmul_i32_512", [](const Arrays& a) { return Arrays{jnp::matmul(a[0], a[1])}; },
                  {Randint(37, {512, 512}, -50, 50), Randint(38, {512, 512}, -50, 50)}});
  rows.push_back({"matmul_f16_1024", [](const Arrays& a) { return Arrays{jnp::matmul(a[0], a[1])}; },
                  {Normal(39, {1024, 1024}, jx::float16), Normal(40, {1024, 1024}, jx::float16)}});
  rows.push_back({"conv_depthwise3x3_8x56x56x64",
                  [](const Arrays& a) {
                    return Arrays{lax::conv_general_dilated(a[0], a[1], {1, 1}, lax::Padding::Same(), {}, {},
                                                            lax::ConvDimensionNumbers::FromSpecs("NHWC", "HWIO", "NHWC"),
                                                            /*feature_group_count=*/64)};
                  },
                  {Normal(41, {8, 56, 56, 64}), Normal(42, {3, 3, 1, 64})}});
  rows.push_back({"conv3x3_bf16_8x56x56x64",
                  [](const Arrays& a) {
                    return Arrays{lax::conv_general_dilated(a[0], a[1], {1, 1}, lax::Padding::Same(), {}, {},
                                                            lax::ConvDimensionNumbers::FromSpecs("NHWC", "HWIO", "NHWC"))};
                  },
                  {Normal(43, {8, 56, 56, 64}, jx::bfloat16), Normal(44, {3, 3, 64, 64}, jx::bfloat16)}});
  rows.push_back({"scatter_add_4096_rows_into_50000x256",
                  [](const Arrays& a) {
                    lax::ScatterDimensionNumbers dn{{1}, {0}, {0}};
                    return Arrays{lax::scatter_add(a[0], a[1].reshape({4096, 1}), a[2], dn)};
                  },
                  {Normal(45, {50000, 256}), Randint(46, {4096}, 0, 50000), Normal(47, {4096, 256})}});
  rows.push_back({"while_loop_count_to_1000",
                  [](const Arrays& a) {
                    return Arrays{lax::while_loop([](const Array& c) { return c < 1000; },
                                                  [](const Array& c) { return c + 1; }, a[0])};
                  },
                  {Array(0)}});
  rows.push_back({"cond_f32_4M",
                  [](const Arrays& a) {
                    return Arrays{lax::cond(a[1], [](const Array& v) { return jnp::sin(v); },
                                            [](const Array& v) { return jnp::cos(v); }, a[0])};
                  },
                  {x, Array(true)}});
  // The generic reduce (a reducer with no monoid primitive): eager runs its halving rounds
  // as vmapped calls of the reducer, jit as the CPU backend's expansion of the same tree.
  rows.push_back({"reduce_logaddexp_f32_1M",
                  [](const Arrays& a) {
                    return Arrays{lax::reduce(a[0], Array(-INFINITY),
                                              [](const Array& p, const Array& q) { return jnp::logaddexp(p, q); }, {0})};
                  },
                  {Normal(48, {1 << 20})}});
  // A fusion: jit should be well under eager.
  rows.push_back({"fusion_8op_chain_f32_4M",
                  [](const Arrays& a) {
                    const Array& v = a[0];
                    return Arrays{jnp::tanh(v * 1.5f + 0.5f) * v - jnp::exp(-(v * v))};
                  },
                  {x},
                  1e-6});
  return rows;
}

std::vector<Row>& Rows() {
  static auto* rows = [] {
    auto* r = new std::vector<Row>(TableRows());
    for (Row& p : PrimitiveRows()) r->push_back(std::move(p));
    return r;
  }();
  return *rows;
}

// How jit's answer compares with eager's: "equal", "close" (within the row's rtol), or what
// differs.
std::string Compare(const Arrays& got, const Arrays& want, double rtol) {
  if (got.size() != want.size()) return "output count differs";
  bool bitwise = true;
  for (size_t k = 0; k < got.size(); ++k) {
    if (got[k].shape() != want[k].shape() || got[k].dtype() != want[k].dtype()) return "shape/dtype differs";
    const std::vector<double> g = got[k].to_vector<double>(), w = want[k].to_vector<double>();
    for (size_t i = 0; i < g.size(); ++i) {
      if (g[i] == w[i] || (std::isnan(g[i]) && std::isnan(w[i]))) continue;
      bitwise = false;
      if (std::abs(g[i] - w[i]) > rtol * std::max(1.0, std::abs(w[i]))) {
        char buf[160];
        std::snprintf(buf, sizeof(buf), "DIFFERS at output %zu element %zu: jit %.9g eager %.9g", k, i, g[i], w[i]);
        return buf;
      }
    }
  }
  return bitwise ? "equal" : "close";
}

// What jit's check against eager found, per row.
std::map<std::string, std::string>& Checks() {
  static auto* r = new std::map<std::string, std::string>;
  return *r;
}

// Minor page faults of the process so far (fresh output pages touched for the first time).
int64_t MinorFaults() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_minflt;
}

// Reports the minor page faults per iteration as the counter "minflt".
void CountFaults(benchmark::State& state, int64_t before) {
  state.counters["minflt"] = benchmark::Counter(static_cast<double>(MinorFaults() - before),
                                                benchmark::Counter::kAvgIterations);
}

void RunEager(benchmark::State& state, const Row* row) {
  bench::CpuTimer cpu(state);
  const int64_t faults = MinorFaults();
  for (auto _ : state) {
    Arrays out = row->fn(row->args);
    benchmark::DoNotOptimize(out);
  }
  CountFaults(state, faults);
}

void RunJit(benchmark::State& state, const Row* row) {
  auto jitted = jx::jit([row](const Arrays& args) { return row->fn(args); });
  Arrays got;
  try {
    got = jitted(row->args);  // compile outside the timed loop
  } catch (const std::exception& e) {
    state.SkipWithError(e.what());
    Checks()[row->name] = std::string("jit threw: ") + e.what();
    return;
  }
  Checks()[row->name] = Compare(got, row->fn(row->args), row->rtol);
  bench::CpuTimer cpu(state);
  const int64_t faults = MinorFaults();
  for (auto _ : state) {
    Arrays out = jitted(row->args);
    benchmark::DoNotOptimize(out);
  }
  CountFaults(state, faults);
}

class RatioReporter : public bench::MedianReporter {
 public:
  void Finalize() override {
    MedianReporter::Finalize();
    std::vector<std::pair<double, std::string>> ratios;
    std::printf("\n%-40s %10s %10s %9s %9s  %s\n", "program", "eager ms", "jit ms", "jit/eager",
                "cpu ratio", "jit vs eager");
    for (const Row& row : Rows()) {
      const double eager = Median(row.name + "/eager"), jit = Median(row.name + "/jit");
      if (eager <= 0 && jit <= 0) continue;  // filtered out
      const double eager_cpu = MedianCpu(row.name + "/eager"), jit_cpu = MedianCpu(row.name + "/jit");
      const double ratio = eager > 0 && jit > 0 ? jit / eager : 0;
      const double cpu_ratio = eager_cpu > 0 && jit_cpu > 0 ? jit_cpu / eager_cpu : 0;
      std::printf("%-40s %10.4f %10.4f %9.2f %9.2f  %s\n", row.name.c_str(), eager, jit, ratio, cpu_ratio,
                  Checks()[row.name].c_str());
      if (ratio > 0) ratios.push_back({ratio, row.name});
    }
    std::sort(ratios.rbegin(), ratios.rend());
    std::printf("\nworst ten jit/eager in wall time (target <= 1.1):\n");
    for (size_t i = 0; i < ratios.size() && i < 10; ++i) {
      std::printf("  %6.2f  %s\n", ratios[i].first, ratios[i].second.c_str());
    }
  }
};

}  // namespace

int main(int argc, char** argv) {
  for (const Row& row : Rows()) {
    benchmark::RegisterBenchmark((row.name + "/eager").c_str(), RunEager, &row)->UseRealTime()->Unit(benchmark::kMillisecond);
    benchmark::RegisterBenchmark((row.name + "/jit").c_str(), RunJit, &row)->UseRealTime()->Unit(benchmark::kMillisecond);
  }
  benchmark::Initialize(&argc, argv);
  RatioReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  benchmark::Shutdown();
  return 0;
}
