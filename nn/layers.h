// jx::nn's basic modules (Equinox-style pytrees with a call operator, on batched inputs):
// Linear, Embedding, LayerNorm, RMSNorm, Dropout, Sequential and Lambda. See each header.
//
//   nn::Sequential model(nn::Linear(784, 128, k1), nn::Lambda(nn::relu), nn::Linear(128, 10, k2));
//   auto loss = [](const auto& m, const Array& x, const Array& y) {
//     return jnp::mean(nn::softmax_cross_entropy_with_integer_labels(m(x), y));
//   };
//   auto grads = jx::grad(loss)(model, x, y);          // a Sequential of gradients
#pragma once

#include "jx/nn/dropout.h"
#include "jx/nn/embedding.h"
#include "jx/nn/linear.h"
#include "jx/nn/normalization.h"
#include "jx/nn/sequential.h"
