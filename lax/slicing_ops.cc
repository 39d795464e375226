// Slicing primitives: slice, dynamic_slice, dynamic_update_slice, concatenate, pad. Abstract
// eval follows JAX's shape rules; every kernel is a strided block copy (StridedCopy) whose
// contiguous inner runs go through memcpy, split over the pool by rows. gather and scatter
// live in gather_scatter.cc.
#include "jx/lax/slicing_ops.h"

#include <algorithm>
#include <limits>

#include "jx/lax/kernels/copy_kernels.h"
#include "jx/lax/op_util.h"
#include "jx/lax/primitives.h"

namespace jx::lax {

using internal::BindOp1;

namespace {

// JAX's _dynamic_slice_indices: a negative start index counts from the end of its axis (once;
// the primitive then clamps). Weakly typed C++ ints take the dtype of the other indices.
std::vector<Array> NormalizeStartIndices(std::string_view op, const Array& x, const std::vector<Array>& starts) {
  DType target = int32;
  for (const Array& s : starts) {
    if (!s.weak_type() && IsInteger(s.dtype())) {
      target = s.dtype();
      break;
    }
  }
  std::vector<Array> out;
  out.reserve(starts.size());
  for (size_t k = 0; k < starts.size(); ++k) {
    Array s = starts[k];
    if (k >= static_cast<size_t>(x.ndim()) || s.ndim() != 0 || !IsInteger(s.dtype()) ||
        IsUnsignedInt(s.dtype())) {
      out.push_back(s);  // invalid ones are reported by abstract eval
      continue;
    }
    const int64_t dim = x.shape()[k];
    if (s.is_concrete()) {
      int64_t v = s.item<int64_t>();
      if (v < 0) v += dim;
      const DType dtype = s.weak_type() ? target : s.dtype();
      if (v != s.item<int64_t>() || dtype != s.dtype()) s = Array::Scalar(static_cast<double>(v), dtype, false);
      out.push_back(s);
    } else {
      // select_n(i < 0, i, i + dim), staged like JAX does.
      const Array zero = Array::Scalar(0, s.dtype(), false);
      const Array d = Array::Scalar(static_cast<double>(dim), s.dtype(), false);
      const Array neg = BindOp1(kLt, {s, zero});
      out.push_back(BindOp1(kSelectN, {neg, s, BindOp1(kAdd, {s, d})}));
    }
  }
  return out;
}

}  // namespace

Array slice(const Array& x, const std::vector<int64_t>& start_indices, const std::vector<int64_t>& limit_indices,
            const std::vector<int64_t>& strides) {
  // JAX returns the operand for a full slice without strides.
  if (strides.empty() && static_cast<int64_t>(start_indices.size()) == x.ndim() && limit_indices == x.shape() &&
      std::all_of(start_indices.begin(), start_indices.end(), [](int64_t s) { return s == 0; })) {
    return x;
  }
  return BindOp1(kSlice, {x},
                 ParamMap{{"start_indices", start_indices},
                          {"limit_indices", limit_indices},
                          {"strides", strides.empty() ? Param(ParamNone{}) : Param(strides)}});
}

Array dynamic_slice(const Array& x, const std::vector<Array>& start_indices, const std::vector<int64_t>& slice_sizes) {
  std::vector<Array> args = {x};
  for (Array& s : NormalizeStartIndices("dynamic_slice", x, start_indices)) args.push_back(std::move(s));
  return internal::BindOp(kDynamicSlice, args, ParamMap{{"slice_sizes", slice_sizes}})[0];
}

Array dynamic_update_slice(const Array& x, const Array& update, const std::vector<Array>& start_indices) {
  std::vector<Array> args = {x, update};
  for (Array& s : NormalizeStartIndices("dynamic_update_slice", x, start_indices)) args.push_back(std::move(s));
  return internal::BindOp(kDynamicUpdateSlice, args)[0];
}

Array concatenate(const std::vector<Array>& operands, int64_t dimension) {
  if (operands.empty()) ThrowOpError<ValueError>("concatenate", "requires a non-empty sequence of arrays");
  if (operands.size() == 1) return operands[0];
  return internal::BindOp(kConcatenate, operands, ParamMap{{"dimension", dimension}})[0];
}

Array pad(const Array& x, const Array& padding_value, const std::vector<std::array<int64_t, 3>>& padding_config) {
  ParamList config;
  for (const auto& c : padding_config) config.push_back(Param(std::vector<int64_t>{c[0], c[1], c[2]}));
  Array pv = padding_value;
  // A C++ scalar padding value takes the operand's dtype, as in the binary lax ops.
  if (pv.defined() && pv.weak_type() && pv.is_concrete() && pv.ndim() == 0 && pv.dtype() != x.dtype()) {
    pv = Array::Scalar(pv.item<double>(), x.dtype(), x.weak_type());
  }
  return BindOp1(kPad, {x, pv}, ParamMap{{"padding_config", std::move(config)}});
}

namespace kernels {

int64_t ReadIndex(const Array& a, int64_t i) {
  return kernels::DispatchDType(a.dtype(), [&](auto tag) -> int64_t {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
      const T v = static_cast<const T*>(a.data())[i];
      if constexpr (std::is_unsigned_v<T> && sizeof(T) == 8) {
        return v > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) ? std::numeric_limits<int64_t>::max()
                                                                              : static_cast<int64_t>(v);
      } else {
        return static_cast<int64_t>(v);
      }
    } else {
      throw InternalError("index array must have an integer dtype");
    }
  });
}

void StridedCopy(const void* src, const std::vector<int64_t>& src_strides, void* dst,
                 const std::vector<int64_t>& dst_strides, const std::vector<int64_t>& sizes, int64_t item_size) {
  // Drop size-1 dims and merge dims that are contiguous in both arrays.
  kernels::DimVec sz, ss, ds;
  for (size_t d = 0; d < sizes.size(); ++d) {
    if (sizes[d] == 0) return;
    if (sizes[d] == 1) continue;
    if (!sz.empty() && ss.back() == src_strides[d] * sizes[d] && ds.back() == dst_strides[d] * sizes[d]) {
      sz.back() *= sizes[d];
      ss.back() = src_strides[d];
      ds.back() = dst_strides[d];
    } else {
      sz.push_back(sizes[d]);
      ss.push_back(src_strides[d]);
      ds.push_back(dst_strides[d]);
    }
  }
  kernels::DispatchBySize(item_size, [&](auto tag) {
    using U = typename decltype(tag)::type;
    const U* s = static_cast<const U*>(src);
    U* d = static_cast<U*>(dst);
    if (sz.empty()) {
      d[0] = s[0];
      return;
    }
    const int64_t len = sz.back(), sst = ss.back(), dst_st = ds.back();
    sz.pop_back();
    ss.pop_back();
    ds.pop_back();
    const bool contiguous = sst == 1 && dst_st == 1;
    if (contiguous && len >= 2 * kernels::kParallelGrain) {
      // Long rows (e.g. concatenating along axis 0): split each row into pieces as well.
      constexpr int64_t kPiece = kernels::kParallelGrain;
      kernels::DimVec psz = sz, pss = ss, pds = ds, pos(sz.size(), 0);
      psz.push_back((len + kPiece - 1) / kPiece);
      pss.push_back(kPiece);
      pds.push_back(kPiece);
      pos.push_back(kPiece);
      kernels::ForEachIndex<3>(psz, {pss, pds, pos}, 1, [&](const std::array<int64_t, 3>& off) {
        std::memcpy(d + off[1], s + off[0], static_cast<size_t>(std::min(kPiece, len - off[2])) * sizeof(U));
      });
      return;
    }
    kernels::ForEachIndex<2>(sz, {ss, ds}, kernels::RowGrain(len), [&](const std::array<int64_t, 2>& off) {
      const U* sr = s + off[0];
      U* dr = d + off[1];
      if (contiguous) {
        std::memcpy(dr, sr, static_cast<size_t>(len) * sizeof(U));
      } else if (dst_st == 1) {
        for (int64_t k = 0; k < len; ++k) dr[k] = sr[k * sst];
      } else {
        for (int64_t k = 0; k < len; ++k) dr[k * dst_st] = sr[k * sst];
      }
    });
  });
}

void FillWithScalar(const Array& value, Array& out) {
  kernels::DispatchBySize(ItemSize(out.dtype()), [&](auto tag) {
    using U = typename decltype(tag)::type;
    U v;
    std::memcpy(&v, value.data(), sizeof(U));
    kernels::ParallelFill(static_cast<U*>(out.mutable_data()), out.size(), v);
  });
}

}  // namespace kernels

namespace internal {
namespace {

using kernels::FillWithScalar;
using kernels::ReadIndex;
using kernels::StridedCopy;

std::string Tup(const std::vector<int64_t>& v) { return ShapeToString(v); }

std::vector<int64_t> Strides(const Shape& s) { return RowMajorStrides(s); }

// Index operands of dynamic_slice / dynamic_update_slice: scalars of one integer dtype.
void CheckStartIndices(std::string_view op, InAvals in, size_t first, const ShapedArray& operand) {
  const size_t n = in.size() - first;
  if (static_cast<int64_t>(n) != operand.ndim()) {
    ThrowOpError<ShapeError>(op, "start_indices must have length equal to the number of dimensions of the operand, got ",
                             n, " indices for operand ", operand.str());
  }
  for (size_t k = first; k < in.size(); ++k) {
    if (!IsInteger(in[k]->dtype) || in[k]->dtype != in[first]->dtype) {
      ThrowOpError<TypeError>(op, "index arguments must be integers of the same type, got ", AvalsToString(in.subspan(first)),
                              " (index ", k - first, " is ", in[k]->str(), ") for operand ", operand.str());
    }
    if (in[k]->ndim() != 0) {
      ThrowOpError<ShapeError>(op, "start indices must be scalars, got index ", k - first, " of shape ", in[k]->str(),
                               " for operand ", operand.str());
    }
  }
}

// Clamps each start index into [0, dim - size] as XLA does.
std::vector<int64_t> ClampedStarts(absl::Span<const Array> in, size_t first, const Shape& shape, const Shape& sizes) {
  std::vector<int64_t> starts(shape.size());
  for (size_t d = 0; d < shape.size(); ++d) {
    starts[d] = std::clamp<int64_t>(ReadIndex(in[first + d], 0), 0, shape[d] - sizes[d]);
  }
  return starts;
}

// ---- abstract evaluation ----

Avals SliceEval(InAvals in, const ParamMap& p) {
  constexpr std::string_view op = "slice";
  CheckArity(op, in, 1);
  const ShapedArray& x = *in[0];
  const std::vector<int64_t>& start = p.GetInts("start_indices");
  const std::vector<int64_t>& limit = p.GetInts("limit_indices");
  std::vector<int64_t> strides(static_cast<size_t>(x.ndim()), 1);
  if (!p.Get("strides").is_none()) strides = p.GetInts("strides");
  const size_t n = static_cast<size_t>(x.ndim());
  if (start.size() != n) {
    ThrowOpError<ShapeError>(op, "start_indices must have length equal to the number of dimensions of the operand, got "
                             "start_indices=", Tup(start), " for operand ", x.str());
  }
  if (limit.size() != n) {
    ThrowOpError<ShapeError>(op, "limit_indices must have length equal to the number of dimensions of the operand, got "
                             "limit_indices=", Tup(limit), " for operand ", x.str());
  }
  if (strides.size() != n) {
    ThrowOpError<ShapeError>(op, "strides must have length equal to the number of dimensions of the operand, got strides=",
                             Tup(strides), " for operand ", x.str());
  }
  Shape out(n);
  for (size_t d = 0; d < n; ++d) {
    if (start[d] < 0) {
      ThrowOpError<ShapeError>(op, "start_indices must be greater than or equal to zero, got start_indices=", Tup(start),
                               " for operand ", x.str());
    }
    if (limit[d] > x.shape[d]) {
      ThrowOpError<ShapeError>(op, "limit_indices must be less than or equal to operand shape, got limit_indices=",
                               Tup(limit), " for operand ", x.str());
    }
    if (limit[d] < start[d]) {
      ThrowOpError<ShapeError>(op, "limit_indices must be greater than or equal to start_indices, got start_indices=",
                               Tup(start), " and limit_indices=", Tup(limit), " for operand ", x.str());
    }
    if (strides[d] <= 0) {
      ThrowOpError<ShapeError>(op, "strides must be positive, got strides=", Tup(strides), " for operand ", x.str());
    }
    out[d] = (limit[d] - start[d] + strides[d] - 1) / strides[d];
  }
  return {ShapedArray{out, x.dtype, x.weak_type}};
}

Avals DynamicSliceEval(InAvals in, const ParamMap& p) {
  constexpr std::string_view op = "dynamic_slice";
  if (in.empty()) ThrowOpError<TypeError>(op, "expects an operand and start indices, got no arguments");
  const ShapedArray& x = *in[0];
  const std::vector<int64_t>& sizes = p.GetInts("slice_sizes");
  CheckStartIndices(op, in, 1, x);
  if (static_cast<int64_t>(sizes.size()) != x.ndim()) {
    ThrowOpError<ShapeError>(op, "slice_sizes must have the same length as the operand rank, got slice_sizes=", Tup(sizes),
                             " for operand ", x.str());
  }
  for (size_t d = 0; d < sizes.size(); ++d) {
    if (sizes[d] < 0) {
      ThrowOpError<ShapeError>(op, "slice_sizes must be greater than or equal to zero, got slice_sizes=", Tup(sizes),
                               " for operand ", x.str());
    }
    if (sizes[d] > x.shape[d]) {
      ThrowOpError<ShapeError>(op, "slice_sizes must be less than or equal to operand shape, got slice_sizes=",
                               Tup(sizes), " for operand ", x.str());
    }
  }
  return {ShapedArray{sizes, x.dtype, x.weak_type}};
}

Avals DynamicUpdateSliceEval(InAvals in, const ParamMap&) {
  constexpr std::string_view op = "dynamic_update_slice";
  if (in.size() < 2) ThrowOpError<TypeError>(op, "expects an operand, an update and start indices, got ", AvalsToString(in));
  const ShapedArray& x = *in[0];
  const ShapedArray& u = *in[1];
  if (x.dtype != u.dtype) {
    ThrowOpError<TypeError>(op, "update dtype must match operand dtype, got operand ", x.str(), " and update ", u.str());
  }
  if (x.ndim() != u.ndim()) {
    ThrowOpError<ShapeError>(op, "update must have the same rank as operand, got operand ", x.str(), " and update ",
                             u.str());
  }
  for (size_t d = 0; d < x.shape.size(); ++d) {
    if (u.shape[d] > x.shape[d]) {
      ThrowOpError<ShapeError>(op, "update shape must be smaller than operand shape, got operand ", x.str(),
                               " and update ", u.str());
    }
  }
  CheckStartIndices(op, in, 2, x);
  return {x};
}

Avals ConcatenateEval(InAvals in, const ParamMap& p) {
  constexpr std::string_view op = "concatenate";
  if (in.empty()) ThrowOpError<ValueError>(op, "requires a non-empty sequence of arrays");
  const int64_t dim = p.GetInt("dimension");
  const ShapedArray& a = *in[0];
  for (size_t k = 0; k < in.size(); ++k) {
    if (in[k]->dtype != a.dtype) {
      ThrowOpError<TypeError>(op, "operands must have the same dtype, got ", AvalsToString(in), " (operand ", k, " is ",
                              dtype_name(in[k]->dtype), ", operand 0 is ", dtype_name(a.dtype), ")");
    }
    if (in[k]->ndim() != a.ndim()) {
      ThrowOpError<ShapeError>(op, "operands must be arrays with the same number of dimensions, got ", AvalsToString(in));
    }
  }
  if (dim < 0 || dim >= a.ndim()) {
    ThrowOpError<ShapeError>(op, "dimension out of bounds: dimension ", dim, " for operands ", AvalsToString(in));
  }
  Shape out = a.shape;
  out[static_cast<size_t>(dim)] = 0;
  bool weak = true;
  for (size_t k = 0; k < in.size(); ++k) {
    for (int64_t d = 0; d < a.ndim(); ++d) {
      if (d != dim && in[k]->shape[static_cast<size_t>(d)] != a.shape[static_cast<size_t>(d)]) {
        ThrowOpError<ShapeError>(op, "all input arrays must have the same shape except along dimension ", dim, ", got ",
                                 AvalsToString(in), " (operand ", k, " differs in dimension ", d, ")");
      }
    }
    out[static_cast<size_t>(dim)] += in[k]->shape[static_cast<size_t>(dim)];
    weak = weak && in[k]->weak_type;
  }
  return {ShapedArray{out, a.dtype, weak}};
}

struct PadDim {
  int64_t lo, hi, interior;
};

std::vector<PadDim> PadConfig(const ParamMap& p) {
  std::vector<PadDim> out;
  for (const Param& c : p.GetList("padding_config")) {
    const auto& v = std::get<std::vector<int64_t>>(c.value);
    out.push_back({v[0], v[1], v[2]});
  }
  return out;
}

std::string PadConfigString(const ParamMap& p) { return p.Get("padding_config").ToString(); }

Avals PadEval(InAvals in, const ParamMap& p) {
  constexpr std::string_view op = "pad";
  CheckArity(op, in, 2);
  const ShapedArray& x = *in[0];
  const ShapedArray& v = *in[1];
  if (x.dtype != v.dtype) {
    ThrowOpError<TypeError>(op, "operand and padding_value must be same dtype, got operand ", x.str(),
                            " and padding_value ", v.str());
  }
  if (v.ndim() != 0) ThrowOpError<ShapeError>(op, "padding_value must be a scalar, got ", v.str(), " for operand ", x.str());
  for (const Param& c : p.GetList("padding_config")) {
    const auto* t = std::get_if<std::vector<int64_t>>(&c.value);
    if (t == nullptr || t->size() != 3) {
      ThrowOpError<ValueError>(op, "padding_config entries must be (low, high, interior) triples, got padding_config=",
                               PadConfigString(p), " for operand ", x.str());
    }
  }
  const std::vector<PadDim> cfg = PadConfig(p);
  if (static_cast<int64_t>(cfg.size()) != x.ndim()) {
    ThrowOpError<ShapeError>(op, "length of padding_config must equal the number of axes of operand, got padding_config=",
                             PadConfigString(p), " for operand ", x.str());
  }
  Shape out(cfg.size());
  for (size_t d = 0; d < cfg.size(); ++d) {
    if (cfg[d].interior < 0) {
      ThrowOpError<ShapeError>(op, "interior padding in padding_config must be nonnegative, got padding_config=",
                               PadConfigString(p), " for operand ", x.str());
    }
    const int64_t n = x.shape[d];
    out[d] = cfg[d].lo + cfg[d].hi + n + std::max<int64_t>(n - 1, 0) * cfg[d].interior;
    if (out[d] < 0) {
      ThrowOpError<ShapeError>(op, "dimension size after padding is not at least 0, got result dimension ", d, " of size ",
                               out[d], " for padding_config=", PadConfigString(p), " and operand ", x.str());
    }
  }
  return {ShapedArray{out, x.dtype, x.weak_type && v.weak_type}};
}

// ---- kernels ----

Arrays SliceImpl(absl::Span<const Array> in, const ParamMap& p, absl::Span<const ShapedArray> out_avals) {
  Array out = Array::Empty(out_avals[0]);
  const Array& x = in[0];
  const std::vector<int64_t>& start = p.GetInts("start_indices");
  const std::vector<int64_t> in_strides = Strides(x.shape());
  std::vector<int64_t> src_strides = in_strides;
  if (!p.Get("strides").is_none()) {
    const std::vector<int64_t>& st = p.GetInts("strides");
    for (size_t d = 0; d < st.size(); ++d) src_strides[d] *= st[d];
  }
  int64_t base = 0;
  for (size_t d = 0; d < start.size(); ++d) base += start[d] * in_strides[d];
  const int64_t item = ItemSize(x.dtype());
  if (out.size() > 0) {
    StridedCopy(static_cast<const char*>(x.data()) + base * item, src_strides, out.mutable_data(), Strides(out.shape()),
                out.shape(), item);
  }
  return {out};
}

Arrays DynamicSliceImpl(absl::Span<const Array> in, const ParamMap&, absl::Span<const ShapedArray> out_avals) {
  Array out = Array::Empty(out_avals[0]);
  const Array& x = in[0];
  if (out.size() == 0) return {out};
  const std::vector<int64_t> starts = ClampedStarts(in, 1, x.shape(), out.shape());
  const std::vector<int64_t> in_strides = Strides(x.shape());
  int64_t base = 0;
  for (size_t d = 0; d < starts.size(); ++d) base += starts[d] * in_strides[d];
  const int64_t item = ItemSize(x.dtype());
  StridedCopy(static_cast<const char*>(x.data()) + base * item, in_strides, out.mutable_data(), Strides(out.shape()),
              out.shape(), item);
  return {out};
}

Arrays DynamicUpdateSliceImpl(absl::Span<const Array> in, const ParamMap&, absl::Span<const ShapedArray> out_avals) {
  Array out = Array::Empty(out_avals[0]);
  const Array& x = in[0];
  const Array& u = in[1];
  kernels::ParallelMemcpy(out.mutable_data(), x.data(), x.nbytes());
  if (u.size() == 0) return {out};
  const std::vector<int64_t> starts = ClampedStarts(in, 2, x.shape(), u.shape());
  const std::vector<int64_t> out_strides = Strides(x.shape());
  int64_t base = 0;
  for (size_t d = 0; d < starts.size(); ++d) base += starts[d] * out_strides[d];
  const int64_t item = ItemSize(x.dtype());
  StridedCopy(u.data(), Strides(u.shape()), static_cast<char*>(out.mutable_data()) + base * item, out_strides, u.shape(),
              item);
  return {out};
}

Arrays ConcatenateImpl(absl::Span<const Array> in, const ParamMap& p, absl::Span<const ShapedArray> out_avals) {
  Array out = Array::Empty(out_avals[0]);
  const int64_t dim = p.GetInt("dimension");
  const std::vector<int64_t> out_strides = Strides(out.shape());
  const int64_t item = ItemSize(out.dtype());
  char* dst = static_cast<char*>(out.mutable_data());
  int64_t offset = 0;
  for (const Array& a : in) {
    if (a.size() > 0) {
      StridedCopy(a.data(), Strides(a.shape()), dst + offset * out_strides[static_cast<size_t>(dim)] * item, out_strides,
                  a.shape(), item);
    }
    offset += a.shape()[static_cast<size_t>(dim)];
  }
  return {out};
}

Arrays PadImpl(absl::Span<const Array> in, const ParamMap& p, absl::Span<const ShapedArray> out_avals) {
  Array out = Array::Empty(out_avals[0]);
  const Array& x = in[0];
  if (out.size() == 0) return {out};
  const std::vector<PadDim> cfg = PadConfig(p);
  const std::vector<int64_t> in_strides = Strides(x.shape());
  const std::vector<int64_t> out_strides = Strides(out.shape());
  // Operand element k of axis d lands at lo + k * (interior + 1); keep the ks inside the output.
  bool covers_all = true;
  std::vector<int64_t> sizes(cfg.size()), src_strides(cfg.size()), dst_strides(cfg.size());
  int64_t src_base = 0, dst_base = 0;
  bool empty = x.size() == 0;
  for (size_t d = 0; d < cfg.size(); ++d) {
    const int64_t step = cfg[d].interior + 1, n = x.shape()[d], o = out.shape()[d], lo = cfg[d].lo;
    const int64_t k_min = lo >= 0 ? 0 : (-lo + step - 1) / step;
    const int64_t k_max = std::min(n - 1, o - 1 - lo < 0 ? -1 : (o - 1 - lo) / step);
    if (k_min > k_max) {
      empty = true;
      break;
    }
    sizes[d] = k_max - k_min + 1;
    src_strides[d] = in_strides[d];
    dst_strides[d] = step * out_strides[d];
    src_base += k_min * in_strides[d];
    dst_base += (lo + k_min * step) * out_strides[d];
    covers_all = covers_all && step == 1 && sizes[d] == o;
  }
  if (empty || !covers_all) FillWithScalar(in[1], out);
  if (!empty) {
    const int64_t item = ItemSize(x.dtype());
    StridedCopy(static_cast<const char*>(x.data()) + src_base * item, src_strides,
                static_cast<char*>(out.mutable_data()) + dst_base * item, dst_strides, sizes, item);
  }
  return {out};
}

void Define(Registry& r, Primitive p, AbstractEvalRule eval, ImplRule impl) {
  PrimitiveRules& rules = r.Define(p);
  rules.abstract_eval = std::move(eval);
  rules.impl = std::move(impl);
}

}  // namespace

void RegisterSlicingOps(Registry& r) {
  Define(r, kSlice, SliceEval, SliceImpl);
  Define(r, kDynamicSlice, DynamicSliceEval, DynamicSliceImpl);
  Define(r, kDynamicUpdateSlice, DynamicUpdateSliceEval, DynamicUpdateSliceImpl);
  Define(r, kConcatenate, ConcatenateEval, ConcatenateImpl);
  Define(r, kPad, PadEval, PadImpl);
}

}  // namespace internal
}  // namespace jx::lax
