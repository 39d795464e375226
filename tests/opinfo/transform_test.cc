// The transform columns of the opinfo suite, over the same records and samples as the eager
// column: jvp vs central finite differences (float64), the vjp/jvp dot-product identity
// <ct, J t> = <J^T ct, t> (float64), and vmap vs a loop over every in_axes combination.
#include <cmath>
#include <functional>
#include <set>

#include <gtest/gtest.h>

#include "jx/transforms/ad.h"
#include "jx/transforms/jacobian.h"
#include "jx/transforms/jvp.h"
#include "jx/transforms/vmap.h"
#include "opinfo.h"

namespace jx::opinfo::transform_test {
namespace {

namespace jnp = jx::numpy;

std::function<Arrays(absl::Span<const Array>)> AsFn(const Sample& s) {
  return [&s](absl::Span<const Array> args) {
    std::vector<Array> out = s.op(std::vector<Array>(args.begin(), args.end()));
    return Arrays(out.begin(), out.end());
  };
}

// Inner product of two float arrays of one shape, in float64.
double Dot(const Array& a, const Array& b) {
  const std::vector<double> x = a.to_vector<double>(), y = b.to_vector<double>();
  double s = 0;
  for (size_t i = 0; i < x.size(); ++i) s += x[i] * y[i];
  return s;
}

double MaxAbs(const Array& a) {
  double m = 0;
  for (double v : a.to_vector<double>()) m = std::max(m, std::fabs(v));
  return m;
}

// Samples small enough for the transform columns (the large ones test the parallel path).
bool SmallSample(const Sample& s) {
  for (const Array& a : s.args) {
    if (a.size() > 4096) return false;
  }
  return true;
}

class OpInfoTransformTest : public ::testing::TestWithParam<std::string> {};

// jvp against central differences: (f(x + eps t) - f(x - eps t)) / (2 eps).
TEST_P(OpInfoTransformTest, JvpMatchesFiniteDifferences) {
  const OpInfo& info = FindOpInfo(GetParam());
  if (!info.differentiable || std::find(info.dtypes.begin(), info.dtypes.end(), float64) == info.dtypes.end()) {
    GTEST_SKIP() << info.name << " has no float64 differentiable samples";
  }
  constexpr double kEps = 1e-6;
  std::mt19937_64 rng(7);
  for (const Sample& s : SamplesFor(info, float64)) {
    if (!SmallSample(s) || !s.derivatives_defined) continue;
    const std::string where = StrCat(info.name, " ", s.description);
    Arrays tangents, plus, minus;
    for (const Array& x : s.args) {
      if (!IsFloating(x.dtype())) {
        tangents.push_back(Array());
        plus.push_back(x);
        minus.push_back(x);
        continue;
      }
      Array t = RandomArray(rng, x.shape(), x.dtype(), -1, 1);
      tangents.push_back(t);
      plus.push_back(jnp::add(x, jnp::multiply(t, kEps)));
      minus.push_back(jnp::subtract(x, jnp::multiply(t, kEps)));
    }
    std::pair<Arrays, Arrays> jvp;
    try {
      jvp = JvpCall(AsFn(s), s.args, tangents);
    } catch (const std::exception& e) {
      ADD_FAILURE() << where << " jvp threw: " << e.what();
      continue;
    }
    const std::vector<Array> fp = s.op(std::vector<Array>(plus.begin(), plus.end()));
    const std::vector<Array> fm = s.op(std::vector<Array>(minus.begin(), minus.end()));
    const std::vector<Array> f0 = s.op(s.args);
    ASSERT_EQ(jvp.first.size(), f0.size()) << where;
    for (size_t k = 0; k < f0.size(); ++k) {
      EXPECT_EQ(jvp.first[k].to_vector<double>(), f0[k].to_vector<double>()) << where << " primal output " << k;
      if (!IsFloating(f0[k].dtype())) continue;
      const std::vector<double> a = fp[k].to_vector<double>(), b = fm[k].to_vector<double>();
      const std::vector<double> got =
          jvp.second[k].defined() ? jvp.second[k].to_vector<double>() : std::vector<double>(a.size(), 0.0);
      ASSERT_EQ(got.size(), a.size()) << where;
      const double scale = std::max(1.0, MaxAbs(f0[k]));
      int reported = 0;
      for (size_t i = 0; i < a.size() && reported < 3; ++i) {
        const double fd = (a[i] - b[i]) / (2 * kEps);
        if (!std::isfinite(fd) && !std::isfinite(got[i])) continue;
        if (!(std::fabs(got[i] - fd) <= 1e-5 * (scale + std::fabs(fd)))) {
          ADD_FAILURE() << where << " output " << k << " element " << i << ": jvp " << got[i] << " vs finite "
                        << "differences " << fd;
          ++reported;
        }
      }
    }
  }
}

// Reverse mode against forward mode: <ct, J t> == <J^T ct, t>.
TEST_P(OpInfoTransformTest, VjpMatchesJvpByDotProduct) {
  const OpInfo& info = FindOpInfo(GetParam());
  if (!info.differentiable || std::find(info.dtypes.begin(), info.dtypes.end(), float64) == info.dtypes.end()) {
    GTEST_SKIP() << info.name << " has no float64 differentiable samples";
  }
  std::mt19937_64 rng(11);
  for (const Sample& s : SamplesFor(info, float64)) {
    if (!SmallSample(s) || !s.derivatives_defined) continue;
    const std::string where = StrCat(info.name, " ", s.description);
    Arrays tangents;
    for (const Array& x : s.args) {
      tangents.push_back(IsFloating(x.dtype()) ? RandomArray(rng, x.shape(), x.dtype(), -1, 1) : Array());
    }
    try {
      auto [outs, jt] = JvpCall(AsFn(s), s.args, tangents);
      auto [outs2, pullback] = VjpCall(AsFn(s), s.args);
      Arrays cts;
      double lhs = 0;
      for (size_t k = 0; k < outs.size(); ++k) {
        if (!IsFloating(outs[k].dtype())) {
          cts.push_back(Array());
          continue;
        }
        Array ct = RandomArray(rng, outs[k].shape(), outs[k].dtype(), -1, 1);
        if (jt[k].defined()) lhs += Dot(ct, jt[k]);
        cts.push_back(ct);
      }
      const Arrays grads = pullback(cts);
      ASSERT_EQ(grads.size(), s.args.size()) << where;
      double rhs = 0;
      for (size_t i = 0; i < s.args.size(); ++i) {
        if (!tangents[i].defined()) continue;
        ASSERT_EQ(grads[i].shape(), s.args[i].shape()) << where << " cotangent " << i;
        rhs += Dot(grads[i], tangents[i]);
      }
      EXPECT_NEAR(lhs, rhs, 1e-9 * std::max({1.0, std::fabs(lhs), std::fabs(rhs)})) << where;
    } catch (const std::exception& e) {
      ADD_FAILURE() << where << " threw: " << e.what();
    }
  }
}

// The b-th of three distinct variants of x with the same set of values (so sample
// constraints such as index ranges and domains still hold): x, reversed, rolled by one.
Array Variant(const Array& x, int b) {
  if (b == 0 || x.size() <= 1) return x;
  Array flat = jnp::ravel(x);
  flat = b == 1 ? jnp::flip(flat) : jnp::roll(flat, 1);
  return flat.reshape(x.shape());
}

// in_axes combinations: every assignment of {0, last, not mapped} for up to three
// arguments; beyond that all-0, all-last and each argument alone mapped or unmapped.
std::vector<std::vector<int64_t>> InAxesCombos(size_t n) {
  std::vector<std::vector<int64_t>> combos;
  const std::vector<int64_t> choices = {0, -1, kNotMapped};
  if (n <= 3) {
    size_t total = 1;
    for (size_t i = 0; i < n; ++i) total *= choices.size();
    for (size_t c = 0; c < total; ++c) {
      std::vector<int64_t> axes;
      size_t r = c;
      for (size_t i = 0; i < n; ++i, r /= choices.size()) axes.push_back(choices[r % choices.size()]);
      combos.push_back(axes);
    }
  } else {
    combos.push_back(std::vector<int64_t>(n, 0));
    combos.push_back(std::vector<int64_t>(n, -1));
    for (size_t i = 0; i < n; ++i) {
      std::vector<int64_t> only(n, kNotMapped), all_but(n, 0);
      only[i] = 0;
      all_but[i] = kNotMapped;
      combos.push_back(only);
      combos.push_back(all_but);
    }
  }
  return combos;
}

void ExpectSameValues(const Array& got, const Array& want, const Tolerance& tol, const std::string& where) {
  ASSERT_EQ(got.shape(), want.shape()) << where;
  ASSERT_EQ(got.dtype(), want.dtype()) << where;
  const std::vector<double> g = got.to_vector<double>(), w = want.to_vector<double>();
  for (size_t i = 0; i < g.size(); ++i) {
    if (std::isnan(g[i]) && std::isnan(w[i])) continue;
    if (g[i] == w[i]) continue;
    if (!(std::fabs(g[i] - w[i]) <= tol.atol + tol.rtol * std::fabs(w[i]))) {
      ADD_FAILURE() << where << " element " << i << ": vmap " << g[i] << " vs loop " << w[i];
      return;
    }
  }
}

TEST_P(OpInfoTransformTest, VmapMatchesLoop) {
  const OpInfo& info = FindOpInfo(GetParam());
  if (info.collective && !ShardedEagerOpsRun()) {
    GTEST_SKIP() << info.name << ": this column computes on the sharded outputs outside the shard_map, which "
                 << "needs eager ops on sharded arrays (the SPMD layer's handler, not installed here); "
                 << "tests/sharding/shard_map_transforms_test.cc covers vmap and grad of shard_map";
  }
  constexpr int kBatch = 3;
  for (DType d : info.dtypes) {
    int tested = 0;
    for (const Sample& s : SamplesFor(info, d)) {
      if (!SmallSample(s) || tested >= 4) continue;
      ++tested;
      for (const std::vector<int64_t>& axes : InAxesCombos(s.args.size())) {
        if (std::all_of(axes.begin(), axes.end(), [](int64_t a) { return a == kNotMapped; })) continue;
        std::string where = StrCat(info.name, " ", s.description, " in_axes=(");
        Arrays batched;
        for (size_t i = 0; i < s.args.size(); ++i) {
          StrAppend(&where, i ? ", " : "", axes[i] == kNotMapped ? "None" : StrCat(axes[i]));
          if (axes[i] == kNotMapped) {
            batched.push_back(s.args[i]);
            continue;
          }
          std::vector<Array> variants;
          for (int b = 0; b < kBatch; ++b) variants.push_back(Variant(s.args[i], b));
          batched.push_back(jnp::stack(variants, axes[i] == 0 ? 0 : s.args[i].ndim()));
        }
        where += ")";
        // The loop: example b sees variant b of every mapped argument, unmapped ones whole.
        std::vector<std::vector<Array>> want(kBatch);
        for (int b = 0; b < kBatch; ++b) {
          std::vector<Array> args;
          for (size_t i = 0; i < s.args.size(); ++i) {
            args.push_back(axes[i] == kNotMapped ? s.args[i] : Variant(s.args[i], b));
          }
          want[b] = s.op(args);
        }
        Arrays got;
        try {
          got = VmapCall(AsFn(s), batched, axes, {0});
        } catch (const std::exception& e) {
          ADD_FAILURE() << where << " threw: " << e.what();
          continue;
        }
        ASSERT_EQ(got.size(), want[0].size()) << where;
        for (size_t k = 0; k < got.size(); ++k) {
          for (int b = 0; b < kBatch; ++b) {
            ExpectSameValues(got[k][b], want[b][k], info.tolerance(want[b][k].dtype()),
                             StrCat(where, " output ", k, " example ", b));
          }
        }
      }
    }
  }
}

// Compositions on small float64 samples: jacfwd == jacrev; for a random scalarization s of
// the op, forward-over-reverse H v against central differences of grad s, reverse-over-
// reverse H v against forward-over-reverse, vmap(grad s) against a loop, and grad of a
// vmapped sum against the stacked per-example gradients.
TEST_P(OpInfoTransformTest, CompositionsAgree) {
  lax::RegisterAll();  // the flat entry points below bind transformation-level primitives directly
  const OpInfo& info = FindOpInfo(GetParam());
  if (info.collective && !ShardedEagerOpsRun()) {
    GTEST_SKIP() << info.name << ": this column computes on the sharded outputs outside the shard_map, which "
                 << "needs eager ops on sharded arrays (the SPMD layer's handler, not installed here); "
                 << "tests/sharding/shard_map_transforms_test.cc covers vmap and grad of shard_map";
  }
  if (!info.differentiable || std::find(info.dtypes.begin(), info.dtypes.end(), float64) == info.dtypes.end()) {
    GTEST_SKIP() << info.name << " has no float64 differentiable samples";
  }
  std::mt19937_64 rng(13);
  int tested = 0;
  for (const Sample& s : SamplesFor(info, float64)) {
    bool small = true, any_float = false;
    for (const Array& a : s.args) {
      small = small && a.size() <= 64;
      any_float = any_float || IsFloating(a.dtype());
    }
    if (!small || !any_float || !s.derivatives_defined || tested >= 3) continue;
    ++tested;
    const std::string where = StrCat(info.name, " ", s.description);
    // The op as a function of its float arguments (the others fixed).
    std::vector<size_t> float_args;
    Arrays x;
    for (size_t i = 0; i < s.args.size(); ++i) {
      if (IsFloating(s.args[i].dtype())) {
        float_args.push_back(i);
        x.push_back(s.args[i]);
      }
    }
    ArraysFn op = [&](absl::Span<const Array> fx) {
      std::vector<Array> args = s.args;
      for (size_t j = 0; j < float_args.size(); ++j) args[float_args[j]] = fx[j];
      std::vector<Array> out = s.op(args);
      Arrays floats;
      for (const Array& o : out) {
        if (IsFloating(o.dtype())) floats.push_back(o);
      }
      return floats;
    };
    try {
      const Arrays outs = op(x);
      if (outs.empty()) continue;
      // jacfwd == jacrev.
      const JacobianBlocks jf = JacfwdFlat(op, x), jr = JacrevFlat(op, x);
      for (size_t k = 0; k < jf.size(); ++k) {
        for (size_t i = 0; i < jf[k].size(); ++i) {
          const double scale = std::max(1.0, MaxAbs(jf[k][i]));
          const std::vector<double> a = jf[k][i].to_vector<double>(), b = jr[k][i].to_vector<double>();
          ASSERT_EQ(a.size(), b.size()) << where;
          for (size_t e = 0; e < a.size(); ++e) {
            if (std::isnan(a[e]) && std::isnan(b[e])) continue;
            ASSERT_NEAR(a[e], b[e], 1e-9 * scale) << where << " jacfwd vs jacrev block (" << k << ", " << i << ") element " << e;
          }
        }
      }
      // A scalarization s(x) = sum_k <w_k, f_k(x)> and its gradient.
      Arrays w;
      for (const Array& o : outs) w.push_back(RandomArray(rng, o.shape(), o.dtype(), -1, 1));
      ArraysFn scalar = [&](absl::Span<const Array> fx) {
        Arrays o = op(fx);
        Array total = Array::Scalar(0.0, float64);
        for (size_t k = 0; k < o.size(); ++k) total = jnp::add(total, jnp::sum(jnp::multiply(o[k], w[k])));
        return Arrays{total};
      };
      ArraysFn grad = [&](absl::Span<const Array> fx) {
        auto [value, pullback] = VjpCall(scalar, fx);
        Arrays g = pullback({Array::Scalar(1.0, float64)});
        for (size_t i = 0; i < g.size(); ++i) {
          if (!g[i].defined()) g[i] = jnp::zeros_like(fx[i]);
        }
        return g;
      };
      Arrays v;
      for (const Array& xi : x) v.push_back(RandomArray(rng, xi.shape(), xi.dtype(), -1, 1));
      // Forward-over-reverse vs central differences of the gradient.
      const Arrays hv = JvpCall(grad, x, v).second;
      constexpr double kEps = 1e-6;
      Arrays xp, xm;
      for (size_t i = 0; i < x.size(); ++i) {
        xp.push_back(jnp::add(x[i], jnp::multiply(v[i], kEps)));
        xm.push_back(jnp::subtract(x[i], jnp::multiply(v[i], kEps)));
      }
      const Arrays gp = grad(xp), gm = grad(xm);
      // Reverse-over-reverse: the Hessian is symmetric, so pulling v back through grad is H v.
      const Arrays hv_rev = VjpCall(grad, x).second(v);
      for (size_t i = 0; i < x.size(); ++i) {
        const std::vector<double> got = hv[i].defined() ? hv[i].to_vector<double>() : std::vector<double>(x[i].size(), 0.0);
        const std::vector<double> rev =
            hv_rev[i].defined() ? hv_rev[i].to_vector<double>() : std::vector<double>(x[i].size(), 0.0);
        const std::vector<double> a = gp[i].to_vector<double>(), b = gm[i].to_vector<double>();
        const double scale = std::max(1.0, MaxAbs(grad(x)[i]));
        for (size_t e = 0; e < got.size(); ++e) {
          const double fd = (a[e] - b[e]) / (2 * kEps);
          if (std::isfinite(fd) || std::isfinite(got[e])) {
            EXPECT_LE(std::fabs(got[e] - fd), 1e-5 * (scale + std::fabs(fd)))
                << where << " grad(grad): H v element " << e << " of input " << i << ": " << got[e] << " vs finite differences " << fd;
          }
          if (std::isfinite(got[e]) || std::isfinite(rev[e])) {
            EXPECT_LE(std::fabs(got[e] - rev[e]), 1e-9 * (scale + std::fabs(got[e])))
                << where << " H v forward-over-reverse " << got[e] << " vs reverse-over-reverse " << rev[e];
          }
        }
      }
      // vmap(grad) over three variants vs a loop; grad of the vmapped sum vs stacked grads.
      constexpr int kBatch = 3;
      Arrays stacked;
      std::vector<Arrays> examples(kBatch);
      for (size_t i = 0; i < x.size(); ++i) {
        std::vector<Array> variants;
        for (int b = 0; b < kBatch; ++b) {
          variants.push_back(Variant(x[i], b));
          examples[b].push_back(variants.back());
        }
        stacked.push_back(jnp::stack(variants, 0));
      }
      const Arrays vg = VmapCall(grad, stacked, std::vector<int64_t>(x.size(), 0), {0});
      ArraysFn summed = [&](absl::Span<const Array> xs) {
        return Arrays{jnp::sum(VmapCall(scalar, xs, std::vector<int64_t>(x.size(), 0), {0})[0])};
      };
      const Arrays gs = VjpCall(summed, stacked).second({Array::Scalar(1.0, float64)});
      for (int b = 0; b < kBatch; ++b) {
        const Arrays want = grad(examples[b]);
        for (size_t i = 0; i < x.size(); ++i) {
          ExpectSameValues(vg[i][b], want[i], Tolerance{1e-12, 1e-12}, StrCat(where, " vmap(grad) example ", b));
          ExpectSameValues(gs[i][b], want[i], Tolerance{1e-12, 1e-12}, StrCat(where, " grad(vmap) example ", b));
        }
      }
    } catch (const std::exception& e) {
      ADD_FAILURE() << where << " threw: " << e.what();
    }
  }
}

INSTANTIATE_TEST_SUITE_P(AllOps, OpInfoTransformTest, ::testing::ValuesIn(AllOpInfoNames()),
                         [](const ::testing::TestParamInfo<std::string>& p) { return p.param; });

}  // namespace
}  // namespace jx::opinfo::transform_test
