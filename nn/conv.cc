// nn::Conv: validation of the configuration and the input, then one conv_general_dilated.
#include "jx/nn/conv.h"

#include <cmath>
#include <ostream>

#include "absl/strings/ascii.h"
#include "absl/strings/str_join.h"
#include "jx/core/errors.h"
#include "jx/lax/convolution.h"
#include "jx/lax/random/random.h"
#include "jx/lax/numpy/operators.h"
#include "jx/lax/shape_ops.h"
#include "jx/nn/conv_internal.h"

namespace jx::nn {

std::ostream& operator<<(std::ostream& os, const Padding& p) { return os << conv_internal::PaddingStr(p); }

namespace conv_internal {

std::string PaddingStr(const Padding& p) {
  if (p.pairs.empty()) return StrCat("'", p.mode, "'");
  std::string s = "(";
  for (size_t i = 0; i < p.pairs.size(); ++i) {
    StrAppend(&s, i ? ", " : "", "(", p.pairs[i].first, ", ", p.pairs[i].second, ")");
  }
  return s + (p.pairs.size() == 1 ? ",)" : ")");
}

std::string Dims(const std::vector<int64_t>& v) { return StrCat("(", absl::StrJoin(v, ", "), ")"); }

std::vector<int64_t> PerSpatialDim(std::string_view module, std::string_view name, const std::vector<int64_t>& v,
                                   int64_t num_spatial, int64_t fill) {
  if (v.empty()) return std::vector<int64_t>(num_spatial, fill);
  if (static_cast<int64_t>(v.size()) != num_spatial) {
    ThrowOpError<ValueError>(module, name, "=", Dims(v), " has ", v.size(), " entries but the window has ",
                             num_spatial, " spatial dimensions");
  }
  for (int64_t s : v) {
    if (s < 1) ThrowOpError<ValueError>(module, name, " must be positive, got ", name, "=", Dims(v));
  }
  return v;
}

std::string SpatialLetters(int64_t num_spatial) {
  static constexpr std::string_view kSpatial[] = {"W", "HW", "DHW"};
  return std::string(kSpatial[num_spatial - 1]);
}

bool ChannelsLast(std::string_view module, const std::string& data_format, int64_t num_spatial) {
  if (num_spatial < 1 || num_spatial > 3) {
    ThrowOpError<ValueError>(module, "supports 1, 2 or 3 spatial dimensions, got ", num_spatial);
  }
  if (data_format == "NHWC") return true;
  if (data_format == "NCHW") return false;
  const std::string sp = SpatialLetters(num_spatial);
  if (data_format == StrCat("N", sp, "C")) return true;
  if (data_format == StrCat("NC", sp)) return false;
  ThrowOpError<ValueError>(module, "data_format must be \"NHWC\" or \"NCHW\" (or the ", num_spatial,
                           "-d spelling, e.g. \"NWC\"/\"NCW\" in 1D), got \"", data_format, "\"");
}

void CheckPadding(std::string_view module, const Padding& padding, int64_t num_spatial) {
  if (padding.pairs.empty()) {
    const std::string mode = absl::AsciiStrToUpper(padding.mode);
    if (mode != "SAME" && mode != "SAME_LOWER" && mode != "VALID") {
      ThrowOpError<ValueError>(module, "padding must be \"SAME\", \"SAME_LOWER\", \"VALID\" or (low, high) pairs, got \"",
                               padding.mode, "\"");
    }
    return;
  }
  if (static_cast<int64_t>(padding.pairs.size()) != num_spatial) {
    ThrowOpError<ValueError>(module, "padding=", PaddingStr(padding), " has ", padding.pairs.size(),
                             " (low, high) pairs but there are ", num_spatial, " spatial dimensions");
  }
  for (const auto& [lo, hi] : padding.pairs) {
    if (lo < 0 || hi < 0) ThrowOpError<ValueError>(module, "padding must be nonnegative, got ", PaddingStr(padding));
  }
}

std::vector<std::pair<int64_t, int64_t>> ResolvePadding(std::string_view module, const Padding& padding,
                                                        const std::vector<int64_t>& in_spatial,
                                                        const std::vector<int64_t>& window,
                                                        const std::vector<int64_t>& strides) {
  CheckPadding(module, padding, static_cast<int64_t>(in_spatial.size()));
  if (padding.pairs.empty()) return lax::padtype_to_pads(in_spatial, window, strides, absl::AsciiStrToUpper(padding.mode));
  return padding.pairs;
}

}  // namespace conv_internal

using conv_internal::Dims;

Conv::Conv(int64_t in_channels, int64_t out_channels, const std::vector<int64_t>& kernel_size, const Array& key,
           const ConvOptions& options) {
  constexpr std::string_view kOp = "nn.Conv";
  const auto n = static_cast<int64_t>(kernel_size.size());
  if (n < 1) ThrowOpError<ValueError>(kOp, "kernel_size must have at least one spatial dimension, got ()");
  conv_internal::PerSpatialDim(kOp, "kernel_size", kernel_size, n, 1);
  const int64_t groups = options.feature_group_count;
  if (in_channels < 1 || out_channels < 1 || groups < 1 || in_channels % groups != 0 ||
      out_channels % groups != 0) {
    ThrowOpError<ValueError>(kOp, "in_channels=", in_channels, " and out_channels=", out_channels,
                             " must be positive multiples of feature_group_count=", groups);
  }
  const bool last = conv_internal::ChannelsLast(kOp, options.data_format, n);
  strides = Static{conv_internal::PerSpatialDim(kOp, "strides", options.strides, n, 1)};
  dilation = Static{conv_internal::PerSpatialDim(kOp, "dilation", options.dilation, n, 1)};
  conv_internal::CheckPadding(kOp, options.padding, n);
  padding = Static{options.padding};
  feature_group_count = Static{groups};
  data_format = Static{options.data_format};

  Shape wshape;
  if (last) {
    wshape = kernel_size;
    wshape.push_back(in_channels / groups);
    wshape.push_back(out_channels);
  } else {
    wshape = {out_channels, in_channels / groups};
    wshape.insert(wshape.end(), kernel_size.begin(), kernel_size.end());
  }
  int64_t fan_in = in_channels / groups;
  for (int64_t k : kernel_size) fan_in *= k;
  const double bound = 1.0 / std::sqrt(static_cast<double>(fan_in));
  auto [wkey, bkey] = random::split(key);
  weight = random::uniform(wkey, wshape, options.dtype, -bound, bound);
  if (options.use_bias) bias = random::uniform(bkey, {out_channels}, options.dtype, -bound, bound);
}

bool Conv::channels_last() const { return conv_internal::ChannelsLast("nn.Conv", data_format.value, num_spatial_dims()); }

int64_t Conv::in_channels() const {
  const int64_t per_group = channels_last() ? weight.shape()[weight.ndim() - 2] : weight.shape()[1];
  return per_group * feature_group_count.value;
}

int64_t Conv::out_channels() const { return channels_last() ? weight.shape().back() : weight.shape()[0]; }

Array Conv::operator()(const Array& x) const {
  constexpr std::string_view kOp = "nn.Conv";
  const int64_t n = num_spatial_dims();
  const bool last = channels_last();
  if (x.ndim() != n + 2) {
    ThrowOpError<ShapeError>(kOp, "expects a batched input of rank ", n + 2, " (", data_format.value,
                             ") for its weight ", weight.aval().str(), ", got x ", x.aval().str());
  }
  const int64_t c_axis = last ? n + 1 : 1;
  if (x.shape()[c_axis] != in_channels()) {
    ThrowOpError<ShapeError>(kOp, "input has ", x.shape()[c_axis], " channels (axis ", c_axis, " of x ",
                             x.aval().str(), ", ", data_format.value, ") but the weight ", weight.aval().str(),
                             " expects ", in_channels());
  }
  std::vector<int64_t> in_spatial, window;
  for (int64_t i = 0; i < n; ++i) {
    in_spatial.push_back(x.shape()[last ? 1 + i : 2 + i]);
    const int64_t k = weight.shape()[last ? i : 2 + i];
    window.push_back((k - 1) * dilation.value[i] + 1);  // the dilated window padding is computed for
  }
  const auto pads = conv_internal::ResolvePadding(kOp, padding.value, in_spatial, window, strides.value);

  const std::string sp = conv_internal::SpatialLetters(n);
  const std::string io = last ? StrCat("N", sp, "C") : StrCat("NC", sp);
  const auto dn = lax::ConvDimensionNumbers::FromSpecs(io, last ? StrCat(sp, "IO") : StrCat("OI", sp), io);
  Array y = lax::conv_general_dilated(x, weight, strides.value, lax::Padding(pads), {}, dilation.value, dn,
                                      feature_group_count.value);
  if (bias) {
    if (last) {
      y = y + *bias;
    } else {
      Shape bshape(n + 1, 1);
      bshape[0] = out_channels();
      y = y + lax::reshape(*bias, bshape);
    }
  }
  return y;
}

}  // namespace jx::nn
