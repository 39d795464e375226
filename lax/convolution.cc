// conv_general_dilated: abstract eval (JAX's shape rule, XLA's InferConvolveShape), the
// eager kernel and the public wrapper (dimension numbers, padding strings).
//
// Kernel: two orientations, picked by where the lhs feature dim lives.
//  - Channels-last (lhs feature dim innermost, e.g. NHWC): im2col rows of output positions,
//    patch columns ordered (window..., channel); out[rows, O] = patches x W[(window, I), O].
//  - Otherwise (e.g. NCHW): per image, im2col columns of output positions, rows ordered
//    (channel, window...); out[O, positions] = W[O, (I, window)] x cols.
// Each works on scratch tiles of a few hundred KiB, tiles spread over the pool, one
// single-threaded GEMM per tile. 1x1 stride-1 convolutions skip im2col (one big GEMM);
// channels-last depthwise convolutions run a vectorized direct loop. The result lands in
// the orientation's natural layout and is permuted into out_spec when that differs.
#include "jx/lax/convolution.h"

#include <algorithm>
#include <cstring>
#include <memory>
#include <optional>

#include <Eigen/Core>

#include "absl/container/inlined_vector.h"
#include "absl/hash/hash.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_join.h"
#include "jx/core/buffer.h"
#include "jx/lax/dot_general.h"
#include "jx/lax/kernels/dispatch.h"
#include "jx/lax/kernels/gemm.h"
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

using DimVec = absl::InlinedVector<int64_t, 6>;

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

// ----- kernel -----

// Everything the kernels need, in canonical (batch, feature, spatial...) terms.
struct Geometry {
  int nsp = 0;
  int64_t n_out = 0;         // output batch (lhs batch / batch_group_count)
  int64_t o = 0;             // output features
  int64_t groups = 1;        // feature or batch groups
  bool batch_grouped = false;
  int64_t cg = 0, og = 0;    // input channels per patch, output features per group
  DimVec in_size, win, out_size;
  int64_t p = 1, kprod = 1;  // output positions, window positions
  int64_t ls_n = 0, ls_c = 0;
  DimVec ls_sp;
  // tables[i][o * win[i] + k]: lhs offset along spatial dim i, or -1 (padding/dilation hole).
  std::vector<std::vector<int64_t>> tables;

  int64_t kc() const { return kprod * cg; }
  // Offset of group g's first channel of output-batch image n in lhs.
  int64_t ImageBase(int64_t n, int64_t g) const {
    return batch_grouped ? (g * n_out + n) * ls_n : n * ls_n + g * cg * ls_c;
  }
};

Geometry MakeGeometry(const Array& lhs, const Array& rhs, const ConvParams& p, const ShapedArray& out) {
  const ConvDimensionNumbers& dn = *p.dn;
  Geometry g;
  g.nsp = static_cast<int>(lhs.ndim() - 2);
  const std::vector<int64_t> ls = RowMajorStrides(lhs.shape());
  g.n_out = out.shape[dn.out_spec[0]];
  g.o = out.shape[dn.out_spec[1]];
  g.batch_grouped = p.batch_group_count > 1;
  g.groups = g.batch_grouped ? p.batch_group_count : p.feature_group_count;
  g.cg = rhs.shape()[dn.rhs_spec[1]];
  g.og = g.o / g.groups;
  g.ls_n = ls[dn.lhs_spec[0]];
  g.ls_c = ls[dn.lhs_spec[1]];
  for (int i = 0; i < g.nsp; ++i) {
    const int64_t in = lhs.shape()[dn.lhs_spec[2 + i]], w = rhs.shape()[dn.rhs_spec[2 + i]];
    const int64_t os = out.shape[dn.out_spec[2 + i]];
    g.in_size.push_back(in);
    g.win.push_back(w);
    g.out_size.push_back(os);
    g.ls_sp.push_back(ls[dn.lhs_spec[2 + i]]);
    g.p *= os;
    g.kprod *= w;
    std::vector<int64_t> t(static_cast<size_t>(os * w));
    const int64_t ld = p.lhs_dilation[i];
    for (int64_t oi = 0; oi < os; ++oi) {
      for (int64_t k = 0; k < w; ++k) {
        int64_t idx = oi * p.strides[i] + k * p.rhs_dilation[i] - p.padding[i].first;
        if (idx >= 0 && ld > 1) idx = idx % ld == 0 ? idx / ld : -1;
        t[static_cast<size_t>(oi * w + k)] = idx >= 0 && idx < in ? idx * g.ls_sp.back() : -1;
      }
    }
    g.tables.push_back(std::move(t));
  }
  return g;
}

// off[kidx] (row-major over the window) for output position pos (row-major over out_size).
void WindowOffsets(const Geometry& g, int64_t pos, int64_t* off) {
  DimVec o(static_cast<size_t>(g.nsp));
  for (int i = g.nsp - 1; i >= 0; --i) {
    o[i] = pos % g.out_size[i];
    pos /= g.out_size[i];
  }
  off[0] = 0;
  int64_t count = 1;
  for (int i = 0; i < g.nsp; ++i) {
    const int64_t w = g.win[i];
    const int64_t* t = g.tables[i].data() + o[i] * w;
    // Expand in place from the back: entry q becomes entries q*w .. q*w+w-1.
    for (int64_t q = count - 1; q >= 0; --q) {
      const int64_t base = off[q];
      for (int64_t k = w - 1; k >= 0; --k) off[q * w + k] = (base < 0 || t[k] < 0) ? -1 : base + t[k];
    }
    count *= w;
  }
}

template <typename D, typename S>
inline D Cvt(S s) {
  if constexpr (std::is_same_v<D, S>) return s;
  else if constexpr (kernels::kIsHalf<S>) return static_cast<D>(static_cast<float>(s));
  else return static_cast<D>(s);
}

// Channels-last patches for output rows [r0, r1) (flattened (n, position)) of group grp:
// patches[(r - r0) * kc + kidx * cg + c].
template <typename Acc, typename S>
void Im2ColRows(const Geometry& g, const S* lhs, int64_t grp, int64_t r0, int64_t r1, Acc* patches, int64_t* off) {
  const int64_t kc = g.kc(), cg = g.cg, sc = g.ls_c;
  for (int64_t r = r0; r < r1; ++r) {
    const int64_t n = r / g.p;
    WindowOffsets(g, r % g.p, off);
    const S* base = lhs + g.ImageBase(n, grp);
    Acc* row = patches + (r - r0) * kc;
    for (int64_t kidx = 0; kidx < g.kprod; ++kidx) {
      Acc* dst = row + kidx * cg;
      if (off[kidx] < 0) {
        std::fill(dst, dst + cg, Acc(0));
      } else if (sc == 1) {
        const S* src = base + off[kidx];
        if constexpr (std::is_same_v<Acc, S>) std::memcpy(dst, src, static_cast<size_t>(cg) * sizeof(Acc));
        else for (int64_t c = 0; c < cg; ++c) dst[c] = Cvt<Acc>(src[c]);
      } else {
        const S* src = base + off[kidx];
        for (int64_t c = 0; c < cg; ++c) dst[c] = Cvt<Acc>(src[c * sc]);
      }
    }
  }
}

// A run of consecutive columns of one im2col row: `len` columns from j0 reading lhs offsets
// off, off + step, ... (a stride-1 window row is one contiguous run), or zeros (off < 0).
struct ColRun {
  int64_t j0, len, off, step;
};

// Scratch of Im2ColCols, reused across calls.
struct ColScratch {
  std::vector<int64_t> offt, off, run_begin;
  std::vector<ColRun> runs;
};

// Channels-first columns for image n, group grp, positions [p0, p1):
// cols[(c * kprod + kidx) * ld + (pos - p0)]. The runs of each window position are found once
// and reused for every channel.
template <typename Acc, typename S>
void Im2ColCols(const Geometry& g, const S* lhs, int64_t n, int64_t grp, int64_t p0, int64_t p1, Acc* cols,
                int64_t ld, ColScratch& scratch) {
  const int64_t pc = p1 - p0;
  scratch.offt.resize(static_cast<size_t>(pc * g.kprod));
  scratch.off.resize(static_cast<size_t>(g.kprod));
  int64_t* offt = scratch.offt.data();
  int64_t* off = scratch.off.data();
  std::vector<ColRun>& runs = scratch.runs;
  std::vector<int64_t>& run_begin = scratch.run_begin;
  for (int64_t j = 0; j < pc; ++j) {
    WindowOffsets(g, p0 + j, off);
    for (int64_t kidx = 0; kidx < g.kprod; ++kidx) offt[kidx * pc + j] = off[kidx];
  }
  runs.clear();
  run_begin.assign(static_cast<size_t>(g.kprod + 1), 0);
  for (int64_t kidx = 0; kidx < g.kprod; ++kidx) {
    run_begin[kidx] = static_cast<int64_t>(runs.size());
    const int64_t* t = offt + kidx * pc;
    for (int64_t j = 0; j < pc;) {
      int64_t e = j + 1;
      if (t[j] < 0) {
        while (e < pc && t[e] < 0) ++e;
        runs.push_back({j, e - j, -1, 0});
      } else {
        const int64_t step = e < pc && t[e] >= 0 ? t[e] - t[j] : 1;
        while (e < pc && t[e] >= 0 && t[e] == t[e - 1] + step) ++e;
        runs.push_back({j, e - j, t[j], step});
      }
      j = e;
    }
  }
  run_begin[g.kprod] = static_cast<int64_t>(runs.size());
  const S* base = lhs + g.ImageBase(n, grp);
  for (int64_t c = 0; c < g.cg; ++c) {
    const S* src = base + c * g.ls_c;
    for (int64_t kidx = 0; kidx < g.kprod; ++kidx) {
      Acc* dst = cols + (c * g.kprod + kidx) * ld;
      for (int64_t r = run_begin[kidx]; r < run_begin[kidx + 1]; ++r) {
        const ColRun& run = runs[static_cast<size_t>(r)];
        Acc* d = dst + run.j0;
        if (run.off < 0) {
          std::fill(d, d + run.len, Acc(0));
        } else if (run.step == 1) {
          const S* sp = src + run.off;
          if constexpr (std::is_same_v<Acc, S>) std::memcpy(d, sp, static_cast<size_t>(run.len) * sizeof(Acc));
          else for (int64_t j = 0; j < run.len; ++j) d[j] = Cvt<Acc>(sp[j]);
        } else {
          const S* sp = src + run.off;
          for (int64_t j = 0; j < run.len; ++j) d[j] = Cvt<Acc>(sp[j * run.step]);
        }
      }
    }
  }
}

// Channels-last depthwise (one input channel per group): out[r, c * og + m] =
// sum_k in[n, pos(r, k), c] * w[k, c * og + m], vectorized over channels.
template <typename Acc, typename S>
void DepthwiseRows(const Geometry& g, const S* lhs, const Acc* w, Acc* out) {
  const int64_t rows = g.n_out * g.p, ch = g.groups, o = g.o, og = g.og;
  const int64_t grain = std::max<int64_t>(1, kernels::kParallelGrain / std::max<int64_t>(1, g.kprod * o));
  ParallelFor(rows, grain, [&](int64_t r0, int64_t r1) {
    std::vector<int64_t> off(static_cast<size_t>(g.kprod));
    std::vector<Acc> in_buf;
    const bool direct_in = std::is_same_v<Acc, S> && g.ls_c == 1;
    if (!direct_in) in_buf.resize(static_cast<size_t>(ch));
    for (int64_t r = r0; r < r1; ++r) {
      const int64_t n = r / g.p;
      WindowOffsets(g, r % g.p, off.data());
      Acc* acc = out + r * o;
      std::fill(acc, acc + o, Acc(0));
      const S* base = lhs + n * g.ls_n;
      for (int64_t kidx = 0; kidx < g.kprod; ++kidx) {
        if (off[kidx] < 0) continue;
        const Acc* in_row;
        if constexpr (std::is_same_v<Acc, S>) {
          if (direct_in) {
            in_row = base + off[kidx];
          } else {
            for (int64_t c = 0; c < ch; ++c) in_buf[c] = base[off[kidx] + c * g.ls_c];
            in_row = in_buf.data();
          }
        } else {
          for (int64_t c = 0; c < ch; ++c) in_buf[c] = Cvt<Acc>(base[off[kidx] + c * g.ls_c]);
          in_row = in_buf.data();
        }
        const Acc* wk = w + kidx * o;
        if (og == 1) {
          kernels::ArrayMap<Acc>(acc, ch) +=
              kernels::ConstArrayMap<Acc>(wk, ch) * kernels::ConstArrayMap<Acc>(in_row, ch);
        } else {
          // (og x ch) column-major views: entry (m, c) is feature c * og + m.
          Eigen::Map<Eigen::Array<Acc, Eigen::Dynamic, Eigen::Dynamic>> a(acc, og, ch);
          Eigen::Map<const Eigen::Array<Acc, Eigen::Dynamic, Eigen::Dynamic>> wm(wk, og, ch);
          a += wm.rowwise() * Eigen::Map<const Eigen::Array<Acc, 1, Eigen::Dynamic>>(in_row, ch);
        }
      }
    }
  });
}

// The stride of the innermost of dims that nest into one axis (stride[a] == stride[b] *
// size[b] for consecutive non-trivial dims), 0 when all have size 1, nullopt otherwise.
std::optional<int64_t> NestedStride(const DimVec& sizes, const DimVec& strides) {
  int64_t prev = -1;
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (sizes[i] == 1) continue;
    if (prev >= 0 && strides[prev] != strides[i] * sizes[i]) return std::nullopt;
    prev = static_cast<int64_t>(i);
  }
  return prev < 0 ? 0 : strides[prev];
}

// True when the dims (sizes, strides) nest as a dense row-major block ignoring size-1 dims.
bool IsDense(const DimVec& sizes, const DimVec& strides) {
  int64_t expect = 1;
  for (int i = static_cast<int>(sizes.size()) - 1; i >= 0; --i) {
    if (sizes[i] == 1) continue;
    if (strides[i] != expect) return false;
    expect *= sizes[i];
  }
  return true;
}

// Uninitialized scratch of n elements from the caching allocator (no page faults on reuse).
template <typename T>
class Scratch {
 public:
  explicit Scratch(int64_t n) : buf_(Buffer::Allocate(std::max<int64_t>(n, 1) * static_cast<int64_t>(sizeof(T)))) {}
  T* data() const { return static_cast<T*>(buf_->data()); }

 private:
  std::shared_ptr<Buffer> buf_;
};

// Patch tiles hold about this many elements (about 512 KiB of float32: cache-resident for the
// tile's GEMM), but at least kMinTileRows rows so repacking the weights per tile stays cheap.
constexpr int64_t kTileElems = int64_t{1} << 17;
constexpr int64_t kMinTileRows = 64;
// When the tiles would not keep the pool busy, the whole patch matrix (up to this many
// elements) is built once and multiplied by one GEMM split over the pool.
constexpr int64_t kWholeElems = int64_t{1} << 23;

// Rows (or columns) per tile for `total` of them at `kc` elements each, split into at least
// 4 tiles per thread when that keeps tiles at kMinTileRows or more.
int64_t TileExtent(int64_t total, int64_t kc, int64_t parallel_units) {
  const int threads = NumThreads();
  int64_t t = std::max(kMinTileRows, kTileElems / std::max<int64_t>(1, kc));
  const int64_t want = 4 * threads;
  if (parallel_units * ((total + t - 1) / t) < want) {
    const int64_t per_unit = (want + parallel_units - 1) / parallel_units;
    t = std::max(kMinTileRows, (total + per_unit - 1) / per_unit);
  }
  return std::max<int64_t>(1, std::min(t, total));
}

bool UseWholeMatrix(int64_t total, int64_t kc, int64_t tiles) {
  return tiles < 2 * NumThreads() && total * kc <= kWholeElems;
}

template <typename Acc, typename S>
void ConvChannelsLast(const Geometry& g, const S* lhs, const Acc* w, Acc* out, int64_t identity_ld) {
  const int64_t kc = g.kc(), o = g.o, og = g.og;
  const int64_t rows = g.n_out * g.p;
  auto gemm = [&](int64_t grp, const void* a, int64_t lda, int64_t r0, int64_t r1, bool parallel) {
    kernels::GemmArgs args;
    args.dtype = kernels::KernelDType<Acc>();
    args.m = r1 - r0;
    args.n = og;
    args.k = kc;
    args.a = a;
    args.lda = lda;
    args.b = w + grp * og;
    args.ldb = o;
    args.c = out + r0 * o + grp * og;
    args.ldc = o;
    args.parallel = parallel;
    kernels::Gemm(args);
  };
  if (identity_ld > 0) {
    // 1x1, stride 1: the lhs rows are the patches.
    for (int64_t grp = 0; grp < g.groups; ++grp) gemm(grp, lhs + g.ImageBase(0, grp), identity_ld, 0, rows, true);
    return;
  }
  const int64_t rc = TileExtent(rows, kc, 1);
  const int64_t tiles = (rows + rc - 1) / rc;
  if (UseWholeMatrix(rows, kc, tiles)) {
    Scratch<Acc> patches(rows * kc);
    for (int64_t grp = 0; grp < g.groups; ++grp) {
      const int64_t grain = std::max<int64_t>(1, kernels::kParallelGrain / std::max<int64_t>(1, kc));
      ParallelFor(rows, grain, [&](int64_t r0, int64_t r1) {
        std::vector<int64_t> off(static_cast<size_t>(g.kprod));
        Im2ColRows<Acc, S>(g, lhs, grp, r0, r1, patches.data() + r0 * kc, off.data());
      });
      gemm(grp, patches.data(), kc, 0, rows, true);
    }
    return;
  }
  ParallelFor(tiles, 1, [&](int64_t t0, int64_t t1) {
    Scratch<Acc> patches(rc * kc);
    std::vector<int64_t> off(static_cast<size_t>(g.kprod));
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t r0 = t * rc, r1 = std::min(rows, r0 + rc);
      for (int64_t grp = 0; grp < g.groups; ++grp) {
        Im2ColRows<Acc, S>(g, lhs, grp, r0, r1, patches.data(), off.data());
        gemm(grp, patches.data(), kc, r0, r1, false);
      }
    }
  });
}

template <typename Acc, typename S>
void ConvChannelsFirst(const Geometry& g, const S* lhs, const Acc* w, Acc* out, int64_t identity_ld) {
  const int64_t kc = g.kc(), og = g.og, np = g.p;
  if (identity_ld > 0) {
    // 1x1, stride 1: each image's [C, positions] block is the column matrix.
    for (int64_t grp = 0; grp < g.groups; ++grp) {
      kernels::GemmArgs a;
      a.dtype = kernels::KernelDType<Acc>();
      a.batch = g.n_out;
      a.m = og;
      a.n = np;
      a.k = kc;
      a.a = w + grp * og * kc;
      a.lda = kc;
      a.b = lhs + g.ImageBase(0, grp);
      a.ldb = identity_ld;
      a.stride_b = g.ls_n;
      a.c = out + grp * og * np;
      a.ldc = np;
      a.stride_c = g.o * np;
      kernels::Gemm(a);
    }
    return;
  }
  // Columns are (image, position) pairs of one group; a tile may span images (small images),
  // in which case its GEMM lands in scratch and is scattered to each image's [O, P] block.
  const int64_t total = g.n_out * np;
  int64_t qc = TileExtent(total, kc, g.groups);
  const bool whole = UseWholeMatrix(total, kc, g.groups * ((total + qc - 1) / qc));
  if (whole) qc = total;
  const int64_t tiles = (total + qc - 1) / qc;
  // Builds columns [q0, q1) of group grp into cols (row stride q1 - q0), in parallel if asked.
  auto im2col = [&](int64_t grp, int64_t q0, int64_t q1, Acc* cols, ColScratch& scratch, bool parallel) {
    const int64_t qn = q1 - q0;
    constexpr int64_t kSeg = 256;
    const int64_t segs = (qn + kSeg - 1) / kSeg;
    auto run = [&](int64_t s0, int64_t s1, ColScratch& sc) {
      for (int64_t q = q0 + s0 * kSeg, qe = std::min(q1, q0 + s1 * kSeg); q < qe;) {
        const int64_t n = q / np, p0 = q % np, p1 = std::min(np, p0 + (qe - q));
        Im2ColCols<Acc, S>(g, lhs, n, grp, p0, p1, cols + (q - q0), qn, sc);
        q += p1 - p0;
      }
    };
    if (!parallel) return run(0, segs, scratch);
    ParallelFor(segs, 1, [&](int64_t s0, int64_t s1) {
      ColScratch sc;
      run(s0, s1, sc);
    });
  };
  auto tile = [&](int64_t grp, int64_t q0, int64_t q1, Acc* cols, Acc* tmp, ColScratch& scratch, bool parallel) {
    const int64_t qn = q1 - q0;
    im2col(grp, q0, q1, cols, scratch, parallel);
    const int64_t n0 = q0 / np;
    const bool one_image = (q1 - 1) / np == n0;
    kernels::GemmArgs a;
    a.dtype = kernels::KernelDType<Acc>();
    a.m = og;
    a.n = qn;
    a.k = kc;
    a.a = w + grp * og * kc;
    a.lda = kc;
    a.b = cols;
    a.ldb = qn;
    a.c = one_image ? out + (n0 * g.o + grp * og) * np + q0 % np : tmp;
    a.ldc = one_image ? np : qn;
    a.parallel = parallel;
    kernels::Gemm(a);
    if (one_image) return;
    for (int64_t q = q0; q < q1;) {
      const int64_t n = q / np, p0 = q % np, len = std::min(np - p0, q1 - q);
      for (int64_t f = 0; f < og; ++f) {
        std::memcpy(out + (n * g.o + grp * og + f) * np + p0, tmp + f * qn + (q - q0),
                    static_cast<size_t>(len) * sizeof(Acc));
      }
      q += len;
    }
  };
  if (whole) {
    Scratch<Acc> cols(kc * total);
    Scratch<Acc> tmp(g.n_out > 1 ? og * total : 0);
    ColScratch scratch;
    for (int64_t grp = 0; grp < g.groups; ++grp) tile(grp, 0, total, cols.data(), tmp.data(), scratch, true);
    return;
  }
  ParallelFor(g.groups * tiles, 1, [&](int64_t t0, int64_t t1) {
    Scratch<Acc> cols(kc * qc);
    Scratch<Acc> tmp(og * qc);
    ColScratch scratch;
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t grp = t / tiles, q0 = (t % tiles) * qc;
      tile(grp, q0, std::min(total, q0 + qc), cols.data(), tmp.data(), scratch, false);
    }
  });
}

Arrays ConvImpl(absl::Span<const Array> in, const ParamMap& params, absl::Span<const ShapedArray> out_avals) {
  const Array& lhs = in[0];
  const Array& rhs = in[1];
  Array out = Array::Empty(out_avals[0]);
  if (out.size() == 0) return {out};
  const ConvParams p = DecodeParams(params);
  const ConvDimensionNumbers& dn = *p.dn;
  const Geometry g = MakeGeometry(lhs, rhs, p, out.aval());
  if (g.kc() == 0) {
    std::memset(out.mutable_data(), 0, static_cast<size_t>(out.nbytes()));
    return {out};
  }
  const DType acc = kernels::AccumulationDType(lhs.dtype(), rhs.dtype(), out.dtype());
  const int64_t rank = lhs.ndim();
  const bool channels_last = dn.lhs_spec[1] == rank - 1;

  // Weights as [(window..., I), O] (channels-last) or [O, (I, window...)].
  const std::vector<int64_t> rs = RowMajorStrides(rhs.shape());
  DimVec wsizes, wstrides;
  auto add_w = [&](int64_t dim) {
    wsizes.push_back(rhs.shape()[dim]);
    wstrides.push_back(rs[dim]);
  };
  if (channels_last) {
    for (int i = 0; i < g.nsp; ++i) add_w(dn.rhs_spec[2 + i]);
    add_w(dn.rhs_spec[1]);
    add_w(dn.rhs_spec[0]);
  } else {
    add_w(dn.rhs_spec[0]);
    add_w(dn.rhs_spec[1]);
    for (int i = 0; i < g.nsp; ++i) add_w(dn.rhs_spec[2 + i]);
  }
  const void* w = rhs.data();
  std::shared_ptr<Buffer> w_buf;
  if (!kernels::SameRepresentation(rhs.dtype(), acc) || !IsDense(wsizes, wstrides)) {
    w_buf = Buffer::Allocate(rhs.size() * ItemSize(acc));
    kernels::PackConvert(rhs.dtype(), rhs.data(), wsizes, wstrides, acc, w_buf->data());
    w = w_buf->data();
  }

  // Output in the orientation's natural layout: [N, spatial..., O] or [N, O, spatial...].
  const std::vector<int64_t> out_strides_dense = RowMajorStrides(out.shape());
  DimVec nat_stride(static_cast<size_t>(rank));  // natural-layout stride of canonical dim j
  {
    int64_t s = 1;
    if (channels_last) {
      nat_stride[1] = 1;
      s = g.o;
      for (int i = g.nsp - 1; i >= 0; --i) {
        nat_stride[2 + i] = s;
        s *= g.out_size[i];
      }
    } else {
      for (int i = g.nsp - 1; i >= 0; --i) {
        nat_stride[2 + i] = s;
        s *= g.out_size[i];
      }
      nat_stride[1] = s;
      s *= g.o;
    }
    nat_stride[0] = s;
  }
  DimVec out_sizes, src_strides;  // out's dims in memory order, read from the natural layout
  bool natural = true;
  for (int64_t d = 0; d < rank; ++d) {
    const int64_t j = std::find(dn.out_spec.begin(), dn.out_spec.end(), d) - dn.out_spec.begin();
    out_sizes.push_back(out.shape()[d]);
    src_strides.push_back(nat_stride[j]);
    if (out.shape()[d] != 1 && nat_stride[j] != out_strides_dense[d]) natural = false;
  }
  const bool direct_out = natural && kernels::SameRepresentation(out.dtype(), acc);
  std::shared_ptr<Buffer> out_buf;
  void* obuf = out.mutable_data();
  if (!direct_out) {
    out_buf = Buffer::Allocate(out.size() * ItemSize(acc));
    obuf = out_buf->data();
  }

  // 1x1 windows with stride 1 and no padding or dilation whose lhs rows (channels-last) or
  // position columns (channels-first) already form a strided matrix need no im2col.
  // identity_ld: that matrix's leading dimension, 0 when im2col is needed.
  int64_t identity_ld = 0;
  bool identity = g.kprod == 1 && kernels::SameRepresentation(lhs.dtype(), acc);
  for (int i = 0; i < g.nsp && identity; ++i) {
    identity = p.strides[i] == 1 && p.lhs_dilation[i] == 1 && p.padding[i] == std::pair<int64_t, int64_t>{0, 0};
  }
  if (identity) {
    DimVec sizes, strides;
    if (channels_last) {
      sizes.push_back(g.n_out);
      strides.push_back(g.ls_n);
    }
    for (int i = 0; i < g.nsp; ++i) {
      sizes.push_back(g.in_size[i]);
      strides.push_back(g.ls_sp[i]);
    }
    const std::optional<int64_t> rs = NestedStride(sizes, strides);
    if (channels_last) {
      // Rows (n, position) of stride rs, channels contiguous.
      if (rs && (g.ls_c == 1 || g.cg == 1)) {
        if (*rs == 0) identity_ld = std::max<int64_t>(g.cg, 1);
        else if (*rs >= g.cg) identity_ld = *rs;
      }
    } else if (rs && *rs <= 1) {
      // Columns (positions) contiguous, channels of stride ls_c.
      identity_ld = g.cg == 1 ? std::max<int64_t>(g.p, 1) : (g.ls_c >= g.p ? g.ls_c : 0);
    }
  }

  kernels::DispatchDType(lhs.dtype(), [&](auto stag) {
    using S = typename decltype(stag)::type;
    const S* x = static_cast<const S*>(lhs.data());
    auto run = [&](auto acc_tag) {
      using Acc = typename decltype(acc_tag)::type;
      if constexpr (kernels::kIsFloat<S> && !kernels::kIsFloat<Acc>) {
        throw InternalError("conv_general_dilated: floating operands with an integer accumulator");
      } else {
      const Acc* wt = static_cast<const Acc*>(w);
      Acc* o = static_cast<Acc*>(obuf);
      if (channels_last && !g.batch_grouped && g.groups > 1 && g.cg == 1) {
        DepthwiseRows<Acc, S>(g, x, wt, o);
      } else if (channels_last) {
        ConvChannelsLast<Acc, S>(g, x, wt, o, identity_ld);
      } else {
        ConvChannelsFirst<Acc, S>(g, x, wt, o, identity_ld);
      }
      }
    };
    switch (acc) {
      case DType::kFloat32: return run(kernels::TypeTag<float>{});
      case DType::kFloat64: return run(kernels::TypeTag<double>{});
      case DType::kInt32: return run(kernels::TypeTag<int32_t>{});
      case DType::kInt64: return run(kernels::TypeTag<int64_t>{});
      default: throw InternalError("conv_general_dilated: bad accumulation dtype");
    }
  });

  if (!direct_out) {
    kernels::PackConvert(acc, obuf, out_sizes, src_strides, out.dtype(), out.mutable_data());
  }
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
                           int64_t batch_group_count, std::optional<DType> preferred_element_type) {
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
      {"precision", ParamNone{}},
      {"preferred_element_type", preferred_element_type ? Param(*preferred_element_type) : Param(ParamNone{})},
  };
  return internal::BindOp1(kConvGeneralDilated, {lhs, rhs}, params);
}

}  // namespace jx::lax
