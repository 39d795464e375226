// The profiler's Chrome trace: valid JSON (parsed back with Boost.PropertyTree), a process
// per device named after it, a thread per lane with the units first, complete events with
// the recorded times and args; nothing recorded outside a trace; thread-safe recording.
#include "jx/devices/profiler/profiler.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <boost/property_tree/json_parser.hpp>
#include <boost/property_tree/ptree.hpp>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "jx/core/device.h"
#include "jx/core/errors.h"
#include "jx/devices/profiler/chrome_trace.h"

namespace jx::profiler::profiler_test {
namespace {

using ::testing::HasSubstr;
using boost::property_tree::ptree;

class FakeClient final : public Client {
 public:
  std::string_view platform() const override { return "fake"; }
  std::vector<const Device*> devices() const override { return {}; }
  std::shared_ptr<const Lowering> Lower(const ClosedJaxpr&, const LoweringOptions&) const override { return nullptr; }
};

class FakeDevice final : public Device {
 public:
  FakeDevice(int id, std::string name) : id_(id), name_(std::move(name)) {}
  const Client& client() const override { return client_; }
  std::string_view platform() const override { return "fake"; }
  int id() const override { return id_; }
  std::string device_kind() const override { return "Fake v1"; }
  std::string ToString() const override { return name_; }
  MemoryStats memory_stats() const override { return {}; }
  std::shared_ptr<Buffer> Allocate(int64_t nbytes) const override { return Buffer::Allocate(nbytes); }

 private:
  FakeClient client_;
  int id_;
  std::string name_;
};

std::string TempPath(const std::string& name) {
  return (std::filesystem::temp_directory_path() / (name + "." + std::to_string(::getpid()) + ".json")).string();
}

ptree ReadJson(const std::string& path) {
  ptree tree;
  boost::property_tree::read_json(path, tree);  // throws on malformed JSON
  return tree;
}

// Events of a parsed trace by phase.
std::vector<ptree> EventsWithPhase(const ptree& trace, const std::string& ph) {
  std::vector<ptree> out;
  for (const auto& [key, event] : trace.get_child("traceEvents")) {
    if (event.get<std::string>("ph") == ph) out.push_back(event);
  }
  return out;
}

TEST(ProfilerTest, WritesProcessesLanesAndSlices) {
  FakeDevice chip(7, "TPU_7(process=0,(1,0,0,0))");
  FakeDevice host(0, "TFRT_CPU_0");
  const std::string path = TempPath("jx_profiler_slices");
  start_trace(path);
  EXPECT_TRUE(is_tracing());
  Record(chip, {Slice{.lane = "Steps", .name = "jit(step)", .start_us = 10, .duration_us = 5},
                Slice{.lane = "VPU", .name = "fusion.2", .start_us = 12, .duration_us = 1.5,
                      .args = {{"flops", 1024.0}, {"bound_by", std::string("memory")}}},
                Slice{.lane = "MXU", .name = "dot.1", .start_us = 10, .duration_us = 2}});
  { HostSlice slice(&host, kStepsLane, "jit(\"quoted\")"); }
  stop_trace();
  EXPECT_FALSE(is_tracing());

  const ptree trace = ReadJson(path);
  EXPECT_EQ(trace.get<std::string>("displayTimeUnit"), "ns");
  std::map<int, std::string> processes;
  std::map<std::pair<int, int>, std::string> lanes;
  for (const ptree& m : EventsWithPhase(trace, "M")) {
    const int pid = m.get<int>("pid");
    if (m.get<std::string>("name") == "process_name") processes[pid] = m.get<std::string>("args.name");
    if (m.get<std::string>("name") == "thread_name") lanes[{pid, m.get<int>("tid")}] = m.get<std::string>("args.name");
  }
  EXPECT_THAT(processes[7], HasSubstr("TPU_7(process=0,(1,0,0,0))"));
  EXPECT_THAT(processes[7], HasSubstr("Fake v1"));
  EXPECT_THAT(processes[0], HasSubstr("TFRT_CPU_0"));
  // The units have fixed lanes (Steps 1, MXU 2, VPU 3), whatever order they were used in.
  EXPECT_EQ((lanes[{7, 1}]), "Steps");
  EXPECT_EQ((lanes[{7, 2}]), "MXU");
  EXPECT_EQ((lanes[{7, 3}]), "VPU");
  EXPECT_EQ((lanes[{0, 1}]), "Steps");

  std::map<std::string, ptree> slices;
  for (const ptree& x : EventsWithPhase(trace, "X")) slices[x.get<std::string>("name")] = x;
  ASSERT_EQ(slices.size(), 4u);
  const ptree& fusion = slices["fusion.2"];
  EXPECT_EQ(fusion.get<int>("pid"), 7);
  EXPECT_EQ(fusion.get<int>("tid"), 3);
  EXPECT_DOUBLE_EQ(fusion.get<double>("ts"), 12);
  EXPECT_DOUBLE_EQ(fusion.get<double>("dur"), 1.5);
  EXPECT_DOUBLE_EQ(fusion.get<double>("args.flops"), 1024);
  EXPECT_EQ(fusion.get<std::string>("args.bound_by"), "memory");
  EXPECT_EQ(slices["dot.1"].get<int>("tid"), 2);
  const ptree& host_step = slices["jit(\"quoted\")"];  // the name survived escaping
  EXPECT_EQ(host_step.get<int>("pid"), 0);
  EXPECT_GE(host_step.get<double>("ts"), 0);
  EXPECT_GE(host_step.get<double>("dur"), 0);
  std::remove(path.c_str());
}

TEST(ProfilerTest, NothingIsRecordedOutsideATrace) {
  FakeDevice chip(3, "TPU_3");
  Record(chip, {Slice{.lane = "MXU", .name = "before", .start_us = 0, .duration_us = 1}});
  { HostSlice slice(&chip, kStepsLane, "before too"); }
  const std::string path = TempPath("jx_profiler_empty");
  start_trace(path);
  { HostSlice slice(nullptr, kStepsLane, "no device"); }
  stop_trace();
  Record(chip, {Slice{.lane = "MXU", .name = "after", .start_us = 0, .duration_us = 1}});
  const ptree trace = ReadJson(path);
  EXPECT_TRUE(trace.get_child("traceEvents").empty());
  std::remove(path.c_str());
}

TEST(ProfilerTest, MisuseIsAClearError) {
  EXPECT_THROW(stop_trace(), ValueError);
  const std::string path = TempPath("jx_profiler_twice");
  start_trace(path);
  try {
    start_trace(path + ".other");
    FAIL() << "expected ValueError";
  } catch (const ValueError& e) {
    EXPECT_THAT(e.what(), HasSubstr("already active"));
  }
  stop_trace();  // the first trace is still the active one and writes
  EXPECT_TRUE(std::filesystem::exists(path));
  std::remove(path.c_str());
  start_trace("/nonexistent-dir/trace.json");
  EXPECT_THROW(stop_trace(), RuntimeError);
  EXPECT_FALSE(is_tracing());  // a failed write still ends the trace
}

TEST(ProfilerTest, ThreadsRecordConcurrently) {
  constexpr int kThreads = 4, kSlices = 500;
  std::vector<std::unique_ptr<FakeDevice>> chips;
  for (int t = 0; t < kThreads; ++t) chips.push_back(std::make_unique<FakeDevice>(100 + t, "chip"));
  const std::string path = TempPath("jx_profiler_threads");
  start_trace(path);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kSlices; ++i) {
        Record(*chips[t], {Slice{.lane = "VPU", .name = "op", .start_us = double(i), .duration_us = 1}});
      }
    });
  }
  for (std::thread& th : threads) th.join();
  stop_trace();
  const ptree trace = ReadJson(path);
  std::map<int, int> per_pid;
  for (const ptree& x : EventsWithPhase(trace, "X")) ++per_pid[x.get<int>("pid")];
  ASSERT_EQ(per_pid.size(), static_cast<size_t>(kThreads));
  for (const auto& [pid, n] : per_pid) EXPECT_EQ(n, kSlices) << pid;
  std::remove(path.c_str());
}

TEST(ChromeTraceTest, EscapesAndOrdersLanes) {
  const std::string json = ChromeTraceJson(
      {{.pid = 2, .name = "a\\b\n", .slices = {{.lane = "custom", .name = "x", .start_us = 0, .duration_us = 1},
                                                {.lane = "ICI", .name = "y", .start_us = 1, .duration_us = 1}}}});
  EXPECT_THAT(json, HasSubstr("\"a\\\\b\\n\""));
  // Known lanes keep their ids (ICI is 5); others follow them.
  EXPECT_THAT(json, HasSubstr("\"tid\":5,\"name\":\"y\""));
  EXPECT_THAT(json, HasSubstr("\"tid\":6,\"name\":\"x\""));
}

}  // namespace
}  // namespace jx::profiler::profiler_test
