// The benchmarks' MLP: 784-512-512-10, tanh, softmax cross-entropy, batch 128 (issue
// workloads shared by the eager transform bench and the jit bench; bench/peers has the same
// model for PyTorch).
#pragma once

#include <cmath>

#include <boost/hana.hpp>
#include <jx/jx.h>

namespace mlp {

using jx::Array;
namespace lax = jx::lax;
namespace jnp = jx::numpy;

struct Mlp {
  BOOST_HANA_DEFINE_STRUCT(Mlp, (Array, w1), (Array, b1), (Array, w2), (Array, b2), (Array, w3), (Array, b3));
};

inline Array Dense(const Array& x, const Array& w, const Array& b) {
  return lax::add(lax::dot_general(x, w, {{1}, {0}, {}, {}}), lax::broadcast_in_dim(b, {x.shape()[0], w.shape()[1]}, {1}));
}

inline Array Loss(const Mlp& p, const Array& x, const Array& onehot) {
  Array h = lax::tanh(Dense(x, p.w1, p.b1));
  h = lax::tanh(Dense(h, p.w2, p.b2));
  Array logits = Dense(h, p.w3, p.b3);
  // Softmax cross-entropy, stabilized by the row max.
  const int64_t b = logits.shape()[0], k = logits.shape()[1];
  Array m = lax::stop_gradient(lax::reduce_max(logits, {1}));
  Array shifted = lax::sub(logits, lax::broadcast_in_dim(m, {b, k}, {0}));
  Array lse = lax::log(lax::reduce_sum(lax::exp(shifted), {1}));
  Array picked = lax::reduce_sum(lax::mul(shifted, onehot), {1});
  return lax::div(lax::reduce_sum(lax::sub(lse, picked), {0}), Array::Scalar(static_cast<double>(b), jx::float32));
}

struct MlpData {
  Mlp params;
  Array x, onehot;
};

inline const MlpData& Data() {
  static const MlpData d = [] {
    auto key = jx::random::key(0);
    auto keys = jx::random::split(key, 5);
    auto init = [&](int i, int64_t in, int64_t out) {
      return lax::mul(jx::random::normal(keys[i], {in, out}), Array::Scalar(1.0 / std::sqrt(double(in)), jx::float32));
    };
    Mlp p{init(0, 784, 512), jnp::zeros({512}), init(1, 512, 512), jnp::zeros({512}), init(2, 512, 10), jnp::zeros({10})};
    Array x = jx::random::normal(keys[3], {128, 784});
    Array labels = jx::random::categorical(keys[4], jnp::zeros({128, 10}));
    Array onehot = lax::convert_element_type(
        lax::eq(lax::broadcast_in_dim(labels, {128, 10}, {0}), lax::broadcast_in_dim(lax::iota(labels.dtype(), 10), {128, 10}, {1})),
        jx::float32);
    return MlpData{p, x, onehot};
  }();
  return d;
}

}  // namespace mlp
