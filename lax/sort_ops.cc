// Sorting: multi-operand lexicographic sort along one dimension, and top_k, in JAX's total
// order (-NaN < -inf < ... < -0.0 < +0.0 < ... < inf < NaN). The numerics are the kernel
// library's (lax/kernels/sort.h), which the CPU backend's sort kernel runs too.
#include "jx/lax/sort_ops.h"

#include <algorithm>
#include <cstring>
#include <numeric>
#include <vector>

#include "jx/lax/convert_ops.h"
#include "jx/lax/kernels/dispatch.h"
#include "jx/lax/kernels/sort.h"
#include "jx/lax/op_util.h"
#include "jx/lax/primitives.h"
#include "jx/lax/rule_util.h"
#include "jx/lax/shape_ops.h"
#include "jx/lax/slicing_ops.h"

namespace jx::lax {

std::vector<Array> sort(const std::vector<Array>& operands, int64_t dimension, bool is_stable, int64_t num_keys) {
  if (!operands.empty()) {
    const int64_t rank = operands[0].ndim();
    if (dimension < 0 && dimension >= -rank) dimension += rank;
  }
  Arrays out = internal::BindOp(kSort, absl::MakeConstSpan(operands),
                                ParamMap{{"dimension", dimension}, {"is_stable", is_stable}, {"num_keys", num_keys}});
  return std::vector<Array>(out.begin(), out.end());
}

Array sort(const Array& x, int64_t dimension, bool is_stable) { return sort(std::vector<Array>{x}, dimension, is_stable, 1)[0]; }

std::pair<Array, Array> top_k(const Array& x, int64_t k) {
  const Array in[] = {x};
  Arrays out = internal::BindOp(kTopK, in, ParamMap{{"k", k}});
  return {out[0], out[1]};
}

namespace internal {
namespace {

void DefineSort(Registry& r) {
  PrimitiveRules& rules = r.Define(kSort);
  rules.abstract_eval = [](InAvals in, const ParamMap& params) -> Avals {
    const std::string_view op = kSort.name();
    if (in.empty()) ThrowOpError<TypeError>(op, "expects at least one operand, got none");
    CheckSameShapes(op, in);
    const ShapedArray& x = *in[0];
    const int64_t dimension = params.GetInt("dimension");
    const int64_t num_keys = params.GetInt("num_keys");
    params.GetBool("is_stable");
    if (dimension < 0 || dimension >= x.ndim()) {
      ThrowOpError<ShapeError>(op, "dimension ", dimension, " is out of bounds for operands ", AvalsToString(in),
                               " of rank ", x.ndim());
    }
    if (num_keys < 1 || num_keys > static_cast<int64_t>(in.size())) {
      ThrowOpError<ValueError>(op, "num_keys=", num_keys, " must be between 1 and the number of operands (",
                               in.size(), ": ", AvalsToString(in), ")");
    }
    Avals out;
    for (const ShapedArray* a : in) out.push_back(*a);
    return out;
  };
  rules.impl = [](absl::Span<const Array> in, const ParamMap& params,
                  absl::Span<const ShapedArray> out_avals) -> Arrays {
    Arrays out;
    for (const ShapedArray& a : out_avals) out.push_back(Array::Empty(a));
    if (in[0].size() == 0) return out;
    std::vector<kernels::SortOperand> ops;
    for (size_t k = 0; k < in.size(); ++k) ops.push_back({in[k].dtype(), in[k].data(), out[k].mutable_data()});
    kernels::Sort(ops, in[0].shape(), params.GetInt("dimension"), params.GetInt("num_keys"), /*descending=*/false);
    return out;
  };
}

void DefineTopK(Registry& r) {
  PrimitiveRules& rules = r.Define(kTopK);
  rules.abstract_eval = [](InAvals in, const ParamMap& params) -> Avals {
    const std::string_view op = kTopK.name();
    CheckArity(op, in, 1);
    const ShapedArray& x = *in[0];
    const int64_t k = params.GetInt("k");
    if (x.ndim() == 0) ThrowOpError<ShapeError>(op, "operand must have at least one dimension, got ", x.str());
    if (k < 0) ThrowOpError<ValueError>(op, "k must be non-negative, got k=", k, " for operand ", x.str());
    if (k > x.shape.back()) {
      ThrowOpError<ValueError>(op, "k=", k, " is larger than the last dimension of operand ", x.str(), " (",
                               x.shape.back(), ")");
    }
    Shape shape = x.shape;
    shape.back() = k;
    return {ShapedArray{shape, x.dtype, x.weak_type}, ShapedArray{shape, int32, false}};
  };
  rules.impl = [](absl::Span<const Array> in, const ParamMap& params,
                  absl::Span<const ShapedArray> out_avals) -> Arrays {
    Array values = Array::Empty(out_avals[0]);
    Array indices = Array::Empty(out_avals[1]);
    if (values.size() == 0) return {values, indices};
    const int64_t n = in[0].shape().back();
    const int64_t k = params.GetInt("k");
    kernels::TopK(in[0].dtype(), in[0].data(), values.mutable_data(), kernels::MutableData<int32_t>(indices),
                  in[0].size() / n, n, k, /*out_row_stride=*/k);
    return {values, indices};
  };
}

// ---------------------------------------------------------------------------------------
// Transformation rules (jvp, batching). Neither op is linear; their tangents are gathers.

// out[..., j, ...] = x[..., idx[..., j, ...], ...] along axis (take_along_axis): one gather
// whose index vectors pair idx with iotas over the other dims, as JAX's sort and top_k jvps.
Array TakeAlongAxis(const Array& x, const Array& idx, int64_t axis) {
  // Nothing to gather (and no valid 1-element slice of an empty operand): a zero tangent.
  if (idx.size() == 0 || x.size() == 0) return Array{};
  const int64_t rank = idx.ndim();
  Shape column = idx.shape();
  column.push_back(1);
  std::vector<Array> coords;
  std::vector<int64_t> all_dims, ones(static_cast<size_t>(rank), 1);
  for (int64_t d = 0; d < rank; ++d) {
    const Array coord = d == axis ? convert_element_type(idx, int32) : broadcasted_iota(int32, idx.shape(), d);
    coords.push_back(reshape(coord, column));
    all_dims.push_back(d);
  }
  const GatherDimensionNumbers dnums{/*offset_dims=*/{}, /*collapsed_slice_dims=*/all_dims,
                                     /*start_index_map=*/all_dims};
  return gather(x, concatenate(coords, rank), dnums, ones, GatherScatterMode::kPromiseInBounds);
}

// sort's jvp (JAX's _sort_jvp): an iota sorted alongside the operands is the permutation,
// which gathers every defined tangent.
JvpResult SortJvp(absl::Span<const Array> primals, absl::Span<const Array> tangents, const ParamMap& params) {
  const bool any_tangent = std::any_of(tangents.begin(), tangents.end(), [](const Array& t) { return t.defined(); });
  // Empty operands have empty (symbolic zero) tangents, and no index to gather with.
  if (!any_tangent || primals[0].size() == 0) return JvpResult{Bind(kSort, primals, params), Arrays(primals.size())};
  const int64_t dimension = params.GetInt("dimension");
  Arrays operands(primals.begin(), primals.end());
  operands.push_back(broadcasted_iota(int32, primals[0].shape(), dimension));
  Arrays sorted = Bind(kSort, operands, params);
  const Array perm = sorted.back();
  sorted.pop_back();
  Arrays tangents_out;
  for (const Array& t : tangents) tangents_out.push_back(t.defined() ? TakeAlongAxis(t, perm, dimension) : Array{});
  return JvpResult{std::move(sorted), std::move(tangents_out)};
}

// top_k's jvp (JAX's _top_k_jvp): the tangents at the returned indices; indices get none.
JvpResult TopKJvp(absl::Span<const Array> primals, absl::Span<const Array> tangents, const ParamMap& params) {
  Arrays out = Bind(kTopK, primals, params);
  Array t;
  if (tangents[0].defined() && out[0].size() > 0) t = TakeAlongAxis(tangents[0], out[1], out[1].ndim() - 1);
  return JvpResult{std::move(out), {std::move(t), Array{}}};
}

// sort batches with every operand's batch dim at the front (unbatched ones broadcast) and
// the sorted dimension shifted by one.
BatchResult BatchSort(absl::Span<const Array> args, absl::Span<const int64_t> dims, int64_t n,
                      const ParamMap& params) {
  Arrays moved;
  for (size_t i = 0; i < args.size(); ++i) moved.push_back(MoveBatchToFront(args[i], dims[i], n));
  ParamMap shifted = params;
  shifted.Set("dimension", params.GetInt("dimension") + 1);
  Arrays out = Bind(kSort, moved, shifted);
  return BatchResult{std::move(out), std::vector<int64_t>(args.size(), 0)};
}

// top_k works on the last axis, which stays last once the batch dim is at the front.
BatchResult BatchTopK(absl::Span<const Array> args, absl::Span<const int64_t> dims, int64_t n,
                      const ParamMap& params) {
  return BatchResult{Bind(kTopK, {MoveBatchToFront(args[0], dims[0], n)}, params), {0, 0}};
}

void DefineSortRules(Registry& r) {
  constexpr const char* kNotLinear = "not linear: reverse mode transposes the linear ops of its jvp";
  PrimitiveRules& sort_rules = r.Define(kSort);
  sort_rules.jvp = SortJvp;
  sort_rules.batch = BatchSort;
  sort_rules.unsupported["transpose"] = kNotLinear;
  PrimitiveRules& top_k_rules = r.Define(kTopK);
  top_k_rules.jvp = TopKJvp;
  top_k_rules.batch = BatchTopK;
  top_k_rules.unsupported["transpose"] = kNotLinear;
}

}  // namespace

void RegisterSortOps(Registry& r) {
  DefineSort(r);
  DefineTopK(r);
  DefineSortRules(r);
}

}  // namespace internal
}  // namespace jx::lax
