// VGG19 on jx: the seed paper's table (Fischer & Saba 2018, "Automatic full compilation of Julia
// programs and ML models to cloud TPUs"): VGG19 forward and forward+backward at batch sizes
// N = 1, 10, 100 on 224x224x3 images with random weights, for
//   - jx on this CPU (jit; the median of --reps calls after a warm-up),
//   - the PyTorch peer on this CPU in the same run (vgg19_torch.py beside this program, run as
//     a subprocess by /usr/bin/python3; the column reads "-" when torch is not installed),
//   - jx's simulated time on one TPU v3, v5e and v6e device (a v3 device is one TensorCore, as
//     JAX lists v3; v5e and v6e a chip): the step is lowered and compiled for
//     a simulated device from jx::ShapeDtypeStructs and the cost model's predicted_seconds read
//     (nothing is computed, so N = 100 costs no host time).
// The paper reports PyTorch CPU 1.16 / 9.55 / 93.0 s and compiled TPU compute 0.02 / 0.04 /
// 0.2 s for the forward pass at N = 1 / 10 / 100.
//
//   vgg19                         full table; CPU columns up to N = 10 (--max-cpu-n)
//   vgg19 --max-cpu-n 100         also N = 100 on the CPU (minutes; forward+backward keeps ~34 GB
//                                 of f32 activations live, the simulated chips' peak)
//   vgg19 --tiny                  N = 1 at 32x32, one repetition (the ctest entry adds --no-peer)
//   options: --image-size S (multiple of 32), --batches 1,10,100, --reps R, --no-peer,
//            --no-tpu, --chips v3,v5e,v6e

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <map>
#include <memory>
#include <algorithm>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include <jx/core/parallel.h>  // jx::NumThreads
#include <jx/jx.h>

#include "vgg19_model.h"
#include "vgg19_peer.h"

namespace {

using jx::Array;
using jx::ShapeDtypeStruct;

struct Config {
  int64_t image_size = 224;
  std::vector<int64_t> batches = {1, 10, 100};
  int64_t max_cpu_n = 10;
  int reps = 3;
  bool peer = true;
  bool tpu = true;
  std::vector<std::string> chips = {"v3", "v5e", "v6e"};
};

std::vector<std::string> SplitCommas(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  for (std::string item; std::getline(ss, item, ',');) {
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

[[noreturn]] void Usage(const std::string& why) {
  std::cerr << "vgg19: " << why << "\n"
            << "usage: vgg19 [--tiny] [--image-size S] [--batches 1,10,100] [--max-cpu-n N] [--reps R]\n"
            << "             [--no-peer] [--no-tpu] [--chips v3,v5e,v6e]\n";
  std::exit(2);
}

Config ParseArgs(int argc, char** argv) {
  Config c;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) Usage(a + " needs a value");
      return argv[++i];
    };
    if (a == "--tiny") {
      c.image_size = 32;
      c.batches = {1};
      c.reps = 1;
    } else if (a == "--image-size") {
      c.image_size = std::stoll(value());
    } else if (a == "--batches") {
      c.batches.clear();
      for (const std::string& b : SplitCommas(value())) c.batches.push_back(std::stoll(b));
    } else if (a == "--max-cpu-n") {
      c.max_cpu_n = std::stoll(value());
    } else if (a == "--reps") {
      c.reps = std::stoi(value());
    } else if (a == "--no-peer") {
      c.peer = false;
    } else if (a == "--no-tpu") {
      c.tpu = false;
    } else if (a == "--chips") {
      c.chips = SplitCommas(value());
    } else {
      Usage("unknown argument " + a);
    }
  }
  if (c.image_size < 32 || c.image_size % 32 != 0) Usage("--image-size must be a positive multiple of 32");
  if (c.reps < 1) Usage("--reps must be at least 1");
  return c;
}

// Seconds per call: one warm-up call (which compiles), then the median of reps.
template <typename F>
double MedianSeconds(F&& call, int reps) {
  call();
  std::vector<double> t;
  for (int i = 0; i < reps; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    call();
    t.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

struct Row {
  std::optional<double> jx_cpu, torch_cpu;
  std::map<std::string, std::string> tpu;  // chip -> predicted seconds, formatted, or why none
};

std::string Fmt(std::optional<double> s) {
  if (!s) return "-";
  char buf[32];
  std::snprintf(buf, sizeof buf, *s >= 0.1 ? "%.3f" : *s >= 1e-3 ? "%.4f" : "%.2e", *s);
  return buf;
}

void PrintTable(const char* title, const Config& c, const std::map<int64_t, Row>& rows, bool peer_ran,
                const char* paper_cpu[3], const char* paper_tpu[3]) {
  std::printf("\n%s, %lldx%lldx3 images (seconds per call)\n", title, static_cast<long long>(c.image_size),
              static_cast<long long>(c.image_size));
  std::printf("%6s %11s %11s", "N", "jx CPU", peer_ran ? "PyTorch CPU" : "PyTorch CPU");
  for (const std::string& chip : c.chips) std::printf(" %11s", ("jx TPU " + chip).c_str());
  if (paper_cpu != nullptr) std::printf("   %-24s", "paper (PyTorch CPU, TPU)");
  std::printf("\n");
  for (const auto& [n, r] : rows) {
    std::printf("%6lld %11s %11s", static_cast<long long>(n), Fmt(r.jx_cpu).c_str(), Fmt(r.torch_cpu).c_str());
    for (const std::string& chip : c.chips) {
      auto it = r.tpu.find(chip);
      std::printf(" %11s", it == r.tpu.end() ? "-" : it->second.c_str());
    }
    if (paper_cpu != nullptr) {
      const int i = n == 1 ? 0 : n == 10 ? 1 : n == 100 ? 2 : -1;
      if (i >= 0 && c.image_size == 224) std::printf("   %s, %s", paper_cpu[i], paper_tpu[i]);
    }
    std::printf("\n");
  }
}

}  // namespace

int main(int argc, char** argv) {
  const Config c = ParseArgs(argc, argv);
  const Array key = jx::random::key(0);
  const vgg19::Vgg19 model = vgg19::Init(key, c.image_size);
  int64_t num_params = 0;
  for (const Array& leaf : jx::tree::leaves(model)) num_params += leaf.size();
  std::printf("VGG19: 16 conv + 3 dense layers, %.1fM parameters, %lldx%lldx3 NHWC inputs, jx on %d threads\n",
              num_params / 1e6, static_cast<long long>(c.image_size), static_cast<long long>(c.image_size),
              jx::NumThreads());

  std::map<int64_t, Row> fwd, step;
  auto forward = jx::jit(vgg19::Forward, jx::name{"vgg19_forward"});
  auto train = jx::jit(vgg19::LossAndGrad, jx::name{"vgg19_forward_backward"});

  // jx on this CPU.
  std::vector<int64_t> cpu_batches;
  for (int64_t n : c.batches) {
    fwd[n];
    step[n];
    if (n > c.max_cpu_n) continue;
    cpu_batches.push_back(n);
    const auto keys = jx::random::split(jx::random::key(n), 2);
    const Array x = jx::random::normal(keys[0], {n, c.image_size, c.image_size, 3});
    const Array labels = jx::random::randint(keys[1], {n}, 0, 1000);
    fwd[n].jx_cpu = MedianSeconds([&] { forward(model, x).block_until_ready(); }, c.reps);
    step[n].jx_cpu = MedianSeconds([&] { train(model, x, labels).first.block_until_ready(); }, c.reps);
    std::printf("  jx CPU N=%lld: forward %.4f s, forward+backward %.4f s\n", static_cast<long long>(n),
                *fwd[n].jx_cpu, *step[n].jx_cpu);
    std::fflush(stdout);
  }

  // The PyTorch peer, same batches, after jx (the two never share the cores).
  bool peer_ran = false;
  if (c.peer && !cpu_batches.empty()) {
    std::string why;
    const std::string json = vgg19::RunPeer(vgg19::PeerScript(__FILE__), cpu_batches, c.image_size, c.reps,
                                            /*backward=*/true, &why);
    if (json.empty()) {
      std::printf("  PyTorch peer skipped: %s\n", why.c_str());
    } else {
      peer_ran = true;
      for (int64_t n : cpu_batches) {
        fwd[n].torch_cpu = vgg19::JsonNumber(json, "forward", std::to_string(n));
        step[n].torch_cpu = vgg19::JsonNumber(json, "forward_backward", std::to_string(n));
      }
    }
  }

  // Simulated TPU chips: lowered and compiled from shapes only, parameters placed on the chip.
  std::vector<std::string> notes;
  if (c.tpu) {
    for (const std::string& kind : c.chips) {
      const jx::Device* chip = jx::tpu::make_pod(kind, {1, 1}).devices()[0];
      const vgg19::Vgg19 on_chip = jx::device_put(model, chip);
      for (int64_t n : c.batches) {
        const ShapeDtypeStruct x{{n, c.image_size, c.image_size, 3}, jx::float32, chip};
        const ShapeDtypeStruct labels{{n}, jx::int32, chip};
        // A program whose buffers exceed the chip's HBM fails to compile, as on a real TPU.
        auto predicted = [&](auto&& lower) -> std::string {
          try {
            return Fmt(lower().compile().cost_analysis().predicted_seconds);
          } catch (const jx::ResourceExhaustedError& e) {
            notes.push_back(e.what());
            return "HBM OOM";
          }
        };
        fwd[n].tpu[kind] = predicted([&] { return forward.lower(on_chip, x); });
        step[n].tpu[kind] = predicted([&] { return train.lower(on_chip, x, labels); });
      }
      std::printf("  simulated %s: compiled forward and forward+backward for N =", kind.c_str());
      for (int64_t n : c.batches) std::printf(" %lld", static_cast<long long>(n));
      std::printf("\n");
    }
  }

  const char* paper_cpu[3] = {"1.16", "9.55", "93.0"};
  const char* paper_tpu[3] = {"0.02", "0.04", "0.2"};
  PrintTable("VGG19 forward", c, fwd, peer_ran, paper_cpu, paper_tpu);
  PrintTable("VGG19 forward+backward (loss and gradients of every parameter)", c, step, peer_ran, nullptr, nullptr);
  if (c.tpu) {
    std::printf("\nTPU columns: predicted seconds from the cost model (compiled for one simulated chip, f32\n"
                "parameters at default precision: one bf16 MXU pass per matmul/conv, f32 accumulation).\n");
    for (const std::string& note : notes) std::printf("  %s\n", note.c_str());
  }
  return 0;
}
