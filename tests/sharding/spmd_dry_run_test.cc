// Dry runs of a sharded step (jit(f, shardings).lower(ShapeDtypeStructs).compile().plan()):
// lowering from abstract arguments gives the program real arguments give, the plan predicts
// the step time and memory a real run on the same 8-chip pod reports, and a plan that does not
// fit HBM says so without allocating anything.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "jx/jx.h"
#include "jx/nn/models/transformer.h"
#include "tests/scoped_env.h"

namespace jx::spmd_dry_run_test {
namespace {

using nn::models::TransformerConfig;
using nn::models::TransformerTrainStep;
using ::testing::HasSubstr;
namespace jnp = jx::numpy;

TransformerConfig Small() {
  TransformerConfig c;
  c.num_layers = 2;
  c.d_model = 64;
  c.num_heads = 4;
  c.d_ff = 128;
  c.vocab_size = 64;
  c.seq_len = 16;
  c.batch_size = 8;
  return c;
}

TEST(SpmdDryRunTest, AbstractArgumentsLowerToTheProgramRealOnesDo) {
  const TransformerConfig cfg = Small();
  tpu::Pod pod = tpu::make_pod("v5e", {4, 2});
  Mesh mesh = make_mesh({4, 2}, {"data", "model"}, pod.devices());
  const NamedSharding batch = nn::models::transformer_batch_sharding(cfg, mesh);
  auto step = jit(TransformerTrainStep{cfg, mesh}, in_shardings{std::nullopt, batch, batch});
  auto params = nn::models::shard_transformer_params(nn::models::init_transformer(cfg, random::key(0)), cfg, mesh);
  Array tokens = jnp::zeros({cfg.batch_size, cfg.seq_len}, int32);
  const std::string real = step.lower(params, tokens, tokens).as_text();
  const ShapeDtypeStruct abstract_batch{{cfg.batch_size, cfg.seq_len}, int32};
  const std::string abstract =
      step.lower(nn::models::abstract_transformer_params(cfg, mesh), abstract_batch, abstract_batch).as_text();
  EXPECT_EQ(abstract, real);
  EXPECT_THAT(abstract, HasSubstr("all_gather"));  // FSDP: weights gathered over 'data'
}

TEST(SpmdDryRunTest, PlanPredictsTheStepARealRunReports) {
  const TransformerConfig cfg = Small();
  tpu::Pod pod = tpu::make_pod("v5e", {4, 2});
  Mesh mesh = make_mesh({4, 2}, {"data", "model"}, pod.devices());
  const NamedSharding batch = nn::models::transformer_batch_sharding(cfg, mesh);
  auto step = jit(TransformerTrainStep{cfg, mesh}, in_shardings{std::nullopt, batch, batch});

  const tpu::PodPlan plan = step.lower(nn::models::abstract_transformer_params(cfg, mesh),
                                       nn::models::abstract_transformer_batch(cfg, mesh),
                                       nn::models::abstract_transformer_batch(cfg, mesh))
                                .compile()
                                .plan();
  auto params = nn::models::shard_transformer_params(nn::models::init_transformer(cfg, random::key(0)), cfg, mesh);
  Array tokens = random::randint(random::key(1), {cfg.batch_size, cfg.seq_len}, 0, cfg.vocab_size);
  step(params, tokens, tokens);
  const tpu::StepReport real = pod.last_step();
  const MemoryAnalysis memory = step.lower(params, tokens, tokens).compile().program().executable()->memory_analysis();

  EXPECT_EQ(plan.num_chips, 8);
  EXPECT_GT(plan.step.wall_seconds, 0);
  EXPECT_NEAR(plan.step.wall_seconds, real.wall_seconds, 1e-12 * real.wall_seconds);
  ASSERT_EQ(plan.step.chips.size(), real.chips.size());
  for (size_t p = 0; p < real.chips.size(); ++p) {
    const tpu::ChipStepReport& want = real.chips[p];
    const tpu::ChipStepReport& got = plan.step.chips[p];
    EXPECT_EQ(got.chip, want.chip);
    EXPECT_NEAR(got.compute_seconds, want.compute_seconds, 1e-12);
    EXPECT_NEAR(got.communication_seconds, want.communication_seconds, 1e-12);
    EXPECT_NEAR(got.idle_seconds, want.idle_seconds, 1e-12);
  }
  EXPECT_EQ(plan.step.total_link_bytes(), real.total_link_bytes());
  EXPECT_EQ(plan.hbm_peak_bytes, memory.peak_memory_in_bytes);
  EXPECT_TRUE(plan.fits());
  EXPECT_EQ(plan.num_timeline_classes, 1);  // every chip runs the same timeline
  EXPECT_FALSE(plan.step.collectives.empty());
  EXPECT_GT(plan.flops_utilization(), 0);
  EXPECT_LT(plan.flops_utilization(), 1);
  EXPECT_GT(plan.mfu(cfg.train_flops_per_step()), 0);
  const std::string text = plan.ToString();
  EXPECT_THAT(text, HasSubstr("8 chips"));
  EXPECT_THAT(text, HasSubstr(": fits"));
}

// A dry run verifies the TPU pipeline's input and output; jax_enable_checks verifies after
// every pass that changed the module, as a compile does. Either way the plan is the same (here
// for the README's configuration: remat and flash attention, on 8 chips).
TEST(SpmdDryRunTest, PerPassVerificationUnderEnableChecksPlansTheSameStep) {
  TransformerConfig cfg = Small();
  cfg.remat = true;
  cfg.attention = "flash";
  cfg.attention_block = 8;
  tpu::Pod pod = tpu::make_pod("v5e", {4, 2});
  Mesh mesh = make_mesh({4, 2}, {"data", "model"}, pod.devices());
  auto plan = [&] {
    auto step = jit(TransformerTrainStep{cfg, mesh}, in_shardings{std::nullopt});
    return step
        .lower(nn::models::abstract_transformer_params(cfg, mesh), nn::models::abstract_transformer_batch(cfg, mesh),
               nn::models::abstract_transformer_batch(cfg, mesh))
        .compile()
        .plan();
  };
  const tpu::PodPlan fast = plan();
  tpu::PodPlan checked;
  {
    testing::ScopedEnv checks("JX_ENABLE_CHECKS", "1");
    ASSERT_TRUE(config::read("jax_enable_checks"));
    checked = plan();
  }
  EXPECT_GT(fast.step.wall_seconds, 0);
  EXPECT_EQ(checked.step.wall_seconds, fast.step.wall_seconds);
  EXPECT_EQ(checked.hbm_peak_bytes, fast.hbm_peak_bytes);
  EXPECT_EQ(checked.flops_per_chip, fast.flops_per_chip);
  EXPECT_EQ(checked.step.collectives.size(), fast.step.collectives.size());
  EXPECT_EQ(checked.step.total_link_bytes(), fast.step.total_link_bytes());
}

TEST(SpmdDryRunTest, APlanThatDoesNotFitSaysSoWithoutAllocating) {
  // 8 layers of d_model 4096: ~2.2e9 parameters in f32 (9 GB per chip after an 8-way split
  // of most weights, plus gradients and activations) on 16 GB v5e chips.
  TransformerConfig cfg = Small();
  cfg.num_layers = 8;
  cfg.d_model = 4096;
  cfg.num_heads = 32;
  cfg.d_ff = 16384;
  cfg.vocab_size = 32000;
  cfg.seq_len = 2048;
  cfg.batch_size = 16;
  cfg.dtype = float32;
  tpu::Pod pod = tpu::make_pod("v5e", {4, 2});
  Mesh mesh = make_mesh({4, 2}, {"data", "model"}, pod.devices());
  auto step = jit(TransformerTrainStep{cfg, mesh}, in_shardings{std::nullopt});
  const tpu::PodPlan plan = step.lower(nn::models::abstract_transformer_params(cfg, mesh),
                                       nn::models::abstract_transformer_batch(cfg, mesh),
                                       nn::models::abstract_transformer_batch(cfg, mesh))
                                .compile()
                                .plan();
  EXPECT_FALSE(plan.fits());
  EXPECT_GT(plan.hbm_peak_bytes, plan.hbm_capacity_bytes);
  EXPECT_THAT(plan.ToString(), HasSubstr("DOES NOT FIT"));
  for (const Device* chip : pod.devices()) EXPECT_EQ(chip->memory_stats().peak_bytes_in_use, 0);
}

TEST(SpmdDryRunTest, AShapeDtypeStructWithAnotherShardingIsATypeError) {
  tpu::Pod pod = tpu::make_pod("v5e", {2, 2});
  Mesh mesh = make_mesh({4}, {"x"}, pod.devices());
  auto f = jit([](const Array& x) { return x * 2.f; }, out_shardings{NamedSharding(mesh, P())});
  ShapeDtypeStruct x{{8}, float32};
  x.sharding = std::make_shared<SingleDeviceSharding>(pod.devices()[0]);
  EXPECT_THROW(f.lower(x), TypeError);
}

}  // namespace
}  // namespace jx::spmd_dry_run_test
