// Pooling over the spatial dimensions of BATCHED inputs, as flax.linen.max_pool / avg_pool,
// computed by lax::reduce_window. Functions, and modules (pytrees with no parameters) that
// hold the window configuration as Static values:
//
//   Array y = nn::max_pool(x, {2, 2}, {.strides = {2, 2}});   // f32[N,H,W,C] -> [N,H/2,W/2,C]
//   nn::MaxPool pool({2, 2}, {.strides = {2, 2}});
//   nn::AvgPool avg({3, 3}, {.padding = "SAME", .count_include_pad = false});
//
// As Flax: strides default to 1 per spatial dim and padding to "VALID"; padding is
// "SAME"/"SAME_LOWER"/"VALID" or (low, high) pairs per spatial dim; max pooling pads with -inf.
// avg_pool divides by the full window size (count_include_pad = true, Flax's default) or by
// the number of real (unpadded) elements in each window (count_include_pad = false).
// data_format "NHWC" (channels last, default) or "NCHW" (and "NWC"/"NCW", ... in 1D/3D):
// the window covers exactly the spatial dims, never batch or channels.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "jx/core/array.h"
#include "jx/core/pytree.h"
#include "jx/nn/conv.h"  // nn::Padding

namespace jx::nn {

struct PoolOptions {
  std::vector<int64_t> strides = {};     // per spatial dim; empty: all 1
  Padding padding = "VALID";
  std::string data_format = "NHWC";
  bool count_include_pad = true;      // avg_pool only
};

Array max_pool(const Array& x, const std::vector<int64_t>& window_shape, const PoolOptions& options = {});
Array avg_pool(const Array& x, const std::vector<int64_t>& window_shape, const PoolOptions& options = {});

struct MaxPool {
  BOOST_HANA_DEFINE_STRUCT(MaxPool, (Static<std::vector<int64_t>>, window_shape),
                           (Static<std::vector<int64_t>>, strides), (Static<Padding>, padding),
                           (Static<std::string>, data_format));
  MaxPool() = default;
  explicit MaxPool(std::vector<int64_t> window_shape, const PoolOptions& options = {});
  Array operator()(const Array& x) const;
};

struct AvgPool {
  BOOST_HANA_DEFINE_STRUCT(AvgPool, (Static<std::vector<int64_t>>, window_shape),
                           (Static<std::vector<int64_t>>, strides), (Static<Padding>, padding),
                           (Static<std::string>, data_format), (Static<bool>, count_include_pad));
  AvgPool() = default;
  explicit AvgPool(std::vector<int64_t> window_shape, const PoolOptions& options = {});
  Array operator()(const Array& x) const;
};

}  // namespace jx::nn
