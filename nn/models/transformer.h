// A decoder-only transformer training step built from a config, sharded FSDP x TP over a
// (data, model) mesh: the step a pod is planned for. Llama-style blocks (pre-RMSNorm, causal
// multi-head attention, SwiGLU MLP, no biases), an input embedding and an output projection
// applied as matmuls (the token lookup is one_hot(tokens) @ embed, which shards like any dot;
// a gather would run replicated), a cross-entropy loss in f32 and one SGD update. The layers
// are unrolled (a scan over layers has no sharding rule yet and would run replicated).
// With parallel_blocks, PaLM's parallel attention+MLP blocks instead of serial ones.
// With residual_sharding, the residual stream between blocks is sharded over the model axis
// too (Megatron's sequence parallelism, or the same on d_model).
//
// Parameters are a pytree (TransformerParams); transformer_param_shardings gives each leaf's
// NamedSharding: the FSDP axis ("data") splits every weight's d_model dim and the model axis
// splits heads and d_ff (Megatron's column/row splits), so a dot all-gathers its weight over
// "data" and reduces its partial sums over "model". Activations are pinned to batch over
// "data" between blocks (with_sharding_constraint, as MaxText's logical constraints), and
// with residual_sharding to the sequence or d_model over "model" as well.
//
// Real arrays or abstract ones (ShapeDtypeStructs: nothing allocated) go through the same step:
//
//   auto cfg = nn::models::TransformerConfig::Llama70B();
//   auto pod = jx::tpu::make_pod("v4", {16, 16, 16});
//   auto mesh = jx::make_mesh({256, 16}, {"data", "model"}, pod.devices());
//   auto step = jx::jit(nn::models::TransformerTrainStep{cfg, mesh});
//   jx::tpu::PodPlan plan = step.lower(nn::models::abstract_transformer_params(cfg, mesh),
//                                      nn::models::abstract_transformer_batch(cfg, mesh),
//                                      nn::models::abstract_transformer_batch(cfg, mesh))
//                               .compile().plan();
//   std::cout << plan.ToString() << plan.mfu(cfg.train_flops_per_step());
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "jx/core/array.h"
#include "jx/core/pytree.h"
#include "jx/sharding/mesh.h"
#include "jx/sharding/named_sharding.h"
#include "jx/transforms/checkpoint.h"
#include "jx/transforms/eval_shape.h"
#include "jx/transforms/jit.h"

namespace jx::nn::models {

struct TransformerConfig {
  int64_t num_layers = 2;
  int64_t d_model = 64;
  int64_t num_heads = 4;  // query heads
  // Key and value heads (MaxText's num_kv_heads): unset, one per query head (multi-head
  // attention); 1, multi-query attention (PaLM's); in between, grouped-query attention, each
  // key/value head serving num_heads / num_kv_heads query heads. Must divide num_heads. Key and
  // value heads are split over the model axis when it divides their number, else replicated.
  std::optional<int64_t> num_kv_heads;
  // The width of every query, key and value head (MaxText's head_dim); unset, d_model / num_heads.
  std::optional<int64_t> head_dim;
  int64_t d_ff = 128;
  int64_t vocab_size = 128;
  int64_t seq_len = 16;
  int64_t batch_size = 8;  // global batch (sequences per step)
  DType dtype = bfloat16;  // parameters and activations; the loss is f32
  double learning_rate = 1e-2;
  // Rematerialize each block in the backward pass (jax.checkpoint around a layer, MaxText's
  // remat_policy), as large models train: what remat_policy saves is kept for the backward
  // pass, the rest of the block is recomputed there.
  bool remat = false;
  // JAX's checkpoint policy (lax/checkpoint_policies.h); unset: nothing_saveable (MaxText's
  // "full": only the blocks' inputs are saved). checkpoint_dots / dots_with_no_batch_dims_saveable
  // keep the matmul outputs; save_only_these_names(...) keeps the values the block names with
  // checkpoint_name, MaxText's names: "query_proj", "key_proj", "value_proj", "context" (the
  // attention output before its projection), "out_proj", "mlpwi_0" (gate), "mlpwi_1" (up),
  // "mlpwo" (down). MaxText's "save_qkv_proj" is save_only_these_names("query_proj",
  // "key_proj", "value_proj").
  std::optional<CheckpointPolicy> remat_policy;
  // The attention kernel (MaxText's `attention`): "dot_product" materializes the [T, T] f32
  // logits (jax.nn.dot_product_attention's computation); "flash" runs nn::flash_attention in
  // attention_block x attention_block tiles (causal tiles above the diagonal skipped, the
  // backward pass recomputing tiles from the saved log-sum-exp).
  std::string attention = "dot_product";
  int64_t attention_block = 512;
  std::string data_axis = "data";    // FSDP + batch
  std::string model_axis = "model";  // tensor parallelism (heads, d_ff)
  // The residual stream's dim split over model_axis between blocks, so that what remat saves
  // is 1/model of a layer's input: "none" (replicated over it: plain Megatron tensor
  // parallelism), "sequence" (Megatron's sequence parallelism) or "embed" (d_model: MaxText's
  // activation_embed rule, PaLM's 12-way model axis, which 2048 tokens do not divide). Each
  // sub-block's normalized input is all-gathered before its projections and its output's
  // partial sums are reduce-scattered: an all-gather/reduce-scatter pair where plain tensor
  // parallelism all-reduces. The split dim must divide by the model axis.
  std::string residual_sharding = "none";
  // PaLM's parallel attention+MLP blocks: y = x + Attention(Norm(x)) + Mlp(Norm(x)), one norm
  // (attn_norm; the layers have no mlp_norm) that both sub-blocks read, their input
  // projections fused into one matmul and their output projections into another (d_ff laid
  // out per query head, so d_ff must divide by num_heads). A split residual stream is then
  // gathered once and reduce-scattered once per layer where serial blocks do each twice.
  // checkpoint_name "out_proj" names the fused output projection (the sub-blocks' sum); "mlpwo"
  // names nothing.
  bool parallel_blocks = false;
  // Optional pure data parallelism (HSDP): the batch is split over (replica_axis, data_axis)
  // and the parameters are replicated over replica_axis ("": no such axis). A 9216-chip pod
  // needs it: 9216 = 9 * 1024 and no weight dim of a power-of-two width splits 576 ways.
  std::string replica_axis;

  int64_t kv_heads() const { return num_kv_heads.value_or(num_heads); }
  int64_t head_size() const { return head_dim.value_or(num_heads > 0 ? d_model / num_heads : 0); }
  int64_t tokens_per_step() const { return batch_size * seq_len; }
  // Parameter count (the embedding and output projection included).
  double num_params() const;
  // Useful FLOPs of one training step: 6 * params * tokens (forward 2, backward 4) plus the
  // attention scores and values, 6 * 2 * layers * seq * heads * head_size per token (PaLM's
  // appendix B; causal masking not discounted, as PaLM counts it).
  double train_flops_per_step() const;
  // 80 layers, d_model 8192, 64 heads, d_ff 28672 (SwiGLU), vocab 32000, seq 4096: Llama-2
  // 70B's shape with full multi-head attention (about 78e9 parameters), bf16.
  static TransformerConfig Llama70B(int64_t batch_size = 1024);
  std::string ToString() const;
};

struct TransformerLayer {
  BOOST_HANA_DEFINE_STRUCT(TransformerLayer, (Array, attn_norm),  // [d_model]
                           (Array, wq),                            // [d_model, heads, head_size]
                           (Array, wk), (Array, wv),               // [d_model, kv_heads, head_size]
                           (Array, wo),                            // [heads, head_size, d_model]
                           (std::optional<Array>, mlp_norm),       // [d_model]; none with parallel_blocks
                           (Array, w_gate), (Array, w_up),         // [d_model, d_ff]
                           (Array, w_down));                       // [d_ff, d_model]
};

struct TransformerParams {
  BOOST_HANA_DEFINE_STRUCT(TransformerParams, (Array, embed),  // [vocab, d_model]
                           (std::vector<TransformerLayer>, layers), (Array, final_norm),  // [d_model]
                           (Array, unembed));                                             // [d_model, vocab]
};

// Normal(0, 1/sqrt(fan_in)) weights and unit norms, in cfg.dtype.
TransformerParams init_transformer(const TransformerConfig& cfg, const Array& key);

// tokens int32 [batch, seq] -> logits [batch, seq, vocab] (cfg.dtype). With a mesh, the
// activations are constrained to the batch's sharding between blocks (and to the sequence
// or d_model over the model axis with cfg.residual_sharding).
Array transformer_forward(const TransformerParams& params, const Array& tokens, const TransformerConfig& cfg,
                          const Mesh* mesh = nullptr);
// Mean softmax cross-entropy of the next-token targets (int32 [batch, seq]), in f32.
Array transformer_loss(const TransformerParams& params, const Array& tokens, const Array& targets,
                       const TransformerConfig& cfg, const Mesh* mesh = nullptr);

// Each parameter leaf's sharding, in leaf order (tree::flatten(params)): FSDP over
// cfg.data_axis on d_model, heads and d_ff over cfg.model_axis (key/value heads only when the
// axis divides them), norms replicated.
std::vector<NamedSharding> transformer_param_shardings(const TransformerConfig& cfg, const Mesh& mesh);
// The tokens' and targets' sharding: batch over cfg.data_axis (after cfg.replica_axis).
NamedSharding transformer_batch_sharding(const TransformerConfig& cfg, const Mesh& mesh);
// The parameters placed by transformer_param_shardings.
TransformerParams shard_transformer_params(const TransformerParams& params, const TransformerConfig& cfg,
                                           const Mesh& mesh);
// The parameters' shapes with their shardings: nothing allocated (for lower()).
ShapeDtypeTree abstract_transformer_params(const TransformerConfig& cfg, const Mesh& mesh);
// An int32 [batch, seq] batch sharded by transformer_batch_sharding.
ShapeDtypeStruct abstract_transformer_batch(const TransformerConfig& cfg, const Mesh& mesh);

// One SGD training step: (params, tokens, targets) -> (new params, loss). A callable with a
// fixed signature, so jit's lower() can rebuild TransformerParams from a ShapeDtypeTree.
struct TransformerTrainStep {
  TransformerConfig cfg;
  Mesh mesh;
  std::pair<TransformerParams, Array> operator()(const TransformerParams& params, const Array& tokens,
                                                 const Array& targets) const;
};

}  // namespace jx::nn::models
