// VGG19 forward on the CPU at N = 1 and 10 (224x224x3, random weights, jit), against the
// PyTorch peer (examples/vgg19/vgg19_torch.py, run as a subprocess after jx's benchmarks so the
// two never share the cores). Target: jx at most 0.8x the peer's time.
//
// Where jx's time goes: Vgg19Conv/<layer>/<N> times each of the 16 convolutions alone (the
// conv kernel, one jit per layer shape), so the summary splits the forward pass into the conv
// kernel and everything else (bias + ReLU, pooling, the classifier).
//
//   vgg19_bench [--benchmark_filter=...]    (JX_VGG19_PEER=path overrides the peer script)
#include <benchmark/benchmark.h>

#include <cstdio>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <jx/jx.h>

#include "../examples/vgg19/vgg19_model.h"
#include "../examples/vgg19/vgg19_peer.h"

namespace {

using jx::Array;
namespace jnp = jx::numpy;
namespace lax = jx::lax;

constexpr int64_t kImage = 224;

const vgg19::Vgg19& Model() {
  static const auto* m = new vgg19::Vgg19(vgg19::Init(jx::random::key(0), kImage));
  return *m;
}

Array Images(int64_t n) { return jx::random::normal(jx::random::key(n), {n, kImage, kImage, 3}); }

// Measured seconds per call, by benchmark name.
std::map<std::string, double>& Seconds() {
  static auto* m = new std::map<std::string, double>;
  return *m;
}

void BM_Vgg19Forward(benchmark::State& state, int64_t n) {
  const Array x = Images(n);
  auto forward = jx::jit(vgg19::Forward);
  forward(Model(), x).block_until_ready();  // compile outside the timing
  for (auto _ : state) forward(Model(), x).block_until_ready();
  state.counters["images/s"] = benchmark::Counter(static_cast<double>(n), benchmark::Counter::kIsIterationInvariantRate);
}

// The l-th convolution (0..15) alone, bias and ReLU excluded: the conv kernel's share.
void BM_Vgg19Conv(benchmark::State& state, int layer, int64_t n) {
  const jx::nn::Conv& conv = Model().features[static_cast<size_t>(layer)];
  int64_t side = kImage, k = 0;
  for (int b = 0; b < 5 && k + vgg19::kBlockLayers[b] <= layer; ++b) {
    k += vgg19::kBlockLayers[b];
    side /= 2;
  }
  const Array x = jx::random::normal(jx::random::key(7), {n, side, side, conv.in_channels()});
  auto f = jx::jit([](const Array& v, const Array& w) {
    return lax::conv_general_dilated(v, w, {1, 1}, lax::Padding::Same(), {}, {},
                                     lax::ConvDimensionNumbers::FromSpecs("NHWC", "HWIO", "NHWC"));
  });
  f(x, conv.weight).block_until_ready();
  for (auto _ : state) f(x, conv.weight).block_until_ready();
  state.counters["GFLOP/s"] = benchmark::Counter(
      2.0 * n * side * side * 9 * conv.in_channels() * conv.out_channels() / 1e9, benchmark::Counter::kIsIterationInvariantRate);
}

std::string Fmt(std::optional<double> v, const char* format) {
  if (!v) return "-";
  char buf[32];
  std::snprintf(buf, sizeof buf, format, *v);
  return buf;
}

class PeerReporter : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    for (const Run& r : runs) {
      if (r.error_occurred) continue;
      // "Vgg19Forward/1/min_time:2.000/real_time" -> "Vgg19Forward/1".
      std::string name = r.benchmark_name();
      for (const char* suffix : {"/min_time", "/real_time"}) name = name.substr(0, name.find(suffix));
      Seconds()[name] = r.GetAdjustedRealTime() / benchmark::GetTimeUnitMultiplier(r.time_unit);
    }
    ConsoleReporter::ReportRuns(runs);
  }
  void Finalize() override {
    ConsoleReporter::Finalize();
    std::vector<int64_t> batches;
    for (int64_t n : {1, 10}) {
      if (Seconds().count("Vgg19Forward/" + std::to_string(n))) batches.push_back(n);
    }
    if (batches.empty()) return;
    std::string why;
    const std::string json = vgg19::RunPeer(vgg19::PeerScript(__FILE__), batches, kImage, /*reps=*/5,
                                            /*backward=*/false, &why);
    std::printf("\nVGG19 forward, %lldx%lldx3, seconds per call (target: jx <= 0.8x PyTorch)\n",
                static_cast<long long>(kImage), static_cast<long long>(kImage));
    std::printf("%4s %10s %10s %8s %12s %12s\n", "N", "jx", "PyTorch", "jx/peer", "jx conv only", "jx the rest");
    for (int64_t n : batches) {
      const double jx_s = Seconds()["Vgg19Forward/" + std::to_string(n)];
      double conv_s = 0;
      bool all_convs = true;
      for (int l = 0; l < 16; ++l) {
        auto it = Seconds().find("Vgg19Conv/" + std::to_string(l) + "/" + std::to_string(n));
        if (it == Seconds().end()) {
          all_convs = false;
        } else {
          conv_s += it->second;
        }
      }
      std::optional<double> peer;
      if (!json.empty()) peer = vgg19::JsonNumber(json, "forward", std::to_string(n));
      std::printf("%4lld %10.4f %10s %8s %12s %12s\n", static_cast<long long>(n), jx_s, Fmt(peer, "%.4f").c_str(),
                  Fmt(peer ? std::optional<double>(jx_s / *peer) : std::nullopt, "%.2f").c_str(),
                  Fmt(all_convs ? std::optional<double>(conv_s) : std::nullopt, "%.4f").c_str(),
                  Fmt(all_convs ? std::optional<double>(jx_s - conv_s) : std::nullopt, "%.4f").c_str());
    }
    if (json.empty()) std::printf("PyTorch peer skipped: %s\n", why.c_str());
  }
};

}  // namespace

int main(int argc, char** argv) {
  for (int64_t n : {1, 10}) {
    benchmark::RegisterBenchmark(("Vgg19Forward/" + std::to_string(n)).c_str(), BM_Vgg19Forward, n)
        ->UseRealTime()
        ->Unit(benchmark::kMillisecond)
        ->MinTime(2.0);
  }
  for (int64_t n : {1, 10}) {
    for (int l = 0; l < 16; ++l) {
      benchmark::RegisterBenchmark(("Vgg19Conv/" + std::to_string(l) + "/" + std::to_string(n)).c_str(), BM_Vgg19Conv,
                                   l, n)
          ->UseRealTime()
          ->Unit(benchmark::kMillisecond);
    }
  }
  benchmark::Initialize(&argc, argv);
  PeerReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  benchmark::Shutdown();
  return 0;
}
