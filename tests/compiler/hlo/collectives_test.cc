// The collective opcodes and their asynchronous start/done pairs: XLA's text round trips,
// shape rules, verifier errors (a done's operand is its start), builder, evaluator; and the
// collectives of several operands.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "jx/compiler/hlo/hlo_builder.h"
#include "jx/compiler/hlo/hlo_evaluator.h"
#include "jx/compiler/hlo/hlo_module.h"
#include "jx/compiler/hlo/hlo_parser.h"
#include "jx/compiler/hlo/hlo_verifier.h"
#include "jx/compiler/hlo/literal.h"
#include "jx/compiler/hlo/opcode.h"
#include "jx/compiler/hlo/str_util.h"

namespace jx::hlo::collectives_test {
namespace {

using ::testing::HasSubstr;

constexpr std::string_view kCollectivesHlo = R"(HloModule spmd

%sum (x: f32[], y: f32[]) -> f32[] {
  %x = f32[] parameter(0)
  %y = f32[] parameter(1)
  ROOT %s = f32[] add(f32[] %x, f32[] %y)
}

ENTRY %main (p: f32[8,4]) -> (f32[8,4], f32[32,4], f32[2,4], f32[8,4], f32[8,4], u32[]) {
  %p = f32[8,4]{1,0} parameter(0)
  %ar = f32[8,4]{1,0} all-reduce(f32[8,4]{1,0} %p), channel_id=1, replica_groups={{0,1},{2,3}}, use_global_device_ids=true, to_apply=%sum
  %ag = f32[32,4]{1,0} all-gather(f32[8,4]{1,0} %p), channel_id=2, replica_groups={{0,1,2,3}}, dimensions={0}, use_global_device_ids=true
  %rs = f32[2,4]{1,0} reduce-scatter(f32[8,4]{1,0} %p), channel_id=3, replica_groups={{0,1,2,3}}, dimensions={0}, use_global_device_ids=true, to_apply=%sum
  %a2a = f32[8,4]{1,0} all-to-all(f32[8,4]{1,0} %p), channel_id=4, replica_groups={{0,2},{1,3}}, dimensions={1}
  %cp = f32[8,4]{1,0} collective-permute(f32[8,4]{1,0} %p), channel_id=5, source_target_pairs={{0,1},{1,2},{2,3},{3,0}}
  %pid = u32[] partition-id()
  ROOT %t = (f32[8,4]{1,0}, f32[32,4]{1,0}, f32[2,4]{1,0}, f32[8,4]{1,0}, f32[8,4]{1,0}, u32[]) tuple(f32[8,4]{1,0} %ar, f32[32,4]{1,0} %ag, f32[2,4]{1,0} %rs, f32[8,4]{1,0} %a2a, f32[8,4]{1,0} %cp, u32[] %pid)
}
)";

absl::Status ParseAndVerify(std::string_view text) {
  absl::StatusOr<std::unique_ptr<HloModule>> module = ParseHloModule(text);
  if (!module.ok()) return module.status();
  return VerifyHloModule(**module);
}

std::string Entry(std::string_view instr) {
  return std::string(R"(HloModule m
%sum (x: f32[], y: f32[]) -> f32[] {
  %x = f32[] parameter(0)
  %y = f32[] parameter(1)
  ROOT %s = f32[] add(f32[] %x, f32[] %y)
}
ENTRY %main {
  %p = f32[8,4]{1,0} parameter(0)
  )") + std::string(instr) + "\n}\n";
}

TEST(HloCollectivesTest, PrintParseRoundTripAsXlaWritesThem) {
  absl::StatusOr<std::unique_ptr<HloModule>> module = ParseHloModule(kCollectivesHlo);
  ASSERT_TRUE(module.ok()) << module.status();
  ASSERT_TRUE(VerifyHloModule(**module).ok()) << VerifyHloModule(**module);
  const std::string printed = (*module)->ToString();
  for (std::string_view line :
       {"all-reduce(f32[8,4]{1,0} %p), channel_id=1, replica_groups={{0,1},{2,3}}, "
        "use_global_device_ids=true, to_apply=%sum",
        "all-gather(f32[8,4]{1,0} %p), channel_id=2, replica_groups={{0,1,2,3}}, dimensions={0}, "
        "use_global_device_ids=true",
        "reduce-scatter(f32[8,4]{1,0} %p), channel_id=3, replica_groups={{0,1,2,3}}, "
        "dimensions={0}, use_global_device_ids=true, to_apply=%sum",
        "all-to-all(f32[8,4]{1,0} %p), channel_id=4, replica_groups={{0,2},{1,3}}, dimensions={1}",
        "collective-permute(f32[8,4]{1,0} %p), channel_id=5, "
        "source_target_pairs={{0,1},{1,2},{2,3},{3,0}}",
        "%pid = u32[] partition-id()"}) {
    EXPECT_THAT(printed, HasSubstr(line));
  }
  absl::StatusOr<std::unique_ptr<HloModule>> reparsed = ParseHloModule(printed);
  ASSERT_TRUE(reparsed.ok()) << reparsed.status();
  EXPECT_EQ((*reparsed)->ToString(), printed);
}

TEST(HloCollectivesTest, ParsesIotaReplicaGroups) {
  absl::StatusOr<ReplicaGroups> g = ParseReplicaGroups("[2,4]<=[8]");
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ(*g, (ReplicaGroups{{0, 1, 2, 3}, {4, 5, 6, 7}}));
  g = ParseReplicaGroups("[4,2]<=[2,4]T(1,0)");
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ(*g, (ReplicaGroups{{0, 4}, {1, 5}, {2, 6}, {3, 7}}));
  g = ParseReplicaGroups("{}");
  ASSERT_TRUE(g.ok());
  EXPECT_TRUE(g->empty());
  EXPECT_FALSE(ParseReplicaGroups("[3,3]<=[8]").ok());
  EXPECT_FALSE(ParseReplicaGroups("{{0,1},{2}").ok());
  EXPECT_FALSE(ParseSourceTargetPairs("{{0,1,2}}").ok());
}

// A pod's groups (thousands of ids) print in XLA's iota form; short lists, and lists that are
// no transposed iota, print every id.
TEST(HloCollectivesTest, PrintsLongMeshGroupsInIotaForm) {
  // Mesh (9, 64, 16) of 9216 partitions, row-major: groups over each axis and over two.
  auto groups_over = [](std::vector<int64_t> dims, std::vector<int> axes) {
    std::map<std::vector<int64_t>, std::vector<int64_t>> by_rest;
    int64_t n = 1;
    for (int64_t d : dims) n *= d;
    for (int64_t id = 0; id < n; ++id) {
      std::vector<int64_t> index(dims.size());
      for (size_t i = dims.size(), rest = static_cast<size_t>(id); i-- > 0;) {
        index[i] = static_cast<int64_t>(rest % dims[i]);
        rest /= dims[i];
      }
      std::vector<int64_t> key;
      for (size_t i = 0; i < dims.size(); ++i) {
        if (std::find(axes.begin(), axes.end(), static_cast<int>(i)) == axes.end()) key.push_back(index[i]);
      }
      by_rest[key].push_back(id);
    }
    std::vector<std::vector<int64_t>> out;
    for (auto& [key, g] : by_rest) out.push_back(g);
    return out;
  };
  const std::vector<int64_t> mesh = {9, 64, 16};
  EXPECT_EQ(ReplicaGroupsToString(groups_over(mesh, {2})), "[576,16]<=[9216]");
  EXPECT_EQ(ReplicaGroupsToString(groups_over(mesh, {1})), "[144,64]<=[9,64,16]T(0,2,1)");
  EXPECT_EQ(ReplicaGroupsToString(groups_over(mesh, {0})), "[1024,9]<=[9,1024]T(1,0)");
  EXPECT_EQ(ReplicaGroupsToString(groups_over(mesh, {0, 2})), "[64,144]<=[9,64,16]T(1,0,2)");
  for (const std::vector<int>& axes : std::vector<std::vector<int>>{{0}, {1}, {2}, {0, 1}, {0, 2}, {1, 2}, {0, 1, 2}}) {
    const ReplicaGroups g = groups_over(mesh, axes);
    const std::string text = ReplicaGroupsToString(g);
    EXPECT_LT(text.size(), 64u) << text;
    absl::StatusOr<ReplicaGroups> back = ParseReplicaGroups(text);
    ASSERT_TRUE(back.ok()) << text << ": " << back.status();
    EXPECT_EQ(*back, g) << text;
  }
  // Short lists stay explicit.
  EXPECT_EQ(ReplicaGroupsToString({{0, 2}, {1, 3}}), "{{0,2},{1,3}}");
  // No transposed iota: every id, and the text reads back.
  std::vector<std::vector<int64_t>> shuffled = groups_over(mesh, {2});
  std::swap(shuffled[3][5], shuffled[3][6]);
  std::vector<std::vector<int64_t>> offset = {{}};
  for (int64_t id = 1; id <= 100; ++id) offset[0].push_back(id);
  for (const ReplicaGroups g : {shuffled, offset}) {
    EXPECT_EQ(g.iota(), nullptr);
    const std::string text = ReplicaGroupsToString(g);
    EXPECT_EQ(text.substr(0, 2), "{{");
    absl::StatusOr<ReplicaGroups> back = ParseReplicaGroups(text);
    ASSERT_TRUE(back.ok()) << back.status();
    EXPECT_EQ(*back, g);
  }
}

TEST(HloCollectivesTest, VerifierChecksShapesAndGroups) {
  EXPECT_TRUE(ParseAndVerify(kCollectivesHlo).ok());
  // An all-gather over {} takes its group size from the result.
  EXPECT_TRUE(ParseAndVerify(Entry("ROOT %ag = f32[16,4]{1,0} all-gather(f32[8,4]{1,0} %p), "
                                    "replica_groups={}, dimensions={0}"))
                  .ok());
  struct Case {
    std::string instr, message;
  };
  for (const Case& c : std::vector<Case>{
           {"ROOT %ag = f32[8,4]{1,0} all-gather(f32[8,4]{1,0} %p), replica_groups={{0,1}}, "
            "dimensions={0}",
            "shape is f32[8,4] but shape inference gives f32[16,4]"},
           {"ROOT %rs = f32[1,4]{1,0} reduce-scatter(f32[8,4]{1,0} %p), "
            "replica_groups={{0,1,2}}, dimensions={0}, to_apply=%sum",
            "does not split into 3 equal blocks"},
           {"ROOT %ar = f32[8,4]{1,0} all-reduce(f32[8,4]{1,0} %p), replica_groups={{0,1},{1,2}}, "
            "to_apply=%sum",
            "partition 1 is in more than one group"},
           {"ROOT %ar = f32[8,4]{1,0} all-reduce(f32[8,4]{1,0} %p), replica_groups={{0,1},{2}}, "
            "to_apply=%sum",
            "every group must have the same size"},
           {"ROOT %cp = f32[8,4]{1,0} collective-permute(f32[8,4]{1,0} %p), "
            "source_target_pairs={{0,1},{2,1}}",
            "partition 1 receives twice"},
           {"ROOT %a2a = f32[8,4]{1,0} all-to-all(f32[8,4]{1,0} %p), replica_groups={{0,1,2}}, "
            "dimensions={1}",
            "does not split into 3 equal blocks"},
           {"ROOT %ag = f32[8,4]{1,0} all-gather(f32[8,4]{1,0} %p), replica_groups={{0,1}}, "
            "dimensions={2}",
            "dimensions={2} out of range"},
       }) {
    absl::Status st = ParseAndVerify(Entry(c.instr));
    EXPECT_FALSE(st.ok()) << c.instr;
    EXPECT_THAT(std::string(st.message()), HasSubstr(c.message)) << c.instr;
  }
}

TEST(HloCollectivesTest, BuilderInfersShapes) {
  HloModule module("m");
  HloBuilder sum_b(&module, "sum");
  HloInstruction* x = sum_b.Parameter(0, Shape(F32, {}), "x").value();
  HloInstruction* y = sum_b.Parameter(1, Shape(F32, {}), "y").value();
  HloComputation* sum = sum_b.Build(sum_b.Add(x, y).value()).value();
  HloBuilder b(&module, "main");
  HloInstruction* p = b.Parameter(0, Shape(F32, {8, 4}), "p").value();
  const HloBuilder::CollectiveOptions groups{{{0, 1}, {2, 3}}, 7};
  EXPECT_EQ(b.AllGather(p, 1, groups).value()->shape(), Shape(F32, {8, 8}));
  EXPECT_EQ(b.ReduceScatter(p, 0, sum, groups).value()->shape(), Shape(F32, {4, 4}));
  HloInstruction* ar = b.AllReduce(p, sum, groups).value();
  EXPECT_EQ(ar->shape(), Shape(F32, {8, 4}));
  EXPECT_EQ(ar->channel_id(), 7);
  EXPECT_TRUE(ar->use_global_device_ids());
  EXPECT_EQ(b.PartitionId().value()->shape(), Shape(U32, {}));
  EXPECT_FALSE(b.ReduceScatter(p, 1, sum, {{{0, 1, 2}}, 1}).ok());
}

TEST(HloCollectivesTest, CollectivesRunOnTheNetwork) {
  for (HloOpcode op : {HloOpcode::kAllReduce, HloOpcode::kAllGather, HloOpcode::kReduceScatter,
                       HloOpcode::kAllToAll, HloOpcode::kCollectivePermute}) {
    EXPECT_EQ(OpcodeUnit(op), ExecutionUnit::kNetwork) << HloOpcodeString(op);
    EXPECT_TRUE(IsCollectiveOpcode(op));
  }
  EXPECT_FALSE(IsCollectiveOpcode(HloOpcode::kPartitionId));
  EXPECT_EQ(ExecutionUnitName(ExecutionUnit::kNetwork), "network");
}

// The asynchronous pairs (all-reduce-start/-done, ...).
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

// Collectives of several operands, as XLA writes them: all-reduce(a, b) gives (A, B), and
// likewise all-gather and reduce-scatter, each operand by its opcode's rule; all-to-all of
// several operands is XLA's tuple form (no dimensions=, one operand per group member, one
// shape); their starts are all-reduce-start -> (A, B) and ((a, b), (A, B)) for the others.

// The entry with a second parameter %q = f32[2] beside %p.
std::string EntryPQ(std::string_view body) {
  return Entry(StrCat("%q = f32[2]{0} parameter(1)\n  ", body));
}

TEST(HloVariadicCollectivesTest, EachOperandGetsItsResultInATuple) {
  const std::string text = EntryPQ(
      "%ar = (f32[8,4]{1,0}, f32[2]{0}) all-reduce(f32[8,4]{1,0} %p, f32[2]{0} %q), channel_id=1, "
      "replica_groups={{0,1}}, use_global_device_ids=true, to_apply=%sum\n"
      "  %ag = (f32[16,4]{1,0}, f32[4]{0}) all-gather(f32[8,4]{1,0} %p, f32[2]{0} %q), channel_id=2, "
      "replica_groups={{0,1}}, dimensions={0}, use_global_device_ids=true\n"
      "  %rs = (f32[4,4]{1,0}, f32[1]{0}) reduce-scatter(f32[8,4]{1,0} %p, f32[2]{0} %q), channel_id=3, "
      "replica_groups={{0,1}}, dimensions={0}, use_global_device_ids=true, to_apply=%sum\n"
      "  %a2a = (f32[2]{0}, f32[2]{0}) all-to-all(f32[2]{0} %q, f32[2]{0} %q), channel_id=4, "
      "replica_groups={{0,1}}\n"
      "  ROOT %t = ((f32[8,4]{1,0}, f32[2]{0}), (f32[16,4]{1,0}, f32[4]{0}), (f32[4,4]{1,0}, f32[1]{0}), "
      "(f32[2]{0}, f32[2]{0})) tuple(%ar, %ag, %rs, %a2a)");
  absl::StatusOr<std::unique_ptr<HloModule>> module = ParseHloModule(text);
  ASSERT_TRUE(module.ok()) << module.status();
  ASSERT_TRUE(VerifyHloModule(**module).ok()) << VerifyHloModule(**module);
  // Printed as XLA prints them, and read back.
  const std::string printed = (*module)->ToString();
  EXPECT_THAT(printed, HasSubstr("all-reduce(f32[8,4]{1,0} %p, f32[2]{0} %q)"));
  absl::StatusOr<std::unique_ptr<HloModule>> reparsed = ParseHloModule(printed);
  ASSERT_TRUE(reparsed.ok()) << reparsed.status();
  EXPECT_EQ((*reparsed)->ToString(), printed);
}

TEST(HloVariadicCollectivesTest, VerifierNamesTheOperandThatDoesNotFit) {
  struct Case {
    std::string body, message;
  };
  for (const Case& c : std::vector<Case>{
           {"ROOT %ar = (f32[8,4]{1,0}, f32[3]{0}) all-reduce(f32[8,4]{1,0} %p, f32[2]{0} %q), "
            "replica_groups={{0,1}}, to_apply=%sum",
            "shape is (f32[8,4], f32[3]) but shape inference gives (f32[8,4], f32[2])"},
           {"%i = s32[2]{0} convert(f32[2]{0} %q)\n  ROOT %ar = (f32[8,4]{1,0}, s32[2]{0}) "
            "all-reduce(f32[8,4]{1,0} %p, s32[2]{0} %i), replica_groups={{0,1}}, to_apply=%sum",
            "operand 1 (of 2): to_apply must be (s32[], s32[]) -> s32[]"},
           {"ROOT %rs = (f32[4,4]{1,0}, f32[1]{0}) reduce-scatter(f32[8,4]{1,0} %p, f32[2]{0} %q), "
            "replica_groups={{0,1,2}}, dimensions={0}, to_apply=%sum",
            "operand 0 (of 2): dimension 0 of f32[8,4] does not split into 3 equal blocks"},
           {"ROOT %ar = f32[8,4]{1,0} all-reduce(), replica_groups={{0,1}}, to_apply=%sum",
            "takes at least one operand"},
           {"ROOT %a2a = (f32[8,4]{1,0}, f32[2]{0}) all-to-all(f32[8,4]{1,0} %p, f32[2]{0} %q), "
            "replica_groups={{0,1}}, dimensions={0}",
            "with dimensions= (its split dimension) takes one operand, got 2"},
           {"ROOT %a2a = (f32[2]{0}, f32[2]{0}) all-to-all(f32[2]{0} %q, f32[2]{0} %q), replica_groups={{0,1,2,3}}",
            "an all-to-all of 2 operands without dimensions= sends operand i to member i of its group, but "
            "replica_groups={{0,1,2,3}} has groups of 4"},
           {"ROOT %a2a = (f32[8,4]{1,0}, f32[2]{0}) all-to-all(f32[8,4]{1,0} %p, f32[2]{0} %q), replica_groups={{0,1}}",
            "the operands of a tuple all-to-all must have one shape: operand 0 is f32[8,4], operand 1 is f32[2]"},
       }) {
    absl::Status st = ParseAndVerify(EntryPQ(c.body));
    EXPECT_FALSE(st.ok()) << c.body;
    EXPECT_THAT(std::string(st.message()), HasSubstr(c.message)) << c.body;
  }
}

TEST(HloVariadicCollectivesTest, AsyncPairsCarryEveryOperandAndResult) {
  EXPECT_TRUE(ParseAndVerify(EntryPQ(
                  "%ars = (f32[8,4]{1,0}, f32[2]{0}) all-reduce-start(f32[8,4]{1,0} %p, f32[2]{0} %q), "
                  "replica_groups={{0,1}}, to_apply=%sum\n"
                  "  %ard = (f32[8,4]{1,0}, f32[2]{0}) all-reduce-done((f32[8,4]{1,0}, f32[2]{0}) %ars)\n"
                  "  %ags = ((f32[8,4]{1,0}, f32[2]{0}), (f32[16,4]{1,0}, f32[4]{0})) "
                  "all-gather-start(f32[8,4]{1,0} %p, f32[2]{0} %q), replica_groups={{0,1}}, dimensions={0}\n"
                  "  %agd = (f32[16,4]{1,0}, f32[4]{0}) all-gather-done(((f32[8,4]{1,0}, f32[2]{0}), "
                  "(f32[16,4]{1,0}, f32[4]{0})) %ags)\n"
                  "  ROOT %t = ((f32[8,4]{1,0}, f32[2]{0}), (f32[16,4]{1,0}, f32[4]{0})) tuple(%ard, %agd)"))
                  .ok());
  // A single operand keeps the one-operand form: ((operand), R) for reduce-scatter-start.
  absl::Status st = ParseAndVerify(EntryPQ(
      "%rss = ((f32[8,4]{1,0}, f32[2]{0}), (f32[8,4]{1,0}, f32[2]{0})) reduce-scatter-start(f32[8,4]{1,0} %p), "
      "replica_groups={{0}}, dimensions={0}, to_apply=%sum\n"
      "  ROOT %rsd = f32[8,4]{1,0} reduce-scatter-done(((f32[8,4]{1,0}, f32[2]{0}), (f32[8,4]{1,0}, f32[2]{0})) %rss)"));
  EXPECT_FALSE(st.ok());
}

TEST(HloVariadicCollectivesTest, EvaluatorGivesEachOperandItsResult) {
  // One partition: each result is its operand, through the sync op and an async pair.
  absl::StatusOr<std::unique_ptr<HloModule>> module = ParseHloModule(EntryPQ(
      "%ar = (f32[8,4]{1,0}, f32[2]{0}) all-reduce(f32[8,4]{1,0} %p, f32[2]{0} %q), replica_groups={{0}}, "
      "to_apply=%sum\n"
      "  %a = f32[8,4]{1,0} get-tuple-element(%ar), index=0\n"
      "  %b = f32[2]{0} get-tuple-element(%ar), index=1\n"
      "  %rss = ((f32[8,4]{1,0}, f32[2]{0}), (f32[8,4]{1,0}, f32[2]{0})) reduce-scatter-start(f32[8,4]{1,0} %a, "
      "f32[2]{0} %b), replica_groups={{0}}, dimensions={0}, to_apply=%sum\n"
      "  ROOT %rsd = (f32[8,4]{1,0}, f32[2]{0}) reduce-scatter-done(((f32[8,4]{1,0}, f32[2]{0}), "
      "(f32[8,4]{1,0}, f32[2]{0})) %rss)"));
  ASSERT_TRUE(module.ok()) << module.status();
  ASSERT_TRUE(VerifyHloModule(**module).ok()) << VerifyHloModule(**module);
  Literal x(Shape(F32, {8, 4})), y(Shape(F32, {2}));
  for (int i = 0; i < 32; ++i) x.SetFromDouble(i, i * 0.5);
  y.SetFromDouble(0, -1);
  y.SetFromDouble(1, 7);
  HloEvaluator evaluator;
  absl::StatusOr<Literal> out = evaluator.Evaluate(**module, {&x, &y});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(*out, Literal::CreateTuple({x, y}));
}

}  // namespace
}  // namespace jx::hlo::collectives_test
