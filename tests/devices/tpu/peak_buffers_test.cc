// What holds a planned step's HBM peak (PodPlan::hbm): on 8 v5e chips, x[64, 2048] @ W[2048,
// 2048] with W split over 'data' by rows (FSDP) and x by rows too. The partitioner gathers W
// (1 MiB per chip -> 8 MiB), so the gathered weight is the largest buffer live at the peak,
// 8x the argument it was gathered from; everything else is the 1 MiB shard and 32 KiB blocks.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>

#include "jx/jx.h"

namespace jx::peak_buffers_test {
namespace {

namespace jnp = jx::numpy;
using ::testing::HasSubstr;

constexpr int64_t kChips = 8, kRows = 64, kDim = 2048;
constexpr int64_t kWeightBytes = kDim * kDim * 2;           // bf16[2048,2048]: 8 MiB
constexpr int64_t kShardBytes = kWeightBytes / kChips;      // bf16[256,2048]: 1 MiB
constexpr int64_t kBlockBytes = kRows / kChips * kDim * 2;  // bf16[8,2048]: 32 KiB

tpu::PodPlan PlanMatmul(const tpu::Pod& pod) {
  const Mesh mesh = make_mesh({kChips}, {"data"}, pod.devices());
  const auto rows = std::make_shared<NamedSharding>(mesh, P("data", none));
  auto step = jit([](const Array& x, const Array& w) { return jnp::tanh(jnp::matmul(x, w)); },
                  in_shardings{*rows, *rows}, out_shardings{*rows});
  const ShapeDtypeStruct x{.shape = {kRows, kDim}, .dtype = bfloat16, .sharding = rows};
  const ShapeDtypeStruct w{.shape = {kDim, kDim}, .dtype = bfloat16, .sharding = rows};
  return step.lower(x, w).compile().plan();
}

TEST(PeakBuffersTest, TheGatheredWeightHoldsThePeak) {
  const tpu::Pod pod = tpu::make_pod("v5e", {4, 2});
  const tpu::PodPlan plan = PlanMatmul(pod);
  const tpu::HbmPeakReport& hbm = plan.hbm;
  ASSERT_FALSE(hbm.buffers.empty()) << plan.ToString();

  // The split adds up to the plan's peak: arguments (x's block and W's shard), the output block,
  // the temp arena.
  EXPECT_EQ(hbm.argument_bytes, kBlockBytes + kShardBytes);
  EXPECT_EQ(hbm.output_bytes, kBlockBytes);
  EXPECT_EQ(hbm.argument_bytes + hbm.output_bytes + hbm.constant_bytes + hbm.temp_arena_bytes - hbm.alias_bytes,
            plan.hbm_peak_bytes);
  EXPECT_LE(hbm.peak_live_temp_bytes, hbm.temp_arena_bytes);

  // The largest buffer: W gathered over 'data', defined by the all-gather, from the dot's
  // equation.
  const tpu::PeakBuffer& top = hbm.buffers.front();
  EXPECT_EQ(top.bytes, kWeightBytes) << hbm.ToString();
  EXPECT_EQ(top.shape, "bf16[2048,2048]");
  EXPECT_EQ(top.kind, tpu::PeakBufferKind::kGatheredWeight) << hbm.ToString();
  EXPECT_EQ(top.opcode, "all-gather-start");  // the done returns the start's buffer
  EXPECT_THAT(top.op_name, HasSubstr("all_gather"));
  EXPECT_GE(hbm.bytes_of(tpu::PeakBufferKind::kGatheredWeight), kWeightBytes);
  EXPECT_EQ(hbm.bytes_of(tpu::PeakBufferKind::kParameter), kBlockBytes + kShardBytes);
  // Largest first; the arguments are listed with their parameter instructions.
  for (size_t i = 1; i < hbm.buffers.size(); ++i) EXPECT_LE(hbm.buffers[i].bytes, hbm.buffers[i - 1].bytes);
  bool shard_listed = false;
  for (const tpu::PeakBuffer& b : hbm.buffers) {
    if (b.kind != tpu::PeakBufferKind::kParameter || b.bytes != kShardBytes) continue;
    shard_listed = true;
    EXPECT_EQ(b.shape, "bf16[256,2048]");
    EXPECT_EQ(b.opcode, "parameter");
  }
  EXPECT_TRUE(shard_listed) << hbm.ToString();

  // The plan's text shows the split and names the buffer.
  const std::string text = plan.ToString();
  EXPECT_THAT(text, HasSubstr("gathered weight"));
  EXPECT_THAT(text, HasSubstr("bf16[2048,2048]"));
  EXPECT_THAT(text, HasSubstr("temp arena"));
}

// The same matmul run 4 times in a loop (lax::fori_loop): the partitioner gathers W inside the
// loop's body, so the gathered 8 MiB live there, in the body's own arena, not the entry's. The
// plan counts that arena on top of the entry's (a dry run counted the entry alone, so a scanned
// step's plan held its parameters and little else).
TEST(PeakBuffersTest, ALoopsBodyArenaIsCounted) {
  const tpu::Pod pod = tpu::make_pod("v5e", {4, 2});
  const Mesh mesh = make_mesh({kChips}, {"data"}, pod.devices());
  const auto rows = std::make_shared<NamedSharding>(mesh, P("data", none));
  auto step = jit(
      [](const Array& x, const Array& w) {
        return lax::fori_loop(0, 4, [&w](const Array&, const Array& h) { return jnp::tanh(jnp::matmul(h, w)); }, x);
      },
      in_shardings{*rows, *rows}, out_shardings{*rows});
  const ShapeDtypeStruct x{.shape = {kRows, kDim}, .dtype = bfloat16, .sharding = rows};
  const ShapeDtypeStruct w{.shape = {kDim, kDim}, .dtype = bfloat16, .sharding = rows};
  const tpu::PodPlan plan = step.lower(x, w).compile().plan();
  const tpu::HbmPeakReport& hbm = plan.hbm;
  EXPECT_GE(hbm.loop_scratch_bytes, kWeightBytes) << plan.ToString();
  EXPECT_LT(hbm.loop_scratch_bytes, 2 * kWeightBytes) << plan.ToString();  // one gathered W, no f32 copy of it
  EXPECT_EQ(hbm.argument_bytes + hbm.output_bytes + hbm.constant_bytes + hbm.temp_arena_bytes +
                hbm.loop_scratch_bytes - hbm.alias_bytes,
            plan.hbm_peak_bytes);
  EXPECT_THAT(plan.ToString(), HasSubstr("loop bodies' scratch"));
}

}  // namespace
}  // namespace jx::peak_buffers_test
