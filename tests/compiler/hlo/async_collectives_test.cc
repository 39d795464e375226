// The asynchronous collective pairs (all-reduce-start/-done, ...): XLA's text round trips,
// their shape rules, the verifier's pairing check and the evaluator.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>
#include <string>


#include "jx/compiler/hlo/hlo_evaluator.h"
#include "jx/compiler/hlo/hlo_module.h"
#include "jx/compiler/hlo/hlo_parser.h"
#include "jx/compiler/hlo/hlo_verifier.h"
#include "jx/compiler/hlo/literal.h"
#include "jx/compiler/hlo/opcode.h"

namespace jx::hlo {
namespace {

using ::testing::HasSubstr;

constexpr std::string_view kAsyncHlo = R"(HloModule spmd

%sum (x: f32[], y: f32[]) -> f32[] {
  %x = f32[] parameter(0)
  %y = f32[] parameter(1)
  ROOT %s = f32[] add(f32[] %x, f32[] %y)
}

ENTRY %main (p: f32[8,4]) -> (f32[8,4], f32[32,4], f32[2,4], f32[8,4], f32[8,4]) {
  %p = f32[8,4]{1,0} parameter(0)
  %ars = f32[8,4]{1,0} all-reduce-start(f32[8,4]{1,0} %p), channel_id=1, replica_groups={{0,1},{2,3}}, use_global_device_ids=true, to_apply=%sum
  %ard = f32[8,4]{1,0} all-reduce-done(f32[8,4]{1,0} %ars)
  %ags = (f32[8,4]{1,0}, f32[32,4]{1,0}) all-gather-start(f32[8,4]{1,0} %p), channel_id=2, replica_groups={{0,1,2,3}}, dimensions={0}, use_global_device_ids=true
  %agd = f32[32,4]{1,0} all-gather-done((f32[8,4]{1,0}, f32[32,4]{1,0}) %ags)
  %rss = ((f32[8,4]{1,0}), f32[2,4]{1,0}) reduce-scatter-start(f32[8,4]{1,0} %p), channel_id=3, replica_groups={{0,1,2,3}}, dimensions={0}, use_global_device_ids=true, to_apply=%sum
  %rsd = f32[2,4]{1,0} reduce-scatter-done(((f32[8,4]{1,0}), f32[2,4]{1,0}) %rss)
  %a2as = ((f32[8,4]{1,0}), f32[8,4]{1,0}) all-to-all-start(f32[8,4]{1,0} %p), channel_id=4, replica_groups={{0,2},{1,3}}, dimensions={1}
  %a2ad = f32[8,4]{1,0} all-to-all-done(((f32[8,4]{1,0}), f32[8,4]{1,0}) %a2as)
  %cps = (f32[8,4]{1,0}, f32[8,4]{1,0}) collective-permute-start(f32[8,4]{1,0} %p), channel_id=5, source_target_pairs={{0,1},{1,2},{2,3},{3,0}}
  %cpd = f32[8,4]{1,0} collective-permute-done((f32[8,4]{1,0}, f32[8,4]{1,0}) %cps)
  ROOT %t = (f32[8,4]{1,0}, f32[32,4]{1,0}, f32[2,4]{1,0}, f32[8,4]{1,0}, f32[8,4]{1,0}) tuple(f32[8,4]{1,0} %ard, f32[32,4]{1,0} %agd, f32[2,4]{1,0} %rsd, f32[8,4]{1,0} %a2ad, f32[8,4]{1,0} %cpd)
}
)";

std::string Entry(std::string_view body) {
  return std::string(R"(HloModule m
%sum (x: f32[], y: f32[]) -> f32[] {
  %x = f32[] parameter(0)
  %y = f32[] parameter(1)
  ROOT %s = f32[] add(f32[] %x, f32[] %y)
}
ENTRY %main {
  %p = f32[8,4]{1,0} parameter(0)
  )") + std::string(body) + "\n}\n";
}

absl::Status ParseAndVerify(std::string_view text) {
  absl::StatusOr<std::unique_ptr<HloModule>> module = ParseHloModule(text);
  if (!module.ok()) return module.status();
  return VerifyHloModule(**module);
}

TEST(HloAsyncCollectivesTest, PrintParseRoundTripAsXlaWritesThem) {
  absl::StatusOr<std::unique_ptr<HloModule>> module = ParseHloModule(kAsyncHlo);
  ASSERT_TRUE(module.ok()) << module.status();
  ASSERT_TRUE(VerifyHloModule(**module).ok()) << VerifyHloModule(**module);
  const std::string printed = (*module)->ToString();
  for (std::string_view line :
       {"%ars = f32[8,4]{1,0} all-reduce-start(f32[8,4]{1,0} %p), channel_id=1, "
        "replica_groups={{0,1},{2,3}}, use_global_device_ids=true, to_apply=%sum",
        "%ard = f32[8,4]{1,0} all-reduce-done(f32[8,4]{1,0} %ars)",
        "%ags = (f32[8,4]{1,0}, f32[32,4]{1,0}) all-gather-start(f32[8,4]{1,0} %p)",
        "%agd = f32[32,4]{1,0} all-gather-done((f32[8,4]{1,0}, f32[32,4]{1,0}) %ags)",
        "%rss = ((f32[8,4]{1,0}), f32[2,4]{1,0}) reduce-scatter-start(f32[8,4]{1,0} %p)",
        "%a2ad = f32[8,4]{1,0} all-to-all-done(((f32[8,4]{1,0}), f32[8,4]{1,0}) %a2as)",
        "%cps = (f32[8,4]{1,0}, f32[8,4]{1,0}) collective-permute-start(f32[8,4]{1,0} %p), "
        "channel_id=5, source_target_pairs={{0,1},{1,2},{2,3},{3,0}}"}) {
    EXPECT_THAT(printed, HasSubstr(line));
  }
  absl::StatusOr<std::unique_ptr<HloModule>> reparsed = ParseHloModule(printed);
  ASSERT_TRUE(reparsed.ok()) << reparsed.status();
  EXPECT_EQ((*reparsed)->ToString(), printed);
}

TEST(HloAsyncCollectivesTest, OpcodesPairWithTheirCollective) {
  EXPECT_EQ(SyncCollectiveOpcode(HloOpcode::kAllReduceStart), HloOpcode::kAllReduce);
  EXPECT_EQ(SyncCollectiveOpcode(HloOpcode::kCollectivePermuteDone), HloOpcode::kCollectivePermute);
  EXPECT_EQ(SyncCollectiveOpcode(HloOpcode::kAdd), HloOpcode::kAdd);
  EXPECT_EQ(AsyncStartOpcode(HloOpcode::kReduceScatter), HloOpcode::kReduceScatterStart);
  EXPECT_EQ(AsyncDoneOpcode(HloOpcode::kAllToAll), HloOpcode::kAllToAllDone);
  EXPECT_EQ(AsyncStartOpcode(HloOpcode::kPartitionId), std::nullopt);
  for (HloOpcode op : {HloOpcode::kAllGather, HloOpcode::kAllReduce, HloOpcode::kAllToAll,
                       HloOpcode::kCollectivePermute, HloOpcode::kReduceScatter}) {
    const HloOpcode start = *AsyncStartOpcode(op);
    const HloOpcode done = *AsyncDoneOpcode(op);
    EXPECT_TRUE(IsAsyncCollectiveStart(start)) << HloOpcodeString(start);
    EXPECT_FALSE(IsAsyncCollectiveDone(start)) << HloOpcodeString(start);
    EXPECT_TRUE(IsAsyncCollectiveDone(done)) << HloOpcodeString(done);
    EXPECT_TRUE(IsCollectiveOpcode(start) && IsCollectiveOpcode(done));
    EXPECT_EQ(HloOpcodeString(start), std::string(HloOpcodeString(op)) + "-start");
    EXPECT_EQ(HloOpcodeString(done), std::string(HloOpcodeString(op)) + "-done");
    EXPECT_FALSE(IsAsyncCollectiveStart(op));
  }
}

TEST(HloAsyncCollectivesTest, VerifierChecksShapesAndPairing) {
  struct Case {
    std::string body, message;
  };
  for (const Case& c : std::vector<Case>{
           // A done's operand must be its kind's start.
           {"%ars = f32[8,4]{1,0} all-reduce-start(f32[8,4]{1,0} %p), replica_groups={{0,1}}, "
            "to_apply=%sum\n  ROOT %agd = f32[8,4]{1,0} all-gather-done(f32[8,4]{1,0} %ars)",
            "operand must be a all-gather-start, got all-reduce-start %ars"},
           {"ROOT %ard = f32[8,4]{1,0} all-reduce-done(f32[8,4]{1,0} %p)",
            "operand must be a all-reduce-start, got parameter %p"},
           // The start's pair holds the operand and the collective's result.
           {"%ags = (f32[8,4]{1,0}, f32[8,4]{1,0}) all-gather-start(f32[8,4]{1,0} %p), "
            "replica_groups={{0,1}}, dimensions={0}\n"
            "  ROOT %agd = f32[8,4]{1,0} all-gather-done((f32[8,4]{1,0}, f32[8,4]{1,0}) %ags)",
            "shape inference gives (f32[8,4], f32[16,4])"},
           {"%rss = (f32[8,4]{1,0}, f32[4,4]{1,0}) reduce-scatter-start(f32[8,4]{1,0} %p), "
            "replica_groups={{0,1}}, dimensions={0}, to_apply=%sum\n"
            "  ROOT %rsd = f32[4,4]{1,0} reduce-scatter-done((f32[8,4]{1,0}, f32[4,4]{1,0}) %rss)",
            "shape inference gives ((f32[8,4]), f32[4,4])"},
       }) {
    absl::Status st = ParseAndVerify(Entry(c.body));
    EXPECT_FALSE(st.ok()) << c.body;
    EXPECT_THAT(std::string(st.message()), HasSubstr(c.message)) << c.body;
  }
  // replica_groups={} takes the group size from the declared pair.
  EXPECT_TRUE(ParseAndVerify(Entry("%ags = (f32[8,4]{1,0}, f32[16,4]{1,0}) all-gather-start(f32[8,4]{1,0} %p), "
                                   "replica_groups={}, dimensions={0}\n"
                                   "  ROOT %agd = f32[16,4]{1,0} all-gather-done((f32[8,4]{1,0}, "
                                   "f32[16,4]{1,0}) %ags)"))
                  .ok());
}

TEST(HloAsyncCollectivesTest, EvaluatorRunsStartAndForwardsAtDone) {
  // One partition: every collective is its own value; the pairs give what the sync ops give.
  absl::StatusOr<std::unique_ptr<HloModule>> module = ParseHloModule(Entry(
      "%ars = f32[8,4]{1,0} all-reduce-start(f32[8,4]{1,0} %p), replica_groups={{0}}, to_apply=%sum\n"
      "  %ard = f32[8,4]{1,0} all-reduce-done(f32[8,4]{1,0} %ars)\n"
      "  %cps = (f32[8,4]{1,0}, f32[8,4]{1,0}) collective-permute-start(f32[8,4]{1,0} %ard), "
      "source_target_pairs={{0,0}}\n"
      "  %cpd = f32[8,4]{1,0} collective-permute-done((f32[8,4]{1,0}, f32[8,4]{1,0}) %cps)\n"
      "  %rss = ((f32[8,4]{1,0}), f32[8,4]{1,0}) reduce-scatter-start(f32[8,4]{1,0} %cpd), "
      "replica_groups={{0}}, dimensions={0}, to_apply=%sum\n"
      "  ROOT %rsd = f32[8,4]{1,0} reduce-scatter-done(((f32[8,4]{1,0}), f32[8,4]{1,0}) %rss)"));
  ASSERT_TRUE(module.ok()) << module.status();
  ASSERT_TRUE(VerifyHloModule(**module).ok()) << VerifyHloModule(**module);
  Literal x(Shape(F32, {8, 4}));
  for (int i = 0; i < 32; ++i) x.SetFromDouble(i, i * 0.5);
  HloEvaluator evaluator;
  absl::StatusOr<Literal> y = evaluator.Evaluate(**module, {&x});
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ(*y, x);
}

}  // namespace
}  // namespace jx::hlo
