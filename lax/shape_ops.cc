// Shape primitives: broadcast_in_dim, reshape, transpose, squeeze, expand_dims, rev, iota,
// copy. Abstract eval follows JAX's shape rules; the kernels only move bytes (dispatch on the
// element size), with contiguous runs copied by memcpy/fill and rows split over the pool.
// reshape, squeeze and expand_dims share the operand's buffer (row-major data is unchanged).
// The jvp/transpose/batching rules (all but iota are linear) close the file.
#include "jx/lax/shape_ops.h"

#include <algorithm>
#include <numeric>

#include "jx/lax/kernels/copy_kernels.h"
#include "jx/lax/kernels/shape_ops.h"
#include "jx/lax/op_util.h"
#include "jx/lax/primitives.h"
#include "jx/lax/reduction_ops.h"
#include "jx/lax/rule_util.h"

namespace jx::lax {

using internal::BindOp1;

namespace {

bool IsIdentity(const std::vector<int64_t>& perm) {
  for (size_t i = 0; i < perm.size(); ++i) {
    if (perm[i] != static_cast<int64_t>(i)) return false;
  }
  return true;
}

// Canonicalizes possibly negative axes against rank and sorts them.
std::vector<int64_t> CanonicalSortedAxes(const std::vector<int64_t>& axes, int64_t rank, std::string_view op) {
  std::vector<int64_t> out;
  out.reserve(axes.size());
  for (int64_t a : axes) out.push_back(CanonicalizeAxis(a, rank, op));
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

Array broadcast_in_dim(const Array& x, const Shape& shape, const std::vector<int64_t>& broadcast_dimensions) {
  // Like JAX, a 0-d operand broadcast to a 0-d shape is returned as is.
  if (x.ndim() == 0 && shape.empty() && broadcast_dimensions.empty()) return x;
  return BindOp1(kBroadcastInDim, {x},
                 ParamMap{{"shape", shape}, {"broadcast_dimensions", broadcast_dimensions}, {"sharding", ParamNone{}}});
}

Array broadcast(const Array& x, const Shape& sizes) {
  if (sizes.empty()) return x;
  Shape shape = sizes;
  shape.insert(shape.end(), x.shape().begin(), x.shape().end());
  std::vector<int64_t> dims(static_cast<size_t>(x.ndim()));
  std::iota(dims.begin(), dims.end(), static_cast<int64_t>(sizes.size()));
  return broadcast_in_dim(x, shape, dims);
}

Array reshape(const Array& x, const Shape& new_sizes) {
  if (x.ndim() > 0 && x.shape() == new_sizes) return x;
  return BindOp1(kReshape, {x}, ParamMap{{"new_sizes", new_sizes}, {"dimensions", ParamNone{}}, {"sharding", ParamNone{}}});
}

Array reshape(const Array& x, const Shape& new_sizes, const std::vector<int64_t>& dimensions) {
  if (IsIdentity(dimensions) && static_cast<int64_t>(dimensions.size()) == x.ndim()) return reshape(x, new_sizes);
  return BindOp1(kReshape, {x}, ParamMap{{"new_sizes", new_sizes}, {"dimensions", dimensions}, {"sharding", ParamNone{}}});
}

Array transpose(const Array& x, const std::vector<int64_t>& permutation) {
  // JAX returns the operand itself for the identity permutation.
  if (static_cast<int64_t>(permutation.size()) == x.ndim() && IsIdentity(permutation)) return x;
  return BindOp1(kTranspose, {x}, ParamMap{{"permutation", permutation}});
}

Array squeeze(const Array& x, const std::vector<int64_t>& dimensions) {
  if (dimensions.empty()) return x;
  return BindOp1(kSqueeze, {x}, ParamMap{{"dimensions", CanonicalSortedAxes(dimensions, x.ndim(), "squeeze")}});
}

Array expand_dims(const Array& x, const std::vector<int64_t>& dimensions) {
  if (dimensions.empty()) return x;
  const int64_t out_rank = x.ndim() + static_cast<int64_t>(dimensions.size());
  return BindOp1(kExpandDims, {x}, ParamMap{{"dimensions", CanonicalSortedAxes(dimensions, out_rank, "expand_dims")}});
}

Array rev(const Array& x, const std::vector<int64_t>& dimensions) {
  return BindOp1(kRev, {x}, ParamMap{{"dimensions", dimensions}});
}

Array iota(DType dtype, int64_t size) { return broadcasted_iota(dtype, Shape{size}, 0); }

Array broadcasted_iota(DType dtype, const Shape& shape, int64_t dimension) {
  return BindOp1(kIota, {},
                 ParamMap{{"dtype", dtype}, {"shape", shape}, {"dimension", dimension}, {"sharding", ParamNone{}}});
}

Array copy(const Array& x) { return BindOp1(kCopy, {x}); }

namespace internal {
namespace {

using kernels::DimVec;

std::string Tup(const std::vector<int64_t>& v) { return ShapeToString(v); }

void CheckNonNegative(std::string_view op, std::string_view what, const std::vector<int64_t>& v,
                      const ShapedArray& operand) {
  for (int64_t d : v) {
    if (d < 0) ThrowOpError<ShapeError>(op, what, " must have every element be nonnegative, got ", what, "=", Tup(v),
                                        " for operand ", operand.str());
  }
}

// Checks that dims are distinct and in [0, rank).
void CheckDims(std::string_view op, std::string_view what, const std::vector<int64_t>& dims, int64_t rank,
               const ShapedArray& operand) {
  std::vector<bool> seen(static_cast<size_t>(std::max<int64_t>(rank, 0)), false);
  for (int64_t d : dims) {
    if (d < 0 || d >= rank) {
      ThrowOpError<ShapeError>(op, what, " must all be in [0, ", rank, "), got ", what, "=", Tup(dims),
                               " for operand ", operand.str());
    }
    if (seen[static_cast<size_t>(d)]) {
      ThrowOpError<ShapeError>(op, what, " must be unique, got ", what, "=", Tup(dims), " for operand ",
                               operand.str());
    }
    seen[static_cast<size_t>(d)] = true;
  }
}

// ---- abstract evaluation ----

Avals BroadcastInDimEval(InAvals in, const ParamMap& p) {
  constexpr std::string_view op = "broadcast_in_dim";
  CheckArity(op, in, 1);
  const ShapedArray& x = *in[0];
  const Shape& shape = p.GetInts("shape");
  const std::vector<int64_t>& dims = p.GetInts("broadcast_dimensions");
  CheckNonNegative(op, "shape", shape, x);
  if (static_cast<int64_t>(dims.size()) != x.ndim()) {
    ThrowOpError<ShapeError>(op, "broadcast_dimensions must have length equal to operand ndim; got broadcast_dimensions=",
                             Tup(dims), " for operand ", x.str());
  }
  if (static_cast<int64_t>(shape.size()) < x.ndim()) {
    ThrowOpError<ShapeError>(op, "target shape must have equal or higher rank than the operand; got operand ", x.str(),
                             " and shape=", Tup(shape));
  }
  for (size_t i = 0; i < dims.size(); ++i) {
    if (dims[i] < 0 || dims[i] >= static_cast<int64_t>(shape.size())) {
      ThrowOpError<ShapeError>(op, "broadcast_dimensions must be a subset of output dimensions, got broadcast_dimensions=",
                               Tup(dims), " for operand ", x.str(), " and shape=", Tup(shape));
    }
    if (i > 0 && dims[i] <= dims[i - 1]) {
      ThrowOpError<ShapeError>(op, "broadcast_dimensions must be strictly increasing; got broadcast_dimensions=",
                               Tup(dims), " for operand ", x.str());
    }
    const int64_t od = x.shape[i], td = shape[static_cast<size_t>(dims[i])];
    if (od != 1 && od != td) {
      ThrowOpError<ShapeError>(op, "operand dimension sizes must either be 1, or be equal to their corresponding "
                               "dimensions in the target shape; got operand ", x.str(), ", shape=", Tup(shape),
                               ", broadcast_dimensions=", Tup(dims), " (operand dimension ", i, " has size ", od,
                               ", target dimension ", dims[i], " has size ", td, ")");
    }
  }
  return {ShapedArray{shape, x.dtype, x.weak_type}};
}

Avals ReshapeEval(InAvals in, const ParamMap& p) {
  constexpr std::string_view op = "reshape";
  CheckArity(op, in, 1);
  const ShapedArray& x = *in[0];
  const Shape& new_sizes = p.GetInts("new_sizes");
  CheckNonNegative(op, "new_sizes", new_sizes, x);
  if (NumElements(new_sizes) != x.size()) {
    ThrowOpError<ShapeError>(op, "total size must be unchanged, got new_sizes=", Tup(new_sizes), " (", NumElements(new_sizes),
                             " elements) for operand ", x.str(), " (", x.size(), " elements)");
  }
  const Param& dims = p.Get("dimensions");
  if (!dims.is_none()) {
    const std::vector<int64_t>& d = p.GetInts("dimensions");
    if (static_cast<int64_t>(d.size()) != x.ndim()) {
      ThrowOpError<ShapeError>(op, "dimensions must be a permutation of the operand dimensions, got dimensions=", Tup(d),
                               " for operand ", x.str());
    }
    CheckDims(op, "dimensions", d, x.ndim(), x);
  }
  return {ShapedArray{new_sizes, x.dtype, x.weak_type}};
}

Avals TransposeEval(InAvals in, const ParamMap& p) {
  constexpr std::string_view op = "transpose";
  CheckArity(op, in, 1);
  const ShapedArray& x = *in[0];
  const std::vector<int64_t>& perm = p.GetInts("permutation");
  if (static_cast<int64_t>(perm.size()) != x.ndim()) {
    ThrowOpError<ShapeError>(op, "permutation must have length equal to operand ndim; got permutation=", Tup(perm),
                             " for operand ", x.str());
  }
  for (int64_t a : perm) {
    if (a < 0 || a >= x.ndim()) {
      ThrowOpError<ShapeError>(op, "permutation must be a permutation of range(", x.ndim(), "); got permutation=",
                               Tup(perm), " for operand ", x.str());
    }
  }
  CheckDims(op, "permutation", perm, x.ndim(), x);
  Shape out(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) out[i] = x.shape[static_cast<size_t>(perm[i])];
  return {ShapedArray{out, x.dtype, x.weak_type}};
}

Avals SqueezeEval(InAvals in, const ParamMap& p) {
  constexpr std::string_view op = "squeeze";
  CheckArity(op, in, 1);
  const ShapedArray& x = *in[0];
  const std::vector<int64_t>& dims = p.GetInts("dimensions");
  CheckDims(op, "dimensions", dims, x.ndim(), x);
  std::vector<bool> drop(static_cast<size_t>(x.ndim()), false);
  for (int64_t d : dims) {
    if (x.shape[static_cast<size_t>(d)] != 1) {
      ThrowOpError<ShapeError>(op, "cannot select an axis to squeeze out which has size not equal to one, got operand ",
                               x.str(), " and dimensions=", Tup(dims));
    }
    drop[static_cast<size_t>(d)] = true;
  }
  Shape out;
  for (int64_t i = 0; i < x.ndim(); ++i) {
    if (!drop[static_cast<size_t>(i)]) out.push_back(x.shape[static_cast<size_t>(i)]);
  }
  return {ShapedArray{out, x.dtype, x.weak_type}};
}

Avals ExpandDimsEval(InAvals in, const ParamMap& p) {
  constexpr std::string_view op = "expand_dims";
  CheckArity(op, in, 1);
  const ShapedArray& x = *in[0];
  const std::vector<int64_t>& dims = p.GetInts("dimensions");
  const int64_t out_rank = x.ndim() + static_cast<int64_t>(dims.size());
  CheckDims(op, "dimensions", dims, out_rank, x);
  std::vector<bool> inserted(static_cast<size_t>(out_rank), false);
  for (int64_t d : dims) inserted[static_cast<size_t>(d)] = true;
  Shape out;
  size_t k = 0;
  for (int64_t i = 0; i < out_rank; ++i) out.push_back(inserted[static_cast<size_t>(i)] ? 1 : x.shape[k++]);
  return {ShapedArray{out, x.dtype, x.weak_type}};
}

Avals RevEval(InAvals in, const ParamMap& p) {
  constexpr std::string_view op = "rev";
  CheckArity(op, in, 1);
  CheckDims(op, "dimensions", p.GetInts("dimensions"), in[0]->ndim(), *in[0]);
  return {*in[0]};
}

Avals IotaEval(InAvals in, const ParamMap& p) {
  constexpr std::string_view op = "iota";
  CheckArity(op, in, 0);
  const DType dtype = p.GetDType("dtype");
  const Shape& shape = p.GetInts("shape");
  const int64_t dimension = p.GetInt("dimension");
  if (IsBool(dtype)) ThrowOpError<TypeError>(op, "does not accept dtype bool; expected a numeric dtype");
  for (int64_t d : shape) {
    if (d < 0) ThrowOpError<ShapeError>(op, "shape must have every element be nonnegative, got shape=", Tup(shape));
  }
  if (dimension < 0 || dimension >= static_cast<int64_t>(shape.size())) {
    ThrowOpError<ShapeError>(op, "dimension must be between 0 and len(shape), got dimension=", dimension,
                             " for shape=", Tup(shape), " (", dtype_name(dtype), ")");
  }
  return {ShapedArray{shape, dtype, false}};
}

Avals CopyEval(InAvals in, const ParamMap&) {
  CheckArity("copy", in, 1);
  return {*in[0]};
}

// ---- kernels ----

// An array sharing x's buffer under a new aval of the same size (row-major data unchanged).
Array ShareBuffer(const Array& x, const ShapedArray& aval) {
  return Array(std::make_shared<ConcreteArray>(aval, x.buffer()));
}

Arrays BroadcastInDimImpl(absl::Span<const Array> in, const ParamMap& p, absl::Span<const ShapedArray> out_avals) {
  Array out = Array::Empty(out_avals[0]);
  kernels::BroadcastInDim(in[0].data(), in[0].shape(), out.shape(), p.GetInts("broadcast_dimensions"),
                          ItemSize(in[0].dtype()), out.mutable_data());
  return {out};
}

Arrays ReshapeImpl(absl::Span<const Array> in, const ParamMap& p, absl::Span<const ShapedArray> out_avals) {
  if (p.Get("dimensions").is_none()) return {ShareBuffer(in[0], out_avals[0])};
  const std::vector<int64_t>& dims = p.GetInts("dimensions");
  Array out = Array::Empty(out_avals[0]);
  kernels::Transpose(in[0].data(), in[0].shape(), dims, ItemSize(in[0].dtype()), out.mutable_data());
  return {out};
}

Arrays TransposeImpl(absl::Span<const Array> in, const ParamMap& p, absl::Span<const ShapedArray> out_avals) {
  Array out = Array::Empty(out_avals[0]);
  kernels::Transpose(in[0].data(), in[0].shape(), p.GetInts("permutation"), ItemSize(in[0].dtype()),
                     out.mutable_data());
  return {out};
}

Arrays ShareImpl(absl::Span<const Array> in, const ParamMap&, absl::Span<const ShapedArray> out_avals) {
  return {ShareBuffer(in[0], out_avals[0])};
}

Arrays RevImpl(absl::Span<const Array> in, const ParamMap& p, absl::Span<const ShapedArray> out_avals) {
  Array out = Array::Empty(out_avals[0]);
  kernels::Rev(in[0].data(), in[0].shape(), p.GetInts("dimensions"), ItemSize(in[0].dtype()), out.mutable_data());
  return {out};
}

Arrays IotaImpl(absl::Span<const Array>, const ParamMap& p, absl::Span<const ShapedArray> out_avals) {
  Array out = Array::Empty(out_avals[0]);
  kernels::Iota(out.dtype(), out_avals[0].shape, p.GetInt("dimension"), out.mutable_data());
  return {out};
}

Arrays CopyImpl(absl::Span<const Array> in, const ParamMap&, absl::Span<const ShapedArray> out_avals) {
  Array out = Array::Empty(out_avals[0]);
  kernels::ParallelMemcpy(out.mutable_data(), in[0].data(), in[0].nbytes());
  return {out};
}

void Define(Registry& r, Primitive p, AbstractEvalRule eval, ImplRule impl) {
  PrimitiveRules& rules = r.Define(p);
  rules.abstract_eval = std::move(eval);
  rules.impl = std::move(impl);
}

// ---- jvp, transpose and batching rules ----
// Every shape op but iota is linear in its operand: the jvp applies the op to the tangent,
// the transpose applies the inverse movement (summing over broadcast axes), and batching
// folds the batch dimension into the op's own dimensions.

// The jvp of an op linear in its single operand.
JvpRule LinearUnaryJvp(Primitive p) {
  return [p](absl::Span<const Array> primals, absl::Span<const Array> tangents, const ParamMap& params) {
    Array out = Bind1(p, primals, params);
    Array t = tangents[0].defined() ? Bind1(p, {tangents[0]}, params) : Array();
    return JvpResult{{std::move(out)}, {std::move(t)}};
  };
}

// A transpose rule for an op linear in its single operand, from ct -> operand cotangent.
TransposeRule LinearUnaryTranspose(std::function<Array(const Array&, const ShapedArray&, const ParamMap&)> f) {
  return [f = std::move(f)](absl::Span<const Array> cts, absl::Span<const TransposeArg> args, const ParamMap& params) {
    if (!cts[0].defined() || !args[0].is_linear()) return Arrays{Array()};
    return Arrays{f(cts[0], args[0].aval, params)};
  };
}

std::vector<int64_t> ShiftedBy1(const std::vector<int64_t>& dims) {
  std::vector<int64_t> out;
  out.reserve(dims.size());
  for (int64_t d : dims) out.push_back(d + 1);
  return out;
}

// A batch rule for a one-operand op whose batch dimension is moved to the front: `params`
// get rewritten by `shift` for the extra leading axis of size n.
BatchRule FrontBatch(Primitive p, std::function<ParamMap(const ParamMap&, int64_t n)> shift) {
  return [p, shift = std::move(shift)](absl::Span<const Array> args, absl::Span<const int64_t> dims, int64_t n,
                                       const ParamMap& params) {
    Array x = MoveBatchToFront(args[0], dims[0], n);
    return BatchResult{{Bind1(p, {x}, shift(params, n))}, {0}};
  };
}

ParamMap WithInts(ParamMap params, std::string_view name, std::vector<int64_t> v) {
  params.Set(name, std::move(v));
  return params;
}

Array BroadcastInDimTranspose(const Array& ct, const ShapedArray& operand, const ParamMap& p) {
  const std::vector<int64_t>& bdims = p.GetInts("broadcast_dimensions");
  // Sum over the new axes and over the operand's size-1 axes (broadcast or not), then put
  // the size-1 axes back.
  std::vector<bool> kept(static_cast<size_t>(ct.ndim()), false);
  std::vector<int64_t> unit_dims;
  for (size_t i = 0; i < bdims.size(); ++i) {
    if (operand.shape[i] == 1) {
      unit_dims.push_back(static_cast<int64_t>(i));
    } else {
      kept[static_cast<size_t>(bdims[i])] = true;
    }
  }
  std::vector<int64_t> axes;
  for (int64_t d = 0; d < ct.ndim(); ++d) {
    if (!kept[static_cast<size_t>(d)]) axes.push_back(d);
  }
  Array summed = axes.empty() ? ct : reduce_sum(ct, axes);
  return expand_dims(summed, unit_dims);
}

Array ReshapeTranspose(const Array& ct, const ShapedArray& operand, const ParamMap& p) {
  if (p.Get("dimensions").is_none()) return reshape(ct, operand.shape);
  // The forward op transposed by `dimensions` first: undo the reshape, then the transpose.
  const std::vector<int64_t>& dims = p.GetInts("dimensions");
  Shape permuted;
  for (int64_t d : dims) permuted.push_back(operand.shape[static_cast<size_t>(d)]);
  return transpose(reshape(ct, permuted), InversePermutation(dims));
}

BatchResult BroadcastInDimBatch(absl::Span<const Array> args, absl::Span<const int64_t> dims, int64_t n,
                                const ParamMap& p) {
  Array x = MoveAxis(args[0], dims[0], 0);
  Shape shape = p.GetInts("shape");
  shape.insert(shape.begin(), n);
  std::vector<int64_t> bdims = ShiftedBy1(p.GetInts("broadcast_dimensions"));
  bdims.insert(bdims.begin(), 0);
  ParamMap q = WithInts(WithInts(p, "shape", shape), "broadcast_dimensions", bdims);
  return BatchResult{{Bind1(kBroadcastInDim, {x}, q)}, {0}};
}

BatchResult ReshapeBatch(absl::Span<const Array> args, absl::Span<const int64_t> dims, int64_t n, const ParamMap& p) {
  Array x = MoveAxis(args[0], dims[0], 0);
  if (!p.Get("dimensions").is_none()) {
    std::vector<int64_t> perm = ShiftedBy1(p.GetInts("dimensions"));
    perm.insert(perm.begin(), 0);
    x = transpose(x, perm);
  }
  Shape sizes = p.GetInts("new_sizes");
  sizes.insert(sizes.begin(), n);
  ParamMap q = WithInts(p, "new_sizes", sizes);
  q.Set("dimensions", ParamNone{});
  return BatchResult{{Bind1(kReshape, {x}, q)}, {0}};
}

// The batch axis stays where it is; the permutation keeps it in front of the output.
BatchResult TransposeBatch(absl::Span<const Array> args, absl::Span<const int64_t> dims, int64_t, const ParamMap& p) {
  const int64_t b = dims[0];
  std::vector<int64_t> perm = {b};
  for (int64_t a : p.GetInts("permutation")) perm.push_back(a < b ? a : a + 1);
  return BatchResult{{Bind1(kTranspose, {args[0]}, ParamMap{{"permutation", perm}})}, {0}};
}

// rev and copy act per element position: the batch axis stays in place.
BatchResult RevBatch(absl::Span<const Array> args, absl::Span<const int64_t> dims, int64_t, const ParamMap& p) {
  const int64_t b = dims[0];
  std::vector<int64_t> rdims;
  for (int64_t d : p.GetInts("dimensions")) rdims.push_back(d < b ? d : d + 1);
  return BatchResult{{Bind1(kRev, {args[0]}, ParamMap{{"dimensions", rdims}})}, {b}};
}

void AddShapeRules(Registry& r) {
  const auto shift_dims = [](const ParamMap& p, int64_t) { return WithInts(p, "dimensions", ShiftedBy1(p.GetInts("dimensions"))); };

  PrimitiveRules& bid = r.Define(kBroadcastInDim);
  bid.jvp = LinearUnaryJvp(kBroadcastInDim);
  bid.transpose = LinearUnaryTranspose(BroadcastInDimTranspose);
  bid.batch = BroadcastInDimBatch;

  PrimitiveRules& rs = r.Define(kReshape);
  rs.jvp = LinearUnaryJvp(kReshape);
  rs.transpose = LinearUnaryTranspose(ReshapeTranspose);
  rs.batch = ReshapeBatch;

  PrimitiveRules& tr = r.Define(kTranspose);
  tr.jvp = LinearUnaryJvp(kTranspose);
  tr.transpose = LinearUnaryTranspose([](const Array& ct, const ShapedArray&, const ParamMap& p) {
    return transpose(ct, InversePermutation(p.GetInts("permutation")));
  });
  tr.batch = TransposeBatch;

  PrimitiveRules& sq = r.Define(kSqueeze);
  sq.jvp = LinearUnaryJvp(kSqueeze);
  sq.transpose = LinearUnaryTranspose([](const Array& ct, const ShapedArray&, const ParamMap& p) {
    return expand_dims(ct, p.GetInts("dimensions"));
  });
  sq.batch = FrontBatch(kSqueeze, shift_dims);

  PrimitiveRules& ed = r.Define(kExpandDims);
  ed.jvp = LinearUnaryJvp(kExpandDims);
  ed.transpose = LinearUnaryTranspose([](const Array& ct, const ShapedArray&, const ParamMap& p) {
    return squeeze(ct, p.GetInts("dimensions"));
  });
  ed.batch = FrontBatch(kExpandDims, shift_dims);

  PrimitiveRules& rv = r.Define(kRev);
  rv.jvp = LinearUnaryJvp(kRev);
  rv.transpose = LinearUnaryTranspose([](const Array& ct, const ShapedArray&, const ParamMap& p) {
    return Bind1(kRev, {ct}, p);
  });
  rv.batch = RevBatch;

  PrimitiveRules& cp = r.Define(kCopy);
  cp.jvp = LinearUnaryJvp(kCopy);
  cp.transpose = LinearUnaryTranspose([](const Array& ct, const ShapedArray&, const ParamMap&) { return copy(ct); });
  cp.batch = [](absl::Span<const Array> args, absl::Span<const int64_t> dims, int64_t, const ParamMap&) {
    return BatchResult{{copy(args[0])}, {dims[0]}};
  };

  // iota has no operands: it is never batched (vmap binds it as is), and its output is an
  // integer or a constant, so it has no tangent.
  PrimitiveRules& io = r.Define(kIota);
  io.jvp = [](absl::Span<const Array> primals, absl::Span<const Array>, const ParamMap& p) {
    return JvpResult{{Bind1(kIota, primals, p)}, {Array()}};
  };
  io.unsupported["transpose"] = "iota has no operands, so nothing to be linear in";
  io.batch = [](absl::Span<const Array> args, absl::Span<const int64_t>, int64_t, const ParamMap& p) {
    return BatchResult{{Bind1(kIota, args, p)}, {kNotMapped}};
  };
}

}  // namespace

void RegisterShapeOps(Registry& r) {
  Define(r, kBroadcastInDim, BroadcastInDimEval, BroadcastInDimImpl);
  Define(r, kReshape, ReshapeEval, ReshapeImpl);
  Define(r, kTranspose, TransposeEval, TransposeImpl);
  Define(r, kSqueeze, SqueezeEval, ShareImpl);
  Define(r, kExpandDims, ExpandDimsEval, ShareImpl);
  Define(r, kRev, RevEval, RevImpl);
  Define(r, kIota, IotaEval, IotaImpl);
  Define(r, kCopy, CopyEval, CopyImpl);
  AddShapeRules(r);
}

}  // namespace internal
}  // namespace jx::lax
