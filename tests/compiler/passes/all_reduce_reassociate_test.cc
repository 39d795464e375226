// AllReduceReassociate: op(all-reduce(a), all-reduce(b)) -> all-reduce(op(a, b)) when both
// reduce with op over the same groups and feed nothing else; chains fold to one all-reduce.
#include "jx/compiler/passes/all_reduce_reassociate.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "jx/core/str_util.h"
#include "pass_test_util.h"

namespace jx::hlo::all_reduce_reassociate_test {
namespace {

using ::jx::hlo::testing::CountAllReduces;
using ::jx::hlo::testing::EntryLines;
using ::jx::hlo::testing::ParseAndRun;
using ::testing::ElementsAre;

// Two s32 sums, a max and a second sum computation equal to the first.
constexpr std::string_view kReducers = R"(HloModule m
%sum (x: s32[], y: s32[]) -> s32[] {
  %x = s32[] parameter(0)
  %y = s32[] parameter(1)
  ROOT %xy = s32[] add(s32[] %x, s32[] %y)
}
%sum2 (x2: s32[], y2: s32[]) -> s32[] {
  %x2 = s32[] parameter(0)
  %y2 = s32[] parameter(1)
  ROOT %xy2 = s32[] add(s32[] %y2, s32[] %x2)
}
%max (mx: s32[], my: s32[]) -> s32[] {
  %mx = s32[] parameter(0)
  %my = s32[] parameter(1)
  ROOT %m = s32[] maximum(s32[] %mx, s32[] %my)
}
)";

// ROOT = op(all-reduce(a), all-reduce(b)) (or a tuple of it and all-reduce(a) when
// read_a_again), each all-reduce with its reducer and groups.
struct TwoAllReduces {
  std::string op = "add";
  std::string reducer_a = "%sum", reducer_b = "%sum";
  std::string groups_a = "{{0}}", groups_b = "{{0}}";
  bool read_a_again = false;
};

std::string Module(const TwoAllReduces& t) {
  std::string text = StrCat(kReducers, "ENTRY %main {\n  %a = s32[4]{0} parameter(0)\n  %b = s32[4]{0} parameter(1)\n",
                            "  %ra = s32[4]{0} all-reduce(%a), channel_id=1, replica_groups=", t.groups_a,
                            ", use_global_device_ids=true, to_apply=", t.reducer_a, "\n",
                            "  %rb = s32[4]{0} all-reduce(%b), channel_id=2, replica_groups=", t.groups_b,
                            ", use_global_device_ids=true, to_apply=", t.reducer_b, "\n");
  if (t.read_a_again) {
    StrAppend(&text, "  %r = s32[4]{0} ", t.op, "(%ra, %rb)\n  ROOT %t = (s32[4]{0}, s32[4]{0}) tuple(%r, %ra)\n}\n");
  } else {
    StrAppend(&text, "  ROOT %r = s32[4]{0} ", t.op, "(%ra, %rb)\n}\n");
  }
  return text;
}

TEST(AllReduceReassociateTest, AddOfTwoSumsIsTheSumOfTheAdd) {
  auto module = ParseAndRun<AllReduceReassociate>(Module({}), true);
  EXPECT_THAT(EntryLines(*module),
              ElementsAre("%a = s32[4]{0} parameter(0)", "%b = s32[4]{0} parameter(1)",
                          "%add.15 = s32[4]{0} add(%a, %b)",
                          "ROOT %ra = s32[4]{0} all-reduce(%add.15), channel_id=1, replica_groups={{0}}, "
                          "use_global_device_ids=true, to_apply=%sum"));
}

// add(add(ar(a), ar(b)), ar(c)): the sum of microbatches an unrolled loop writes.
TEST(AllReduceReassociateTest, AChainOfSumsFoldsToOneAllReduce) {
  auto module = ParseAndRun<AllReduceReassociate>(StrCat(kReducers, R"(ENTRY %main {
  %a = s32[4]{0} parameter(0)
  %b = s32[4]{0} parameter(1)
  %c = s32[4]{0} parameter(2)
  %ra = s32[4]{0} all-reduce(%a), channel_id=1, replica_groups={{0}}, use_global_device_ids=true, to_apply=%sum
  %rb = s32[4]{0} all-reduce(%b), channel_id=2, replica_groups={{0}}, use_global_device_ids=true, to_apply=%sum
  %rc = s32[4]{0} all-reduce(%c), channel_id=3, replica_groups={{0}}, use_global_device_ids=true, to_apply=%sum
  %ab = s32[4]{0} add(%ra, %rb)
  ROOT %abc = s32[4]{0} add(%ab, %rc)
})"),
                                                  true);
  EXPECT_EQ(CountAllReduces(*module), 1);
  const HloInstruction* root = module->entry_computation()->root_instruction();
  EXPECT_EQ(root->opcode(), HloOpcode::kAllReduce);
  EXPECT_EQ(root->operand(0)->opcode(), HloOpcode::kAdd);
}

TEST(AllReduceReassociateTest, EqualReducersAndMaximumReassociate) {
  // Each psum lowers with its own reducer computation: equal reducers, not the same one, suffice.
  EXPECT_EQ(CountAllReduces(*ParseAndRun<AllReduceReassociate>(Module({.reducer_b = "%sum2"}), true)), 1);
  EXPECT_EQ(CountAllReduces(*ParseAndRun<AllReduceReassociate>(
                Module({.op = "maximum", .reducer_a = "%max", .reducer_b = "%max"}), true)),
            1);
}

TEST(AllReduceReassociateTest, LeavesMismatchedOrSharedAllReducesAlone) {
  // The op differs from the reduction (the max of two sums is not the sum of a max).
  ParseAndRun<AllReduceReassociate>(Module({.op = "maximum"}), false);
  // Different reductions.
  ParseAndRun<AllReduceReassociate>(Module({.reducer_b = "%max"}), false);
  // Different groups: the sums run over different partitions.
  ParseAndRun<AllReduceReassociate>(Module({.groups_a = "{{0,1},{2,3}}", .groups_b = "{{0,2},{1,3}}"}), false);
  // A reduced value read elsewhere must stay.
  ParseAndRun<AllReduceReassociate>(Module({.read_a_again = true}), false);
}

}  // namespace
}  // namespace jx::hlo::all_reduce_reassociate_test
