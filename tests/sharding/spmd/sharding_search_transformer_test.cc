// search_sharding on nn::models' transformer training step (step(params, tokens, targets)) on
// a 4x2 v5e mesh: every strategy plans, the search picks the fastest that fits, and the rule's
// "fsdp x tp" is exactly the model's hand-written FSDP x TP layout (MaxText's).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "jx/jx.h"
#include "jx/nn/models/transformer.h"
#include "jx/sharding/spmd/sharding_search.h"

namespace jx::sharding_search_transformer_test {
namespace {

namespace jnp = jx::numpy;

nn::models::TransformerConfig Small() {
  nn::models::TransformerConfig cfg;
  cfg.num_layers = 1;
  cfg.d_model = 64;
  cfg.num_heads = 4;
  cfg.d_ff = 128;
  cfg.vocab_size = 64;
  cfg.seq_len = 16;
  cfg.batch_size = 16;
  return cfg;
}

struct V5e {
  tpu::Pod pod = tpu::make_pod("v5e", {4, 2});
  Mesh mesh = make_mesh({4, 2}, {"data", "model"}, pod.devices());
};

TEST(ShardingSearchTransformerTest, EveryStrategyPlansTheTransformerStep) {
  const nn::models::TransformerConfig cfg = Small();
  V5e v;
  const Mesh& mesh = v.mesh;
  nn::models::TransformerParams params = nn::models::init_transformer(cfg, random::key(0));
  Array tokens = random::randint(random::key(1), {cfg.batch_size, cfg.seq_len}, 0, cfg.vocab_size);
  SearchOptions options;
  options.batch_argnums = {1, 2};
  ShardingSearch s = search_sharding(nn::models::TransformerTrainStep{cfg, mesh}, mesh, options).lower(params, tokens, tokens);
  for (const StrategyResult& r : s.results()) EXPECT_TRUE(r.error.empty()) << r.name << ": " << r.error;
  ASSERT_TRUE(s.best().has_value());
  for (const StrategyResult& r : s.results()) {
    if (r.fits) {
      EXPECT_LE(s.results()[*s.best()].step_seconds, r.step_seconds) << s.ToString();
    }
  }
  const std::vector<NamedSharding> hand = nn::models::transformer_param_shardings(cfg, mesh);
  const auto fsdp_tp = std::find_if(s.results().begin(), s.results().end(),
                                    [](const StrategyResult& r) { return r.name == "fsdp x tp"; });
  ASSERT_NE(fsdp_tp, s.results().end());
  for (size_t i = 0; i < hand.size(); ++i) {
    EXPECT_EQ(fsdp_tp->leaf_shardings[i].spec().ToString(), hand[i].spec().ToString()) << s.leaf_names()[i];
  }
  EXPECT_EQ(fsdp_tp->leaf_shardings[hand.size()].spec().ToString(),
            nn::models::transformer_batch_sharding(cfg, mesh).spec().ToString());
}

TEST(ShardingSearchTransformerTest, AbstractArgumentsPlanLikeRealOnes) {
  // The parameters as a ShapeDtypeTree and the batch as ShapeDtypeStructs: nothing allocated,
  // the same plans as the real arrays.
  const nn::models::TransformerConfig cfg = Small();
  V5e v;
  const Mesh& mesh = v.mesh;
  SearchOptions options;
  options.batch_argnums = {1, 2};
  options.strategies = {"dp", "fsdp x tp"};
  auto search = search_sharding(nn::models::TransformerTrainStep{cfg, mesh}, mesh, options);
  Array tokens = jnp::zeros({cfg.batch_size, cfg.seq_len}, int32);
  ShardingSearch real = search.lower(nn::models::init_transformer(cfg, random::key(0)), tokens, tokens);
  const ShapeDtypeStruct abstract_tokens{{cfg.batch_size, cfg.seq_len}, int32};
  ShardingSearch abstract = search.lower(nn::models::abstract_transformer_params(cfg, mesh), abstract_tokens,
                                         abstract_tokens);
  ASSERT_EQ(real.results().size(), 2u);
  ASSERT_EQ(abstract.results().size(), 2u);
  EXPECT_EQ(abstract.leaf_names(), real.leaf_names());
  for (size_t k = 0; k < 2; ++k) {
    EXPECT_TRUE(abstract.results()[k].error.empty()) << abstract.results()[k].error;
    EXPECT_EQ(abstract.results()[k].step_seconds, real.results()[k].step_seconds);
    EXPECT_EQ(abstract.results()[k].hbm_peak_bytes, real.results()[k].hbm_peak_bytes);
  }
}

}  // namespace
}  // namespace jx::sharding_search_transformer_test
