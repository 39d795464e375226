// opinfo records for conv_general_dilated: eager vs a naive direct float64 convolution
// written from XLA's semantics (window position o * stride + k * rhs_dilation - pad_lo in
// the lhs-dilated input; feature groups pick lhs channels g * Cg + c, batch groups pick lhs
// images g * (N / batch_group_count) + n), over 1D/2D/3D, strides, every padding mode, both
// dilations, feature groups (incl. depthwise), batch groups and several dimension numbers.
#include <array>
#include <optional>

#include "opinfo.h"

namespace jx::opinfo {

// Shared with dot_opinfo.cc.
Tolerance ContractionTolerance(DType d);
Array ContractionArg(std::mt19937_64& rng, const Shape& shape, DType d);
std::optional<DType> WiderPreferred(DType d);
double WrapToDType(double sum, DType d);

}  // namespace jx::opinfo

namespace jx::opinfo::conv_opinfo {
namespace {

struct ConvCase {
  std::string name;
  Shape lhs, rhs;
  std::vector<int64_t> strides;
  lax::Padding padding;
  std::vector<int64_t> lhs_dilation = {}, rhs_dilation = {};
  std::optional<std::array<std::string, 3>> specs = std::nullopt;  // nullopt: JAX's default (NCHW...)
  int64_t feature_groups = 1, batch_groups = 1;
};

struct RefConvParams {
  std::vector<int64_t> strides, lhs_dilation, rhs_dilation;
  std::vector<std::pair<int64_t, int64_t>> pads;
  lax::ConvDimensionNumbers dn;
  int64_t feature_groups, batch_groups;
};

RefArray NaiveConv(const RefArray& lhs, const RefArray& rhs, const RefConvParams& p, DType out_dtype) {
  const auto& dn = p.dn;
  const size_t nsp = lhs.shape.size() - 2;
  const int64_t n_in = lhs.shape[dn.lhs_spec[0]];
  const int64_t o_feat = rhs.shape[dn.rhs_spec[0]], cg = rhs.shape[dn.rhs_spec[1]];
  const int64_t n_out = n_in / p.batch_groups;
  const int64_t og_feature = o_feat / p.feature_groups, og_batch = o_feat / p.batch_groups;
  std::vector<int64_t> in_sp(nsp), win(nsp), out_sp(nsp);
  for (size_t i = 0; i < nsp; ++i) {
    in_sp[i] = lhs.shape[dn.lhs_spec[2 + i]];
    win[i] = rhs.shape[dn.rhs_spec[2 + i]];
    const int64_t in_d = in_sp[i] == 0 ? 0 : (in_sp[i] - 1) * p.lhs_dilation[i] + 1;
    const int64_t w_d = win[i] == 0 ? 0 : (win[i] - 1) * p.rhs_dilation[i] + 1;
    const int64_t padded = in_d + p.pads[i].first + p.pads[i].second;
    out_sp[i] = padded < w_d ? 0 : (padded - w_d) / p.strides[i] + 1;
  }
  Shape out_shape(lhs.shape.size());
  out_shape[dn.out_spec[0]] = n_out;
  out_shape[dn.out_spec[1]] = o_feat;
  for (size_t i = 0; i < nsp; ++i) out_shape[dn.out_spec[2 + i]] = out_sp[i];
  RefArray out{out_shape, std::vector<double>(static_cast<size_t>(NumElements(out_shape)))};
  std::vector<int64_t> oi(out_shape.size(), 0), li(lhs.shape.size()), ri(rhs.shape.size());
  for (size_t flat = 0; flat < out.data.size(); ++flat) {
    if (flat > 0) {
      for (int d = static_cast<int>(out_shape.size()) - 1; d >= 0; --d) {
        if (++oi[d] < out_shape[d]) break;
        oi[d] = 0;
      }
    }
    const int64_t n = oi[dn.out_spec[0]], o = oi[dn.out_spec[1]];
    const int64_t lhs_n = p.batch_groups > 1 ? (o / og_batch) * n_out + n : n;
    const int64_t c0 = p.feature_groups > 1 ? (o / og_feature) * cg : 0;
    double sum = 0;
    const int64_t kprod = NumElements(Shape(win.begin(), win.end()));
    for (int64_t c = 0; c < cg; ++c) {
      for (int64_t kflat = 0; kflat < kprod; ++kflat) {
        // Window index k (row-major over win) -> lhs position, skipping padding and holes.
        int64_t rem = kflat;
        bool valid = true;
        for (int i = static_cast<int>(nsp) - 1; i >= 0; --i) {
          const int64_t k = rem % win[i];
          rem /= win[i];
          ri[dn.rhs_spec[2 + i]] = k;
          const int64_t pos = oi[dn.out_spec[2 + i]] * p.strides[i] + k * p.rhs_dilation[i] - p.pads[i].first;
          if (pos < 0 || pos % p.lhs_dilation[i] != 0 || pos / p.lhs_dilation[i] >= in_sp[i]) {
            valid = false;
          } else {
            li[dn.lhs_spec[2 + i]] = pos / p.lhs_dilation[i];
          }
        }
        if (!valid) continue;
        li[dn.lhs_spec[0]] = lhs_n;
        li[dn.lhs_spec[1]] = c0 + c;
        ri[dn.rhs_spec[0]] = o;
        ri[dn.rhs_spec[1]] = c;
        sum += lhs.at(li) * rhs.at(ri);
      }
    }
    out.data[flat] = IsBool(out_dtype) ? (sum != 0 ? 1.0 : 0.0) : WrapToDType(sum, out_dtype);
  }
  return out;
}

// Shapes are given in the order of the specs' letters.
std::vector<ConvCase> ConvCases() {
  using S = std::array<std::string, 3>;
  using P = lax::Padding;
  return {
      // Small cases first: the vmap and composition columns take the first few samples, and
      // these exercise the transposes' feature-group, batch-group and dilation paths.
      {"1d feature groups, strides and both dilations", {2, 4, 5}, {4, 2, 2}, {2}, P({{1, 2}}), {2}, {2},
       std::nullopt, 2},
      {"1d batch groups, rhs dilation", {4, 2, 5}, {4, 2, 2}, {1}, P({{1, 0}}), {}, {2}, std::nullopt, 1, 2},
      {"2d NHWC depthwise, stride and lhs dilation",
       {1, 3, 3, 2},
       {2, 2, 1, 4},
       {2, 1},
       P({{1, 1}, {0, 1}}),
       {2, 1},
       {},
       S{"NHWC", "HWIO", "NHWC"},
       2},
      {"2d NCHW same", {2, 3, 6, 5}, {4, 3, 3, 3}, {1, 1}, P::Same()},
      {"2d NHWC valid stride 2", {2, 7, 6, 3}, {3, 3, 3, 4}, {2, 2}, P::Valid(), {}, {}, S{"NHWC", "HWIO", "NHWC"}},
      {"2d NHWC same, NCHW out", {2, 5, 6, 3}, {3, 2, 3, 4}, {1, 2}, P::Same(), {}, {}, S{"NHWC", "HWIO", "NCHW"}},
      {"2d NCHW same_lower stride 2", {1, 2, 7, 7}, {3, 2, 4, 4}, {2, 2}, P("SAME_LOWER", {})},
      {"2d explicit asymmetric and negative pads", {1, 2, 6, 7}, {2, 2, 3, 2}, {1, 1}, P({{2, 0}, {-1, 1}})},
      {"2d rhs dilation", {1, 2, 9, 8}, {3, 2, 3, 2}, {1, 2}, P({{1, 1}, {0, 2}}), {}, {2, 3}},
      {"2d lhs dilation (transposed conv) NHWC",
       {1, 4, 4, 2},
       {3, 3, 2, 3},
       {1, 1},
       P({{1, 1}, {2, 1}}),
       {2, 2},
       {},
       S{"NHWC", "HWIO", "NHWC"}},
      {"2d all dilations and strides", {2, 2, 5, 6}, {2, 2, 2, 3}, {2, 1}, P({{1, 2}, {0, 1}}), {2, 1}, {1, 2}},
      {"1d NWC explicit pads, rhs dilation", {2, 9, 3}, {3, 3, 2}, {1}, P({{1, 2}}), {}, {2}, S{"NWC", "WIO", "NWC"}},
      {"1d NCW stride 3 same", {2, 3, 10}, {2, 3, 4}, {3}, P::Same()},
      {"3d NCDHW", {1, 2, 4, 5, 4}, {3, 2, 2, 3, 2}, {1, 2, 1}, P({{1, 0}, {0, 1}, {1, 1}})},
      {"3d NDHWC same", {1, 4, 3, 5, 2}, {2, 3, 2, 2, 3}, {2, 1, 1}, P::Same(), {}, {}, S{"NDHWC", "DHWIO", "NDHWC"}},
      {"feature groups NCHW", {2, 4, 5, 5}, {6, 2, 3, 3}, {1, 1}, P::Same(), {}, {}, std::nullopt, 2},
      {"feature groups NHWC", {2, 5, 5, 6}, {3, 3, 2, 6}, {1, 1}, P::Valid(), {}, {}, S{"NHWC", "HWIO", "NHWC"}, 3},
      {"depthwise NHWC", {2, 6, 6, 4}, {3, 3, 1, 4}, {1, 1}, P::Same(), {}, {}, S{"NHWC", "HWIO", "NHWC"}, 4},
      {"depthwise NHWC multiplier 2 stride 2",
       {2, 7, 6, 3},
       {3, 3, 1, 6},
       {2, 2},
       P::Same(),
       {},
       {},
       S{"NHWC", "HWIO", "NHWC"},
       3},
      {"depthwise NCHW", {1, 3, 5, 5}, {3, 1, 3, 3}, {1, 1}, P::Same(), {}, {}, std::nullopt, 3},
      {"batch groups NCHW", {4, 3, 5, 5}, {6, 3, 3, 3}, {1, 1}, P::Valid(), {}, {}, std::nullopt, 1, 2},
      {"batch groups NHWC", {6, 4, 4, 2}, {2, 2, 2, 6}, {1, 1}, P::Same(), {}, {}, S{"NHWC", "HWIO", "NHWC"}, 1, 3},
      {"1x1 NHWC", {2, 5, 5, 8}, {1, 1, 8, 6}, {1, 1}, P::Valid(), {}, {}, S{"NHWC", "HWIO", "NHWC"}},
      {"1x1 NCHW", {2, 8, 5, 5}, {6, 8, 1, 1}, {1, 1}, P::Valid()},
      {"1x1 NCHW groups", {2, 6, 3, 4}, {4, 3, 1, 1}, {1, 1}, P::Valid(), {}, {}, std::nullopt, 2},
      {"1x1 NHWC batch groups",
       {4, 3, 3, 5},
       {1, 1, 5, 4},
       {1, 1},
       P::Valid(),
       {},
       {},
       S{"NHWC", "HWIO", "NHWC"},
       1,
       2},
      {"1x1 stride 2 NHWC", {1, 5, 5, 4}, {1, 1, 4, 3}, {2, 2}, P::Valid(), {}, {}, S{"NHWC", "HWIO", "NHWC"}},
      {"odd dimension numbers", {3, 5, 2, 4}, {2, 3, 4, 3}, {1, 1}, P::Same(), {}, {}, S{"HNCW", "IOWH", "WCNH"}},
      {"spatial order from rhs", {2, 3, 5, 6}, {4, 3, 2, 3}, {1, 2}, P::Valid(), {}, {}, S{"NCHW", "OIWH", "NCHW"}},
      {"no spatial dims", {3, 4}, {5, 4}, {}, P::Valid(), {}, {}, S{"NC", "OI", "NC"}},
      {"kernel larger than input", {2, 3, 2, 2}, {4, 3, 3, 3}, {1, 1}, P::Valid()},
      {"empty batch", {0, 3, 4, 4}, {2, 3, 3, 3}, {1, 1}, P::Same()},
      {"empty features", {2, 0, 4, 4}, {2, 0, 3, 3}, {1, 1}, P::Same()},
      {"parallel NHWC", {2, 12, 12, 16}, {3, 3, 16, 8}, {1, 1}, P::Same(), {}, {}, S{"NHWC", "HWIO", "NHWC"}},
      {"parallel NCHW", {2, 16, 12, 12}, {8, 16, 3, 3}, {1, 1}, P::Same()},
  };
}

JX_OPINFO(conv_general_dilated) {
  OpInfo info;
  info.name = "conv_general_dilated";
  info.dtypes = {bool_, int8, int32, uint8, float16, bfloat16, float32, float64};
  info.tolerance = ContractionTolerance;
  info.samples = [](DType d, std::mt19937_64& rng) {
    std::vector<Sample> out;
    for (const ConvCase& c : ConvCases()) {
      // Shapes are listed in spec-letter order; the arrays are exactly those shapes.
      const lax::ConvDimensionNumbers dn =
          c.specs ? lax::ConvDimensionNumbers::FromSpecs((*c.specs)[0], (*c.specs)[1], (*c.specs)[2])
                  : lax::ConvDimensionNumbers::Default(static_cast<int>(c.lhs.size()) - 2);
      const Array lhs = ContractionArg(rng, c.lhs, d), rhs = ContractionArg(rng, c.rhs, d);
      const size_t nsp = c.lhs.size() - 2;
      RefConvParams rp{c.strides,
                       c.lhs_dilation.empty() ? std::vector<int64_t>(nsp, 1) : c.lhs_dilation,
                       c.rhs_dilation.empty() ? std::vector<int64_t>(nsp, 1) : c.rhs_dilation,
                       c.padding.explicit_pads,
                       dn,
                       c.feature_groups,
                       c.batch_groups};
      if (!c.padding.mode.empty()) {
        std::vector<int64_t> in_sp, win;
        for (size_t i = 0; i < nsp; ++i) {
          in_sp.push_back(c.lhs[dn.lhs_spec[2 + i]]);
          win.push_back((c.rhs[dn.rhs_spec[2 + i]] - 1) * rp.rhs_dilation[i] + 1);
        }
        rp.pads = lax::padtype_to_pads(in_sp, win, c.strides, c.padding.mode);
      }
      // (precision, preferred_element_type) variants; precision changes no CPU numbers.
      std::vector<std::pair<std::optional<lax::PrecisionPair>, std::optional<DType>>> variants = {{}};
      if (c.name == "2d NCHW same" || c.name == "2d NHWC valid stride 2") variants.push_back({{}, WiderPreferred(d)});
      if (c.name == "2d NCHW same") {
        using Prec = lax::Precision;
        variants.push_back({lax::PrecisionPair{Prec::kHighest, Prec::kHighest}, std::nullopt});
        variants.push_back({lax::PrecisionPair{Prec::kDefault, Prec::kHigh}, WiderPreferred(d)});
      }
      for (const auto& [precision, pref] : variants) {
        Sample s;
        s.description = StrCat(c.name, ": ", ShapedArray{c.lhs, d}.str(), " * ", ShapedArray{c.rhs, d}.str(),
                               pref ? StrCat(" preferred ", dtype_name(*pref)) : "",
                               precision ? StrCat(" precision ", lax::PrecisionName((*precision)[0]), ",",
                                                  lax::PrecisionName((*precision)[1]))
                                         : "");
        s.args = {lhs, rhs};
        s.op = [c, precision, pref](const std::vector<Array>& a) {
          std::optional<lax::ConvDimensionNumbers> dnums;
          if (c.specs) dnums = lax::ConvDimensionNumbers::FromSpecs((*c.specs)[0], (*c.specs)[1], (*c.specs)[2]);
          return std::vector<Array>{lax::conv_general_dilated(a[0], a[1], c.strides, c.padding, c.lhs_dilation,
                                                              c.rhs_dilation, dnums, c.feature_groups, c.batch_groups,
                                                              precision, pref)};
        };
        const DType out_dtype = pref.value_or(d);
        s.reference = [rp, out_dtype](const std::vector<RefArray>& a) {
          return std::vector<RefArray>{NaiveConv(a[0], a[1], rp, out_dtype)};
        };
        s.out_dtypes = {pref.value_or(d)};
        out.push_back(std::move(s));
      }
    }
    return out;
  };
  return info;
}

}  // namespace
}  // namespace jx::opinfo::conv_opinfo
