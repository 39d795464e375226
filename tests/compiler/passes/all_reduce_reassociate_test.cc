// AllReduceReassociate: op(all-reduce(a), all-reduce(b)) -> all-reduce(op(a, b)) when both
// reduce with op over the same groups and feed nothing else; chains fold to one all-reduce.
#include "jx/compiler/passes/all_reduce_reassociate.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "pass_test_util.h"

namespace jx::hlo {
namespace {

using ::jx::hlo::testing::EntryLines;
using ::jx::hlo::testing::ParseAndRun;
using ::testing::ElementsAre;

constexpr std::string_view kReducers = R"(HloModule m
%sum (x: s32[], y: s32[]) -> s32[] {
  %x = s32[] parameter(0)
  %y = s32[] parameter(1)
  ROOT %xy = s32[] add(s32[] %x, s32[] %y)
}
%max (mx: s32[], my: s32[]) -> s32[] {
  %mx = s32[] parameter(0)
  %my = s32[] parameter(1)
  ROOT %m = s32[] maximum(s32[] %mx, s32[] %my)
}
)";

std::string Module(std::string_view entry) { return std::string(kReducers) + std::string(entry); }

int64_t CountAllReduces(const HloModule& module) {
  int64_t n = 0;
  for (const HloInstruction* instr : module.entry_computation()->instructions()) {
    n += instr->opcode() == HloOpcode::kAllReduce;
  }
  return n;
}

TEST(AllReduceReassociateTest, AddOfTwoSumsIsTheSumOfTheAdd) {
  auto module = ParseAndRun<AllReduceReassociate>(Module(R"(ENTRY %main {
  %a = s32[4]{0} parameter(0)
  %b = s32[4]{0} parameter(1)
  %ra = s32[4]{0} all-reduce(%a), channel_id=1, replica_groups={{0}}, use_global_device_ids=true, to_apply=%sum
  %rb = s32[4]{0} all-reduce(%b), channel_id=2, replica_groups={{0}}, use_global_device_ids=true, to_apply=%sum
  ROOT %r = s32[4]{0} add(%ra, %rb)
})"),
                                                  true);
  EXPECT_THAT(EntryLines(*module),
              ElementsAre("%a = s32[4]{0} parameter(0)", "%b = s32[4]{0} parameter(1)",
                          "%add.12 = s32[4]{0} add(%a, %b)",
                          "ROOT %ra = s32[4]{0} all-reduce(%add.12), channel_id=1, replica_groups={{0}}, "
                          "use_global_device_ids=true, to_apply=%sum"));
}

// add(add(ar(a), ar(b)), ar(c)) and the sum of microbatches an unrolled loop writes.
TEST(AllReduceReassociateTest, AChainOfSumsFoldsToOneAllReduce) {
  auto module = ParseAndRun<AllReduceReassociate>(Module(R"(ENTRY %main {
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

// Each psum lowers with its own reducer computation: equal reducers, not the same one, suffice.
TEST(AllReduceReassociateTest, DistinctButEqualReducersReassociate) {
  auto module = ParseAndRun<AllReduceReassociate>(Module(R"(%sum2 (x2: s32[], y2: s32[]) -> s32[] {
  %x2 = s32[] parameter(0)
  %y2 = s32[] parameter(1)
  ROOT %xy2 = s32[] add(s32[] %y2, s32[] %x2)
}
ENTRY %main {
  %a = s32[4]{0} parameter(0)
  %b = s32[4]{0} parameter(1)
  %ra = s32[4]{0} all-reduce(%a), channel_id=1, replica_groups={{0}}, use_global_device_ids=true, to_apply=%sum
  %rb = s32[4]{0} all-reduce(%b), channel_id=2, replica_groups={{0}}, use_global_device_ids=true, to_apply=%sum2
  ROOT %r = s32[4]{0} add(%ra, %rb)
})"),
                                                  true);
  EXPECT_EQ(CountAllReduces(*module), 1);
}

TEST(AllReduceReassociateTest, MaximumOfMaxReductionsReassociates) {
  auto module = ParseAndRun<AllReduceReassociate>(Module(R"(ENTRY %main {
  %a = s32[4]{0} parameter(0)
  %b = s32[4]{0} parameter(1)
  %ra = s32[4]{0} all-reduce(%a), channel_id=1, replica_groups={{0}}, use_global_device_ids=true, to_apply=%max
  %rb = s32[4]{0} all-reduce(%b), channel_id=2, replica_groups={{0}}, use_global_device_ids=true, to_apply=%max
  ROOT %r = s32[4]{0} maximum(%ra, %rb)
})"),
                                                  true);
  EXPECT_EQ(CountAllReduces(*module), 1);
}

TEST(AllReduceReassociateTest, LeavesMismatchedOrSharedAllReducesAlone) {
  // The op differs from the reduction (max of sums is not the sum of a max).
  ParseAndRun<AllReduceReassociate>(Module(R"(ENTRY %main {
  %a = s32[4]{0} parameter(0)
  %b = s32[4]{0} parameter(1)
  %ra = s32[4]{0} all-reduce(%a), channel_id=1, replica_groups={{0}}, use_global_device_ids=true, to_apply=%sum
  %rb = s32[4]{0} all-reduce(%b), channel_id=2, replica_groups={{0}}, use_global_device_ids=true, to_apply=%sum
  ROOT %r = s32[4]{0} maximum(%ra, %rb)
})"),
                                    false);
  // Different reductions.
  ParseAndRun<AllReduceReassociate>(Module(R"(ENTRY %main {
  %a = s32[4]{0} parameter(0)
  %b = s32[4]{0} parameter(1)
  %ra = s32[4]{0} all-reduce(%a), channel_id=1, replica_groups={{0}}, use_global_device_ids=true, to_apply=%sum
  %rb = s32[4]{0} all-reduce(%b), channel_id=2, replica_groups={{0}}, use_global_device_ids=true, to_apply=%max
  ROOT %r = s32[4]{0} add(%ra, %rb)
})"),
                                    false);
  // Different groups: the sums run over different partitions.
  ParseAndRun<AllReduceReassociate>(Module(R"(ENTRY %main {
  %a = s32[4]{0} parameter(0)
  %b = s32[4]{0} parameter(1)
  %ra = s32[4]{0} all-reduce(%a), channel_id=1, replica_groups={{0,1},{2,3}}, use_global_device_ids=true, to_apply=%sum
  %rb = s32[4]{0} all-reduce(%b), channel_id=2, replica_groups={{0,2},{1,3}}, use_global_device_ids=true, to_apply=%sum
  ROOT %r = s32[4]{0} add(%ra, %rb)
})"),
                                    false);
  // A reduced value read elsewhere must stay.
  ParseAndRun<AllReduceReassociate>(Module(R"(ENTRY %main {
  %a = s32[4]{0} parameter(0)
  %b = s32[4]{0} parameter(1)
  %ra = s32[4]{0} all-reduce(%a), channel_id=1, replica_groups={{0}}, use_global_device_ids=true, to_apply=%sum
  %rb = s32[4]{0} all-reduce(%b), channel_id=2, replica_groups={{0}}, use_global_device_ids=true, to_apply=%sum
  %r = s32[4]{0} add(%ra, %rb)
  ROOT %t = (s32[4]{0}, s32[4]{0}) tuple(%r, %ra)
})"),
                                    false);
}

}  // namespace
}  // namespace jx::hlo
