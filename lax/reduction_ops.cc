// Reductions over a set of axes (reduce_sum/prod/max/min/and/or) and argmax/argmin: user
// API, abstract evaluation, impl rules (the kernel library's lax/kernels/reduction.h, which
// the CPU backend also runs) and the jvp, transpose and batching rules.
#include "jx/lax/reduction_ops.h"

#include <algorithm>
#include <vector>

#include "absl/strings/str_join.h"
#include "jx/lax/binary_ops.h"
#include "jx/lax/convert_ops.h"
#include "jx/lax/kernels/reduction.h"
#include "jx/lax/op_util.h"
#include "jx/lax/primitives.h"
#include "jx/lax/rule_util.h"
#include "jx/lax/shape_ops.h"
#include "jx/lax/slicing_ops.h"

namespace jx::lax {

using internal::BindOp1;

namespace {

// Negative axes count from the end; out-of-range ones are left for abstract eval to report.
std::vector<int64_t> WrapAxes(const Array& x, const std::vector<int64_t>& axes) {
  std::vector<int64_t> out = axes;
  const int64_t rank = x.ndim();
  for (int64_t& a : out) {
    if (a < 0 && a >= -rank) a += rank;
  }
  return out;
}

Array Reduce(Primitive p, const Array& x, const std::vector<int64_t>& axes) {
  return BindOp1(p, {x}, ParamMap{{"axes", WrapAxes(x, axes)}});
}

Array ArgReduce(Primitive p, const Array& x, int64_t axis, DType index_dtype) {
  const int64_t rank = x.ndim();
  if (axis < 0 && axis >= -rank) axis += rank;
  return BindOp1(p, {x}, ParamMap{{"axes", std::vector<int64_t>{axis}}, {"index_dtype", index_dtype}});
}

}  // namespace

Array reduce_sum(const Array& x, const std::vector<int64_t>& axes) { return Reduce(kReduceSum, x, axes); }
Array reduce_prod(const Array& x, const std::vector<int64_t>& axes) { return Reduce(kReduceProd, x, axes); }
Array reduce_max(const Array& x, const std::vector<int64_t>& axes) { return Reduce(kReduceMax, x, axes); }
Array reduce_min(const Array& x, const std::vector<int64_t>& axes) { return Reduce(kReduceMin, x, axes); }
Array reduce_and(const Array& x, const std::vector<int64_t>& axes) { return Reduce(kReduceAnd, x, axes); }
Array reduce_or(const Array& x, const std::vector<int64_t>& axes) { return Reduce(kReduceOr, x, axes); }
Array argmax(const Array& x, int64_t axis, DType index_dtype) { return ArgReduce(kArgmax, x, axis, index_dtype); }
Array argmin(const Array& x, int64_t axis, DType index_dtype) { return ArgReduce(kArgmin, x, axis, index_dtype); }

namespace internal {
namespace {

// ---------------------------------------------------------------------------------------
// Abstract evaluation.

std::string AxesString(const std::vector<int64_t>& axes) {
  if (axes.size() == 1) return StrCat("(", axes[0], ",)");
  return StrCat("(", absl::StrJoin(axes, ", "), ")");
}

// Checks axes against the operand: each in [0, rank), no duplicates. Returns a mask.
std::vector<bool> CheckAxes(std::string_view op, const ShapedArray& x, const std::vector<int64_t>& axes) {
  std::vector<bool> reduced(static_cast<size_t>(x.ndim()), false);
  for (int64_t a : axes) {
    if (a < 0 || a >= x.ndim()) {
      ThrowOpError<ShapeError>(op, "axis ", a, " is out of bounds for operand ", x.str(), " of rank ", x.ndim(),
                               " (axes=", AxesString(axes), ")");
    }
    if (reduced[static_cast<size_t>(a)]) {
      ThrowOpError<ValueError>(op, "duplicate axis ", a, " in axes=", AxesString(axes), " for operand ", x.str());
    }
    reduced[static_cast<size_t>(a)] = true;
  }
  return reduced;
}

void DefineReduceAval(PrimitiveRules& rules, Primitive p, DTypeClass accepted, bool keep_weak) {
  rules.abstract_eval = [p, accepted, keep_weak](InAvals in, const ParamMap& params) -> Avals {
    CheckArity(p.name(), in, 1);
    const ShapedArray& x = *in[0];
    if (!InClass(x.dtype, accepted)) {
      ThrowOpError<TypeError>(p.name(), "does not accept dtype ", dtype_name(x.dtype), " (operand ", x.str(),
                              "); expected a ", ClassName(accepted), " dtype");
    }
    const std::vector<bool> reduced = CheckAxes(p.name(), x, params.GetInts("axes"));
    Shape shape;
    for (int64_t i = 0; i < x.ndim(); ++i) {
      if (!reduced[static_cast<size_t>(i)]) shape.push_back(x.shape[static_cast<size_t>(i)]);
    }
    return {ShapedArray{std::move(shape), x.dtype, keep_weak && x.weak_type}};
  };
}

// ---------------------------------------------------------------------------------------
// Impl rules: the kernel library's reductions (lax/kernels/reduction.h), shared with the CPU
// backend so that jit and eager agree bit for bit.

void DefineReduce(Registry& r, Primitive p, kernels::ReduceOp op, DTypeClass accepted, bool keep_weak) {
  PrimitiveRules& rules = r.Define(p);
  DefineReduceAval(rules, p, accepted, keep_weak);
  rules.impl = [op](absl::Span<const Array> in, const ParamMap& params,
                    absl::Span<const ShapedArray> out_avals) -> Arrays {
    Array out = Array::Empty(out_avals[0]);
    kernels::Reduce(op, in[0].dtype(), in[0].shape(), params.GetInts("axes"), in[0].data(), out.mutable_data());
    return {out};
  };
}

template <bool kMax>
void DefineArg(Registry& r, Primitive p) {
  PrimitiveRules& rules = r.Define(p);
  rules.abstract_eval = [p](InAvals in, const ParamMap& params) -> Avals {
    CheckArity(p.name(), in, 1);
    const ShapedArray& x = *in[0];
    const std::vector<int64_t>& axes = params.GetInts("axes");
    const DType index_dtype = params.GetDType("index_dtype");
    if (axes.size() != 1) {
      ThrowOpError<ValueError>(p.name(), "expects exactly one axis, got axes=", AxesString(axes), " for operand ",
                               x.str());
    }
    if (!IsInteger(index_dtype)) {
      ThrowOpError<TypeError>(p.name(), "index_dtype must be an integer dtype, got ", dtype_name(index_dtype),
                              " (operand ", x.str(), ")");
    }
    CheckAxes(p.name(), x, axes);
    const int64_t axis = axes[0];
    if (x.shape[static_cast<size_t>(axis)] == 0) {
      ThrowOpError<ValueError>(p.name(), "requires a non-empty reduced dimension: operand ", x.str(), ", axis ",
                               axis);
    }
    Shape shape = x.shape;
    shape.erase(shape.begin() + axis);
    return {ShapedArray{std::move(shape), index_dtype, false}};
  };
  rules.impl = [](absl::Span<const Array> in, const ParamMap& params,
                  absl::Span<const ShapedArray> out_avals) -> Arrays {
    Array out = Array::Empty(out_avals[0]);
    const Array& x = in[0];
    kernels::ArgReduce(kMax, x.dtype(), x.shape(), params.GetInts("axes")[0], out.dtype(), x.data(),
                       out.mutable_data());
    return {out};
  };
}

// ---------------------------------------------------------------------------------------
// Transformation rules (jvp, transpose, batching), written with lax ops.

using Axes = std::vector<int64_t>;

// The operand dims a reduction over `axes` keeps, in order: the broadcast_dimensions that
// map its result back onto the operand.
Axes KeptDims(int64_t rank, const Axes& axes) {
  Axes kept;
  for (int64_t d = 0; d < rank; ++d) {
    if (std::find(axes.begin(), axes.end(), d) == axes.end()) kept.push_back(d);
  }
  return kept;
}

// A reduction's result broadcast back over the reduced axes of an operand of shape `shape`.
Array BroadcastBack(const Array& y, const Shape& shape, const Axes& axes) {
  return broadcast_in_dim(y, shape, KeptDims(static_cast<int64_t>(shape.size()), axes));
}

// reduce_prod's tangent by a pairwise product tree (JAX's _reduce_prod_jvp_rule): the
// reduced axes become one leading axis of n rows, halved every level by multiplying even and
// odd rows, with tangents ta * xb + xa * tb. No division, so zeros in x are exact.
Array ProdTangent(const Array& x, const Array& t, const Axes& axes) {
  Axes perm = axes;
  const Axes kept = KeptDims(x.ndim(), axes);
  perm.insert(perm.end(), kept.begin(), kept.end());
  int64_t n = 1, m = 1;
  Shape out_shape;
  for (int64_t a : axes) n *= x.shape()[static_cast<size_t>(a)];
  for (int64_t d : kept) {
    m *= x.shape()[static_cast<size_t>(d)];
    out_shape.push_back(x.shape()[static_cast<size_t>(d)]);
  }
  if (n == 0) return Array{};  // an empty product is the constant 1
  Array xs = reshape(transpose(x, perm), {n, m});
  Array ts = reshape(transpose(t, perm), {n, m});
  const Array one = Array::Scalar(1, x.dtype()), zero = Array::Scalar(0, t.dtype());
  while (n > 1) {
    if (n % 2 == 1) {  // an odd row count gets a row of ones (tangent zero)
      xs = pad(xs, one, {{0, 1, 0}, {0, 0, 0}});
      ts = pad(ts, zero, {{0, 1, 0}, {0, 0, 0}});
      ++n;
    }
    const Array xa = slice(xs, {0, 0}, {n, m}, {2, 1}), xb = slice(xs, {1, 0}, {n, m}, {2, 1});
    const Array ta = slice(ts, {0, 0}, {n, m}, {2, 1}), tb = slice(ts, {1, 0}, {n, m}, {2, 1});
    ts = add(mul(ta, xb), mul(xa, tb));
    xs = mul(xa, xb);
    n /= 2;
  }
  return reshape(ts, out_shape);
}

// reduce_max/min's tangent (JAX's _reduce_chooser_jvp_rule): the mean of the tangents at the
// locations equal to the result. An empty reduction (the identity, +-inf) has a zero tangent.
Array ChooserTangent(const Array& x, const Array& out, const Array& t, const Axes& axes) {
  for (int64_t a : axes) {
    if (x.shape()[static_cast<size_t>(a)] == 0) return Array{};
  }
  const Array at_extreme = convert_element_type(eq(x, BroadcastBack(out, x.shape(), axes)), t.dtype());
  return div(reduce_sum(mul(t, at_extreme), axes), reduce_sum(at_extreme, axes));
}

using TangentFn = Array (*)(const Array& x, const Array& out, const Array& t, const Axes& axes);

// A reduction's jvp: the primal by binding p, the tangent by `tangent` (undefined stays a
// symbolic zero; integer and bool operands only ever have those).
JvpRule ReduceJvp(Primitive p, TangentFn tangent) {
  return [p, tangent](absl::Span<const Array> primals, absl::Span<const Array> tangents, const ParamMap& params) {
    Array out = Bind1(p, primals, params);
    Array t;
    if (tangents[0].defined()) t = tangent(primals[0], out, tangents[0], params.GetInts("axes"));
    return JvpResult{{std::move(out)}, {std::move(t)}};
  };
}

// Nonlinear reductions with integer (or bool) results: the tangent is a symbolic zero.
JvpRule ZeroTangentJvp(Primitive p) {
  return [p](absl::Span<const Array> primals, absl::Span<const Array>, const ParamMap& params) {
    return JvpResult{{Bind1(p, primals, params)}, {Array{}}};
  };
}

// Every reduction batches by moving the batch dim to the front and shifting its axes by one.
BatchRule BatchReduce(Primitive p) {
  return [p](absl::Span<const Array> args, absl::Span<const int64_t> dims, int64_t n, const ParamMap& params) {
    Axes axes = params.GetInts("axes");
    for (int64_t& a : axes) ++a;
    ParamMap shifted = params;
    shifted.Set("axes", std::move(axes));
    const Array x = MoveBatchToFront(args[0], dims[0], n);
    return BatchResult{{Bind1(p, {x}, shifted)}, {0}};
  };
}

constexpr const char* kNotLinear = "not linear: reverse mode transposes the linear ops of its jvp";

void DefineReduceRules(Registry& r) {
  PrimitiveRules& sum = r.Define(kReduceSum);
  sum.jvp = ReduceJvp(kReduceSum, [](const Array&, const Array&, const Array& t, const Axes& axes) {
    return reduce_sum(t, axes);
  });
  // Linear: the cotangent is broadcast back over the reduced axes.
  sum.transpose = [](absl::Span<const Array> cts, absl::Span<const TransposeArg> args, const ParamMap& params) {
    if (!cts[0].defined()) return Arrays{Array{}};
    return Arrays{BroadcastBack(cts[0], args[0].aval.shape, params.GetInts("axes"))};
  };
  r.Define(kReduceProd).jvp =
      ReduceJvp(kReduceProd, [](const Array& x, const Array&, const Array& t, const Axes& axes) {
        return ProdTangent(x, t, axes);
      });
  r.Define(kReduceMax).jvp = ReduceJvp(kReduceMax, ChooserTangent);
  r.Define(kReduceMin).jvp = ReduceJvp(kReduceMin, ChooserTangent);
  for (Primitive p : {kReduceAnd, kReduceOr, kArgmax, kArgmin}) r.Define(p).jvp = ZeroTangentJvp(p);
  for (Primitive p : {kReduceSum, kReduceProd, kReduceMax, kReduceMin, kReduceAnd, kReduceOr, kArgmax, kArgmin}) {
    PrimitiveRules& rules = r.Define(p);
    rules.batch = BatchReduce(p);
    if (p != kReduceSum) rules.unsupported["transpose"] = kNotLinear;
  }
}

}  // namespace

void RegisterReductionOps(Registry& r) {
  using kernels::ReduceOp;
  DefineReduce(r, kReduceSum, ReduceOp::kSum, DTypeClass::kNumeric, true);
  DefineReduce(r, kReduceProd, ReduceOp::kProd, DTypeClass::kNumeric, true);
  DefineReduce(r, kReduceMax, ReduceOp::kMax, DTypeClass::kAny, true);
  DefineReduce(r, kReduceMin, ReduceOp::kMin, DTypeClass::kAny, true);
  DefineReduce(r, kReduceAnd, ReduceOp::kAnd, DTypeClass::kIntegerOrBool, false);
  DefineReduce(r, kReduceOr, ReduceOp::kOr, DTypeClass::kIntegerOrBool, false);
  DefineArg<true>(r, kArgmax);
  DefineArg<false>(r, kArgmin);
  DefineReduceRules(r);
}

}  // namespace internal
}  // namespace jx::lax
