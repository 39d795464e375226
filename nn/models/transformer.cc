#include "jx/nn/models/transformer.h"

#include <cmath>

#include "absl/strings/str_format.h"
#include "jx/core/errors.h"
#include "jx/core/str_util.h"
#include "jx/lax/numpy/numpy.h"
#include "jx/lax/random/random.h"
#include "jx/lax/convert_ops.h"
#include "jx/lax/shape_ops.h"
#include "jx/nn/flash_attention.h"
#include "jx/nn/functions.h"
#include "jx/nn/losses.h"
#include "jx/devices/device_put.h"
#include "jx/sharding/sharded_put.h"
#include "jx/sharding/spmd/sharding_constraint.h"
#include "jx/transforms/api.h"
#include "jx/lax/checkpoint_policies.h"
#include "jx/transforms/checkpoint.h"
#include "jx/transforms/custom_derivatives.h"

namespace jx::nn::models {
namespace jnp = jx::numpy;
namespace {

// RMSNorm in f32 (as Llama's), scaled and cast back to x's dtype.
Array RmsNorm(const Array& x, const Array& scale) {
  const Array x32 = lax::convert_element_type(x, float32);
  const Array ms = jnp::mean(jnp::square(x32), -1, /*keepdims=*/true);
  return lax::convert_element_type(x32 * jnp::rsqrt(ms + 1e-6), x.dtype()) * scale;
}

// The batch dim's mesh axes: (replica, data) or data.
DimSpec BatchAxes(const TransformerConfig& cfg) {
  return cfg.replica_axis.empty() ? DimSpec(cfg.data_axis) : DimSpec({cfg.replica_axis, cfg.data_axis});
}

Array Constrain(const Array& x, const Mesh* mesh, const PartitionSpec& spec) {
  return mesh == nullptr ? x : lax::with_sharding_constraint(x, NamedSharding(*mesh, spec));
}

// A split residual stream's gather before a sub-block's projections, as Megatron's sequence
// parallelism writes it: forward, all-gathered whole over the model axis; backward, the
// cotangent's partial sums reduce-scattered back onto the split. A sharding constraint alone
// would pin the cotangent whole as well (its transpose is itself): an all-reduce there.
Array GatherForProjections(const Array& x, const Mesh& mesh, const PartitionSpec& whole, const PartitionSpec& split) {
  const NamedSharding gathered(mesh, whole), scattered(mesh, split);
  auto gather = custom_vjp(
      [gathered](const Array& v) { return lax::with_sharding_constraint(v, gathered); },
      [gathered](const Array& v) { return std::pair{lax::with_sharding_constraint(v, gathered), std::tuple<>{}}; },
      [scattered](const std::tuple<>&, const Array& ct) {
        return std::tuple{lax::with_sharding_constraint(ct, scattered)};
      });
  return gather(x);
}

// The other end of a sub-block on a split residual stream: forward, the projection's partial
// sums over the model axis are reduce-scattered onto the split; backward, the cotangent is
// all-gathered whole over the model axis, as Megatron's sequence parallelism does. A sharding
// constraint alone would pin the cotangent split as well (its transpose is itself): the output
// projection's weight gradient would then meet a cotangent split on d_model and an activation
// split on heads or d_ff over the same axis, and gather the activation (d_ff wide) instead of
// the cotangent (d_model wide), then reshard the gradient with an all-to-all for the update.
Array ScatterFromProjections(const Array& x, const Mesh& mesh, const PartitionSpec& whole,
                             const PartitionSpec& split) {
  const NamedSharding gathered(mesh, whole), scattered(mesh, split);
  auto scatter = custom_vjp(
      [scattered](const Array& v) { return lax::with_sharding_constraint(v, scattered); },
      [scattered](const Array& v) { return std::pair{lax::with_sharding_constraint(v, scattered), std::tuple<>{}}; },
      [gathered](const std::tuple<>&, const Array& ct) {
        return std::tuple{lax::with_sharding_constraint(ct, gathered)};
      });
  return scatter(x);
}

// Causal attention of q [B, T, H, K] over k, v [B, T, KV, K] -> [B, T, H, K]: heads stay a
// dim of their own (no reshape), so the model axis splits them like any dim.
Array AttendCausally(const Array& q, Array k, Array v, const TransformerConfig& cfg) {
  if (cfg.attention == "flash") {
    return checkpoint_name(
        nn::flash_attention(q, k, v, {.is_causal = true, .block_q = cfg.attention_block, .block_kv = cfg.attention_block}),
        "context");
  }
  // Grouped heads: query head n reads key/value head n / G, as flash_attention's grouping.
  if (cfg.kv_heads() != cfg.num_heads) {
    k = jnp::repeat(k, cfg.num_heads / cfg.kv_heads(), 2);
    v = jnp::repeat(v, cfg.num_heads / cfg.kv_heads(), 2);
  }
  const int64_t t = q.shape()[1];
  Array scores = lax::convert_element_type(jnp::einsum("bthk,bshk->bhts", q, k), float32) *
                 (1.0 / std::sqrt(static_cast<double>(cfg.head_size())));
  const Array causal = lax::broadcasted_iota(int32, {t, t}, 0) >= lax::broadcasted_iota(int32, {t, t}, 1);
  scores = jnp::where(causal, scores, -1e9f);
  const Array probs = lax::convert_element_type(nn::softmax(scores, -1), q.dtype());
  return checkpoint_name(jnp::einsum("bhts,bshk->bthk", probs, v), "context");
}

// Causal multi-head attention on x [B, T, D].
Array Attention(const TransformerLayer& l, const Array& x, const TransformerConfig& cfg) {
  const Array q = checkpoint_name(jnp::einsum("btd,dhk->bthk", x, l.wq), "query_proj");
  const Array k = checkpoint_name(jnp::einsum("btd,dhk->bthk", x, l.wk), "key_proj");
  const Array v = checkpoint_name(jnp::einsum("btd,dhk->bthk", x, l.wv), "value_proj");
  return checkpoint_name(jnp::einsum("bthk,hkd->btd", AttendCausally(q, k, v, cfg), l.wo), "out_proj");
}

Array Mlp(const TransformerLayer& l, const Array& x) {
  const Array gate = nn::silu(checkpoint_name(jnp::einsum("btd,df->btf", x, l.w_gate), "mlpwi_0"));
  const Array up = checkpoint_name(jnp::einsum("btd,df->btf", x, l.w_up), "mlpwi_1");
  return checkpoint_name(jnp::einsum("btf,fd->btd", gate * up, l.w_down), "mlpwo");
}

// PaLM's parallel block's two sub-blocks on the one normalized input x [B, T, D], their outputs
// summed: Attention(x) + Mlp(x) as two fused matmuls (PaLM's, and flaxformer's parallel fused
// layer). d_ff is laid out per query head ([H, d_ff / H]), so the query, gate and up
// projections are one dot producing [B, T, H, K + 2 d_ff / H] (with the key and value ones too
// when each query head has its own), and the attention output and the MLP activation are one
// [B, T, H, K + d_ff / H] operand of one dot against [wo; w_down]. Heads carry the model axis
// through both, so the block contracts over it once: one reduction of partial sums per block
// where the two sub-blocks' separate projections would reduce twice, and in the backward pass
// the input's cotangent likewise. Key and value heads shared by several query heads (MQA, GQA)
// keep their own projections.
Array ParallelAttentionMlp(const TransformerLayer& l, const Array& x, const TransformerConfig& cfg) {
  const int64_t d = cfg.d_model, h = cfg.num_heads, hd = cfg.head_size(), fh = cfg.d_ff / cfg.num_heads;
  const bool fuse_kv = cfg.kv_heads() == cfg.num_heads;
  auto per_head = [&](const Array& w) { return jnp::reshape(w, {d, h, fh}); };  // [d, d_ff] -> [d, H, d_ff / H]
  std::vector<Array> w_in{l.wq};
  if (fuse_kv) w_in.insert(w_in.end(), {l.wk, l.wv});
  w_in.insert(w_in.end(), {per_head(l.w_gate), per_head(l.w_up)});
  std::vector<int64_t> bounds{hd};
  if (fuse_kv) bounds.insert(bounds.end(), {2 * hd, 3 * hd});
  bounds.push_back(bounds.back() + fh);
  const std::vector<Array> in =
      jnp::split(jnp::einsum("btd,dhc->bthc", x, jnp::concatenate(w_in, 2)), bounds, 3);
  const Array q = checkpoint_name(in[0], "query_proj");
  const Array k = checkpoint_name(fuse_kv ? in[1] : jnp::einsum("btd,dhk->bthk", x, l.wk), "key_proj");
  const Array v = checkpoint_name(fuse_kv ? in[2] : jnp::einsum("btd,dhk->bthk", x, l.wv), "value_proj");
  const Array gate = nn::silu(checkpoint_name(in[in.size() - 2], "mlpwi_0"));
  const Array up = checkpoint_name(in[in.size() - 1], "mlpwi_1");
  const Array out_in = jnp::concatenate({AttendCausally(q, k, v, cfg), gate * up}, 3);
  const Array w_out = jnp::concatenate({l.wo, jnp::reshape(l.w_down, {h, fh, d})}, 1);
  return checkpoint_name(jnp::einsum("bthc,hcd->btd", out_in, w_out), "out_proj");
}

void CheckConfig(const TransformerConfig& cfg) {
  if (cfg.num_layers < 1 || cfg.d_model < 1 || cfg.num_heads < 1 || cfg.d_ff < 1 || cfg.vocab_size < 1 ||
      cfg.seq_len < 1 || cfg.batch_size < 1 || (!cfg.head_dim && cfg.d_model % cfg.num_heads != 0) ||
      cfg.head_size() < 1 || cfg.kv_heads() < 1 || cfg.num_heads % cfg.kv_heads() != 0 || cfg.attention_block < 1 ||
      (cfg.attention != "dot_product" && cfg.attention != "flash") ||
      (cfg.residual_sharding != "none" && cfg.residual_sharding != "sequence" && cfg.residual_sharding != "embed") ||
      (cfg.parallel_blocks && cfg.d_ff % cfg.num_heads != 0)) {
    throw ValueError(StrCat("transformer: invalid config ", cfg.ToString(),
                            " (every size positive, d_model a multiple of num_heads unless head_dim is given, "
                            "num_kv_heads dividing num_heads, attention \"dot_product\" or \"flash\", "
                            "residual_sharding \"none\", \"sequence\" or \"embed\", d_ff a multiple of num_heads "
                            "with parallel_blocks)"));
  }
}

}  // namespace

double TransformerConfig::num_params() const {
  const double d = static_cast<double>(d_model);
  const double q = static_cast<double>(num_heads * head_size()), kv = static_cast<double>(kv_heads() * head_size());
  const double norms = parallel_blocks ? d : 2 * d;
  const double per_layer = 2 * d * q + 2 * d * kv + 3 * d * static_cast<double>(d_ff) + norms;
  return static_cast<double>(num_layers) * per_layer + 2 * static_cast<double>(vocab_size) * d + d;
}

double TransformerConfig::train_flops_per_step() const {
  const double attention = 12.0 * static_cast<double>(num_layers) * static_cast<double>(seq_len) *
                           static_cast<double>(num_heads * head_size());
  return (6.0 * num_params() + attention) * static_cast<double>(tokens_per_step());
}

TransformerConfig TransformerConfig::Llama70B(int64_t batch_size) {
  TransformerConfig c;
  c.num_layers = 80;
  c.d_model = 8192;
  c.num_heads = 64;
  c.d_ff = 28672;
  c.vocab_size = 32000;
  c.seq_len = 4096;
  c.batch_size = batch_size;
  c.dtype = bfloat16;
  return c;
}

std::string TransformerConfig::ToString() const {
  return absl::StrFormat(
      "transformer(layers=%d, d_model=%d, heads=%d (kv %d, size %d), d_ff=%d, vocab=%d, seq=%d, batch=%d, %s, %.3g "
      "params, %s%s%s%s)",
      num_layers, d_model, num_heads, kv_heads(), head_size(), d_ff, vocab_size, seq_len, batch_size, dtype_name(dtype), num_params(),
      attention == "flash" ? absl::StrFormat("flash attention (blocks of %d)", attention_block) : attention + " attention",
      parallel_blocks ? ", parallel attention+MLP blocks" : "",
      remat ? ", remat " + (remat_policy ? remat_policy->name : policies::nothing_saveable.name) : std::string(),
      residual_sharding != "none" ? ", residual stream split on " + residual_sharding : std::string());
}

TransformerParams init_transformer(const TransformerConfig& cfg, const Array& key) {
  CheckConfig(cfg);
  const Array keys = random::split(key, cfg.num_layers + 2);
  auto weight = [&](const Array& k, const Shape& shape, int64_t fan_in) {
    return (random::normal(k, shape) * (1.0 / std::sqrt(static_cast<double>(fan_in)))).astype(cfg.dtype);
  };
  const int64_t d = cfg.d_model, h = cfg.num_heads, kv = cfg.kv_heads(), hd = cfg.head_size(), f = cfg.d_ff,
                v = cfg.vocab_size;
  TransformerParams p;
  p.embed = weight(keys[0], {v, d}, 1);
  p.unembed = weight(keys[1], {d, v}, d);
  p.final_norm = jnp::ones({d}, cfg.dtype);
  for (int64_t i = 0; i < cfg.num_layers; ++i) {
    const Array k = random::split(keys[2 + i], 7);
    TransformerLayer l;
    l.attn_norm = jnp::ones({d}, cfg.dtype);
    l.wq = weight(k[0], {d, h, hd}, d);
    l.wk = weight(k[1], {d, kv, hd}, d);
    l.wv = weight(k[2], {d, kv, hd}, d);
    l.wo = weight(k[3], {h, hd, d}, h * hd);
    if (!cfg.parallel_blocks) l.mlp_norm = jnp::ones({d}, cfg.dtype);
    l.w_gate = weight(k[4], {d, f}, d);
    l.w_up = weight(k[5], {d, f}, d);
    l.w_down = weight(k[6], {f, d}, f);
    p.layers.push_back(std::move(l));
  }
  return p;
}

Array transformer_forward(const TransformerParams& params, const Array& tokens, const TransformerConfig& cfg,
                          const Mesh* mesh) {
  CheckConfig(cfg);
  // The residual stream between blocks: batch over the data axes, and the sequence or d_model
  // over the model axis when cfg.residual_sharding says so.
  const bool split = mesh != nullptr && cfg.residual_sharding != "none";
  const PartitionSpec batch_only = mesh != nullptr ? P(BatchAxes(cfg), none, none) : P();
  const PartitionSpec residual = !split                              ? batch_only
                                 : cfg.residual_sharding == "sequence" ? P(BatchAxes(cfg), cfg.model_axis, none)
                                                                       : P(BatchAxes(cfg), none, cfg.model_axis);
  // A split residual stream pins both ends of each sub-block: its normalized input is gathered
  // whole for the projections (heads and d_ff keep the model axis) and its output's partial
  // sums over the model axis are reduce-scattered onto the split dim; the backward pass does
  // the same the other way round. Unsplit, the sub-blocks are left to propagation.
  auto gather = [&](const Array& v) { return split ? GatherForProjections(v, *mesh, batch_only, residual) : v; };
  auto scatter = [&](const Array& v) { return split ? ScatterFromProjections(v, *mesh, batch_only, residual) : v; };
  const Array one_hot = nn::one_hot(tokens, cfg.vocab_size, cfg.dtype);
  // The embedding's partial sums over the model axis (it splits the vocabulary) are all-reduced
  // onto the batch split alone: the table's d_model is split over the data axis (FSDP), so a
  // reduce-scatter onto d_model would reshard the table. The residual's split is then a slice.
  Array x = scatter(Constrain(jnp::einsum("btv,vd->btd", one_hot, params.embed), mesh, batch_only));
  for (size_t i = 0; i < params.layers.size(); ++i) {
    if (params.layers[i].mlp_norm.has_value() == cfg.parallel_blocks) {
      throw ValueError(StrCat("transformer: layers[", i, "] ", cfg.parallel_blocks ? "has" : "lacks",
                              " an mlp_norm, but the config asks for ",
                              cfg.parallel_blocks ? "parallel blocks (one norm per layer)" : "serial blocks"));
    }
  }
  auto block = [&](const TransformerLayer& l, const Array& x0) {
    if (cfg.parallel_blocks) {
      return Constrain(x0 + scatter(ParallelAttentionMlp(l, gather(RmsNorm(x0, l.attn_norm)), cfg)), mesh, residual);
    }
    const Array h = x0 + scatter(Attention(l, gather(RmsNorm(x0, l.attn_norm)), cfg));
    return Constrain(h + scatter(Mlp(l, gather(RmsNorm(h, *l.mlp_norm)))), mesh, residual);
  };
  if (cfg.remat) {
    auto remat_block = checkpoint(block, cfg.remat_policy.value_or(policies::nothing_saveable));
    for (const TransformerLayer& l : params.layers) x = remat_block(l, x);
  } else {
    for (const TransformerLayer& l : params.layers) x = block(l, x);
  }
  return jnp::einsum("btd,dv->btv", gather(RmsNorm(x, params.final_norm)), params.unembed);
}

Array transformer_loss(const TransformerParams& params, const Array& tokens, const Array& targets,
                       const TransformerConfig& cfg, const Mesh* mesh) {
  const Array logits = lax::convert_element_type(transformer_forward(params, tokens, cfg, mesh), float32);
  return jnp::mean(nn::softmax_cross_entropy(logits, nn::one_hot(targets, cfg.vocab_size)));
}

std::vector<NamedSharding> transformer_param_shardings(const TransformerConfig& cfg, const Mesh& mesh) {
  const std::string& dp = cfg.data_axis;
  const std::string& tp = cfg.model_axis;
  const NamedSharding replicated(mesh, P()), q(mesh, P(dp, tp, none)), out(mesh, P(tp, none, dp)),
      up(mesh, P(dp, tp)), down(mesh, P(tp, dp)), embed(mesh, P(tp, dp)), unembed(mesh, P(dp, tp));
  // Fewer key/value heads than the model axis has chips (multi-query attention): each chip
  // computes them all, as PaLM's and MaxText's tensor parallelism do.
  const NamedSharding kv =
      cfg.kv_heads() % mesh.axis_size(tp) == 0 ? q : NamedSharding(mesh, P(dp, none, none));
  // Leaf order of TransformerParams: embed, layers (in TransformerLayer's field order),
  // final_norm, unembed.
  std::vector<NamedSharding> s{embed};
  for (int64_t i = 0; i < cfg.num_layers; ++i) {
    s.insert(s.end(), {replicated, q, kv, kv, out});
    if (!cfg.parallel_blocks) s.push_back(replicated);  // mlp_norm
    s.insert(s.end(), {up, up, down});
  }
  s.push_back(replicated);
  s.push_back(unembed);
  return s;
}

NamedSharding transformer_batch_sharding(const TransformerConfig& cfg, const Mesh& mesh) {
  return NamedSharding(mesh, P(BatchAxes(cfg), none));
}

TransformerParams shard_transformer_params(const TransformerParams& params, const TransformerConfig& cfg,
                                           const Mesh& mesh) {
  auto [leaves, def] = tree::flatten(params);
  const std::vector<NamedSharding> shardings = transformer_param_shardings(cfg, mesh);
  if (leaves.size() != shardings.size()) {
    throw ValueError(StrCat("shard_transformer_params: the params have ", leaves.size(), " leaves; the config (",
                            cfg.ToString(), ") gives ", shardings.size()));
  }
  std::vector<Array> placed;
  for (size_t i = 0; i < leaves.size(); ++i) placed.push_back(device_put(leaves[i], shardings[i]));
  return tree::unflatten<TransformerParams>(def, placed);
}

ShapeDtypeTree abstract_transformer_params(const TransformerConfig& cfg, const Mesh& mesh) {
  CheckConfig(cfg);
  // The structure from a one-layer-sized skeleton of scalars: nothing of the model's size.
  TransformerParams skeleton;
  const Array s = jnp::zeros({}, cfg.dtype);
  skeleton.embed = skeleton.final_norm = skeleton.unembed = s;
  TransformerLayer layer{s, s, s, s, s, s, s, s, s};
  if (cfg.parallel_blocks) layer.mlp_norm.reset();
  skeleton.layers.assign(static_cast<size_t>(cfg.num_layers), layer);
  auto [leaves, def] = tree::flatten(skeleton);
  const int64_t d = cfg.d_model, h = cfg.num_heads, kv = cfg.kv_heads(), hd = cfg.head_size(), f = cfg.d_ff,
                v = cfg.vocab_size;
  std::vector<Shape> shapes{{v, d}};
  for (int64_t i = 0; i < cfg.num_layers; ++i) {
    shapes.insert(shapes.end(), {{d}, {d, h, hd}, {d, kv, hd}, {d, kv, hd}, {h, hd, d}});
    if (!cfg.parallel_blocks) shapes.push_back({d});  // mlp_norm
    shapes.insert(shapes.end(), {{d, f}, {d, f}, {f, d}});
  }
  shapes.push_back({d});
  shapes.push_back({d, v});
  const std::vector<NamedSharding> shardings = transformer_param_shardings(cfg, mesh);
  ShapeDtypeTree out{std::move(def), {}};
  for (size_t i = 0; i < shapes.size(); ++i) {
    out.leaves.push_back(ShapeDtypeStruct{.shape = shapes[i],
                                          .dtype = cfg.dtype,
                                          .sharding = std::make_shared<NamedSharding>(shardings[i])});
  }
  return out;
}

ShapeDtypeStruct abstract_transformer_batch(const TransformerConfig& cfg, const Mesh& mesh) {
  return ShapeDtypeStruct{.shape = {cfg.batch_size, cfg.seq_len},
                          .dtype = int32,
                          .sharding = std::make_shared<NamedSharding>(transformer_batch_sharding(cfg, mesh))};
}

std::pair<TransformerParams, Array> TransformerTrainStep::operator()(const TransformerParams& params,
                                                                     const Array& tokens,
                                                                     const Array& targets) const {
  const Mesh* m = mesh.empty() ? nullptr : &mesh;
  auto loss = [&](const TransformerParams& p) { return transformer_loss(p, tokens, targets, cfg, m); };
  auto [value, grads] = value_and_grad(loss)(params);
  TransformerParams next = tree::map(
      [lr = cfg.learning_rate](const Array& w, const Array& g) { return w - (g * lr).astype(w.dtype()); }, params,
      grads);
  return {std::move(next), value};
}

}  // namespace jx::nn::models
