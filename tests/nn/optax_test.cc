// jx::optax against hand-computed updates: each optimizer runs three steps on float64
// parameters with fixed gradients and is compared with Optax's formulas evaluated in double
// precision (so eps placement, bias correction and the Nesterov form all show); float32 runs,
// schedules at named steps, chain/clip/mask, the state under jit with donated params, and
// gradients with respect to a params struct and an Array together (jx::argnums).
#include "jx/nn/optax/optax.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <tuple>
#include <vector>

#include "jx/jx.h"

namespace jx::optax::optax_test {
namespace {

namespace jnp = jx::numpy;
namespace nn = jx::nn;

struct Params {
  BOOST_HANA_DEFINE_STRUCT(Params, (Array, w), (Array, b));
};

// w: two elements, b: a scalar; the flat order is w[0], w[1], b.
Params MakeParams(const std::vector<double>& v, DType dtype = float64) {
  return Params{jnp::array(std::vector<double>{v[0], v[1]}).astype(dtype), jnp::array(std::vector<double>{v[2]}).reshape({}).astype(dtype)};
}

std::vector<double> Flat(const Params& p) {
  std::vector<double> out = p.w.astype(float64).to_vector<double>();
  out.push_back(p.b.astype(float64).item<double>());
  return out;
}

const std::vector<std::vector<double>> kGrads{{0.5, -1.0, 2.0}, {0.1, 0.3, -1.0}, {-0.2, 0.4, 0.5}};
const std::vector<double> kParams{1.0, -2.0, 3.0};

void ExpectClose(const std::vector<double>& actual, const std::vector<double>& expected, double rtol,
                 const std::string& what) {
  ASSERT_EQ(actual.size(), expected.size()) << what;
  for (size_t i = 0; i < actual.size(); ++i) {
    EXPECT_NEAR(actual[i], expected[i], 1e-15 + rtol * std::abs(expected[i])) << what << " element " << i;
  }
}

// Runs opt for kGrads.size() steps from kParams, applying each update, and compares the
// updates of every step with `expected`.
void ExpectUpdates(const GradientTransformation& opt, const std::vector<std::vector<double>>& expected,
                   DType dtype = float64, double rtol = 1e-12) {
  Params params = MakeParams(kParams, dtype);
  OptState state = opt.init(params);
  for (size_t step = 0; step < expected.size(); ++step) {
    auto [updates, new_state] = opt.update(MakeParams(kGrads[step], dtype), state, params);
    EXPECT_EQ(updates.w.dtype(), dtype);
    ExpectClose(Flat(updates), expected[step], rtol, StrCat(opt.name(), " step ", step + 1));
    params = apply_updates(params, updates);
    state = new_state;
  }
}

TEST(OptaxAdamTest, MatchesOptaxFormulas) {
  ExpectUpdates(adam(0.1), {{-0.099999998000000034, 0.09999999900000002, -0.099999999500000006},
                            {-0.080304095615348181, 0.042784858570773618, -0.02663370379756845},
                            {-0.034435374549162845, 0.0080059039526422515, -0.034042914563488874}});
}

TEST(OptaxAdamTest, EpsOutsideAndEpsRootInsideTheSquareRoot) {
  // Large eps and eps_root so their placement changes the numbers in the second digit.
  ExpectUpdates(adam(0.1, {.b1 = 0.5, .b2 = 0.8, .eps = 0.1, .eps_root = 0.05}),
                {{-0.077193544397442443, 0.088912988134226892, -0.09467629602721836},
                 {-0.045909319856320019, 0.015913466628838802, 0.0},
                 {0.0030540826989855214, -0.023220592909900854, -0.021374074932690043}});
}

TEST(OptaxAdamTest, NesterovCorrectsTheNextStepsMomentum) {
  ExpectUpdates(adam(0.1, {.nesterov = true}), {{-0.14736841810526322, 0.14736841957894742, -0.14736842031578951},
                                                {-0.065272332665544677, 0.0056046585950644432, 0.016486360930044668},
                                                {-0.001076163794245671, -0.01719608173801657, -0.038095854997102975}});
}

TEST(OptaxAdamTest, StateHoldsCountAndMomentsInParamOrder) {
  auto opt = adam(0.1);
  Params params = MakeParams(kParams);
  OptState state = opt.init(params);
  ASSERT_EQ(state.name.value, "ChainState");
  ASSERT_EQ(state.inner.size(), 2u);
  EXPECT_EQ(state.inner[0].name.value, "ScaleByAdamState");
  EXPECT_EQ(state.inner[1].name.value, "EmptyState");
  EXPECT_EQ(state.inner[0].scalar("count").dtype(), int32);
  for (const auto& g : kGrads) std::tie(std::ignore, state) = opt.update(MakeParams(g), state, params);
  const OptState& s = state.inner[0];
  EXPECT_EQ(s.scalar("count").item<int32_t>(), 3);
  std::vector<double> mu{s.field("mu")[0].to_vector<double>()[0], s.field("mu")[0].to_vector<double>()[1],
                         s.field("mu")[1].item<double>()};
  std::vector<double> nu{s.field("nu")[0].to_vector<double>()[0], s.field("nu")[0].to_vector<double>()[1],
                         s.field("nu")[1].item<double>()};
  ExpectClose(mu, {0.029499999999999998, -0.013999999999999999, 0.12199999999999998}, 1e-12, "mu");
  ExpectClose(nu, {0.00029949025000000032, 0.0012479110000000013, 0.0052410040000000048}, 1e-12, "nu");
  EXPECT_THROW(s.field("trace"), ValueError);
}

// Optax's formulas with every operation rounded to float32 (b2 = 0.999f makes the first step
// -0.1 * (1 - 6.7e-6), as in JAX); the f32 pow and sqrt kernels may differ by an ulp.
const std::vector<std::vector<double>> kAdamFloat32{{-0.0999993309, 0.0999993309, -0.0999993309},
                                                    {-0.080303289, 0.0427844226, -0.0266334321},
                                                    {-0.0344352461, 0.00800586957, -0.0340427868}};

TEST(OptaxAdamTest, Float32ParamsKeepFloat32) { ExpectUpdates(adam(0.1), kAdamFloat32, float32, 1e-6); }

TEST(OptaxAdamTest, MuDtypeKeepsTheFirstMomentInThatDtype) {
  auto opt = adam(0.1, {.mu_dtype = bfloat16});
  Params params = MakeParams(kParams, float32);
  OptState state = opt.init(params);
  EXPECT_EQ(state.inner[0].field("mu")[0].dtype(), bfloat16);
  EXPECT_EQ(state.inner[0].field("nu")[0].dtype(), float32);
  auto [updates, new_state] = opt.update(MakeParams(kGrads[0], float32), state, params);
  EXPECT_EQ(new_state.inner[0].field("mu")[0].dtype(), bfloat16);
  EXPECT_EQ(updates.w.dtype(), float32);
  // The step uses the first moment before its cast to mu_dtype, as Optax.
  ExpectClose(Flat(updates), kAdamFloat32[0], 1e-6, "mu_dtype step 1");
}

TEST(OptaxAdamWTest, MaskedWeightDecayScaledByTheLearningRate) {
  // Decay on w only (selected by key path); b gets plain Adam.
  auto opt = adamw(0.1, {.weight_decay = 0.5, .mask = [](std::string_view path, const Array&) { return path == ".w"; }});
  ExpectUpdates(opt, {{-0.14999999800000005, 0.19999999900000001, -0.099999999500000006},
                      {-0.12280409571534819, 0.1327848586207736, -0.02663370379756845},
                      {-0.07079516986339543, 0.091366661071603572, -0.034042914563488874}});
}

TEST(OptaxAdamWTest, UnmaskedDecaysEveryParameter) {
  Params params = MakeParams(kParams);
  auto opt = adamw(0.1, {.weight_decay = 0.5});
  auto [updates, state] = opt.update(MakeParams(kGrads[0]), opt.init(params), params);
  // adam's first step is -0.1 * sign(g) (to 1e-8); the decay adds -0.1 * 0.5 * p.
  ExpectClose(Flat(updates), {-0.1 - 0.05, 0.1 + 0.1, -0.1 - 0.15}, 1e-7, "adamw");
}

TEST(OptaxSgdTest, PlainSgdIsMinusLearningRateTimesGradient) {
  ExpectUpdates(sgd(0.1), {{-0.05, 0.1, -0.2}, {-0.01, -0.03, 0.1}, {0.02, -0.04, -0.05}});
}

TEST(OptaxSgdTest, Momentum) {
  ExpectUpdates(sgd(0.1, {.momentum = 0.9}), {{-0.050000000000000003, 0.10000000000000001, -0.20000000000000001},
                                              {-0.055000000000000007, 0.060000000000000012, -0.080000000000000016},
                                              {-0.029500000000000005, 0.014000000000000012, -0.12200000000000003}});
}

TEST(OptaxSgdTest, NesterovMomentum) {
  ExpectUpdates(sgd(0.1, {.momentum = 0.9, .nesterov = true}),
                {{-0.095000000000000001, 0.19, -0.38},
                 {-0.059500000000000011, 0.024000000000000018, 0.027999999999999994},
                 {-0.0065500000000000063, -0.027399999999999994, -0.15980000000000005}});
}

TEST(OptaxRmspropTest, DefaultPutsEpsInsideTheSquareRoot) {
  ExpectUpdates(rmsprop(0.1), {{-0.31622770277130374, 0.31622775020545091, -0.316227762063991},
                               {-0.065232793426027946, -0.095346254109091991, 0.14744195455226722},
                               {0.12611330715166078, -0.12338393382529221, -0.075463638199628036}});
}

TEST(OptaxRmspropTest, Centered) {
  ExpectUpdates(rmsprop(0.1, {.centered = true}), {{-0.33333325925928398, 0.33333331481481643, -0.33333332870370386},
                                                   {-0.069885638715373274, -0.09712858114513008, 0.1484784660924573},
                                                   {0.12835352518065388, -0.12349914374780227, -0.076776386986918799}});
}

TEST(OptaxRmspropTest, EpsOutsideWithBiasCorrection) {
  ExpectUpdates(rmsprop(0.1, {.eps_in_sqrt = false, .bias_correction = true}),
                {{-0.099999998000000034, 0.09999999900000002, -0.099999999500000006},
                 {-0.028434320676235109, -0.041560470153924105, 0.06426845827867167},
                 {0.065651647976590857, -0.064230791208314528, -0.039284604592403446}});
}

TEST(OptaxRmspropTest, InitialScaleAndNesterovMomentumAfterTheLearningRate) {
  ExpectUpdates(rmsprop(0.1, {.initial_scale = 1.0, .momentum = 0.5, .nesterov = true}),
                {{-0.077981286314984993, 0.14999999925000002, -0.2631174047801188},
                 {-0.02942691475785356, -0.022198758029947308, 0.089250575091701187},
                 {0.02530879221194262, -0.061062952780629266, -0.069139400909228516}});
}

float At(const Schedule& s, int step) { return s(step).item<float>(); }

TEST(OptaxScheduleTest, ConstantAndLinear) {
  EXPECT_FLOAT_EQ(At(constant_schedule(0.25), 0), 0.25f);
  EXPECT_FLOAT_EQ(At(constant_schedule(0.25), 1000), 0.25f);
  Schedule lin = linear_schedule(1.0, 0.0, 10, /*transition_begin=*/5);
  std::vector<float> got;
  for (int step : {0, 5, 10, 15, 20}) got.push_back(At(lin, step));
  EXPECT_EQ(got, (std::vector<float>{1.f, 1.f, 0.5f, 0.f, 0.f}));
  EXPECT_FLOAT_EQ(At(polynomial_schedule(1.0, 0.0, 2.0, 10), 5), 0.25f);
  ::testing::internal::CaptureStderr();
  EXPECT_FLOAT_EQ(At(linear_schedule(1.0, 0.0, 0), 7), 1.f);  // no transition: constant, as Optax
  EXPECT_NE(::testing::internal::GetCapturedStderr().find("polynomial_schedule: transition_steps 0 <= 0 gives a constant"),
            std::string::npos);
}

TEST(OptaxScheduleTest, CosineDecay) {
  Schedule s = cosine_decay_schedule(0.1, 100, /*alpha=*/0.1);
  EXPECT_FLOAT_EQ(At(s, 0), 0.1f);
  EXPECT_FLOAT_EQ(At(s, 25), 0.086819805153394644f);
  EXPECT_FLOAT_EQ(At(s, 50), 0.055f);
  EXPECT_FLOAT_EQ(At(s, 100), 0.01f);
  EXPECT_FLOAT_EQ(At(s, 150), 0.01f);  // held at alpha * init after decay_steps
  EXPECT_FLOAT_EQ(At(cosine_decay_schedule(1.0, 10, 0.0, /*exponent=*/2.0), 3), 0.63026550184936814f);
  EXPECT_EQ(s(jnp::array(std::vector<int32_t>{25}).reshape({})).dtype(), float32);
  EXPECT_THROW(cosine_decay_schedule(0.1, 0), ValueError);
}

TEST(OptaxScheduleTest, ExponentialDecay) {
  Schedule s = exponential_decay(1.0, 10, 0.5);
  EXPECT_FLOAT_EQ(At(s, 0), 1.f);
  EXPECT_FLOAT_EQ(At(s, 5), 0.70710678118654757f);
  EXPECT_FLOAT_EQ(At(s, 10), 0.5f);
  EXPECT_FLOAT_EQ(At(s, 25), 0.17677669529663689f);
  Schedule stair = exponential_decay(1.0, 10, 0.5, /*transition_begin=*/5, /*staircase=*/true);
  std::vector<float> got;
  for (int step : {0, 5, 14, 15, 30}) got.push_back(At(stair, step));
  EXPECT_EQ(got, (std::vector<float>{1.f, 1.f, 1.f, 0.5f, 0.25f}));
  Schedule floored = exponential_decay(1.0, 10, 0.5, 0, false, /*end_value=*/0.3);
  EXPECT_FLOAT_EQ(At(floored, 10), 0.5f);
  EXPECT_FLOAT_EQ(At(floored, 20), 0.3f);
  Schedule capped = exponential_decay(1.0, 10, 2.0, 0, false, /*end_value=*/3.0);
  EXPECT_FLOAT_EQ(At(capped, 10), 2.f);
  EXPECT_FLOAT_EQ(At(capped, 30), 3.f);
  EXPECT_THROW(exponential_decay(1.0, 10, 0.0), ValueError);
  EXPECT_THROW(exponential_decay(1.0, 10, 0.5, -1), ValueError);
}

TEST(OptaxScheduleTest, WarmupCosineDecay) {
  Schedule s = warmup_cosine_decay_schedule(0.0, 1.0, /*warmup_steps=*/10, /*decay_steps=*/110, /*end_value=*/0.1);
  EXPECT_FLOAT_EQ(At(s, 0), 0.f);
  EXPECT_FLOAT_EQ(At(s, 5), 0.5f);
  EXPECT_FLOAT_EQ(At(s, 10), 1.f);
  EXPECT_FLOAT_EQ(At(s, 60), 0.55f);
  EXPECT_FLOAT_EQ(At(s, 110), 0.1f);
  EXPECT_FLOAT_EQ(At(s, 200), 0.1f);
}

TEST(OptaxScheduleTest, PiecewiseConstantAndJoin) {
  Schedule s = piecewise_constant_schedule(1.0, {{10, 0.5}, {20, 0.1}});
  std::vector<float> got;
  for (int step : {0, 9, 10, 19, 20, 100}) got.push_back(At(s, step));
  EXPECT_EQ(got, (std::vector<float>{1.f, 1.f, 0.5f, 0.5f, 0.05f, 0.05f}));
  EXPECT_THROW(piecewise_constant_schedule(1.0, {{10, -0.5}}), ValueError);
  Schedule joined = join_schedules({constant_schedule(1.0), linear_schedule(2.0, 0.0, 4)}, {3});
  EXPECT_FLOAT_EQ(At(joined, 2), 1.f);
  EXPECT_FLOAT_EQ(At(joined, 3), 2.f);  // the second schedule restarts at step 0
  EXPECT_FLOAT_EQ(At(joined, 5), 1.f);
  EXPECT_THROW(join_schedules({constant_schedule(1.0)}, {3}), ValueError);
}

TEST(OptaxScheduleTest, LearningRateScheduleStartsAtStepZero) {
  // sgd with lr(count) = 0.1 * (count + 1): updates -0.1 g, then -0.2 g, then -0.3 g.
  Schedule lr = [](const Array& count) { return 0.1 * (count.astype(float32) + 1.0); };
  ExpectUpdates(sgd(lr), {{-0.05, 0.1, -0.2}, {-0.02, -0.06, 0.2}, {0.06, -0.12, -0.15}}, float32, 1e-6);
  // A lambda works wherever a learning rate goes.
  auto opt = adam([](const Array& count) { return 0.0 * count.astype(float32) + 0.1; });
  ExpectUpdates(opt, {kAdamFloat32[0]}, float32, 1e-6);
}

TEST(OptaxTransformTest, ChainAppliesInOrder) {
  // (g + 1 * p) * -2: add_decayed_weights before scale.
  auto opt = chain(add_decayed_weights(1.0), scale(-2.0));
  Params params = MakeParams(kParams);
  auto [updates, state] = opt.update(MakeParams(kGrads[0]), opt.init(params), params);
  ExpectClose(Flat(updates), {-3.0, 6.0, -10.0}, 0, "chain");
  EXPECT_EQ(state.inner.size(), 2u);
}

TEST(OptaxTransformTest, ClipByGlobalNorm) {
  auto clip = clip_by_global_norm(1.0);
  Params g = MakeParams({3.0, 0.0, -4.0});  // global norm 5
  EXPECT_DOUBLE_EQ(global_norm(g).item<double>(), 5.0);
  auto [clipped, state] = clip.update(g, clip.init(g));
  ExpectClose(Flat(clipped), {0.6, 0.0, -0.8}, 1e-15, "clipped");
  Params small = MakeParams({0.3, 0.0, -0.4});
  ExpectClose(Flat(clip.update(small, state).first), {0.3, 0.0, -0.4}, 0, "below max_norm");
  // In a chain before sgd: the step has length lr * max_norm.
  auto opt = chain(clip_by_global_norm(1.0), sgd(0.5));
  auto [u, s] = opt.update(g, opt.init(g), g);
  EXPECT_NEAR(global_norm(u).item<double>(), 0.5, 1e-15);
}

TEST(OptaxTransformTest, MaskedLeavesOthersUnchanged) {
  auto opt = masked(scale(10.0), [](std::string_view, const Array& p) { return p.ndim() == 0; });
  Params g = MakeParams(kGrads[0]);
  auto [u, state] = opt.update(g, opt.init(g));
  ExpectClose(Flat(u), {0.5, -1.0, 20.0}, 0, "masked");
  EXPECT_EQ(state.name.value, "MaskedState");
}

TEST(OptaxErrorTest, ClearErrors) {
  Params params = MakeParams(kParams);
  // A state made by another optimizer.
  OptState sgd_state = sgd(0.1, {.momentum = 0.9}).init(params);
  try {
    adam(0.1).update(params, sgd_state, params);
    ADD_FAILURE() << "expected ValueError";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("[optax scale_by_adam] update: the state is a TraceState"), std::string::npos)
        << e.what();
  }
  // Updates and params of different structures.
  std::vector<Array> list{jnp::zeros({2})};
  auto opt = sgd(0.1);
  EXPECT_THROW(opt.update(list, opt.init(list), std::vector<Array>{jnp::zeros({2}), jnp::zeros({2})}), ValueError);
  // Moments of another tree.
  auto a = adam(0.1);
  EXPECT_THROW(a.update(list, a.init(params), list), ValueError);
  // Weight decay needs params.
  auto w = adamw(0.1);
  EXPECT_THROW(w.update(params, w.init(params)), ValueError);
}

TEST(OptaxJitTest, TrainingStepUnderJitWithDonatedParamsAndState) {
  // A quadratic: loss = |w - (1, -2)|^2 + (b - 3)^2, minimized at w = (1, -2), b = 3.
  auto loss_fn = [](const Params& p, const Array& target) {
    return jnp::sum(jnp::square(p.w - target)) + jnp::square(p.b - 3.0);
  };
  auto opt = adam(cosine_decay_schedule(0.2, 200));
  auto step = jx::jit(
      [&](const Params& params, const OptState& state, const Array& target) {
        auto [loss, grads] = jx::value_and_grad(loss_fn)(params, target);
        auto [updates, new_state] = opt.update(grads, state, params);
        return std::tuple{apply_updates(params, updates), new_state, loss};
      },
      jx::donate_argnums{0, 1}, jx::name{"train_step"});
  Params params{jnp::zeros({2}), jnp::zeros({})};
  OptState state = opt.init(params);
  const Array target = jnp::array({1.f, -2.f});
  float first = 0, last = 0;
  for (int i = 0; i < 200; ++i) {
    Params old = params;
    OptState old_state = state;
    std::vector<const void*> memory;  // every donated leaf's buffer, params then state
    for (const Array& x : tree::leaves(std::pair{old, old_state})) memory.push_back(x.data());
    Array loss;
    if (i == 0) ::testing::internal::CaptureStderr();
    std::tie(params, state, loss) = step(params, state, target);
    if (i == 0) {
      // Every donated leaf is usable (JAX's pairing: each output its own argument; the loss,
      // which reads w, is scheduled before the fusion writing the new w), so jit warns nothing.
      EXPECT_EQ(::testing::internal::GetCapturedStderr(), "");
      first = loss.item<float>();
    }
    // Donated: every new leaf lives in its own old leaf's memory, and the old leaves are deleted.
    std::vector<Array> now = tree::leaves(std::pair{params, state});
    ASSERT_EQ(now.size(), memory.size());
    for (size_t k = 0; k < now.size(); ++k) EXPECT_EQ(now[k].data(), memory[k]) << "leaf " << k << " step " << i;
    for (const Array& x : tree::leaves(std::pair{old, old_state})) EXPECT_TRUE(x.is_deleted());
    last = loss.item<float>();
  }
  EXPECT_FLOAT_EQ(first, 14.f);
  EXPECT_LT(last, 1e-4f);
  EXPECT_EQ(state.inner[0].scalar("count").item<int32_t>(), 200);
  ExpectClose(Flat(params), {1.0, -2.0, 3.0}, 1e-2, "minimum");
}

// The Fashion-MNIST demo's MLP step (examples/fashion_mnist/models.h, scaled down) that also
// reports the old parameters' norm: the loss and the norm read each weight and the adam step
// writes the new weight. Every leaf (params and adam's state) must take its own argument's
// memory, with no "donated buffers were not usable" warning: the scheduler runs the weight's
// readers before the fusion writing it (else the norm runs last, as nothing waits for it).
struct Mlp {
  BOOST_HANA_DEFINE_STRUCT(Mlp, (nn::Linear, hidden), (nn::Linear, out));
  Array operator()(const Array& x) const { return out(nn::relu(hidden(x))); }
};

TEST(OptaxJitTest, DonatedMlpStepWritesEveryLeafInPlace) {
  auto [k1, k2, kx] = std::tuple{jx::random::key(1), jx::random::key(2), jx::random::key(3)};
  Mlp model{nn::Linear(64, 32, k1), nn::Linear(32, 10, k2)};
  const Array x = jx::random::normal(kx, {16, 64});
  const Array y = jnp::arange(16) % 10;
  auto loss_fn = [](const Mlp& m, const Array& xb, const Array& yb) {
    return jnp::mean(nn::softmax_cross_entropy_with_integer_labels(m(xb), yb));
  };
  auto opt = adam(1e-2);
  auto step = jx::jit(
      [&](const Mlp& m, const OptState& state, const Array& xb, const Array& yb) {
        auto [loss, grads] = jx::value_and_grad(loss_fn)(m, xb, yb);
        auto [updates, new_state] = opt.update(grads, state, m);
        // A metric of the old parameters (optax.global_norm(params)): another reader of each
        // weight, which nothing else waits for.
        Array norm2 = jnp::zeros({});
        for (const Array& leaf : tree::leaves(m)) norm2 = norm2 + jnp::sum(jnp::square(leaf));
        return std::tuple{apply_updates(m, updates), new_state, loss, jnp::sqrt(norm2)};
      },
      jx::donate_argnums{0, 1});
  OptState state = opt.init(model);
  float first = 0, last = 0;
  for (int i = 0; i < 3; ++i) {
    std::vector<const void*> memory;
    for (const Array& leaf : tree::leaves(std::pair{model, state})) memory.push_back(leaf.data());
    Array loss, norm;
    if (i == 0) ::testing::internal::CaptureStderr();
    std::tie(model, state, loss, norm) = step(model, state, x, y);
    EXPECT_GT(norm.item<float>(), 0);
    if (i == 0) {
      EXPECT_EQ(::testing::internal::GetCapturedStderr(), "");
    }
    const std::vector<Array> now = tree::leaves(std::pair{model, state});
    ASSERT_EQ(now.size(), memory.size());
    for (size_t k = 0; k < now.size(); ++k) EXPECT_EQ(now[k].data(), memory[k]) << "leaf " << k << " step " << i;
    (i == 0 ? first : last) = loss.item<float>();
  }
  EXPECT_LT(last, first);
}

TEST(OptaxJitTest, JittedUpdateMatchesEager) {
  auto opt = adamw(0.1, {.weight_decay = 0.5});
  Params params = MakeParams(kParams, float32);
  Params grads = MakeParams(kGrads[0], float32);
  OptState state = opt.init(params);
  auto eager = opt.update(grads, state, params);
  auto jitted = jx::jit([&](const Params& g, const OptState& s, const Params& p) { return opt.update(g, s, p); })(
      grads, state, params);
  ExpectClose(Flat(jitted.first), Flat(eager.first), 1e-6, "jit vs eager");
  EXPECT_EQ(jitted.second.inner[0].scalar("count").item<int32_t>(), 1);
}

struct Model {
  BOOST_HANA_DEFINE_STRUCT(Model, (std::vector<Array>, weights), (std::optional<Array>, bias),
                           (std::optional<Array>, unused), (Static<int>, features));
};

TEST(OptaxPytreeTest, ModuleLikeStructsWithStaticAndOptionalFields) {
  Model model{{jnp::ones({2, 2}), jnp::ones({2})}, jnp::zeros({2}), std::nullopt, Static<int>{2}};
  auto loss = [](const Model& m) { return jnp::sum(m.weights[0]) + jnp::sum(m.weights[1] * 2.0) - jnp::sum(*m.bias); };
  auto opt = sgd(0.5, {.momentum = 0.9});
  OptState state = opt.init(model);
  EXPECT_EQ(state.inner[0].field("trace").size(), 3u);  // the Arrays only
  Model grads = jx::grad(loss)(model);
  auto [updates, new_state] = opt.update(grads, state, model);
  Model stepped = apply_updates(model, updates);
  EXPECT_EQ(stepped.weights[0].to_vector<float>(), std::vector<float>(4, 0.5f));
  EXPECT_EQ(stepped.weights[1].to_vector<float>(), std::vector<float>(2, 0.f));
  EXPECT_EQ(stepped.bias->to_vector<float>(), std::vector<float>(2, 0.5f));
  EXPECT_FALSE(stepped.unused.has_value());
  EXPECT_EQ(stepped.features.value, 2);
}

TEST(OptaxArgnumsTest, GradWithRespectToParamsStructAndInput) {
  // loss(p, x) = sum((x * w + b)^2): d/dw = 2 x r, d/db = 2 sum(r), d/dx = 2 w r, r = x w + b.
  auto loss = [](const Params& p, const Array& x) { return jnp::sum(jnp::square(x * p.w + p.b)); };
  Params params = MakeParams({1.0, -2.0, 0.5});
  Array x = jnp::array(std::vector<double>{3.0, 1.0});
  auto [dparams, dx] = jx::grad(loss, jx::argnums{0, 1})(params, x);
  // r = (3.5, -1.5)
  ExpectClose(Flat(dparams), {21.0, -3.0, 4.0}, 1e-15, "d/dparams");
  ExpectClose(dx.to_vector<double>(), {7.0, 6.0}, 1e-15, "d/dx");
  // The params gradient goes straight to the optimizer.
  auto opt = sgd(0.01);
  auto [updates, state] = opt.update(dparams, opt.init(params), params);
  ExpectClose(Flat(apply_updates(params, updates)), {0.79, -1.97, 0.46}, 1e-14, "stepped");
}

}  // namespace
}  // namespace jx::optax::optax_test
