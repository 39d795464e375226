// IciCollectiveTimer shares one timing between collectives that agree in kind, bytes and
// groups (or pairs): a shared timing must be the one a fresh timer computes, and collectives
// that differ only in their groups or pairs must not share one. Pod: a v4 2x2x1 slice (4 chips,
// partition p on chip p); a send to a neighbour is one hop, to the opposite corner two.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "jx/compiler/hlo/hlo_computation.h"
#include "jx/compiler/hlo/hlo_module.h"
#include "jx/compiler/hlo/hlo_parser.h"
#include "jx/core/str_util.h"
#include "jx/devices/tpu/ici_collective_timer.h"
#include "jx/devices/tpu/pod.h"
#include "jx/devices/tpu/tpu_chip.h"

namespace jx::tpu::ici_collective_timer_test {
namespace {

std::vector<const TpuChip*> ChipsOf(const Pod& pod) {
  std::vector<const TpuChip*> chips;
  for (const Device* d : pod.devices()) chips.push_back(static_cast<const TpuChip*>(d));
  return chips;
}

// A module whose entry holds one collective of 1 MiB named %c (and, for a start, its done).
std::unique_ptr<hlo::HloModule> Collective(const std::string& op, const std::string& attributes) {
  const bool start = op.ends_with("-start");
  const std::string result = start ? "(f32[262144]{0}, f32[262144]{0})" : "f32[262144]{0}";
  const std::string text = StrCat(R"(HloModule timed

%sum (x: f32[], y: f32[]) -> f32[] {
  %x = f32[] parameter(0)
  %y = f32[] parameter(1)
  ROOT %s = f32[] add(f32[] %x, f32[] %y)
}

ENTRY %main (a: f32[262144]) -> f32[262144] {
  %a = f32[262144]{0} parameter(0)
  )", start ? "%c" : "ROOT %c", " = ", result, " ", op, "(f32[262144]{0} %a), channel_id=1, ", attributes,
                                  start ? "\n  ROOT %d = f32[262144]{0} collective-permute-done(" + result + " %c)" : "",
                                  "\n}\n");
  absl::StatusOr<std::unique_ptr<hlo::HloModule>> module = hlo::ParseHloModule(text);
  EXPECT_TRUE(module.ok()) << module.status() << "\n" << text;
  return module.ok() ? *std::move(module) : nullptr;
}

const hlo::HloInstruction& Named(const hlo::HloModule& module, const std::string& name) {
  for (const hlo::HloInstruction* instr : module.entry_computation()->instructions()) {
    if (instr->name() == name) return *instr;
  }
  ADD_FAILURE() << "no %" << name;
  return *module.entry_computation()->root_instruction();
}

CollectiveTiming TimeOf(const IciCollectiveTimer& timer, const hlo::HloModule& module) {
  absl::StatusOr<CollectiveTiming> t = timer.Time(Named(module, "c"));
  EXPECT_TRUE(t.ok()) << t.status();
  return t.ok() ? *t : CollectiveTiming{};
}

void ExpectSame(const CollectiveTiming& a, const CollectiveTiming& b) {
  EXPECT_EQ(a.seconds, b.seconds);
  EXPECT_EQ(a.algorithm, b.algorithm);
  EXPECT_EQ(a.link_bytes, b.link_bytes);
}

TEST(IciCollectiveTimerTest, AnEqualCollectiveSharesTheTimingAFreshTimerComputes) {
  const Pod pod = make_pod("v4", {2, 2, 1});
  const IciCollectiveTimer timer(pod.torus(), ChipsOf(pod));
  const std::string groups = "replica_groups={{0,1},{2,3}}, to_apply=%sum";
  const auto first = Collective("all-reduce", groups), second = Collective("all-reduce", groups);
  const CollectiveTiming timed = TimeOf(timer, *first);
  const CollectiveTiming shared = TimeOf(timer, *second);  // a hit
  ExpectSame(shared, timed);
  ExpectSame(shared, TimeOf(IciCollectiveTimer(pod.torus(), ChipsOf(pod)), *second));
  EXPECT_EQ(timer.shared_timings().size(), 1u);  // both named %c: one entry, one timing
}

TEST(IciCollectiveTimerTest, CollectivesThatDifferOnlyInTheirGroupsAreTimedApart) {
  const Pod pod = make_pod("v4", {2, 2, 1});
  const IciCollectiveTimer timer(pod.torus(), ChipsOf(pod));
  const auto rows = Collective("all-reduce", "replica_groups={{0,1},{2,3}}, to_apply=%sum");
  const auto all = Collective("all-reduce", "replica_groups={{0,1,2,3}}, to_apply=%sum");
  const CollectiveTiming row_timing = TimeOf(timer, *rows);
  const CollectiveTiming all_timing = TimeOf(timer, *all);
  EXPECT_NE(row_timing.algorithm, all_timing.algorithm);
  ExpectSame(all_timing, TimeOf(IciCollectiveTimer(pod.torus(), ChipsOf(pod)), *all));
}

// A collective-permute-start's pairs tell it apart as a collective-permute's do: a send to a
// neighbour and one across the slice's diagonal (two hops) move the same bytes at different
// prices.
TEST(IciCollectiveTimerTest, PermuteStartsThatDifferOnlyInTheirPairsAreTimedApart) {
  const Pod pod = make_pod("v4", {2, 2, 1});
  for (const std::string op : {"collective-permute", "collective-permute-start"}) {
    SCOPED_TRACE(op);
    const IciCollectiveTimer timer(pod.torus(), ChipsOf(pod));
    const auto near = Collective(op, "source_target_pairs={{0,1}}");
    const auto far = Collective(op, "source_target_pairs={{0,3}}");
    const CollectiveTiming near_timing = TimeOf(timer, *near);
    const CollectiveTiming far_timing = TimeOf(timer, *far);
    EXPECT_EQ(near_timing.link_bytes.size(), 1u);
    EXPECT_EQ(far_timing.link_bytes.size(), 2u);
    EXPECT_LT(near_timing.seconds, far_timing.seconds);
    ExpectSame(far_timing, TimeOf(IciCollectiveTimer(pod.torus(), ChipsOf(pod)), *far));
  }
}

}  // namespace
}  // namespace jx::tpu::ici_collective_timer_test
