// AsyncCollectiveCreator: every collective becomes its start/done pair with the collective's
// attributes on the start; the module verifies and computes what it did; the TPU pipeline
// with a chip makes the pairs and spaces them.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "jx/compiler/backend/tpu/async_collective_creator.h"
#include "jx/compiler/backend/tpu/tpu_pipeline.h"
#include "jx/compiler/hlo/hlo_evaluator.h"
#include "jx/compiler/hlo/hlo_module.h"
#include "jx/compiler/hlo/hlo_parser.h"
#include "jx/compiler/hlo/hlo_verifier.h"
#include "jx/compiler/hlo/literal.h"
#include "jx/devices/tpu/chip_specs.h"

namespace jx::tpu::async_collective_creator_test {
namespace {

using hlo::HloInstruction;
using hlo::HloOpcode;
using ::testing::HasSubstr;

constexpr std::string_view kCollectives = R"(HloModule spmd

%sum (x: f32[], y: f32[]) -> f32[] {
  %x = f32[] parameter(0)
  %y = f32[] parameter(1)
  ROOT %s = f32[] add(f32[] %x, f32[] %y)
}

ENTRY %main (p: f32[8,4]) -> (f32[8,4], f32[8,4], f32[8,4], f32[8,4], f32[8,4]) {
  %p = f32[8,4]{1,0} parameter(0)
  %ar = f32[8,4]{1,0} all-reduce(f32[8,4]{1,0} %p), channel_id=1, replica_groups={{0}}, use_global_device_ids=true, to_apply=%sum
  %ag = f32[8,4]{1,0} all-gather(f32[8,4]{1,0} %ar), channel_id=2, replica_groups={{0}}, dimensions={0}, use_global_device_ids=true
  %rs = f32[8,4]{1,0} reduce-scatter(f32[8,4]{1,0} %ag), channel_id=3, replica_groups={{0}}, dimensions={1}, use_global_device_ids=true, to_apply=%sum
  %a2a = f32[8,4]{1,0} all-to-all(f32[8,4]{1,0} %rs), channel_id=4, replica_groups={{0}}, dimensions={1}
  %cp = f32[8,4]{1,0} collective-permute(f32[8,4]{1,0} %a2a), channel_id=5, source_target_pairs={{0,0}}
  ROOT %t = (f32[8,4]{1,0}, f32[8,4]{1,0}, f32[8,4]{1,0}, f32[8,4]{1,0}, f32[8,4]{1,0}) tuple(%ar, %ag, %rs, %a2a, %cp)
}
)";

TEST(AsyncCollectiveCreatorTest, EveryCollectiveBecomesAStartDonePair) {
  absl::StatusOr<std::unique_ptr<hlo::HloModule>> module = hlo::ParseHloModule(kCollectives);
  ASSERT_TRUE(module.ok()) << module.status();
  hlo::Literal x(hlo::Shape(hlo::F32, {8, 4}));
  for (int i = 0; i < 32; ++i) x.SetFromDouble(i, i - 7.5);
  hlo::HloEvaluator evaluator;
  absl::StatusOr<hlo::Literal> before = evaluator.Evaluate(**module, {&x});
  ASSERT_TRUE(before.ok()) << before.status();

  AsyncCollectiveCreator creator;
  absl::StatusOr<bool> changed = creator.Run(module->get());
  ASSERT_TRUE(changed.ok()) << changed.status();
  EXPECT_TRUE(*changed);
  ASSERT_TRUE(hlo::VerifyHloModule(**module).ok()) << hlo::VerifyHloModule(**module);
  int starts = 0, dones = 0;
  for (const HloInstruction* instr : (*module)->entry_computation()->instructions()) {
    EXPECT_FALSE(hlo::AsyncStartOpcode(instr->opcode()).has_value()) << instr->ToString();
    if (hlo::IsAsyncCollectiveStart(instr->opcode())) ++starts;
    if (!hlo::IsAsyncCollectiveDone(instr->opcode())) continue;
    ++dones;
    EXPECT_EQ(hlo::SyncCollectiveOpcode(instr->operand(0)->opcode()), hlo::SyncCollectiveOpcode(instr->opcode()));
  }
  EXPECT_EQ(starts, 5);
  EXPECT_EQ(dones, 5);
  const std::string text = (*module)->ToString();
  EXPECT_THAT(text, HasSubstr("all-reduce-start(f32[8,4]{1,0} %p), channel_id=1, replica_groups={{0}}, "
                              "use_global_device_ids=true, to_apply=%sum"));
  EXPECT_THAT(text, HasSubstr("((f32[8,4]{1,0}), f32[8,4]{1,0}) reduce-scatter-start("));
  EXPECT_THAT(text, HasSubstr("dimensions={1}, use_global_device_ids=true, to_apply=%sum"));
  EXPECT_THAT(text, HasSubstr("collective-permute-start("));
  EXPECT_THAT(text, HasSubstr("source_target_pairs={{0,0}}"));
  absl::StatusOr<hlo::Literal> after = evaluator.Evaluate(**module, {&x});
  ASSERT_TRUE(after.ok()) << after.status();
  EXPECT_EQ(*after, *before);
  EXPECT_FALSE(*creator.Run(module->get()));  // nothing left to convert
}

TEST(AsyncCollectiveCreatorTest, ThePipelineMakesPairsForAChipUnlessTurnedOff) {
  struct Case {
    bool chip, async, pairs;
  };
  for (const Case& c : {Case{false, true, false}, Case{true, true, true}, Case{true, false, false}}) {
    SCOPED_TRACE(::testing::Message() << "chip " << c.chip << ", async " << c.async);
    absl::StatusOr<std::unique_ptr<hlo::HloModule>> module = hlo::ParseHloModule(kCollectives);
    ASSERT_TRUE(module.ok()) << module.status();
    TpuTargetOptions options;
    if (c.chip) options.chip = ChipSpec("v5e");
    options.async_collectives = c.async;
    hlo::HloPassPipeline pipeline("tpu");
    AddTpuPasses(pipeline, options);
    absl::StatusOr<bool> ran = pipeline.Run(module->get());
    ASSERT_TRUE(ran.ok()) << ran.status();
    const std::string text = (*module)->ToString();
    EXPECT_EQ(text.find("all-reduce-start(") != std::string::npos, c.pairs);
    EXPECT_EQ(text.find("all-reduce(") != std::string::npos, !c.pairs);
  }
}

}  // namespace
}  // namespace jx::tpu::async_collective_creator_test
