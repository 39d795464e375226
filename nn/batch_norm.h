// nn::BatchNorm: batch normalization over every axis but the feature axis, with the running
// statistics as explicit state (flax.linen.BatchNorm's batch_stats, Equinox's State), so a
// training step stays a pure function under jit:
//
//   nn::BatchNorm bn(64);                          // features on the last axis (NHWC)
//   nn::BatchNormState st = bn.init_state();       // mean 0, var 1
//   auto [y, st2] = bn(x, st, /*training=*/true);  // batch statistics; running stats updated
//   auto [y_eval, same] = bn(x, st2, /*training=*/false);  // running statistics, state unchanged
//
// As Flax: training normalizes with the batch mean and biased variance and returns
// mean' = momentum * mean + (1 - momentum) * batch_mean (var likewise, with the biased batch
// variance); inference uses the running statistics. y = (x - mean) / sqrt(var + eps) * scale +
// bias; `scale` (ones) and `bias` (zeros) are [num_features] parameters unless disabled.
// Statistics are computed in float32 at least (float16/bfloat16 inputs keep their dtype out).
#pragma once

#include <cstdint>
#include <optional>
#include <utility>

#include "jx/core/array.h"
#include "jx/core/pytree.h"

namespace jx::nn {

struct BatchNormState {
  BOOST_HANA_DEFINE_STRUCT(BatchNormState, (Array, mean), (Array, var));
};

struct BatchNormOptions {
  int64_t axis = -1;        // the feature axis (1 for NCHW)
  double momentum = 0.99;   // Flax's convention: the weight of the old running statistics
  double eps = 1e-5;
  bool use_scale = true;
  bool use_bias = true;
  DType dtype = float32;    // of the parameters and the state
};

struct BatchNorm {
  BOOST_HANA_DEFINE_STRUCT(BatchNorm, (std::optional<Array>, scale), (std::optional<Array>, bias),
                           (Static<int64_t>, num_features), (Static<int64_t>, axis), (Static<double>, momentum),
                           (Static<double>, eps), (Static<DType>, param_dtype));
  BatchNorm() = default;
  explicit BatchNorm(int64_t num_features, const BatchNormOptions& options = {});

  // Running mean zeros and running variance ones, [num_features].
  BatchNormState init_state() const;
  // Throws ShapeError naming the module and shapes when x's feature axis has another size.
  std::pair<Array, BatchNormState> operator()(const Array& x, const BatchNormState& state, bool training) const;
};

}  // namespace jx::nn
