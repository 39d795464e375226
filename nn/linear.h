// nn::Linear: y = x @ weight + bias over the last axis of x (any leading dims), weight
// [in_features, out_features], bias [out_features] (absent with use_bias = false).
// Default initialization is Equinox's and PyTorch's: weight and bias uniform on
// [-1/sqrt(in_features), 1/sqrt(in_features)); LinearOptions can name other initializers.
//
//   auto [k1, k2] = jx::random::split(key);
//   nn::Linear fc(784, 128, k1);                               // eqx.nn.Linear(784, 128, key=k1)
//   nn::Linear head(128, 10, k2, {.use_bias = false});
//   Array logits = head(nn::relu(fc(x)));                      // x: f32[batch, 784]
//   auto grads = jx::grad(loss)(fc, x);                        // a Linear of gradients
#pragma once

#include <cstdint>
#include <optional>

#include "jx/core/array.h"
#include "jx/core/dtype.h"
#include "jx/core/pytree.h"
#include "jx/nn/initializers.h"

namespace jx::nn {

struct LinearOptions {
  bool use_bias = true;
  DType dtype = float32;
  // Absent: uniform on +-1/sqrt(in_features) (Equinox / PyTorch).
  std::optional<initializers::Initializer> weight_init = std::nullopt;
  std::optional<initializers::Initializer> bias_init = std::nullopt;
};

struct Linear {
  BOOST_HANA_DEFINE_STRUCT(Linear, (Array, weight), (std::optional<Array>, bias));

  Linear() = default;
  Linear(int64_t in_features, int64_t out_features, const Array& key, const LinearOptions& options = {});

  // x: [..., in_features] -> [..., out_features]; a ShapeError naming Linear and both shapes
  // when x's last dimension is not in_features.
  Array operator()(const Array& x) const;

  int64_t in_features() const { return weight.shape()[0]; }
  int64_t out_features() const { return weight.shape()[1]; }
};

}  // namespace jx::nn
