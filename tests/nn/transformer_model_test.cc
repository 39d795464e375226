// nn::models' transformer training step: the FSDP x TP sharded step on a simulated 8-chip
// pod computes what the unsharded step computes, and its shardings cover every leaf.
#include <gtest/gtest.h>

#include "jx/jx.h"
#include "jx/nn/models/transformer.h"

namespace jx::nn::models {
namespace {

namespace jnp = jx::numpy;

Array Host(const Array& x) { return device_put(x, DefaultDevice()); }

TransformerConfig Tiny() {
  TransformerConfig c;
  c.num_layers = 2;
  c.d_model = 16;
  c.num_heads = 4;
  c.d_ff = 32;
  c.vocab_size = 24;
  c.seq_len = 8;
  c.batch_size = 8;
  c.dtype = float32;
  c.learning_rate = 0.5;
  return c;
}

TEST(TransformerModelTest, ShardedStepEqualsTheUnshardedStep) {
  const TransformerConfig cfg = Tiny();
  // f32-accurate matmuls on the chips (six bf16 passes), so both runs compute in f32.
  default_matmul_precision highest("highest");
  tpu::Pod pod = tpu::make_pod("v5e", {4, 2});
  Mesh mesh = make_mesh({4, 2}, {"data", "model"}, pod.devices());
  TransformerParams params = init_transformer(cfg, random::key(0));
  Array tokens = random::randint(random::key(1), {cfg.batch_size, cfg.seq_len}, 0, cfg.vocab_size);
  Array targets = jnp::roll(tokens, -1, 1);

  auto [want_params, want_loss] = jit(TransformerTrainStep{cfg, Mesh()})(params, tokens, targets);
  const NamedSharding batch = transformer_batch_sharding(cfg, mesh);
  auto step = jit(TransformerTrainStep{cfg, mesh}, in_shardings{std::nullopt, batch, batch});
  auto [got_params, got_loss] = step(shard_transformer_params(params, cfg, mesh), tokens, targets);

  EXPECT_NEAR(Host(got_loss).item<float>(), want_loss.item<float>(), 1e-4);
  auto [got, def] = tree::flatten(got_params);
  auto [want, want_def] = tree::flatten(want_params);
  ASSERT_EQ(def, want_def);
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_TRUE(jnp::allclose(Host(got[i]), want[i], 1e-4, 1e-4)) << def.KeyPath(i);
  }
  // The weights keep their FSDP x TP layout through the step.
  EXPECT_EQ(got_params.layers[0].wq.sharding()->ToString(), NamedSharding(mesh, P("data", "model", none)).ToString());
}

TEST(TransformerModelTest, AbstractParamsMatchTheRealOnes) {
  const TransformerConfig cfg = Tiny();
  tpu::Pod pod = tpu::make_pod("v5e", {4, 2});
  Mesh mesh = make_mesh({4, 2}, {"data", "model"}, pod.devices());
  ShapeDtypeTree abstract = abstract_transformer_params(cfg, mesh);
  auto [leaves, def] = tree::flatten(init_transformer(cfg, random::key(0)));
  ASSERT_EQ(abstract.def, def);
  double count = 0;
  for (size_t i = 0; i < leaves.size(); ++i) {
    EXPECT_EQ(abstract.leaves[i].shape, leaves[i].shape()) << def.KeyPath(i);
    EXPECT_EQ(abstract.leaves[i].dtype, leaves[i].dtype()) << def.KeyPath(i);
    EXPECT_NE(abstract.leaves[i].sharding, nullptr);
    count += static_cast<double>(leaves[i].size());
  }
  EXPECT_EQ(count, cfg.num_params());
  // Llama-2-70B's shape with full multi-head attention: about 78e9 parameters.
  EXPECT_NEAR(TransformerConfig::Llama70B().num_params(), 7.8e10, 0.1e10);
}

TEST(TransformerModelTest, InvalidConfigIsAValueError) {
  TransformerConfig cfg = Tiny();
  cfg.num_heads = 5;
  EXPECT_THROW(init_transformer(cfg, random::key(0)), ValueError);
}

}  // namespace
}  // namespace jx::nn::models
