// ReduceScatterReassociate: op(reduce-scatter(a), reduce-scatter(b)) -> reduce-scatter(op(a, b))
// for an unrolled loop's sums (FSDP gradients over microbatches), when both match and feed
// nothing else, the pricing says it pays and the full-size sum fits the memory limit (the
// gates of WhileLoopAllReduceCodeMotion's reduce-scatter mode). Groups of 4 partitions: the
// reference evaluator cannot run them, so those tests check the program; groups of one (a
// reduce-scatter that is a copy) check the values.
#include "jx/compiler/passes/reduce_scatter_reassociate.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "jx/core/str_util.h"
#include "pass_test_util.h"

namespace jx::reduce_scatter_reassociate_test {
namespace {

using hlo::HloInstruction;
using hlo::HloModule;
using hlo::HloOpcode;
using hlo::ReduceScatterHoist;
using hlo::ReduceScatterReassociate;
using hlo::testing::ParseAndRun;
using ::testing::HasSubstr;
using Outcome = ReduceScatterHoist::Outcome;

int64_t CountReduceScatters(const HloModule& module) {
  int64_t n = 0;
  for (const HloInstruction* instr : module.entry_computation()->instructions()) {
    n += instr->opcode() == HloOpcode::kReduceScatter;
  }
  return n;
}

// `microbatches` gradients g_k = x_k * w (f32[8,4]) each reduce-scattered over `groups` along
// `dims` (the last one along `last_dims`) and summed in order, as an unrolled loop of
// microbatches writes them: ((rs(g0) + rs(g1)) + rs(g2)) + ...
struct Unrolled {
  int microbatches = 4;
  std::string groups = "{{0,1,2,3}}";
  std::string rs_shape = "f32[2,4]{1,0}";
  std::string dims = "0";
  std::string last_rs_shape = "";  // "" : rs_shape
  std::string last_dims = "";      // "" : dims
  std::string reducer = "%fsum";
  bool read_first_again = false;  // the root is a tuple of the sum and rs(g0)
};

std::string Module(const Unrolled& u) {
  std::string text = R"(HloModule m
%fsum (x: f32[], y: f32[]) -> f32[] {
  %x = f32[] parameter(0)
  %y = f32[] parameter(1)
  ROOT %xy = f32[] add(f32[] %x, f32[] %y)
}
%fmax (mx: f32[], my: f32[]) -> f32[] {
  %mx = f32[] parameter(0)
  %my = f32[] parameter(1)
  ROOT %m = f32[] maximum(f32[] %mx, f32[] %my)
}
ENTRY %main {
  %w = f32[8,4]{1,0} parameter(0)
)";
  for (int k = 0; k < u.microbatches; ++k) {
    StrAppend(&text, "  %x", k, " = f32[8,4]{1,0} parameter(", k + 1, ")\n");
  }
  std::string sum;
  for (int k = 0; k < u.microbatches; ++k) {
    const bool last = k + 1 == u.microbatches;
    const std::string shape = last && !u.last_rs_shape.empty() ? u.last_rs_shape : u.rs_shape;
    const std::string dims = last && !u.last_dims.empty() ? u.last_dims : u.dims;
    StrAppend(&text, "  %g", k, " = f32[8,4]{1,0} multiply(%x", k, ", %w)\n");
    StrAppend(&text, "  %rs", k, " = ", shape, " reduce-scatter(%g", k, "), channel_id=", k + 1,
              ", replica_groups=", u.groups, ", dimensions={", dims, "}, use_global_device_ids=true, to_apply=",
              k == 0 ? u.reducer : "%fsum", "\n");
    if (k == 0) {
      sum = "%rs0";
    } else {
      StrAppend(&text, "  %acc", k, " = ", u.rs_shape, " add(", sum, ", %rs", k, ")\n");
      sum = StrCat("%acc", k);
    }
  }
  if (u.read_first_again) {
    StrAppend(&text, "  ROOT %t = (", u.rs_shape, ", ", u.rs_shape, ") tuple(", sum, ", %rs0)\n}\n");
  } else {
    StrAppend(&text, "  ROOT %out = ", u.rs_shape, " copy(", sum, ")\n}\n");
  }
  return text;
}

TEST(ReduceScatterReassociateTest, AnUnrolledSumReduceScattersOnce) {
  ReduceScatterReassociate pass;
  auto module = ParseAndRun(Module({}), true, pass);
  EXPECT_EQ(CountReduceScatters(*module), 1);
  // copy(reduce-scatter(((g0 + g1) + g2) + g3)), the sum at the full size.
  const HloInstruction* rs = module->entry_computation()->root_instruction()->operand(0);
  ASSERT_EQ(rs->opcode(), HloOpcode::kReduceScatter) << module->ToString();
  EXPECT_EQ(rs->shape().dimensions(), (std::vector<int64_t>{2, 4}));
  EXPECT_EQ(rs->dimensions(), std::vector<int64_t>{0});
  EXPECT_EQ(rs->replica_groups(), (hlo::ReplicaGroups{{0, 1, 2, 3}}));
  const HloInstruction* sum = rs->operand(0);
  for (int k = 3; k > 0; --k) {
    ASSERT_EQ(sum->opcode(), HloOpcode::kAdd) << module->ToString();
    EXPECT_EQ(sum->shape().dimensions(), (std::vector<int64_t>{8, 4}));
    EXPECT_EQ(sum->operand(1)->name(), StrCat("g", k));
    sum = sum->operand(0);
  }
  EXPECT_EQ(sum->name(), "g0");

  // ParseAndRun ran a copy; this one's records: three pairs over 4 chips, the first grows the
  // sum from its 32 B block to 128 B, the later ones add to the full-size sum.
  auto again = hlo::ParseHloModule(Module({})).value();
  ASSERT_TRUE(pass.Run(again.get()).value());
  ASSERT_EQ(pass.records().size(), 3u);
  const ReduceScatterHoist& first = pass.records()[0];
  EXPECT_EQ(first.reduce_scatter, "rs0 + rs1");
  EXPECT_EQ(first.loop, "");
  EXPECT_EQ(first.trips, 2);
  EXPECT_EQ(first.grown_adds, 1);
  EXPECT_EQ(first.group_size, 4);
  EXPECT_EQ(first.extra_bytes(), 128 - 32);
  EXPECT_EQ(first.outcome, Outcome::kHoisted);
  EXPECT_THAT(first.ToString(), HasSubstr("rs0 + rs1 (unrolled, 4 chips): combined, 1 fewer runs"));
  for (size_t k = 1; k < 3; ++k) {
    EXPECT_EQ(pass.records()[k].outcome, Outcome::kHoisted);
    EXPECT_EQ(pass.records()[k].extra_bytes(), 0);
  }
}

// Groups of one: the reduce-scatters are copies, so the evaluator compares values
// (ParseAndRun): the sum keeps its order, so it is bit-equal.
TEST(ReduceScatterReassociateTest, TheSumIsBitEqual) {
  auto module =
      ParseAndRun<ReduceScatterReassociate>(Module({.groups = "{{0}}", .rs_shape = "f32[8,4]{1,0}"}), true);
  EXPECT_EQ(CountReduceScatters(*module), 1);
}

TEST(ReduceScatterReassociateTest, KeptWhenTheFullSizeSumExceedsTheMemoryLimit) {
  // Parameters alone are 5 x 128 B: a limit of 100 B cannot hold 96 B more.
  ReduceScatterReassociate pass({.memory_limit_bytes = 100});
  ParseAndRun(Module({}), false, pass);
  auto module = hlo::ParseHloModule(Module({})).value();
  EXPECT_FALSE(pass.Run(module.get()).value());
  // The first pair is kept apart, so the later adds read no reduce-scatter pair.
  ASSERT_EQ(pass.records().size(), 1u);
  EXPECT_EQ(pass.records()[0].outcome, Outcome::kOverMemoryLimit);
  EXPECT_THAT(pass.records()[0].ToString(), HasSubstr("exceed the memory limit"));
  // The limit holds the estimated peak and the one full-size sum (96 B more), to the byte.
  const int64_t peak = hlo::EstimatedPeakBytes(*module).value();
  EXPECT_EQ(pass.records()[0].peak_bytes, peak);
  EXPECT_GE(peak, 5 * 128);
  EXPECT_FALSE(ReduceScatterReassociate({.memory_limit_bytes = peak + 95}).Run(module.get()).value());
  EXPECT_EQ(CountReduceScatters(*module), 4);
  EXPECT_TRUE(ReduceScatterReassociate({.memory_limit_bytes = peak + 96}).Run(module.get()).value());
  EXPECT_EQ(CountReduceScatters(*module), 1);
}

TEST(ReduceScatterReassociateTest, KeptWhenThePricingSaysItDoesNotPay) {
  std::vector<ReduceScatterHoist> seen;
  ReduceScatterReassociate pass(
      {.pricing = hlo::PriceEachAlone([&](const HloInstruction& rs, const ReduceScatterHoist& h) -> absl::StatusOr<double> {
        EXPECT_EQ(rs.opcode(), HloOpcode::kReduceScatter);
        seen.push_back(h);
        return -1e-6;
      })});
  auto module = hlo::ParseHloModule(Module({.microbatches = 2})).value();
  EXPECT_FALSE(pass.Run(module.get()).value());
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].trips, 2);
  EXPECT_EQ(seen[0].grown_adds, 1);
  EXPECT_EQ(seen[0].accumulator_bytes, 32);
  EXPECT_EQ(seen[0].reduced_bytes, 32);
  EXPECT_EQ(seen[0].extra_bytes(), 96);
  ASSERT_EQ(pass.records().size(), 1u);
  EXPECT_EQ(pass.records()[0].outcome, Outcome::kDoesNotPay);
  EXPECT_DOUBLE_EQ(pass.records()[0].saved_seconds, -1e-6);
  EXPECT_EQ(CountReduceScatters(*module), 2);
}

TEST(ReduceScatterReassociateTest, LeavesMismatchedOrSharedReduceScattersAlone) {
  const Unrolled two{.microbatches = 2};
  // Other groups.
  std::string mixed = Module(two);
  const std::string second = "channel_id=2, replica_groups={{0,1,2,3}}";
  mixed.replace(mixed.find(second), second.size(), "channel_id=2, replica_groups={{0,2,1,3}}");
  ParseAndRun<ReduceScatterReassociate>(mixed, false);
  // Another scattered dimension (groups of one, so the blocks have the same shape).
  ParseAndRun<ReduceScatterReassociate>(
      Module({.microbatches = 2, .groups = "{{0}}", .rs_shape = "f32[8,4]{1,0}", .last_dims = "1"}), false);
  // Another reducer than the add combining them.
  ParseAndRun<ReduceScatterReassociate>(Module({.microbatches = 2, .reducer = "%fmax"}), false);
  // A reduce-scatter read again.
  ParseAndRun<ReduceScatterReassociate>(Module({.microbatches = 2, .read_first_again = true}), false);
}

}  // namespace
}  // namespace jx::reduce_scatter_reassociate_test
