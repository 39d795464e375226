// lax::reduce and lax::reduce_window with a C++ reducer: a recognized monoid binds its
// primitive (JAX's _get_monoid_reducer / _get_monoid_window_reducer); any other reducer is
// evaluated as a tree of vmapped calls (see reduce_generic.h).
#include "jx/lax/reduce_generic.h"

#include "jx/lax/reduce_generic_internal.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>

#include "jx/lax/convert_ops.h"
#include "jx/lax/primitives.h"
#include "jx/lax/reduction_ops.h"
#include "jx/lax/shape_ops.h"
#include "jx/lax/slicing_ops.h"
#include "jx/core/registry.h"
#include "jx/transforms/ad_util.h"
#include "jx/transforms/jaxpr_util.h"
#include "jx/transforms/jvp.h"
#include "jx/transforms/staging.h"
#include "jx/transforms/vmap.h"

namespace jx::lax {
namespace {

// The primitive of a computation that is exactly prim(a, b) (either order) on one operand.
std::optional<Primitive> MonoidOf(const ReducerFn& computation, DType dtype) {
  const ShapedArray scalar{Shape{}, dtype, false};
  const Hoisted traced = TraceHoisted([&](absl::Span<const Array> ab) { return computation(ab.subspan(0, 1), ab.subspan(1)); },
                                      std::vector<ShapedArray>{scalar, scalar}, "reduce computation");
  const Jaxpr& j = *traced.jaxpr.jaxpr;
  if (!traced.consts.empty() || j.eqns.size() != 1 || j.outvars.size() != 1) return std::nullopt;
  const Eqn& e = j.eqns[0];
  const Primitive p = e.primitive;
  if (!(p == kAdd || p == kMul || p == kMax || p == kMin || p == kAnd || p == kOr)) return std::nullopt;
  const Var* a = e.inputs.size() == 2 ? std::get_if<Var>(&e.inputs[0]) : nullptr;
  const Var* b = e.inputs.size() == 2 ? std::get_if<Var>(&e.inputs[1]) : nullptr;
  const Var* out = std::get_if<Var>(&j.outvars[0]);
  if (a == nullptr || b == nullptr || out == nullptr || !(*out == e.outputs[0])) return std::nullopt;
  const Var x = j.invars[0], y = j.invars[1];
  if (!((*a == x && *b == y) || (*a == y && *b == x))) return std::nullopt;
  if (j.aval(*out).dtype != dtype) return std::nullopt;
  return p;
}

// Whether the concrete scalar init is p's identity in dtype (JAX's _get_*_identity).
bool IsIdentity(Primitive p, const Array& init) {
  const DType d = init.dtype();
  const int bits = static_cast<int>(ItemSize(d)) * 8;
  if (IsBool(d)) {
    const bool v = init.item<bool>();
    return (p == kAdd || p == kMax || p == kOr) ? !v : (p == kMul || p == kMin || p == kAnd) && v;
  }
  if (IsFloating(d)) {
    const double v = init.item<double>(), inf = std::numeric_limits<double>::infinity();
    if (p == kAdd) return v == 0;
    if (p == kMul) return v == 1;
    if (p == kMax) return v == -inf;
    if (p == kMin) return v == inf;
    return false;  // and/or take no floats
  }
  if (IsUnsignedInt(d)) {
    const uint64_t v = init.item<uint64_t>();
    const uint64_t all = bits == 64 ? std::numeric_limits<uint64_t>::max() : (uint64_t{1} << bits) - 1;
    if (p == kAdd || p == kMax || p == kOr) return v == 0;
    if (p == kMul) return v == 1;
    return v == all;  // min, and
  }
  const int64_t v = init.item<int64_t>();
  const int64_t lowest = bits == 64 ? std::numeric_limits<int64_t>::min() : -(int64_t{1} << (bits - 1));
  const int64_t highest = bits == 64 ? std::numeric_limits<int64_t>::max() : (int64_t{1} << (bits - 1)) - 1;
  if (p == kAdd || p == kOr) return v == 0;
  if (p == kMul) return v == 1;
  if (p == kMax) return v == lowest;
  if (p == kMin) return v == highest;
  return v == -1;  // and: all bits set
}

// Init values as scalars of their operands' dtypes (a weakly typed init takes the operand's).
Arrays CheckInits(std::string_view op, absl::Span<const Array> operands, absl::Span<const Array> init_values) {
  if (operands.empty()) ThrowOpError<ValueError>(op, "needs at least one operand");
  if (init_values.size() != operands.size()) {
    ThrowOpError<TypeError>(op, "got ", operands.size(), " operands but ", init_values.size(), " init values");
  }
  Arrays inits;
  for (size_t i = 0; i < operands.size(); ++i) {
    const Array& init = init_values[i];
    if (init.ndim() != 0) ThrowOpError<TypeError>(op, "init value ", i, " must be a scalar, got ", init.aval().str());
    if (operands[i].shape() != operands[0].shape()) {
      ThrowOpError<ShapeError>(op, "operands must have one shape, got ", operands[0].aval().str(), " and ",
                               operands[i].aval().str());
    }
    if (init.dtype() != operands[i].dtype() && !init.weak_type()) {
      ThrowOpError<TypeError>(op, "operand dtypes should match corresponding initial value dtypes, got operand ",
                              operands[i].aval().str(), " and init value ", init.aval().str());
    }
    inits.push_back(init.dtype() == operands[i].dtype() ? init : convert_element_type(init, operands[i].dtype()));
  }
  return inits;
}

// The monoid primitive of a one-operand reduction with a concrete identity init, if any.
std::optional<Primitive> Monoid(const ReducerFn& computation, absl::Span<const Array> operands,
                                absl::Span<const Array> inits) {
  if (operands.size() != 1 || !inits[0].is_concrete()) return std::nullopt;
  const std::optional<Primitive> p = MonoidOf(computation, operands[0].dtype());
  if (!p || !IsIdentity(*p, inits[0])) return std::nullopt;
  return p;
}

// computation applied elementwise to equal-length 1-d arrays a and b (or scalars a,
// broadcast, when a_mapped is false), checked to keep the operand dtypes.
Arrays Combine(std::string_view op, const ReducerFn& computation, absl::Span<const Array> a, bool a_mapped,
               absl::Span<const Array> b, int64_t size) {
  const size_t n = b.size();
  std::vector<int64_t> axes(2 * n, 0);
  if (!a_mapped) std::fill(axes.begin(), axes.begin() + static_cast<ptrdiff_t>(n), kNotMapped);
  Arrays out = VmapCall([&](absl::Span<const Array> ab) { return computation(ab.subspan(0, n), ab.subspan(n)); },
                        Cat({a, b}), axes, {0}, size);
  if (out.size() != n) ThrowOpError<TypeError>(op, "computation returned ", out.size(), " values for ", n, " operands");
  for (size_t i = 0; i < n; ++i) {
    if (out[i].dtype() != b[i].dtype() || out[i].ndim() != 1) {
      ThrowOpError<TypeError>(op, "computation must return scalars of the operand dtypes; for operand ", i, " (",
                              dtype_name(b[i].dtype()), ") it returned ", out[i].aval().str(), " per element");
    }
  }
  return out;
}

Arrays Flat(absl::Span<const Array> xs) {
  Arrays out;
  for (const Array& x : xs) out.push_back(reshape(x, {x.size()}));
  return out;
}

Arrays Broadcast(absl::Span<const Array> inits, const Shape& shape) {
  Arrays out;
  for (const Array& init : inits) out.push_back(broadcast(init, shape));
  return out;
}

// x[:, start:stop] of a 2-d array.
Array Columns(const Array& x, int64_t start, int64_t stop) { return slice(x, {0, start}, {x.shape()[0], stop}); }

// The reduction evaluated as a tree: the columns of the [kept, reduced] operands are halved
// log2(n) times, each round one vmapped call of computation (JAX's _reduce_tree, which its
// reduce jvp differentiates). dimensions are canonical and distinct.
Arrays TreeReduce(const ReducerFn& computation, absl::Span<const Array> operands, absl::Span<const Array> inits,
                  const std::vector<int64_t>& dimensions) {
  const int64_t rank = operands[0].ndim();
  std::vector<bool> reduced(static_cast<size_t>(rank), false);
  for (int64_t d : dimensions) reduced[static_cast<size_t>(d)] = true;
  std::vector<int64_t> axes, perm;
  Shape kept;
  int64_t m = 1, n = 1;
  for (int64_t d = 0; d < rank; ++d) {
    if (reduced[static_cast<size_t>(d)]) {
      axes.push_back(d);
      n *= operands[0].shape()[d];
    } else {
      perm.push_back(d);
      kept.push_back(operands[0].shape()[d]);
      m *= operands[0].shape()[d];
    }
  }
  if (m == 0 || n == 0) {
    // The init values, as the primitive's outputs: never weak (a C++ scalar init is).
    Arrays strong;
    for (const Array& init : inits) strong.push_back(init.weak_type() ? convert_element_type(init, init.dtype()) : init);
    return Broadcast(strong, kept);
  }
  perm.insert(perm.end(), axes.begin(), axes.end());
  Arrays cols;  // [m, n]: kept elements by reduced elements
  for (const Array& x : operands) cols.push_back(reshape(transpose(x, perm), {m, n}));
  // Halve the columns, the first half combined with the second; an odd last column is
  // combined into acc (which starts as the init values).
  Arrays acc(inits.begin(), inits.end());
  bool acc_mapped = false;
  while (n > 1) {
    const int64_t h = n / 2;
    if (n % 2 == 1) {
      Arrays last;
      for (const Array& c : cols) last.push_back(reshape(Columns(c, n - 1, n), {m}));
      acc = Combine("reduce", computation, acc, acc_mapped, last, m);
      acc_mapped = true;
    }
    Arrays first, second;
    for (const Array& c : cols) {
      first.push_back(reshape(Columns(c, 0, h), {m * h}));
      second.push_back(reshape(Columns(c, h, 2 * h), {m * h}));
    }
    Arrays combined = Combine("reduce", computation, first, true, second, m * h);
    for (size_t i = 0; i < cols.size(); ++i) cols[i] = reshape(combined[i], {m, h});
    n = h;
  }
  Arrays out = Combine("reduce", computation, acc, acc_mapped, Flat(cols), m);
  for (Array& o : out) o = reshape(o, kept);
  return out;
}

// The reducer (a..., b...) -> c... over scalars of the operands' dtypes, as a closed jaxpr
// (JAX's _variadic_reduction_jaxpr). It may close over concrete arrays, not over tracers.
ClosedJaxpr ReducerJaxpr(const ReducerFn& computation, absl::Span<const Array> operands) {
  const size_t n = operands.size();
  std::vector<ShapedArray> avals;
  for (int k = 0; k < 2; ++k) {
    for (const Array& x : operands) avals.push_back(ShapedArray{Shape{}, x.dtype(), false});
  }
  ClosedJaxpr j = TraceToJaxpr([&](absl::Span<const Array> ab) { return computation(ab.subspan(0, n), ab.subspan(n)); },
                               avals, "reduce computation");
  for (const Array& c : j.consts) {
    if (!c.is_concrete()) {
      ThrowOpError<TypeError>("reduce", "the computation closes over a traced value (", c.aval().str(),
                              "); pass it as an operand instead");
    }
  }
  const std::vector<ShapedArray> outs = j.jaxpr->out_avals();
  if (outs.size() != n) ThrowOpError<TypeError>("reduce", "computation returned ", outs.size(), " values for ", n, " operands");
  for (size_t i = 0; i < n; ++i) {
    if (outs[i].ndim() != 0 || outs[i].dtype != operands[i].dtype()) {
      ThrowOpError<TypeError>("reduce", "computation must return scalars of the operand dtypes; for operand ", i, " (",
                              dtype_name(operands[i].dtype()), ") it returned ", outs[i].str());
    }
  }
  return j;
}

ReducerFn AsReducer(const ClosedJaxpr& j) {
  return [j](absl::Span<const Array> a, absl::Span<const Array> b) { return AsFn(j)(Cat({a, b})); };
}

// The `computation` param: JAX keeps the Python callable; here it only names the reducer in
// printed jaxprs (the body jaxpr carries the semantics, so any two are equal).
class ReducerLabel final : public ParamObject {
 public:
  size_t Hash() const override { return 0x7ed0ce; }
  bool Equals(const ParamObject& other) const override { return dynamic_cast<const ReducerLabel*>(&other) != nullptr; }
  std::string ToString() const override { return "<reducer>"; }
};

Arrays BindReduce(const ClosedJaxpr& reducer, absl::Span<const Array> operands, absl::Span<const Array> inits,
                  const std::vector<int64_t>& dimensions) {
  return Bind(kReduce, Cat({operands, inits}),
              ParamMap{{"computation", Param(std::shared_ptr<const ParamObject>(std::make_shared<ReducerLabel>()))},
                       {"dimensions", dimensions},
                       {"jaxpr", JaxprParamOf(reducer)}});
}

Avals ReduceAbstractEval(InAvals in, const ParamMap& params) {
  const size_t n = in.size() / 2;
  const std::vector<int64_t> dims = params.GetInts("dimensions");
  const ShapedArray& x = *in[0];
  Shape kept;
  for (int64_t d = 0; d < x.ndim(); ++d) {
    if (std::find(dims.begin(), dims.end(), d) == dims.end()) kept.push_back(x.shape[static_cast<size_t>(d)]);
  }
  Avals out;
  for (size_t i = 0; i < n; ++i) out.push_back(ShapedArray{kept, in[i]->dtype, false});
  return out;
}

// JAX's _reduce_jvp_rule: the jvp of the tree reduction; tangents of the init values must be
// zero (JAX raises the same NotImplementedError).
JvpResult ReduceJvp(absl::Span<const Array> primals, absl::Span<const Array> tangents, const ParamMap& params) {
  const size_t n = primals.size() / 2;
  for (size_t i = n; i < 2 * n; ++i) {
    if (tangents[i].defined()) {
      throw NotImplementedError(
          "Gradient of general lax.reduce with non-zero tangents for initial values to reduction not implemented");
    }
  }
  const ReducerFn reducer = AsReducer(GetJaxpr(params, "jaxpr"));
  const std::vector<int64_t> dims = params.GetInts("dimensions");
  const Arrays inits(primals.begin() + static_cast<ptrdiff_t>(n), primals.end());
  auto [outs, touts] = JvpCall([&](absl::Span<const Array> xs) { return TreeReduce(reducer, xs, inits, dims); },
                               primals.subspan(0, n), tangents.subspan(0, n));
  return JvpResult{outs, touts};
}

// JAX's _reduce_batch_rule: mapped operands move their axis to the front (unmapped ones are
// broadcast) and the reduce is bound again with its dimensions shifted. Mapped init values
// (JAX raises NotImplementedError) reduce as the vmapped tree.
BatchResult ReduceBatch(absl::Span<const Array> args, absl::Span<const int64_t> dims, int64_t size,
                        const ParamMap& params) {
  const size_t n = args.size() / 2;
  const ClosedJaxpr& reducer = GetJaxpr(params, "jaxpr");
  const std::vector<int64_t> dimensions = params.GetInts("dimensions");
  const bool init_mapped = std::any_of(dims.begin() + static_cast<ptrdiff_t>(n), dims.end(),
                                       [](int64_t d) { return d != kNotMapped; });
  if (init_mapped) {
    Arrays outs = VmapCall(
        [&](absl::Span<const Array> a) { return TreeReduce(AsReducer(reducer), a.subspan(0, n), a.subspan(n), dimensions); },
        args, std::vector<int64_t>(dims.begin(), dims.end()), {0}, size);
    return BatchResult{outs, std::vector<int64_t>(outs.size(), 0)};
  }
  Arrays operands;
  for (size_t i = 0; i < n; ++i) {
    operands.push_back(dims[i] == kNotMapped ? broadcast(args[i], {size}) : MoveAxis(args[i], dims[i], 0));
  }
  std::vector<int64_t> shifted;
  for (int64_t d : dimensions) shifted.push_back(d + 1);
  Arrays outs = BindReduce(reducer, operands, args.subspan(n), shifted);
  return BatchResult{outs, std::vector<int64_t>(outs.size(), 0)};
}


}  // namespace

Arrays reduce_flat(const ReducerFn& computation, absl::Span<const Array> operands, absl::Span<const Array> init_values,
                   const std::vector<int64_t>& dimensions) {
  const Arrays inits = CheckInits("reduce", operands, init_values);
  const int64_t rank = operands[0].ndim();
  std::vector<bool> reduced(static_cast<size_t>(rank), false);
  std::vector<int64_t> axes;
  for (int64_t d : dimensions) {
    const int64_t a = CanonicalizeAxis(d, rank, "reduce");
    if (reduced[static_cast<size_t>(a)]) ThrowOpError<ValueError>("reduce", "dimension ", d, " appears twice");
    reduced[static_cast<size_t>(a)] = true;
    axes.push_back(a);
  }
  if (const std::optional<Primitive> p = Monoid(computation, operands, inits)) {
    const Array& x = operands[0];
    std::vector<int64_t> sorted = axes;
    std::sort(sorted.begin(), sorted.end());
    if (*p == kAdd) return {reduce_sum(x, sorted)};
    if (*p == kMul) return {reduce_prod(x, sorted)};
    if (*p == kMax) return {reduce_max(x, sorted)};
    if (*p == kMin) return {reduce_min(x, sorted)};
    if (*p == kAnd) return {reduce_and(x, sorted)};
    return {reduce_or(x, sorted)};
  }
  return BindReduce(ReducerJaxpr(computation, operands), operands, inits, axes);
}

Arrays reduce_window_flat(const ReducerFn& computation, absl::Span<const Array> operands,
                          absl::Span<const Array> init_values, const std::vector<int64_t>& window_dimensions,
                          const std::vector<int64_t>& window_strides, const WindowPaddingLike& padding,
                          const std::vector<int64_t>& base_dilation, const std::vector<int64_t>& window_dilation) {
  const Arrays inits = CheckInits("reduce_window", operands, init_values);
  const Shape& shape = operands[0].shape();
  const size_t rank = shape.size();
  const WindowPadding pads = padding.Resolve(shape, window_dimensions, window_strides);
  if (const std::optional<Primitive> p = Monoid(computation, operands, inits);
      p && (*p == kAdd || *p == kMax || *p == kMin)) {
    const WindowReduction kind = *p == kAdd ? WindowReduction::kSum : *p == kMax ? WindowReduction::kMax : WindowReduction::kMin;
    return {reduce_window(operands[0], kind, window_dimensions, window_strides, pads, base_dilation, window_dilation)};
  }
  const std::vector<int64_t> ones(rank, 1);
  const std::vector<int64_t>& bd = base_dilation.empty() ? ones : base_dilation;
  const std::vector<int64_t>& wd = window_dilation.empty() ? ones : window_dilation;
  for (const auto& [name, v] : {std::pair<const char*, const std::vector<int64_t>*>{"window_dimensions", &window_dimensions},
                                {"window_strides", &window_strides}, {"base_dilation", &bd}, {"window_dilation", &wd}}) {
    if (v->size() != rank) {
      ThrowOpError<ShapeError>("reduce_window", name, " has ", v->size(), " entries but operand ",
                               operands[0].aval().str(), " has rank ", rank);
    }
    if (std::any_of(v->begin(), v->end(), [](int64_t e) { return e < 1; })) {
      ThrowOpError<ValueError>("reduce_window", name, " must be positive for operand ", operands[0].aval().str());
    }
  }
  if (pads.size() != rank) {
    ThrowOpError<ShapeError>("reduce_window", "padding has ", pads.size(), " entries but operand ",
                             operands[0].aval().str(), " has rank ", rank);
  }
  // Padding and base-dilation holes hold the init value; every window tap is then one strided
  // slice of the padded operands.
  std::vector<std::array<int64_t, 3>> config;
  for (size_t i = 0; i < rank; ++i) config.push_back({pads[i].first, pads[i].second, bd[i] - 1});
  Arrays padded;
  for (size_t k = 0; k < operands.size(); ++k) padded.push_back(pad(operands[k], inits[k], config));
  Shape out_shape;
  for (size_t i = 0; i < rank; ++i) {
    const int64_t size = padded[0].shape()[i], extent = (window_dimensions[i] - 1) * wd[i] + 1;
    out_shape.push_back(size < extent ? 0 : (size - extent) / window_strides[i] + 1);
  }
  const int64_t count = NumElements(out_shape);
  if (count == 0) return Broadcast(inits, out_shape);
  Arrays acc = Broadcast(inits, {count});
  std::vector<int64_t> tap(rank, 0), start(rank), limit(rank);
  while (true) {
    for (size_t i = 0; i < rank; ++i) {
      start[i] = tap[i] * wd[i];
      limit[i] = start[i] + (out_shape[i] - 1) * window_strides[i] + 1;
    }
    Arrays taps;
    for (const Array& x : padded) taps.push_back(reshape(slice(x, start, limit, window_strides), {count}));
    acc = Combine("reduce_window", computation, acc, true, taps, count);
    size_t i = rank;  // next tap, odometer order
    while (i-- > 0 && ++tap[i] == window_dimensions[i]) tap[i] = 0;
    if (i == static_cast<size_t>(-1)) break;
  }
  for (Array& a : acc) a = reshape(a, out_shape);
  return acc;
}

namespace internal {

void RegisterGenericReduce(Registry& r) {
  PrimitiveRules& rules = r.Define(kReduce);
  rules.abstract_eval = ReduceAbstractEval;
  rules.impl = [](absl::Span<const Array> in, const ParamMap& params, absl::Span<const ShapedArray>) {
    const size_t n = in.size() / 2;
    return TreeReduce(AsReducer(GetJaxpr(params, "jaxpr")), in.subspan(0, n), in.subspan(n),
                      params.GetInts("dimensions"));
  };
  rules.jvp = ReduceJvp;
  rules.batch = ReduceBatch;
  rules.unsupported["transpose"] = "not linear in general: reverse mode transposes the linear ops of its jvp";
}

}  // namespace internal
}  // namespace jx::lax
