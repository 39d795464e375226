// nn::LayerNorm and nn::RMSNorm over the trailing normalized_shape dimensions of x (any
// leading dims), with optional elementwise affine parameters, as PyTorch's and Equinox's:
//   LayerNorm: (x - mean) / sqrt(var + eps) * weight + bias  (weight ones, bias zeros)
//   RMSNorm:   x / sqrt(mean(x^2) + eps) * weight             (weight ones)
//
//   nn::LayerNorm ln(512);                         // torch.nn.LayerNorm(512) / eqx.nn.LayerNorm(512)
//   nn::RMSNorm rms(512, {.eps = 1e-6});
//   Array y = ln(x);                               // x: f32[batch, seq, 512]
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "jx/core/array.h"
#include "jx/core/dtype.h"
#include "jx/core/pytree.h"
#include "jx/core/shape.h"

namespace jx::nn {

struct LayerNormOptions {
  double eps = 1e-5;
  bool elementwise_affine = true;  // learn weight (and bias, if use_bias)
  bool use_bias = true;
  DType dtype = float32;
};

struct LayerNorm {
  BOOST_HANA_DEFINE_STRUCT(LayerNorm, (std::optional<Array>, weight), (std::optional<Array>, bias),
                           (Static<std::vector<int64_t>>, normalized_shape), (Static<double>, eps));

  LayerNorm() = default;
  explicit LayerNorm(int64_t dim, const LayerNormOptions& options = {});
  explicit LayerNorm(const Shape& normalized_shape, const LayerNormOptions& options = {});

  // x: [..., *normalized_shape]; a ShapeError naming LayerNorm and both shapes otherwise.
  Array operator()(const Array& x) const;
};

struct RMSNormOptions {
  double eps = 1e-6;  // Flax's and T5's default
  bool elementwise_affine = true;
  DType dtype = float32;
};

struct RMSNorm {
  BOOST_HANA_DEFINE_STRUCT(RMSNorm, (std::optional<Array>, weight), (Static<std::vector<int64_t>>, normalized_shape),
                           (Static<double>, eps));

  RMSNorm() = default;
  explicit RMSNorm(int64_t dim, const RMSNormOptions& options = {});
  explicit RMSNorm(const Shape& normalized_shape, const RMSNormOptions& options = {});

  Array operator()(const Array& x) const;
};

}  // namespace jx::nn
