// gather, scatter and scatter_add with XLA's general dimension numbers (including batching
// dims) and JAX's GatherScatterMode. Abstract eval mirrors XLA's/JAX's shape inference. The
// impl rules call the kernel library (lax/kernels/gather_scatter.h), which the CPU backend's
// gather and scatter kernels call too, so eager and jit agree bit for bit.
// The jvp/transpose/batching rules close the file.
#include <algorithm>
#include <cmath>
#include <limits>

#include "jx/core/out_sharding.h"
#include "jx/lax/binary_ops.h"
#include "jx/lax/convert_ops.h"
#include "jx/lax/kernels/copy_kernels.h"
#include "jx/lax/kernels/gather_scatter.h"
#include "jx/lax/op_util.h"
#include "jx/lax/primitives.h"
#include "jx/lax/rule_util.h"
#include "jx/lax/shape_ops.h"
#include "jx/lax/slicing_ops.h"
#include "jx/lax/indexing_internal.h"
#include "jx/transforms/jaxpr_util.h"

namespace jx::lax {
namespace internal {
namespace {

std::string Tup(const std::vector<int64_t>& v) { return ShapeToString(v); }

std::string_view ModeName(GatherScatterMode m) {
  switch (m) {
    case GatherScatterMode::kClip: return "GatherScatterMode.CLIP";
    case GatherScatterMode::kFillOrDrop: return "GatherScatterMode.FILL_OR_DROP";
    case GatherScatterMode::kPromiseInBounds: return "GatherScatterMode.PROMISE_IN_BOUNDS";
  }
  return "?";
}

class ModeParam final : public ParamObject {
 public:
  explicit ModeParam(GatherScatterMode m) : mode(m) {}
  size_t Hash() const override { return static_cast<size_t>(mode) * 0x9e3779b97f4a7c15ull; }
  bool Equals(const ParamObject& o) const override {
    const auto* p = dynamic_cast<const ModeParam*>(&o);
    return p != nullptr && p->mode == mode;
  }
  std::string ToString() const override { return std::string(ModeName(mode)); }
  GatherScatterMode mode;
};

size_t HashInts(size_t h, const std::vector<int64_t>& v) {
  for (int64_t x : v) h = h * 1000003u ^ static_cast<size_t>(x + 0x51ed27);
  return h * 31u + v.size();
}

class GatherDnParam final : public ParamObject {
 public:
  explicit GatherDnParam(GatherDimensionNumbers d) : dn(std::move(d)) {}
  size_t Hash() const override {
    size_t h = 0x6a09e667;
    for (const auto* v : {&dn.offset_dims, &dn.collapsed_slice_dims, &dn.start_index_map, &dn.operand_batching_dims,
                          &dn.start_indices_batching_dims}) {
      h = HashInts(h, *v);
    }
    return h;
  }
  bool Equals(const ParamObject& o) const override {
    const auto* p = dynamic_cast<const GatherDnParam*>(&o);
    return p != nullptr && p->dn.offset_dims == dn.offset_dims && p->dn.collapsed_slice_dims == dn.collapsed_slice_dims &&
           p->dn.start_index_map == dn.start_index_map && p->dn.operand_batching_dims == dn.operand_batching_dims &&
           p->dn.start_indices_batching_dims == dn.start_indices_batching_dims;
  }
  std::string ToString() const override {
    return StrCat("GatherDimensionNumbers(offset_dims=", Tup(dn.offset_dims), ", collapsed_slice_dims=",
                  Tup(dn.collapsed_slice_dims), ", start_index_map=", Tup(dn.start_index_map),
                  ", operand_batching_dims=", Tup(dn.operand_batching_dims), ", start_indices_batching_dims=",
                  Tup(dn.start_indices_batching_dims), ")");
  }
  GatherDimensionNumbers dn;
};

class ScatterDnParam final : public ParamObject {
 public:
  explicit ScatterDnParam(ScatterDimensionNumbers d) : dn(std::move(d)) {}
  size_t Hash() const override {
    size_t h = 0xbb67ae85;
    for (const auto* v : {&dn.update_window_dims, &dn.inserted_window_dims, &dn.scatter_dims_to_operand_dims,
                          &dn.operand_batching_dims, &dn.scatter_indices_batching_dims}) {
      h = HashInts(h, *v);
    }
    return h;
  }
  bool Equals(const ParamObject& o) const override {
    const auto* p = dynamic_cast<const ScatterDnParam*>(&o);
    return p != nullptr && p->dn.update_window_dims == dn.update_window_dims &&
           p->dn.inserted_window_dims == dn.inserted_window_dims &&
           p->dn.scatter_dims_to_operand_dims == dn.scatter_dims_to_operand_dims &&
           p->dn.operand_batching_dims == dn.operand_batching_dims &&
           p->dn.scatter_indices_batching_dims == dn.scatter_indices_batching_dims;
  }
  std::string ToString() const override {
    return StrCat("ScatterDimensionNumbers(update_window_dims=", Tup(dn.update_window_dims), ", inserted_window_dims=",
                  Tup(dn.inserted_window_dims), ", scatter_dims_to_operand_dims=", Tup(dn.scatter_dims_to_operand_dims),
                  ", operand_batching_dims=", Tup(dn.operand_batching_dims), ", scatter_indices_batching_dims=",
                  Tup(dn.scatter_indices_batching_dims), ")");
  }
  ScatterDimensionNumbers dn;
};

Param Obj(std::shared_ptr<const ParamObject> p) { return Param(std::move(p)); }

template <typename P>
const P& GetObject(std::string_view op, const ParamMap& p, std::string_view name) {
  const auto* obj = dynamic_cast<const P*>(p.GetObject(name).get());
  if (obj == nullptr) ThrowOpError<InternalError>(op, "parameter ", name, " has the wrong type: ", p.Get(name).ToString());
  return *obj;
}

// ---- validation ----

std::string DimsCtx(const ShapedArray& x, const ShapedArray& ind, const ShapedArray* upd, const ParamObject& dn) {
  return StrCat(" (operand ", x.str(), ", indices ", ind.str(), upd ? StrCat(", updates ", upd->str()) : std::string(),
                ", dimension_numbers=", dn.ToString(), ")");
}

// dims must be strictly increasing (when sorted) and in [0, bound), without repeats.
void CheckDimList(std::string_view op, std::string_view name, const std::vector<int64_t>& dims, int64_t bound,
                  bool sorted, const std::string& ctx) {
  for (size_t i = 0; i < dims.size(); ++i) {
    if (dims[i] < 0 || dims[i] >= bound) {
      ThrowOpError<ShapeError>(op, name, " must all be in [0, ", bound, "), got ", name, "=", Tup(dims), ctx);
    }
    for (size_t j = 0; j < i; ++j) {
      if (dims[j] == dims[i]) ThrowOpError<ShapeError>(op, name, " must not repeat, got ", name, "=", Tup(dims), ctx);
    }
    if (sorted && i > 0 && dims[i] < dims[i - 1]) {
      ThrowOpError<ShapeError>(op, name, " must be sorted, got ", name, "=", Tup(dims), ctx);
    }
  }
}

void CheckDisjoint(std::string_view op, std::string_view a_name, const std::vector<int64_t>& a, std::string_view b_name,
                   const std::vector<int64_t>& b, const std::string& ctx) {
  for (int64_t x : a) {
    if (std::find(b.begin(), b.end(), x) != b.end()) {
      ThrowOpError<ShapeError>(op, a_name, " and ", b_name, " must be disjoint, got ", a_name, "=", Tup(a), " and ",
                               b_name, "=", Tup(b), ctx);
    }
  }
}

bool Contains(const std::vector<int64_t>& v, int64_t x) { return std::find(v.begin(), v.end(), x) != v.end(); }

void CheckIndexDType(std::string_view op, const ShapedArray& ind, const std::string& ctx) {
  if (!IsInteger(ind.dtype)) {
    ThrowOpError<TypeError>(op, "indices must have an integer type, got ", ind.str(), ctx);
  }
  if (ind.ndim() < 1) {
    ThrowOpError<ShapeError>(op, "indices must have rank >= 1 (the last axis holds the index vectors), got ", ind.str(),
                             ctx);
  }
}

void CheckBatchingDims(std::string_view op, const ShapedArray& x, const ShapedArray& ind,
                       const std::vector<int64_t>& operand_batching_dims, std::string_view ind_name,
                       const std::vector<int64_t>& ind_batching_dims, const std::string& ctx) {
  CheckDimList(op, "operand_batching_dims", operand_batching_dims, x.ndim(), true, ctx);
  CheckDimList(op, ind_name, ind_batching_dims, ind.ndim(), false, ctx);
  if (Contains(ind_batching_dims, ind.ndim() - 1)) {
    ThrowOpError<ShapeError>(op, ind_name, " must not contain the index vector dimension ", ind.ndim() - 1, ctx);
  }
  if (operand_batching_dims.size() != ind_batching_dims.size()) {
    ThrowOpError<ShapeError>(op, "operand_batching_dims and ", ind_name, " must have the same length", ctx);
  }
  for (size_t i = 0; i < operand_batching_dims.size(); ++i) {
    const int64_t a = x.shape[static_cast<size_t>(operand_batching_dims[i])];
    const int64_t b = ind.shape[static_cast<size_t>(ind_batching_dims[i])];
    if (a != b) {
      ThrowOpError<ShapeError>(op, "batching dimension sizes must match: operand dimension ", operand_batching_dims[i],
                               " has size ", a, ", indices dimension ", ind_batching_dims[i], " has size ", b, ctx);
    }
  }
}

Avals GatherEval(InAvals in, const ParamMap& p) {
  constexpr std::string_view op = "gather";
  CheckArity(op, in, 2);
  const ShapedArray& x = *in[0];
  const ShapedArray& ind = *in[1];
  const GatherDnParam& dnp = GetObject<GatherDnParam>(op, p, "dimension_numbers");
  const GatherDimensionNumbers& dn = dnp.dn;
  GetObject<ModeParam>(op, p, "mode");
  if (!p.Get("fill_value").is_none()) p.GetDouble("fill_value");
  const std::vector<int64_t>& slice_sizes = p.GetInts("slice_sizes");
  const std::string ctx = StrCat(DimsCtx(x, ind, nullptr, dnp), " slice_sizes=", Tup(slice_sizes));
  CheckIndexDType(op, ind, ctx);
  const int64_t iv = ind.ndim() - 1;
  const int64_t out_rank = static_cast<int64_t>(dn.offset_dims.size()) + ind.ndim() - 1;
  CheckDimList(op, "offset_dims", dn.offset_dims, out_rank, true, ctx);
  if (static_cast<int64_t>(dn.start_index_map.size()) != ind.shape[static_cast<size_t>(iv)]) {
    ThrowOpError<ShapeError>(op, "start_index_map has ", dn.start_index_map.size(),
                             " elements but the index vector dimension of indices has size ",
                             ind.shape[static_cast<size_t>(iv)], "; these must be equal", ctx);
  }
  CheckDimList(op, "start_index_map", dn.start_index_map, x.ndim(), false, ctx);
  CheckDimList(op, "collapsed_slice_dims", dn.collapsed_slice_dims, x.ndim(), true, ctx);
  CheckBatchingDims(op, x, ind, dn.operand_batching_dims, "start_indices_batching_dims", dn.start_indices_batching_dims,
                    ctx);
  CheckDisjoint(op, "collapsed_slice_dims", dn.collapsed_slice_dims, "operand_batching_dims", dn.operand_batching_dims, ctx);
  CheckDisjoint(op, "start_index_map", dn.start_index_map, "operand_batching_dims", dn.operand_batching_dims, ctx);
  if (static_cast<int64_t>(slice_sizes.size()) != x.ndim()) {
    ThrowOpError<ShapeError>(op, "slice_sizes must have length equal to the operand rank ", x.ndim(), ctx);
  }
  if (dn.offset_dims.size() + dn.collapsed_slice_dims.size() + dn.operand_batching_dims.size() !=
      static_cast<size_t>(x.ndim())) {
    ThrowOpError<ShapeError>(op, "all components of the offset index must be accounted for: len(offset_dims) + "
                             "len(collapsed_slice_dims) + len(operand_batching_dims) must equal the operand rank ",
                             x.ndim(), ctx);
  }
  for (size_t d = 0; d < slice_sizes.size(); ++d) {
    if (slice_sizes[d] < 0 || slice_sizes[d] > x.shape[d]) {
      ThrowOpError<ShapeError>(op, "slice size ", slice_sizes[d], " of dimension ", d,
                               " must be in [0, operand dimension size ", x.shape[d], "]", ctx);
    }
    const bool collapsed = Contains(dn.collapsed_slice_dims, static_cast<int64_t>(d));
    if ((collapsed || Contains(dn.operand_batching_dims, static_cast<int64_t>(d))) && slice_sizes[d] != 1) {
      ThrowOpError<ShapeError>(op, "can only ", collapsed ? "collapse slice dims" : "batch dims", " with bound 1, but bound is ",
                               slice_sizes[d], " for dimension ", d, ctx);
    }
  }
  Shape out(static_cast<size_t>(out_rank));
  size_t next_offset = 0, next_batch = 0;
  std::vector<int64_t> window_sizes;
  for (int64_t d = 0; d < x.ndim(); ++d) {
    if (!Contains(dn.collapsed_slice_dims, d) && !Contains(dn.operand_batching_dims, d)) {
      window_sizes.push_back(slice_sizes[static_cast<size_t>(d)]);
    }
  }
  for (int64_t j = 0; j < out_rank; ++j) {
    out[static_cast<size_t>(j)] =
        Contains(dn.offset_dims, j) ? window_sizes[next_offset++] : ind.shape[next_batch++];
  }
  return {ShapedArray{out, x.dtype, x.weak_type}};
}

Avals ScatterEval(Primitive prim, InAvals in, const ParamMap& p) {
  const std::string_view op = prim.name();
  CheckArity(op, in, 3);
  const ShapedArray& x = *in[0];
  const ShapedArray& ind = *in[1];
  const ShapedArray& upd = *in[2];
  const ScatterDnParam& dnp = GetObject<ScatterDnParam>(op, p, "dimension_numbers");
  const ScatterDimensionNumbers& dn = dnp.dn;
  GetObject<ModeParam>(op, p, "mode");
  const std::string ctx = DimsCtx(x, ind, &upd, dnp);
  CheckIndexDType(op, ind, ctx);
  if (upd.dtype != x.dtype) {
    ThrowOpError<TypeError>(op, "updates dtype must match operand dtype, got operand ", x.str(), " and updates ",
                            upd.str(), ctx);
  }
  const int64_t iv = ind.ndim() - 1;
  CheckDimList(op, "update_window_dims", dn.update_window_dims, upd.ndim(), true, ctx);
  CheckDimList(op, "inserted_window_dims", dn.inserted_window_dims, x.ndim(), true, ctx);
  CheckBatchingDims(op, x, ind, dn.operand_batching_dims, "scatter_indices_batching_dims",
                    dn.scatter_indices_batching_dims, ctx);
  CheckDisjoint(op, "inserted_window_dims", dn.inserted_window_dims, "operand_batching_dims", dn.operand_batching_dims,
                ctx);
  if (static_cast<int64_t>(dn.scatter_dims_to_operand_dims.size()) != ind.shape[static_cast<size_t>(iv)]) {
    ThrowOpError<ShapeError>(op, "scatter_dims_to_operand_dims has ", dn.scatter_dims_to_operand_dims.size(),
                             " elements but the index vector dimension of indices has size ",
                             ind.shape[static_cast<size_t>(iv)], "; these must be equal", ctx);
  }
  CheckDimList(op, "scatter_dims_to_operand_dims", dn.scatter_dims_to_operand_dims, x.ndim(), false, ctx);
  CheckDisjoint(op, "scatter_dims_to_operand_dims", dn.scatter_dims_to_operand_dims, "operand_batching_dims",
                dn.operand_batching_dims, ctx);
  if (dn.update_window_dims.size() + dn.inserted_window_dims.size() + dn.operand_batching_dims.size() !=
      static_cast<size_t>(x.ndim())) {
    ThrowOpError<ShapeError>(op, "len(update_window_dims) + len(inserted_window_dims) + len(operand_batching_dims) "
                             "must equal the operand rank ", x.ndim(), ctx);
  }
  if (upd.ndim() != static_cast<int64_t>(dn.update_window_dims.size()) + ind.ndim() - 1) {
    ThrowOpError<ShapeError>(op, "updates must have rank len(update_window_dims) + rank(indices) - 1 = ",
                             static_cast<int64_t>(dn.update_window_dims.size()) + ind.ndim() - 1, ", got ", upd.str(),
                             ctx);
  }
  size_t w = 0;
  for (int64_t d = 0; d < x.ndim(); ++d) {
    if (Contains(dn.inserted_window_dims, d) || Contains(dn.operand_batching_dims, d)) continue;
    const int64_t u = upd.shape[static_cast<size_t>(dn.update_window_dims[w])];
    if (u > x.shape[static_cast<size_t>(d)]) {
      ThrowOpError<ShapeError>(op, "bounds of the window dimensions of updates must not exceed the operand: updates "
                               "dimension ", dn.update_window_dims[w], " has size ", u, " but operand dimension ", d,
                               " has size ", x.shape[static_cast<size_t>(d)], ctx);
    }
    ++w;
  }
  size_t k = 0;
  for (int64_t d = 0; d < upd.ndim(); ++d) {
    if (Contains(dn.update_window_dims, d)) continue;
    if (upd.shape[static_cast<size_t>(d)] != ind.shape[k]) {
      ThrowOpError<ShapeError>(op, "bounds of the scatter dimensions of updates must match indices: updates dimension ", d,
                               " has size ", upd.shape[static_cast<size_t>(d)], " but indices dimension ", k,
                               " has size ", ind.shape[k], ctx);
    }
    ++k;
  }
  return {x};
}

// ---- kernels: the numerics live in lax/kernels/gather_scatter.cc ----

}  // namespace

kernels::IndexArray IndexArrayOf(const Array& a) { return {a.dtype(), a.data(), a.shape()}; }
kernels::ScatterDims KernelScatterDims(const ScatterDimensionNumbers& dn) {
  return kernels::ScatterDims{dn.update_window_dims, dn.inserted_window_dims, dn.scatter_dims_to_operand_dims,
                              dn.operand_batching_dims, dn.scatter_indices_batching_dims};
}

namespace {

// The gather fill value as dtype's bytes (JAX's defaults when fill_value is None).
Array FillScalar(DType dtype, const Param& fill_value) {
  if (!fill_value.is_none()) {
    return Array::Scalar(std::get<double>(fill_value.value), dtype);
  }
  Array out = Array::Empty(Shape{}, dtype);
  kernels::DispatchDType(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    T v;
    if constexpr (std::is_same_v<T, bool>) v = true;
    else if constexpr (kernels::kIsFloat<T>) v = T(std::numeric_limits<float>::quiet_NaN());
    else if constexpr (std::is_signed_v<T>) v = std::numeric_limits<T>::min();
    else v = std::numeric_limits<T>::max();
    *kernels::MutableData<T>(out) = v;
  });
  return out;
}

Arrays GatherImpl(absl::Span<const Array> in, const ParamMap& p, absl::Span<const ShapedArray> out_avals) {
  Array out = Array::Empty(out_avals[0]);
  if (out.size() == 0) return {out};
  const Array& x = in[0];
  const GatherDimensionNumbers& dn = GetObject<GatherDnParam>("gather", p, "dimension_numbers").dn;
  const bool fill = GetObject<ModeParam>("gather", p, "mode").mode == GatherScatterMode::kFillOrDrop;
  const Array fill_value = FillScalar(x.dtype(), p.Get("fill_value"));
  const kernels::GatherDims dims{dn.offset_dims, dn.collapsed_slice_dims, dn.start_index_map,
                                 dn.operand_batching_dims, dn.start_indices_batching_dims};
  kernels::Gather(ItemSize(x.dtype()), x.data(), x.shape(), IndexArrayOf(in[1]), dims, p.GetInts("slice_sizes"),
                  fill ? fill_value.data() : nullptr, out.mutable_data(), out.shape());
  return {out};
}

Arrays ScatterImplWith(Primitive prim, kernels::ScatterCombiner combiner, absl::Span<const Array> in,
                       const ParamMap& p, absl::Span<const ShapedArray> out_avals) {
  const std::string_view op = prim.name();
  Array out = Array::Empty(out_avals[0]);
  const Array& x = in[0];
  const Array& u = in[2];
  kernels::ParallelMemcpy(out.mutable_data(), x.data(), x.nbytes());
  const ScatterDimensionNumbers& dn = GetObject<ScatterDnParam>(op, p, "dimension_numbers").dn;
  const bool clamp = GetObject<ModeParam>(op, p, "mode").mode == GatherScatterMode::kClip;
  kernels::Scatter(x.dtype(), combiner, out.mutable_data(), x.shape(), IndexArrayOf(in[1]), u.data(), u.shape(),
                   KernelScatterDims(dn), clamp);
  return {out};
}

ImplRule ScatterImpl(Primitive prim, kernels::ScatterCombiner combiner) {
  return [prim, combiner](absl::Span<const Array> in, const ParamMap& p, absl::Span<const ShapedArray> out_avals) {
    return ScatterImplWith(prim, combiner, in, p, out_avals);
  };
}

// ---- jvp, transpose and batching rules ----
// gather is linear in its operand and scatter_add in its operand and updates: gather and
// scatter_add with matching dimension numbers are each other's transposes. scatter's jvp
// follows JAX (ids mark which operand elements and updates survive duplicate writes).
// Batching folds the batch into the dimension numbers, as JAX's _gather_batching_rule.

const GatherDimensionNumbers& GatherDn(const ParamMap& p) {
  return GetObject<GatherDnParam>("gather", p, "dimension_numbers").dn;
}
const ScatterDimensionNumbers& ScatterDn(const ParamMap& p) {
  return GetObject<ScatterDnParam>("scatter", p, "dimension_numbers").dn;
}
GatherScatterMode Mode(const ParamMap& p) { return GetObject<ModeParam>("gather/scatter", p, "mode").mode; }

std::vector<int64_t> Plus1(const std::vector<int64_t>& v) {
  std::vector<int64_t> out;
  out.reserve(v.size());
  for (int64_t d : v) out.push_back(d + 1);
  return out;
}
std::vector<int64_t> WithLeading0(std::vector<int64_t> v) {
  v.insert(v.begin(), 0);
  return v;
}
std::vector<int64_t> Iota(int64_t n) {
  std::vector<int64_t> out(static_cast<size_t>(n));
  for (int64_t d = 0; d < n; ++d) out[static_cast<size_t>(d)] = d;
  return out;
}
// The scatter whose windows are the slices a gather reads, and the converse.
ScatterDimensionNumbers ScatterDnOf(const GatherDimensionNumbers& g) {
  return {g.offset_dims, g.collapsed_slice_dims, g.start_index_map, g.operand_batching_dims,
          g.start_indices_batching_dims};
}
GatherDimensionNumbers GatherDnOf(const ScatterDimensionNumbers& s) {
  return {s.update_window_dims, s.inserted_window_dims, s.scatter_dims_to_operand_dims, s.operand_batching_dims,
          s.scatter_indices_batching_dims};
}
// The gather slice sizes that read back the windows of a scatter into an operand of rank `rank`.
std::vector<int64_t> WindowSliceSizes(const ScatterDimensionNumbers& dn, int64_t rank, const Shape& updates_shape) {
  std::vector<int64_t> sizes;
  size_t window = 0;
  for (int64_t d = 0; d < rank; ++d) {
    if (Contains(dn.inserted_window_dims, d) || Contains(dn.operand_batching_dims, d)) {
      sizes.push_back(1);
    } else {
      sizes.push_back(updates_shape[static_cast<size_t>(dn.update_window_dims[window++])]);
    }
  }
  return sizes;
}
// Modes under which a gather reads exactly the windows a scatter writes and vice versa: a
// kPromiseInBounds gather clamps, a kPromiseInBounds scatter drops out-of-bounds windows.
GatherScatterMode GatherModeReading(GatherScatterMode scatter_mode) {
  return scatter_mode == GatherScatterMode::kClip ? GatherScatterMode::kClip : GatherScatterMode::kFillOrDrop;
}
GatherScatterMode ScatterModeWriting(GatherScatterMode gather_mode) {
  return gather_mode == GatherScatterMode::kFillOrDrop ? GatherScatterMode::kFillOrDrop : GatherScatterMode::kClip;
}

// gather

JvpResult GatherJvp(absl::Span<const Array> primals, absl::Span<const Array> tangents, const ParamMap& p) {
  Array out = Bind1(kGather, primals, p);
  if (!tangents[0].defined()) return JvpResult{{out}, {Array()}};
  // Filled slices are constants: their tangent is zero (JAX's fill_value=0).
  ParamMap q = p;
  q.Set("fill_value", 0.0);
  return JvpResult{{out}, {Bind1(kGather, {tangents[0], primals[1]}, q)}};
}

Arrays GatherTranspose(absl::Span<const Array> cts, absl::Span<const TransposeArg> args, const ParamMap& p) {
  Arrays out(2);
  if (!cts[0].defined() || !args[0].is_linear()) return out;
  ParamMap q{{"dimension_numbers", Obj(std::make_shared<const ScatterDnParam>(ScatterDnOf(GatherDn(p))))},
             {"mode", Obj(std::make_shared<const ModeParam>(ScatterModeWriting(Mode(p))))},
             {"indices_are_sorted", p.GetBool("indices_are_sorted")},
             {"unique_indices", p.GetBool("unique_indices")},
             {"update_consts", ParamList{}},
             {"update_jaxpr", ParamNone{}}};
  // Explicit sharding: the cotangent is typed as the primal operand (JAX's gather transpose
  // builds its zeros with the operand's sharding), whatever the lookups' sharding.
  if (!args[0].aval.spec.empty()) {
    DimShardings spec = args[0].aval.spec;
    spec.resize(static_cast<size_t>(args[0].aval.ndim()));
    q.Set("out_sharding", OutShardingParam::Make(std::move(spec)));
  }
  out[0] = Bind1(kScatterAdd, {Zeros(args[0].aval), args[1].value, cts[0]}, q);
  return out;
}

BatchResult GatherBatch(absl::Span<const Array> args, absl::Span<const int64_t> dims, int64_t n, const ParamMap& p) {
  const GatherDimensionNumbers& dn = GatherDn(p);
  std::vector<int64_t> sizes = p.GetInts("slice_sizes");
  Array operand = args[0], indices = args[1];
  GatherDimensionNumbers b = dn;
  if (dims[0] != kNotMapped) {
    operand = MoveAxis(operand, dims[0], 0);
    b.collapsed_slice_dims = Plus1(dn.collapsed_slice_dims);
    b.start_index_map = Plus1(dn.start_index_map);
    b.operand_batching_dims = Plus1(dn.operand_batching_dims);
  }
  if (dims[1] != kNotMapped) indices = MoveAxis(indices, dims[1], 0);
  if (dims[1] == kNotMapped) {
    // Only the operand is batched: its batch axis becomes the leading offset (window) dim.
    b.offset_dims = WithLeading0(Plus1(dn.offset_dims));
    sizes.insert(sizes.begin(), n);
  } else if (dims[0] == kNotMapped) {
    // Only the indices are batched: one more batch dim of indices, leading in the output.
    b.offset_dims = Plus1(dn.offset_dims);
    b.start_indices_batching_dims = Plus1(dn.start_indices_batching_dims);
  } else {
    // Both: the batch axes are paired as batching dims.
    b.offset_dims = Plus1(dn.offset_dims);
    b.operand_batching_dims = WithLeading0(b.operand_batching_dims);
    b.start_indices_batching_dims = WithLeading0(Plus1(dn.start_indices_batching_dims));
    sizes.insert(sizes.begin(), 1);
  }
  ParamMap q = p;
  q.Set("dimension_numbers", Obj(std::make_shared<const GatherDnParam>(b))).Set("slice_sizes", sizes);
  return BatchResult{{Bind1(kGather, {operand, indices}, q)}, {0}};
}

// scatter and scatter_add

// Which operand elements and which updates a scatter's output holds (the last of duplicate
// writes wins): every scatter position gets a positive id, the ids are scattered like the
// values and gathered back; an update won iff it reads back its own id, and an operand
// element survives iff no id landed on it. Both masks are bool.
struct ScatterSurvivors {
  Array operand_kept;
  Array update_won;
};
ScatterSurvivors FindSurvivors(const Shape& operand_shape, const Array& indices, const Shape& updates_shape,
                               const ScatterDimensionNumbers& dn, GatherScatterMode mode) {
  Shape ids_shape = updates_shape;
  for (int64_t d : dn.update_window_dims) ids_shape[static_cast<size_t>(d)] = 1;
  const int64_t num_ids = NumElements(ids_shape);
  const DType id_dtype = num_ids < std::numeric_limits<int32_t>::max() ? int32 : int64;
  Array ids = add(reshape(iota(id_dtype, num_ids), ids_shape), Array::Scalar(1, id_dtype));
  ids = broadcast_in_dim(ids, updates_shape, Iota(static_cast<int64_t>(updates_shape.size())));
  const Array scattered = scatter(Zeros(ShapedArray{operand_shape, id_dtype}), indices, ids, dn, mode);
  const Array read_back = gather(scattered, indices, GatherDnOf(dn),
                                 WindowSliceSizes(dn, static_cast<int64_t>(operand_shape.size()), updates_shape),
                                 GatherModeReading(mode));
  return {eq(scattered, Array::Scalar(0, id_dtype)), eq(ids, read_back)};
}

// x where mask is set, zero elsewhere (linear in x).
Array KeepWhere(const Array& mask, const Array& x) {
  return select_n(mask, {Zeros(ShapedArray{x.shape(), x.dtype()}), x});
}

// The tangent is a scatter_add of the surviving tangents, so reverse mode only needs
// scatter_add's transpose.
JvpResult ScatterJvp(absl::Span<const Array> primals, absl::Span<const Array> tangents, const ParamMap& p) {
  // scatter_apply (an update computation): JAX's _scatter_jvp raises the same.
  if (!p.Get("update_jaxpr").is_none()) throw NotImplementedError("scatter_apply JVP not implemented");
  Array out = Bind1(kScatter, primals, p);
  const Array& indices = primals[1];
  const ScatterSurvivors s =
      FindSurvivors(primals[0].shape(), indices, primals[2].shape(), ScatterDn(p), Mode(p));
  const Array t_operand = KeepWhere(s.operand_kept, Instantiate(tangents[0], primals[0]));
  const Array t_updates = KeepWhere(s.update_won, Instantiate(tangents[2], primals[2]));
  return JvpResult{{out}, {Bind1(kScatterAdd, {t_operand, indices, t_updates}, p)}};
}

// scatter is linear in (operand, updates) for fixed indices: the operand gets the cotangent
// outside the overwritten windows, each update the cotangent of the window it won.
Arrays ScatterTranspose(absl::Span<const Array> cts, absl::Span<const TransposeArg> args, const ParamMap& p) {
  Arrays out(3);
  if (!cts[0].defined()) return out;
  const Array& indices = args[1].value;
  const ShapedArray& operand = args[0].aval;
  const ShapedArray& updates = args[2].aval;
  if (args[0].is_linear()) out[0] = Bind1(kScatter, {cts[0], indices, Zeros(updates)}, p);
  if (args[2].is_linear()) {
    const ScatterDimensionNumbers& dn = ScatterDn(p);
    const ScatterSurvivors s = FindSurvivors(operand.shape, indices, updates.shape, dn, Mode(p));
    const Array window_ct = gather(cts[0], indices, GatherDnOf(dn), WindowSliceSizes(dn, operand.ndim(), updates.shape),
                                   GatherModeReading(Mode(p)), 0.0);
    out[2] = KeepWhere(s.update_won, window_ct);
  }
  return out;
}

JvpResult ScatterAddJvp(absl::Span<const Array> primals, absl::Span<const Array> tangents, const ParamMap& p) {
  Array t = Bind1(kScatterAdd,
                  {Instantiate(tangents[0], primals[0]), primals[1], Instantiate(tangents[2], primals[2])}, p);
  return JvpResult{{Bind1(kScatterAdd, primals, p)}, {t}};
}

Arrays ScatterAddTranspose(absl::Span<const Array> cts, absl::Span<const TransposeArg> args, const ParamMap& p) {
  Arrays out(3);
  if (!cts[0].defined()) return out;
  if (args[0].is_linear()) out[0] = cts[0];
  if (args[2].is_linear()) {
    // Dropped windows added nothing: their cotangent is the gather's fill, zero.
    const ScatterDimensionNumbers& dn = ScatterDn(p);
    out[2] = gather(cts[0], args[1].value, GatherDnOf(dn), WindowSliceSizes(dn, args[0].aval.ndim(), args[2].aval.shape),
                    GatherModeReading(Mode(p)), 0.0);
  }
  return out;
}

// scatter_mul is linear in its operand; in its updates only when no two land on one element,
// so (as JAX) its updates' derivative needs unique_indices.
JvpResult ScatterMulJvp(absl::Span<const Array> primals, absl::Span<const Array> tangents, const ParamMap& p) {
  const Array out = Bind1(kScatterMul, primals, p);
  Array t;
  if (tangents[0].defined()) t = Bind1(kScatterMul, {tangents[0], primals[1], primals[2]}, p);
  if (tangents[2].defined()) {
    if (!std::get<bool>(p.Get("unique_indices").value)) {
      ThrowOpError<NotImplementedError>(
          "scatter_mul", "gradients with respect to the updates are only implemented if unique_indices=true (as in "
          "JAX): with repeated indices each update's derivative is the product of the others");
    }
    const Array ty = mul(primals[0], Bind1(kScatterAdd, {Zeros(primals[0].aval()), primals[1], tangents[2]}, p));
    t = t.defined() ? add(t, ty) : ty;
  }
  return JvpResult{{out}, {t}};
}

Arrays ScatterMulTranspose(absl::Span<const Array> cts, absl::Span<const TransposeArg> args, const ParamMap& p) {
  Arrays out(3);
  if (!cts[0].defined()) return out;
  if (args[2].is_linear()) {
    ThrowOpError<NotImplementedError>("scatter_mul", "transpose with respect to the updates: scatter_mul is linear "
                                      "only in its operand");
  }
  if (args[0].is_linear()) out[0] = Bind1(kScatterMul, {cts[0], args[1].value, args[2].value}, p);
  return out;
}

// scatter_min/max: each output element's tangent is the mean of the tangents of the values
// that tie for the extremum there (the operand element and the winning updates), as JAX's
// _scatter_extremal_jvp. Linear in the tangents, so reverse mode needs no transpose of its own.
JvpResult ScatterExtremalJvp(Primitive prim, absl::Span<const Array> primals, absl::Span<const Array> tangents,
                             const ParamMap& p) {
  const Array out = Bind1(prim, primals, p);
  if (!tangents[0].defined() && !tangents[2].defined()) return JvpResult{{out}, {Array()}};
  const Array& x = primals[0];
  const Array& indices = primals[1];
  const Array& y = primals[2];
  const ScatterDimensionNumbers& dn = ScatterDn(p);
  const GatherScatterMode mode = Mode(p);
  const Array dx = Instantiate(tangents[0], x), dy = Instantiate(tangents[2], y);
  const Array read_back =
      gather(out, indices, GatherDnOf(dn), WindowSliceSizes(dn, x.ndim(), y.shape()), GatherModeReading(mode));
  const Array won = eq(y, read_back);
  const Array kept = eq(x, out);
  const DType t = dx.dtype();
  const Array count = scatter_add(convert_element_type(kept, t), indices, convert_element_type(won, t), dn, mode);
  const Array sum = scatter_add(KeepWhere(kept, dx), indices, KeepWhere(won, dy), dn, mode);
  const Array one = broadcast_in_dim(Array::Scalar(1, t), count.shape(), {});
  return JvpResult{{out}, {div(sum, max(count, one))}};
}

BatchRule ScatterBatch(Primitive prim) {
  return [prim](absl::Span<const Array> args, absl::Span<const int64_t> dims, int64_t n, const ParamMap& p) {
    const ScatterDimensionNumbers& dn = ScatterDn(p);
    // The output is batched whenever anything is: scatter into a batched operand.
    const Array operand = MoveBatchToFront(args[0], dims[0], n);
    const Array updates = MoveBatchToFront(args[2], dims[2], n);
    Array indices = args[1];
    ScatterDimensionNumbers b = dn;
    b.inserted_window_dims = Plus1(dn.inserted_window_dims);
    b.scatter_dims_to_operand_dims = Plus1(dn.scatter_dims_to_operand_dims);
    if (dims[1] == kNotMapped) {
      // The batch axis is one more window dim, written whole.
      b.update_window_dims = WithLeading0(Plus1(dn.update_window_dims));
      b.operand_batching_dims = Plus1(dn.operand_batching_dims);
    } else {
      // Batched indices: the batch axes of operand and indices are paired as batching dims.
      indices = MoveAxis(indices, dims[1], 0);
      b.update_window_dims = Plus1(dn.update_window_dims);
      b.operand_batching_dims = WithLeading0(Plus1(dn.operand_batching_dims));
      b.scatter_indices_batching_dims = WithLeading0(Plus1(dn.scatter_indices_batching_dims));
    }
    ParamMap q = p;
    q.Set("dimension_numbers", Obj(std::make_shared<const ScatterDnParam>(b)));
    if (const DimShardings* s = OutShardingOf(p)) {  // the batch dim (in front) whole
      DimShardings batched = *s;
      batched.insert(batched.begin(), std::vector<std::string>{});
      q.Set("out_sharding", OutShardingParam::Make(std::move(batched)));
    }
    return BatchResult{{Bind1(prim, {operand, indices, updates}, q)}, {0}};
  };
}

void AddGatherScatterRules(Registry& r) {
  PrimitiveRules& g = r.Define(kGather);
  g.jvp = GatherJvp;
  g.transpose = GatherTranspose;
  g.batch = GatherBatch;

  PrimitiveRules& s = r.Define(kScatter);
  s.jvp = ScatterJvp;
  s.transpose = ScatterTranspose;
  s.batch = ScatterBatch(kScatter);

  PrimitiveRules& sa = r.Define(kScatterAdd);
  sa.jvp = ScatterAddJvp;
  sa.transpose = ScatterAddTranspose;
  sa.batch = ScatterBatch(kScatterAdd);

  PrimitiveRules& sm = r.Define(kScatterMul);
  sm.jvp = ScatterMulJvp;
  sm.transpose = ScatterMulTranspose;
  sm.batch = ScatterBatch(kScatterMul);

  for (Primitive prim : {kScatterMin, kScatterMax}) {
    PrimitiveRules& rules = r.Define(prim);
    rules.jvp = [prim](absl::Span<const Array> primals, absl::Span<const Array> tangents, const ParamMap& p) {
      return ScatterExtremalJvp(prim, primals, tangents, p);
    };
    rules.batch = ScatterBatch(prim);
    rules.unsupported["transpose"] = std::string("not linear in its operand or updates; its jvp is written with scatter_add, "
                                   "which reverse mode transposes");
  }
}

}  // namespace

// Param accessors for the lowering rules (shape_lowering.cc).
const GatherDimensionNumbers& GatherDnOf(const ParamMap& p) {
  return GetObject<GatherDnParam>("gather", p, "dimension_numbers").dn;
}
const ScatterDimensionNumbers& ScatterDnOf(const ParamMap& p) {
  return GetObject<ScatterDnParam>("scatter", p, "dimension_numbers").dn;
}
GatherScatterMode GatherScatterModeOf(const ParamMap& p) { return Mode(p); }
Array GatherFillValue(DType dtype, const ParamMap& p) { return FillScalar(dtype, p.Get("fill_value")); }

void RegisterGatherScatter(Registry& r) {
  PrimitiveRules& g = r.Define(kGather);
  g.abstract_eval = GatherEval;
  g.impl = GatherImpl;
  PrimitiveRules& s = r.Define(kScatter);
  s.abstract_eval = [](InAvals in, const ParamMap& p) { return ScatterEval(kScatter, in, p); };
  s.impl = [](absl::Span<const Array> in, const ParamMap& p, absl::Span<const ShapedArray> out_avals) {
    if (!p.Get("update_jaxpr").is_none()) return ScatterApplyImpl(in, p);
    return ScatterImplWith(kScatter, kernels::ScatterCombiner::kOverwrite, in, p, out_avals);
  };
  const std::pair<Primitive, kernels::ScatterCombiner> combining[] = {
      {kScatterAdd, kernels::ScatterCombiner::kAdd},
      {kScatterMul, kernels::ScatterCombiner::kMul},
      {kScatterMin, kernels::ScatterCombiner::kMin},
      {kScatterMax, kernels::ScatterCombiner::kMax}};
  for (const auto& entry : combining) {
    const Primitive prim = entry.first;
    const kernels::ScatterCombiner combiner = entry.second;
    PrimitiveRules& rules = r.Define(prim);
    rules.abstract_eval = [prim](InAvals in, const ParamMap& p) { return ScatterEval(prim, in, p); };
    rules.impl = ScatterImpl(prim, combiner);
  }
  AddGatherScatterRules(r);
}

}  // namespace internal


Array gather(const Array& operand, const Array& start_indices, const GatherDimensionNumbers& dimension_numbers,
             const std::vector<int64_t>& slice_sizes, GatherScatterMode mode, std::optional<double> fill_value) {
  using internal::GatherDnParam;
  using internal::ModeParam;
  using internal::Obj;
  return internal::BindOp1(kGather, {operand, start_indices},
                           ParamMap{{"dimension_numbers", Obj(std::make_shared<const GatherDnParam>(dimension_numbers))},
                                    {"slice_sizes", slice_sizes},
                                    {"mode", Obj(std::make_shared<const ModeParam>(mode))},
                                    {"fill_value", fill_value ? Param(*fill_value) : Param(ParamNone{})},
                                    {"indices_are_sorted", false},
                                    {"unique_indices", false}});
}

namespace {
ParamMap ScatterParams(const ScatterDimensionNumbers& dn, GatherScatterMode mode, bool indices_are_sorted = false,
                       bool unique_indices = false) {
  return ParamMap{{"dimension_numbers", internal::Obj(std::make_shared<const internal::ScatterDnParam>(dn))},
                  {"mode", internal::Obj(std::make_shared<const internal::ModeParam>(mode))},
                  {"indices_are_sorted", indices_are_sorted},
                  {"unique_indices", unique_indices},
                  {"update_consts", ParamList{}},
                  {"update_jaxpr", ParamNone{}}};
}
}  // namespace

Array scatter(const Array& operand, const Array& scatter_indices, const Array& updates,
              const ScatterDimensionNumbers& dimension_numbers, GatherScatterMode mode) {
  return internal::BindOp1(kScatter, {operand, scatter_indices, updates}, ScatterParams(dimension_numbers, mode));
}

Array scatter_add(const Array& operand, const Array& scatter_indices, const Array& updates,
                  const ScatterDimensionNumbers& dimension_numbers, GatherScatterMode mode) {
  return internal::BindOp1(kScatterAdd, {operand, scatter_indices, updates}, ScatterParams(dimension_numbers, mode));
}

Array scatter_mul(const Array& operand, const Array& scatter_indices, const Array& updates,
                  const ScatterDimensionNumbers& dimension_numbers, GatherScatterMode mode, bool unique_indices) {
  return internal::BindOp1(kScatterMul, {operand, scatter_indices, updates},
                           ScatterParams(dimension_numbers, mode, false, unique_indices));
}

Array scatter_min(const Array& operand, const Array& scatter_indices, const Array& updates,
                  const ScatterDimensionNumbers& dimension_numbers, GatherScatterMode mode) {
  return internal::BindOp1(kScatterMin, {operand, scatter_indices, updates}, ScatterParams(dimension_numbers, mode));
}

Array scatter_max(const Array& operand, const Array& scatter_indices, const Array& updates,
                  const ScatterDimensionNumbers& dimension_numbers, GatherScatterMode mode) {
  return internal::BindOp1(kScatterMax, {operand, scatter_indices, updates}, ScatterParams(dimension_numbers, mode));
}

namespace internal {

Array ScatterOp(UpdateOp op, const Array& operand, const Array& scatter_indices, const Array& updates,
                const ScatterDimensionNumbers& dimension_numbers, GatherScatterMode mode, const ScatterHints& hints) {
  Primitive p = kScatter;
  switch (op) {
    case UpdateOp::kSet: p = kScatter; break;
    case UpdateOp::kAdd: p = kScatterAdd; break;
    case UpdateOp::kMultiply: p = kScatterMul; break;
    case UpdateOp::kMin: p = kScatterMin; break;
    case UpdateOp::kMax: p = kScatterMax; break;
  }
  return BindOp1(p, {operand, scatter_indices, updates},
                 ScatterParams(dimension_numbers, mode, hints.indices_are_sorted, hints.unique_indices));
}

Array ScatterApplyOp(const ClosedJaxpr& update_jaxpr, const Array& operand, const Array& scatter_indices,
                     const Array& updates, const ScatterDimensionNumbers& dimension_numbers, GatherScatterMode mode,
                     const ScatterHints& hints) {
  ParamMap params = ScatterParams(dimension_numbers, mode, hints.indices_are_sorted, hints.unique_indices);
  params.Set("update_jaxpr", JaxprParamOf(update_jaxpr));
  return BindOp1(kScatter, {operand, scatter_indices, updates}, params);
}

}  // namespace internal

}  // namespace jx::lax
