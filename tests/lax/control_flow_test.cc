// cond, switch_, while_loop, fori_loop and scan: eager values, their jaxprs, and every
// transformation through them (jvp vs finite differences, reverse mode, vmap vs a loop).
#include "jx/lax/control_flow.h"
#include "jx/transforms/ad.h"

#include <cmath>
#include <random>

#include <gtest/gtest.h>
#include <jx/jx.h>

namespace jx::control_flow_test {
namespace {

namespace jnp = jx::numpy;
namespace lax = jx::lax;

Array F64(std::vector<double> v) { return jnp::array(v).astype(float64); }

// Example b of a batch (leading axis).
Array At(const Array& x, int64_t b) {
  std::vector<int64_t> start(static_cast<size_t>(x.ndim()), 0), limit(x.shape().begin(), x.shape().end());
  start[0] = b;
  limit[0] = b + 1;
  return lax::reshape(lax::slice(x, start, limit), Shape(x.shape().begin() + 1, x.shape().end()));
}

TEST(CondTest, PicksTheBranchAndTakesPytreeOperands) {
  auto f = [](const Array& p, const Array& x) {
    return lax::cond(
        p, [](const Array& v, const std::pair<Array, Array>& w) { return lax::mul(v, w.first); },
        [](const Array& v, const std::pair<Array, Array>& w) { return lax::sub(v, w.second); }, x,
        std::pair{F64({2.0}), F64({1.0})});
  };
  EXPECT_EQ(f(Array(true), F64({3.0})).to_vector<double>(), std::vector<double>{6.0});
  EXPECT_EQ(f(Array(false), F64({3.0})).to_vector<double>(), std::vector<double>{2.0});
  // Non-bool predicates count as true when nonzero.
  EXPECT_EQ(f(Array::Scalar(-2, int32), F64({3.0})).to_vector<double>(), std::vector<double>{6.0});
}

TEST(CondTest, SwitchClampsTheIndex) {
  std::vector<std::function<Array(const Array&)>> branches = {
      [](const Array& x) { return lax::add(x, F64({1.0})); },
      [](const Array& x) { return lax::add(x, F64({2.0})); },
      [](const Array& x) { return lax::add(x, F64({3.0})); }};
  for (auto [i, want] : std::vector<std::pair<int, double>>{{-5, 1}, {0, 1}, {1, 2}, {2, 3}, {7, 3}}) {
    EXPECT_EQ(lax::switch_(Array::Scalar(i, int32), branches, F64({0.0})).item<double>(), want) << i;
  }
}

TEST(CondTest, JaxprCarriesTheBranchesAndHoistsClosures) {
  Array w = F64({2.0, 3.0});
  auto f = [&](const Array& p, const Array& x) {
    return lax::cond(p, [&](const Array& v) { return lax::mul(v, w); }, [](const Array& v) { return lax::neg(v); }, x);
  };
  ClosedJaxpr j = make_jaxpr(f)(Array(true), F64({1.0, 1.0}));
  const std::string text = j.ToString();
  EXPECT_NE(text.find("cond["), std::string::npos) << text;
  EXPECT_NE(text.find("branches=("), std::string::npos) << text;
  EXPECT_NE(text.find("neg"), std::string::npos) << text;
  j.jaxpr->TypeCheck();
}

TEST(CondTest, BranchesMustAgree) {
  auto bad = [](const Array& p, const Array& x) {
    return lax::cond(p, [](const Array& v) { return v; }, [](const Array& v) { return lax::reduce_sum(v, {0}); }, x);
  };
  try {
    bad(Array(true), F64({1.0, 2.0}));
    FAIL() << "expected TypeError";
  } catch (const TypeError& e) {
    EXPECT_NE(std::string(e.what()).find("cond: false_fn returns (f64[]) but true_fn returns (f64[2])"), std::string::npos)
        << e.what();
  }
  EXPECT_EQ(lax::cond(Array(true), [](const Array& v) { return v; }, [](const Array& v) { return v; }, F64({1.0}))
                .item<double>(),
            1.0);
}

TEST(CondTest, Transformations) {
  auto f = [](const Array& x) {
    return lax::cond(lax::gt(lax::reduce_sum(x, {0}), Array::Scalar(0.0, float64)),
                     [](const Array& v) { return lax::reduce_sum(lax::sin(v), {0}); },
                     [](const Array& v) { return lax::reduce_sum(lax::mul(v, v), {0}); }, x);
  };
  for (const Array& x : {F64({0.3, 0.7}), F64({-0.3, -0.7})}) check_grads(f, std::tuple{x}, 2);
  EXPECT_NEAR(grad(f)(F64({0.3, 0.7})).to_vector<double>()[1], std::cos(0.7), 1e-12);
  EXPECT_NEAR(grad(f)(F64({-0.3, -0.7})).to_vector<double>()[1], -1.4, 1e-12);
  // vmap with a batched predicate runs both branches and selects per example.
  Array xs = jnp::stack({F64({0.3, 0.7}), F64({-0.3, -0.7}), F64({1.0, -2.0})}, 0);
  std::vector<double> got = vmap(f)(xs).to_vector<double>();
  for (int b = 0; b < 3; ++b) EXPECT_DOUBLE_EQ(got[b], f(At(xs, b)).item<double>()) << b;
  // vmap with an unbatched predicate keeps one cond.
  auto g = [](const Array& p, const Array& x) {
    return lax::cond(p, [](const Array& v) { return lax::sin(v); }, [](const Array& v) { return lax::cos(v); }, x);
  };
  std::vector<double> gv = vmap(g, in_axes{none, 0})(Array(false), F64({0.1, 0.2})).to_vector<double>();
  EXPECT_DOUBLE_EQ(gv[1], std::cos(0.2));
}

TEST(WhileLoopTest, RunsUntilTheConditionFails) {
  Array n = lax::while_loop([](const Array& i) { return lax::lt(i, Array(10)); },
                            [](const Array& i) { return lax::add(i, Array(1)); }, Array(0));
  EXPECT_EQ(n.item<int>(), 10);
  using Carry = std::pair<Array, Array>;
  Carry out = lax::while_loop([](const Carry& c) { return lax::lt(c.first, Array(5)); },
                              [](const Carry& c) { return Carry{lax::add(c.first, Array(1)), lax::mul(c.second, F64({2.0}))}; },
                              Carry{Array(0), F64({1.0})});
  EXPECT_EQ(out.second.item<double>(), 32.0);
}

TEST(WhileLoopTest, ForwardModeVmapAndTheReverseModeError) {
  using Carry = std::pair<Array, Array>;
  // x -> x * 1.5^k for the first k with x * 1.5^k > 10: piecewise linear in x.
  auto f = [](const Array& x) {
    return lax::while_loop([](const Carry& c) { return lax::lt(c.second, F64({10.0}).reshape({})); },
                           [](const Carry& c) { return Carry{lax::add(c.first, Array(1)), lax::mul(c.second, F64({1.5}).reshape({}))}; },
                           Carry{Array(0), x})
        .second;
  };
  Array x = Array::Scalar(1.0, float64);
  auto [y, t] = jvp(f, std::tuple{x}, std::tuple{Array::Scalar(1.0, float64)});
  EXPECT_DOUBLE_EQ(y.item<double>(), std::pow(1.5, 6));
  EXPECT_DOUBLE_EQ(t.item<double>(), std::pow(1.5, 6));
  // Per-example trip counts under vmap.
  Array xs = F64({1.0, 5.0, 20.0});
  std::vector<double> got = vmap(f)(xs).to_vector<double>();
  for (int b = 0; b < 3; ++b) EXPECT_DOUBLE_EQ(got[b], f(At(xs, b)).item<double>()) << b;
  try {
    grad(f)(x);
    FAIL() << "expected NotImplementedError";
  } catch (const NotImplementedError& e) {
    EXPECT_NE(std::string(e.what()).find("use lax::scan"), std::string::npos) << e.what();
  }
  EXPECT_DOUBLE_EQ(f(x).item<double>(), std::pow(1.5, 6));  // still works after the error
}

TEST(ForiLoopTest, StaticBoundsScanAndTracedBoundsWhile) {
  auto sum = [](const Array& acc0) {
    return lax::fori_loop(0, 5, [](const Array& i, const Array& acc) { return lax::add(acc, lax::convert_element_type(i, float64)); },
                          acc0);
  };
  EXPECT_EQ(sum(Array::Scalar(0.0, float64)).item<double>(), 10.0);
  EXPECT_NE(make_jaxpr(sum)(Array::Scalar(0.0, float64)).ToString().find("scan["), std::string::npos);
  auto traced = [](const Array& hi) {
    return lax::fori_loop(Array(0), hi, [](const Array&, const Array& acc) { return lax::add(acc, Array(2)); }, Array(0));
  };
  EXPECT_EQ(traced(Array(4)).item<int>(), 8);
  EXPECT_NE(make_jaxpr(traced)(Array(4)).ToString().find("while["), std::string::npos);
  // fori_loop with static bounds supports reverse mode: d/dx of x^(2^3).
  auto power = [](const Array& x) {
    return lax::fori_loop(0, 3, [](const Array&, const Array& v) { return lax::mul(v, v); }, x);
  };
  EXPECT_DOUBLE_EQ(grad(power)(Array::Scalar(1.1, float64)).item<double>(), 8 * std::pow(1.1, 7));
}

TEST(ScanTest, CumulativeSumAndReverse) {
  auto step = [](const Array& c, const Array& x) { Array s = lax::add(c, x); return std::pair{s, s}; };
  auto [total, partial] = lax::scan(step, Array::Scalar(0.0, float64), F64({1, 2, 3, 4}));
  EXPECT_EQ(total.item<double>(), 10.0);
  EXPECT_EQ(partial.to_vector<double>(), (std::vector<double>{1, 3, 6, 10}));
  auto [rtotal, rpartial] = lax::scan(step, Array::Scalar(0.0, float64), F64({1, 2, 3, 4}), {.reverse = true});
  EXPECT_EQ(rpartial.to_vector<double>(), (std::vector<double>{10, 9, 7, 4}));
  EXPECT_NE(make_jaxpr([&](const Array& xs) { return lax::scan(step, Array::Scalar(0.0, float64), xs).second; })(
                F64({1, 2}))
                .ToString()
                .find("scan["),
            std::string::npos);
}

// A tanh RNN: h' = tanh(W h + U x), loss = sum of the hidden states.
struct Rnn {
  BOOST_HANA_DEFINE_STRUCT(Rnn, (Array, w), (Array, u));
};

Array RnnLoss(const Rnn& p, const Array& xs) {
  auto step = [&](const Array& h, const Array& x) {
    Array pre = lax::add(lax::dot_general(p.w, h, {{1}, {0}, {}, {}}), lax::dot_general(p.u, x, {{1}, {0}, {}, {}}));
    Array h2 = lax::tanh(pre);
    return std::pair{h2, h2};
  };
  auto [h, hs] = lax::scan(step, jnp::zeros({3}, float64), xs);
  return lax::reduce_sum(lax::mul(hs, hs), {0, 1});
}

// A weakly typed init (a C++ scalar) takes the carry type the body returns, as JAX's scan
// (lax/control_flow/loops.py, _promote_weak_typed_inputs): in JAX
//   jax.lax.scan(lambda c, x: (c + x, c), 0, jnp.arange(3.0))
//   -> (Array(3., dtype=float32), Array([0., 0., 1.], dtype=float32))
// while a strongly typed init that differs raises JAX's TypeError ("scan body function carry
// input and carry output must have equal types ...").
TEST(ScanTest, WeakTypedInitFollowsTheBodysCarryType) {
  auto body = [](const Array& c, const Array& x) { return std::pair{c + x, c}; };
  auto [carry, ys] = lax::scan(body, Array(0), jnp::arange(3).astype(float32));
  EXPECT_EQ(carry.dtype(), float32);
  EXPECT_FALSE(carry.weak_type());  // converted, as JAX's convert_element_type
  EXPECT_EQ(carry.item<float>(), 3.0f);
  EXPECT_EQ(ys.dtype(), float32);
  EXPECT_EQ(ys.to_vector<float>(), (std::vector<float>{0, 0, 1}));
  // A weak float32 init with bfloat16 xs: the carry is bfloat16 (weak f32 + bf16 -> bf16).
  auto [hc, hys] = lax::scan(body, Array(0.5), jnp::ones({2}).astype(bfloat16));
  EXPECT_EQ(hc.dtype(), bfloat16);
  EXPECT_EQ(hc.item<float>(), 2.5f);
  // In the jaxpr the init enters converted and the scan carries f32[].
  const std::string text =
      make_jaxpr([&](const Array& xs) { return lax::scan(body, Array(0), xs).first; })(jnp::ones({3})).ToString();
  EXPECT_NE(text.find("b:f32[] = convert_element_type[new_dtype=float32 sharding=None weak_type=False] 0:i32[]"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("c:f32[] _:f32[3] = scan["), std::string::npos) << text;  // ys unused: `_`
  // Under jit and grad (the carry is float, so it is differentiable).
  EXPECT_EQ(jit([&](const Array& xs) { return lax::scan(body, Array(0), xs).first; })(jnp::ones({4})).item<float>(), 4);
  EXPECT_EQ(grad([&](const Array& xs) { return lax::scan(body, Array(0), xs).first; })(jnp::ones({2})).to_vector<float>(),
            (std::vector<float>{1, 1}));
  // A strong init of another dtype is JAX's TypeError, naming both types.
  try {
    lax::scan(body, Array::Scalar(0, int32), jnp::ones({3}));
    ADD_FAILURE() << "expected TypeError";
  } catch (const TypeError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("scan body function carry input and carry output must have equal types"), std::string::npos) << msg;
    EXPECT_NE(msg.find("has type i32[] but the corresponding output carry component has type f32[], so the dtypes "
                       "do not match"),
              std::string::npos)
        << msg;
  }
  // So is a weak init whose shape differs (promotion never changes shapes).
  EXPECT_THROW(lax::scan([](const Array& c, const Array& x) { return std::pair{c + x, x}; }, Array(0.0),
                         jnp::ones({3, 2})),
               TypeError);
}

// while_loop follows the same rule (JAX's while_loop promotes weak inits too):
//   jax.lax.while_loop(lambda c: c < 10, lambda c: c + 0.5, 0)  ->  Array(10., dtype=float32)
TEST(WhileLoopTest, WeakTypedInitFollowsTheBodysCarryType) {
  const Array out = lax::while_loop([](const Array& c) { return c < 10; }, [](const Array& c) { return c + 0.5; },
                                    Array(0));
  EXPECT_EQ(out.dtype(), float32);
  EXPECT_EQ(out.item<float>(), 10.0f);
  EXPECT_EQ(jit([](const Array& n) {
              return lax::while_loop([&](const Array& c) { return c < n; }, [](const Array& c) { return c + 0.5; },
                                     Array(0));
            })(Array(3.f)).item<float>(),
            3.0f);
  try {
    lax::while_loop([](const Array& c) { return c < 10; }, [](const Array& c) { return c + 0.5; },
                    Array::Scalar(0, int32));
    ADD_FAILURE() << "expected TypeError";
  } catch (const TypeError& e) {
    EXPECT_NE(std::string(e.what()).find("while_loop body function carry input and carry output must have equal types"),
              std::string::npos)
        << e.what();
  }
}

TEST(ScanTest, RnnGradientsMatchFiniteDifferences) {
  std::mt19937_64 rng(3);
  std::normal_distribution<double> n(0, 0.5);
  auto rand = [&](Shape s) {
    std::vector<double> v(static_cast<size_t>(NumElements(s)));
    for (double& x : v) x = n(rng);
    return jnp::array(v).astype(float64).reshape(s);
  };
  Rnn p{rand({3, 3}), rand({3, 2})};
  Array xs = rand({5, 2});
  check_grads(RnnLoss, std::tuple{p, xs}, 2);
  // vmap over a batch of sequences matches a loop.
  Array batch = jnp::stack({xs, rand({5, 2}), rand({5, 2})}, 0);
  std::vector<double> got = vmap(RnnLoss, in_axes{none, 0})(p, batch).to_vector<double>();
  for (int b = 0; b < 3; ++b) EXPECT_NEAR(got[b], RnnLoss(p, At(batch, b)).item<double>(), 1e-12) << b;
  // Per-example gradients: vmap(grad) against a loop.
  Rnn g = vmap(grad(RnnLoss), in_axes{none, 0})(p, batch);
  for (int b = 0; b < 3; ++b) {
    Rnn gb = grad(RnnLoss)(p, At(batch, b));
    std::vector<double> want = gb.w.to_vector<double>(), have = At(g.w, b).to_vector<double>();
    for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(have[i], want[i], 1e-12);
  }
}

}  // namespace
}  // namespace jx::control_flow_test
namespace jx::control_flow_test {
namespace {

// Golden text: sub-jaxprs print indented inside their equation's params, as JAX's do.
// Sub-jaxprs continue the outer jaxpr's variable names, as JAX's printer does.
TEST(ControlFlowJaxprTest, PrintsSubJaxprsIndented) {
  auto f = [](const Array& p, const Array& x) {
    return lax::cond(p, [](const Array& v) { return lax::sin(v); }, [](const Array& v) { return lax::neg(v); }, x);
  };
  EXPECT_EQ(make_jaxpr(f)(Array(true), jnp::ones({3})).ToString(),
            "{ lambda ; a:bool[] b:f32[3]. let\n"
            "    c:i32[] = convert_element_type[new_dtype=int32 sharding=None weak_type=False] a\n"
            "    d:f32[3] = cond[\n"
            "      branches=(\n"
            "        { lambda ; e:f32[3]. let f:f32[3] = neg e in (f,) }\n"
            "        { lambda ; g:f32[3]. let h:f32[3] = sin g in (h,) }\n"
            "      )\n"
            "    ] c b\n"
            "  in (d,) }");
  auto g = [](const Array& xs) {
    return lax::scan([](const Array& c, const Array& x) { Array s = lax::add(c, x); return std::pair{s, lax::mul(s, 2.0)}; },
                     jnp::zeros({}), xs).second;
  };
  EXPECT_EQ(make_jaxpr(g)(jnp::ones({5})).ToString(),
            "{ lambda ; a:f32[5]. let\n"
            "    _:f32[] b:f32[5] = scan[\n"  // the unused final carry: JAX's DropVar
            "      _split_transpose=False\n"
            "      jaxpr={ lambda ; c:f32[] d:f32[]. let\n"
            "          e:f32[] = add c d\n"
            "          f:f32[] = mul e 2.0:f32[]\n"
            "        in (e, f) }\n"
            "      length=5\n"
            "      linear=(False, False)\n"
            "      num_carry=1\n"
            "      num_consts=0\n"
            "      reverse=False\n"
            "      unroll=1\n"
            "    ] 0.0:f32[] a\n"
            "  in (b,) }");
}

// Linearize splits a jvp'd scan with its partial_eval rule: the primal loop runs once, now,
// saving per-iteration residuals, and the staged linear program is a scan with no primal
// work (no sin or cos in its body). A const used by the tangent (w) is passed once, not stacked.
TEST(ControlFlowPartialEvalTest, LinearizedScanStagesOnlyTheTangentLoop) {
  auto f = [](absl::Span<const Array> a) {
    const Array w = a[1];
    auto [c, ys] = lax::scan([&](const Array& c, const Array& x) {
      Array s = lax::sin(lax::mul(c, w));
      return std::pair{lax::add(s, x), s};
    }, jnp::zeros({3}).astype(float64), a[0]);
    return Arrays{c, ys};
  };
  const Array xs = jnp::arange(12.0).reshape({4, 3}).astype(float64), w = F64({0.5, -1.0, 2.0});
  Linearized lin = Linearize(f, {xs, w});
  const std::string text = lin.linear.ToString();
  EXPECT_EQ(text.find("sin"), std::string::npos) << text;
  EXPECT_EQ(text.find("cos"), std::string::npos) << text;  // cos(c*w) is a residual, stacked per step
  // w is an f64[3] const of the tangent scan, not an f64[4,3] stack of copies.
  const Jaxpr& j = *lin.linear.jaxpr;
  ASSERT_EQ(j.eqns.size(), 1u) << text;
  EXPECT_EQ(j.eqns[0].primitive.name(), "scan");
  int64_t num_consts = j.eqns[0].params.GetInt("num_consts");
  bool w_is_const = false;
  for (int64_t i = 0; i < num_consts; ++i) w_is_const = w_is_const || j.aval(j.eqns[0].inputs[i]).shape == Shape{3};
  EXPECT_TRUE(w_is_const) << text;
  // The primal outputs equal the plain scan's, and grads still match finite differences.
  EXPECT_EQ(lin.primals_out[1].to_vector<double>(), f({xs, w})[1].to_vector<double>());
  check_grads([&](const Array& x, const Array& v) { return jnp::sum(f({x, v})[1]); }, std::tuple{xs, w}, 2);
}

TEST(ControlFlowPartialEvalTest, LinearizedCondStagesOnlyTheTangentBranches) {
  auto f = [](absl::Span<const Array> a) {
    return Arrays{lax::cond(lax::gt(a[1], 0.0), [](const Array& v) { return lax::exp(lax::sin(v)); },
                            [](const Array& v) { return lax::mul(v, v); }, a[0])};
  };
  const Array x = F64({0.3, -1.2});
  for (double p : {1.0, -1.0}) {
    Linearized lin = Linearize(f, {x, Array(p).astype(float64)});
    const std::string text = lin.linear.ToString();
    EXPECT_EQ(text.find("sin"), std::string::npos) << text;  // primal work ran in the known cond
    EXPECT_EQ(text.find("exp"), std::string::npos) << text;
    EXPECT_NE(text.find("cond"), std::string::npos) << text;
    EXPECT_EQ(lin.primals_out[0].to_vector<double>(), f({x, Array(p).astype(float64)})[0].to_vector<double>());
    check_grads([&](const Array& v) { return jnp::sum(f({v, Array(p).astype(float64)})[0]); }, std::tuple{x}, 2);
  }
}

// jvp of a while is one loop carrying primals and tangents; under linearize the primal loop
// runs now (its outputs are concrete) and the whole loop is staged for the tangents.
TEST(ControlFlowPartialEvalTest, WhileJvpIsOneLoopAndLinearizeKeepsPrimalsKnown) {
  auto f = [](absl::Span<const Array> a) {
    auto [i, x] = lax::while_loop([](const std::pair<Array, Array>& c) { return lax::lt(c.first, 3); },
                                  [](const std::pair<Array, Array>& c) {
                                    return std::pair{lax::add(c.first, 1), lax::sin(c.second)};
                                  },
                                  std::pair{Array(0), a[0]});
    return Arrays{x};
  };
  const Array x = F64({0.4, -0.7});
  auto jf = [&](const Array& p, const Array& t) { return jvp([&](const Array& v) { return f({v})[0]; }, std::tuple{p}, std::tuple{t}); };
  const std::string text = make_jaxpr([&](const Array& p, const Array& t) { return jf(p, t).second; })(x, x).ToString();
  size_t loops = 0;
  for (size_t at = text.find("= while["); at != std::string::npos; at = text.find("= while[", at + 1)) ++loops;
  EXPECT_EQ(loops, 1u) << text;
  Linearized lin = Linearize(f, {x});
  ASSERT_TRUE(lin.primals_out[0].is_concrete());
  EXPECT_EQ(lin.primals_out[0].to_vector<double>(), f({x})[0].to_vector<double>());
  const auto [y, t] = jf(x, F64({1.0, 1.0}));
  const std::vector<double> xv = x.to_vector<double>(), tv = t.to_vector<double>();
  for (size_t k = 0; k < xv.size(); ++k) {
    double v = xv[k], d = 1.0;
    for (int it = 0; it < 3; ++it) {
      d *= std::cos(v);
      v = std::sin(v);
    }
    EXPECT_NEAR(tv[k], d, 1e-12);
  }
}

}  // namespace
}  // namespace jx::control_flow_test
