#include "jx/devices/profiler/profiler.h"

#include <fstream>
#include <map>
#include <mutex>

#include "jx/core/device.h"
#include "jx/core/errors.h"
#include "jx/devices/profiler/chrome_trace.h"

namespace jx::profiler {
namespace internal {
std::atomic<bool> g_tracing{false};
}  // namespace internal

namespace {

using Clock = std::chrono::steady_clock;

// The active trace. Guarded by its mutex; g_tracing mirrors `active` for the lock-free check.
struct Recorder {
  std::mutex mu;
  bool active = false;
  std::string path;
  Clock::time_point start;
  std::map<int, DeviceTimeline> timelines;  // by device id
};

Recorder& TheRecorder() {
  static auto* recorder = new Recorder;  // never destroyed: devices may record during exit
  return *recorder;
}

std::string ProcessName(const Device& device) {
  std::string name = device.ToString();
  const std::string kind = device.device_kind();
  if (!kind.empty() && name.find(kind) == std::string::npos) StrAppend(&name, " ", kind);
  return name;
}

}  // namespace

void start_trace(const std::string& path) {
  Recorder& r = TheRecorder();
  std::lock_guard<std::mutex> lock(r.mu);
  if (r.active) throw ValueError(StrCat("[profiler] start_trace(\"", path, "\"): a trace to \"", r.path, "\" is already active"));
  r.active = true;
  r.path = path;
  r.start = Clock::now();
  r.timelines.clear();
  internal::g_tracing.store(true, std::memory_order_relaxed);
}

void stop_trace() {
  Recorder& r = TheRecorder();
  std::vector<DeviceTimeline> timelines;
  std::string path;
  {
    std::lock_guard<std::mutex> lock(r.mu);
    if (!r.active) throw ValueError("[profiler] stop_trace: no trace is active");
    r.active = false;
    internal::g_tracing.store(false, std::memory_order_relaxed);
    for (auto& [id, t] : r.timelines) timelines.push_back(std::move(t));
    r.timelines.clear();
    path = std::move(r.path);
  }
  // Serialized outside the lock: devices keep running (and find no trace active).
  const std::string json = ChromeTraceJson(timelines);
  std::ofstream out(path, std::ios::binary);
  out << json;
  out.close();
  if (!out) throw RuntimeError(StrCat("[profiler] stop_trace: cannot write \"", path, "\""));
}

void Record(const Device& device, std::vector<Slice> slices) {
  if (!is_tracing()) return;
  std::string name = ProcessName(device);  // device calls, outside the lock
  Recorder& r = TheRecorder();
  std::lock_guard<std::mutex> lock(r.mu);
  if (!r.active) return;
  DeviceTimeline& t = r.timelines[device.id()];
  if (t.name.empty()) {
    t.pid = device.id();
    t.name = std::move(name);
  }
  for (Slice& s : slices) t.slices.push_back(std::move(s));
}

double HostMicros() {
  Recorder& r = TheRecorder();
  Clock::time_point start;
  {
    std::lock_guard<std::mutex> lock(r.mu);
    start = r.start;
  }
  return std::chrono::duration<double, std::micro>(Clock::now() - start).count();
}

HostSlice::HostSlice(const Device* device, std::string_view lane, std::string_view name) {
  if (device == nullptr || !is_tracing()) return;
  device_ = device;
  lane_ = lane;
  name_ = name;
  start_us_ = HostMicros();
}

HostSlice::~HostSlice() {
  if (device_ == nullptr) return;
  const double end_us = HostMicros();
  Record(*device_, {Slice{.lane = std::string(lane_), .name = std::string(name_), .start_us = start_us_,
                          .duration_us = end_us - start_us_}});
}

}  // namespace jx::profiler
