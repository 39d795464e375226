// Asynchronous collectives on a pod: an 8-chip program whose all-reduce has an independent
// dot beside it computes the same numbers with and without the latency-hiding scheduler,
// and its step hides part of the all-reduce behind the dot (the report's overlapped time),
// where the synchronous program exposes all of it.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "jx/compiler/hlo/hlo_parser.h"
#include "jx/devices/tpu/pod_overlap.h"
#include "jx/devices/tpu/pod_program.h"
#include "jx/jx.h"

namespace jx::tpu::pod_overlap_test {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

constexpr int kChips = 8;

std::vector<const TpuChip*> ChipsOf(const Pod& pod) {
  std::vector<const TpuChip*> chips;
  for (const Device* d : pod.devices()) chips.push_back(static_cast<const TpuChip*>(d));
  return chips;
}

constexpr std::string_view kOverlap = R"(HloModule spmd

%sum (x: f32[], y: f32[]) -> f32[] {
  %x = f32[] parameter(0)
  %y = f32[] parameter(1)
  ROOT %s = f32[] add(f32[] %x, f32[] %y)
}

ENTRY %main (p: f32[256,256], w: f32[256,256]) -> (f32[256,256], f32[256,256]) {
  %p = f32[256,256]{1,0} parameter(0)
  %w = f32[256,256]{1,0} parameter(1)
  %ar = f32[256,256]{1,0} all-reduce(f32[256,256]{1,0} %p), channel_id=1, replica_groups={{0,1,2,3,4,5,6,7}}, use_global_device_ids=true, to_apply=%sum
  %independent = f32[256,256]{1,0} dot(f32[256,256]{1,0} %w, f32[256,256]{1,0} %w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  %dependent = f32[256,256]{1,0} dot(f32[256,256]{1,0} %ar, f32[256,256]{1,0} %independent), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ROOT %t = (f32[256,256]{1,0}, f32[256,256]{1,0}) tuple(%independent, %dependent)
}
)";

std::shared_ptr<const PodProgram> Compile(const Pod& pod, bool async) {
  absl::StatusOr<std::unique_ptr<hlo::HloModule>> module = hlo::ParseHloModule(kOverlap);
  EXPECT_TRUE(module.ok()) << module.status();
  return CompilePodProgram(*std::move(module), pod.client(), ChipsOf(pod),
                           {ShapedArray{{256, 256}, float32}, ShapedArray{{256, 256}, float32}}, "jit(spmd)", {},
                           async);
}

std::vector<Arrays> Args(const Pod& pod) {
  std::vector<Arrays> args;
  for (int p = 0; p < kChips; ++p) {
    Array x = numpy::full({256, 256}, 0.01f * (p + 1));
    Array w = numpy::full({256, 256}, 0.003f * (p + 2));
    args.push_back({device_put(x, pod.devices()[p]), device_put(w, pod.devices()[p])});
  }
  return args;
}

TEST(PodOverlapTest, TheSchedulerHidesTheAllReduceBehindTheIndependentDot) {
  Pod pod = make_pod("v5e", {4, 2});
  auto async = Compile(pod, true);
  auto sync = Compile(pod, false);
  EXPECT_THAT(async->as_text(), HasSubstr("all-reduce-start("));
  EXPECT_THAT(sync->as_text(), Not(HasSubstr("all-reduce-start(")));

  // Results unchanged by scheduling.
  const std::vector<Arrays> a = async->ExecuteShards(Args(pod));
  const StepReport overlapped = async->last_step();
  const std::vector<Arrays> s = sync->ExecuteShards(Args(pod));
  const StepReport exposed = sync->last_step();
  for (int p = 0; p < kChips; ++p) {
    for (int i = 0; i < 2; ++i) EXPECT_EQ(a[p][i].to_vector<float>(), s[p][i].to_vector<float>()) << p << " " << i;
  }

  // Synchronous: the all-reduce is all exposed.
  ASSERT_EQ(exposed.collectives.size(), 1u);
  EXPECT_EQ(exposed.collectives[0].kind, "all-reduce");
  EXPECT_GT(exposed.collectives[0].seconds, 0);
  EXPECT_DOUBLE_EQ(exposed.collectives[0].exposed_seconds, exposed.collectives[0].seconds);
  EXPECT_DOUBLE_EQ(exposed.overlapped_communication_seconds(), 0);

  // Asynchronous: the start's collective ran beside the independent dot.
  ASSERT_EQ(overlapped.collectives.size(), 1u);
  const CollectiveStepEntry& c = overlapped.collectives[0];
  EXPECT_EQ(c.kind, "all-reduce");
  EXPECT_EQ(c.runs, 1);
  EXPECT_EQ(c.bytes, 256 * 256 * 4);
  EXPECT_FALSE(c.algorithm.empty());
  EXPECT_NEAR(c.seconds, exposed.collectives[0].seconds, 1e-12);
  EXPECT_GT(overlapped.overlapped_communication_seconds(), 0);
  EXPECT_LT(c.exposed_seconds, c.seconds);
  // The step is shorter than the rows' sum, and shorter than the synchronous step.
  EXPECT_LT(overlapped.wall_seconds, async->cost_analysis().predicted_seconds);
  EXPECT_LT(overlapped.wall_seconds, exposed.wall_seconds);
  for (const ChipStepReport& chip : overlapped.chips) {
    EXPECT_NEAR(chip.communication_seconds, c.seconds, 1e-12);
    EXPECT_LT(chip.exposed_communication_seconds, chip.communication_seconds);
    EXPECT_NEAR(chip.compute_seconds + chip.exposed_communication_seconds + chip.idle_seconds,
                chip.end_seconds - chip.start_seconds, 1e-12);
  }
  ASSERT_FALSE(overlapped.links.empty());
  for (const LinkTraffic& link : overlapped.links) {
    EXPECT_NEAR(link.busy_seconds, c.seconds, 1e-12);
    EXPECT_NEAR(link.exposed_seconds, c.exposed_seconds, 1e-12);
  }
  const std::string text = overlapped.ToString();
  EXPECT_THAT(text, HasSubstr("exposed"));
  EXPECT_THAT(text, HasSubstr("overlapped"));
  EXPECT_THAT(text, HasSubstr("(all-reduce, 1 run, 262144 bytes)"));
}

// PlanPodOverlap: the two dry runs of one module predict the steps the scheduled and the
// synchronous programs run in, and the synchronous plan exposes all of its communication.
TEST(PodOverlapTest, PlanningBothWaysPredictsTheStepsBothProgramsRun) {
  Pod pod = make_pod("v5e", {4, 2});
  absl::StatusOr<std::unique_ptr<hlo::HloModule>> module = hlo::ParseHloModule(kOverlap);
  ASSERT_TRUE(module.ok()) << module.status();
  const std::vector<ShapedArray> outs = {ShapedArray{{256, 256}, float32}, ShapedArray{{256, 256}, float32}};
  const PodOverlap o = PlanPodOverlap(**module, pod.client(), ChipsOf(pod), outs, "jit(spmd)");
  auto async = Compile(pod, true);
  auto sync = Compile(pod, false);
  async->ExecuteShards(Args(pod));
  const StepReport ran_async = async->last_step();
  sync->ExecuteShards(Args(pod));
  const StepReport ran_sync = sync->last_step();
  EXPECT_NEAR(o.scheduled.step.wall_seconds, ran_async.wall_seconds, 1e-12);
  EXPECT_NEAR(o.synchronous.step.wall_seconds, ran_sync.wall_seconds, 1e-12);
  EXPECT_NEAR(o.synchronous.step.exposed_communication_seconds(), o.synchronous.step.communication_seconds(), 1e-15);
  EXPECT_GT(o.scheduled.step.overlapped_communication_seconds(), 0);
  EXPECT_GT(o.speedup(), 1.0);
  EXPECT_DOUBLE_EQ(o.speedup(), o.synchronous.step.wall_seconds / o.scheduled.step.wall_seconds);
}

// Three trips of a body that all-reduces its value over the 8 chips.
constexpr std::string_view kLoop = R"(HloModule spmd

%sum (x: f32[], y: f32[]) -> f32[] {
  %x = f32[] parameter(0)
  %y = f32[] parameter(1)
  ROOT %s = f32[] add(f32[] %x, f32[] %y)
}

%cond (st: (s32[], f32[64])) -> pred[] {
  %st = (s32[], f32[64]) parameter(0)
  %i = s32[] get-tuple-element(%st), index=0
  %n = s32[] constant(3)
  ROOT %lt = pred[] compare(%i, %n), direction=LT
}

%body (t: (s32[], f32[64])) -> (s32[], f32[64]) {
  %t = (s32[], f32[64]) parameter(0)
  %bi = s32[] get-tuple-element(%t), index=0
  %v = f32[64] get-tuple-element(%t), index=1
  %one = s32[] constant(1)
  %next = s32[] add(%bi, %one)
  %ar = f32[64] all-reduce(%v), channel_id=1, replica_groups={{0,1,2,3,4,5,6,7}}, use_global_device_ids=true, to_apply=%sum
  ROOT %r = (s32[], f32[64]) tuple(%next, %ar)
}

ENTRY %main (x0: f32[64]) -> f32[64] {
  %x0 = f32[64] parameter(0)
  %zero = s32[] constant(0)
  %init = (s32[], f32[64]) tuple(%zero, %x0)
  %loop = (s32[], f32[64]) while(%init), condition=%cond, body=%body
  ROOT %out = f32[64] get-tuple-element(%loop), index=1
}
)";

TEST(PodOverlapTest, ALoopsCollectiveIsTimedOncePerTrip) {
  Pod pod = make_pod("v5e", {4, 2});
  absl::StatusOr<std::unique_ptr<hlo::HloModule>> module = hlo::ParseHloModule(kLoop);
  ASSERT_TRUE(module.ok()) << module.status();
  auto program =
      CompilePodProgram(*std::move(module), pod.client(), ChipsOf(pod), {ShapedArray{{64}, float32}}, "jit(loop)");
  std::vector<Arrays> args;
  for (int p = 0; p < kChips; ++p) args.push_back({device_put(numpy::ones({64}), pod.devices()[p])});
  const std::vector<Arrays> outs = program->ExecuteShards(args);
  for (int p = 0; p < kChips; ++p) EXPECT_EQ(outs[p][0].to_vector<float>(), std::vector<float>(64, 512.f)) << p;
  const StepReport report = program->last_step();
  ASSERT_EQ(report.collectives.size(), 1u);
  const CollectiveStepEntry& c = report.collectives[0];
  EXPECT_EQ(c.kind, "all-reduce");
  EXPECT_EQ(c.runs, 3);
  EXPECT_GT(c.seconds, 0);
  // Only the loop counter's increment is independent of the all-reduce: it hides a little of
  // each trip's, the rest is exposed.
  EXPECT_LT(c.exposed_seconds, c.seconds);
  EXPECT_GT(c.exposed_seconds, 0.5 * c.seconds);
  for (const ChipStepReport& chip : report.chips) EXPECT_NEAR(chip.communication_seconds, c.seconds, 1e-12);
  EXPECT_THAT(report.ToString(), HasSubstr("(all-reduce, 3 runs, 256 bytes)"));
  ASSERT_FALSE(report.links.empty());
  EXPECT_NEAR(report.links[0].busy_seconds, c.seconds, 1e-12);
}

// A conditional whose first branch all-reduces over the 8 chips (every chip takes it).
constexpr std::string_view kConditional = R"(HloModule spmd

%sum (x: f32[], y: f32[]) -> f32[] {
  %x = f32[] parameter(0)
  %y = f32[] parameter(1)
  ROOT %s = f32[] add(f32[] %x, f32[] %y)
}

%reduce_branch (a: f32[64]) -> f32[64] {
  %a = f32[64] parameter(0)
  %e = f32[64] exponential(%a)
  ROOT %ar = f32[64] all-reduce(%e), channel_id=1, replica_groups={{0,1,2,3,4,5,6,7}}, use_global_device_ids=true, to_apply=%sum
}

%negate_branch (b: f32[64]) -> f32[64] {
  %b = f32[64] parameter(0)
  ROOT %n = f32[64] negate(%b)
}

ENTRY %main (index: s32[], v: f32[64]) -> f32[64] {
  %index = s32[] parameter(0)
  %v = f32[64] parameter(1)
  ROOT %c = f32[64] conditional(%index, %v, %v), branch_computations={%reduce_branch, %negate_branch}
}
)";

TEST(PodOverlapTest, AConditionalsCollectiveIsTimed) {
  Pod pod = make_pod("v5e", {4, 2});
  absl::StatusOr<std::unique_ptr<hlo::HloModule>> module = hlo::ParseHloModule(kConditional);
  ASSERT_TRUE(module.ok()) << module.status();
  auto program =
      CompilePodProgram(*std::move(module), pod.client(), ChipsOf(pod), {ShapedArray{{64}, float32}}, "jit(cond)");
  std::vector<Arrays> args;
  for (int p = 0; p < kChips; ++p) {
    args.push_back({device_put(numpy::zeros({}, int32), pod.devices()[p]),
                    device_put(numpy::zeros({64}), pod.devices()[p])});
  }
  const std::vector<Arrays> outs = program->ExecuteShards(args);
  for (int p = 0; p < kChips; ++p) EXPECT_EQ(outs[p][0].to_vector<float>(), std::vector<float>(64, 8.f)) << p;
  const StepReport report = program->last_step();
  ASSERT_EQ(report.collectives.size(), 1u);
  EXPECT_EQ(report.collectives[0].kind, "all-reduce");
  EXPECT_EQ(report.collectives[0].runs, 1);
  EXPECT_GT(report.collectives[0].seconds, 0);
  for (const ChipStepReport& chip : report.chips) {
    EXPECT_NEAR(chip.communication_seconds, report.collectives[0].seconds, 1e-12);
  }
}

}  // namespace
}  // namespace jx::tpu::pod_overlap_test
