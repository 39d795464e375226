// CountComputationRuns: nested loops multiply their trip counts; a loop without a constant
// trip count counts once and marks what it calls inexact.
#include "jx/compiler/analysis/computation_runs.h"

#include <gtest/gtest.h>

#include "jx/compiler/hlo/hlo_parser.h"

namespace jx::hlo::computation_runs_test {
namespace {

TEST(ComputationRunsTest, NestedLoopsMultiplyTheirTripCounts) {
  auto module = ParseHloModule(R"(HloModule m
%inner_cond (ic: (s32[])) -> pred[] {
  %ic = (s32[]) parameter(0)
  %icv = s32[] get-tuple-element(%ic), index=0
  %i3 = s32[] constant(3)
  ROOT %ilt = pred[] compare(%icv, %i3), direction=LT
}
%inner_body (ib: (s32[])) -> (s32[]) {
  %ib = (s32[]) parameter(0)
  %ibv = s32[] get-tuple-element(%ib), index=0
  %i1 = s32[] constant(1)
  %inext = s32[] add(%ibv, %i1)
  ROOT %it = (s32[]) tuple(%inext)
}
%outer_cond (oc: (s32[])) -> pred[] {
  %oc = (s32[]) parameter(0)
  %ocv = s32[] get-tuple-element(%oc), index=0
  %o2 = s32[] constant(2)
  ROOT %olt = pred[] compare(%ocv, %o2), direction=LT
}
%outer_body (ob: (s32[])) -> (s32[]) {
  %ob = (s32[]) parameter(0)
  %obv = s32[] get-tuple-element(%ob), index=0
  %z = s32[] constant(0)
  %zt = (s32[]) tuple(%z)
  %inner = (s32[]) while(%zt), condition=%inner_cond, body=%inner_body
  %o1 = s32[] constant(1)
  %onext = s32[] add(%obv, %o1)
  ROOT %ot = (s32[]) tuple(%onext)
}
%unknown_cond (uc: (s32[])) -> pred[] {
  %uc = (s32[]) parameter(0)
  %ucv = s32[] get-tuple-element(%uc), index=0
  %u0 = s32[] constant(0)
  ROOT %ult = pred[] compare(%ucv, %u0), direction=LT
}
%unknown_body (ub: (s32[])) -> (s32[]) {
  %ub = (s32[]) parameter(0)
  %ubv = s32[] get-tuple-element(%ub), index=0
  %u1 = s32[] constant(1)
  %unext = s32[] add(%ubv, %u1)
  ROOT %ut = (s32[]) tuple(%unext)
}
ENTRY %main (p: s32[]) -> ((s32[]), (s32[])) {
  %p = s32[] parameter(0)
  %zero = s32[] constant(0)
  %zero_t = (s32[]) tuple(%zero)
  %outer = (s32[]) while(%zero_t), condition=%outer_cond, body=%outer_body
  %pt = (s32[]) tuple(%p)
  %u = (s32[]) while(%pt), condition=%unknown_cond, body=%unknown_body
  ROOT %t = ((s32[]), (s32[])) tuple(%outer, %u)
})");
  ASSERT_TRUE(module.ok()) << module.status();
  const ComputationRuns runs = CountComputationRuns(**module);
  auto c = [&](const char* name) { return (*module)->GetComputationWithName(name); };
  EXPECT_EQ(runs.RunsOf((*module)->entry_computation()), 1);
  EXPECT_EQ(runs.RunsOf(c("outer_body")), 2);
  EXPECT_EQ(runs.RunsOf(c("outer_cond")), 3);
  EXPECT_EQ(runs.RunsOf(c("inner_body")), 6);
  EXPECT_EQ(runs.RunsOf(c("inner_cond")), 8);
  EXPECT_TRUE(runs.IsExact(c("inner_body")));
  EXPECT_EQ(runs.RunsOf(c("unknown_body")), 1);
  EXPECT_FALSE(runs.IsExact(c("unknown_body")));
}

}  // namespace
}  // namespace jx::hlo::computation_runs_test
