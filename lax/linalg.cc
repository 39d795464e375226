// lax.linalg's primitives: user API, abstract evaluation and the eager impl rules, which run
// the kernel library's numerics (lax/kernels/linalg.h). Transformation rules are in
// linalg_rules.cc, lowering in linalg_lowering.cc.
#include "jx/lax/linalg.h"

#include "jx/lax/kernels/linalg.h"
#include "jx/lax/numpy/manipulation.h"
#include "jx/lax/numpy/operators.h"
#include "jx/lax/op_util.h"

namespace jx::lax::linalg {
namespace {

using internal::AvalsToString;
using internal::BindOp;
using internal::CheckArity;

// (x + x^T) / 2 over the last two dims.
Array Symmetrize(const Array& x) { return (x + numpy::matrix_transpose(x)) / 2; }

// The operand checks every linalg op shares: a float32/float64 array of rank >= 2.
void CheckMatrix(std::string_view op, const ShapedArray& x, std::string_view what = "operand") {
  if (!kernels::IsLinalgDType(x.dtype)) {
    ThrowOpError<TypeError>(op, what, " must be float32 or float64, got ", x.str());
  }
  if (x.ndim() < 2) ThrowOpError<ShapeError>(op, what, " must have rank >= 2 (a batch of matrices), got ", x.str());
}
void CheckSquare(std::string_view op, const ShapedArray& x, std::string_view what = "operand") {
  CheckMatrix(op, x, what);
  if (x.shape[x.ndim() - 1] != x.shape[x.ndim() - 2]) {
    ThrowOpError<ShapeError>(op, what, " must be a batch of square matrices, got ", x.str());
  }
}

Shape WithMatrix(const Shape& x, std::initializer_list<int64_t> tail) {
  Shape out(x.begin(), x.end() - 2);
  out.insert(out.end(), tail.begin(), tail.end());
  return out;
}
Shape WithVector(const Shape& x, int64_t n) {
  Shape out(x.begin(), x.end() - 2);
  out.push_back(n);
  return out;
}

int64_t Rows(const Shape& s) { return s[s.size() - 2]; }
int64_t Cols(const Shape& s) { return s[s.size() - 1]; }
int64_t Batch(const Shape& s) {
  int64_t b = 1;
  for (size_t i = 0; i + 2 < s.size(); ++i) b *= s[i];
  return b;
}

void DefineCholesky(Registry& r) {
  PrimitiveRules& rules = r.Define(kCholesky);
  rules.abstract_eval = [](InAvals in, const ParamMap&) -> Avals {
    CheckArity(kCholesky.name(), in, 1);
    CheckSquare(kCholesky.name(), *in[0]);
    return internal::OneAval(ShapedArray{in[0]->shape, in[0]->dtype});
  };
  rules.impl = [](absl::Span<const Array> in, const ParamMap&, absl::Span<const ShapedArray> out_avals) -> Arrays {
    Array l = Array::Empty(out_avals[0]);
    kernels::Cholesky(in[0].dtype(), in[0].data(), l.mutable_data(), Batch(in[0].shape()), Cols(in[0].shape()));
    return internal::OneArray(std::move(l));
  };
}

void DefineTriangularSolve(Registry& r) {
  PrimitiveRules& rules = r.Define(kTriangularSolve);
  rules.abstract_eval = [](InAvals in, const ParamMap& params) -> Avals {
    const std::string_view op = kTriangularSolve.name();
    CheckArity(op, in, 2);
    const ShapedArray &a = *in[0], &b = *in[1];
    CheckSquare(op, a, "a");
    CheckMatrix(op, b, "b");
    if (a.dtype != b.dtype) ThrowOpError<TypeError>(op, "a and b must have the same dtype, got ", AvalsToString(in));
    const bool left_side = params.GetBool("left_side");
    params.GetBool("lower");
    params.GetBool("transpose_a");
    params.GetBool("conjugate_a");
    params.GetBool("unit_diagonal");
    if (a.ndim() != b.ndim() || !std::equal(a.shape.begin(), a.shape.end() - 2, b.shape.begin())) {
      ThrowOpError<ShapeError>(op, "a and b must have equal batch dimensions, got ", AvalsToString(in));
    }
    const int64_t k = Rows(a.shape), need = left_side ? Rows(b.shape) : Cols(b.shape);
    if (k != need) {
      ThrowOpError<ShapeError>(op, "a is ", k, "x", k, " but b has ", need, left_side ? " rows" : " columns",
                               " (left_side=", left_side, "): ", AvalsToString(in));
    }
    return internal::OneAval(ShapedArray{b.shape, b.dtype});
  };
  rules.impl = [](absl::Span<const Array> in, const ParamMap& params,
                  absl::Span<const ShapedArray> out_avals) -> Arrays {
    Array x = Array::Empty(out_avals[0]);
    const Shape& b = in[1].shape();
    kernels::TriangularSolve(in[0].dtype(), in[0].data(), in[1].data(), x.mutable_data(), Batch(b), Rows(b), Cols(b),
                             params.GetBool("left_side"), params.GetBool("lower"), params.GetBool("transpose_a"),
                             params.GetBool("unit_diagonal"));
    return internal::OneArray(std::move(x));
  };
}

void DefineLu(Registry& r) {
  PrimitiveRules& rules = r.Define(kLu);
  rules.abstract_eval = [](InAvals in, const ParamMap&) -> Avals {
    CheckArity(kLu.name(), in, 1);
    const ShapedArray& x = *in[0];
    CheckMatrix(kLu.name(), x);
    const int64_t m = Rows(x.shape), n = Cols(x.shape);
    return {ShapedArray{x.shape, x.dtype}, ShapedArray{WithVector(x.shape, std::min(m, n)), int32},
            ShapedArray{WithVector(x.shape, m), int32}};
  };
  rules.impl = [](absl::Span<const Array> in, const ParamMap&, absl::Span<const ShapedArray> out_avals) -> Arrays {
    Arrays out;
    for (const ShapedArray& a : out_avals) out.push_back(Array::Empty(a));
    const Shape& s = in[0].shape();
    kernels::Lu(in[0].dtype(), in[0].data(), out[0].mutable_data(), static_cast<int32_t*>(out[1].mutable_data()),
                static_cast<int32_t*>(out[2].mutable_data()), Batch(s), Rows(s), Cols(s));
    return out;
  };
}

void DefineQr(Registry& r) {
  PrimitiveRules& rules = r.Define(kQr);
  rules.abstract_eval = [](InAvals in, const ParamMap& params) -> Avals {
    CheckArity(kQr.name(), in, 1);
    const ShapedArray& x = *in[0];
    CheckMatrix(kQr.name(), x);
    const int64_t m = Rows(x.shape), n = Cols(x.shape), k = params.GetBool("full_matrices") ? m : std::min(m, n);
    return {ShapedArray{WithMatrix(x.shape, {m, k}), x.dtype}, ShapedArray{WithMatrix(x.shape, {k, n}), x.dtype}};
  };
  rules.impl = [](absl::Span<const Array> in, const ParamMap& params,
                  absl::Span<const ShapedArray> out_avals) -> Arrays {
    Array q = Array::Empty(out_avals[0]), r = Array::Empty(out_avals[1]);
    const Shape& s = in[0].shape();
    kernels::Qr(in[0].dtype(), in[0].data(), q.mutable_data(), r.mutable_data(), Batch(s), Rows(s), Cols(s),
                params.GetBool("full_matrices"));
    return {q, r};
  };
}

void DefineEigh(Registry& r) {
  PrimitiveRules& rules = r.Define(kEigh);
  rules.abstract_eval = [](InAvals in, const ParamMap& params) -> Avals {
    CheckArity(kEigh.name(), in, 1);
    const ShapedArray& x = *in[0];
    CheckSquare(kEigh.name(), x);
    params.GetBool("lower");
    params.GetBool("sort_eigenvalues");
    return {ShapedArray{x.shape, x.dtype}, ShapedArray{WithVector(x.shape, Cols(x.shape)), x.dtype}};
  };
  rules.impl = [](absl::Span<const Array> in, const ParamMap& params,
                  absl::Span<const ShapedArray> out_avals) -> Arrays {
    Array v = Array::Empty(out_avals[0]), w = Array::Empty(out_avals[1]);
    const Shape& s = in[0].shape();
    kernels::Eigh(in[0].dtype(), in[0].data(), v.mutable_data(), w.mutable_data(), Batch(s), Cols(s),
                  params.GetBool("lower"));
    return {v, w};
  };
}

void DefineSvd(Registry& r) {
  PrimitiveRules& rules = r.Define(kSvd);
  rules.abstract_eval = [](InAvals in, const ParamMap& params) -> Avals {
    CheckArity(kSvd.name(), in, 1);
    const ShapedArray& x = *in[0];
    CheckMatrix(kSvd.name(), x);
    const int64_t m = Rows(x.shape), n = Cols(x.shape), k = std::min(m, n);
    const bool full = params.GetBool("full_matrices");
    Avals out = {ShapedArray{WithVector(x.shape, k), x.dtype}};
    if (params.GetBool("compute_uv")) {
      out.push_back(ShapedArray{WithMatrix(x.shape, {m, full ? m : k}), x.dtype});
      out.push_back(ShapedArray{WithMatrix(x.shape, {full ? n : k, n}), x.dtype});
    }
    return out;
  };
  rules.impl = [](absl::Span<const Array> in, const ParamMap& params,
                  absl::Span<const ShapedArray> out_avals) -> Arrays {
    Arrays out;
    for (const ShapedArray& a : out_avals) out.push_back(Array::Empty(a));
    const Shape& s = in[0].shape();
    const bool compute_uv = params.GetBool("compute_uv");
    kernels::Svd(in[0].dtype(), in[0].data(), out[0].mutable_data(), compute_uv ? out[1].mutable_data() : nullptr,
                 compute_uv ? out[2].mutable_data() : nullptr, Batch(s), Rows(s), Cols(s),
                 params.GetBool("full_matrices"), compute_uv);
    return out;
  };
}

}  // namespace

Array cholesky(const Array& x, bool symmetrize_input) {
  return BindOp(kCholesky, {symmetrize_input ? Symmetrize(x) : x})[0];
}

Array triangular_solve(const Array& a, const Array& b, const TriangularSolveOptions& o) {
  const Array in[] = {a, b};
  return BindOp(kTriangularSolve, in,
                ParamMap{{"left_side", o.left_side},
                         {"lower", o.lower},
                         {"transpose_a", o.transpose_a},
                         {"conjugate_a", o.conjugate_a},
                         {"unit_diagonal", o.unit_diagonal}})[0];
}

std::tuple<Array, Array, Array> lu(const Array& x) {
  Arrays out = BindOp(kLu, {x});
  return {out[0], out[1], out[2]};
}

std::pair<Array, Array> qr(const Array& x, bool full_matrices) {
  Arrays out = BindOp(kQr, {x}, ParamMap{{"full_matrices", full_matrices}});
  return {out[0], out[1]};
}

std::pair<Array, Array> eigh(const Array& x, bool lower, bool symmetrize_input, bool sort_eigenvalues) {
  Arrays out = BindOp(kEigh, {symmetrize_input ? Symmetrize(x) : x},
                      ParamMap{{"lower", lower}, {"sort_eigenvalues", sort_eigenvalues}});
  return {out[0], out[1]};
}

SvdResult svd(const Array& x, bool full_matrices, bool compute_uv) {
  Arrays out = BindOp(kSvd, {x}, ParamMap{{"compute_uv", compute_uv}, {"full_matrices", full_matrices}});
  if (!compute_uv) return SvdResult{Array{}, out[0], Array{}};
  return SvdResult{out[1], out[0], out[2]};
}

namespace internal {
void RegisterLinalgRules(Registry& r);     // linalg_rules.cc
void RegisterLinalgLowering(Registry& r);  // linalg_lowering.cc
}  // namespace internal
}  // namespace jx::lax::linalg

namespace jx::lax::internal {

void RegisterLinalg(Registry& r) {
  linalg::DefineCholesky(r);
  linalg::DefineTriangularSolve(r);
  linalg::DefineLu(r);
  linalg::DefineQr(r);
  linalg::DefineEigh(r);
  linalg::DefineSvd(r);
  linalg::internal::RegisterLinalgRules(r);
  linalg::internal::RegisterLinalgLowering(r);
}

}  // namespace jx::lax::internal
