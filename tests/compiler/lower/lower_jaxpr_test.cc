// LowerJaxpr: golden HLO text for small jaxprs (elementwise with a weak literal, a reduce, a
// dot, a cond, a scan); every module verifies and evaluates to eager's values; errors name the
// primitive; consts fold into constants or become parameters.
#include "jx/compiler/lower/lower_jaxpr.h"

#include <gtest/gtest.h>

#include "jx/compiler/hlo/hlo_evaluator.h"
#include "jx/compiler/hlo/hlo_verifier.h"
#include "jx/compiler/lower/literal_convert.h"
#include "jx/compiler/lower/lower_context.h"
#include "jx/core/registry.h"
#include "jx/jx.h"
#include "jx/transforms/staging.h"

namespace jx::lower_jaxpr_test {
namespace {

namespace jnp = jx::numpy;

constexpr char kGoldenSin[] = R"hlo(HloModule jit_f, entry_computation_layout={(f32[3]{0})->f32[3]{0}}

ENTRY %main (Arg_0: f32[3]) -> f32[3] {
  %Arg_0 = f32[3]{0} parameter(0)
  %sine.2 = f32[3]{0} sine(f32[3]{0} %Arg_0), metadata={op_type="sin" op_name="jit(f)/sin"}
  %constant.3 = f32[] constant(2), metadata={op_type="mul" op_name="jit(f)/mul"}
  %broadcast.4 = f32[3]{0} broadcast(f32[] %constant.3), dimensions={}, metadata={op_type="mul" op_name="jit(f)/mul"}
  ROOT %multiply.5 = f32[3]{0} multiply(f32[3]{0} %sine.2, f32[3]{0} %broadcast.4), metadata={op_type="mul" op_name="jit(f)/mul"}
}
)hlo";
constexpr char kGoldenReduce[] = R"hlo(HloModule jit_f, entry_computation_layout={(f32[2,3]{1,0})->f32[2]{0}}

%add_reducer (lhs: f64[], rhs: f64[]) -> f64[] {
  %lhs = f64[] parameter(0), metadata={op_type="reduce_sum" op_name="jit(f)/reduce_sum"}
  %rhs = f64[] parameter(1), metadata={op_type="reduce_sum" op_name="jit(f)/reduce_sum"}
  ROOT %add.6 = f64[] add(f64[] %lhs, f64[] %rhs), metadata={op_type="reduce_sum" op_name="jit(f)/reduce_sum"}
}

ENTRY %main (Arg_0: f32[2,3]) -> f32[2] {
  %Arg_0 = f32[2,3]{1,0} parameter(0)
  %convert.2 = f64[2,3]{1,0} convert(f32[2,3]{1,0} %Arg_0), metadata={op_type="reduce_sum" op_name="jit(f)/reduce_sum"}
  %constant.3 = f64[] constant(0), metadata={op_type="reduce_sum" op_name="jit(f)/reduce_sum"}
  %reduce.7 = f64[2]{0} reduce(f64[2,3]{1,0} %convert.2, f64[] %constant.3), dimensions={1}, to_apply=%add_reducer, metadata={op_type="reduce_sum" op_name="jit(f)/reduce_sum"}
  ROOT %convert.8 = f32[2]{0} convert(f64[2]{0} %reduce.7), metadata={op_type="reduce_sum" op_name="jit(f)/reduce_sum"}
}
)hlo";
constexpr char kGoldenDot[] = R"hlo(HloModule jit_f, entry_computation_layout={(f32[2,3]{1,0}, f32[3,2]{1,0})->f32[2,2]{1,0}}

ENTRY %main (Arg_0: f32[2,3], Arg_1: f32[3,2]) -> f32[2,2] {
  %Arg_0 = f32[2,3]{1,0} parameter(0)
  %Arg_1 = f32[3,2]{1,0} parameter(1)
  ROOT %dot.3 = f32[2,2]{1,0} dot(f32[2,3]{1,0} %Arg_0, f32[3,2]{1,0} %Arg_1), lhs_contracting_dims={1}, rhs_contracting_dims={0}, metadata={op_type="dot_general" op_name="jit(f)/dot_general"}
}
)hlo";
constexpr char kGoldenCond[] = R"hlo(HloModule jit_f, entry_computation_layout={(f32[])->f32[]}

%branch_0 (arg_tuple: (f32[])) -> (f32[]) {
  %arg_tuple = (f32[]) parameter(0), metadata={op_type="cond" op_name="jit(f)/cond"}
  %get-tuple-element.11 = f32[] get-tuple-element((f32[]) %arg_tuple), index=0, metadata={op_type="cond" op_name="jit(f)/cond"}
  %negate.12 = f32[] negate(f32[] %get-tuple-element.11), metadata={op_type="neg" op_name="jit(f)/cond/branch_0/neg"}
  ROOT %tuple.13 = (f32[]) tuple(f32[] %negate.12), metadata={op_type="cond" op_name="jit(f)/cond"}
}

%branch_1 (arg_tuple.14: (f32[])) -> (f32[]) {
  %arg_tuple.14 = (f32[]) parameter(0), metadata={op_type="cond" op_name="jit(f)/cond"}
  %get-tuple-element.15 = f32[] get-tuple-element((f32[]) %arg_tuple.14), index=0, metadata={op_type="cond" op_name="jit(f)/cond"}
  %constant.16 = f32[] constant(2), metadata={op_type="mul" op_name="jit(f)/cond/branch_1/mul"}
  %multiply.17 = f32[] multiply(f32[] %get-tuple-element.15, f32[] %constant.16), metadata={op_type="mul" op_name="jit(f)/cond/branch_1/mul"}
  ROOT %tuple.18 = (f32[]) tuple(f32[] %multiply.17), metadata={op_type="cond" op_name="jit(f)/cond"}
}

ENTRY %main (Arg_0: f32[]) -> f32[] {
  %Arg_0 = f32[] parameter(0)
  %constant.2 = f32[] constant(0), metadata={op_type="gt" op_name="jit(f)/gt"}
  %compare.3 = pred[] compare(f32[] %Arg_0, f32[] %constant.2), direction=GT, metadata={op_type="gt" op_name="jit(f)/gt"}
  %convert.4 = s32[] convert(pred[] %compare.3), metadata={op_type="convert_element_type" op_name="jit(f)/convert_element_type"}
  %constant.6 = s32[] constant(1), metadata={op_type="cond" op_name="jit(f)/cond"}
  %minimum.7 = s32[] minimum(s32[] %convert.4, s32[] %constant.6), metadata={op_type="cond" op_name="jit(f)/cond"}
  %constant.5 = s32[] constant(0), metadata={op_type="cond" op_name="jit(f)/cond"}
  %maximum.8 = s32[] maximum(s32[] %minimum.7, s32[] %constant.5), metadata={op_type="cond" op_name="jit(f)/cond"}
  %tuple.9 = (f32[]) tuple(f32[] %Arg_0), metadata={op_type="cond" op_name="jit(f)/cond"}
  %conditional.19 = (f32[]) conditional(s32[] %maximum.8, (f32[]) %tuple.9, (f32[]) %tuple.9), branch_computations={%branch_0, %branch_1}, metadata={op_type="cond" op_name="jit(f)/cond"}
  ROOT %get-tuple-element.20 = f32[] get-tuple-element((f32[]) %conditional.19), index=0, metadata={op_type="cond" op_name="jit(f)/cond"}
}
)hlo";
constexpr char kGoldenScan[] = R"hlo(HloModule jit_f, entry_computation_layout={(f32[2]{0}, f32[3,2]{1,0})->(f32[2]{0}, f32[3,2]{1,0})}

%scan_cond (state: (s32[], f32[2], f32[3,2], f32[3,2])) -> pred[] {
  %state = (s32[], f32[2]{0}, f32[3,2]{1,0}, f32[3,2]{1,0}) parameter(0), metadata={op_type="scan" op_name="jit(f)/scan"}
  %get-tuple-element.7 = s32[] get-tuple-element((s32[], f32[2]{0}, f32[3,2]{1,0}, f32[3,2]{1,0}) %state), index=0, metadata={op_type="scan" op_name="jit(f)/scan"}
  %constant.8 = s32[] constant(3), metadata={op_type="scan" op_name="jit(f)/scan"}
  ROOT %compare.9 = pred[] compare(s32[] %get-tuple-element.7, s32[] %constant.8), direction=LT, metadata={op_type="scan" op_name="jit(f)/scan"}
}

%scan_body (state.10: (s32[], f32[2], f32[3,2], f32[3,2])) -> (s32[], f32[2], f32[3,2], f32[3,2]) {
  %state.10 = (s32[], f32[2]{0}, f32[3,2]{1,0}, f32[3,2]{1,0}) parameter(0), metadata={op_type="scan" op_name="jit(f)/scan"}
  %get-tuple-element.11 = s32[] get-tuple-element((s32[], f32[2]{0}, f32[3,2]{1,0}, f32[3,2]{1,0}) %state.10), index=0, metadata={op_type="scan" op_name="jit(f)/scan"}
  %constant.23 = s32[] constant(1), metadata={op_type="scan" op_name="jit(f)/scan"}
  %add.24 = s32[] add(s32[] %get-tuple-element.11, s32[] %constant.23), metadata={op_type="scan" op_name="jit(f)/scan"}
  %get-tuple-element.12 = f32[2]{0} get-tuple-element((s32[], f32[2]{0}, f32[3,2]{1,0}, f32[3,2]{1,0}) %state.10), index=1, metadata={op_type="scan" op_name="jit(f)/scan"}
  %constant.18 = f32[] constant(0.5), metadata={op_type="mul" op_name="jit(f)/scan/body/mul"}
  %broadcast.19 = f32[2]{0} broadcast(f32[] %constant.18), dimensions={}, metadata={op_type="mul" op_name="jit(f)/scan/body/mul"}
  %multiply.20 = f32[2]{0} multiply(f32[2]{0} %get-tuple-element.12, f32[2]{0} %broadcast.19), metadata={op_type="mul" op_name="jit(f)/scan/body/mul"}
  %get-tuple-element.13 = f32[3,2]{1,0} get-tuple-element((s32[], f32[2]{0}, f32[3,2]{1,0}, f32[3,2]{1,0}) %state.10), index=2, metadata={op_type="scan" op_name="jit(f)/scan"}
  %constant.15 = s32[] constant(0), metadata={op_type="scan" op_name="jit(f)/scan"}
  %dynamic-slice.16 = f32[1,2]{1,0} dynamic-slice(f32[3,2]{1,0} %get-tuple-element.13, s32[] %get-tuple-element.11, s32[] %constant.15), dynamic_slice_sizes={1,2}, metadata={op_type="scan" op_name="jit(f)/scan"}
  %reshape.17 = f32[2]{0} reshape(f32[1,2]{1,0} %dynamic-slice.16), metadata={op_type="scan" op_name="jit(f)/scan"}
  %add.21 = f32[2]{0} add(f32[2]{0} %multiply.20, f32[2]{0} %reshape.17), metadata={op_type="add" op_name="jit(f)/scan/body/add"}
  %get-tuple-element.14 = f32[3,2]{1,0} get-tuple-element((s32[], f32[2]{0}, f32[3,2]{1,0}, f32[3,2]{1,0}) %state.10), index=3, metadata={op_type="scan" op_name="jit(f)/scan"}
  %sine.22 = f32[2]{0} sine(f32[2]{0} %add.21), metadata={op_type="sin" op_name="jit(f)/scan/body/sin"}
  %reshape.25 = f32[1,2]{1,0} reshape(f32[2]{0} %sine.22), metadata={op_type="scan" op_name="jit(f)/scan"}
  %dynamic-update-slice.26 = f32[3,2]{1,0} dynamic-update-slice(f32[3,2]{1,0} %get-tuple-element.14, f32[1,2]{1,0} %reshape.25, s32[] %get-tuple-element.11, s32[] %constant.15), metadata={op_type="scan" op_name="jit(f)/scan"}
  ROOT %tuple.27 = (s32[], f32[2]{0}, f32[3,2]{1,0}, f32[3,2]{1,0}) tuple(s32[] %add.24, f32[2]{0} %add.21, f32[3,2]{1,0} %get-tuple-element.13, f32[3,2]{1,0} %dynamic-update-slice.26), metadata={op_type="scan" op_name="jit(f)/scan"}
}

ENTRY %main (Arg_0: f32[2], Arg_1: f32[3,2]) -> (f32[2], f32[3,2]) {
  %constant.3 = s32[] constant(0), metadata={op_type="scan" op_name="jit(f)/scan"}
  %Arg_0 = f32[2]{0} parameter(0)
  %Arg_1 = f32[3,2]{1,0} parameter(1)
  %constant.4 = f32[] constant(0), metadata={op_type="scan" op_name="jit(f)/scan"}
  %broadcast.5 = f32[3,2]{1,0} broadcast(f32[] %constant.4), dimensions={}, metadata={op_type="scan" op_name="jit(f)/scan"}
  %tuple.28 = (s32[], f32[2]{0}, f32[3,2]{1,0}, f32[3,2]{1,0}) tuple(s32[] %constant.3, f32[2]{0} %Arg_0, f32[3,2]{1,0} %Arg_1, f32[3,2]{1,0} %broadcast.5), metadata={op_type="scan" op_name="jit(f)/scan"}
  %while.29 = (s32[], f32[2]{0}, f32[3,2]{1,0}, f32[3,2]{1,0}) while((s32[], f32[2]{0}, f32[3,2]{1,0}, f32[3,2]{1,0}) %tuple.28), condition=%scan_cond, body=%scan_body, metadata={op_type="scan" op_name="jit(f)/scan"}
  %get-tuple-element.30 = f32[2]{0} get-tuple-element((s32[], f32[2]{0}, f32[3,2]{1,0}, f32[3,2]{1,0}) %while.29), index=1, metadata={op_type="scan" op_name="jit(f)/scan"}
  %get-tuple-element.31 = f32[3,2]{1,0} get-tuple-element((s32[], f32[2]{0}, f32[3,2]{1,0}, f32[3,2]{1,0}) %while.29), index=3, metadata={op_type="scan" op_name="jit(f)/scan"}
  ROOT %tuple.32 = (f32[2]{0}, f32[3,2]{1,0}) tuple(f32[2]{0} %get-tuple-element.30, f32[3,2]{1,0} %get-tuple-element.31)
}
)hlo";

ClosedJaxpr Trace(const std::function<Arrays(absl::Span<const Array>)>& f, std::vector<ShapedArray> avals) {
  lax::RegisterAll();
  return TraceToJaxpr(f, avals, "f");
}

std::unique_ptr<hlo::HloModule> Lower(const ClosedJaxpr& j, const LowerOptions& options = {}) {
  absl::StatusOr<std::unique_ptr<hlo::HloModule>> m = LowerJaxpr(j, "jit_f", options);
  EXPECT_TRUE(m.ok()) << m.status();
  if (!m.ok()) return nullptr;
  const absl::Status verified = hlo::VerifyHloModule(**m);
  EXPECT_TRUE(verified.ok()) << verified << "\n" << (*m)->ToString();
  return *std::move(m);
}

// Evaluates the module on args and returns its (single, non-tuple) result.
Array Evaluate(const hlo::HloModule& m, const std::vector<Array>& args) {
  std::vector<hlo::Literal> lits;
  for (const Array& a : args) lits.push_back(ArrayToLiteral(a));
  std::vector<const hlo::Literal*> ptrs;
  for (const hlo::Literal& l : lits) ptrs.push_back(&l);
  hlo::HloEvaluator evaluator;
  absl::StatusOr<hlo::Literal> out = evaluator.Evaluate(m, ptrs);
  EXPECT_TRUE(out.ok()) << out.status();
  return LiteralToArray(*out);
}

void ExpectNear(const Array& got, const Array& want) {
  ASSERT_EQ(got.shape(), want.shape());
  ASSERT_EQ(got.dtype(), want.dtype());
  const std::vector<double> g = got.to_vector<double>(), w = want.to_vector<double>();
  for (size_t i = 0; i < g.size(); ++i) EXPECT_NEAR(g[i], w[i], 1e-5 * (1 + std::fabs(w[i]))) << "element " << i;
}

TEST(LowerJaxprTest, SinTimesWeakLiteral) {
  ClosedJaxpr j = Trace([](absl::Span<const Array> x) { return Arrays{lax::mul(lax::sin(x[0]), Array(2.0))}; },
                        {ShapedArray{{3}, float32}});
  auto m = Lower(j);
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m->ToString(), kGoldenSin);
  const Array x = jnp::array({0.5f, 1.f, -2.f});
  ExpectNear(Evaluate(*m, {x}), lax::mul(lax::sin(x), Array(2.0)));
}

TEST(LowerJaxprTest, ReduceSum) {
  ClosedJaxpr j = Trace([](absl::Span<const Array> x) { return Arrays{lax::reduce_sum(x[0], {1})}; },
                        {ShapedArray{{2, 3}, float32}});
  auto m = Lower(j);
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m->ToString(), kGoldenReduce);
  const Array x = jnp::array({{1.f, 2.f, 3.f}, {4.f, 5.f, 6.f}});
  ExpectNear(Evaluate(*m, {x}), lax::reduce_sum(x, {1}));
}

TEST(LowerJaxprTest, DotGeneral) {
  ClosedJaxpr j = Trace([](absl::Span<const Array> x) { return Arrays{jnp::matmul(x[0], x[1])}; },
                        {ShapedArray{{2, 3}, float32}, ShapedArray{{3, 2}, float32}});
  auto m = Lower(j);
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m->ToString(), kGoldenDot);
  const Array a = jnp::array({{1.f, 2.f, 3.f}, {4.f, 5.f, 6.f}}), b = jnp::array({{1.f, 0.f}, {0.f, 1.f}, {2.f, 3.f}});
  ExpectNear(Evaluate(*m, {a, b}), jnp::matmul(a, b));
}

Arrays CondFn(absl::Span<const Array> x) {
  return Arrays{lax::cond(lax::gt(x[0], Array(0.f)), [](Array v) { return lax::mul(v, Array(2.f)); },
                          [](Array v) { return lax::neg(v); }, x[0])};
}

TEST(LowerJaxprTest, Cond) {
  ClosedJaxpr j = Trace(CondFn, {ShapedArray{{}, float32}});
  auto m = Lower(j);
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m->ToString(), kGoldenCond);
  for (float v : {3.f, -4.f}) ExpectNear(Evaluate(*m, {Array(v).astype(float32)}), CondFn({Array(v).astype(float32)})[0]);
}

Arrays ScanFn(absl::Span<const Array> x) {
  auto [h, hs] = lax::scan(
      [](Array h, Array v) {
        Array h2 = lax::add(lax::mul(h, Array(0.5f)), v);
        return std::pair{h2, lax::sin(h2)};
      },
      x[0], x[1]);
  return Arrays{h, hs};
}

TEST(LowerJaxprTest, Scan) {
  ClosedJaxpr j = Trace(ScanFn, {ShapedArray{{2}, float32}, ShapedArray{{3, 2}, float32}});
  auto m = Lower(j);
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m->ToString(), kGoldenScan);
  const Array h0 = jnp::array({1.f, -1.f}), xs = jnp::array({{1.f, 2.f}, {3.f, 4.f}, {5.f, 6.f}});
  std::vector<hlo::Literal> lits = {ArrayToLiteral(h0), ArrayToLiteral(xs)};
  hlo::HloEvaluator evaluator;
  absl::StatusOr<hlo::Literal> out = evaluator.Evaluate(*m, {&lits[0], &lits[1]});
  ASSERT_TRUE(out.ok()) << out.status();
  const Arrays want = ScanFn(std::vector<Array>{h0, xs});
  ExpectNear(LiteralToArray(out->tuple_elements()[0]), want[0]);
  ExpectNear(LiteralToArray(out->tuple_elements()[1]), want[1]);
}

TEST(LowerJaxprTest, WhileLoopEvaluates) {
  auto g = [](absl::Span<const Array> x) {
    const Array y = x[0];
    return Arrays{lax::fori_loop(0, 5, [y](Array, Array acc) { return lax::add(lax::mul(acc, Array(2.f)), y); }, y)};
  };
  auto m = Lower(Trace(g, {ShapedArray{{2}, float32}}));
  ASSERT_NE(m, nullptr);
  const Array x = jnp::array({1.f, -0.5f});
  ExpectNear(Evaluate(*m, {x}), g(std::vector<Array>{x})[0]);
}

// stop_gradient is staged like any primitive and lowers as the identity.
TEST(LowerJaxprTest, StopGradientIsTheIdentity) {
  ClosedJaxpr j = Trace([](absl::Span<const Array> x) { return Arrays{lax::sin(lax::stop_gradient(x[0]))}; },
                        {ShapedArray{{2}, float32}});
  ASSERT_EQ(j.jaxpr->eqns.size(), 2u) << j;
  EXPECT_EQ(j.jaxpr->eqns[0].primitive.name(), "stop_gradient");
  auto m = Lower(j);
  ASSERT_NE(m, nullptr);
  const Array x = jnp::array({1.f, 2.f});
  ExpectNear(Evaluate(*m, {x}), lax::sin(x));
}

TEST(LowerJaxprTest, ConstsFoldOrBecomeParameters) {
  const Array w = jnp::array({1.f, 2.f, 3.f});
  ClosedJaxpr j = Trace([&w](absl::Span<const Array> x) { return Arrays{lax::mul(x[0], w)}; },
                        {ShapedArray{{3}, float32}});
  ASSERT_EQ(j.consts.size(), 1u);
  auto folded = Lower(j);
  ASSERT_NE(folded, nullptr);
  EXPECT_EQ(folded->entry_computation()->num_parameters(), 1);
  const Array x = jnp::array({2.f, 2.f, 2.f});
  ExpectNear(Evaluate(*folded, {x}), lax::mul(x, w));
  auto params = Lower(j, {.consts_as_parameters = true});
  ASSERT_NE(params, nullptr);
  EXPECT_EQ(params->entry_computation()->num_parameters(), 2);
  ExpectNear(Evaluate(*params, {w, x}), lax::mul(x, w));
}

TEST(LowerJaxprTest, MissingRuleNamesThePrimitive) {
  lax::RegisterAll();
  const Primitive p = Primitive::Intern("lower_test_no_rule");
  PrimitiveRules& rules = GlobalRegistry().Define(p);
  rules.abstract_eval = [](InAvals in, const ParamMap&) { return Avals{*in[0]}; };
  rules.unsupported["lower"] = "a test primitive without a lowering";
  ClosedJaxpr j = TraceToJaxpr([p](absl::Span<const Array> x) { return Arrays{Bind(p, {x[0]}, {})[0]}; },
                               std::vector<ShapedArray>{ShapedArray{{2}, float32}}, "f");
  absl::StatusOr<std::unique_ptr<hlo::HloModule>> m = LowerJaxpr(j, "jit_f");
  ASSERT_FALSE(m.ok());
  EXPECT_NE(std::string(m.status().message()).find("'lower_test_no_rule' has no lowering rule"), std::string::npos)
      << m.status();
  EXPECT_NE(std::string(m.status().message()).find("a test primitive without a lowering"), std::string::npos);
}

// A rule reads its equation's avals where the jaxpr keeps them (by index and by iteration);
// a failing rule's error names the primitive and its input avals.
TEST(LowerJaxprTest, ARuleSeesItsAvalsAndItsErrorNamesThem) {
  lax::RegisterAll();
  const Primitive p = Primitive::Intern("lower_test_reads_avals");
  PrimitiveRules& rules = GlobalRegistry().Define(p);
  rules.abstract_eval = [](InAvals in, const ParamMap&) { return Avals{*in[1], *in[0]}; };
  std::vector<std::string> seen;
  rules.lower = [&seen](LowerContext& ctx) -> absl::Status {
    for (const ShapedArray& a : ctx.in_avals()) seen.push_back(a.str());
    for (size_t i = 0; i < ctx.out_avals().size(); ++i) seen.push_back(ctx.out_aval(i).str());
    return absl::InvalidArgumentError("no HLO for this test");
  };
  ClosedJaxpr j = TraceToJaxpr(
      [p](absl::Span<const Array> x) {
        auto outs = Bind(p, {x[0], x[1]}, {});
        return Arrays{outs[0], outs[1]};
      },
      std::vector<ShapedArray>{ShapedArray{{2}, float32}, ShapedArray{{3}, int32}}, "f");
  absl::StatusOr<std::unique_ptr<hlo::HloModule>> m = LowerJaxpr(j, "jit_f");
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(seen, (std::vector<std::string>{"f32[2]", "i32[3]", "i32[3]", "f32[2]"}));
  EXPECT_NE(std::string(m.status().message()).find("lowering lower_test_reads_avals (jit(f)/lower_test_reads_avals) on (f32[2], i32[3]): no HLO for this test"),
            std::string::npos)
      << m.status();
}

TEST(LowerJaxprTest, TupleResultAndMultipleOutputs) {
  ClosedJaxpr j = Trace([](absl::Span<const Array> x) { return Arrays{lax::sin(x[0]), x[0]}; },
                        {ShapedArray{{2}, float32}});
  auto m = Lower(j);
  ASSERT_NE(m, nullptr);
  EXPECT_TRUE(m->entry_computation()->root_instruction()->shape().IsTuple());
  auto single = Lower(Trace([](absl::Span<const Array> x) { return Arrays{x[0]}; }, {ShapedArray{{2}, float32}}),
                      {.tuple_result = true});
  ASSERT_NE(single, nullptr);
  EXPECT_TRUE(single->entry_computation()->root_instruction()->shape().IsTuple());
}

TEST(LiteralConvertTest, EveryDTypeRoundTrips) {
  for (DType d : {bool_, int8, int16, int32, int64, uint8, uint16, uint32, uint64, float16, bfloat16, float32, float64}) {
    const Array a = lax::convert_element_type(jnp::array({0.f, 1.f, 3.f}), d);
    const hlo::Literal lit = ArrayToLiteral(a);
    EXPECT_EQ(lit.shape(), hlo::ShapeUtil::MakeShape(PrimitiveTypeOf(d), {3})) << dtype_name(d);
    EXPECT_EQ(DTypeOf(PrimitiveTypeOf(d)).value(), d);
    const Array back = LiteralToArray(lit);
    EXPECT_EQ(back.dtype(), d);
    EXPECT_EQ(back.to_vector<double>(), a.to_vector<double>()) << dtype_name(d);
  }
  EXPECT_FALSE(DTypeOf(hlo::TUPLE).ok());
}

}  // namespace
}  // namespace jx::lower_jaxpr_test
