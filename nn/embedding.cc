#include "jx/nn/embedding.h"

#include "jx/core/errors.h"
#include "jx/lax/numpy/numpy.h"
#include "jx/lax/random/random.h"

namespace jx::nn {

Embedding::Embedding(int64_t num_embeddings, int64_t embedding_dim, const Array& key, const EmbeddingOptions& options) {
  JX_CHECK_OP(num_embeddings >= 0 && embedding_dim >= 0, ValueError, "Embedding",
              "num_embeddings and embedding_dim must be nonnegative, got ", num_embeddings, " and ", embedding_dim);
  const initializers::Initializer init = options.weight_init.value_or(initializers::normal(1.0));
  weight = init(key, {num_embeddings, embedding_dim}, options.dtype);
}

Array Embedding::operator()(const Array& ids) const {
  JX_CHECK_OP(IsInteger(ids.dtype()), TypeError, "Embedding", "ids must have an integer dtype, got ", ids.aval().str(),
              " (table ", weight.aval().str(), ")");
  return jx::numpy::take(weight, ids, 0);
}

}  // namespace jx::nn
