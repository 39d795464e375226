// nn::Conv: an N-d convolution layer (1D, 2D, 3D) over BATCHED inputs, as flax.linen.Conv /
// torch.nn.Conv2d, computed by lax::conv_general_dilated. A pytree (Equinox-style): `weight`
// and `bias` are the parameters, the configuration is Static.
//
//   nn::Conv conv(3, 64, {3, 3}, key);                          // NHWC, SAME, stride 1
//   Array y = conv(x);                                          // f32[N,H,W,3] -> f32[N,H,W,64]
//   nn::Conv down(64, 128, {3, 3}, key, {.strides = {2, 2}, .padding = "VALID"});
//   nn::Conv cf(3, 8, {5}, key, {.padding = {{2, 2}}, .data_format = "NCW"});  // 1D, NCW
//
// Layouts: channels last ("NHWC", also "NWC", "NDHWC") keeps `weight` in HWIO ([*kernel,
// in/groups, out]); channels first ("NCHW", "NCW", "NCDHW") in OIHW ([out, in/groups,
// *kernel]); `bias` is [out]. "NHWC"/"NCHW" name the channel position for any spatial rank.
// Initialization as PyTorch's and Equinox's Conv: weight and bias uniform in
// [-1/sqrt(fan_in), 1/sqrt(fan_in)], fan_in = in/groups * prod(kernel_size).
// Padding defaults to "SAME" (Flax's default); explicit pads are (low, high) per spatial dim.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "jx/core/array.h"
#include "jx/core/pytree.h"

namespace jx::nn {

// Padding of a convolution or pooling window: "SAME", "SAME_LOWER" or "VALID" (any case, as
// lax.padtype_to_pads), or explicit (low, high) pairs, one per spatial dimension.
struct Padding {
  std::string mode;                                 // empty when pairs are explicit
  std::vector<std::pair<int64_t, int64_t>> pairs;
  Padding() : mode("VALID") {}
  Padding(const char* m) : mode(m) {}  // NOLINT: implicit, so {.padding = "SAME"} reads as Flax
  Padding(std::string m) : mode(std::move(m)) {}  // NOLINT
  Padding(std::vector<std::pair<int64_t, int64_t>> p) : pairs(std::move(p)) {}  // NOLINT
  Padding(std::initializer_list<std::pair<int64_t, int64_t>> p) : pairs(p) {}  // NOLINT
  friend bool operator==(const Padding&, const Padding&) = default;
};
std::ostream& operator<<(std::ostream& os, const Padding& p);

struct ConvOptions {
  std::vector<int64_t> strides = {};     // per spatial dim; empty: all 1
  Padding padding = "SAME";
  std::vector<int64_t> dilation = {};    // kernel (rhs, atrous) dilation; empty: all 1
  int64_t feature_group_count = 1;    // in and out channels must both divide by it
  bool use_bias = true;
  std::string data_format = "NHWC";   // channels last; "NCHW" (or "NCW", "NCDHW") for first
  DType dtype = float32;
};

struct Conv {
  BOOST_HANA_DEFINE_STRUCT(Conv, (Array, weight), (std::optional<Array>, bias),
                           (Static<std::vector<int64_t>>, strides), (Static<Padding>, padding),
                           (Static<std::vector<int64_t>>, dilation), (Static<int64_t>, feature_group_count),
                           (Static<std::string>, data_format));

  Conv() = default;  // for pytree unflatten
  // kernel_size has one entry per spatial dimension (its length picks 1D, 2D or 3D).
  Conv(int64_t in_channels, int64_t out_channels, const std::vector<int64_t>& kernel_size, const Array& key,
       const ConvOptions& options = {});

  // x: [N, *spatial, C_in] (channels last) or [N, C_in, *spatial]; throws ShapeError naming
  // the module and shapes when x's rank or channel count does not match the weight.
  Array operator()(const Array& x) const;

  int64_t num_spatial_dims() const { return weight.ndim() - 2; }
  bool channels_last() const;
  int64_t in_channels() const;   // of the input, groups included
  int64_t out_channels() const;
};

}  // namespace jx::nn
