#include "jx/compiler/passes/hlo_scheduling.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "jx/compiler/hlo/hlo_builder.h"
#include "pass_test_util.h"

namespace jx::hlo::hlo_scheduling_test {
namespace {

using ::jx::hlo::testing::ParseAndRun;
using ::testing::ElementsAre;

std::vector<std::string> Names(absl::Span<HloInstruction* const> order) {
  std::vector<std::string> names;
  for (const HloInstruction* instr : order) names.push_back(instr->name());
  return names;
}

// The computation's instructions in text (insertion) order.
std::vector<HloInstruction*> TextOrder(const HloComputation& computation) {
  std::vector<HloInstruction*> order;
  for (HloInstruction* instr : computation.instructions()) order.push_back(instr);
  return order;
}

TEST(PeakMemoryTest, CountsLiveRangesParametersAndRoot) {
  auto module = ParseHloModule(R"(HloModule m
ENTRY %main {
  %p = f32[1024]{0} parameter(0)
  %e = f32[1024]{0} exponential(%p)
  %n = f32[1024]{0} negate(%e)
  ROOT %s = f32[1024]{0} sine(%n)
})")
                    .value();
  const HloComputation& c = *module->entry_computation();
  // p lives throughout; at %n, %e (last read) and %n are live; at %s, %n and %s.
  EXPECT_EQ(PeakMemoryBytes(c, c.MakeInstructionPostOrder()), 3 * 4096);
}

// A part of a computation (a kernel's members %a, %b, %ab, %c) reading the outside operands %x
// (by %a and %b) and %y (by %c), sized per instruction (%b counts double: 8 KiB, the others 4),
// each outside operand held 1 KiB from its first reader to its last. Live (KiB): at %a, %x + %a
// = 5; at %b, %x + %a + %b = 13; at %ab, %a + %b + %ab = 16; at %c (live out), %ab + %c + %y = 9:
// peak 16 at %ab. Over %a and %b alone (%b live out; no reader of %a in it, so %a is free after
// itself): %x + %b = 9 KiB at %b, 8 without the operand's buffer.
TEST(PeakMemoryTest, APartsOutsideOperandsLiveAroundTheirReaders) {
  auto module = ParseHloModule(R"(HloModule m
ENTRY %main {
  %x = f32[1024]{0} parameter(0)
  %y = f32[1024]{0} parameter(1)
  %a = f32[1024]{0} exponential(%x)
  %b = f32[1024]{0} negate(%x)
  %ab = f32[1024]{0} add(%a, %b)
  ROOT %c = f32[1024]{0} multiply(%ab, %y)
})")
                    .value();
  const HloComputation& c = *module->entry_computation();
  HloInstruction* a = c.GetInstructionWithName("a");
  HloInstruction* b = c.GetInstructionWithName("b");
  HloInstruction* ab = c.GetInstructionWithName("ab");
  HloInstruction* root = c.GetInstructionWithName("c");
  const std::vector<HloInstruction*> part = {a, b, ab, root};
  auto live_out = [root](const HloInstruction& i) { return &i == root; };
  auto bytes = [b](const HloInstruction& i, const Shape& s) { return (&i == b ? 2 : 1) * ShapeUtil::ByteSizeOf(s); };
  auto around_readers = [](const HloInstruction&) -> int64_t { return 1024; };
  auto none = [](const HloInstruction&) -> int64_t { return 0; };
  EXPECT_EQ(FindMemoryPeak(part, live_out, bytes, around_readers).bytes, 16 * 1024);
  EXPECT_EQ(FindMemoryPeak(part, live_out, bytes, around_readers).position, 2);
  const std::vector<HloInstruction*> first_two = {a, b};
  EXPECT_EQ(FindMemoryPeak(first_two, [b](const HloInstruction& i) { return &i == b; }, bytes, around_readers).bytes,
            9 * 1024);
  EXPECT_EQ(FindMemoryPeak(first_two, [b](const HloInstruction& i) { return &i == b; }, bytes, none).bytes, 8 * 1024);
}

// A module with the scalar reducer %add, then `rest` (more computations and the entry).
std::string WithAdd(std::string_view rest) {
  return std::string(R"(HloModule m
%add (x: f32[], y: f32[]) -> f32[] {
  %x = f32[] parameter(0)
  %y = f32[] parameter(1)
  ROOT %sum = f32[] add(%x, %y)
}
)") + std::string(rest);
}

// %t adds no bytes; %g reads only element 1 (%b), so %a dies at the tuple.
TEST(PeakMemoryTest, TuplesAndGetTupleElementAlias) {
  auto module = ParseHloModule(R"(HloModule m
ENTRY %main {
  %p = f32[1024]{0} parameter(0)
  %a = f32[1024]{0} exponential(%p)
  %b = f32[1024]{0} negate(%p)
  %t = (f32[1024]{0}, f32[1024]{0}) tuple(%a, %b)
  %g = f32[1024]{0} get-tuple-element(%t), index=1
  %c = f32[1024]{0} cosine(%g)
  ROOT %d = f32[1024]{0} sine(%c)
})")
                    .value();
  const HloComputation& c = *module->entry_computation();
  const std::vector<HloInstruction*> order = c.MakeInstructionPostOrder();
  EXPECT_THAT(Names(order), ElementsAre("p", "a", "b", "t", "g", "c", "d"));
  EXPECT_EQ(PeakMemoryBytes(c, order), 3 * 4096);
}

// %t has two readers: the reduce, and a chain of big elementwise ops. Post order runs the
// chain first, keeping %t alive beside it; the list scheduler runs the reduce first (it
// allocates less), after which the chain's first op frees %t.
constexpr char kReduceBeforeChain[] = R"(ENTRY %main {
  %p = f32[1024]{0} parameter(0)
  %t = f32[1024]{0} exponential(%p)
  %g1 = f32[1024]{0} sine(%t)
  %g2 = f32[1024]{0} cosine(%g1)
  %g3 = f32[1024]{0} tanh(%g2)
  %zero = f32[] constant(0)
  %r = f32[] reduce(%t, %zero), dimensions={0}, to_apply=%add
  ROOT %root = (f32[1024]{0}, f32[]) tuple(%g3, %r)
})";

TEST(HloSchedulingTest, ListSchedulerBeatsPostOrder) {
  auto module = ParseAndRun<HloScheduling>(WithAdd(kReduceBeforeChain), true);
  const HloComputation& c = *module->entry_computation();
  const std::vector<HloInstruction*> post_order = c.MakeInstructionPostOrder();
  EXPECT_THAT(Names(post_order),
              ElementsAre("p", "t", "g1", "g2", "g3", "zero", "r", "root"));
  EXPECT_THAT(Names(c.schedule()),
              ElementsAre("p", "zero", "t", "r", "g1", "g2", "g3", "root"));
  EXPECT_EQ(c.MakeSequentialOrder(), c.schedule());
  // Post order: p, t, g1, g2 live at %g2. Scheduled: p, t, g1 and the scalar %r at %g1.
  EXPECT_EQ(PeakMemoryBytes(c, post_order), 4 * 4096);
  EXPECT_EQ(PeakMemoryBytes(c, c.schedule()), 3 * 4096 + 4);
}

// Once %r has read %t, %u is %t's last reader and frees it: the scheduler must raise
// %u's priority then, or it would run %v (earlier in post order) with %t still alive.
TEST(HloSchedulingTest, LastReaderGainsPriorityWhenOtherReadersRan) {
  auto module = ParseAndRun<HloScheduling>(WithAdd(R"(ENTRY %main {
  %p = f32[1024]{0} parameter(0)
  %t = f32[1024]{0} exponential(%p)
  %zero = f32[] constant(0)
  %r = f32[] reduce(%t, %zero), dimensions={0}, to_apply=%add
  %v = f32[1024]{0} cosine(%p)
  %u = f32[1024]{0} sine(%t)
  ROOT %root = (f32[], f32[1024]{0}, f32[1024]{0}) tuple(%r, %v, %u)
})"),
                                           true);
  const HloComputation& c = *module->entry_computation();
  EXPECT_THAT(Names(c.MakeInstructionPostOrder()),
              ElementsAre("p", "t", "zero", "r", "v", "u", "root"));
  EXPECT_THAT(Names(c.schedule()), ElementsAre("p", "zero", "t", "r", "u", "v", "root"));
  EXPECT_EQ(PeakMemoryBytes(c, c.MakeInstructionPostOrder()), 4 * 4096 + 4);
  EXPECT_EQ(PeakMemoryBytes(c, c.schedule()), 3 * 4096 + 4);
}

// Long chains schedule without recursion or quadratic scans.
TEST(HloSchedulingTest, LongChain) {
  auto module = std::make_unique<HloModule>("chain");
  HloBuilder b(module.get(), "main");
  HloInstruction* x = b.Parameter(0, ShapeUtil::MakeShape(F32, {16})).value();
  HloInstruction* p = x;
  for (int i = 0; i < 20000; ++i) x = b.Add(b.Negate(x).value(), p).value();
  module->set_entry_computation(b.Build(x).value());
  HloScheduling scheduling;
  EXPECT_FALSE(scheduling.Run(module.get()).value());
  const HloComputation& c = *module->entry_computation();
  EXPECT_EQ(c.schedule().size(), static_cast<size_t>(c.instruction_count()));
  // Parameter plus, at each add, the negate it reads and the add it writes.
  EXPECT_EQ(PeakMemoryBytes(c, c.schedule()), 3 * 64);
}

// Two big branches, each reduced to a scalar. Written interleaved, both big buffers are
// live at once; running one branch to completion first halves the peak.
constexpr char kTwoBranches[] = R"(ENTRY %main {
  %p = f32[] parameter(0)
  %zero = f32[] constant(0)
  %a = f32[4096]{0} broadcast(%p), dimensions={}
  %b = f32[4096]{0} broadcast(%p), dimensions={}
  %ra = f32[] reduce(%a, %zero), dimensions={0}, to_apply=%add
  %rb = f32[] reduce(%b, %zero), dimensions={0}, to_apply=%add
  ROOT %s = f32[] add(%ra, %rb)
})";

TEST(HloSchedulingTest, OneBranchAtATimeHalvesThePeak) {
  auto module = ParseHloModule(WithAdd(kTwoBranches)).value();
  const HloComputation& c = *module->entry_computation();
  const std::vector<HloInstruction*> text = TextOrder(c);
  const std::vector<HloInstruction*> list = ListScheduleOrder(c);
  EXPECT_THAT(Names(list), ElementsAre("p", "zero", "a", "ra", "b", "rb", "s"));
  // Text order: p, zero, a, b, ra live at %ra. Scheduled: p, zero, ra, b, rb at %rb.
  EXPECT_EQ(PeakMemoryBytes(c, text), 2 * 16384 + 3 * 4);
  EXPECT_EQ(PeakMemoryBytes(c, list), 16384 + 4 * 4);
  // The post order already runs one branch at a time, so the pass keeps it.
  module = ParseAndRun<HloScheduling>(WithAdd(kTwoBranches), false);
  const HloComputation& scheduled = *module->entry_computation();
  EXPECT_EQ(PeakMemoryBytes(scheduled, scheduled.MakeSequentialOrder()), 16384 + 4 * 4);
}

// Greedy picks the small %x first and keeps it alive through the big chain; the post
// order runs the chain first. The pass keeps the lower of the two.
TEST(HloSchedulingTest, KeepsPostOrderWhenItHasTheLowerPeak) {
  auto module = ParseAndRun<HloScheduling>(WithAdd(R"(ENTRY %main {
  %q = f32[] parameter(1)
  %y1 = f32[4096]{0} broadcast(%q), dimensions={}
  %y2 = f32[4096]{0} exponential(%y1)
  %zero = f32[] constant(0)
  %y3 = f32[] reduce(%y2, %zero), dimensions={0}, to_apply=%add
  %yb = f32[1024]{0} broadcast(%y3), dimensions={}
  %p = f32[1024]{0} parameter(0)
  %px = f32[1024]{0} exponential(%p)
  ROOT %root = f32[1024]{0} add(%yb, %px)
})"),
                                           false);
  const HloComputation& c = *module->entry_computation();
  const std::vector<HloInstruction*> post_order = c.MakeInstructionPostOrder();
  const std::vector<HloInstruction*> list = ListScheduleOrder(c);
  EXPECT_GT(PeakMemoryBytes(c, list), PeakMemoryBytes(c, post_order));
  EXPECT_EQ(ScheduleComputation(c), post_order);
  EXPECT_EQ(c.MakeSequentialOrder(), post_order);
}

TEST(HloSchedulingTest, SideEffectsKeepTheirOrder) {
  auto module = ParseAndRun<HloScheduling>(R"(HloModule m
ENTRY %main {
  %p = f32[1024]{0} parameter(0)
  %first = f32[4096]{0} custom-call(%p), custom_call_target="log", custom_call_has_side_effect=true
  %second = f32[] custom-call(%p), custom_call_target="log", custom_call_has_side_effect=true
  ROOT %t = (f32[4096]{0}, f32[]) tuple(%first, %second)
})",
                                           false);
  EXPECT_THAT(Names(module->entry_computation()->MakeSequentialOrder()),
              ElementsAre("p", "first", "second", "t"));
}

TEST(HloSchedulingTest, SchedulesCalledComputationsButNotFusions) {
  auto module = ParseAndRun<HloScheduling>(WithAdd(R"(%fused (fp: f32[8]) -> f32[8] {
  %fp = f32[8]{0} parameter(0)
  ROOT %fn = f32[8]{0} negate(%fp)
}
ENTRY %main {
  %p = f32[8]{0} parameter(0)
  %f = f32[8]{0} fusion(%p), kind=kLoop, calls=%fused
  %zero = f32[] constant(0)
  ROOT %r = f32[] reduce(%f, %zero), dimensions={0}, to_apply=%add
})"),
                                           false);
  EXPECT_EQ(module->GetComputationWithName("add")->schedule().size(), 3u);
  EXPECT_TRUE(module->GetComputationWithName("fused")->schedule().empty());
  EXPECT_EQ(module->entry_computation()->schedule().size(), 4u);
}

TEST(HloSchedulingTest, StaleScheduleFallsBackToPostOrder) {
  auto module = ParseAndRun<HloScheduling>(WithAdd(kReduceBeforeChain), true);
  HloComputation* c = module->entry_computation();
  const std::vector<HloInstruction*> schedule = c->schedule();
  ASSERT_EQ(schedule.size(), 8u);
  // A rewired operand that still comes earlier keeps the schedule valid...
  ASSERT_TRUE(c->GetInstructionWithName("g1")->ReplaceOperandWith(
                   0, c->GetInstructionWithName("p")).ok());
  EXPECT_EQ(c->MakeSequentialOrder(), schedule);
  // ...one that comes later does not (%r runs before %g3 in the schedule).
  ASSERT_TRUE(c->GetInstructionWithName("r")->ReplaceOperandWith(
                   0, c->GetInstructionWithName("g3")).ok());
  EXPECT_EQ(c->schedule(), schedule);
  EXPECT_EQ(c->MakeSequentialOrder(), c->MakeInstructionPostOrder());
  // Adding an instruction drops the schedule.
  HloBuilder b(c);
  ASSERT_TRUE(b.Negate(c->GetInstructionWithName("p")).ok());
  EXPECT_TRUE(c->schedule().empty());
}

// An optimizer step: the new w (output 0) reads w in place, and so does the second output.
// Both allocate as much, so the order is the post order: %e runs after the new w is written
// and a donated w could not hold it. With w donated, %e (w's other reader) runs first.
constexpr char kStepReadingW[] = R"(ENTRY %main {
  %w = f32[1024]{0} parameter(0)
  %g = f32[1024]{0} parameter(1)
  %nw = f32[1024]{0} subtract(%w, %g)
  %e = f32[1024]{0} exponential(%w)
  ROOT %root = (f32[1024]{0}, f32[1024]{0}) tuple(%nw, %e)
})";

TEST(HloSchedulingTest, DonatedArgumentsOtherReadersRunBeforeItsOutputIsWritten) {
  auto plain = ParseHloModule(WithAdd(kStepReadingW)).value();
  ASSERT_TRUE(HloScheduling().Run(plain.get()).ok());
  EXPECT_THAT(Names(plain->entry_computation()->MakeSequentialOrder()), ElementsAre("w", "g", "nw", "e", "root"));

  auto module = ParseHloModule(WithAdd(kStepReadingW)).value();
  const HloComputation& c = *module->entry_computation();
  const std::vector<OrderingEdge> edges = DonationOrderingEdges(c, {true, false});
  ASSERT_EQ(edges.size(), 1u);
  EXPECT_EQ(edges[0].before->name(), "e");
  EXPECT_EQ(edges[0].after->name(), "nw");
  EXPECT_TRUE(DonationOrderingEdges(c, {false, true}).empty());  // g's only reader writes the output
  ASSERT_TRUE(HloScheduling({true, false}).Run(module.get()).ok());
  EXPECT_THAT(Names(c.MakeSequentialOrder()), ElementsAre("w", "g", "e", "nw", "root"));
  // A second run keeps it.
  EXPECT_FALSE(HloScheduling({true, false}).Run(module.get()).value());
}

TEST(HloSchedulingTest, NoDonationEdgeWhereTheReaderNeedsTheOutput) {
  // %m reads w and the new w: it cannot run before %nw, so w's pairing adds no edges (the
  // output takes other memory).
  auto module = ParseHloModule(WithAdd(R"(ENTRY %main {
  %w = f32[1024]{0} parameter(0)
  %g = f32[1024]{0} parameter(1)
  %nw = f32[1024]{0} subtract(%w, %g)
  %m = f32[1024]{0} multiply(%w, %nw)
  ROOT %root = (f32[1024]{0}, f32[1024]{0}) tuple(%nw, %m)
})"))
                    .value();
  EXPECT_TRUE(DonationOrderingEdges(*module->entry_computation(), {true, false}).empty());
  ASSERT_TRUE(HloScheduling({true, false}).Run(module.get()).ok());
  EXPECT_THAT(Names(module->entry_computation()->MakeSequentialOrder()), ElementsAre("w", "g", "nw", "m", "root"));
}

}  // namespace
}  // namespace jx::hlo::hlo_scheduling_test
