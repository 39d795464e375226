// Running on a chip: a jitted f32 matmul at DEFAULT precision computes what the MXU does (the
// host matmul of bf16-rounded inputs with f32 accumulation), returns its result on the chip,
// and advances the chip's clock by the program's predicted time with busy time per unit; a
// profiler trace shows the step and its instructions on the chip's lanes.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <boost/property_tree/json_parser.hpp>
#include <boost/property_tree/ptree.hpp>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include "jx/devices/tpu/pod_program.h"
#include "jx/jx.h"

namespace jx::tpu::tpu_execution_test {
namespace {

namespace jnp = jx::numpy;
using ::testing::HasSubstr;

Array MatMul(const Array& a, const Array& b) { return jnp::matmul(a, b); }

struct MatmulCase {
  Array x, y;
};

MatmulCase RandomOperands() {
  const Array keys = random::split(random::key(7), 2);
  return {random::normal(keys[0], {64, 96}), random::normal(keys[1], {96, 32})};
}

const TpuChip& AsChip(const Device* d) { return static_cast<const TpuChip&>(*d); }

TEST(TpuExecutionTest, DefaultPrecisionMatmulRoundsItsInputsToBf16) {
  Pod pod = make_pod("v5e", {2, 2});
  const Device* chip = pod.devices()[2];
  const auto [x, y] = RandomOperands();
  const Array out = jit(MatMul)(device_put(x, chip), device_put(y, chip));
  EXPECT_EQ(out.devices(), std::vector<const Device*>{chip});
  EXPECT_TRUE(out.committed());

  // The MXU's numbers: bf16 products (exact in f32) summed in f32, computed on the host.
  const Array rounded = jnp::matmul(x.astype(bfloat16).astype(float32), y.astype(bfloat16).astype(float32));
  const Array exact = jnp::matmul(x, y);
  const std::vector<float> got = out.to_vector<float>(), want = rounded.to_vector<float>(),
                           f32 = exact.to_vector<float>();
  double max_vs_rounded = 0, max_vs_f32 = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    max_vs_rounded = std::max(max_vs_rounded, std::abs(double(got[i]) - want[i]));
    max_vs_f32 = std::max(max_vs_f32, std::abs(double(got[i]) - f32[i]));
  }
  // Sums of 96 products of magnitude ~1: f32 summation-order differences are ~1e-5; bf16
  // rounding of the inputs moves results by ~1e-2.
  EXPECT_LT(max_vs_rounded, 1e-4);
  EXPECT_GT(max_vs_f32, 1e-3);
}

TEST(TpuExecutionTest, AStepAdvancesTheClockByThePredictedTime) {
  Pod pod = make_pod("v5e", {1, 1});
  const TpuChip& chip = AsChip(pod.devices()[0]);
  const auto [x, y] = RandomOperands();
  const Array xc = device_put(x, &chip), yc = device_put(y, &chip);
  auto f = jit(MatMul, jx::name{"matmul"});
  auto compiled = f.lower(xc, yc).compile();
  const CostAnalysis cost = compiled.cost_analysis();
  ASSERT_GT(cost.predicted_seconds, 0);
  double mxu_flops = 0;  // the dot's (the bf16 roundings run on the VPU)
  for (const InstructionCost& row : cost.instructions) mxu_flops += row.unit == "mxu" ? row.flops : 0;
  EXPECT_DOUBLE_EQ(mxu_flops, 2.0 * 64 * 96 * 32);

  const ChipActivity before = chip.activity();
  f(xc, yc);
  f(xc, yc);
  const ChipActivity after = chip.activity();
  EXPECT_EQ(after.steps, before.steps + 2);
  EXPECT_NEAR(after.now_seconds - before.now_seconds, 2 * cost.predicted_seconds, 1e-15);
  EXPECT_GT(after.busy.mxu, before.busy.mxu);  // the dot ran on the MXUs
  EXPECT_LE(after.busy.mxu + after.busy.vpu, after.now_seconds + 1e-15);
  // Another chip's clock did not move.
  EXPECT_EQ(AsChip(make_pod("v5e", {1, 1}).devices()[0]).activity().now_seconds, 0);
}

TEST(TpuExecutionTest, TheTraceShowsTheStepOnTheChipsLanes) {
  Pod pod = make_pod("v5e", {1, 1});
  const TpuChip& chip = AsChip(pod.devices()[0]);
  const auto [x, y] = RandomOperands();
  const Array xc = device_put(x, &chip), yc = device_put(y, &chip);
  auto f = jit([](const Array& a, const Array& b) { return jnp::tanh(jnp::matmul(a, b)); }, jx::name{"layer"});
  const CostAnalysis cost = f.lower(xc, yc).compile().cost_analysis();
  const std::string path =
      (std::filesystem::temp_directory_path() / ("jx_tpu_trace." + std::to_string(::getpid()) + ".json")).string();
  profiler::start_trace(path);
  const double start = chip.activity().now_seconds;
  f(xc, yc);
  f(x, y);  // on the host CPU: measured, on the CPU device's process
  profiler::stop_trace();

  boost::property_tree::ptree trace;
  boost::property_tree::read_json(path, trace);
  std::remove(path.c_str());
  std::set<std::string> chip_lanes;
  bool chip_named = false, saw_step = false, saw_cpu_step = false;
  double instruction_seconds = 0;
  for (const auto& [key, e] : trace.get_child("traceEvents")) {
    const int pid = e.get<int>("pid");
    const std::string ph = e.get<std::string>("ph"), name = e.get<std::string>("name");
    if (ph == "M" && pid == chip.id() && name == "process_name") {
      chip_named = e.get<std::string>("args.name").find(chip.ToString()) != std::string::npos;
    }
    if (ph == "M" && pid == chip.id() && name == "thread_name") chip_lanes.insert(e.get<std::string>("args.name"));
    if (ph != "X") continue;
    if (pid != chip.id()) {
      saw_cpu_step |= name == "jit(layer)";
      continue;
    }
    if (name == "jit(layer)") {
      saw_step = true;
      EXPECT_NEAR(e.get<double>("ts"), start * 1e6, 1e-3);
      EXPECT_NEAR(e.get<double>("dur"), cost.predicted_seconds * 1e6, 1e-3);
    } else if (e.get<int>("tid") != 4) {  // compute lanes (DMA overlaps them)
      instruction_seconds += e.get<double>("dur") * 1e-6;
      EXPECT_FALSE(e.get<std::string>("args.opcode").empty());
    }
  }
  EXPECT_TRUE(chip_named);
  EXPECT_TRUE(saw_step);
  EXPECT_TRUE(saw_cpu_step);
  EXPECT_TRUE(chip_lanes.count("Steps") && chip_lanes.count("MXU")) << chip_lanes.size();
  EXPECT_LE(instruction_seconds, cost.predicted_seconds * (1 + 1e-9));
}

TEST(TpuExecutionTest, EagerOpsOnAChipsArraysRunOnTheChip) {
  Pod pod = make_pod("v5e", {1, 1});
  const TpuChip& chip = AsChip(pod.devices()[0]);
  const Array x = device_put(jnp::arange(8, float32), &chip);
  const double before = chip.activity().now_seconds;
  const Array y = jnp::sin(x);
  EXPECT_EQ(y.devices(), std::vector<const Device*>{&chip});
  EXPECT_GT(chip.activity().now_seconds, before);
  EXPECT_FLOAT_EQ(y.to_vector<float>()[3], std::sin(3.0f));
}

// f64 has no TPU hardware: the first f64 program compiled for a chip says it is emulated,
// later ones stay quiet.
TEST(TpuExecutionTest, F64EmulationIsAnnouncedOnce) {
  Pod pod = make_pod("v5e", {1, 1});
  const Device* chip = pod.devices()[0];
  const ShapeDtypeStruct v{{16}, float64, chip};
  ::testing::internal::CaptureStderr();
  const CostAnalysis first = jit([](const Array& a) { return jnp::exp(a); }).lower(v).compile().cost_analysis();
  jit([](const Array& a) { return a * a; }).lower(v).compile();
  const std::string err = ::testing::internal::GetCapturedStderr();
  size_t count = 0;
  for (size_t at = err.find("emulated"); at != std::string::npos; at = err.find("emulated", at + 1)) ++count;
  EXPECT_EQ(count, 1u) << err;
  EXPECT_THAT(err, HasSubstr("have no f64 units"));
  EXPECT_TRUE(first.f64_emulated);
}

TEST(TpuExecutionTest, TheClientCompilesForItsOwnChipsOnly) {
  Pod a = make_pod("v5e", {1, 2});
  Pod b = make_pod("v5e", {1, 1});
  const ClosedJaxpr jaxpr = make_jaxpr([](const Array& x) { return x + 1.0f; })(jnp::ones({4}));
  try {
    a.client().Lower(jaxpr, {.name = "f", .device_assignment = {b.devices()[0]}});
    FAIL() << "expected InternalError";
  } catch (const InternalError& e) {
    EXPECT_THAT(e.what(), HasSubstr("not one of its chips"));
  }
  // Both chips: the SPMD program every chip runs (pod_program_test.cc).
  EXPECT_NE(std::dynamic_pointer_cast<const PodProgram>(
                a.client().Lower(jaxpr, {.name = "f", .device_assignment = a.devices()})->Compile()),
            nullptr);
  auto exe = a.client().Lower(jaxpr, {.name = "f", .device_assignment = {a.devices()[1]}})->Compile();
  const Arrays out = exe->Execute({device_put(jnp::ones({4}), a.devices()[1])});
  EXPECT_EQ(out[0].devices(), std::vector<const Device*>{a.devices()[1]});
  EXPECT_EQ(AsChip(a.devices()[1]).activity().steps, 1);
  EXPECT_EQ(AsChip(a.devices()[0]).activity().steps, 0);
}

}  // namespace
}  // namespace jx::tpu::tpu_execution_test
