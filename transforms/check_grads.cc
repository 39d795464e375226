#include "jx/transforms/check_grads.h"

#include <algorithm>
#include <cmath>
#include <random>

#include "jx/core/errors.h"
#include "jx/core/str_util.h"
#include "jx/transforms/jvp.h"

namespace jx {
namespace {

// Host-side helpers: check_grads runs on concrete values, so the arithmetic of the check
// itself is done in float64 on the host, independent of the kernels being checked.
Array FromDoubles(const std::vector<double>& v, const ShapedArray& like) {
  Array out = Array::Empty(ShapedArray{like.shape, like.dtype});
  for (size_t i = 0; i < v.size(); ++i) StoreFromDouble(like.dtype, out.mutable_data(), static_cast<int64_t>(i), v[i]);
  return out;
}

Array RandomLike(const Array& x, std::mt19937_64& rng) {
  std::normal_distribution<double> dist;
  std::vector<double> v(static_cast<size_t>(x.size()));
  for (double& e : v) e = dist(rng);
  return FromDoubles(v, x.aval());
}

// x + s * t, elementwise.
Array Axpy(const Array& x, double s, const Array& t) {
  std::vector<double> a = x.to_vector<double>(), b = t.to_vector<double>();
  for (size_t i = 0; i < a.size(); ++i) a[i] += s * b[i];
  return FromDoubles(a, x.aval());
}

double Inner(absl::Span<const Array> a, absl::Span<const Array> b) {
  double s = 0;
  for (size_t k = 0; k < a.size(); ++k) {
    if (!a[k].defined() || !b[k].defined()) continue;
    const std::vector<double> x = a[k].to_vector<double>(), y = b[k].to_vector<double>();
    for (size_t i = 0; i < x.size(); ++i) s += x[i] * y[i];
  }
  return s;
}

double DefaultTol(DType d) {
  switch (d) {
    case DType::kFloat16: return 1e-2;
    case DType::kBFloat16: return 1e-1;
    case DType::kFloat32: return 2e-3;
    default: return 1e-5;
  }
}

struct Tol {
  double atol, rtol, eps;
};

Tol TolFor(absl::Span<const Array> arrays, const CheckGradsOptions& o) {
  double tol = 0;
  bool low_precision = false;
  for (const Array& a : arrays) {
    tol = std::max(tol, DefaultTol(a.dtype()));
    low_precision = low_precision || a.dtype() == DType::kFloat16 || a.dtype() == DType::kBFloat16;
  }
  return Tol{o.atol.value_or(tol), o.rtol.value_or(tol), o.eps.value_or(low_precision ? 1e-2 : 1e-4)};
}

void ExpectClose(absl::Span<const Array> got, absl::Span<const Array> want, const Tol& tol, const std::string& what) {
  for (size_t k = 0; k < got.size(); ++k) {
    if (!want[k].defined() && !got[k].defined()) continue;
    const std::vector<double> g = got[k].defined() ? got[k].to_vector<double>() : std::vector<double>(want[k].size(), 0.0);
    const std::vector<double> w = want[k].defined() ? want[k].to_vector<double>() : std::vector<double>(g.size(), 0.0);
    for (size_t i = 0; i < g.size(); ++i) {
      if (!(std::fabs(g[i] - w[i]) <= tol.atol + tol.rtol * std::fabs(w[i]))) {
        throw ValueError(StrCat("check_grads: ", what, " output ", k, " element ", i, ": got ", g[i], ", expected ", w[i],
                                " (atol ", tol.atol, ", rtol ", tol.rtol, ")"));
      }
    }
  }
}

// (fn(x + eps t) - fn(x - eps t)) / 2 eps: the directional derivative by central differences
// (JAX's numerical_jvp), as float64 arrays.
Arrays NumericalJvp(const ArraysFn& fn, absl::Span<const Array> primals, absl::Span<const Array> tangents, double eps) {
  Arrays plus, minus;
  for (size_t i = 0; i < primals.size(); ++i) {
    plus.push_back(Axpy(primals[i], eps, tangents[i]));
    minus.push_back(Axpy(primals[i], -eps, tangents[i]));
  }
  const Arrays fp = fn(plus), fm = fn(minus);
  Arrays fd;
  for (size_t k = 0; k < fp.size(); ++k) {
    // The difference is rounded to the output's dtype, as the function's own values are.
    std::vector<double> v = Axpy(fp[k], -1.0, fm[k]).to_vector<double>();
    for (double& e : v) e /= 2 * eps;
    fd.push_back(FromDoubles(v, ShapedArray{fp[k].shape(), DType::kFloat64}));
  }
  return fd;
}

// The derivative's primal output must be the function's own output.
void ExpectPrimalOutputs(absl::Span<const Array> got, absl::Span<const Array> want, const Tol& tol,
                         const std::string& what) {
  if (got.size() != want.size()) {
    throw ValueError(StrCat("check_grads: ", what, " returned ", got.size(), " outputs but the function returns ",
                            want.size()));
  }
  ExpectClose(got, want, tol, what);
}

void CheckJvp(const ArraysFn& fn, absl::Span<const Array> primals, const CheckGradsOptions& o, std::mt19937_64& rng,
              int order) {
  Arrays tangents;
  for (const Array& x : primals) tangents.push_back(RandomLike(x, rng));
  const Tol tol = TolFor(primals, o);
  auto [outs, touts] = JvpCall(fn, primals, tangents);
  ExpectPrimalOutputs(outs, fn(primals), tol, StrCat("order-", order, " jvp's primal output vs the function's:"));
  ExpectClose(touts, NumericalJvp(fn, primals, tangents, tol.eps), tol,
              StrCat("order-", order, " jvp vs finite differences:"));
}

// Reverse mode against finite differences, as JAX's check_vjp: for random t and ct,
// <ct, J t> (J t by central differences) must equal <J^T ct, t> (J^T ct from vjp). Forward
// mode is not used, so functions with only a reverse rule (custom_vjp) are checked too.
void CheckVjp(const ArraysFn& fn, absl::Span<const Array> primals, const CheckGradsOptions& o, std::mt19937_64& rng,
              int order) {
  Arrays tangents;
  for (const Array& x : primals) tangents.push_back(RandomLike(x, rng));
  Tol tol = TolFor(primals, o);
  auto [outs, pullback] = VjpCall(fn, primals);
  ExpectPrimalOutputs(outs, fn(primals), tol, StrCat("order-", order, " vjp's primal output vs the function's:"));
  const Arrays touts = NumericalJvp(fn, primals, tangents, tol.eps);
  Arrays cts;
  for (const Array& y : outs) cts.push_back(IsFloating(y.dtype()) ? RandomLike(y, rng) : Array());
  const Arrays grads = pullback(cts);
  const double lhs = Inner(cts, touts), rhs = Inner(grads, tangents);
  int64_t in_size = 0, out_size = 0;
  for (const Array& x : primals) in_size += x.size();
  for (const Array& y : outs) out_size += y.size();
  // Each inner product sums rounded terms (over the outputs on one side, the inputs on the
  // other): scale the tolerance with the square root of the longer sum.
  const double scale = std::sqrt(static_cast<double>(std::max<int64_t>({in_size, out_size, 1})));
  if (!(std::fabs(lhs - rhs) <= scale * (tol.atol + tol.rtol * std::fabs(lhs)))) {
    throw ValueError(StrCat("check_grads: order-", order, " vjp fails the dot-product test: <ct, J t> = ", lhs,
                            " (J t by finite differences) but <J^T ct, t> = ", rhs, " (J^T ct by vjp) (atol ", tol.atol,
                            ", rtol ", tol.rtol, ", scaled by ", scale, ")"));
  }
}

void Check(const ArraysFn& fn, absl::Span<const Array> primals, const CheckGradsOptions& o, std::mt19937_64& rng,
           int order) {
  if (o.fwd) CheckJvp(fn, primals, o, rng, order);
  if (o.rev) CheckVjp(fn, primals, o, rng, order);
  if (order >= o.order) return;
  // Recurse on the derivative functions: t -> J(x) t (as a function of x and t), and
  // ct -> J(x)^T ct (as a function of x and ct), as JAX's check_grads does.
  const size_t n = primals.size();
  if (o.fwd) {
    Arrays args(primals.begin(), primals.end());
    std::mt19937_64 r2(rng());
    for (const Array& x : primals) args.push_back(RandomLike(x, r2));
    ArraysFn jvp_fn = [fn, n](absl::Span<const Array> a) {
      auto [outs, touts] = JvpCall(fn, a.subspan(0, n), a.subspan(n));
      for (size_t k = 0; k < touts.size(); ++k) {
        if (!touts[k].defined()) touts[k] = Axpy(outs[k], -1.0, outs[k]);
      }
      return touts;
    };
    Check(jvp_fn, args, o, rng, order + 1);
  }
  if (o.rev) {
    Arrays outs = fn(primals);
    Arrays args(primals.begin(), primals.end());
    for (const Array& y : outs) args.push_back(RandomLike(y, rng));
    const size_t m = outs.size();
    ArraysFn vjp_fn = [fn, n, m](absl::Span<const Array> a) {
      auto [ys, pullback] = VjpCall(fn, a.subspan(0, n));
      return pullback(a.subspan(n, m));
    };
    Check(vjp_fn, args, o, rng, order + 1);
  }
}

}  // namespace

void CheckGradsFlat(const ArraysFn& fn, absl::Span<const Array> primals, const CheckGradsOptions& options) {
  for (size_t i = 0; i < primals.size(); ++i) {
    if (!IsFloating(primals[i].dtype())) {
      throw TypeError(StrCat("check_grads: argument leaf ", i, " has type ", primals[i].aval().str(),
                             "; check_grads needs floating-point inputs"));
    }
  }
  std::mt19937_64 rng(options.seed);
  Check(fn, primals, options, rng, 1);
}

}  // namespace jx
