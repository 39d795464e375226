// Slicing primitives: slice, dynamic_slice, dynamic_update_slice, concatenate, pad. Abstract
// eval follows JAX's shape rules; every kernel is a strided block copy (StridedCopy) whose
// contiguous inner runs go through memcpy, split over the pool by rows. The copy and the
// clamped dynamic_slice / dynamic_update_slice numerics are the kernel library's
// (lax/kernels/slicing.h), shared with the compiled CPU backend. gather and scatter
// live in gather_scatter.cc. The jvp/transpose/batching rules (all linear) close the file.
#include "jx/lax/slicing_ops.h"

#include <algorithm>
#include <limits>

#include "jx/lax/binary_ops.h"
#include "jx/lax/kernels/copy_kernels.h"
#include "jx/lax/op_util.h"
#include "jx/lax/primitives.h"
#include "jx/lax/reduction_ops.h"
#include "jx/lax/rule_util.h"
#include "jx/lax/shape_ops.h"

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

int64_t ReadIndex(const Array& a, int64_t i) { return ReadIndexElement(a.data(), a.dtype(), i); }

}  // namespace kernels

namespace internal {
namespace {

using kernels::ReadIndex;

std::string Tup(const std::vector<int64_t>& v) { return ShapeToString(v); }

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

// The start index operands in[first..] as int64 (the kernel clamps them as XLA does).
std::vector<int64_t> StartIndices(absl::Span<const Array> in, size_t first) {
  std::vector<int64_t> starts;
  for (size_t k = first; k < in.size(); ++k) starts.push_back(ReadIndex(in[k], 0));
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
  if (out.size() == 0) return {out};
  const std::vector<int64_t> no_strides;
  kernels::Slice(x.data(), x.shape(), p.GetInts("start_indices"), p.Get("strides").is_none() ? no_strides : p.GetInts("strides"),
                 out.shape(), ItemSize(x.dtype()), out.mutable_data());
  return {out};
}

Arrays DynamicSliceImpl(absl::Span<const Array> in, const ParamMap&, absl::Span<const ShapedArray> out_avals) {
  Array out = Array::Empty(out_avals[0]);
  const Array& x = in[0];
  const std::vector<int64_t> starts = StartIndices(in, 1);
  kernels::DynamicSlice(x.data(), x.shape(), starts, out.shape(), ItemSize(x.dtype()), out.mutable_data());
  return {out};
}

Arrays DynamicUpdateSliceImpl(absl::Span<const Array> in, const ParamMap&, absl::Span<const ShapedArray> out_avals) {
  Array out = Array::Empty(out_avals[0]);
  const Array& x = in[0];
  const Array& u = in[1];
  const std::vector<int64_t> starts = StartIndices(in, 2);
  kernels::DynamicUpdateSlice(x.data(), u.data(), x.shape(), u.shape(), starts, ItemSize(x.dtype()),
                              out.mutable_data());
  return {out};
}

Arrays ConcatenateImpl(absl::Span<const Array> in, const ParamMap& p, absl::Span<const ShapedArray> out_avals) {
  Array out = Array::Empty(out_avals[0]);
  if (out.size() == 0) return {out};
  const size_t dim = static_cast<size_t>(p.GetInt("dimension"));
  absl::InlinedVector<const void*, 8> operands;
  absl::InlinedVector<int64_t, 8> sizes;
  for (const Array& a : in) {
    operands.push_back(a.data());
    sizes.push_back(a.shape()[dim]);
  }
  kernels::Concatenate(operands, sizes, out.shape(), static_cast<int64_t>(dim), ItemSize(out.dtype()),
                       out.mutable_data());
  return {out};
}

Arrays PadImpl(absl::Span<const Array> in, const ParamMap& p, absl::Span<const ShapedArray> out_avals) {
  Array out = Array::Empty(out_avals[0]);
  const Array& x = in[0];
  const std::vector<PadDim> cfg = PadConfig(p);
  std::vector<int64_t> low, interior;
  for (const PadDim& c : cfg) {
    low.push_back(c.lo);
    interior.push_back(c.interior);
  }
  kernels::Pad(x.data(), x.shape(), in[1].data(), low, interior, out.shape(), ItemSize(x.dtype()), out.mutable_data());
  return {out};
}

void Define(Registry& r, Primitive p, AbstractEvalRule eval, ImplRule impl) {
  PrimitiveRules& rules = r.Define(p);
  rules.abstract_eval = std::move(eval);
  rules.impl = std::move(impl);
}

// ---- jvp, transpose and batching rules ----
// Every slicing op is linear in its array operands (pad: in the operand and the padding
// value jointly); start indices are integers and never carry tangents. Batched start indices
// turn dynamic_slice / dynamic_update_slice into gather / scatter, as in JAX.

Arrays Concat(Arrays a, absl::Span<const Array> b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

Array SumAll(const Array& x) {
  if (x.ndim() == 0) return x;
  std::vector<int64_t> axes(static_cast<size_t>(x.ndim()));
  for (int64_t d = 0; d < x.ndim(); ++d) axes[static_cast<size_t>(d)] = d;
  return reduce_sum(x, axes);
}

std::vector<int64_t> Range(int64_t begin, int64_t end) {
  std::vector<int64_t> out;
  for (int64_t d = begin; d < end; ++d) out.push_back(d);
  return out;
}

ParamList PadConfigList(const std::vector<PadDim>& cfg) {
  ParamList out;
  for (const PadDim& c : cfg) out.push_back(Param(std::vector<int64_t>{c.lo, c.hi, c.interior}));
  return out;
}

bool AnyMapped(absl::Span<const int64_t> dims) {
  return std::any_of(dims.begin(), dims.end(), [](int64_t d) { return d != kNotMapped; });
}

// slice

JvpResult SliceJvp(absl::Span<const Array> primals, absl::Span<const Array> tangents, const ParamMap& p) {
  return JvpResult{{Bind1(kSlice, primals, p)}, {tangents[0].defined() ? Bind1(kSlice, {tangents[0]}, p) : Array()}};
}

// Pads the cotangent back to the operand's shape: zeros before, after and between strides.
Arrays SliceTranspose(absl::Span<const Array> cts, absl::Span<const TransposeArg> args, const ParamMap& p) {
  if (!cts[0].defined()) return {Array()};
  const Array& ct = cts[0];
  const Shape& shape = args[0].aval.shape;
  const std::vector<int64_t>& start = p.GetInts("start_indices");
  std::vector<int64_t> strides(shape.size(), 1);
  if (!p.Get("strides").is_none()) strides = p.GetInts("strides");
  std::vector<std::array<int64_t, 3>> config;
  for (size_t d = 0; d < shape.size(); ++d) {
    const int64_t n = ct.shape()[d];
    const int64_t real_limit = n == 0 ? start[d] : start[d] + (n - 1) * strides[d] + 1;
    config.push_back({start[d], shape[d] - real_limit, n == 0 ? 0 : strides[d] - 1});
  }
  return {pad(ct, Array::Scalar(0, ct.dtype(), ct.weak_type()), config)};
}

// The batch axis is sliced whole, in place.
BatchResult SliceBatch(absl::Span<const Array> args, absl::Span<const int64_t> dims, int64_t n, const ParamMap& p) {
  const size_t b = static_cast<size_t>(dims[0]);
  std::vector<int64_t> start = p.GetInts("start_indices"), limit = p.GetInts("limit_indices");
  start.insert(start.begin() + b, 0);
  limit.insert(limit.begin() + b, n);
  ParamMap q = p;
  q.Set("start_indices", start).Set("limit_indices", limit);
  if (!p.Get("strides").is_none()) {
    std::vector<int64_t> strides = p.GetInts("strides");
    strides.insert(strides.begin() + b, 1);
    q.Set("strides", strides);
  }
  return BatchResult{{Bind1(kSlice, {args[0]}, q)}, {dims[0]}};
}

// dynamic_slice and dynamic_update_slice

JvpResult DynamicSliceJvp(absl::Span<const Array> primals, absl::Span<const Array> tangents, const ParamMap& p) {
  Array out = Bind1(kDynamicSlice, primals, p);
  if (!tangents[0].defined()) return JvpResult{{out}, {Array()}};
  return JvpResult{{out}, {Bind1(kDynamicSlice, Concat({tangents[0]}, primals.subspan(1)), p)}};
}

Arrays DynamicSliceTranspose(absl::Span<const Array> cts, absl::Span<const TransposeArg> args, const ParamMap&) {
  Arrays out(args.size());
  if (!cts[0].defined() || !args[0].is_linear()) return out;
  Arrays starts;
  for (size_t k = 1; k < args.size(); ++k) starts.push_back(args[k].value);
  out[0] = Bind1(kDynamicUpdateSlice, Concat({Zeros(args[0].aval), cts[0]}, starts));
  return out;
}

JvpResult DynamicUpdateSliceJvp(absl::Span<const Array> primals, absl::Span<const Array> tangents, const ParamMap& p) {
  Array out = Bind1(kDynamicUpdateSlice, primals, p);
  Array t = Bind1(kDynamicUpdateSlice,
                  Concat({Instantiate(tangents[0], primals[0]), Instantiate(tangents[1], primals[1])},
                         primals.subspan(2)),
                  p);
  return JvpResult{{out}, {t}};
}

// Operand: the cotangent with the updated window zeroed; update: the window of the cotangent.
Arrays DynamicUpdateSliceTranspose(absl::Span<const Array> cts, absl::Span<const TransposeArg> args, const ParamMap&) {
  Arrays out(args.size());
  if (!cts[0].defined()) return out;
  Arrays starts;
  for (size_t k = 2; k < args.size(); ++k) starts.push_back(args[k].value);
  const ShapedArray& update = args[1].aval;
  if (args[0].is_linear()) out[0] = Bind1(kDynamicUpdateSlice, Concat({cts[0], Zeros(update)}, starts));
  if (args[1].is_linear()) {
    out[1] = Bind1(kDynamicSlice, Concat({cts[0]}, starts), ParamMap{{"slice_sizes", update.shape}});
  }
  return out;
}

// Per-example scalar start indices as one [n, rank] array (index vector last).
Array StackedStartIndices(absl::Span<const Array> starts, absl::Span<const int64_t> dims, int64_t n) {
  std::vector<Array> columns;
  for (size_t k = 0; k < starts.size(); ++k) {
    const std::vector<int64_t> bdims = dims[k] == kNotMapped ? std::vector<int64_t>{} : std::vector<int64_t>{0};
    columns.push_back(broadcast_in_dim(starts[k], {n, 1}, bdims));
  }
  return concatenate(columns, 1);
}

// The operand's start indices with a zero start for a new batch axis at position b.
Arrays StartsWithBatchAxis(absl::Span<const Array> starts, size_t b) {
  const DType dtype = starts.empty() ? int32 : starts[0].dtype();
  Arrays out(starts.begin(), starts.end());
  out.insert(out.begin() + static_cast<int64_t>(b), Array::Scalar(0, dtype));
  return out;
}

BatchResult DynamicSliceBatch(absl::Span<const Array> args, absl::Span<const int64_t> dims, int64_t n,
                              const ParamMap& p) {
  const std::vector<int64_t>& sizes = p.GetInts("slice_sizes");
  const int64_t rank = static_cast<int64_t>(sizes.size());
  if (!AnyMapped(dims.subspan(1))) {
    // Only the operand is batched: slice its batch axis whole.
    const size_t b = static_cast<size_t>(dims[0]);
    std::vector<int64_t> batched_sizes = sizes;
    batched_sizes.insert(batched_sizes.begin() + static_cast<int64_t>(b), n);
    Arrays in = Concat({args[0]}, StartsWithBatchAxis(args.subspan(1), b));
    return BatchResult{{Bind1(kDynamicSlice, in, ParamMap{{"slice_sizes", batched_sizes}})}, {dims[0]}};
  }
  // Batched starts: a gather of one clamped window per example.
  const Array starts = StackedStartIndices(args.subspan(1), dims.subspan(1), n);
  GatherDimensionNumbers dn;
  dn.offset_dims = Range(1, rank + 1);
  std::vector<int64_t> slice_sizes = sizes;
  Array operand = args[0];
  if (dims[0] == kNotMapped) {
    dn.start_index_map = Range(0, rank);
  } else {
    operand = MoveAxis(operand, dims[0], 0);
    dn.start_index_map = Range(1, rank + 1);
    dn.operand_batching_dims = {0};
    dn.start_indices_batching_dims = {0};
    slice_sizes.insert(slice_sizes.begin(), 1);
  }
  return BatchResult{{gather(operand, starts, dn, slice_sizes, GatherScatterMode::kClip)}, {0}};
}

BatchResult DynamicUpdateSliceBatch(absl::Span<const Array> args, absl::Span<const int64_t> dims, int64_t n,
                                    const ParamMap& p) {
  const Array operand = MoveBatchToFront(args[0], dims[0], n);
  const Array update = MoveBatchToFront(args[1], dims[1], n);
  if (!AnyMapped(dims.subspan(2))) {
    Arrays in = Concat({operand, update}, StartsWithBatchAxis(args.subspan(2), 0));
    return BatchResult{{Bind1(kDynamicUpdateSlice, in, p)}, {0}};
  }
  // Batched starts: a scatter of one clamped window per example.
  const int64_t rank = args[1].ndim() - (dims[1] == kNotMapped ? 0 : 1);
  const Array starts = StackedStartIndices(args.subspan(2), dims.subspan(2), n);
  ScatterDimensionNumbers dn;
  dn.update_window_dims = Range(1, rank + 1);
  dn.scatter_dims_to_operand_dims = Range(1, rank + 1);
  dn.operand_batching_dims = {0};
  dn.scatter_indices_batching_dims = {0};
  return BatchResult{{scatter(operand, starts, update, dn, GatherScatterMode::kClip)}, {0}};
}

// concatenate

JvpResult ConcatenateJvp(absl::Span<const Array> primals, absl::Span<const Array> tangents, const ParamMap& p) {
  Arrays ts;
  for (size_t k = 0; k < primals.size(); ++k) ts.push_back(Instantiate(tangents[k], primals[k]));
  return JvpResult{{Bind1(kConcatenate, primals, p)}, {Bind1(kConcatenate, ts, p)}};
}

// Each linear operand's cotangent is its slab of the output cotangent.
Arrays ConcatenateTranspose(absl::Span<const Array> cts, absl::Span<const TransposeArg> args, const ParamMap& p) {
  Arrays out(args.size());
  if (!cts[0].defined()) return out;
  const size_t dim = static_cast<size_t>(p.GetInt("dimension"));
  std::vector<int64_t> start(cts[0].shape().size(), 0);
  std::vector<int64_t> limit = cts[0].shape();
  int64_t offset = 0;
  for (size_t k = 0; k < args.size(); ++k) {
    const int64_t size = args[k].aval.shape[dim];
    if (args[k].is_linear()) {
      start[dim] = offset;
      limit[dim] = offset + size;
      out[k] = slice(cts[0], start, limit);
    }
    offset += size;
  }
  return out;
}

BatchResult ConcatenateBatch(absl::Span<const Array> args, absl::Span<const int64_t> dims, int64_t n,
                             const ParamMap& p) {
  Arrays in;
  for (size_t k = 0; k < args.size(); ++k) in.push_back(MoveBatchToFront(args[k], dims[k], n));
  return BatchResult{{Bind1(kConcatenate, in, ParamMap{{"dimension", p.GetInt("dimension") + 1}})}, {0}};
}

// pad

JvpResult PadJvp(absl::Span<const Array> primals, absl::Span<const Array> tangents, const ParamMap& p) {
  Array t = Bind1(kPad, {Instantiate(tangents[0], primals[0]), Instantiate(tangents[1], primals[1])}, p);
  return JvpResult{{Bind1(kPad, primals, p)}, {t}};
}

// Operand: the cotangent with the padding cut off (negative padding re-padded with zeros)
// and the interior strided out; padding value: everything the operand did not receive.
Arrays PadTranspose(absl::Span<const Array> cts, absl::Span<const TransposeArg> args, const ParamMap& p) {
  Arrays out(2);
  if (!cts[0].defined()) return out;
  const Array& ct = cts[0];
  std::vector<std::array<int64_t, 3>> unpad;
  std::vector<int64_t> strides;
  bool strided = false;
  for (const PadDim& c : PadConfig(p)) {
    unpad.push_back({-c.lo, -c.hi, 0});
    strides.push_back(c.interior + 1);
    strided = strided || c.interior > 0;
  }
  const Array unpadded = pad(ct, Array::Scalar(0, ct.dtype(), ct.weak_type()), unpad);
  const Array operand_ct = slice(unpadded, std::vector<int64_t>(strides.size(), 0), unpadded.shape(),
                                 strided ? strides : std::vector<int64_t>{});
  if (args[0].is_linear()) out[0] = operand_ct;
  if (args[1].is_linear()) out[1] = sub(SumAll(ct), SumAll(operand_ct));
  return out;
}

BatchResult PadBatch(absl::Span<const Array> args, absl::Span<const int64_t> dims, int64_t n, const ParamMap& p) {
  std::vector<PadDim> cfg = PadConfig(p);
  if (dims[1] == kNotMapped) {
    // Only the operand is batched: its batch axis gets no padding.
    cfg.insert(cfg.begin() + dims[0], PadDim{0, 0, 0});
    return BatchResult{{Bind1(kPad, args, ParamMap{{"padding_config", PadConfigList(cfg)}})}, {dims[0]}};
  }
  // A per-example padding value: pad with zeros, then select it where the padding went.
  cfg.insert(cfg.begin(), PadDim{0, 0, 0});
  const ParamMap q{{"padding_config", PadConfigList(cfg)}};
  const Array operand = MoveBatchToFront(args[0], dims[0], n);
  const Array value = MoveAxis(args[1], dims[1], 0);
  const Array padded = Bind1(kPad, {operand, Array::Scalar(0, operand.dtype())}, q);
  const Array ones = broadcast_in_dim(Array::Scalar(1, bool_), operand.shape(), {});
  const Array is_operand = Bind1(kPad, {ones, Array::Scalar(0, bool_)}, q);
  return BatchResult{{select_n(is_operand, {broadcast_in_dim(value, padded.shape(), {0}), padded})}, {0}};
}

void AddSlicingRules(Registry& r) {
  PrimitiveRules& sl = r.Define(kSlice);
  sl.jvp = SliceJvp;
  sl.transpose = SliceTranspose;
  sl.batch = SliceBatch;

  PrimitiveRules& ds = r.Define(kDynamicSlice);
  ds.jvp = DynamicSliceJvp;
  ds.transpose = DynamicSliceTranspose;
  ds.batch = DynamicSliceBatch;

  PrimitiveRules& dus = r.Define(kDynamicUpdateSlice);
  dus.jvp = DynamicUpdateSliceJvp;
  dus.transpose = DynamicUpdateSliceTranspose;
  dus.batch = DynamicUpdateSliceBatch;

  PrimitiveRules& cc = r.Define(kConcatenate);
  cc.jvp = ConcatenateJvp;
  cc.transpose = ConcatenateTranspose;
  cc.batch = ConcatenateBatch;

  PrimitiveRules& pd = r.Define(kPad);
  pd.jvp = PadJvp;
  pd.transpose = PadTranspose;
  pd.batch = PadBatch;
}

}  // namespace

void RegisterSlicingOps(Registry& r) {
  Define(r, kSlice, SliceEval, SliceImpl);
  Define(r, kDynamicSlice, DynamicSliceEval, DynamicSliceImpl);
  Define(r, kDynamicUpdateSlice, DynamicUpdateSliceEval, DynamicUpdateSliceImpl);
  Define(r, kConcatenate, ConcatenateEval, ConcatenateImpl);
  Define(r, kPad, PadEval, PadImpl);
  AddSlicingRules(r);
}

}  // namespace internal
}  // namespace jx::lax
