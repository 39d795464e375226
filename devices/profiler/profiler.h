// The profiler: a timeline of what ran on which device, written as a Chrome trace (JSON;
// Perfetto and chrome://tracing open it). One process per device (pid = the device's id),
// one lane per unit: "Steps" (each executable run), and on a simulated TPU chip "MXU",
// "VPU", "DMA" and "ICI" with each fusion/dot as a named slice. Chips' slices are placed at
// their simulated times; the host CPU's at measured times since the trace started. One
// format for both.
//
// Recording is thread-safe. With no trace active nothing is recorded and a device pays one
// relaxed atomic load per run (is_tracing()).
//
//   jx::profiler::start_trace("/tmp/step.trace.json");
//   step(params, batch);
//   jx::profiler::stop_trace();   // writes the file; open it in ui.perfetto.dev
#pragma once

#include <atomic>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace jx {
class Device;
}

namespace jx::profiler {

// Starts recording; stop_trace() writes to path. Throws ValueError if a trace is active.
void start_trace(const std::string& path);
// Writes the trace recorded since start_trace and stops recording. Throws ValueError if no
// trace is active and RuntimeError if the file cannot be written (recording stops anyway).
void stop_trace();

namespace internal {
extern std::atomic<bool> g_tracing;
}
// Whether a trace is being recorded (cheap: devices check it before building a slice).
inline bool is_tracing() { return internal::g_tracing.load(std::memory_order_relaxed); }

// Lane names the devices use; a lane may have any name, these sort first.
inline constexpr std::string_view kStepsLane = "Steps";
inline constexpr std::string_view kMxuLane = "MXU";
inline constexpr std::string_view kVpuLane = "VPU";
inline constexpr std::string_view kDmaLane = "DMA";
inline constexpr std::string_view kIciLane = "ICI";

// One slice ("ph": "X") on a device's lane.
struct Slice {
  std::string lane;
  std::string name;          // "fusion.3", "jit(train_step)"
  double start_us = 0;
  double duration_us = 0;
  // Shown in the slice's details: numbers ("flops") or text ("bound_by").
  std::vector<std::pair<std::string, std::variant<double, std::string>>> args{};
};

// Records slices on device's process (a no-op when no trace is active).
void Record(const Device& device, std::vector<Slice> slices);

// Microseconds of host time since the trace started (for measured slices).
double HostMicros();

// Measures a scope on the host and records it as one slice on device's lane (nothing for a
// null device: a simulated chip records its simulated times instead). Costs nothing beyond
// is_tracing() when no trace is active. lane and name must outlive the scope.
//   { jx::profiler::HostSlice slice(device, jx::profiler::kStepsLane, name); exe.Run(...); }
class HostSlice {
 public:
  HostSlice(const Device* device, std::string_view lane, std::string_view name);
  ~HostSlice();
  HostSlice(const HostSlice&) = delete;
  HostSlice& operator=(const HostSlice&) = delete;

 private:
  const Device* device_ = nullptr;  // null when not tracing at construction
  std::string_view lane_;
  std::string_view name_;
  double start_us_ = 0;
};

}  // namespace jx::profiler
