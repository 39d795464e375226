// Differential test over random programs: a seeded generator writes a few hundred small
// programs (elementwise math, comparisons and selects, reductions broadcast back, cumulative
// sums, dot, pad + slice, reverse, reshape, transpose) and each must give the same answer
// eagerly, under jit, under vmap (against a loop of eager calls) and under grad (eager grad
// against jit(grad), and for smooth programs against central differences in float64). Sizes
// run through 1, 3, 4, 5 and 7 per side, so every op sees elements in vector packets and in
// scalar tails: one op's value must not depend on where an element sits.
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <jx/jx.h>

namespace jx::random_program_test {
namespace {

namespace jnp = jx::numpy;

enum class OpKind {
  kSin, kTanh, kGaussian, kLogSquare, kSquare, kAbs,             // unary
  kAdd, kMul, kSub, kMax, kSelectGreater,                        // binary
  kCumsum, kRowSumBroadcast, kDot, kPadSlice, kRev, kFlatCumsum, kTranspose,
  kStep,  // (a > 0) as 0/1: turns a flushed-vs-denormal difference into 1
};
constexpr int kNumOps = static_cast<int>(OpKind::kStep) + 1;

// Non-smooth ops: no finite-difference check for programs using them.
bool IsSmooth(OpKind k) {
  return k != OpKind::kAbs && k != OpKind::kMax && k != OpKind::kSelectGreater && k != OpKind::kStep;
}

struct Step {
  OpKind op;
  int a, b;   // operand values (indices into the values computed so far)
  int axis;   // 0 or 1
  bool flag;  // reverse (cumsum) / which side (pad)
};

struct Program {
  int n;  // values are [n, n]
  std::vector<Step> steps;
  bool smooth = true;
  std::string ToString() const {
    std::string s = "n=" + std::to_string(n) + ":";
    for (const Step& st : steps) {
      s += " op" + std::to_string(static_cast<int>(st.op)) + "(" + std::to_string(st.a) + "," +
           std::to_string(st.b) + ",ax" + std::to_string(st.axis) + (st.flag ? ",r" : "") + ")";
    }
    return s;
  }
};

Program RandomProgram(std::mt19937_64& rng) {
  static constexpr int kSizes[] = {1, 3, 4, 5, 7};
  Program p;
  p.n = kSizes[rng() % 5];
  const int length = 2 + static_cast<int>(rng() % 7);
  for (int i = 0; i < length; ++i) {
    Step s;
    s.op = static_cast<OpKind>(rng() % kNumOps);
    // Tiny Gaussians are where exp's special values live: test them against zero often.
    if (i > 0 && p.steps.back().op == OpKind::kGaussian && rng() % 2 == 0) s.op = OpKind::kStep;
    const int live = i + 1;  // x plus the steps so far
    s.a = live - 1 - static_cast<int>(rng() % std::min(live, 2));  // mostly the latest value
    s.b = static_cast<int>(rng() % live);
    s.axis = static_cast<int>(rng() % 2);
    s.flag = rng() % 2 == 0;
    p.smooth = p.smooth && IsSmooth(s.op);
    p.steps.push_back(s);
  }
  return p;
}

// The program on one [n, n] value, w a constant [n, n] matrix. Returns the last value.
Array RunProgram(const Program& p, const Array& x, const Array& w) {
  std::vector<Array> v = {x};
  const int64_t n = p.n;
  for (const Step& s : p.steps) {
    const Array& a = v[s.a];
    const Array& b = v[s.b];
    Array r;
    switch (s.op) {
      case OpKind::kSin: r = jnp::sin(a); break;
      case OpKind::kTanh: r = jnp::tanh(a); break;
      // exp(-8 a^2): |a| in [3.3, 3.6] gives denormal results, larger |a| zeros.
      case OpKind::kGaussian: r = jnp::exp(-(a * a) * 8.0); break;
      case OpKind::kLogSquare: r = jnp::log1p(a * a); break;
      case OpKind::kSquare: r = a * a * 0.5; break;
      case OpKind::kAbs: r = jnp::abs(a); break;
      case OpKind::kAdd: r = a + b; break;
      case OpKind::kMul: r = a * b; break;
      case OpKind::kSub: r = a - b; break;
      case OpKind::kMax: r = lax::max(a, b); break;
      case OpKind::kSelectGreater: r = lax::select(a > b, a, b * 0.5); break;
      case OpKind::kCumsum: r = lax::cumsum(a, s.axis, s.flag); break;
      case OpKind::kRowSumBroadcast:
        r = lax::broadcast_in_dim(lax::reduce_sum(a, {s.axis}), {n, n}, {1 - s.axis}) - a;
        break;
      case OpKind::kDot: r = jnp::matmul(a, w); break;
      case OpKind::kPadSlice: {
        const Array padded = lax::pad(a, Array(0.25).astype(a.dtype()), {{{1, 1, 0}}, {{1, 1, 0}}});
        const int64_t o = s.flag ? 2 : 0;
        r = lax::slice(padded, {o, 2 - o}, {o + n, 2 - o + n});
        break;
      }
      case OpKind::kRev: r = lax::rev(a, {s.axis}); break;
      case OpKind::kFlatCumsum: r = lax::cumsum(a.reshape({n * n}), 0, s.flag).reshape({n, n}) * 0.25; break;
      case OpKind::kTranspose: r = lax::transpose(a, {1, 0}); break;
      case OpKind::kStep: r = lax::convert_element_type(a > 0.0, a.dtype()); break;
    }
    v.push_back(r);
  }
  return v.back();
}

void ExpectClose(const Array& got, const Array& want, double tol, const std::string& what) {
  ASSERT_EQ(got.shape(), want.shape()) << what;
  const std::vector<double> g = got.to_vector<double>(), w = want.to_vector<double>();
  double scale = 1;
  for (double e : w) scale = std::max(scale, std::abs(e));
  for (size_t i = 0; i < g.size(); ++i) {
    if (std::isnan(g[i]) && std::isnan(w[i])) continue;
    ASSERT_LE(std::abs(g[i] - w[i]), tol * scale) << what << " element " << i << ": " << g[i] << " vs " << w[i];
  }
}

TEST(RandomProgramTest, EagerJitVmapAndGradAgree) {
  std::mt19937_64 rng(20261125);
  constexpr int kPrograms = 500;
  constexpr int kBatch = 3;
  int checked_fd = 0;
  for (int i = 0; i < kPrograms; ++i) {
    const Program p = RandomProgram(rng);
    const std::string where = "program " + std::to_string(i) + " " + p.ToString();
    const int64_t n = p.n;
    const uint32_t seed = static_cast<uint32_t>(rng());
    const Array xs = jx::random::normal(jx::random::key(seed), {kBatch, n, n}) * 3.0;
    const Array w = jx::random::normal(jx::random::key(seed + 1), {n, n}) * (1.0 / n);
    auto f = [&p, &w](const Array& x) { return RunProgram(p, x, w); };
    auto loss = [&p, &w](const Array& x) { return jnp::sum(RunProgram(p, x, w)); };
    const Array x0 = xs[0];

    // jit vs eager (fusion may reorder sums: close, not bitwise).
    const Array eager = f(x0);
    ExpectClose(jx::jit(f)(x0), eager, 1e-5, where + " jit");
    // vmap vs a loop of eager calls.
    const Array batched = jx::vmap(f)(xs);
    for (int b = 0; b < kBatch; ++b) ExpectClose(batched[b], f(xs[b]), 1e-5, where + " vmap[" + std::to_string(b) + "]");
    // grad: eager vs jit(grad).
    const Array g = jx::grad(loss)(x0);
    ExpectClose(jx::jit(jx::grad(loss))(x0), g, 1e-4, where + " jit(grad)");
    // Smooth programs: the float64 gradient against central differences along a direction.
    if (p.smooth) {
      const Array x64 = x0.astype(float64), w64 = w.astype(float64);
      auto loss64 = [&p, &w64](const Array& x) { return jnp::sum(RunProgram(p, x, w64)); };
      const Array t = jx::random::normal(jx::random::key(seed + 2), {n, n}, float64);
      const double eps = 1e-6;
      const double fd = (loss64(x64 + t * eps).item<double>() - loss64(x64 - t * eps).item<double>()) / (2 * eps);
      const double ad = jnp::sum(jx::grad(loss64)(x64) * t).item<double>();
      EXPECT_NEAR(ad, fd, 1e-5 * std::max(1.0, std::abs(fd))) << where << " grad vs central differences";
      ++checked_fd;
    }
    if (HasFailure()) break;  // one program's report is enough
  }
  EXPECT_GT(checked_fd, kPrograms / 10);
}

}  // namespace
}  // namespace jx::random_program_test
