// jx::random: JAX's counter-based PRNG (threefry2x32), with JAX's algorithms so that the
// same key and shape give the same numbers as jax.random. A key is a raw u32[2] array (JAX's
// legacy jax.random.PRNGKey layout); keys are values: split them, never reuse them.
//
//   namespace jrandom = jx::random;                  // JAX's `from jax import random`
//   auto key = jrandom::key(0);                      // u32[2] = [0 0]
//   auto [k1, k2] = jrandom::split(key);              // two u32[2] keys (a KeyPair)
//   Array keys = jrandom::split(key, 3);              // u32[3,2]
//   jx::random::uniform(key);                         // 0.947667 (jax.random.uniform(key(0)))
//   jx::random::normal(k1, {3, 4});                   // f32[3,4]
//   jx::random::uniform(k2, {5}, jx::float64, -1.0, 1.0);
//   jx::random::bernoulli(key, 0.3, Shape{10});       // bool[10]
//   jx::random::categorical(key, logits);             // int32 samples along the last axis
//   jx::random::permutation(key, 10);                 // a shuffled arange(10)
//   jx::random::choice(key, x, {3}, /*replace=*/false); // 3 distinct rows of x
//   jx::random::gamma(key, 2.5, Shape{100});          // also beta, dirichlet, poisson, ...
//
// Alias the namespace as jrandom (or use it qualified), not as `random`: the C library
// declares ::random() in <cstdlib>/<stdlib.h>, so `namespace random = jx::random;` at global
// scope does not compile there ("redeclared as different kind of entity").
//
// Bits follow jax_threefry_partitionable, true by default as in JAX >= 0.5 (see
// jx::set_threefry_partitionable / ThreefryPartitionableScope in lax/random_ops.h).
#pragma once

#include <cstdint>
#include <optional>
#include <tuple>
#include <utility>

#include "jx/core/array.h"
#include "jx/core/pytree.h"
#include "jx/lax/numpy/promotion.h"
#include "jx/lax/random_ops.h"

namespace jx::random {

// jax.random.key / PRNGKey: the 64-bit seed split into (high, low) 32-bit words. An integer
// seed array of 32 bits or fewer gives (0, low bits), as in JAX.
Array key(int64_t seed);
Array key(const Array& seed);
Array PRNGKey(int64_t seed);
// The raw u32 data of keys (identity: jx keys are raw data).
Array key_data(const Array& keys);

// The raw Threefry-2x32 hash of a uint32 count array under a u32[2] key
// (jax.random.threefry_2x32 / prng.threefry_2x32): the flattened counts are split in two
// halves that form the cipher's word pairs.
Array threefry_2x32(const Array& key, const Array& count);

// split(key): two new keys as one u32[2, 2] Array that also destructures, as JAX's
// `k1, k2 = jax.random.split(key)`:  auto [k1, k2] = jx::random::split(key);
// It is a pytree leaf like any Array, so a transformed function may return it (vmap(split)).
class KeyPair : public Array {
 public:
  KeyPair(Array keys) : Array(std::move(keys)) {}  // implicit: pytree unflattening builds it
  template <size_t I>
  Array get() const {
    static_assert(I < 2, "jx::random::split(key) gives two keys");
    return (*this)[static_cast<int64_t>(I)];
  }
};
KeyPair split(const Array& key);
// num new keys, u32[num, 2]; or keys of any shape, u32[*shape, 2].
Array split(const Array& key, int64_t num);
Array split(const Array& key, const Shape& shape);
// A new key from key and 32 bits of data.
Array fold_in(const Array& key, uint32_t data);
Array fold_in(const Array& key, const Array& data);

// Uniform random bits of an unsigned dtype.
Array bits(const Array& key, const Shape& shape = {}, DType dtype = uint32);
// Uniform floats in [minval, maxval).
Array uniform(const Array& key, const Shape& shape = {}, DType dtype = float32, const numpy::ArrayLike& minval = 0.0,
              const numpy::ArrayLike& maxval = 1.0);
// Standard normal: sqrt(2) * erf_inv(uniform(nextafter(-1, 0), 1)).
Array normal(const Array& key, const Shape& shape = {}, DType dtype = float32);
// Normal values truncated to the open interval (lower, upper): inverse-CDF sampling between
// erf(lower / sqrt 2) and erf(upper / sqrt 2), as JAX. The bounds may be arrays; shape
// defaults to their broadcast shape.
Array truncated_normal(const Array& key, const numpy::ArrayLike& lower, const numpy::ArrayLike& upper,
                       const Shape& shape, DType dtype = float32);
Array truncated_normal(const Array& key, const numpy::ArrayLike& lower, const numpy::ArrayLike& upper);
// Integers uniform in [minval, maxval), JAX's algorithm (two words of bits, wrapping unsigned
// arithmetic) so values match jax.random.randint. The bounds are clipped into dtype's range
// (maxval past its top still reaches the top: randint(key, s, 0, 256, uint8)); they may be
// arrays broadcasting to shape (floats are truncated to int32, as JAX's astype(int)).
Array randint(const Array& key, const Shape& shape, const numpy::ArrayLike& minval, const numpy::ArrayLike& maxval,
              DType dtype = int32);
// bool samples with P(true) = p; shape defaults to p's shape. A C++ p is float32.
Array bernoulli(const Array& key, const numpy::ArrayLike& p = 0.5, std::optional<Shape> shape = std::nullopt);
Array gumbel(const Array& key, const Shape& shape = {}, DType dtype = float32);
Array exponential(const Array& key, const Shape& shape = {}, DType dtype = float32);
// int32 samples from softmax(logits) along axis; shape defaults to the batch shape (logits
// without axis) and may add leading sample dimensions.
Array categorical(const Array& key, const Array& logits, int64_t axis = -1, std::optional<Shape> shape = std::nullopt);
// A shuffled arange(n) (int32), or x shuffled along axis (each slice independently when
// independent is set).
Array permutation(const Array& key, int64_t n);
Array permutation(const Array& key, const Array& x, int64_t axis = 0, bool independent = false);


// Samples from a set: n draws (shape's product) from a's slices along axis (or from arange(n)
// for the integer overload), uniformly or with probabilities p (1-D, a's length along axis),
// with or without replacement. JAX's algorithms: randint / permutation without p; with p,
// inverse-CDF search (searchsorted on cumsum(p)) or, without replacement, the Gumbel top-k
// trick. The result is shape + a's other dims, in a's axis position.
Array choice(const Array& key, const Array& a, const Shape& shape = {}, bool replace = true,
             const std::optional<Array>& p = std::nullopt, int64_t axis = 0);
Array choice(const Array& key, int64_t n, const Shape& shape = {}, bool replace = true,
             const std::optional<Array>& p = std::nullopt);

// Standard Laplace (sign(u) log1p(-|u|)), logistic (log(u) - log1p(-u)) and Cauchy
// (tan(pi (u - 1/2))) samples, JAX's inverse-CDF formulas.
Array laplace(const Array& key, const Shape& shape = {}, DType dtype = float32);
Array logistic(const Array& key, const Shape& shape = {}, DType dtype = float32);
Array cauchy(const Array& key, const Shape& shape = {}, DType dtype = float32);

// Gamma(a, 1) samples; a broadcasts to shape (a's shape by default). JAX's sampler:
// Marsaglia-Tsang rejection, one while_loop per element under vmap (keys split per element;
// a < 1 boosted through Gamma(a + 1) U^(1/a)), so values match jax.random.gamma. Differentiable
// in a by implicit reparameterization (dx/da = -dP(a, x)/da / p(a, x), P the regularized
// incomplete gamma), as JAX's random_gamma_grad; jit and vmap work.
Array gamma(const Array& key, const numpy::ArrayLike& a, std::optional<Shape> shape = std::nullopt,
            DType dtype = float32);
// log of Gamma(a, 1) samples, computed in log space (accurate for tiny a), as jax.random.loggamma.
Array loggamma(const Array& key, const numpy::ArrayLike& a, std::optional<Shape> shape = std::nullopt,
               DType dtype = float32);
// Beta(a, b) samples from two log-gamma draws (keys split(key)).
Array beta(const Array& key, const numpy::ArrayLike& a, const numpy::ArrayLike& b,
           std::optional<Shape> shape = std::nullopt, DType dtype = float32);
// Dirichlet(alpha) samples along alpha's last axis (shape is the batch shape, default
// alpha.shape[:-1]): softmax of log-gamma draws.
Array dirichlet(const Array& key, const Array& alpha, std::optional<Shape> shape = std::nullopt,
                DType dtype = float32);
// Poisson(lam) samples (integer dtype): Knuth's method for lam < 10, Hormann's transformed
// rejection above, as jax.random.poisson.
Array poisson(const Array& key, const numpy::ArrayLike& lam, std::optional<Shape> shape = std::nullopt,
              DType dtype = int32);

}  // namespace jx::random

template <>
struct jx::tree_internal::NodeTraits<jx::random::KeyPair> : jx::tree_internal::NodeTraits<jx::Array> {};

template <>
struct std::tuple_size<jx::random::KeyPair> : std::integral_constant<size_t, 2> {};
template <size_t I>
struct std::tuple_element<I, jx::random::KeyPair> {
  using type = jx::Array;
};
