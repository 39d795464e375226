// conv_general_dilated: abstract eval (JAX's shape rule, XLA's InferConvolveShape), the
// eager impl and the public wrapper (dimension numbers, padding strings). The numerics
// (im2col + GEMM, the depthwise direct path) live in lax/kernels/convolution.cc, which the
// compiled CPU backend calls too.
#include "jx/lax/convolution.h"

#include <algorithm>
#include <memory>
#include <optional>

#include "absl/hash/hash.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_join.h"
#include "jx/lax/dot_general.h"
#include "jx/lax/kernels/convolution.h"
#include "jx/lax/op_util.h"
#include "jx/lax/primitives.h"

namespace jx::lax {

constexpr std::string_view kConvOp = "conv_general_dilated";

namespace {

std::string TupleStr(const std::vector<int64_t>& v) {
  if (v.size() == 1) return StrCat("(", v[0], ",)");
  return StrCat("(", absl::StrJoin(v, ", "), ")");
}

// The dimension_numbers param, printed as JAX's NamedTuple repr.
class ConvDimensionNumbersParam final : public ParamObject {
 public:
  explicit ConvDimensionNumbersParam(ConvDimensionNumbers d) : d_(std::move(d)) {}
  const ConvDimensionNumbers& value() const { return d_; }
  size_t Hash() const override { return absl::HashOf(d_.lhs_spec, d_.rhs_spec, d_.out_spec); }
  bool Equals(const ParamObject& other) const override {
    const auto* o = dynamic_cast<const ConvDimensionNumbersParam*>(&other);
    return o != nullptr && o->d_ == d_;
  }
  std::string ToString() const override {
    return StrCat("ConvDimensionNumbers(lhs_spec=", TupleStr(d_.lhs_spec), ", rhs_spec=", TupleStr(d_.rhs_spec),
                  ", out_spec=", TupleStr(d_.out_spec), ")");
  }

 private:
  ConvDimensionNumbers d_;
};

int64_t DilateDim(int64_t d, int64_t dilation) { return d == 0 ? 0 : 1 + dilation * (d - 1); }

}  // namespace

ConvDimensionNumbers ConvDimensionNumbers::FromSpecs(std::string_view lhs, std::string_view rhs, std::string_view out) {
  const std::string_view specs[3] = {lhs, rhs, out};
  const char pairs[3][2] = {{'N', 'C'}, {'O', 'I'}, {'N', 'C'}};
  for (int i = 0; i < 3; ++i) {
    const std::string_view s = specs[i];
    for (char ch : pairs[i]) {
      if (std::count(s.begin(), s.end(), ch) != 1) {
        ThrowOpError<TypeError>(kConvOp, "convolution dimension_numbers[", i, "] must contain the characters '",
                                std::string(1, pairs[i][0]), "' and '", std::string(1, pairs[i][1]),
                                "' exactly once, got '", s, "'");
      }
    }
    for (size_t a = 0; a < s.size(); ++a) {
      if (s.find(s[a], a + 1) != std::string_view::npos) {
        ThrowOpError<TypeError>(kConvOp, "convolution dimension_numbers[", i,
                                "] cannot have duplicate characters, got '", s, "'");
      }
    }
  }
  auto spatial_set = [&](int i) {
    std::string chars;
    for (char ch : specs[i]) {
      if (ch != pairs[i][0] && ch != pairs[i][1]) chars.push_back(ch);
    }
    std::sort(chars.begin(), chars.end());
    return chars;
  };
  if (spatial_set(0) != spatial_set(1) || spatial_set(1) != spatial_set(2)) {
    ThrowOpError<TypeError>(kConvOp, "convolution dimension_numbers elements must each have the same set of spatial "
                            "characters, got ('", lhs, "', '", rhs, "', '", out, "')");
  }
  // Spatial dims in the order their letters appear in the rhs spec.
  std::string rhs_spatial;
  for (char ch : rhs) {
    if (ch != 'O' && ch != 'I') rhs_spatial.push_back(ch);
  }
  auto perm = [&](std::string_view s, char first, char second) {
    std::vector<int64_t> p = {static_cast<int64_t>(s.find(first)), static_cast<int64_t>(s.find(second))};
    for (char ch : rhs_spatial) p.push_back(static_cast<int64_t>(s.find(ch)));
    return p;
  };
  return ConvDimensionNumbers{perm(lhs, 'N', 'C'), perm(rhs, 'O', 'I'), perm(out, 'N', 'C')};
}

ConvDimensionNumbers ConvDimensionNumbers::Default(int num_spatial_dims) {
  std::vector<int64_t> iota(static_cast<size_t>(std::max(0, num_spatial_dims + 2)));
  for (size_t i = 0; i < iota.size(); ++i) iota[i] = static_cast<int64_t>(i);
  return ConvDimensionNumbers{iota, iota, iota};
}

std::vector<std::pair<int64_t, int64_t>> padtype_to_pads(const std::vector<int64_t>& in_shape,
                                                         const std::vector<int64_t>& window_shape,
                                                         const std::vector<int64_t>& window_strides,
                                                         std::string_view padding) {
  const std::string mode = absl::AsciiStrToUpper(absl::string_view(padding.data(), padding.size()));
  if (mode != "SAME" && mode != "SAME_LOWER" && mode != "VALID") {
    ThrowOpError<ValueError>("padtype_to_pads", "Unrecognized padding type: expected 'VALID', 'SAME' or ",
                             "'SAME_LOWER', got '", padding, "'");
  }
  if (window_shape.size() != in_shape.size() || window_strides.size() != in_shape.size()) {
    ThrowOpError<ValueError>("padtype_to_pads", "in_shape ", TupleStr(in_shape), ", window_shape ",
                             TupleStr(window_shape), " and window_strides ", TupleStr(window_strides),
                             " must have equal lengths");
  }
  std::vector<std::pair<int64_t, int64_t>> pads(in_shape.size(), {0, 0});
  if (mode == "VALID") return pads;
  for (size_t i = 0; i < in_shape.size(); ++i) {
    const int64_t s = window_strides[i];
    if (s <= 0) {
      ThrowOpError<ValueError>("padtype_to_pads", "window_strides must be positive, got ", TupleStr(window_strides));
    }
    const int64_t out = (in_shape[i] + s - 1) / s;
    const int64_t pad = std::max<int64_t>(0, (out - 1) * s + window_shape[i] - in_shape[i]);
    pads[i] = mode == "SAME" ? std::pair{pad / 2, pad - pad / 2} : std::pair{pad - pad / 2, pad / 2};
  }
  return pads;
}

namespace internal {

const ConvDimensionNumbers& GetConvDimensionNumbers(const ParamMap& params) {
  const auto* p = dynamic_cast<const ConvDimensionNumbersParam*>(params.GetObject("dimension_numbers").get());
  if (p == nullptr) throw InternalError("conv_general_dilated: dimension_numbers param has the wrong type");
  return p->value();
}

namespace {

// Checks that each spec is a permutation of the operands' dims.
void CheckSpecs(const ShapedArray& lhs, const ShapedArray& rhs, const ConvDimensionNumbers& dn) {
  if (lhs.ndim() != rhs.ndim()) {
    ThrowOpError<ShapeError>(kConvOp, "lhs and rhs must have the same number of dimensions, got lhs ", lhs.str(),
                             " and rhs ", rhs.str());
  }
  if (lhs.ndim() < 2) {
    ThrowOpError<ShapeError>(kConvOp, "operands must have rank >= 2 (batch and feature dims), got lhs ", lhs.str(),
                             " and rhs ", rhs.str());
  }
  const std::pair<const std::vector<int64_t>*, const char*> specs[3] = {
      {&dn.lhs_spec, "lhs_spec"}, {&dn.rhs_spec, "rhs_spec"}, {&dn.out_spec, "out_spec"}};
  for (const auto& [spec, name] : specs) {
    std::vector<bool> seen(static_cast<size_t>(lhs.ndim()), false);
    bool ok = static_cast<int64_t>(spec->size()) == lhs.ndim();
    for (int64_t d : *spec) {
      if (!ok || d < 0 || d >= lhs.ndim() || seen[static_cast<size_t>(d)]) {
        ok = false;
        break;
      }
      seen[static_cast<size_t>(d)] = true;
    }
    if (!ok) {
      ThrowOpError<ShapeError>(kConvOp, "dimension_numbers ", name, " ", TupleStr(*spec),
                               " must be a permutation of the ", lhs.ndim(), " dims of lhs ", lhs.str(), " and rhs ",
                               rhs.str());
    }
  }
}

// Params decoded once per call.
struct ConvParams {
  const ConvDimensionNumbers* dn;
  std::vector<int64_t> strides, lhs_dilation, rhs_dilation;
  std::vector<std::pair<int64_t, int64_t>> padding;
  int64_t feature_group_count, batch_group_count;
};

ConvParams DecodeParams(const ParamMap& params) {
  ConvParams p;
  p.dn = &GetConvDimensionNumbers(params);
  p.strides = params.GetInts("window_strides");
  p.lhs_dilation = params.GetInts("lhs_dilation");
  p.rhs_dilation = params.GetInts("rhs_dilation");
  for (const Param& pad : params.GetList("padding")) {
    const auto* v = std::get_if<std::vector<int64_t>>(&pad.value);
    if (v == nullptr || v->size() != 2) {
      throw InternalError(StrCat("conv_general_dilated: malformed padding param ", params.Get("padding").ToString()));
    }
    p.padding.emplace_back((*v)[0], (*v)[1]);
  }
  p.feature_group_count = params.GetInt("feature_group_count");
  p.batch_group_count = params.GetInt("batch_group_count");
  return p;
}

std::string PadsStr(const std::vector<std::pair<int64_t, int64_t>>& pads) {
  std::vector<std::string> parts;
  for (const auto& [lo, hi] : pads) parts.push_back(StrCat("(", lo, ", ", hi, ")"));
  if (parts.size() == 1) return StrCat("(", parts[0], ",)");
  return StrCat("(", absl::StrJoin(parts, ", "), ")");
}

Avals ConvAbstractEval(InAvals in, const ParamMap& params) {
  CheckArity(kConvOp, in, 2);
  const ShapedArray& lhs = *in[0];
  const ShapedArray& rhs = *in[1];
  const ConvParams p = DecodeParams(params);
  const ConvDimensionNumbers& dn = *p.dn;
  CheckSpecs(lhs, rhs, dn);
  const int64_t nsp = lhs.ndim() - 2;
  const std::string where = StrCat(" (lhs ", lhs.str(), ", rhs ", rhs.str(), ")");
  auto check_vec = [&](const std::vector<int64_t>& v, const char* name) {
    if (static_cast<int64_t>(v.size()) != nsp) {
      ThrowOpError<ShapeError>(kConvOp, name, " ", TupleStr(v), " must have one entry per spatial dim (", nsp, ")",
                               where);
    }
    for (int64_t x : v) {
      if (x <= 0) ThrowOpError<ValueError>(kConvOp, name, " must be positive, got ", TupleStr(v), where);
    }
  };
  check_vec(p.strides, "window_strides");
  check_vec(p.lhs_dilation, "lhs_dilation");
  check_vec(p.rhs_dilation, "rhs_dilation");
  if (static_cast<int64_t>(p.padding.size()) != nsp) {
    ThrowOpError<ShapeError>(kConvOp, "Wrong number of explicit pads for convolution: expected ", nsp, ", got ",
                             p.padding.size(), " (padding ", PadsStr(p.padding), ")", where);
  }
  const int64_t g = p.feature_group_count, bg = p.batch_group_count;
  if (g <= 0) ThrowOpError<ValueError>(kConvOp, "feature_group_count must be a positive integer, got ", g, where);
  if (bg <= 0) ThrowOpError<ValueError>(kConvOp, "batch_group_count must be a positive integer, got ", bg, where);
  if (g > 1 && bg > 1) {
    ThrowOpError<ValueError>(kConvOp, "At most one of batch_group_count and feature_group_count may be > 1, got "
                             "batch_group_count=", bg, " and feature_group_count=", g, where);
  }
  const int64_t lhs_batch = lhs.shape[dn.lhs_spec[0]], lhs_feat = lhs.shape[dn.lhs_spec[1]];
  const int64_t rhs_out = rhs.shape[dn.rhs_spec[0]], rhs_in = rhs.shape[dn.rhs_spec[1]];
  if (lhs_feat % g != 0) {
    ThrowOpError<ShapeError>(kConvOp, "feature_group_count must divide lhs feature dimension size, but ", g,
                             " does not divide ", lhs_feat, where);
  }
  if (lhs_feat / g != rhs_in) {
    ThrowOpError<ShapeError>(kConvOp, "lhs feature dimension size divided by feature_group_count must equal the rhs "
                             "input feature dimension size, but ", lhs_feat, " // ", g, " != ", rhs_in, where);
  }
  if (rhs_out % g != 0) {
    ThrowOpError<ShapeError>(kConvOp, "rhs output feature dimension size must be a multiple of feature_group_count, "
                             "but ", rhs_out, " is not a multiple of ", g, where);
  }
  if (lhs_batch % bg != 0) {
    ThrowOpError<ShapeError>(kConvOp, "batch_group_count must divide lhs batch dimension size, but ", bg,
                             " does not divide ", lhs_batch, where);
  }
  if (rhs_out % bg != 0) {
    ThrowOpError<ShapeError>(kConvOp, "rhs output feature dimension size must be a multiple of batch_group_count, "
                             "but ", rhs_out, " is not a multiple of ", bg, where);
  }
  if (lhs.dtype != rhs.dtype) {
    ThrowOpError<TypeError>(kConvOp, "requires arguments to have the same dtypes, got ", dtype_name(lhs.dtype), ", ",
                            dtype_name(rhs.dtype), where);
  }
  const std::optional<DType> preferred = OptionalDTypeParam(params, "preferred_element_type");
  const DType dtype = ValidatePreferredElementType(kConvOp, lhs.dtype, preferred, lhs, rhs);
  Shape out(static_cast<size_t>(lhs.ndim()));
  out[dn.out_spec[0]] = lhs_batch / bg;
  out[dn.out_spec[1]] = rhs_out;
  for (int64_t i = 0; i < nsp; ++i) {
    const int64_t in_size = DilateDim(lhs.shape[dn.lhs_spec[2 + i]], p.lhs_dilation[i]);
    const int64_t padded = in_size + p.padding[i].first + p.padding[i].second;
    if (padded < 0) {
      ThrowOpError<ShapeError>(kConvOp, "Negative padding is larger than the size of the corresponding dimension: "
                               "got padding=", PadsStr(p.padding), " for spatial dim ", i, " of size ", in_size, where);
    }
    const int64_t window = DilateDim(rhs.shape[dn.rhs_spec[2 + i]], p.rhs_dilation[i]);
    out[dn.out_spec[2 + i]] = padded < window ? 0 : (padded - window) / p.strides[i] + 1;
  }
  return {ShapedArray{std::move(out), dtype, lhs.weak_type && rhs.weak_type && !preferred}};
}

// ----- kernel: lax/kernels/convolution.h, shared with the compiled CPU backend -----

Arrays ConvImpl(absl::Span<const Array> in, const ParamMap& params, absl::Span<const ShapedArray> out_avals) {
  const Array& lhs = in[0];
  const Array& rhs = in[1];
  Array out = Array::Empty(out_avals[0]);
  if (out.size() == 0) return {out};
  const ConvParams p = DecodeParams(params);
  std::vector<int64_t> pad_lo, pad_hi;
  for (const auto& [lo, hi] : p.padding) {
    pad_lo.push_back(lo);
    pad_hi.push_back(hi);
  }
  kernels::ConvArgs c;
  c.lhs_dtype = lhs.dtype();
  c.rhs_dtype = rhs.dtype();
  c.out_dtype = out.dtype();
  c.lhs_shape = lhs.shape();
  c.rhs_shape = rhs.shape();
  c.out_shape = out.shape();
  c.lhs_spec = p.dn->lhs_spec;
  c.rhs_spec = p.dn->rhs_spec;
  c.out_spec = p.dn->out_spec;
  c.window_strides = p.strides;
  c.padding_low = pad_lo;
  c.padding_high = pad_hi;
  c.lhs_dilation = p.lhs_dilation;
  c.rhs_dilation = p.rhs_dilation;
  c.feature_group_count = p.feature_group_count;
  c.batch_group_count = p.batch_group_count;
  c.lhs = lhs.data();
  c.rhs = rhs.data();
  c.out = out.mutable_data();
  kernels::ConvGeneralDilated(c);
  return {out};
}

}  // namespace

void RegisterConvolution(Registry& r) {
  PrimitiveRules& rules = r.Define(kConvGeneralDilated);
  rules.abstract_eval = ConvAbstractEval;
  rules.impl = ConvImpl;
  DefineConvolutionRules(rules);
}

}  // namespace internal

Array conv_general_dilated(const Array& lhs, const Array& rhs, const std::vector<int64_t>& window_strides,
                           const Padding& padding, const std::vector<int64_t>& lhs_dilation,
                           const std::vector<int64_t>& rhs_dilation,
                           std::optional<ConvDimensionNumbers> dimension_numbers, int64_t feature_group_count,
                           int64_t batch_group_count, PrecisionLike precision,
                           std::optional<DType> preferred_element_type) {
  const ShapedArray& la = lhs.aval();
  const ShapedArray& ra = rhs.aval();
  const ConvDimensionNumbers dn =
      dimension_numbers ? *dimension_numbers : ConvDimensionNumbers::Default(static_cast<int>(la.ndim()) - 2);
  internal::CheckSpecs(la, ra, dn);
  const int64_t nsp = la.ndim() - 2;
  const std::vector<int64_t> ones(static_cast<size_t>(nsp), 1);
  const std::vector<int64_t> ld = lhs_dilation.empty() ? ones : lhs_dilation;
  const std::vector<int64_t> rd = rhs_dilation.empty() ? ones : rhs_dilation;
  std::vector<std::pair<int64_t, int64_t>> pads = padding.explicit_pads;
  if (!padding.mode.empty()) {
    const std::string mode = absl::AsciiStrToUpper(absl::string_view(padding.mode.data(), padding.mode.size()));
    if (mode != "SAME" && mode != "SAME_LOWER" && mode != "VALID") {
      ThrowOpError<ValueError>(kConvOp, "Unrecognized padding type: expected 'VALID', 'SAME' or 'SAME_LOWER', got '",
                               padding.mode, "'");
    }
    if (!padding.explicit_pads.empty()) {
      ThrowOpError<ValueError>(kConvOp, "padding gives both the mode '", padding.mode, "' and explicit pads");
    }
    if (ld != ones) {
      ThrowOpError<ValueError>(kConvOp, "String padding is not implemented for transposed convolution using this op "
                               "(lhs_dilation ", TupleStr(ld), "). Please either exactly specify the required "
                               "padding or use conv_transpose.");
    }
    if (static_cast<int64_t>(window_strides.size()) != nsp || static_cast<int64_t>(rd.size()) != nsp) {
      ThrowOpError<ShapeError>(kConvOp, "window_strides ", TupleStr(window_strides), " and rhs_dilation ",
                               TupleStr(rd), " must have one entry per spatial dim (", nsp, ") (lhs ", la.str(),
                               ", rhs ", ra.str(), ")");
    }
    std::vector<int64_t> in_sp, win_sp;
    for (int64_t i = 0; i < nsp; ++i) {
      in_sp.push_back(la.shape[dn.lhs_spec[2 + i]]);
      win_sp.push_back(DilateDim(ra.shape[dn.rhs_spec[2 + i]], rd[i]));
    }
    pads = padtype_to_pads(in_sp, win_sp, window_strides, padding.mode);
  }
  ParamList pad_list;
  for (const auto& [lo, hi] : pads) pad_list.push_back(Param(std::vector<int64_t>{lo, hi}));
  ParamMap params{
      {"window_strides", window_strides},
      {"padding", std::move(pad_list)},
      {"lhs_dilation", ld},
      {"rhs_dilation", rd},
      {"dimension_numbers", std::shared_ptr<const ParamObject>(std::make_shared<ConvDimensionNumbersParam>(dn))},
      {"feature_group_count", feature_group_count},
      {"batch_group_count", batch_group_count},
      {"precision", internal::PrecisionParam(internal::CanonicalizePrecision(precision))},
      {"preferred_element_type", preferred_element_type ? Param(*preferred_element_type) : Param(ParamNone{})},
  };
  return internal::BindOp1(kConvGeneralDilated, {lhs, rhs}, params);
}

Array conv_general_dilated(const Array& lhs, const Array& rhs, const std::vector<int64_t>& window_strides,
                           const Padding& padding, const std::vector<int64_t>& lhs_dilation,
                           const std::vector<int64_t>& rhs_dilation,
                           std::optional<ConvDimensionNumbers> dimension_numbers, int64_t feature_group_count,
                           int64_t batch_group_count, std::optional<DType> preferred_element_type) {
  return conv_general_dilated(lhs, rhs, window_strides, padding, lhs_dilation, rhs_dilation,
                              std::move(dimension_numbers), feature_group_count, batch_group_count, PrecisionLike(),
                              preferred_element_type);
}

}  // namespace jx::lax
