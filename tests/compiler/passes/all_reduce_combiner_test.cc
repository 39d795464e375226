// AllReduceCombiner: independent all-reduces with the same reduction over the same
// partitions become one all-reduce of several operands (a tuple result read by
// get-tuple-elements); dependent ones, other reductions, other groups and anything past the
// thresholds stay apart, and combining never makes a cycle.
#include "jx/compiler/passes/all_reduce_combiner.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "jx/core/str_util.h"
#include "pass_test_util.h"

namespace jx::hlo::all_reduce_combiner_test {
namespace {

using ::jx::hlo::testing::CountAllReduces;
using ::jx::hlo::testing::EntryLines;
using ::jx::hlo::testing::ParseAndRun;
using ::testing::ElementsAre;

constexpr std::string_view kReducers = R"(HloModule m
%sum (x: f32[], y: f32[]) -> f32[] {
  %x = f32[] parameter(0)
  %y = f32[] parameter(1)
  ROOT %xy = f32[] add(f32[] %x, f32[] %y)
}
%max (mx: f32[], my: f32[]) -> f32[] {
  %mx = f32[] parameter(0)
  %my = f32[] parameter(1)
  ROOT %m = f32[] maximum(f32[] %mx, f32[] %my)
}
)";

std::string AllReduce(std::string_view name, std::string_view shape, std::string_view operand, int channel,
                      std::string_view reducer = "%sum", std::string_view groups = "{{0}}") {
  return StrCat("  %", name, " = ", shape, " all-reduce(%", operand, "), channel_id=", channel,
                ", replica_groups=", groups, ", use_global_device_ids=true, to_apply=", reducer, "\n");
}

TEST(AllReduceCombinerTest, IndependentSumsBecomeOneAllReduceOfSeveralOperands) {
  // psum of a pytree {a: f32[4], b: f32[2,3]}: one all-reduce per leaf, combined.
  const std::string text = StrCat(kReducers, "ENTRY %main {\n  %a = f32[4]{0} parameter(0)\n",
                                  "  %b = f32[2,3]{1,0} parameter(1)\n", AllReduce("ra", "f32[4]{0}", "a", 1),
                                  AllReduce("rb", "f32[2,3]{1,0}", "b", 2),
                                  "  ROOT %t = (f32[4]{0}, f32[2,3]{1,0}) tuple(%ra, %rb)\n}\n");
  auto module = ParseAndRun<AllReduceCombiner>(text, true);
  EXPECT_THAT(EntryLines(*module),
              ElementsAre("%a = f32[4]{0} parameter(0)", "%b = f32[2,3]{1,0} parameter(1)",
                          "%all-reduce.12 = (f32[4]{0}, f32[2,3]{1,0}) all-reduce(%a, %b), channel_id=1, "
                          "replica_groups={{0}}, use_global_device_ids=true, to_apply=%sum",
                          "%get-tuple-element.13 = f32[4]{0} get-tuple-element(%all-reduce.12), index=0",
                          "%get-tuple-element.14 = f32[2,3]{1,0} get-tuple-element(%all-reduce.12), index=1",
                          "ROOT %t = (f32[4]{0}, f32[2,3]{1,0}) tuple(%get-tuple-element.13, %get-tuple-element.14)"));
}

TEST(AllReduceCombinerTest, ADependentAllReduceStaysApart) {
  // rb reduces a value computed from ra: it cannot run in the same collective.
  const std::string text = StrCat(kReducers, "ENTRY %main {\n  %a = f32[4]{0} parameter(0)\n",
                                  AllReduce("ra", "f32[4]{0}", "a", 1), "  %n = f32[4]{0} negate(%ra)\n",
                                  AllReduce("rb", "f32[4]{0}", "n", 2),
                                  "  ROOT %t = (f32[4]{0}, f32[4]{0}) tuple(%ra, %rb)\n}\n");
  ParseAndRun<AllReduceCombiner>(text, false);
}

TEST(AllReduceCombinerTest, OtherReductionsGroupsAndTypesStayApart) {
  for (const auto& [reducer, groups, shape] : {std::tuple<std::string, std::string, std::string>{"%max", "{{0}}", "f32[4]{0}"},
                                               {"%sum", "{{0},{1}}", "f32[4]{0}"}}) {
    const std::string text = StrCat(kReducers, "ENTRY %main {\n  %a = f32[4]{0} parameter(0)\n",
                                    "  %b = f32[4]{0} parameter(1)\n", AllReduce("ra", "f32[4]{0}", "a", 1),
                                    AllReduce("rb", shape, "b", 2, reducer, groups),
                                    "  ROOT %t = (f32[4]{0}, f32[4]{0}) tuple(%ra, %rb)\n}\n");
    ParseAndRun<AllReduceCombiner>(text, false);
  }
}

TEST(AllReduceCombinerTest, ThresholdsSplitTheGroups) {
  std::string text = StrCat(kReducers, "ENTRY %main {\n");
  for (int i = 0; i < 5; ++i) StrAppend(&text, "  %p", i, " = f32[4]{0} parameter(", i, ")\n");
  for (int i = 0; i < 5; ++i) text += AllReduce(StrCat("r", i), "f32[4]{0}", StrCat("p", i), i + 1);
  StrAppend(&text, "  ROOT %t = (f32[4]{0}, f32[4]{0}, f32[4]{0}, f32[4]{0}, f32[4]{0}) tuple(%r0, %r1, %r2, %r3, %r4)\n}\n");
  // At most two operands (or 32 bytes) per all-reduce: 2 + 2 + 1.
  EXPECT_EQ(CountAllReduces(*ParseAndRun<AllReduceCombiner>(text, true, AllReduceCombiner(1 << 20, 2))), 3);
  EXPECT_EQ(CountAllReduces(*ParseAndRun<AllReduceCombiner>(text, true, AllReduceCombiner(32, 100))), 3);
  EXPECT_EQ(CountAllReduces(*ParseAndRun<AllReduceCombiner>(text, true)), 1);
}

TEST(AllReduceCombinerTest, CrossingDependenciesMakeNoCycle) {
  // a -> ra, b -> rb; c reads rb, d reads ra. {ra, rc} and {rb, rd} would each be
  // independent pairs, but combining both would make each combined op wait for the other.
  const std::string text = StrCat(
      kReducers, "ENTRY %main {\n  %a = f32[4]{0} parameter(0)\n  %b = f32[4]{0} parameter(1)\n",
      AllReduce("ra", "f32[4]{0}", "a", 1), AllReduce("rb", "f32[4]{0}", "b", 2, "%max"),
      "  %c = f32[4]{0} negate(%rb)\n  %d = f32[4]{0} negate(%ra)\n", AllReduce("rc", "f32[4]{0}", "c", 3),
      AllReduce("rd", "f32[4]{0}", "d", 4, "%max"),
      "  ROOT %t = (f32[4]{0}, f32[4]{0}, f32[4]{0}, f32[4]{0}) tuple(%ra, %rb, %rc, %rd)\n}\n");
  // ParseAndRun verifies the result (a cycle fails the post order) and its values.
  auto module = ParseAndRun<AllReduceCombiner>(text, true);
  EXPECT_EQ(CountAllReduces(*module), 3);
}

}  // namespace
}  // namespace jx::hlo::all_reduce_combiner_test
