// Comparisons (eq ne lt le gt ge -> bool), select_n and clamp: abstract eval, CPU kernels,
// registration (from RegisterBinaryOps). Public wrappers are declared in binary_ops.h.
#include <cstring>

#include "jx/lax/binary_ops.h"
#include "jx/lax/kernels/dispatch.h"
#include "jx/lax/kernels/elementwise.h"
#include "jx/lax/op_util.h"
#include "jx/lax/primitives.h"
#include "jx/lax/rule_util.h"
#include "jx/lax/unary_ops.h"
#include "jx/transforms/jvp.h"

namespace jx::lax {

using internal::BindElementwise;

Array eq(const Array& x, const Array& y) { return BindElementwise(kEq, {x, y}); }
Array ne(const Array& x, const Array& y) { return BindElementwise(kNe, {x, y}); }
Array lt(const Array& x, const Array& y) { return BindElementwise(kLt, {x, y}); }
Array le(const Array& x, const Array& y) { return BindElementwise(kLe, {x, y}); }
Array gt(const Array& x, const Array& y) { return BindElementwise(kGt, {x, y}); }
Array ge(const Array& x, const Array& y) { return BindElementwise(kGe, {x, y}); }

Array select_n(const Array& which, const std::vector<Array>& cases) {
  absl::InlinedVector<Array, 4> operands;
  operands.reserve(cases.size() + 1);
  operands.push_back(which);
  operands.insert(operands.end(), cases.begin(), cases.end());
  // Weak cases (C++ scalars) take the strong cases' dtype and shape; `which` is left alone.
  if (cases.size() > 1) internal::CoerceWeakOperands(absl::MakeSpan(operands).subspan(1));
  return internal::BindOp(kSelectN, operands)[0];
}

Array select(const Array& pred, const Array& on_true, const Array& on_false) {
  return select_n(pred, {on_false, on_true});
}

Array clamp(const Array& lo, const Array& x, const Array& hi) {
  // Weak bounds take x's dtype; scalar bounds stay scalar (clamp accepts them as they are).
  std::array<Array, 3> operands{lo, x, hi};
  internal::CoerceWeakOperands(absl::MakeSpan(operands), /*broadcast_scalars=*/false);
  return internal::BindOp(kClamp, operands)[0];
}

namespace internal {
namespace {

using kernels::ComputeType;
using kernels::kIsFloat;

// ---- Comparisons.

// A comparison from the kernel library (the CPU backend runs the same kernel).
void DefineComparison(Registry& r, Primitive p, kernels::CompareOp op) {
  PrimitiveRules& rules = r.Define(p);
  rules.abstract_eval = [p](InAvals in, const ParamMap&) -> Avals {
    CheckArity(p.name(), in, 2);
    CheckSameDTypes(p.name(), in);
    CheckElementwiseShapes(p.name(), in);
    return OneAval(ShapedArray{ElementwiseResult(in, bool_).shape, bool_, false});
  };
  rules.impl = [op](absl::Span<const Array> in, const ParamMap&, absl::Span<const ShapedArray> out_avals) -> Arrays {
    Array out = Array::Empty(out_avals[0]);
    const int64_t n = out.size();
    if (n == 0) return OneArray(std::move(out));
    const bool a_scalar = in[0].ndim() == 0 && n != 1, b_scalar = in[1].ndim() == 0 && n != 1;
    const unsigned scalars = (a_scalar ? 1u : 0u) | (b_scalar ? 2u : 0u);
    const void* operands[] = {in[0].data(), in[1].data()};
    kernels::RunElementwise(kernels::FindCompareFn(op, in[0].dtype(), scalars), 2, operands, scalars,
                            ItemSize(in[0].dtype()), out.mutable_data(), 1, n, kernels::kParallelGrain);
    return OneArray(std::move(out));
  };
}

// ---- select_n.

template <typename W>
int64_t CaseIndex(W w, int64_t num_cases) {
  if constexpr (std::is_same_v<W, bool>) {
    return w && num_cases > 1 ? 1 : 0;
  } else {
    // Out-of-range `which` is implementation-defined in JAX; clamping matches XLA's lowering
    // (a tree of `which < k` selects) and never reads out of bounds.
    const int64_t i = static_cast<int64_t>(w);
    return i < 0 ? 0 : (i >= num_cases ? num_cases - 1 : i);
  }
}

template <typename E, typename W>
void SelectKernel(const W* which, bool which_scalar, absl::Span<const Array> cases, E* out, int64_t n) {
  const int64_t num_cases = static_cast<int64_t>(cases.size());
  if (which_scalar) {
    const E* src = kernels::Data<E>(cases[CaseIndex(which[0], num_cases)]);
    kernels::ForChunks(n, [&](int64_t b, int64_t e) { std::memcpy(out + b, src + b, (e - b) * sizeof(E)); });
    return;
  }
  if (num_cases <= 2) {
    const E* c0 = kernels::Data<E>(cases[0]);
    const E* c1 = kernels::Data<E>(cases[num_cases - 1]);
    kernels::ForChunks(n, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) out[i] = CaseIndex(which[i], num_cases) != 0 ? c1[i] : c0[i];
    });
    return;
  }
  absl::InlinedVector<const E*, 8> ptrs;
  for (const Array& c : cases) ptrs.push_back(kernels::Data<E>(c));
  kernels::ForChunks(n, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) out[i] = ptrs[static_cast<size_t>(CaseIndex(which[i], num_cases))][i];
  });
}

void DefineSelectN(Registry& r) {
  PrimitiveRules& rules = r.Define(kSelectN);
  rules.abstract_eval = [](InAvals in, const ParamMap&) -> Avals {
    if (in.size() < 2) {
      ThrowOpError<TypeError>("select_n", "requires a `which` operand and at least one case, got ", in.size(),
                              " operands (", AvalsToString(in), ")");
    }
    const ShapedArray& which = *in[0];
    if (!IsBool(which.dtype) && !IsInteger(which.dtype)) {
      ThrowOpError<TypeError>("select_n", "`which` must be a boolean or integer array, got ", which.str());
    }
    InAvals cases = in.subspan(1);
    if (IsBool(which.dtype) && cases.size() > 2) {
      ThrowOpError<TypeError>("select_n", "a boolean `which` selects between at most 2 cases, got ", cases.size(),
                              " cases (", AvalsToString(in), ")");
    }
    CheckSameDTypes("select_n", cases);
    CheckSameShapes("select_n", cases);
    if (which.ndim() != 0 && which.shape != cases[0]->shape) {
      ThrowOpError<ShapeError>("select_n", "`which` must be a scalar or have the cases' shape, got which ",
                               which.str(), " and cases ", AvalsToString(cases));
    }
    return OneAval(ElementwiseResult(cases, cases[0]->dtype));
  };
  rules.impl = [](absl::Span<const Array> in, const ParamMap&, absl::Span<const ShapedArray> out_avals) -> Arrays {
    Array out = Array::Empty(out_avals[0]);
    const int64_t n = out.size();
    if (n == 0) return OneArray(std::move(out));
    const bool which_scalar = in[0].ndim() == 0;
    absl::Span<const Array> cases = in.subspan(1);
    // Selection moves bits: dispatch on the element width only.
    auto by_width = [&](auto wtag) {
      using W = typename decltype(wtag)::type;
      const W* which = kernels::Data<W>(in[0]);
      switch (ItemSize(out.dtype())) {
        case 1: SelectKernel(which, which_scalar, cases, kernels::MutableData<uint8_t>(out), n); break;
        case 2: SelectKernel(which, which_scalar, cases, kernels::MutableData<uint16_t>(out), n); break;
        case 4: SelectKernel(which, which_scalar, cases, kernels::MutableData<uint32_t>(out), n); break;
        default: SelectKernel(which, which_scalar, cases, kernels::MutableData<uint64_t>(out), n); break;
      }
    };
    kernels::DispatchDType(in[0].dtype(), [&](auto wtag) {
      using W = typename decltype(wtag)::type;
      if constexpr (std::is_integral_v<W>) by_width(wtag);
    });
    return OneArray(std::move(out));
  };
}

// ---- clamp(lo, x, hi) = min(hi, max(lo, x)) with XLA's float max/min (NaN-propagating).

template <typename T>
void ClampKernel(const T* lo, bool lo_scalar, const T* x, const T* hi, bool hi_scalar, T* out, int64_t n) {
  if constexpr (kIsFloat<T>) {
    // The kernel library's clamp (the CPU backend runs the same one).
    const DType dtype = kernels::KernelDType<T>();
    const unsigned scalars = (lo_scalar ? 1u : 0u) | (hi_scalar ? 4u : 0u);
    const void* in[] = {lo, x, hi};
    kernels::RunElementwise(kernels::FindClampFn(dtype, scalars), 3, in, scalars, ItemSize(dtype), out,
                            ItemSize(dtype), n, kernels::kParallelGrain);
  } else {
    const int64_t ls = lo_scalar ? 0 : 1, hs = hi_scalar ? 0 : 1;
    kernels::ForChunks(n, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) {
        const T l = lo[i * ls], h = hi[i * hs];
        T v = x[i];
        v = l < v ? v : l;
        out[i] = v < h ? v : h;
      }
    });
  }
}

void DefineClamp(Registry& r) {
  PrimitiveRules& rules = r.Define(kClamp);
  rules.abstract_eval = [](InAvals in, const ParamMap&) -> Avals {
    CheckArity("clamp", in, 3);
    CheckSameDTypes("clamp", in);
    const ShapedArray& x = *in[1];
    for (size_t i : {size_t{0}, size_t{2}}) {
      if (in[i]->ndim() != 0 && in[i]->shape != x.shape) {
        ThrowOpError<ShapeError>("clamp", i == 0 ? "min" : "max", " must be a scalar or have the operand's shape, got ",
                                 "clamp(", AvalsToString(in), ")");
      }
    }
    return OneAval(ShapedArray{x.shape, x.dtype, in[0]->weak_type && x.weak_type && in[2]->weak_type});
  };
  rules.impl = [](absl::Span<const Array> in, const ParamMap&, absl::Span<const ShapedArray> out_avals) -> Arrays {
    Array out = Array::Empty(out_avals[0]);
    const int64_t n = out.size();
    if (n == 0) return OneArray(std::move(out));
    kernels::DispatchDType(out.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      ClampKernel(kernels::Data<T>(in[0]), in[0].ndim() == 0 && n != 1, kernels::Data<T>(in[1]),
                  kernels::Data<T>(in[2]), in[2].ndim() == 0 && n != 1, kernels::MutableData<T>(out), n);
    });
    return OneArray(std::move(out));
  };
}


// ---- jvp, transpose and batching rules.

// select_n's tangent: the same selection over the cases' tangents (zeros where undefined).
JvpResult SelectNJvp(absl::Span<const Array> primals, absl::Span<const Array> tangents, const ParamMap& params) {
  Array out = BindOp(kSelectN, primals, params)[0];
  bool any = false;
  for (size_t i = 1; i < tangents.size(); ++i) any = any || tangents[i].defined();
  if (!any || !HasTangentSpace(out.dtype())) return JvpResult{{std::move(out)}, {Array()}};
  Arrays operands{primals[0]};
  for (size_t i = 1; i < primals.size(); ++i) operands.push_back(Instantiate(tangents[i], primals[i]));
  Array t = BindOp(kSelectN, operands, params)[0];
  return JvpResult{{std::move(out)}, {std::move(t)}};
}

// Linear in the cases: case i receives the cotangent where `which` picked it (the same
// selection with zeros in the other cases, so out-of-range `which` clamps consistently).
Arrays SelectNTranspose(absl::Span<const Array> cts, absl::Span<const TransposeArg> args, const ParamMap& params) {
  if (args[0].is_linear()) throw InternalError("[select_n] transpose: `which` cannot be linear");
  Arrays out(args.size());
  if (!cts[0].defined()) return out;
  const Array zeros = Zeros(ShapedArray{cts[0].shape(), cts[0].dtype()});
  for (size_t i = 1; i < args.size(); ++i) {
    if (!args[i].is_linear()) continue;
    Arrays operands{args[0].value};
    for (size_t j = 1; j < args.size(); ++j) operands.push_back(j == i ? cts[0] : zeros);
    out[i] = BindOp(kSelectN, operands, params)[0];
  }
  return out;
}

// t (broadcast to the output's shape) where mask holds, 0 elsewhere; undefined stays so.
Array MaskTangent(const Array& mask, const Array& t, const Shape& shape) {
  if (!t.defined()) return t;
  const Array full = BroadcastScalarTo(t, shape);
  return select(mask, full, Zeros(ShapedArray{shape, full.dtype()}));
}

// clamp(lo, x, hi) = min(hi, max(lo, x)): the tangent of whichever operand the result is.
// hi where hi < max(lo, x); else lo where lo > x; else x (so x's tangent passes on
// lo <= x <= hi). Unlike JAX's rule this stays right when lo > hi (the result is hi).
JvpResult ClampJvp(absl::Span<const Array> primals, absl::Span<const Array> tangents, const ParamMap& params) {
  Array out = BindOp(kClamp, primals, params)[0];
  bool any = false;
  for (const Array& t : tangents) any = any || t.defined();
  if (!any || !HasTangentSpace(out.dtype())) return JvpResult{{std::move(out)}, {Array()}};
  const Array& lo = primals[0];
  const Array& x = primals[1];
  const Array& hi = primals[2];
  const Shape& shape = out.shape();
  const Array hi_wins = lt(hi, max(lo, x));
  const Array lo_wins = bitwise_and(bitwise_not(hi_wins), gt(lo, x));
  const Array x_wins = bitwise_not(bitwise_or(hi_wins, lo_wins));
  Array t = AddTangents(MaskTangent(lo_wins, tangents[0], shape), MaskTangent(x_wins, tangents[1], shape));
  t = AddTangents(t, MaskTangent(hi_wins, tangents[2], shape));
  return JvpResult{{std::move(out)}, {std::move(t)}};
}

void RegisterComparisonRules(Registry& r) {
  const std::string nonlinear = "not linear: reverse mode transposes the linear ops of its jvp";
  for (Primitive p : {kEq, kNe, kLt, kLe, kGt, kGe}) {
    PrimitiveRules& rules = r.Define(p);
    // Boolean outputs have no tangent space.
    rules.jvp = [p](absl::Span<const Array> primals, absl::Span<const Array>, const ParamMap& params) {
      return JvpResult{{BindOp(p, primals, params)[0]}, {Array()}};
    };
    rules.batch = BatchElementwise(p);
    rules.unsupported["transpose"] = "boolean output: " + nonlinear;
  }
  PrimitiveRules& select_rules = r.Define(kSelectN);
  select_rules.jvp = SelectNJvp;
  select_rules.transpose = SelectNTranspose;
  select_rules.batch = BatchElementwise(kSelectN, /*scalar_ok=*/0b1);  // only `which` may be 0-d
  PrimitiveRules& clamp_rules = r.Define(kClamp);
  clamp_rules.jvp = ClampJvp;
  clamp_rules.batch = BatchElementwise(kClamp, /*scalar_ok=*/0b101);  // the bounds may be 0-d
  clamp_rules.unsupported["transpose"] = nonlinear;
}

}  // namespace

void RegisterComparisonOps(Registry& r) {
  using kernels::CompareOp;
  DefineComparison(r, kEq, CompareOp::kEq);
  DefineComparison(r, kNe, CompareOp::kNe);
  DefineComparison(r, kLt, CompareOp::kLt);
  DefineComparison(r, kLe, CompareOp::kLe);
  DefineComparison(r, kGt, CompareOp::kGt);
  DefineComparison(r, kGe, CompareOp::kGe);
  DefineSelectN(r);
  DefineClamp(r);
  RegisterComparisonRules(r);
}

}  // namespace internal
}  // namespace jx::lax
