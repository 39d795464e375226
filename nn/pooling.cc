// max_pool / avg_pool: the spatial window and padding mapped onto all of x's dims (1 on batch
// and channels), then one lax::reduce_window.
#include "jx/nn/pooling.h"

#include "jx/core/errors.h"
#include "jx/lax/window_ops.h"
#include "jx/lax/numpy/creation.h"
#include "jx/lax/numpy/operators.h"
#include "jx/nn/conv_internal.h"

namespace jx::nn {
namespace {

struct FullWindow {
  std::vector<int64_t> window, strides;
  lax::WindowPadding padding;
};

// The window over every dim of x: the spatial entries from the options, 1 (unpadded) on the
// batch and channel dims.
FullWindow MakeWindow(std::string_view op, const Array& x, const std::vector<int64_t>& window_shape,
                      const std::vector<int64_t>& strides_in, const Padding& padding, const std::string& data_format) {
  const auto n = static_cast<int64_t>(window_shape.size());
  const bool last = conv_internal::ChannelsLast(op, data_format, n);
  conv_internal::PerSpatialDim(op, "window_shape", window_shape, n, 1);
  const std::vector<int64_t> strides = conv_internal::PerSpatialDim(op, "strides", strides_in, n, 1);
  if (x.ndim() != n + 2) {
    ThrowOpError<ShapeError>(op, "expects a batched input of rank ", n + 2, " (", data_format, ") for window_shape ",
                             conv_internal::Dims(window_shape), ", got x ", x.aval().str());
  }
  const int64_t first = last ? 1 : 2;
  std::vector<int64_t> in_spatial(x.shape().begin() + first, x.shape().begin() + first + n);
  const auto pads = conv_internal::ResolvePadding(op, padding, in_spatial, window_shape, strides);
  FullWindow w{std::vector<int64_t>(n + 2, 1), std::vector<int64_t>(n + 2, 1), lax::WindowPadding(n + 2, {0, 0})};
  for (int64_t i = 0; i < n; ++i) {
    w.window[first + i] = window_shape[i];
    w.strides[first + i] = strides[i];
    w.padding[first + i] = pads[i];
    if (in_spatial[i] + pads[i].first + pads[i].second < window_shape[i]) {
      ThrowOpError<ShapeError>(op, "window_shape ", conv_internal::Dims(window_shape), " does not fit x ",
                               x.aval().str(), " with padding ", conv_internal::PaddingStr(padding), " along spatial dim ", i);
    }
  }
  return w;
}

}  // namespace

Array max_pool(const Array& x, const std::vector<int64_t>& window_shape, const PoolOptions& options) {
  const FullWindow w = MakeWindow("nn.max_pool", x, window_shape, options.strides, options.padding, options.data_format);
  return lax::reduce_window_max(x, w.window, w.strides, w.padding);
}

Array avg_pool(const Array& x, const std::vector<int64_t>& window_shape, const PoolOptions& options) {
  const FullWindow w = MakeWindow("nn.avg_pool", x, window_shape, options.strides, options.padding, options.data_format);
  const Array sums = lax::reduce_window_sum(x, w.window, w.strides, w.padding);
  if (options.count_include_pad) {
    int64_t size = 1;
    for (int64_t k : window_shape) size *= k;
    return sums / static_cast<double>(size);
  }
  // Flax's count_include_pad=False: divide by the number of real elements each window saw,
  // the same window summed over ones of x's spatial shape (batch and channels of size 1).
  Shape ones_shape = x.shape();
  const bool last = conv_internal::ChannelsLast("nn.avg_pool", options.data_format, window_shape.size());
  ones_shape[0] = 1;
  ones_shape[last ? x.ndim() - 1 : 1] = 1;
  const Array counts = lax::reduce_window_sum(numpy::ones(ones_shape, x.dtype()), w.window, w.strides, w.padding);
  return sums / counts;
}

namespace {

// Checks what can be checked before an input is seen, so a bad module fails where it is built.
void CheckPoolOptions(std::string_view op, const std::vector<int64_t>& window, const PoolOptions& options) {
  const auto n = static_cast<int64_t>(window.size());
  conv_internal::ChannelsLast(op, options.data_format, n);
  conv_internal::PerSpatialDim(op, "window_shape", window, n, 1);
  conv_internal::PerSpatialDim(op, "strides", options.strides, n, 1);
  conv_internal::CheckPadding(op, options.padding, n);
}

}  // namespace

MaxPool::MaxPool(std::vector<int64_t> window, const PoolOptions& options)
    : window_shape{std::move(window)},
      strides{options.strides},
      padding{options.padding},
      data_format{options.data_format} {
  CheckPoolOptions("nn.MaxPool", window_shape.value, options);
}

Array MaxPool::operator()(const Array& x) const {
  return max_pool(x, window_shape.value, {.strides = strides.value, .padding = padding.value,
                                          .data_format = data_format.value});
}

AvgPool::AvgPool(std::vector<int64_t> window, const PoolOptions& options)
    : window_shape{std::move(window)},
      strides{options.strides},
      padding{options.padding},
      data_format{options.data_format},
      count_include_pad{options.count_include_pad} {
  CheckPoolOptions("nn.AvgPool", window_shape.value, options);
}

Array AvgPool::operator()(const Array& x) const {
  return avg_pool(x, window_shape.value, {.strides = strides.value, .padding = padding.value,
                                          .data_format = data_format.value,
                                          .count_include_pad = count_include_pad.value});
}

}  // namespace jx::nn
