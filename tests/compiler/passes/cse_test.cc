#include "jx/compiler/passes/cse.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "absl/strings/str_cat.h"
#include "pass_test_util.h"

namespace jx::hlo::cse_test {
namespace {

using ::jx::hlo::testing::EntryLines;
using ::jx::hlo::testing::ParseAndRun;
using ::testing::ElementsAre;
using ::absl::StrAppend;
using ::absl::StrCat;

TEST(CseTest, MergesIdenticalInstructionsAndTheirUsers) {
  auto module = ParseAndRun<HloCSE>(R"(HloModule m
ENTRY %main {
  %p = f32[8]{0} parameter(0)
  %e1 = f32[8]{0} exponential(%p)
  %e2 = f32[8]{0} exponential(%p)
  %n1 = f32[8]{0} negate(%e1)
  %n2 = f32[8]{0} negate(%e2)
  ROOT %r = f32[8]{0} add(%n1, %n2)
})",
                                    true);
  EXPECT_THAT(EntryLines(*module), ElementsAre("%p = f32[8]{0} parameter(0)",
                                               "%e1 = f32[8]{0} exponential(%p)",
                                               "%n1 = f32[8]{0} negate(%e1)",
                                               "ROOT %r = f32[8]{0} add(%n1, %n1)"));
}

TEST(CseTest, MergesEqualConstantsOnly) {
  auto module = ParseAndRun<HloCSE>(R"(HloModule m
ENTRY %main {
  %c1 = f32[3]{0} constant({1, 2, 3})
  %c2 = f32[3]{0} constant({1, 2, 3})
  %c3 = f32[3]{0} constant({1, 2, 4})
  %i = s32[3]{0} constant({1, 2, 3})
  %a = f32[3]{0} add(%c1, %c2)
  %b = f32[3]{0} add(%a, %c3)
  %ci = f32[3]{0} convert(%i)
  ROOT %r = f32[3]{0} add(%b, %ci)
})",
                                    true);
  EXPECT_THAT(EntryLines(*module),
              ElementsAre("%c1 = f32[3]{0} constant({1, 2, 3})", "%a = f32[3]{0} add(%c1, %c1)",
                          "%c3 = f32[3]{0} constant({1, 2, 4})", "%b = f32[3]{0} add(%a, %c3)",
                          "%i = s32[3]{0} constant({1, 2, 3})", "%ci = f32[3]{0} convert(%i)",
                          "ROOT %r = f32[3]{0} add(%b, %ci)"));
}

TEST(CseTest, AttributesAndOperandOrderMatter) {
  auto module = ParseAndRun<HloCSE>(R"(HloModule m
ENTRY %main {
  %p = f32[2,3]{1,0} parameter(0)
  %q = f32[2,3]{1,0} parameter(1)
  %s1 = f32[2,3]{1,0} subtract(%p, %q)
  %s2 = f32[2,3]{1,0} subtract(%q, %p)
  %c1 = pred[2,3]{1,0} compare(%p, %q), direction=LT
  %c2 = pred[2,3]{1,0} compare(%p, %q), direction=GT
  %sel = f32[2,3]{1,0} select(%c1, %s1, %s2)
  %sel2 = f32[2,3]{1,0} select(%c2, %s1, %s2)
  ROOT %t = (f32[2,3]{1,0}, f32[2,3]{1,0}) tuple(%sel, %sel2)
})",
                                    false);
  EXPECT_EQ(module->entry_computation()->instruction_count(), 9);
}

TEST(CseTest, DotsOfDifferentOperandPrecisionStayApart) {
  auto module = ParseAndRun<HloCSE>(R"(HloModule m
ENTRY %main {
  %p = f32[2,3]{1,0} parameter(0)
  %q = f32[3,4]{1,0} parameter(1)
  %d1 = f32[2,4]{1,0} dot(%p, %q), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  %d2 = f32[2,4]{1,0} dot(%p, %q), lhs_contracting_dims={1}, rhs_contracting_dims={0}, operand_precision={highest,highest}
  %d3 = f32[2,4]{1,0} dot(%p, %q), lhs_contracting_dims={1}, rhs_contracting_dims={0}, operand_precision={highest,highest}
  ROOT %t = (f32[2,4]{1,0}, f32[2,4]{1,0}, f32[2,4]{1,0}) tuple(%d1, %d2, %d3)
})",
                                    true);
  EXPECT_THAT(EntryLines(*module),
              ElementsAre("%p = f32[2,3]{1,0} parameter(0)", "%q = f32[3,4]{1,0} parameter(1)",
                          "%d1 = f32[2,4]{1,0} dot(%p, %q), lhs_contracting_dims={1}, "
                          "rhs_contracting_dims={0}",
                          "%d2 = f32[2,4]{1,0} dot(%p, %q), lhs_contracting_dims={1}, "
                          "rhs_contracting_dims={0}, operand_precision={highest,highest}",
                          "ROOT %t = (f32[2,4]{1,0}, f32[2,4]{1,0}, f32[2,4]{1,0}) "
                          "tuple(%d1, %d2, %d2)"));
}

TEST(CseTest, NeverMergesSideEffectsOrRandomBits) {
  auto module = ParseAndRun<HloCSE>(R"(HloModule m
ENTRY %main {
  %p = f32[8]{0} parameter(0)
  %s = u64[2]{0} parameter(1)
  %log1 = f32[8]{0} custom-call(%p), custom_call_target="print", custom_call_has_side_effect=true
  %log2 = f32[8]{0} custom-call(%p), custom_call_target="print", custom_call_has_side_effect=true
  %pure1 = f32[8]{0} custom-call(%p), custom_call_target="pure"
  %pure2 = f32[8]{0} custom-call(%p), custom_call_target="pure"
  %r1 = (u64[2]{0}, u32[8]{0}) rng-bit-generator(%s), algorithm=rng_three_fry
  %r2 = (u64[2]{0}, u32[8]{0}) rng-bit-generator(%s), algorithm=rng_three_fry
  ROOT %t = (f32[8]{0}, f32[8]{0}, f32[8]{0}, f32[8]{0}, (u64[2]{0}, u32[8]{0}), (u64[2]{0}, u32[8]{0})) tuple(%log1, %log2, %pure1, %pure2, %r1, %r2)
})",
                                    true);
  const HloInstruction* root = module->entry_computation()->root_instruction();
  ASSERT_EQ(root->operand_count(), 6);
  EXPECT_NE(root->operand(0), root->operand(1));  // side-effecting: kept apart
  EXPECT_EQ(root->operand(2), root->operand(3));  // pure custom-calls merge
  EXPECT_NE(root->operand(4), root->operand(5));  // random bits: kept apart
  EXPECT_EQ(module->entry_computation()->instruction_count(), 8);
}

TEST(CseTest, ReducesMergeOnlyWithTheSameReducerAndCalleesAreCleanedToo) {
  auto module = ParseAndRun<HloCSE>(R"(HloModule m
%add (x: f32[], y: f32[]) -> f32[] {
  %x = f32[] parameter(0)
  %y = f32[] parameter(1)
  %dup1 = f32[] add(%x, %y)
  %dup2 = f32[] add(%x, %y)
  ROOT %sum = f32[] multiply(%dup1, %dup2)
}
%add2 (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %sum2 = f32[] add(%a, %b)
}
ENTRY %main {
  %p = f32[8]{0} parameter(0)
  %z1 = f32[] constant(0)
  %z2 = f32[] constant(0)
  %r1 = f32[] reduce(%p, %z1), dimensions={0}, to_apply=%add
  %r2 = f32[] reduce(%p, %z2), dimensions={0}, to_apply=%add
  %r3 = f32[] reduce(%p, %z1), dimensions={0}, to_apply=%add2
  ROOT %t = (f32[], f32[], f32[]) tuple(%r1, %r2, %r3)
})",
                                    true);
  EXPECT_THAT(EntryLines(*module),
              ElementsAre("%p = f32[8]{0} parameter(0)", "%z1 = f32[] constant(0)",
                          "%r1 = f32[] reduce(%p, %z1), dimensions={0}, to_apply=%add",
                          "%r3 = f32[] reduce(%p, %z1), dimensions={0}, to_apply=%add2",
                          "ROOT %t = (f32[], f32[], f32[]) tuple(%r1, %r1, %r3)"));
  EXPECT_EQ(module->GetComputationWithName("add")->instruction_count(), 4);
}

// Device lists are compared as data (not printed): equal lists merge, lists that differ in
// one pair or one group do not.
TEST(CseTest, CollectivesMergeOnlyWithTheSameDeviceLists) {
  auto module = ParseAndRun<HloCSE>(R"(HloModule m
%sum (x: f32[], y: f32[]) -> f32[] {
  %x = f32[] parameter(0)
  %y = f32[] parameter(1)
  ROOT %s = f32[] add(%x, %y)
}
ENTRY %main {
  %p = f32[4]{0} parameter(0)
  %cp1 = f32[4]{0} collective-permute(%p), source_target_pairs={{0,1},{1,0}}
  %cp2 = f32[4]{0} collective-permute(%p), source_target_pairs={{0,1},{1,0}}
  %cp3 = f32[4]{0} collective-permute(%p), source_target_pairs={{1,0},{0,1}}
  %ar1 = f32[4]{0} all-reduce(%p), replica_groups={{0,1},{2,3}}, to_apply=%sum
  %ar2 = f32[4]{0} all-reduce(%p), replica_groups={{0,1},{2,3}}, to_apply=%sum
  %ar3 = f32[4]{0} all-reduce(%p), replica_groups={{0,2},{1,3}}, to_apply=%sum
  ROOT %t = (f32[4]{0}, f32[4]{0}, f32[4]{0}, f32[4]{0}, f32[4]{0}, f32[4]{0}) tuple(%cp1, %cp2, %cp3, %ar1, %ar2, %ar3)
})",
                                    true);
  EXPECT_THAT(EntryLines(*module).back(),
              ::testing::HasSubstr("tuple(%cp1, %cp1, %cp3, %ar1, %ar1, %ar3)"));
}

// n distinct readers of one f32[64] value, the slices %s0 ... %s<n-1> of [k, k+1), their
// names as tuple operands, and the type of a tuple of n f32[1].
std::string Slices(const std::string& of, int n) {
  std::string text;
  for (int k = 0; k < n; ++k) {
    text += StrCat("  %s", k, " = f32[1]{0} slice(%", of, "), slice={[", k, ":", k + 1, "]}\n");
  }
  return text;
}
std::string SliceNames(int n) {
  std::string names;
  for (int k = 0; k < n; ++k) names += StrCat(", %s", k);
  return names;
}
std::string TupleType(int n) {
  std::string type = "(";
  for (int k = 0; k < n; ++k) type += k == 0 ? "f32[1]{0}" : ", f32[1]{0}";
  return type + ")";
}

// Duplicates are found among the readers of their least-read operand, or by hash when every
// operand is widely read (here %p: 40 slices and the multiplies).
TEST(CseTest, MergesDuplicatesWhoseOperandsHaveManyReaders) {
  const std::string text = StrCat(R"(HloModule m
ENTRY %main {
  %p = f32[64]{0} parameter(0)
  %q = f32[64]{0} parameter(1)
)", Slices("p", 40), R"(  %d = f32[1]{0} slice(%p), slice={[3:4]}
  %m1 = f32[64]{0} multiply(%p, %q)
  %m2 = f32[64]{0} multiply(%p, %q)
  %m3 = f32[64]{0} multiply(%q, %p)
  %n1 = f32[1]{0} slice(%m2), slice={[0:1]}
  %n3 = f32[1]{0} slice(%m3), slice={[0:1]}
  ROOT %t = )", TupleType(43), " tuple(%n1, %n3, %d", SliceNames(40), R"()
})");
  auto module = ParseAndRun<HloCSE>(text, true);
  // %d comes first in post order, so %s3 merges into it.
  EXPECT_THAT(EntryLines(*module).back(),
              ::testing::HasSubstr(StrCat("tuple(%n1, %n3, %d, %s0, %s1, %s2, %d, %s4, %s5,")));
  EXPECT_EQ(module->entry_computation()->GetInstructionWithName("s3"), nullptr);
  EXPECT_EQ(module->entry_computation()->GetInstructionWithName("m2"), nullptr);
  EXPECT_NE(module->entry_computation()->GetInstructionWithName("m3"), nullptr);
}

// %a1 reads %o while %o has one reader; merging %o2 into %o then gives %o 41 readers, so %a2
// (a duplicate of %a1 once it reads %o) is looked up by hash, where %a1 must be found too.
TEST(CseTest, FindsADuplicateOfAnInstructionWhoseOperandBecameWidelyRead) {
  const std::string text = StrCat(R"(HloModule m
ENTRY %main {
  %p = f32[64]{0} parameter(0)
  %o = f32[64]{0} exponential(%p)
  %a1 = f32[64]{0} sine(%o)
  %o2 = f32[64]{0} exponential(%p)
)", Slices("o2", 40), R"(  %a2 = f32[64]{0} sine(%o2)
  %b1 = f32[1]{0} slice(%a1), slice={[0:1]}
  %b2 = f32[1]{0} slice(%a2), slice={[1:2]}
  ROOT %t = )", TupleType(42), " tuple(%b1", SliceNames(40), R"(, %b2)
})");
  auto module = ParseAndRun<HloCSE>(text, true);
  const HloComputation& entry = *module->entry_computation();
  EXPECT_EQ(entry.GetInstructionWithName("o2"), nullptr);
  EXPECT_EQ(entry.GetInstructionWithName("a2"), nullptr);
  EXPECT_EQ(entry.GetInstructionWithName("b2")->operand(0), entry.GetInstructionWithName("a1"));
}

TEST(CseTest, DifferentShapesDoNotMerge) {
  ParseAndRun<HloCSE>(R"(HloModule m
ENTRY %main {
  %c = f32[] constant(1)
  %b1 = f32[4]{0} broadcast(%c), dimensions={}
  %b2 = f32[2,2]{1,0} broadcast(%c), dimensions={}
  %r = f32[4]{0} reshape(%b2)
  ROOT %a = f32[4]{0} add(%b1, %r)
})",
                      false);
}

// A computation is searched for a duplicate pair in storage order before its post order is
// built: a long chain without duplicates is left alone, and the one pair of a chain (listed
// far apart, the later one first in storage) is merged.
TEST(CseTest, FindsTheOnePairOfALongChain) {
  auto chain = [](bool with_pair) {
    std::string text = "HloModule m\nENTRY %main {\n  %p = f32[8]{0} parameter(0)\n";
    std::string last = "p";
    for (int i = 0; i < 100; ++i) {
      const std::string s = StrCat("s", i), m = StrCat("m", i);
      StrAppend(&text, "  %", s, " = f32[8]{0} sine(%", last, ")\n  %", m, " = f32[8]{0} multiply(%", s,
                ", %p)\n");
      if (i == 0 && with_pair) StrAppend(&text, "  %late = f32[8]{0} exponential(%s0)\n");
      last = m;
    }
    if (with_pair) {
      StrAppend(&text, "  %early = f32[8]{0} exponential(%s0)\n  %sum = f32[8]{0} add(%early, %", last,
                ")\n  ROOT %r = f32[8]{0} add(%sum, %late)\n}\n");
    } else {
      StrAppend(&text, "  ROOT %r = f32[8]{0} negate(%", last, ")\n}\n");
    }
    return text;
  };
  auto module = ParseAndRun<HloCSE>(chain(/*with_pair=*/true), true);
  const HloComputation& entry = *module->entry_computation();
  // Post order reaches %early first (the root's first operand): %late merges into it.
  EXPECT_EQ(entry.GetInstructionWithName("late"), nullptr);
  EXPECT_EQ(entry.root_instruction()->operand(1), entry.GetInstructionWithName("early"));
  ParseAndRun<HloCSE>(chain(/*with_pair=*/false), false);
}

}  // namespace
}  // namespace jx::hlo::cse_test
