// The demo's two models, Equinox-style (pytrees of parameters with a call operator), shared
// with bench/fashion_mnist_bench.cc. Inputs are batches of standardized images f32[N,28,28,1]
// (NHWC); outputs are logits f32[N,10].
#pragma once

#include <jx/jx.h>

namespace fashion_mnist {

namespace jnp = jx::numpy;
namespace nn = jx::nn;
using jx::Array;

// 784-256-10 with relu.
struct Mlp {
  BOOST_HANA_DEFINE_STRUCT(Mlp, (nn::Linear, hidden), (nn::Linear, out));
  Mlp() = default;
  explicit Mlp(const Array& key) {
    auto [k1, k2] = jx::random::split(key);
    hidden = nn::Linear(28 * 28, 256, k1);
    out = nn::Linear(256, 10, k2);
  }
  Array operator()(const Array& x) const { return out(nn::relu(hidden(x.reshape({x.shape()[0], 28 * 28})))); }
};

// conv3x3(16) - relu - maxpool2 - conv3x3(32) - relu - maxpool2 - dense 128 - relu - dense 10.
struct Cnn {
  BOOST_HANA_DEFINE_STRUCT(Cnn, (nn::Conv, conv1), (nn::Conv, conv2), (nn::Linear, hidden), (nn::Linear, out));
  Cnn() = default;
  explicit Cnn(const Array& key) {
    const Array k = jx::random::split(key, 4);
    conv1 = nn::Conv(1, 16, {3, 3}, k[0]);
    conv2 = nn::Conv(16, 32, {3, 3}, k[1]);
    hidden = nn::Linear(7 * 7 * 32, 128, k[2]);
    out = nn::Linear(128, 10, k[3]);
  }
  Array operator()(const Array& x) const {
    const nn::PoolOptions halve{.strides = {2, 2}};
    Array h = nn::max_pool(nn::relu(conv1(x)), {2, 2}, halve);  // [N, 14, 14, 16]
    h = nn::max_pool(nn::relu(conv2(h)), {2, 2}, halve);        // [N, 7, 7, 32]
    return out(nn::relu(hidden(h.reshape({h.shape()[0], 7 * 7 * 32}))));
  }
};

// The mean softmax cross-entropy of a batch (optax.softmax_cross_entropy_with_integer_labels).
template <typename Model>
Array Loss(const Model& model, const Array& x, const Array& y) {
  return jnp::mean(nn::softmax_cross_entropy_with_integer_labels(model(x), y));
}

// One jitted training step: jit(value_and_grad) + the optimizer's update, params and optimizer
// state donated. step(model, state, x, y) -> (model, state, loss).
template <typename Model>
auto MakeTrainStep(const jx::optax::GradientTransformation& opt, const std::string& name) {
  return jx::jit(
      [opt](const Model& m, const jx::optax::OptState& s, const Array& x, const Array& y) {
        auto [loss, grads] = jx::value_and_grad(Loss<Model>)(m, x, y);
        auto [updates, new_state] = opt.update(grads, s, m);
        return std::tuple{jx::optax::apply_updates(m, updates), new_state, loss};
      },
      jx::donate_argnums{0, 1}, jx::name{name});
}

}  // namespace fashion_mnist
