// Pod programs: hand-written SPMD HLO run on the 8 chips of a v5e 4x2 slice, one thread per
// chip, real data moved at every collective; clocks synchronized at collectives; the step
// report; an error in some chips' programs surfaces once, naming a chip, with no thread left
// blocked.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <unistd.h>

#include <boost/property_tree/json_parser.hpp>
#include <boost/property_tree/ptree.hpp>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "jx/compiler/hlo/hlo_parser.h"
#include "jx/devices/tpu/pod_program.h"
#include "jx/jx.h"

namespace jx::tpu::pod_program_test {
namespace {

using ::testing::HasSubstr;

constexpr int kChips = 8;

std::vector<const TpuChip*> ChipsOf(const Pod& pod) {
  std::vector<const TpuChip*> chips;
  for (const Device* d : pod.devices()) chips.push_back(static_cast<const TpuChip*>(d));
  return chips;
}

std::shared_ptr<const PodProgram> Compile(const Pod& pod, std::string_view text, std::vector<ShapedArray> outs) {
  absl::StatusOr<std::unique_ptr<hlo::HloModule>> module = hlo::ParseHloModule(text);
  EXPECT_TRUE(module.ok()) << module.status();
  return CompilePodProgram(*std::move(module), pod.client(), ChipsOf(pod), std::move(outs), "jit(spmd)");
}

// Partition p's argument: f32[4] = {10p, 10p+1, 10p+2, 10p+3}, on chip p.
std::vector<Arrays> IotaArgs(const Pod& pod) {
  std::vector<Arrays> args;
  for (int p = 0; p < kChips; ++p) {
    std::vector<float> v = {10.f * p, 10.f * p + 1, 10.f * p + 2, 10.f * p + 3};
    args.push_back({device_put(numpy::array(v, {4}), pod.devices()[p])});
  }
  return args;
}

constexpr std::string_view kCollectives = R"(HloModule spmd

%sum (x: f32[], y: f32[]) -> f32[] {
  %x = f32[] parameter(0)
  %y = f32[] parameter(1)
  ROOT %s = f32[] add(f32[] %x, f32[] %y)
}

ENTRY %main (p: f32[4]) -> (f32[4], f32[8], f32[2], f32[4], f32[4], u32[]) {
  %p = f32[4]{0} parameter(0)
  %ar = f32[4]{0} all-reduce(f32[4]{0} %p), channel_id=1, replica_groups={{0,1},{2,3},{4,5},{6,7}}, use_global_device_ids=true, to_apply=%sum
  %ag = f32[8]{0} all-gather(f32[4]{0} %p), channel_id=2, replica_groups={{0,2},{1,3},{4,6},{5,7}}, dimensions={0}, use_global_device_ids=true
  %rs = f32[2]{0} reduce-scatter(f32[4]{0} %p), channel_id=3, replica_groups={{0,1},{2,3},{4,5},{6,7}}, dimensions={0}, use_global_device_ids=true, to_apply=%sum
  %a2a = f32[4]{0} all-to-all(f32[4]{0} %p), channel_id=4, replica_groups={{0,1,2,3},{4,5,6,7}}, dimensions={0}
  %cp = f32[4]{0} collective-permute(f32[4]{0} %p), channel_id=5, source_target_pairs={{0,1},{1,2},{2,3},{3,4},{4,5},{5,6},{6,7}}
  %pid = u32[] partition-id()
  ROOT %t = (f32[4]{0}, f32[8]{0}, f32[2]{0}, f32[4]{0}, f32[4]{0}, u32[]) tuple(%ar, %ag, %rs, %a2a, %cp, %pid)
}
)";

std::vector<float> Row(int p) { return {10.f * p, 10.f * p + 1, 10.f * p + 2, 10.f * p + 3}; }

TEST(PodProgramTest, CollectivesMoveRealDataBetweenChips) {
  Pod pod = make_pod("v5e", {4, 2});
  auto program = Compile(pod, kCollectives,
                         {ShapedArray{{4}, float32}, ShapedArray{{8}, float32}, ShapedArray{{2}, float32},
                          ShapedArray{{4}, float32}, ShapedArray{{4}, float32}, ShapedArray{{}, uint32}});
  const std::vector<Arrays> outs = program->ExecuteShards(IotaArgs(pod));
  ASSERT_EQ(outs.size(), static_cast<size_t>(kChips));
  for (int p = 0; p < kChips; ++p) {
    SCOPED_TRACE(p);
    for (const Array& a : outs[p]) EXPECT_EQ(a.devices(), std::vector<const Device*>{pod.devices()[p]});
    // all-reduce over pairs {2k, 2k+1}.
    const int pair = p & ~1;
    std::vector<float> ar;
    for (int i = 0; i < 4; ++i) ar.push_back(Row(pair)[i] + Row(pair + 1)[i]);
    EXPECT_EQ(outs[p][0].to_vector<float>(), ar);
    // all-gather over {p with bit 1 clear, with it set}, in group order.
    const int lo = p & ~2;
    std::vector<float> ag = Row(lo);
    for (float v : Row(lo + 2)) ag.push_back(v);
    EXPECT_EQ(outs[p][1].to_vector<float>(), ag);
    // reduce-scatter: member r of the pair gets block r of the sum.
    const int r = p & 1;
    EXPECT_EQ(outs[p][2].to_vector<float>(), (std::vector<float>{ar[2 * r], ar[2 * r + 1]}));
    // all-to-all over {0..3} / {4..7}: element i comes from member i's element (my rank).
    const int base = p & ~3, rank = p & 3;
    std::vector<float> a2a;
    for (int i = 0; i < 4; ++i) a2a.push_back(Row(base + i)[rank]);
    EXPECT_EQ(outs[p][3].to_vector<float>(), a2a);
    // collective-permute p -> p+1; chip 0 receives nothing (zeros).
    EXPECT_EQ(outs[p][4].to_vector<float>(), p == 0 ? std::vector<float>(4, 0.f) : Row(p - 1));
    EXPECT_EQ(outs[p][5].to_vector<uint32_t>(), std::vector<uint32_t>{static_cast<uint32_t>(p)});
  }
}

// Along an inner dimension (every row of the operand splits into the members' blocks).
TEST(PodProgramTest, ReduceScatterAndAllToAllAlongAnInnerDimension) {
  Pod pod = make_pod("v5e", {4, 2});
  auto program = Compile(pod, R"(HloModule spmd
%sum (x: f32[], y: f32[]) -> f32[] {
  %x = f32[] parameter(0)
  %y = f32[] parameter(1)
  ROOT %s = f32[] add(f32[] %x, f32[] %y)
}
ENTRY %main (p: f32[2,4]) -> (f32[2,2], f32[2,4]) {
  %p = f32[2,4]{1,0} parameter(0)
  %rs = f32[2,2]{1,0} reduce-scatter(f32[2,4]{1,0} %p), channel_id=1, replica_groups={{0,1},{2,3},{4,5},{6,7}}, dimensions={1}, use_global_device_ids=true, to_apply=%sum
  %a2a = f32[2,4]{1,0} all-to-all(f32[2,4]{1,0} %p), channel_id=2, replica_groups={{0,1},{2,3},{4,5},{6,7}}, dimensions={1}
  ROOT %t = (f32[2,2]{1,0}, f32[2,4]{1,0}) tuple(%rs, %a2a)
}
)", {ShapedArray{{2, 2}, float32}, ShapedArray{{2, 4}, float32}});
  // Partition p's value: v(p)[r][c] = 100p + 10r + c.
  auto v = [](int p, int r, int c) { return 100.f * p + 10.f * r + c; };
  std::vector<Arrays> args;
  for (int p = 0; p < kChips; ++p) {
    std::vector<float> data;
    for (int r = 0; r < 2; ++r) {
      for (int c = 0; c < 4; ++c) data.push_back(v(p, r, c));
    }
    args.push_back({device_put(numpy::array(data, {2, 4}), pod.devices()[p])});
  }
  const std::vector<Arrays> outs = program->ExecuteShards(args);
  for (int p = 0; p < kChips; ++p) {
    SCOPED_TRACE(p);
    const int base = p & ~1, rank = p & 1;
    std::vector<float> rs, a2a;
    for (int r = 0; r < 2; ++r) {
      for (int c = 0; c < 2; ++c) rs.push_back(v(base, r, 2 * rank + c) + v(base + 1, r, 2 * rank + c));
      for (int i = 0; i < 2; ++i) {
        for (int c = 0; c < 2; ++c) a2a.push_back(v(base + i, r, 2 * rank + c));
      }
    }
    EXPECT_EQ(outs[p][0].to_vector<float>(), rs);
    EXPECT_EQ(outs[p][1].to_vector<float>(), a2a);
  }
}

constexpr std::string_view kAllReduce = R"(HloModule spmd

%sum (x: f32[], y: f32[]) -> f32[] {
  %x = f32[] parameter(0)
  %y = f32[] parameter(1)
  ROOT %s = f32[] add(f32[] %x, f32[] %y)
}

ENTRY %main (p: f32[256,256]) -> f32[256,256] {
  %p = f32[256,256]{1,0} parameter(0)
  %e = f32[256,256]{1,0} exponential(f32[256,256]{1,0} %p)
  ROOT %ar = f32[256,256]{1,0} all-reduce(f32[256,256]{1,0} %e), channel_id=1, replica_groups={{0,1,2,3,4,5,6,7}}, use_global_device_ids=true, to_apply=%sum
}
)";

TEST(PodProgramTest, ClocksSynchronizeAtCollectivesAndTheStepIsReported) {
  Pod pod = make_pod("v5e", {4, 2});
  auto program = Compile(pod, kAllReduce, {ShapedArray{{256, 256}, float32}});
  const CostAnalysis cost = program->cost_analysis();
  EXPECT_GT(cost.communication_seconds, 0);
  // Put chip 5 ahead: it ran a one-chip program first.
  const Device* ahead = pod.devices()[5];
  (void)jit([](const Array& x) { return numpy::sin(x); })(device_put(numpy::ones({1024, 1024}), ahead));
  const double lead = static_cast<const TpuChip*>(ahead)->activity().now_seconds -
                      static_cast<const TpuChip*>(pod.devices()[0])->activity().now_seconds;
  ASSERT_GT(lead, 0);
  std::vector<Arrays> args;
  for (int p = 0; p < kChips; ++p) args.push_back({device_put(numpy::full({256, 256}, 0.0f), pod.devices()[p])});
  const std::vector<Arrays> outs = program->ExecuteShards(args);
  EXPECT_EQ(outs[3][0].to_vector<float>()[7], 8.0f);  // sum over 8 chips of exp(0)
  // Every chip ends the step at the same time: the all-reduce ends for all at once.
  const double end = static_cast<const TpuChip*>(pod.devices()[0])->activity().now_seconds;
  for (const Device* d : pod.devices()) {
    EXPECT_DOUBLE_EQ(static_cast<const TpuChip*>(d)->activity().now_seconds, end);
  }
  const StepReport report = program->last_step();
  ASSERT_EQ(report.chips.size(), static_cast<size_t>(kChips));
  for (int p = 0; p < kChips; ++p) {
    const ChipStepReport& c = report.chips[p];
    EXPECT_EQ(c.chip, pod.devices()[p]->ToString());
    EXPECT_DOUBLE_EQ(c.end_seconds, end);
    EXPECT_NEAR(c.communication_seconds, cost.communication_seconds, 1e-12);
    EXPECT_GT(c.compute_seconds, 0);
    // The chips that were behind waited for chip 5 at the all-reduce.
    EXPECT_NEAR(c.idle_seconds, p == 5 ? 0.0 : lead, 1e-9) << p;
    EXPECT_GE(c.hbm_high_water_bytes, 2 * 256 * 256 * 4);
    EXPECT_NEAR(c.compute_seconds + c.communication_seconds + c.idle_seconds, c.end_seconds - c.start_seconds, 1e-12);
  }
  EXPECT_NEAR(report.wall_seconds, end - report.chips[0].start_seconds, 1e-12);
  EXPECT_FALSE(report.links.empty());
  EXPECT_GT(report.total_link_bytes(), 0);
  const std::string text = report.ToString();
  EXPECT_THAT(text, HasSubstr("jit(spmd): step"));
  EXPECT_THAT(text, HasSubstr(pod.devices()[7]->ToString()));
  EXPECT_THAT(text, HasSubstr("idle(us)"));
}

TEST(PodProgramTest, TheTraceHasAnIciLanePerChipWithTheCollective) {
  Pod pod = make_pod("v5e", {4, 2});
  auto program = Compile(pod, kAllReduce, {ShapedArray{{256, 256}, float32}});
  std::vector<Arrays> args;
  for (int p = 0; p < kChips; ++p) args.push_back({device_put(numpy::full({256, 256}, 1.0f), pod.devices()[p])});
  const std::string path =
      (std::filesystem::temp_directory_path() / ("jx_pod_trace." + std::to_string(::getpid()) + ".json")).string();
  profiler::start_trace(path);
  program->ExecuteShards(args);
  profiler::stop_trace();
  boost::property_tree::ptree trace;
  boost::property_tree::read_json(path, trace);
  std::remove(path.c_str());
  std::map<int, std::set<std::string>> lanes;     // per chip (pid = chip id)
  std::map<int, int> all_reduce_slices;
  for (const auto& [key, e] : trace.get_child("traceEvents")) {
    const int pid = e.get<int>("pid");
    const std::string ph = e.get<std::string>("ph"), name = e.get<std::string>("name");
    if (ph == "M" && name == "thread_name") lanes[pid].insert(e.get<std::string>("args.name"));
    // The all-reduce runs as a start/done pair: its slice on the ICI lane is the start's.
    if (ph == "X" && name.rfind("all-reduce-start", 0) == 0) ++all_reduce_slices[pid];
  }
  for (const Device* d : pod.devices()) {
    EXPECT_TRUE(lanes[d->id()].count("ICI")) << d->ToString();
    EXPECT_EQ(all_reduce_slices[d->id()], 1) << d->ToString();
  }
}

TEST(PodProgramTest, AnErrorInSomeChipsSurfacesOnceAndNoThreadIsLeftBlocked) {
  Pod pod = make_pod("v5e", {4, 2});
  // Partitions 4..7 are in no group: they fail at once; 0..3 are waiting in theirs and are
  // released by the abort.
  constexpr std::string_view kBad = R"(HloModule spmd
%sum (x: f32[], y: f32[]) -> f32[] {
  %x = f32[] parameter(0)
  %y = f32[] parameter(1)
  ROOT %s = f32[] add(f32[] %x, f32[] %y)
}
ENTRY %main (p: f32[4]) -> f32[4] {
  %p = f32[4]{0} parameter(0)
  ROOT %ar = f32[4]{0} all-reduce(f32[4]{0} %p), channel_id=1, replica_groups={{0,1,2,3}}, use_global_device_ids=true, to_apply=%sum
}
)";
  auto program = Compile(pod, kBad, {ShapedArray{{4}, float32}});
  try {
    program->ExecuteShards(IotaArgs(pod));
    FAIL() << "expected an error";
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_THAT(msg, HasSubstr("jit(spmd): run failed on TPU_"));
    EXPECT_THAT(msg, HasSubstr("is in no group of replica_groups={{0,1,2,3}}"));
    EXPECT_THAT(msg, ::testing::Not(HasSubstr("failed\n")));
  }
  // The pod still runs programs afterwards.
  auto good = Compile(pod, kCollectives,
                      {ShapedArray{{4}, float32}, ShapedArray{{8}, float32}, ShapedArray{{2}, float32},
                       ShapedArray{{4}, float32}, ShapedArray{{4}, float32}, ShapedArray{{}, uint32}});
  EXPECT_EQ(good->ExecuteShards(IotaArgs(pod))[7][5].to_vector<uint32_t>(), std::vector<uint32_t>{7});
}

TEST(PodProgramTest, ExecuteTakesShardedOrReplicatedArgumentsAndReturnsChipsOutputs) {
  Pod pod = make_pod("v5e", {4, 2});
  auto program = Compile(pod, kCollectives,
                         {ShapedArray{{4}, float32}, ShapedArray{{8}, float32}, ShapedArray{{2}, float32},
                          ShapedArray{{4}, float32}, ShapedArray{{4}, float32}, ShapedArray{{}, uint32}});
  // One array for every chip: the all-reduce doubles it.
  const Arrays outs = program->Execute({numpy::array(std::vector<float>{1, 2, 3, 4}, {4})});
  ASSERT_EQ(outs.size(), static_cast<size_t>(kChips * program->num_outputs()));
  EXPECT_EQ(outs[6 * program->num_outputs() + 0].to_vector<float>(), (std::vector<float>{2, 4, 6, 8}));
  EXPECT_EQ(outs[6 * program->num_outputs() + 5].to_vector<uint32_t>(), std::vector<uint32_t>{6});
}

TEST(PodProgramTest, ProgramArgumentsAreChecked) {
  Pod pod = make_pod("v5e", {4, 2});
  auto program = Compile(pod, kCollectives,
                         {ShapedArray{{4}, float32}, ShapedArray{{8}, float32}, ShapedArray{{2}, float32},
                          ShapedArray{{4}, float32}, ShapedArray{{4}, float32}, ShapedArray{{}, uint32}});
  std::vector<Arrays> args = IotaArgs(pod);
  args.pop_back();
  EXPECT_THROW(program->ExecuteShards(args), ValueError);
  args = IotaArgs(pod);
  args[3] = {numpy::array(std::vector<float>{1, 2}, {2})};
  try {
    program->ExecuteShards(args);
    FAIL();
  } catch (const ValueError& e) {
    EXPECT_THAT(std::string(e.what()), HasSubstr("partition 3's argument 0 is f32[2]"));
  }
}

}  // namespace
}  // namespace jx::tpu::pod_program_test
