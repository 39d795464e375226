// conv_general_dilated: N-d convolution with strides, padding, lhs (transposed-conv) and rhs
// (atrous) dilation, feature groups, batch groups and any dimension numbers, as XLA's
// Convolution. Computed as im2col into scratch tiles + GEMM (lax/kernels/gemm.h) on the jx
// pool; depthwise channels-last convolutions take a vectorized direct path.
//
//   lax::conv_general_dilated(x, w, {1, 1}, lax::Padding::Same(), {}, {},
//                             lax::ConvDimensionNumbers::FromSpecs("NHWC", "HWIO", "NHWC"));
//
// Dtypes: lhs and rhs must have the same dtype; accumulation as dot_general (float16/bfloat16
// in float32, integers wrap around, bool is OR of ANDs); preferred_element_type as
// dot_general, and precision (lax/precision.h) too: stored for targets with rounding matrix
// units, no change to the CPU's numbers. Params print as JAX's: window_strides=(1, 1) padding=((1, 1), (1, 1))
// dimension_numbers=ConvDimensionNumbers(lhs_spec=(0, 3, 1, 2), rhs_spec=(3, 2, 0, 1), ...).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "jx/core/array.h"
#include "jx/core/param_map.h"
#include "jx/core/registry.h"
#include "jx/lax/precision.h"

namespace jx::lax {

// Dimension numbers as index lists: lhs (batch, feature, spatial...), rhs (out feature,
// in feature, spatial...), out (batch, feature, spatial...).
struct ConvDimensionNumbers {
  std::vector<int64_t> lhs_spec;
  std::vector<int64_t> rhs_spec;
  std::vector<int64_t> out_spec;
  // From JAX-style strings, e.g. ("NCHW", "OIHW", "NCHW") or ("NHWC", "HWIO", "NHWC"), of any
  // spatial rank; spatial dims are matched by letter and ordered as in the rhs string (JAX's
  // conv_general_permutations). Throws TypeError on malformed specs.
  static ConvDimensionNumbers FromSpecs(std::string_view lhs, std::string_view rhs, std::string_view out);
  // NCHW / OIHW / NCHW for the given number of spatial dims (JAX's default).
  static ConvDimensionNumbers Default(int num_spatial_dims);
  friend bool operator==(const ConvDimensionNumbers&, const ConvDimensionNumbers&) = default;
};

// Explicit (low, high) padding per spatial dim, or "SAME"/"VALID" resolved against shapes.
struct Padding {
  std::string mode;                                   // "", "SAME", "SAME_LOWER" or "VALID"
  std::vector<std::pair<int64_t, int64_t>> explicit_pads;
  static Padding Same() { return {"SAME", {}}; }
  static Padding Valid() { return {"VALID", {}}; }
  Padding() = default;
  Padding(std::vector<std::pair<int64_t, int64_t>> pads) : explicit_pads(std::move(pads)) {}
  // JAX's string paddings: conv_general_dilated(x, w, {1, 1}, "SAME"). (No implicit
  // std::string constructor: Padding({{0, 0}}) would be ambiguous; Padding(s.c_str()).)
  Padding(const char* m) : mode(m) {}
  Padding(std::string m, std::vector<std::pair<int64_t, int64_t>> pads) : mode(std::move(m)), explicit_pads(std::move(pads)) {}
};

// JAX's lax.padtype_to_pads: (low, high) pads for "SAME", "SAME_LOWER" or "VALID" (any case)
// over spatial sizes in_shape with the (dilated) window. Throws ValueError on other strings.
std::vector<std::pair<int64_t, int64_t>> padtype_to_pads(const std::vector<int64_t>& in_shape,
                                                         const std::vector<int64_t>& window_shape,
                                                         const std::vector<int64_t>& window_strides,
                                                         std::string_view padding);

Array conv_general_dilated(const Array& lhs, const Array& rhs, const std::vector<int64_t>& window_strides,
                           const Padding& padding, const std::vector<int64_t>& lhs_dilation = {},
                           const std::vector<int64_t>& rhs_dilation = {},
                           std::optional<ConvDimensionNumbers> dimension_numbers = std::nullopt,
                           int64_t feature_group_count = 1, int64_t batch_group_count = 1,
                           PrecisionLike precision = {},
                           std::optional<DType> preferred_element_type = std::nullopt);
// JAX's conv_general_dilated(..., preferred_element_type=t) with no precision given.
Array conv_general_dilated(const Array& lhs, const Array& rhs, const std::vector<int64_t>& window_strides,
                           const Padding& padding, const std::vector<int64_t>& lhs_dilation,
                           const std::vector<int64_t>& rhs_dilation,
                           std::optional<ConvDimensionNumbers> dimension_numbers, int64_t feature_group_count,
                           int64_t batch_group_count, std::optional<DType> preferred_element_type);

namespace internal {
// The dimension numbers stored in conv_general_dilated's params (for rules in other layers).
const ConvDimensionNumbers& GetConvDimensionNumbers(const ParamMap& params);
// Sets conv_general_dilated's jvp, transpose and batch rules (lax/convolution_rules.cc).
void DefineConvolutionRules(PrimitiveRules& rules);
}  // namespace internal

}  // namespace jx::lax
