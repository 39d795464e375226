// conv_general_dilated: N-d convolution with strides, padding, lhs (transposed-conv) and rhs
// (atrous) dilation, feature groups and any dimension numbers.
//
//   lax::conv_general_dilated(x, w, {1, 1}, lax::Padding::Same(), {}, {},
//                             lax::ConvDimensionNumbers::FromSpecs("NHWC", "HWIO", "NHWC"));
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "jx/core/array.h"

namespace jx::lax {

// Dimension numbers as index lists: lhs (batch, feature, spatial...), rhs (out feature,
// in feature, spatial...), out (batch, feature, spatial...).
struct ConvDimensionNumbers {
  std::vector<int64_t> lhs_spec;
  std::vector<int64_t> rhs_spec;
  std::vector<int64_t> out_spec;
  // From JAX-style strings, e.g. ("NCHW", "OIHW", "NCHW") or ("NHWC", "HWIO", "NHWC").
  static ConvDimensionNumbers FromSpecs(std::string_view lhs, std::string_view rhs, std::string_view out);
  // NCHW / OIHW / NCHW for the given number of spatial dims (JAX's default).
  static ConvDimensionNumbers Default(int num_spatial_dims);
};

// Explicit (low, high) padding per spatial dim, or "SAME"/"VALID" resolved against shapes.
struct Padding {
  std::string mode;                                   // "", "SAME", "SAME_LOWER" or "VALID"
  std::vector<std::pair<int64_t, int64_t>> explicit_pads;
  static Padding Same() { return {"SAME", {}}; }
  static Padding Valid() { return {"VALID", {}}; }
  Padding() = default;
  Padding(std::vector<std::pair<int64_t, int64_t>> pads) : explicit_pads(std::move(pads)) {}
  Padding(std::string m, std::vector<std::pair<int64_t, int64_t>> pads) : mode(std::move(m)), explicit_pads(std::move(pads)) {}
};

Array conv_general_dilated(const Array& lhs, const Array& rhs, const std::vector<int64_t>& window_strides,
                           const Padding& padding, const std::vector<int64_t>& lhs_dilation = {},
                           const std::vector<int64_t>& rhs_dilation = {},
                           std::optional<ConvDimensionNumbers> dimension_numbers = std::nullopt,
                           int64_t feature_group_count = 1, int64_t batch_group_count = 1,
                           std::optional<DType> preferred_element_type = std::nullopt);

}  // namespace jx::lax
