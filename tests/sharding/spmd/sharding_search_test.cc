// search_sharding: the standard strategies of an MLP training step on a 4x2 v5e mesh, each
// partitioned, compiled and costed. Small parameters and a big batch: data parallelism is the
// fastest and fits. Big parameters under a small HBM budget: data parallelism does not fit
// and a strategy that shards the parameters wins.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "jx/jx.h"
#include "jx/sharding/spmd/sharding_search.h"

namespace jx::sharding_search_test {
namespace {

namespace jnp = jx::numpy;
using ::testing::HasSubstr;
using Tree = std::map<std::string, Array>;

Tree MlpParams(int64_t d, int64_t h) {
  auto keys = random::split(random::key(0), 2);
  return {{"w1", random::normal(keys[0], {d, h}) * 0.1f},
          {"b1", jnp::zeros({h})},
          {"w2", random::normal(keys[1], {h, d}) * 0.1f},
          {"b2", jnp::zeros({d})}};
}

Tree Batch(int64_t b, int64_t d) { return {{"x", jnp::ones({b, d})}, {"y", jnp::zeros({b, d})}}; }

Array Loss(const Tree& p, const Tree& batch) {
  Array h = jnp::maximum(jnp::matmul(batch.at("x"), p.at("w1")) + p.at("b1"), 0.f);
  Array y = jnp::matmul(h, p.at("w2")) + p.at("b2");
  return jnp::square(y - batch.at("y")).mean();
}

auto Step = [](const Tree& p, const Tree& batch) {
  auto [loss, g] = value_and_grad(Loss)(p, batch);
  Tree next = tree::map([](const Array& w, const Array& gw) { return w - gw * 0.01f; }, p, g);
  return std::pair{next, loss};
};

struct V5e {
  tpu::Pod pod = tpu::make_pod("v5e", {4, 2});
  Mesh mesh = make_mesh({4, 2}, {"data", "model"}, pod.devices());
};

const StrategyResult& Named(const ShardingSearch& s, const std::string& name) {
  for (const StrategyResult& r : s.results()) {
    if (r.name == name) return r;
  }
  throw std::runtime_error("no strategy " + name);
}

TEST(ShardingSearchTest, StrategiesShardLeavesByTheDocumentedRule) {
  V5e v;
  std::vector<spmd::SearchLeaf> leaves = {
      {"argument 0 ['b1']", "['b1']", ShapedArray{{32}, float32}, false},
      {"argument 0 ['w1']", "['w1']", ShapedArray{{16, 32}, float32}, false},
      {"argument 0 ['w2']", "['w2']", ShapedArray{{32, 16}, float32}, false},
      {"argument 0 ['mlp_in']", "['mlp_in']", ShapedArray{{16, 64}, float32}, false},
      {"argument 0 ['mlp_out']", "['mlp_out']", ShapedArray{{64, 16}, float32}, false},
      {"argument 1 ['x']", "['x']", ShapedArray{{8, 4, 16}, float32}, true},
  };
  std::map<std::string, std::vector<DimShardings>> by_name;
  for (const spmd::Strategy& s : spmd::StandardStrategies(v.mesh, leaves)) by_name[s.name] = s.leaf_shardings;
  ASSERT_EQ(by_name.size(), 6u);
  const std::vector<std::string> all = {"data", "model"}, data = {"data"}, model = {"model"};
  // dp: batch over every axis, parameters replicated.
  EXPECT_EQ(by_name["dp"][5], (DimShardings{all, {}, {}}));
  EXPECT_TRUE(by_name["dp"][1].empty());
  // fsdp: a matrix's largest dimension over every axis; vectors replicated.
  EXPECT_EQ(by_name["fsdp"][1], (DimShardings{{}, all}));
  EXPECT_EQ(by_name["fsdp"][2], (DimShardings{all, {}}));
  EXPECT_TRUE(by_name["fsdp"][0].empty());
  // tp: w1 column-parallel, w2 row-parallel (by name); unknown names alternate column, row.
  EXPECT_EQ(by_name["tp"][1], (DimShardings{{}, all}));
  EXPECT_EQ(by_name["tp"][2], (DimShardings{all, {}}));
  EXPECT_EQ(by_name["tp"][3], (DimShardings{{}, all}));
  EXPECT_EQ(by_name["tp"][4], (DimShardings{all, {}}));
  EXPECT_TRUE(by_name["tp"][5].empty());
  // sp: the batch's sequence dimension (4 is not divided by 8: left unsharded).
  EXPECT_TRUE(by_name["sp"][5].empty());
  // fsdp x tp: Megatron over 'model', then the largest free dimension over 'data'.
  EXPECT_EQ(by_name["fsdp x tp"][1], (DimShardings{data, model}));
  EXPECT_EQ(by_name["fsdp x tp"][2], (DimShardings{model, data}));
  EXPECT_EQ(by_name["fsdp x tp"][5], (DimShardings{data, {}, {}}));
  EXPECT_EQ(by_name["dp x tp"][1], (DimShardings{{}, model}));
  EXPECT_EQ(by_name["dp x tp"][5], (DimShardings{data, {}, {}}));
}

TEST(ShardingSearchTest, OneAxisMeshHasNoTwoDimensionalMixes) {
  tpu::Pod pod = tpu::make_pod("v5e", {4, 2});
  Mesh mesh = make_mesh({8}, {"x"}, pod.devices());
  std::vector<spmd::SearchLeaf> leaves = {{"argument 0 ['w1']", "['w1']", ShapedArray{{16, 32}, float32}, false},
                                          {"argument 1", "", ShapedArray{{64, 8, 16}, float32}, true}};
  std::vector<std::string> names;
  for (const spmd::Strategy& s : spmd::StandardStrategies(mesh, leaves)) names.push_back(s.name);
  EXPECT_EQ(names, (std::vector<std::string>{"dp", "fsdp", "tp", "sp"}));
  const spmd::Strategy sp = spmd::StandardStrategies(mesh, leaves)[3];
  EXPECT_EQ(sp.leaf_shardings[1], (DimShardings{{}, {"x"}, {}}));  // the sequence
  EXPECT_TRUE(sp.leaf_shardings[0].empty());
}

TEST(ShardingSearchTest, DataParallelWinsWithSmallParamsAndABigBatch) {
  V5e v;
  ShardingSearch s = search_sharding(Step, v.mesh).lower(MlpParams(64, 128), Batch(8192, 64));
  ASSERT_TRUE(s.best().has_value()) << s.ToString();
  EXPECT_EQ(s.results()[*s.best()].name, "dp") << s.ToString();
  for (const StrategyResult& r : s.results()) {
    EXPECT_TRUE(r.error.empty()) << r.name << ": " << r.error;
    EXPECT_TRUE(r.fits) << s.ToString();
    EXPECT_GT(r.step_seconds, 0);
  }
  // Tensor parallelism replicates the batch: every chip does the whole batch's work.
  EXPECT_GT(Named(s, "tp").compute_seconds, Named(s, "dp").compute_seconds);
  const std::string text = s.ToString();
  EXPECT_THAT(text, HasSubstr("* dp"));
  EXPECT_THAT(text, HasSubstr("best: dp (batch over ('data', 'model'))"));
  EXPECT_THAT(text, HasSubstr("argument 1 ['x']: PartitionSpec(('data', 'model'), None)"));
}

TEST(ShardingSearchTest, ShardedParamsWinWhenDataParallelDoesNotFit) {
  // 8 MiB of weights: data parallelism keeps them, their gradients and the updated weights on
  // every chip (over 32 MiB with the activations); FSDP keeps an eighth of each. Data
  // parallelism is still the fastest (one all-reduce of the gradients), but it does not fit.
  V5e v;
  SearchOptions options;
  options.hbm_bytes = 32 << 20;
  ShardingSearch s = search_sharding(Step, v.mesh, options).lower(MlpParams(1024, 1024), Batch(4096, 1024));
  const StrategyResult& dp = Named(s, "dp");
  for (const StrategyResult& r : s.results()) {
    ASSERT_TRUE(r.error.empty()) << r.name << ": " << r.error;
    EXPECT_LE(dp.step_seconds, r.step_seconds) << s.ToString();
  }
  EXPECT_FALSE(dp.fits) << s.ToString();
  EXPECT_GT(dp.hbm_peak_bytes, 32 << 20);
  ASSERT_TRUE(s.best().has_value()) << s.ToString();
  const StrategyResult& best = s.results()[*s.best()];
  EXPECT_EQ(best.name, "fsdp") << s.ToString();
  EXPECT_LE(best.hbm_peak_bytes, 32 << 20);
  for (const StrategyResult& r : s.results()) {
    if (r.fits) {
      EXPECT_LE(best.step_seconds, r.step_seconds) << s.ToString();
    }
  }
  const std::string text = s.ToString();
  EXPECT_THAT(text, HasSubstr("HBM budget 32.00 MiB per chip"));
  EXPECT_THAT(text, HasSubstr("* fsdp"));
  EXPECT_THAT(text, HasSubstr("argument 0 ['w1']: PartitionSpec(('data', 'model'), None)"));
}

TEST(ShardingSearchTest, BatchArgnumsNameTheBatch) {
  // step(params, x, y): both x and y are the batch.
  V5e v;
  auto step = [](const Tree& p, const Array& x, const Array& y) { return Step(p, Tree{{"x", x}, {"y", y}}); };
  SearchOptions options;
  options.strategies = {"dp"};
  options.batch_argnums = {1, 2};
  ShardingSearch s = search_sharding(step, v.mesh, options).lower(MlpParams(16, 32), jnp::ones({64, 16}), jnp::ones({64, 16}));
  ASSERT_EQ(s.results().size(), 1u);
  EXPECT_THAT(s.ToString(), HasSubstr("argument 1: PartitionSpec(('data', 'model'), None)"));
  EXPECT_THAT(s.ToString(), HasSubstr("argument 2: PartitionSpec(('data', 'model'), None)"));
  options.batch_argnums = {3};
  EXPECT_THROW(search_sharding(step, v.mesh, options).lower(MlpParams(16, 32), jnp::ones({64, 16}), jnp::ones({64, 16})),
               ValueError);
}

TEST(ShardingSearchTest, UnknownStrategyNamesTheStrategies) {
  V5e v;
  SearchOptions options;
  options.strategies = {"zero3"};
  try {
    search_sharding(Step, v.mesh, options).lower(MlpParams(16, 32), Batch(64, 16));
    FAIL() << "expected ValueError";
  } catch (const ValueError& e) {
    EXPECT_THAT(e.what(), HasSubstr("no strategy 'zero3'"));
    EXPECT_THAT(e.what(), HasSubstr("'fsdp x tp'"));
  }
}

}  // namespace
}  // namespace jx::sharding_search_test
