// Transformation rules of lax.linalg's primitives, as JAX's jax/_src/lax/linalg.py has them:
// jvps (cholesky_jvp, triangular_solve's in a and b, lu_jvp, qr_jvp, eigh_jvp, svd_jvp),
// triangular_solve's transpose in b (it is linear in b), and batching: every op works on the
// last two dims, so a batch dim moves to the front and the op binds once. Reverse mode
// transposes the linear ops of these jvps. Products run at HIGHEST precision, as JAX's rules.
#include <array>
#include <vector>

#include "jx/core/interpreter.h"
#include "jx/lax/binary_ops.h"
#include "jx/lax/convert_ops.h"
#include "jx/lax/linalg.h"
#include "jx/lax/numpy/creation.h"
#include "jx/lax/numpy/linalg.h"
#include "jx/lax/numpy/manipulation.h"
#include "jx/lax/numpy/operators.h"
#include "jx/lax/rule_util.h"
#include "jx/lax/shape_ops.h"
#include "jx/lax/slicing_ops.h"
#include "jx/lax/unary_ops.h"

namespace jx::lax::linalg::internal {
namespace {

namespace jnp = ::jx::numpy;
using lax::internal::MoveBatchToFront;

Array Dot(const Array& a, const Array& b) { return jnp::matmul(a, b, Precision::kHighest); }
Array H(const Array& x) { return jnp::matrix_transpose(x); }
Array Eye(int64_t n, DType d) { return jnp::eye(n, std::nullopt, 0, d); }

TriangularSolveOptions SolveOptions(const ParamMap& p) {
  return {p.GetBool("left_side"), p.GetBool("lower"), p.GetBool("transpose_a"), p.GetBool("conjugate_a"),
          p.GetBool("unit_diagonal")};
}

// x[..., r0:r1, c0:c1].
Array SliceMatrix(const Array& x, int64_t r0, int64_t r1, int64_t c0, int64_t c1) {
  std::vector<int64_t> start(static_cast<size_t>(x.ndim()), 0), limit = x.shape();
  start[start.size() - 2] = r0;
  start.back() = c0;
  limit[limit.size() - 2] = r1;
  limit.back() = c1;
  return slice(x, start, limit);
}

// x padded with zeros after its last two dims to rows x cols.
Array PadMatrix(const Array& x, int64_t rows, int64_t cols) {
  std::vector<std::array<int64_t, 3>> config(static_cast<size_t>(x.ndim()), {0, 0, 0});
  config[config.size() - 2] = {0, rows - x.shape()[x.shape().size() - 2], 0};
  config.back() = {0, cols - x.shape().back(), 0};
  return pad(x, jnp::zeros({}, x.dtype()), config);
}

// Binds p on primals with every tangent a symbolic zero.
JvpResult NoTangents(Primitive p, absl::Span<const Array> primals, const ParamMap& params, size_t n_out) {
  return JvpResult{Bind(p, primals, params), Arrays(n_out)};
}

// cholesky_jvp (Murray 2016, arXiv:1602.07527): L_dot = L phi(L^-1 sigma_dot L^-T), phi
// taking the lower triangle with its diagonal halved.
JvpResult CholeskyJvp(absl::Span<const Array> primals, absl::Span<const Array> tangents, const ParamMap& params) {
  if (!tangents[0].defined()) return NoTangents(kCholesky, primals, params, 1);
  const Array l = Bind(kCholesky, primals, params)[0];
  const Array& sigma_dot = tangents[0];
  const int64_t n = l.shape().back();
  const Array tmp = triangular_solve(l, sigma_dot, {.left_side = false, .lower = true, .transpose_a = true,
                                                    .conjugate_a = true});
  const Array inner = triangular_solve(l, tmp, {.left_side = true, .lower = true});
  const Array phi = jnp::tril(inner) / (1 + Eye(n, l.dtype()));
  return JvpResult{{l}, {Dot(l, phi)}};
}

// d(op(a)^-1 b) in a: -op(a)^-1 op(da) x (left) or -x op(da) op(a)^-1 (right), with da masked
// to the triangle the op reads; the cheaper association first, as JAX's.
Array TriangularSolveJvpA(const Array& g_a, const Array& ans, const Array& a, const ParamMap& params) {
  const TriangularSolveOptions o = SolveOptions(params);
  const int64_t k = o.unit_diagonal ? 1 : 0;
  Array g = o.lower ? jnp::tril(g_a, -k) : jnp::triu(g_a, k);
  g = neg(g);
  if (o.transpose_a) g = H(g);
  auto a_inverse = [&](const Array& rhs) { return triangular_solve(a, rhs, o); };
  const int64_t m = ans.shape()[ans.shape().size() - 2], n = ans.shape().back();
  if (o.left_side) return m > n ? a_inverse(Dot(g, ans)) : Dot(a_inverse(g), ans);
  return m < n ? a_inverse(Dot(ans, g)) : Dot(ans, a_inverse(g));
}

JvpResult TriangularSolveJvp(absl::Span<const Array> primals, absl::Span<const Array> tangents,
                             const ParamMap& params) {
  const Array ans = Bind(kTriangularSolve, primals, params)[0];
  Array t;
  if (tangents[1].defined()) t = Bind(kTriangularSolve, {primals[0], tangents[1]}, params)[0];
  if (tangents[0].defined()) t = lax::internal::AddTangents(t, TriangularSolveJvpA(tangents[0], ans, primals[0], params));
  return JvpResult{{ans}, {t}};
}

// Linear in b: ct_b = op(a)^-T ct on the same side.
Arrays TriangularSolveTranspose(absl::Span<const Array> cts, absl::Span<const TransposeArg> args,
                                const ParamMap& params) {
  if (args[0].is_linear()) {
    throw NotImplementedError("[triangular_solve] is not linear in a: transpose applies to b only");
  }
  Arrays out(2);
  if (cts[0].defined()) {
    ParamMap flipped = params;
    flipped.Set("transpose_a", !params.GetBool("transpose_a"));
    out[1] = Bind(kTriangularSolve, {args[0].value, cts[0]}, flipped)[0];
  }
  return out;
}

// lu_jvp: with P a = L U, (L^-1 P da U^-1) splits into L^-1 dL (strictly lower) + dU U^-1
// (upper); rectangular factors are padded to square ones first.
JvpResult LuJvp(absl::Span<const Array> primals, absl::Span<const Array> tangents, const ParamMap& params) {
  if (!tangents[0].defined()) return NoTangents(kLu, primals, params, 3);
  Arrays out = Bind(kLu, primals, params);
  const Array& perm = out[2];
  const Shape& s = out[0].shape();
  const int64_t m = s[s.size() - 2], n = s.back(), k = std::min(m, n);
  const DType dt = out[0].dtype();
  // x = P a_dot, the permutation as a one-hot matrix [..., m, m].
  const Array onehot = convert_element_type(jnp::expand_dims(perm, -1) == broadcasted_iota(int32, {m}, 0), dt);
  const Array x = Dot(onehot, tangents[0]);
  const Array l = PadMatrix(jnp::tril(SliceMatrix(out[0], 0, m, 0, k), -1), m, m) + Eye(m, dt);
  std::vector<double> tail(static_cast<size_t>(n * n), 0.0);
  for (int64_t i = k; i < n; ++i) tail[static_cast<size_t>(i * n + i)] = 1.0;
  const Array u_eye = convert_element_type(jnp::array(tail, {n, n}), dt);
  const Array u = PadMatrix(jnp::triu(SliceMatrix(out[0], 0, k, 0, n)), n, n) + u_eye;
  const Array la = triangular_solve(l, x, {.left_side = true, .lower = true, .unit_diagonal = true});
  const Array lau = triangular_solve(u, la, {.left_side = false, .lower = false});
  const Array lu_dot = Dot(l, jnp::tril(lau, -1)) + Dot(jnp::triu(lau), u);
  return JvpResult{std::move(out), {lu_dot, Array{}, Array{}}};
}

// qr_jvp (the reduced factorization of a tall or square matrix).
JvpResult QrJvp(absl::Span<const Array> primals, absl::Span<const Array> tangents, const ParamMap& params) {
  if (!tangents[0].defined()) return NoTangents(kQr, primals, params, 2);
  const Shape& s = primals[0].shape();
  const int64_t m = s[s.size() - 2], n = s.back();
  if (m < n || (params.GetBool("full_matrices") && m != n)) {
    throw NotImplementedError(StrCat("[qr] Unimplemented case of QR decomposition derivative: ",
                                     ShapedArray{s, primals[0].dtype()}.str(), " with full_matrices=",
                                     params.GetBool("full_matrices") ? "True" : "False",
                                     " (the derivative needs m >= n, and m == n for full_matrices)"));
  }
  Arrays qr_out = Bind(kQr, primals, params);
  const Array &q = qr_out[0], &r = qr_out[1];
  const Array dx_rinv = triangular_solve(r, tangents[0]);  // dx r^-1 (right side, upper)
  const Array qt_dx_rinv = Dot(H(q), dx_rinv);
  const Array lower = jnp::tril(qt_dx_rinv, -1);
  const Array dom = lower - H(lower);  // skew-symmetric
  const Array dq = Dot(q, dom - qt_dx_rinv) + dx_rinv;
  const Array dr = Dot(qt_dx_rinv - dom, r);
  return JvpResult{std::move(qr_out), {dq, dr}};
}

// eigh_jvp: dw = diag(V^T da V), dV = V (F o V^T da V) with F_ij = 1 / (w_j - w_i) off the
// diagonal and 0 on it.
JvpResult EighJvp(absl::Span<const Array> primals, absl::Span<const Array> tangents, const ParamMap& params) {
  if (!tangents[0].defined()) return NoTangents(kEigh, primals, params, 2);
  Arrays out = Bind(kEigh, primals, params);
  const Array &v = out[0], &w = out[1];
  const int64_t n = w.shape().back();
  const Array eye = Eye(n, w.dtype());
  const Array fmat = integer_pow(eye + jnp::expand_dims(w, -2) - jnp::expand_dims(w, -1), -1) - eye;
  const Array vdag_adot_v = Dot(Dot(H(v), tangents[0]), v);
  const Array dv = Dot(v, fmat * vdag_adot_v);
  const Array dw = jnp::diagonal(vdag_adot_v, 0, -2, -1);
  return JvpResult{std::move(out), {dv, dw}};
}

// svd_jvp (reduced factors; full ones only where they coincide, square matrices).
JvpResult SvdJvp(absl::Span<const Array> primals, absl::Span<const Array> tangents, const ParamMap& params) {
  const bool compute_uv = params.GetBool("compute_uv"), full = params.GetBool("full_matrices");
  if (!tangents[0].defined()) return NoTangents(kSvd, primals, params, compute_uv ? 3 : 1);
  const Array& a = primals[0];
  const Shape& shape = a.shape();
  const int64_t m = shape[shape.size() - 2], n = shape.back();
  if (compute_uv && full && m != n) {
    throw NotImplementedError(StrCat("[svd] Singular value decomposition JVP not implemented for full matrices (",
                                     ShapedArray{shape, a.dtype()}.str(), "; pass full_matrices=false)"));
  }
  ParamMap reduced = params;
  reduced.Set("full_matrices", false);
  reduced.Set("compute_uv", true);
  Arrays out = Bind(kSvd, primals, reduced);
  const Array &s = out[0], &u = out[1], &vt = out[2];
  const Array& da = tangents[0];
  const Array ut = H(u), v = H(vt);
  const Array s_dim = jnp::expand_dims(s, -2);  // [..., 1, k]
  const Array ds_mat = Dot(Dot(ut, da), v);
  const Array ds = jnp::diagonal(ds_mat, 0, -2, -1);
  if (!compute_uv) return JvpResult{{s}, {ds}};
  const int64_t k = s.shape().back();
  const Array s_diffs = (s_dim + H(s_dim)) * (s_dim - H(s_dim));
  const Array eye = Eye(k, s.dtype());
  const Array f = 1 / (s_diffs + eye) - eye;
  const Array dss = s_dim * ds_mat;     // dS diag(s)
  const Array sds = H(s_dim) * ds_mat;  // diag(s) dS
  const Array s_zeros = convert_element_type(eq(s, jnp::zeros({}, s.dtype())), s.dtype());
  const Array s_inv = 1 / (s + s_zeros) - s_zeros;
  const Array s_inv_mat = jnp::expand_dims(s_inv, -1) * eye;
  const Array dudv_diag = 0.5 * (ds_mat - H(ds_mat)) * s_inv_mat;
  Array du = Dot(u, f * (dss + H(dss)) + dudv_diag);
  Array dv = Dot(v, f * (sds + H(sds)));
  if (m > n) {
    const Array dav = Dot(da, v);
    du = du + (dav - Dot(u, Dot(ut, dav))) / s_dim;
  }
  if (n > m) {
    const Array dahu = Dot(H(da), u);
    dv = dv + (dahu - Dot(v, Dot(vt, dahu))) / s_dim;
  }
  return JvpResult{std::move(out), {ds, du, H(dv)}};
}

// Every operand's batch dim to the front (unbatched ones broadcast); the ops read the last
// two dims, so the batch is one more leading dim of every output.
BatchRule BatchLeading(Primitive p) {
  return [p](absl::Span<const Array> args, absl::Span<const int64_t> dims, int64_t n, const ParamMap& params) {
    Arrays moved;
    for (size_t i = 0; i < args.size(); ++i) moved.push_back(MoveBatchToFront(args[i], dims[i], n));
    Arrays out = Bind(p, moved, params);
    std::vector<int64_t> out_dims(out.size(), 0);
    return BatchResult{std::move(out), std::move(out_dims)};
  };
}

}  // namespace

void RegisterLinalgRules(Registry& r) {
  constexpr const char* kNotLinear = "not linear: reverse mode transposes the linear ops of its jvp";
  const std::pair<Primitive, JvpRule> jvps[] = {{kCholesky, CholeskyJvp}, {kTriangularSolve, TriangularSolveJvp},
                                                 {kLu, LuJvp},             {kQr, QrJvp},
                                                 {kEigh, EighJvp},         {kSvd, SvdJvp}};
  for (const auto& [p, jvp] : jvps) {
    PrimitiveRules& rules = r.Define(p);
    rules.jvp = jvp;
    rules.batch = BatchLeading(p);
    if (p != kTriangularSolve) rules.unsupported["transpose"] = kNotLinear;
  }
  r.Define(kTriangularSolve).transpose = TriangularSolveTranspose;
}

}  // namespace jx::lax::linalg::internal
