// Helpers shared by nn::Conv and the pooling modules (not part of the public API).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "jx/nn/conv.h"

namespace jx::nn::conv_internal {

// "'SAME'" or "((1, 1), (0, 2))", as Python prints the padding argument.
std::string PaddingStr(const Padding& p);
// "(1, 2)".
std::string Dims(const std::vector<int64_t>& v);
// v with one positive entry per spatial dim, or num_spatial copies of fill when v is empty;
// throws ValueError naming module and the option otherwise.
std::vector<int64_t> PerSpatialDim(std::string_view module, std::string_view name, const std::vector<int64_t>& v,
                                   int64_t num_spatial, int64_t fill);
// "W", "HW" or "DHW".
std::string SpatialLetters(int64_t num_spatial);
// Whether data_format ("NHWC"/"NCHW" or a rank-specific spelling) puts channels last.
bool ChannelsLast(std::string_view module, const std::string& data_format, int64_t num_spatial);
// Throws ValueError naming module unless padding is a known mode string or num_spatial
// nonnegative pairs.
void CheckPadding(std::string_view module, const Padding& padding, int64_t num_spatial);
// (low, high) pads per spatial dim: explicit pairs, or lax.padtype_to_pads of a mode string.
std::vector<std::pair<int64_t, int64_t>> ResolvePadding(std::string_view module, const Padding& padding,
                                                        const std::vector<int64_t>& in_spatial,
                                                        const std::vector<int64_t>& window,
                                                        const std::vector<int64_t>& strides);

}  // namespace jx::nn::conv_internal
