// The TPU's prices for hoisting a loop's reduce-scatter accumulator: the step time the runs
// cost as the chip's schedule runs them (their exposed part), against the bigger adds and the
// reduce-scatter after the loop. Every collective takes 10 us; the HBM moves 1e12 B/s.
#include "jx/compiler/backend/tpu/reduce_scatter_hoist_pricing.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "jx/compiler/backend/tpu/tpu_pipeline.h"
#include "jx/compiler/hlo/hlo_parser.h"
#include "jx/devices/tpu/chip_specs.h"

namespace jx::tpu::reduce_scatter_hoist_pricing_test {
namespace {

using hlo::HloOpcode;
using Outcome = hlo::ReduceScatterHoist::Outcome;

class TenMicrosecondTimer final : public CollectiveTimer {
 public:
  absl::StatusOr<CollectiveTiming> Time(const hlo::HloInstruction&) const override {
    return CollectiveTiming{.seconds = 1e-5, .algorithm = "fixed", .link_bytes = {}};
  }
};

// Four trips of acc += reduce-scatter(xs * i) over 8 chips (f32[64,128] -> f32[8,128]) and
// d = d or w.d, where d starts as w: either d itself, carried unchanged (nothing to hide the
// reduce-scatter behind), or w.d, a 2048^3 bf16 dot (17.2 GFLOP: ~19 us on a v6e, longer
// than the 10 us run) that does not depend on it, which the latency-hiding scheduler runs
// between its start and done.
constexpr std::string_view kLoop = R"(HloModule m
%sum (x: f32[], y: f32[]) -> f32[] {
  %x = f32[] parameter(0)
  %y = f32[] parameter(1)
  ROOT %xy = f32[] add(f32[] %x, f32[] %y)
}
%cond (cs: (s32[], f32[64,128], f32[8,128], bf16[2048,2048], bf16[2048,2048])) -> pred[] {
  %cs = (s32[], f32[64,128], f32[8,128], bf16[2048,2048], bf16[2048,2048]) parameter(0)
  %ci = s32[] get-tuple-element(%cs), index=0
  %n = s32[] constant(4)
  ROOT %lt = pred[] compare(%ci, %n), direction=LT
}
%body (s: (s32[], f32[64,128], f32[8,128], bf16[2048,2048], bf16[2048,2048])) -> (s32[], f32[64,128], f32[8,128], bf16[2048,2048], bf16[2048,2048]) {
  %s = (s32[], f32[64,128], f32[8,128], bf16[2048,2048], bf16[2048,2048]) parameter(0)
  %i = s32[] get-tuple-element(%s), index=0
  %xs = f32[64,128] get-tuple-element(%s), index=1
  %acc = f32[8,128] get-tuple-element(%s), index=2
  %wt = bf16[2048,2048] get-tuple-element(%s), index=3
  %d = bf16[2048,2048] get-tuple-element(%s), index=4
  %one = s32[] constant(1)
  %next = s32[] add(%i, %one)
  %fi = f32[] convert(%i)
  %bi = f32[64,128] broadcast(%fi), dimensions={}
  %g = f32[64,128] multiply(%xs, %bi)
  %rs = f32[8,128] reduce-scatter(%g), channel_id=1, replica_groups={{0,1,2,3,4,5,6,7}}, dimensions={0}, use_global_device_ids=true, to_apply=%sum
  %acc2 = f32[8,128] add(%acc, %rs)
  $DOT
  ROOT %t = (s32[], f32[64,128], f32[8,128], bf16[2048,2048], bf16[2048,2048]) tuple(%next, %xs, %acc2, %wt, $D2)
}
ENTRY %main {
  %px = f32[64,128] parameter(0)
  %pw = bf16[2048,2048] parameter(1)
  %zero = s32[] constant(0)
  %fzero = f32[] constant(0)
  %zeros = f32[8,128] broadcast(%fzero), dimensions={}
  %t0 = (s32[], f32[64,128], f32[8,128], bf16[2048,2048], bf16[2048,2048]) tuple(%zero, %px, %zeros, %pw, %pw)
  %w = (s32[], f32[64,128], f32[8,128], bf16[2048,2048], bf16[2048,2048]) while(%t0), condition=%cond, body=%body
  %sum_out = f32[8,128] get-tuple-element(%w), index=2
  %d_out = bf16[2048,2048] get-tuple-element(%w), index=4
  ROOT %out = (f32[8,128], bf16[2048,2048]) tuple(%sum_out, %d_out)
}
)";

std::string Loop(bool hidden) {
  std::string text(kLoop);
  const std::string dot = hidden ? "%d2 = bf16[2048,2048] dot(%wt, %d), lhs_contracting_dims={1}, rhs_contracting_dims={0}" : "";
  text.replace(text.find("$DOT"), 4, dot);
  text.replace(text.find("$D2"), 3, hidden ? "%d2" : "%d");
  return text;
}

// The code motion as the TPU pipeline configures it, on a v6e whose HBM moves 1e12 B/s.
struct Priced {
  std::unique_ptr<hlo::HloModule> module;
  hlo::ReduceScatterHoist hoist;
};

Priced HoistAsTheTpuPipelineWould(bool hidden) {
  TpuChipSpec spec = ChipSpec("v6e");
  spec.hbm_bandwidth = 1e12;
  static const TenMicrosecondTimer timer;
  TpuTargetOptions options(spec);
  options.collective_timer = &timer;
  hlo::WhileLoopAllReduceCodeMotion pass(CollectiveCodeMotionOptions(options));
  Priced p{.module = hlo::ParseHloModule(Loop(hidden)).value(), .hoist = {}};
  EXPECT_TRUE(pass.Run(p.module.get()).ok());
  EXPECT_EQ(pass.reduce_scatter_hoists().size(), 1u);
  if (!pass.reduce_scatter_hoists().empty()) p.hoist = pass.reduce_scatter_hoists()[0];
  return p;
}

int64_t ReduceScattersInTheBody(const hlo::HloModule& module) {
  int64_t n = 0;
  for (const hlo::HloInstruction* instr : module.GetComputationWithName("body")->instructions()) {
    n += instr->opcode() == HloOpcode::kReduceScatter;
  }
  return n;
}

// Hoisted, each trip's add reads and writes 3 x (64 - 8) x 128 x 4 B more: 86 ns at 1e12 B/s;
// the loop starts from 64 x 128 x 4 B of zeros: 33 ns.
constexpr double kBiggerAdd = 3.0 * (64 - 8) * 128 * 4 / 1e12;
constexpr double kZeros = 64.0 * 128 * 4 / 1e12;

// The dot hides the whole run: the step loses nothing to it, so hoisting saves no step time
// and costs the four bigger adds, the zeros and the 10 us run after the loop. (Priced by the
// runs' time, it saved 3 runs, 30 us, and moved.)
TEST(ReduceScatterHoistPricingTest, ARunTheScheduleHidesIsNotHoisted) {
  const Priced p = HoistAsTheTpuPipelineWould(/*hidden=*/true);
  EXPECT_EQ(p.hoist.outcome, Outcome::kDoesNotPay) << p.hoist.ToString();
  EXPECT_NEAR(p.hoist.saved_seconds, -(1e-5 + 4 * kBiggerAdd + kZeros), 1e-12);
  EXPECT_EQ(ReduceScattersInTheBody(*p.module), 1);
}

// Nothing hides the run but the loop counter's add: each trip loses almost the whole 10 us to
// it, so four trips save nearly 40 us, less the run after the loop, the bigger adds and the
// zeros.
TEST(ReduceScatterHoistPricingTest, AnExposedRunIsHoisted) {
  const Priced p = HoistAsTheTpuPipelineWould(/*hidden=*/false);
  EXPECT_EQ(p.hoist.outcome, Outcome::kHoisted) << p.hoist.ToString();
  EXPECT_LE(p.hoist.saved_seconds, 4 * (1e-5 - kBiggerAdd) - 1e-5 - kZeros + 1e-12);
  EXPECT_GT(p.hoist.saved_seconds, 2.5e-5);
  EXPECT_EQ(ReduceScattersInTheBody(*p.module), 0);
}

}  // namespace
}  // namespace jx::tpu::reduce_scatter_hoist_pricing_test
