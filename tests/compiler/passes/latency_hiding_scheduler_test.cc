// The latency-hiding scheduler: starts early and dones late where the dependencies allow
// (independent compute between them), never where they do not, one collective of a kind in
// flight by default (kinds in flight together take turns on the interconnect), and a memory
// limit that forbids an overlap a looser one allows, given up only where the peak is.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "jx/compiler/hlo/hlo_module.h"
#include "jx/compiler/hlo/hlo_parser.h"
#include "jx/compiler/hlo/hlo_verifier.h"
#include "jx/compiler/passes/hlo_scheduling.h"
#include "jx/compiler/passes/latency_hiding_scheduler.h"

namespace jx::hlo::latency_hiding_scheduler_test {
namespace {

std::unique_ptr<HloModule> Parse(std::string_view text) {
  absl::StatusOr<std::unique_ptr<HloModule>> module = ParseHloModule(text);
  EXPECT_TRUE(module.ok()) << module.status();
  EXPECT_TRUE(VerifyHloModule(**module).ok()) << VerifyHloModule(**module);
  return *std::move(module);
}

// Collectives take 10 us on the network, dots 4 us, everything else nothing.
LatencyHidingSchedulerOptions Options() {
  LatencyHidingSchedulerOptions options;
  options.estimate_seconds = [](const HloInstruction& instr) {
    if (IsAsyncCollectiveStart(instr.opcode())) return 10e-6;
    if (instr.opcode() == HloOpcode::kDot) return 4e-6;
    return 0.0;
  };
  return options;
}

int64_t PositionOf(const std::vector<HloInstruction*>& order, std::string_view name) {
  for (size_t i = 0; i < order.size(); ++i) {
    if (order[i]->name() == name) return static_cast<int64_t>(i);
  }
  ADD_FAILURE() << name << " is not scheduled";
  return -1;
}

constexpr std::string_view kSum = R"(HloModule m
%sum (x: f32[], y: f32[]) -> f32[] {
  %x = f32[] parameter(0)
  %y = f32[] parameter(1)
  ROOT %s = f32[] add(f32[] %x, f32[] %y)
}
)";

// %ar's all-reduce of p; %d1 = w @ w needs none of it; %d2 consumes the all-reduce.
constexpr std::string_view kIndependentDot = R"(
ENTRY %main (p: f32[64,64], w: f32[64,64]) -> (f32[64,64], f32[64,64]) {
  %p = f32[64,64]{1,0} parameter(0)
  %w = f32[64,64]{1,0} parameter(1)
  %ars = f32[64,64]{1,0} all-reduce-start(f32[64,64]{1,0} %p), replica_groups={{0,1}}, to_apply=%sum
  %ard = f32[64,64]{1,0} all-reduce-done(f32[64,64]{1,0} %ars)
  %d2 = f32[64,64]{1,0} dot(f32[64,64]{1,0} %ard, f32[64,64]{1,0} %w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  %d1 = f32[64,64]{1,0} dot(f32[64,64]{1,0} %w, f32[64,64]{1,0} %w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ROOT %t = (f32[64,64]{1,0}, f32[64,64]{1,0}) tuple(f32[64,64]{1,0} %d1, f32[64,64]{1,0} %d2)
}
)";

TEST(LatencyHidingSchedulerTest, IndependentComputeRunsBetweenStartAndDone) {
  auto module = Parse(std::string(kSum) + std::string(kIndependentDot));
  const HloComputation& entry = *module->entry_computation();
  const LatencyHidingSchedule s = ScheduleForLatencyHiding(entry, Options()).value();
  ASSERT_EQ(s.order.size(), static_cast<size_t>(entry.instruction_count()));
  EXPECT_LT(PositionOf(s.order, "ars"), PositionOf(s.order, "d1"));
  EXPECT_LT(PositionOf(s.order, "d1"), PositionOf(s.order, "ard"));
  // The dot that consumes the result waits for the done.
  EXPECT_LT(PositionOf(s.order, "ard"), PositionOf(s.order, "d2"));
  EXPECT_EQ(s.overlapped, 1);
  // 4 us of the 10 us collective hidden: 10 + 4 instead of 10 + 4 + 4.
  EXPECT_NEAR(s.estimated_seconds, 14e-6, 1e-12);

  LatencyHidingScheduler pass(Options());
  absl::StatusOr<bool> changed = pass.Run(module.get());
  ASSERT_TRUE(changed.ok()) << changed.status();
  const std::vector<HloInstruction*> order = entry.MakeSequentialOrder();
  EXPECT_LT(PositionOf(order, "d1"), PositionOf(order, "ard"));
  EXPECT_LT(PositionOf(order, "ars"), PositionOf(order, "d1"));
  EXPECT_FALSE(*pass.Run(module.get()));  // a second run keeps the order
}

// FSDP: three layers, each gathering its weight (1 us on the network) and running four 4 us
// dots. An all-gather-done waits until its reader is next and holds the slot, so each weight
// is gathered one layer ahead: at most two gathered weights live, not all three gathered
// during the first layer, and every gather but the first still hidden.
TEST(LatencyHidingSchedulerTest, AllGathersRunOneLayerAhead) {
  std::string text = R"(HloModule m
ENTRY %main (x: f32[8,64], v: f32[64,64], w0: f32[32,64], w1: f32[32,64], w2: f32[32,64]) -> f32[8,64] {
  %x = f32[8,64]{1,0} parameter(0)
  %v = f32[64,64]{1,0} parameter(1)
)";
  std::string h = "x";
  for (int l = 0; l < 3; ++l) {
    const std::string w = "w" + std::to_string(l), g = "g" + std::to_string(l);
    text += "  %" + w + " = f32[32,64]{1,0} parameter(" + std::to_string(l + 2) + ")\n";
    text += "  %" + g + "s = (f32[32,64]{1,0}, f32[64,64]{1,0}) all-gather-start(f32[32,64]{1,0} %" + w +
            "), replica_groups={{0,1}}, dimensions={0}\n";
    text += "  %" + g + "d = f32[64,64]{1,0} all-gather-done((f32[32,64]{1,0}, f32[64,64]{1,0}) %" + g + "s)\n";
    for (int k = 0; k < 4; ++k) {
      const std::string out = "l" + std::to_string(l) + "_" + std::to_string(k);
      const std::string rhs = k == 0 ? g + "d" : "v";
      text += std::string(l == 2 && k == 3 ? "  ROOT %" : "  %") + out + " = f32[8,64]{1,0} dot(f32[8,64]{1,0} %" + h +
              ", f32[64,64]{1,0} %" + rhs + "), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n";
      h = out;
    }
  }
  text += "}\n";
  auto module = Parse(text);
  LatencyHidingSchedulerOptions options = Options();
  options.estimate_seconds = [](const HloInstruction& instr) {
    if (IsAsyncCollectiveStart(instr.opcode())) return 1e-6;
    return instr.opcode() == HloOpcode::kDot ? 4e-6 : 0.0;
  };
  const LatencyHidingSchedule s = ScheduleForLatencyHiding(*module->entry_computation(), options).value();
  // Layer l+1's weight is gathered while layer l runs, and its done waits for layer l's end.
  EXPECT_GT(PositionOf(s.order, "g1d"), PositionOf(s.order, "l0_3"));
  EXPECT_GT(PositionOf(s.order, "g2s"), PositionOf(s.order, "l0_3"));
  EXPECT_LT(PositionOf(s.order, "g2s"), PositionOf(s.order, "l1_0"));
  EXPECT_GT(PositionOf(s.order, "g2d"), PositionOf(s.order, "l1_3"));
  EXPECT_EQ(s.overlapped, 2);
  EXPECT_NEAR(s.estimated_seconds, 1e-6 + 3 * 16e-6, 1e-12);  // only the first gather exposed
}

// Three layers, each a dot by its gathered weight, stored in an order that gathers every weight
// first, the last layer's first (as a memory scheduler blind to overlap may place them). Starts
// go in the stored order, so from it every gathered weight is live before the first dot; the
// post order gathers each just ahead of its layer.
TEST(LatencyHidingSchedulerTest, AnOrderThatGathersEveryWeightFirstIsRedoneFromThePostOrder) {
  std::string text = R"(HloModule m
ENTRY %main (x: f32[8,64], w0: f32[32,64], w1: f32[32,64], w2: f32[32,64]) -> f32[8,64] {
  %x = f32[8,64]{1,0} parameter(0)
)";
  for (int l = 0; l < 3; ++l) {
    const std::string w = "w" + std::to_string(l), g = "g" + std::to_string(l);
    text += "  %" + w + " = f32[32,64]{1,0} parameter(" + std::to_string(l + 1) + ")\n";
    text += "  %" + g + "s = (f32[32,64]{1,0}, f32[64,64]{1,0}) all-gather-start(f32[32,64]{1,0} %" + w +
            "), replica_groups={{0,1}}, dimensions={0}\n";
    text += "  %" + g + "d = f32[64,64]{1,0} all-gather-done((f32[32,64]{1,0}, f32[64,64]{1,0}) %" + g + "s)\n";
    text += std::string(l == 2 ? "  ROOT %" : "  %") + "d" + std::to_string(l) + " = f32[8,64]{1,0} dot(f32[8,64]{1,0} %" +
            (l == 0 ? std::string("x") : "d" + std::to_string(l - 1)) + ", f32[64,64]{1,0} %" + g +
            "d), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n";
  }
  text += "}\n";
  auto module = Parse(text);
  HloComputation& entry = *module->entry_computation();
  std::vector<HloInstruction*> gathers_first;
  for (std::string_view name : {"x", "w2", "w1", "w0", "g2s", "g2d", "g1s", "g1d", "g0s", "g0d", "d0", "d1", "d2"}) {
    for (HloInstruction* instr : entry.instructions()) {
      if (instr->name() == name) gathers_first.push_back(instr);
    }
  }
  ASSERT_EQ(gathers_first.size(), static_cast<size_t>(entry.instruction_count()));
  entry.set_schedule(gathers_first);

  // No limit: the stored order's schedule, every weight gathered before the first dot.
  const LatencyHidingSchedule stored = ScheduleForLatencyHiding(entry, Options()).value();
  EXPECT_LT(PositionOf(stored.order, "g0d"), PositionOf(stored.order, "d0"));
  EXPECT_LT(PositionOf(stored.order, "g2d"), PositionOf(stored.order, "d0"));
  // Arguments 26 KiB; at g0's done the other two gathered weights (16 KiB each), g0's start
  // (its operand's copy 8 and result 16) and its done (16): 98 KiB.
  EXPECT_EQ(stored.peak_memory_bytes, 98 << 10);

  // Under 80 KiB no serializing of the stored order fits (it gathers in that order all the
  // same); the post order's schedule does, overlapping g1 with d0 and g2 with d1.
  LatencyHidingSchedulerOptions tight = Options();
  tight.memory_limit_bytes = 80 << 10;
  const LatencyHidingSchedule s = ScheduleForLatencyHiding(entry, tight).value();
  EXPECT_LE(s.peak_memory_bytes, tight.memory_limit_bytes);
  EXPECT_EQ(s.peak_memory_bytes, PeakMemoryBytes(entry, s.order));
  EXPECT_EQ(s.serialized, 0);
  EXPECT_EQ(s.overlapped, 2);
  EXPECT_LT(PositionOf(s.order, "g1s"), PositionOf(s.order, "d0"));
  EXPECT_GT(PositionOf(s.order, "g1d"), PositionOf(s.order, "d0"));
  EXPECT_GT(PositionOf(s.order, "g2s"), PositionOf(s.order, "d0"));
  EXPECT_GT(PositionOf(s.order, "g2d"), PositionOf(s.order, "d1"));
}

TEST(LatencyHidingSchedulerTest, NoOverlapWhereEverythingDependsOnTheCollective) {
  auto module = Parse(std::string(kSum) + R"(
ENTRY %main (p: f32[64,64], w: f32[64,64]) -> f32[64,64] {
  %p = f32[64,64]{1,0} parameter(0)
  %w = f32[64,64]{1,0} parameter(1)
  %ars = f32[64,64]{1,0} all-reduce-start(f32[64,64]{1,0} %p), replica_groups={{0,1}}, to_apply=%sum
  %ard = f32[64,64]{1,0} all-reduce-done(f32[64,64]{1,0} %ars)
  ROOT %d2 = f32[64,64]{1,0} dot(f32[64,64]{1,0} %ard, f32[64,64]{1,0} %w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}
)");
  const LatencyHidingSchedule s = ScheduleForLatencyHiding(*module->entry_computation(), Options()).value();
  EXPECT_EQ(s.overlapped, 0);
  EXPECT_LT(PositionOf(s.order, "ard"), PositionOf(s.order, "d2"));
  EXPECT_NEAR(s.estimated_seconds, 14e-6, 1e-12);  // the whole collective exposed
}

// Two all-reduces and two all-gathers of independent values, and a dot of neither.
constexpr std::string_view kTwoOfEachKind = R"(
ENTRY %main (p: f32[64,64], q: f32[64,64], w: f32[64,64]) -> (f32[64,64], f32[64,64], f32[128,64], f32[128,64], f32[64,64]) {
  %p = f32[64,64]{1,0} parameter(0)
  %q = f32[64,64]{1,0} parameter(1)
  %w = f32[64,64]{1,0} parameter(2)
  %ar1s = f32[64,64]{1,0} all-reduce-start(f32[64,64]{1,0} %p), replica_groups={{0,1}}, to_apply=%sum
  %ar1d = f32[64,64]{1,0} all-reduce-done(f32[64,64]{1,0} %ar1s)
  %ar2s = f32[64,64]{1,0} all-reduce-start(f32[64,64]{1,0} %q), replica_groups={{0,1}}, to_apply=%sum
  %ar2d = f32[64,64]{1,0} all-reduce-done(f32[64,64]{1,0} %ar2s)
  %ag1s = (f32[64,64]{1,0}, f32[128,64]{1,0}) all-gather-start(f32[64,64]{1,0} %p), replica_groups={{0,1}}, dimensions={0}
  %ag1d = f32[128,64]{1,0} all-gather-done((f32[64,64]{1,0}, f32[128,64]{1,0}) %ag1s)
  %ag2s = (f32[64,64]{1,0}, f32[128,64]{1,0}) all-gather-start(f32[64,64]{1,0} %q), replica_groups={{0,1}}, dimensions={0}
  %ag2d = f32[128,64]{1,0} all-gather-done((f32[64,64]{1,0}, f32[128,64]{1,0}) %ag2s)
  %d = f32[64,64]{1,0} dot(f32[64,64]{1,0} %w, f32[64,64]{1,0} %w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ROOT %t = (f32[64,64]{1,0}, f32[64,64]{1,0}, f32[128,64]{1,0}, f32[128,64]{1,0}, f32[64,64]{1,0}) tuple(%ar1d, %ar2d, %ag1d, %ag2d, %d)
}
)";

// How many collectives of each kind are in flight at most along the order.
std::map<HloOpcode, int> MaxInFlight(const std::vector<HloInstruction*>& order) {
  std::map<HloOpcode, int> now, most;
  for (const HloInstruction* instr : order) {
    const HloOpcode kind = SyncCollectiveOpcode(instr->opcode());
    if (IsAsyncCollectiveStart(instr->opcode())) most[kind] = std::max(most[kind], ++now[kind]);
    if (IsAsyncCollectiveDone(instr->opcode())) --now[kind];
  }
  return most;
}

TEST(LatencyHidingSchedulerTest, OneCollectiveOfEachKindInFlightByDefault) {
  auto module = Parse(std::string(kSum) + std::string(kTwoOfEachKind));
  const LatencyHidingSchedule s = ScheduleForLatencyHiding(*module->entry_computation(), Options()).value();
  std::map<HloOpcode, int> most = MaxInFlight(s.order);
  EXPECT_EQ(most[HloOpcode::kAllReduce], 1);
  EXPECT_EQ(most[HloOpcode::kAllGather], 1);
  // Kinds overlap each other: an all-gather starts while an all-reduce is in flight.
  EXPECT_LT(PositionOf(s.order, "ag1s"), PositionOf(s.order, "ar1d"));
  // But they share the interconnect: the four 10 us collectives end 40 us in, two at a time or
  // not (the 4 us dot hides under the first); each kind as if alone: 20 us.
  EXPECT_NEAR(s.estimated_seconds, 40e-6, 1e-12);
  LatencyHidingSchedulerOptions alone = Options();
  alone.shared_interconnect = false;
  const LatencyHidingSchedule apart = ScheduleForLatencyHiding(*module->entry_computation(), alone).value();
  EXPECT_NEAR(apart.estimated_seconds, 20e-6, 1e-12);
  EXPECT_LT(PositionOf(apart.order, "ag1s"), PositionOf(apart.order, "ar1d"));

  LatencyHidingSchedulerOptions two = Options();
  two.max_in_flight_per_kind = 2;
  most = MaxInFlight(ScheduleForLatencyHiding(*module->entry_computation(), two).value().order);
  EXPECT_EQ(most[HloOpcode::kAllReduce], 2);
  EXPECT_EQ(most[HloOpcode::kAllGather], 2);

  LatencyHidingSchedulerOptions none = Options();
  none.max_in_flight_per_kind = 0;
  EXPECT_FALSE(LatencyHidingScheduler(none).Run(module.get()).ok());
}

TEST(LatencyHidingSchedulerTest, ATightMemoryLimitForbidsTheOverlapALooseOneAllows) {
  // The all-reduce of a 1 MiB value overlapping a dot keeps both the collective's buffers
  // and the dot's live at once.
  auto module = Parse(std::string(kSum) + R"(
ENTRY %main (p: f32[512,512], w: f32[64,64]) -> (f32[64,64], f32[64,64]) {
  %p = f32[512,512]{1,0} parameter(0)
  %w = f32[64,64]{1,0} parameter(1)
  %e = f32[512,512]{1,0} exponential(f32[512,512]{1,0} %p)
  %ars = f32[512,512]{1,0} all-reduce-start(f32[512,512]{1,0} %e), replica_groups={{0,1}}, to_apply=%sum
  %ard = f32[512,512]{1,0} all-reduce-done(f32[512,512]{1,0} %ars)
  %sl = f32[64,64]{1,0} slice(f32[512,512]{1,0} %ard), slice={[0:64], [0:64]}
  %d1 = f32[64,64]{1,0} dot(f32[64,64]{1,0} %w, f32[64,64]{1,0} %w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  %d2 = f32[64,64]{1,0} dot(f32[64,64]{1,0} %d1, f32[64,64]{1,0} %w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ROOT %t = (f32[64,64]{1,0}, f32[64,64]{1,0}) tuple(f32[64,64]{1,0} %sl, f32[64,64]{1,0} %d2)
}
)");
  const HloComputation& entry = *module->entry_computation();
  const LatencyHidingSchedule loose = ScheduleForLatencyHiding(entry, Options()).value();
  EXPECT_EQ(loose.overlapped, 1);
  EXPECT_EQ(loose.serialized, 0);
  EXPECT_LT(PositionOf(loose.order, "d1"), PositionOf(loose.order, "ard"));

  // The serialized order's peak: the limit just below what the overlap needs.
  LatencyHidingSchedulerOptions tight = Options();
  tight.memory_limit_bytes = loose.peak_memory_bytes - 1;
  const LatencyHidingSchedule s = ScheduleForLatencyHiding(entry, tight).value();
  EXPECT_LE(s.peak_memory_bytes, tight.memory_limit_bytes);
  EXPECT_EQ(s.overlapped, 0);
  EXPECT_EQ(s.serialized, 1);
  EXPECT_EQ(PositionOf(s.order, "ard"), PositionOf(s.order, "ars") + 1);
  EXPECT_EQ(PeakMemoryBytes(entry, s.order), s.peak_memory_bytes);
  EXPECT_GT(s.estimated_seconds, loose.estimated_seconds);

  // A limit no order meets: the program does not fit either way, so it keeps the overlapped
  // order (logged under JX_LOG_COMPILES) and reports that order's peak.
  LatencyHidingSchedulerOptions impossible = Options();
  impossible.memory_limit_bytes = 1;
  const LatencyHidingSchedule kept = ScheduleForLatencyHiding(entry, impossible).value();
  EXPECT_EQ(kept.order, loose.order);
  EXPECT_EQ(kept.overlapped, 1);
  EXPECT_EQ(kept.serialized, 0);
  EXPECT_EQ(kept.peak_memory_bytes, loose.peak_memory_bytes);
}

TEST(LatencyHidingSchedulerTest, OnlyOverlapAcrossTheMemoryPeakIsGivenUp) {
  // Two all-reduces, one in flight at a time. A (1 MiB) overlaps two small dots. B (256 KiB,
  // of a slice of `big`, 2 MiB, which a reduction reads after B) overlaps the 2 MiB dots b1
  // and b2, which need A's result: big, B's buffers, b1 and b2 are live at once, the peak.
  // Just under that peak, serializing B is enough and A keeps its overlap; serializing the
  // largest first would give up A's overlap, which does not lower the peak, and then B's.
  auto module = Parse(std::string(kSum) + R"(
ENTRY %main (p: f32[512,512], r: f32[1024,512], v: f32[1024,512], u: f32[512,512], w: f32[64,64]) -> (f32[1024,512], f32[], f32[64,64]) {
  %p = f32[512,512]{1,0} parameter(0)
  %r = f32[1024,512]{1,0} parameter(1)
  %v = f32[1024,512]{1,0} parameter(2)
  %u = f32[512,512]{1,0} parameter(3)
  %w = f32[64,64]{1,0} parameter(4)
  %ea = f32[512,512]{1,0} exponential(f32[512,512]{1,0} %p)
  %arsa = f32[512,512]{1,0} all-reduce-start(f32[512,512]{1,0} %ea), replica_groups={{0,1}}, to_apply=%sum
  %arda = f32[512,512]{1,0} all-reduce-done(f32[512,512]{1,0} %arsa)
  %a1 = f32[64,64]{1,0} dot(f32[64,64]{1,0} %w, f32[64,64]{1,0} %w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  %a2 = f32[64,64]{1,0} dot(f32[64,64]{1,0} %a1, f32[64,64]{1,0} %w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  %zero = f32[] constant(0)
  %sa = f32[] reduce(f32[512,512]{1,0} %arda, f32[] %zero), dimensions={0,1}, to_apply=%sum
  %big = f32[1024,512]{1,0} exponential(f32[1024,512]{1,0} %r)
  %bs = f32[256,256]{1,0} slice(f32[1024,512]{1,0} %big), slice={[0:256], [0:256]}
  %eb = f32[256,256]{1,0} exponential(f32[256,256]{1,0} %bs)
  %arsb = f32[256,256]{1,0} all-reduce-start(f32[256,256]{1,0} %eb), replica_groups={{0,1}}, to_apply=%sum
  %ardb = f32[256,256]{1,0} all-reduce-done(f32[256,256]{1,0} %arsb)
  %rs = f32[] reduce(f32[256,256]{1,0} %ardb, f32[] %zero), dimensions={0,1}, to_apply=%sum
  %rb = f32[] reduce(f32[1024,512]{1,0} %big, f32[] %rs), dimensions={0,1}, to_apply=%sum
  %bc = f32[1024,512]{1,0} broadcast(f32[] %sa), dimensions={}
  %v2 = f32[1024,512]{1,0} add(f32[1024,512]{1,0} %v, f32[1024,512]{1,0} %bc)
  %b1 = f32[1024,512]{1,0} dot(f32[1024,512]{1,0} %v2, f32[512,512]{1,0} %u), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  %b2 = f32[1024,512]{1,0} dot(f32[1024,512]{1,0} %b1, f32[512,512]{1,0} %u), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ROOT %t = (f32[1024,512]{1,0}, f32[], f32[64,64]{1,0}) tuple(f32[1024,512]{1,0} %b2, f32[] %rb, f32[64,64]{1,0} %a2)
}
)");
  const HloComputation& entry = *module->entry_computation();
  const LatencyHidingSchedule loose = ScheduleForLatencyHiding(entry, Options()).value();
  EXPECT_EQ(loose.overlapped, 2);
  EXPECT_EQ(loose.serialized, 0);
  const MemoryPeak peak = FindMemoryPeak(entry, loose.order);
  EXPECT_EQ(peak.bytes, loose.peak_memory_bytes);
  EXPECT_LE(PositionOf(loose.order, "arsb"), peak.position);
  EXPECT_GE(PositionOf(loose.order, "ardb"), peak.position);
  EXPECT_LT(PositionOf(loose.order, "arda"), peak.position);

  LatencyHidingSchedulerOptions tight = Options();
  tight.memory_limit_bytes = loose.peak_memory_bytes - 1;
  const LatencyHidingSchedule s = ScheduleForLatencyHiding(entry, tight).value();
  EXPECT_LE(s.peak_memory_bytes, tight.memory_limit_bytes);
  EXPECT_EQ(s.serialized, 1);
  EXPECT_EQ(s.overlapped, 1);
  EXPECT_EQ(PositionOf(s.order, "ardb"), PositionOf(s.order, "arsb") + 1);
  EXPECT_GT(PositionOf(s.order, "arda"), PositionOf(s.order, "arsa") + 1);  // A still overlaps
}

}  // namespace
}  // namespace jx::hlo::latency_hiding_scheduler_test
