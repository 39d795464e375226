// A chip's clock: a step's instructions laid end to end on their units' lanes, HBM traffic on
// the DMA lane beside the compute, the clock moved by the predicted time, busy time per unit.
#include "jx/devices/tpu/chip_clock.h"

#include <gtest/gtest.h>

namespace jx::tpu::chip_clock_test {
namespace {

CostAnalysis TwoKernels() {
  CostAnalysis cost;
  cost.predicted_seconds = 10e-6;
  cost.instructions = {
      {.name = "Arg_0", .opcode = "parameter", .unit = "", .seconds = 0},
      {.name = "dot.1", .opcode = "dot", .unit = "mxu", .flops = 1e9, .bytes = 1e6, .seconds = 6e-6,
       .bound_by = "compute"},
      {.name = "fusion.2", .opcode = "fusion", .unit = "vpu", .bytes = 4e6, .seconds = 4e-6, .bound_by = "memory"},
  };
  return cost;
}

TEST(ChipClockTest, InstructionsRunInOrderOnTheirUnits) {
  const CostAnalysis cost = TwoKernels();
  // 1e12 B/s: dot.1's 1 MB take 1 us of DMA; fusion.2's 4 MB take all of its 4 us.
  const StepTimeline step = ScheduleStep(cost, 100e-6, 1e12);
  EXPECT_DOUBLE_EQ(step.start_seconds, 100e-6);
  EXPECT_DOUBLE_EQ(step.seconds, 10e-6);
  ASSERT_EQ(step.instructions.size(), 4u);  // the parameter runs no code
  EXPECT_EQ(step.instructions[0].name, "dot.1");
  EXPECT_EQ(step.instructions[0].lane, "MXU");
  EXPECT_DOUBLE_EQ(step.instructions[0].start_seconds, 100e-6);
  EXPECT_DOUBLE_EQ(step.instructions[0].seconds, 6e-6);
  EXPECT_EQ(step.instructions[1].lane, "DMA");
  EXPECT_DOUBLE_EQ(step.instructions[1].start_seconds, 100e-6);
  EXPECT_DOUBLE_EQ(step.instructions[1].seconds, 1e-6);
  EXPECT_EQ(step.instructions[2].name, "fusion.2");
  EXPECT_EQ(step.instructions[2].lane, "VPU");
  EXPECT_DOUBLE_EQ(step.instructions[2].start_seconds, 106e-6);
  EXPECT_DOUBLE_EQ(step.instructions[3].seconds, 4e-6);
  EXPECT_EQ(step.instructions[2].cost, &cost.instructions[2]);
  EXPECT_DOUBLE_EQ(step.busy.mxu, 6e-6);
  EXPECT_DOUBLE_EQ(step.busy.vpu, 4e-6);
  EXPECT_DOUBLE_EQ(step.busy.dma, 5e-6);
  EXPECT_DOUBLE_EQ(step.busy.ici, 0);
}

TEST(ChipClockTest, InstructionsLongerThanTheStepAreScaledIntoIt) {
  CostAnalysis cost = TwoKernels();
  cost.predicted_seconds = 5e-6;  // a model that overlaps the two kernels
  const StepTimeline step = ScheduleStep(cost, 0, 1e12);
  const PlacedInstruction& last = step.instructions.back();
  EXPECT_NEAR(last.start_seconds + last.seconds, 5e-6, 1e-15);
  EXPECT_DOUBLE_EQ(step.busy.mxu + step.busy.vpu, 5e-6);
}

TEST(ChipClockTest, AnAsynchronousCollectiveRunsBesideTheCompute) {
  CostAnalysis cost;
  cost.predicted_seconds = 18e-6;  // the rows' sum
  cost.instructions = {
      {.name = "all-reduce-start.1", .opcode = "all-reduce-start", .unit = "ici", .seconds = 10e-6, .bound_by = ""},
      {.name = "fusion.2", .opcode = "fusion", .unit = "vpu", .seconds = 4e-6, .bound_by = "compute"},
      {.name = "all-reduce-done.3", .opcode = "all-reduce-done", .unit = "ici", .seconds = 0, .bound_by = ""},
      {.name = "fusion.4", .opcode = "fusion", .unit = "vpu", .seconds = 4e-6, .bound_by = "compute"},
  };
  const StepTimeline step = ScheduleStep(cost, 0, 0);
  // fusion.2 runs while the collective does; the done waits until 10 us.
  EXPECT_NEAR(step.seconds, 14e-6, 1e-15);
  ASSERT_EQ(step.instructions.size(), 3u);
  EXPECT_EQ(step.instructions[0].lane, "ICI");
  EXPECT_DOUBLE_EQ(step.instructions[0].start_seconds, 0);
  EXPECT_EQ(step.instructions[1].name, "fusion.2");
  EXPECT_DOUBLE_EQ(step.instructions[1].start_seconds, 0);
  EXPECT_NEAR(step.instructions[2].start_seconds, 10e-6, 1e-15);
  EXPECT_DOUBLE_EQ(step.busy.ici, 10e-6);
}

TEST(ChipClockTest, ClockAdvancesByThePredictedTime) {
  ChipClock clock;
  const CostAnalysis cost = TwoKernels();
  const StepTimeline first = clock.RunStep(cost, 1e12);
  const StepTimeline second = clock.RunStep(cost, 1e12);
  EXPECT_DOUBLE_EQ(first.start_seconds, 0);
  EXPECT_DOUBLE_EQ(second.start_seconds, 10e-6);
  const ChipActivity a = clock.activity();
  EXPECT_DOUBLE_EQ(a.now_seconds, 20e-6);
  EXPECT_EQ(a.steps, 2);
  EXPECT_DOUBLE_EQ(a.busy.mxu, 12e-6);
  EXPECT_DOUBLE_EQ(a.busy.vpu, 8e-6);
  EXPECT_DOUBLE_EQ(a.busy.dma, 10e-6);
}

}  // namespace
}  // namespace jx::tpu::chip_clock_test
