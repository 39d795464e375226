// The synthetic copy task: a sequence of `half` random symbols, a separator, then the same
// symbols again. The model reads [x, SEP, x] shifted by one and is scored (loss and token
// accuracy) only where it predicts the copied half, which it can only get right by attending
// back `half + 1` positions.
#pragma once

#include <utility>

#include <jx/jx.h>

namespace transformer {

using jx::Array;

struct CopyTask {
  int64_t num_symbols = 16;  // tokens 0..15; the separator is token 16
  int64_t half = 16;         // the model sees 2 * half tokens
  int64_t vocab_size() const { return num_symbols + 1; }
  int64_t seq_len() const { return 2 * half; }

  // inputs and targets, int32 [batch, 2 * half].
  std::pair<Array, Array> Batch(const Array& key, int64_t batch) const {
    namespace jnp = jx::numpy;
    const Array x = jx::random::randint(key, {batch, half}, 0, num_symbols);
    const Array sep = jnp::full({batch, 1}, num_symbols, jx::int32);
    const Array seq = jnp::concatenate({x, sep, x}, 1);
    return {seq[{jx::slice(), jx::slice(0, 2 * half)}], seq[{jx::slice(), jx::slice(1, 2 * half + 1)}]};
  }
  // 1 where the target is a copied symbol, f32 [2 * half].
  Array Weights() const {
    namespace jnp = jx::numpy;
    return (jnp::arange(2 * half) >= half).astype(jx::float32);
  }
};

}  // namespace transformer
