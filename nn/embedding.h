// nn::Embedding: a table weight [num_embeddings, embedding_dim] looked up by integer ids,
// ids [...] -> [..., embedding_dim], with jnp.take(weight, ids, axis=0)'s semantics (Flax's
// nn.Embed): negative ids count from the end, ids outside [-num_embeddings, num_embeddings)
// give NaN rows. Initialized N(0, 1), as Equinox's and PyTorch's.
//
//   nn::Embedding embed(vocab_size, 512, key);                 // eqx.nn.Embedding(vocab, 512, key=key)
//   Array h = embed(tokens);                                   // i32[batch, seq] -> f32[batch, seq, 512]
#pragma once

#include <cstdint>
#include <optional>

#include "jx/core/array.h"
#include "jx/core/dtype.h"
#include "jx/core/pytree.h"
#include "jx/nn/initializers.h"

namespace jx::nn {

struct EmbeddingOptions {
  DType dtype = float32;
  std::optional<initializers::Initializer> weight_init = std::nullopt;  // absent: normal(1.0)
};

struct Embedding {
  BOOST_HANA_DEFINE_STRUCT(Embedding, (Array, weight));

  Embedding() = default;
  Embedding(int64_t num_embeddings, int64_t embedding_dim, const Array& key, const EmbeddingOptions& options = {});

  // ids of an integer dtype (a TypeError naming Embedding otherwise).
  Array operator()(const Array& ids) const;

  int64_t num_embeddings() const { return weight.shape()[0]; }
  int64_t embedding_dim() const { return weight.shape()[1]; }
};

}  // namespace jx::nn
