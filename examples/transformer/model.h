// A small decoder-only transformer (GPT-style: learned token and position embeddings,
// pre-LayerNorm blocks of causal multi-head attention and a GELU MLP, a final LayerNorm and
// an unembedding), written once for both runs of the example: unsharded on the CPU, and
// inside shard_map with its attention heads and MLP hidden units split over a mesh axis
// (Megatron-LM's tensor parallelism). `model_axis` names that axis ("" when unsharded): the
// column-split layers (query/key/value projections, the MLP's first layer) then hold whole
// heads / a slice of the hidden units, and the row-split layers (the attention's output
// projection, the MLP's second layer) give partial sums that one psum per sublayer adds up.
// The row-split layers have no bias, which would otherwise be added once per shard.
#pragma once

#include <string>
#include <vector>

#include <jx/jx.h>

namespace transformer {

using jx::Array;
namespace nn = jx::nn;

struct Config {
  int64_t vocab_size = 17;
  int64_t seq_len = 32;
  int64_t d_model = 512;
  int64_t num_heads = 8;
  int64_t num_layers = 2;
  int64_t d_ff = 2048;
};

// x unchanged when unsharded, else the sum of every chip's x over the mesh axis.
inline Array SumOver(const Array& x, const std::string& axis) { return axis.empty() ? x : jx::lax::psum(x, axis); }

// A pre-LayerNorm block: x + attn(ln1(x)), then h + fc2(gelu(fc1(ln2(h)))).
struct Block {
  BOOST_HANA_DEFINE_STRUCT(Block, (nn::LayerNorm, ln1), (nn::MultiHeadAttention, attn), (nn::LayerNorm, ln2),
                           (nn::Linear, fc1), (nn::Linear, fc2));
  Block() = default;
  Block(const Config& c, const Array& key) {
    const Array k = jx::random::split(key, 3);
    ln1 = nn::LayerNorm(c.d_model);
    attn = nn::MultiHeadAttention(c.num_heads, c.d_model, k[0], {.is_causal = true});  // no biases (Equinox's default)
    ln2 = nn::LayerNorm(c.d_model);
    fc1 = nn::Linear(c.d_model, c.d_ff, k[1]);
    fc2 = nn::Linear(c.d_ff, c.d_model, k[2], {.use_bias = false});
  }
  Array operator()(const Array& x, const std::string& model_axis) const {
    const Array a = ln1(x);
    const Array h = x + SumOver(attn(a, a, a), model_axis);
    return h + SumOver(fc2(nn::gelu(fc1(ln2(h)))), model_axis);
  }
};

struct Decoder {
  BOOST_HANA_DEFINE_STRUCT(Decoder, (nn::Embedding, token_embedding), (Array, position_embedding),
                           (std::vector<Block>, blocks), (nn::LayerNorm, ln_f), (nn::Linear, unembed));
  Decoder() = default;
  Decoder(const Config& c, const Array& key) {
    const Array k = jx::random::split(key, c.num_layers + 3);
    token_embedding = nn::Embedding(c.vocab_size, c.d_model, k[0]);
    position_embedding = nn::initializers::normal(0.02)(k[1], {c.seq_len, c.d_model}, jx::float32);
    for (int64_t i = 0; i < c.num_layers; ++i) blocks.emplace_back(c, k[3 + i]);
    ln_f = nn::LayerNorm(c.d_model);
    unembed = nn::Linear(c.d_model, c.vocab_size, k[2]);
  }
  // tokens int32 [B, T] -> logits [B, T, vocab_size].
  Array operator()(const Array& tokens, const std::string& model_axis = "") const {
    const int64_t t = tokens.shape()[1];
    Array x = token_embedding(tokens) + position_embedding[jx::slice(0, t)];
    for (const Block& block : blocks) x = block(x, model_axis);
    return unembed(ln_f(x));
  }
};

}  // namespace transformer
