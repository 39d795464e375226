// nn::models' transformer training step: the FSDP x TP sharded step on a simulated 8-chip
// pod computes what the unsharded step computes, and its shardings cover every leaf.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <utility>

#include "jx/devices/tpu/all_reduce_tally.h"
#include "jx/devices/tpu/pod_program.h"
#include "jx/jx.h"
#include "jx/lax/checkpoint_policies.h"
#include "jx/nn/models/transformer.h"
#include "jx/sharding/spmd/explain_sharding.h"

namespace jx::nn::models::transformer_model_test {
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
  TransformerConfig cfg = Tiny();
  tpu::Pod pod = tpu::make_pod("v5e", {4, 2});
  Mesh mesh = make_mesh({4, 2}, {"data", "model"}, pod.devices());
  for (const bool parallel : {false, true}) {  // parallel blocks: no mlp_norm
    cfg.parallel_blocks = parallel;
    ShapeDtypeTree abstract = abstract_transformer_params(cfg, mesh);
    auto [leaves, def] = tree::flatten(init_transformer(cfg, random::key(0)));
    ASSERT_EQ(abstract.def, def);
    EXPECT_EQ(transformer_param_shardings(cfg, mesh).size(), leaves.size());
    double count = 0;
    for (size_t i = 0; i < leaves.size(); ++i) {
      EXPECT_EQ(abstract.leaves[i].shape, leaves[i].shape()) << def.KeyPath(i);
      EXPECT_EQ(abstract.leaves[i].dtype, leaves[i].dtype()) << def.KeyPath(i);
      EXPECT_NE(abstract.leaves[i].sharding, nullptr);
      count += static_cast<double>(leaves[i].size());
    }
    EXPECT_EQ(count, cfg.num_params()) << parallel;
  }
  // Llama-2-70B's shape with full multi-head attention: about 78e9 parameters.
  EXPECT_NEAR(TransformerConfig::Llama70B().num_params(), 7.8e10, 0.1e10);
}

TEST(TransformerModelTest, RematComputesTheSameStep) {
  TransformerConfig cfg = Tiny();
  TransformerParams params = init_transformer(cfg, random::key(0));
  Array tokens = random::randint(random::key(1), {cfg.batch_size, cfg.seq_len}, 0, cfg.vocab_size);
  Array targets = jnp::roll(tokens, -1, 1);
  auto [want_params, want_loss] = jit(TransformerTrainStep{cfg, Mesh()})(params, tokens, targets);
  cfg.remat = true;
  auto step = jit(TransformerTrainStep{cfg, Mesh()});
  EXPECT_THAT(step.lower(params, tokens, targets).jaxpr().ToString(), ::testing::HasSubstr("checkpoint"));
  auto [got_params, got_loss] = step(params, tokens, targets);
  EXPECT_NEAR(got_loss.item<float>(), want_loss.item<float>(), 1e-6);
  auto [got, def] = tree::flatten(got_params);
  auto [want, want_def] = tree::flatten(want_params);
  for (size_t i = 0; i < got.size(); ++i) EXPECT_TRUE(jnp::allclose(got[i], want[i], 1e-5, 1e-6)) << def.KeyPath(i);
}

// Every JAX policy MaxText uses computes the same step; the named values are the ones the
// policy keeps (the backward pass reads them instead of recomputing).
TEST(TransformerModelTest, RematPoliciesComputeTheSameStep) {
  TransformerConfig cfg = Tiny();
  TransformerParams params = init_transformer(cfg, random::key(0));
  Array tokens = random::randint(random::key(1), {cfg.batch_size, cfg.seq_len}, 0, cfg.vocab_size);
  Array targets = jnp::roll(tokens, -1, 1);
  auto [want_params, want_loss] = jit(TransformerTrainStep{cfg, Mesh()})(params, tokens, targets);
  auto [want, def] = tree::flatten(want_params);
  cfg.remat = true;
  for (const CheckpointPolicy& policy :
       {policies::checkpoint_dots, policies::dots_with_no_batch_dims_saveable,
        policies::save_only_these_names("query_proj", "key_proj", "value_proj"),
        policies::save_only_these_names("context", "out_proj", "mlpwi_0", "mlpwi_1", "mlpwo")}) {
    cfg.remat_policy = policy;
    auto step = jit(TransformerTrainStep{cfg, Mesh()});
    EXPECT_THAT(step.lower(params, tokens, targets).jaxpr().ToString(), ::testing::HasSubstr(policy.name));
    auto [got_params, got_loss] = step(params, tokens, targets);
    EXPECT_NEAR(got_loss.item<float>(), want_loss.item<float>(), 1e-6) << policy.name;
    auto [got, got_def] = tree::flatten(got_params);
    for (size_t i = 0; i < got.size(); ++i) {
      EXPECT_TRUE(jnp::allclose(got[i], want[i], 1e-5, 1e-6)) << policy.name << " " << def.KeyPath(i);
    }
  }
}

// Flash attention (tiles of 4 over 8 tokens, causal) computes the dot-product step, with and
// without remat, and sharded over 8 chips.
TEST(TransformerModelTest, FlashAttentionComputesTheSameStep) {
  TransformerConfig cfg = Tiny();
  TransformerParams params = init_transformer(cfg, random::key(0));
  Array tokens = random::randint(random::key(1), {cfg.batch_size, cfg.seq_len}, 0, cfg.vocab_size);
  Array targets = jnp::roll(tokens, -1, 1);
  auto [want_params, want_loss] = jit(TransformerTrainStep{cfg, Mesh()})(params, tokens, targets);
  auto [want, def] = tree::flatten(want_params);
  cfg.attention = "flash";
  cfg.attention_block = 4;
  auto check = [&](const std::pair<TransformerParams, Array>& got, const std::string& what) {
    EXPECT_NEAR(Host(got.second).item<float>(), want_loss.item<float>(), 1e-5) << what;
    auto [leaves, got_def] = tree::flatten(got.first);
    for (size_t i = 0; i < leaves.size(); ++i) {
      EXPECT_TRUE(jnp::allclose(Host(leaves[i]), want[i], 1e-4, 1e-4)) << what << " " << def.KeyPath(i);
    }
  };
  check(jit(TransformerTrainStep{cfg, Mesh()})(params, tokens, targets), "flash");
  cfg.remat = true;
  check(jit(TransformerTrainStep{cfg, Mesh()})(params, tokens, targets), "flash + remat");
  // f32-accurate matmuls on the chips, as ShardedStepEqualsTheUnshardedStep.
  default_matmul_precision highest("highest");
  const tpu::Pod pod = tpu::make_pod("v5e", {4, 2});
  const Mesh mesh = make_mesh({4, 2}, {"data", "model"}, pod.devices());
  const NamedSharding batch = transformer_batch_sharding(cfg, mesh);
  auto sharded = jit(TransformerTrainStep{cfg, mesh}, in_shardings{std::nullopt, batch, batch});
  check(sharded(shard_transformer_params(params, cfg, mesh), tokens, targets), "flash + remat on 8 chips");
  cfg.attention = "blockwise";
  EXPECT_THROW(init_transformer(cfg, random::key(0)), ValueError);
}

// On 8 simulated chips, remat lowers the planned HBM peak (the recomputation is not merged
// with the forward pass) and costs compute (it runs the forward part twice).
TEST(TransformerModelTest, RematLowersThePlannedHbmPeak) {
  TransformerConfig cfg = Tiny();
  cfg.num_layers = 4;
  cfg.seq_len = 64;
  cfg.batch_size = 16;
  const tpu::Pod pod = tpu::make_pod("v5e", {4, 2});
  const Mesh mesh = make_mesh({4, 2}, {"data", "model"}, pod.devices());
  auto plan = [&](const TransformerConfig& c) {
    auto step = jit(TransformerTrainStep{c, mesh}, in_shardings{std::nullopt});
    return step.lower(abstract_transformer_params(c, mesh), abstract_transformer_batch(c, mesh),
                      abstract_transformer_batch(c, mesh))
        .compile()
        .plan();
  };
  const tpu::PodPlan plain = plan(cfg);
  cfg.remat = true;
  const tpu::PodPlan remat = plan(cfg);
  EXPECT_LT(remat.hbm_peak_bytes, plain.hbm_peak_bytes);
  EXPECT_GT(remat.flops_per_chip, plain.flops_per_chip);
}

// A residual stream split over 'model' between blocks, on the sequence (Megatron's sequence
// parallelism) or on d_model (PaLM's), with remat and flash attention as PaLM's step: the
// partitioner reduce-scatters the sub-blocks' partial sums over 'model' onto the split dim
// where plain tensor parallelism all-reduces them, and the step on 8 chips computes the
// unsharded step.
TEST(TransformerModelTest, SplitResidualStreamComputesTheUnshardedStep) {
  TransformerConfig cfg = Tiny();
  cfg.remat = true;
  cfg.attention = "flash";
  cfg.attention_block = 4;
  TransformerParams params = init_transformer(cfg, random::key(0));
  Array tokens = random::randint(random::key(1), {cfg.batch_size, cfg.seq_len}, 0, cfg.vocab_size);
  Array targets = jnp::roll(tokens, -1, 1);
  auto [want_params, want_loss] = jit(TransformerTrainStep{cfg, Mesh()})(params, tokens, targets);
  auto [want, def] = tree::flatten(want_params);
  default_matmul_precision highest("highest");
  const tpu::Pod pod = tpu::make_pod("v5e", {4, 2});
  const Mesh mesh = make_mesh({4, 2}, {"data", "model"}, pod.devices());
  const NamedSharding batch = transformer_batch_sharding(cfg, mesh);
  // The partial sums over 'model' the partitioner reduce-scattered onto dim `dim`, and the
  // bytes per chip the compiled step all-reduces.
  auto model_reductions = [&](const TransformerConfig& c, int dim) {
    const auto compiled =
        jit(TransformerTrainStep{c, mesh}, in_shardings{std::nullopt, batch, batch})
            .lower(abstract_transformer_params(c, mesh), abstract_transformer_batch(c, mesh),
                   abstract_transformer_batch(c, mesh))
            .compile();
    int64_t scattered = 0;
    for (const std::string& line : compiled.program().log()) {
      scattered += line.find("over 'model' reduce-scattered onto dim " + std::to_string(dim)) != std::string::npos;
    }
    auto program = std::dynamic_pointer_cast<const tpu::PodProgram>(compiled.program().executable());
    return std::pair{scattered, program->all_reduces().Of("all-reduce").bytes()};
  };
  const auto [tp_scattered, tp_all_reduced_bytes] = model_reductions(cfg, 1);
  EXPECT_EQ(tp_scattered, 0);
  for (const auto& [split, dim] : {std::pair{"sequence", 1}, std::pair{"embed", 2}}) {
    cfg.residual_sharding = split;
    const auto [scattered, all_reduced_bytes] = model_reductions(cfg, dim);
    EXPECT_GT(scattered, 0) << split;
    // Only the norms' statistics (embed) and the replicated weights' gradients are left.
    EXPECT_LT(all_reduced_bytes, tp_all_reduced_bytes / 2) << split;
    auto step = jit(TransformerTrainStep{cfg, mesh}, in_shardings{std::nullopt, batch, batch});
    auto [got_params, got_loss] = step(shard_transformer_params(params, cfg, mesh), tokens, targets);
    EXPECT_NEAR(Host(got_loss).item<float>(), want_loss.item<float>(), 1e-5) << split;
    auto [got, got_def] = tree::flatten(got_params);
    for (size_t i = 0; i < got.size(); ++i) {
      EXPECT_TRUE(jnp::allclose(Host(got[i]), want[i], 1e-4, 1e-4)) << split << " " << def.KeyPath(i);
    }
  }
  cfg.residual_sharding = "hidden";
  EXPECT_THROW(init_transformer(cfg, random::key(0)), ValueError);
}

// With the residual stream split on d_model, the backward pass of each sub-block's reduce-scatter
// all-gathers the cotangent (d_model wide), as Megatron's sequence parallelism does: the output
// projections' weight gradients come out in their parameters' sharding, so the SGD update meets
// no propagation conflict and reshards nothing (no all-to-all), and no activation wider than the
// residual stream (the d_ff-wide MLP activation) is gathered. A sharding constraint on the
// sub-block's output pinned the cotangent split: PaLM's plan gathered 1.12 GiB activations and
// all-to-all'ed the gradients.
TEST(TransformerModelTest, SplitResidualStreamGathersTheCotangentNotTheActivation) {
  TransformerConfig cfg = Tiny();
  cfg.remat = true;
  cfg.residual_sharding = "embed";
  const tpu::Pod pod = tpu::make_pod("v5e", {4, 2});
  const Mesh mesh = make_mesh({4, 2}, {"data", "model"}, pod.devices());
  const NamedSharding batch = transformer_batch_sharding(cfg, mesh);
  auto step = jit(TransformerTrainStep{cfg, mesh}, in_shardings{std::nullopt, batch, batch});
  const ShapeDtypeTree params = abstract_transformer_params(cfg, mesh);
  const ShapeDtypeStruct tokens = abstract_transformer_batch(cfg, mesh);
  const ShardingExplanation why = explain_sharding(step).lower(params, tokens, tokens);
  for (const ConflictExplanation& conflict : why.conflicts()) {
    EXPECT_FALSE(conflict.equation.starts_with("sub ")) << "the update met a conflict: " << conflict.equation << ": "
                                                        << conflict.what;
  }
  const tpu::PodPlan plan = step.lower(params, tokens, tokens).compile().plan();
  // The gathered residual stream per chip: [batch / 4, seq, d_model] f32.
  const int64_t residual_bytes = cfg.batch_size / 4 * cfg.seq_len * cfg.d_model * 4;
  int64_t gathers = 0;
  for (const tpu::CollectiveStepEntry& c : plan.step.collectives) {
    EXPECT_NE(c.kind, "all-to-all") << c.name;
    if (c.kind == "all-gather") {
      ++gathers;
      EXPECT_LE(c.bytes, residual_bytes) << c.name;
    }
  }
  EXPECT_GT(gathers, 0);
}

// Multi-query attention is multi-head attention whose heads share one key and one value head:
// the step equals the multi-head step with those projections repeated over the heads (the
// reference), in loss and gradients (a shared head's gradient sums its heads'), with
// dot-product and flash attention, and sharded over 8 chips (K/V replicated over 'model').
TEST(TransformerModelTest, MultiQueryAttentionSharesOneKeyValueHead) {
  TransformerConfig mqa = Tiny();
  mqa.head_dim = 8;  // 4 heads of 8 on d_model 16, as PaLM's heads are narrower than d_model / heads
  mqa.num_kv_heads = 1;
  TransformerConfig mha = mqa;
  mha.num_kv_heads.reset();
  const TransformerParams params = init_transformer(mqa, random::key(0));
  ASSERT_EQ(params.layers[0].wk.shape(), (Shape{16, 1, 8}));
  TransformerParams repeated = params;
  for (TransformerLayer& l : repeated.layers) {
    l.wk = jnp::repeat(l.wk, mqa.num_heads, 1);
    l.wv = jnp::repeat(l.wv, mqa.num_heads, 1);
  }
  const Array tokens = random::randint(random::key(1), {mqa.batch_size, mqa.seq_len}, 0, mqa.vocab_size);
  const Array targets = jnp::roll(tokens, -1, 1);
  auto loss = [&](const TransformerConfig& cfg) {
    return [&cfg, &tokens, &targets](const TransformerParams& p) { return transformer_loss(p, tokens, targets, cfg); };
  };
  auto [want_loss, want_grads] = value_and_grad(loss(mha))(repeated);
  auto check = [&](const TransformerConfig& cfg, const std::string& what) {
    auto [got_loss, got_grads] = value_and_grad(loss(cfg))(params);
    EXPECT_NEAR(got_loss.item<float>(), want_loss.item<float>(), 1e-5) << what;
    for (size_t i = 0; i < params.layers.size(); ++i) {
      const TransformerLayer &got = got_grads.layers[i], &want = want_grads.layers[i];
      EXPECT_TRUE(jnp::allclose(got.wq, want.wq, 1e-4, 1e-5)) << what;
      EXPECT_TRUE(jnp::allclose(got.wk, jnp::sum(want.wk, 1, /*keepdims=*/true), 1e-4, 1e-5)) << what;
      EXPECT_TRUE(jnp::allclose(got.wv, jnp::sum(want.wv, 1, /*keepdims=*/true), 1e-4, 1e-5)) << what;
      EXPECT_TRUE(jnp::allclose(got.w_down, want.w_down, 1e-4, 1e-5)) << what;
    }
  };
  check(mqa, "dot-product attention");
  TransformerConfig flash = mqa;
  flash.attention = "flash";
  flash.attention_block = 4;
  check(flash, "flash attention");
  EXPECT_EQ(mha.num_params() - mqa.num_params(), 2.0 * 2 * 16 * (4 - 1) * 8);  // layers x (K, V) x d x 3 heads of 8

  default_matmul_precision highest("highest");
  const tpu::Pod pod = tpu::make_pod("v5e", {4, 2});
  const Mesh mesh = make_mesh({4, 2}, {"data", "model"}, pod.devices());
  const NamedSharding batch = transformer_batch_sharding(flash, mesh);
  auto [want_params, want_step_loss] = jit(TransformerTrainStep{flash, Mesh()})(params, tokens, targets);
  auto step = jit(TransformerTrainStep{flash, mesh}, in_shardings{std::nullopt, batch, batch});
  auto [got_params, got_step_loss] = step(shard_transformer_params(params, flash, mesh), tokens, targets);
  EXPECT_EQ(got_params.layers[0].wk.sharding()->ToString(), NamedSharding(mesh, P("data", none, none)).ToString());
  EXPECT_NEAR(Host(got_step_loss).item<float>(), want_step_loss.item<float>(), 1e-5);
  auto [got, def] = tree::flatten(got_params);
  auto [want, want_def] = tree::flatten(want_params);
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_TRUE(jnp::allclose(Host(got[i]), want[i], 1e-4, 1e-4)) << def.KeyPath(i);
  }
}

// PaLM's parallel block by hand: x + Attention(norm(x)) + Mlp(norm(x)) with the serial
// blocks' separate projections (dot-product attention), then the final norm and the output
// projection; the mean next-token cross-entropy in f32.
Array ParallelReferenceLoss(const TransformerParams& p, const Array& tokens, const Array& targets,
                            const TransformerConfig& cfg) {
  auto norm = [](const Array& x, const Array& scale) {
    return x * jnp::rsqrt(jnp::mean(jnp::square(x), -1, /*keepdims=*/true) + 1e-6) * scale;
  };
  const int64_t t = cfg.seq_len, g = cfg.num_heads / cfg.kv_heads();
  const Array causal = jnp::tril(jnp::ones({t, t}, bool_));
  Array x = jnp::einsum("btv,vd->btd", nn::one_hot(tokens, cfg.vocab_size), p.embed);
  for (const TransformerLayer& l : p.layers) {
    const Array n = norm(x, l.attn_norm);
    const Array q = jnp::einsum("btd,dhk->bthk", n, l.wq);
    const Array k = jnp::repeat(jnp::einsum("btd,dhk->bthk", n, l.wk), g, 2);
    const Array v = jnp::repeat(jnp::einsum("btd,dhk->bthk", n, l.wv), g, 2);
    const Array scores = jnp::einsum("bthk,bshk->bhts", q, k) / std::sqrt(static_cast<double>(cfg.head_size()));
    const Array probs = nn::softmax(jnp::where(causal, scores, -1e9f), -1);
    const Array attention = jnp::einsum("bthk,hkd->btd", jnp::einsum("bhts,bshk->bthk", probs, v), l.wo);
    const Array mlp = jnp::einsum("btf,fd->btd",
                                  nn::silu(jnp::einsum("btd,df->btf", n, l.w_gate)) * jnp::einsum("btd,df->btf", n, l.w_up),
                                  l.w_down);
    x = x + attention + mlp;
  }
  const Array logits = jnp::einsum("btd,dv->btv", norm(x, p.final_norm), p.unembed);
  return jnp::mean(nn::softmax_cross_entropy(logits, nn::one_hot(targets, cfg.vocab_size)));
}

// PaLM's parallel attention+MLP blocks (one shared norm, both sub-blocks reading it, their
// outputs summed into the residual; the projections fused) compute the hand-written parallel
// block in loss and gradients, with multi-head, grouped and multi-query attention, dot-product
// and flash attention, and remat; the layers have no mlp_norm.
TEST(TransformerModelTest, ParallelBlocksComputeTheHandWrittenParallelBlock) {
  TransformerConfig cfg = Tiny();
  cfg.parallel_blocks = true;
  const Array tokens = random::randint(random::key(1), {cfg.batch_size, cfg.seq_len}, 0, cfg.vocab_size);
  const Array targets = jnp::roll(tokens, -1, 1);
  auto check = [&](const TransformerConfig& c, const std::string& what) {
    const TransformerParams params = init_transformer(c, random::key(0));
    ASSERT_FALSE(params.layers[0].mlp_norm.has_value()) << what;
    auto [want_loss, want_grads] = value_and_grad([&](const TransformerParams& p) {
      return ParallelReferenceLoss(p, tokens, targets, c);
    })(params);
    auto [got_loss, got_grads] = jit(value_and_grad([&](const TransformerParams& p) {
      return transformer_loss(p, tokens, targets, c);
    }))(params);
    EXPECT_NEAR(got_loss.item<float>(), want_loss.item<float>(), 1e-5) << what;
    auto [got, def] = tree::flatten(got_grads);
    auto [want, want_def] = tree::flatten(want_grads);
    ASSERT_EQ(def, want_def) << what;
    for (size_t i = 0; i < got.size(); ++i) {
      EXPECT_TRUE(jnp::allclose(got[i], want[i], 1e-4, 1e-5)) << what << " " << def.KeyPath(i);
    }
  };
  check(cfg, "multi-head");
  TransformerConfig grouped = cfg;
  grouped.num_kv_heads = 2;
  check(grouped, "grouped-query");
  TransformerConfig mqa = cfg;
  mqa.num_kv_heads = 1;
  mqa.head_dim = 8;
  mqa.attention = "flash";
  mqa.attention_block = 4;
  mqa.remat = true;
  check(mqa, "multi-query, flash, remat");
  mqa.remat_policy = policies::save_only_these_names("query_proj", "out_proj");
  check(mqa, "multi-query, flash, remat saving the fused projections' outputs");
  // One norm per layer fewer than serial blocks.
  EXPECT_EQ(Tiny().num_params() - cfg.num_params(), static_cast<double>(cfg.num_layers * cfg.d_model));
  // Serial blocks' parameters (an mlp_norm per layer) are not parallel blocks' and vice versa.
  EXPECT_THROW(transformer_loss(init_transformer(Tiny(), random::key(0)), tokens, targets, cfg), ValueError);
  EXPECT_THROW(transformer_loss(init_transformer(cfg, random::key(0)), tokens, targets, Tiny()), ValueError);
  cfg.d_ff = 30;  // not laid out per head
  EXPECT_THROW(init_transformer(cfg, random::key(0)), ValueError);
}

// On 8 chips, the parallel-block step with the residual stream replicated over 'model', split
// on the sequence and split on d_model (remat, flash, multi-query attention: PaLM's step)
// computes the unsharded step.
TEST(TransformerModelTest, ParallelBlocksShardedStepEqualsTheUnshardedStep) {
  TransformerConfig cfg = Tiny();
  cfg.parallel_blocks = true;
  cfg.num_kv_heads = 1;
  cfg.remat = true;
  cfg.attention = "flash";
  cfg.attention_block = 4;
  const TransformerParams params = init_transformer(cfg, random::key(0));
  const Array tokens = random::randint(random::key(1), {cfg.batch_size, cfg.seq_len}, 0, cfg.vocab_size);
  const Array targets = jnp::roll(tokens, -1, 1);
  auto [want_params, want_loss] = jit(TransformerTrainStep{cfg, Mesh()})(params, tokens, targets);
  auto [want, def] = tree::flatten(want_params);
  default_matmul_precision highest("highest");
  const tpu::Pod pod = tpu::make_pod("v5e", {4, 2});
  const Mesh mesh = make_mesh({4, 2}, {"data", "model"}, pod.devices());
  const NamedSharding batch = transformer_batch_sharding(cfg, mesh);
  for (const std::string split : {"none", "sequence", "embed"}) {
    cfg.residual_sharding = split;
    auto step = jit(TransformerTrainStep{cfg, mesh}, in_shardings{std::nullopt, batch, batch});
    auto [got_params, got_loss] = step(shard_transformer_params(params, cfg, mesh), tokens, targets);
    EXPECT_NEAR(Host(got_loss).item<float>(), want_loss.item<float>(), 1e-5) << split;
    auto [got, got_def] = tree::flatten(got_params);
    ASSERT_EQ(got_def, def) << split;
    for (size_t i = 0; i < got.size(); ++i) {
      EXPECT_TRUE(jnp::allclose(Host(got[i]), want[i], 1e-4, 1e-4)) << split << " " << def.KeyPath(i);
    }
  }
}

// A split residual stream with parallel blocks is all-gathered once and reduce-scattered once
// per layer and direction (forward: the normalized input, the fused output's partial sums;
// backward: the output's cotangent, the input's cotangent's partial sums), where serial blocks
// do each twice. Counted over 'model' alone (a 1 x 4 mesh: no FSDP collectives) as the
// difference between 3 and 2 layers, with the residual split on d_model and on the sequence.
// (Split on the sequence, the shared key/value head's cotangents are reduce-scattered onto it
// and gathered back too: smaller, not the stream's.)
TEST(TransformerModelTest, ParallelBlocksGatherAndReduceScatterOncePerLayer) {
  const tpu::Pod pod = tpu::make_pod("v5e", {2, 2});
  const Mesh mesh = make_mesh({1, 4}, {"data", "model"}, pod.devices());
  // (all-gathers, reduce-scatters) per layer of the planned step.
  auto per_layer = [&](TransformerConfig cfg) {
    auto count = [&](int64_t layers) {
      cfg.num_layers = layers;
      const ShapeDtypeStruct batch = abstract_transformer_batch(cfg, mesh);
      const NamedSharding batch_sharding = transformer_batch_sharding(cfg, mesh);
      const tpu::PodPlan plan = jit(TransformerTrainStep{cfg, mesh}, in_shardings{std::nullopt, batch_sharding,
                                                                                 batch_sharding})
                                    .lower(abstract_transformer_params(cfg, mesh), batch, batch)
                                    .compile()
                                    .plan();
      // The residual stream's: [batch, seq, d_model] f32 whole, a quarter of it split.
      const int64_t whole = cfg.batch_size * cfg.seq_len * cfg.d_model * 4;
      std::pair<int64_t, int64_t> n{0, 0};
      for (const tpu::CollectiveStepEntry& c : plan.step.collectives) {
        if (c.kind == "all-gather" && c.bytes == whole) n.first += c.runs;
        if (c.kind == "reduce-scatter" && c.bytes == whole / 4) n.second += c.runs;
      }
      return n;
    };
    const auto [gathers2, scatters2] = count(2);
    const auto [gathers3, scatters3] = count(3);
    return std::pair{gathers3 - gathers2, scatters3 - scatters2};
  };
  for (const std::string split : {"embed", "sequence"}) {
    TransformerConfig cfg = Tiny();
    cfg.num_kv_heads = 1;
    cfg.residual_sharding = split;
    EXPECT_EQ(per_layer(cfg), (std::pair<int64_t, int64_t>{4, 4})) << split << " serial";
    cfg.parallel_blocks = true;
    EXPECT_EQ(per_layer(cfg), (std::pair<int64_t, int64_t>{2, 2})) << split << " parallel";
  }
}

TEST(TransformerModelTest, InvalidConfigIsAValueError) {
  TransformerConfig cfg = Tiny();
  cfg.num_heads = 5;
  EXPECT_THROW(init_transformer(cfg, random::key(0)), ValueError);
  cfg = Tiny();
  cfg.num_kv_heads = 3;  // does not divide 4 heads
  EXPECT_THROW(init_transformer(cfg, random::key(0)), ValueError);
  cfg.num_kv_heads = 0;
  EXPECT_THROW(init_transformer(cfg, random::key(0)), ValueError);
}

}  // namespace
}  // namespace jx::nn::models::transformer_model_test
