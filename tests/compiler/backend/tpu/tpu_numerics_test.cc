// The TPU numerics pass: each f32 dot/conv becomes its bf16 MXU passes, and the CPU backend
// running the rewritten program computes what a TPU does: DEFAULT equals the host matmul of
// bf16-rounded inputs with f32 accumulation, HIGHEST matches f32, HIGH lies in between.
#include "jx/compiler/backend/tpu/tpu_numerics.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <random>
#include <vector>

#include "jx/compiler/backend/cpu/cpu_executable.h"
#include "jx/compiler/hlo/hlo_evaluator.h"
#include "jx/compiler/hlo/hlo_parser.h"
#include "jx/compiler/hlo/hlo_verifier.h"
#include "jx/compiler/hlo/str_util.h"
#include "tests/compiler/passes/pass_test_util.h"

namespace jx::tpu::tpu_numerics_test {
namespace {

using hlo::HloModule;
using hlo::Literal;
using hlo::testing::EntryLines;
using hlo::testing::Opcodes;
using ::testing::ElementsAre;

// Parses, runs the pass (it must change the module), verifies, and checks a second run has
// nothing left to do. (Not ParseAndRun: this pass changes values on purpose.)
std::unique_ptr<HloModule> RunNumerics(std::string_view text, hlo::Precision precision,
                                       bool expect_changed = true) {
  std::unique_ptr<HloModule> module = hlo::ParseHloModule(text).value();
  TpuNumerics pass(precision);
  absl::StatusOr<bool> changed = pass.Run(module.get());
  EXPECT_TRUE(changed.ok()) << changed.status();
  EXPECT_EQ(changed.value_or(!expect_changed), expect_changed) << module->ToString();
  absl::Status verified = hlo::VerifyHloModule(*module);
  EXPECT_TRUE(verified.ok()) << verified << "\n" << module->ToString();
  EXPECT_FALSE(pass.Run(module.get()).value_or(true)) << module->ToString();
  return module;
}

std::string Dot(int m, int k, int n, std::string_view type = "f32") {
  return hlo::StrCat("HloModule m\nENTRY %main {\n  %x = ", type, "[", m, ",", k,
                     "]{1,0} parameter(0)\n  %w = ", type, "[", k, ",", n,
                     "]{1,0} parameter(1)\n  ROOT %d = ", type, "[", m, ",", n,
                     "]{1,0} dot(%x, %w), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n}\n");
}

// Round to nearest even, as the MXU's bf16 inputs are.
float RoundToBf16(float x) {
  uint32_t bits;
  std::memcpy(&bits, &x, 4);
  bits += 0x7FFF + ((bits >> 16) & 1);
  bits &= 0xFFFF0000u;
  float out;
  std::memcpy(&out, &bits, 4);
  return out;
}

Literal RandomMatrix(int rows, int cols, std::mt19937& rng, float lo, float hi,
                     bool random_sign = false) {
  Literal lit(hlo::ShapeUtil::MakeShape(hlo::F32, {rows, cols}));
  std::uniform_real_distribution<float> dist(lo, hi);
  for (int64_t i = 0; i < lit.element_count(); ++i) {
    const float v = dist(rng);
    lit.SetFromDouble(i, random_sign && rng() % 2 ? -v : v);
  }
  return lit;
}

// The host matmul, inputs first passed through `round`, accumulated in Acc in k order.
template <typename Acc>
std::vector<Acc> HostMatmul(const Literal& x, const Literal& w, int m, int k, int n,
                            float (*round)(float)) {
  std::vector<Acc> out(static_cast<size_t>(m) * n, 0);
  const absl::Span<const float> a = x.data<float>(), b = w.data<float>();
  for (int i = 0; i < m; ++i) {
    for (int j = 0; j < n; ++j) {
      Acc acc = 0;
      for (int p = 0; p < k; ++p) {
        acc += static_cast<Acc>(round(a[i * k + p])) * static_cast<Acc>(round(b[p * n + j]));
      }
      out[i * n + j] = acc;
    }
  }
  return out;
}
float Identity(float x) { return x; }

// Runs the rewritten module on the CPU backend.
std::vector<float> RunOnCpu(std::unique_ptr<HloModule> module, const Literal& x,
                            const Literal& w) {
  std::unique_ptr<cpu::CpuExecutable> exe = cpu::CompileForCpu(std::move(module)).value();
  std::vector<Literal> out = exe->Run({&x, &w}).value();
  const absl::Span<const float> d = out[0].data<float>();
  return std::vector<float>(d.begin(), d.end());
}

// max |got - exact| / max over outputs of sum_k |a||b|: the normwise error of a matmul.
double NormwiseError(const std::vector<float>& got, const Literal& x, const Literal& w, int m,
                     int k, int n) {
  const std::vector<double> exact = HostMatmul<double>(x, w, m, k, n, Identity);
  Literal ax = x, aw = w;
  for (int64_t i = 0; i < ax.element_count(); ++i) ax.SetFromDouble(i, std::fabs(x.GetAsDouble(i)));
  for (int64_t i = 0; i < aw.element_count(); ++i) aw.SetFromDouble(i, std::fabs(w.GetAsDouble(i)));
  const std::vector<double> scale = HostMatmul<double>(ax, aw, m, k, n, Identity);
  double err = 0, norm = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    err = std::max(err, std::fabs(got[i] - exact[i]));
    norm = std::max(norm, scale[i]);
  }
  return err / norm;
}

TEST(TpuNumericsTest, DefaultRoundsBothOperandsToBf16) {
  auto module = RunNumerics(Dot(4, 8, 3), hlo::Precision::kDefault);
  EXPECT_THAT(Opcodes(*module->entry_computation()),
              ElementsAre("parameter", "convert", "convert", "parameter", "convert", "convert",
                          "dot"));
  EXPECT_THAT(EntryLines(*module),
              ElementsAre("%x = f32[4,8]{1,0} parameter(0)",
                          "%convert.4 = bf16[4,8]{1,0} convert(%x)",
                          "%convert.5 = f32[4,8]{1,0} convert(%convert.4)",
                          "%w = f32[8,3]{1,0} parameter(1)",
                          "%convert.6 = bf16[8,3]{1,0} convert(%w)",
                          "%convert.7 = f32[8,3]{1,0} convert(%convert.6)",
                          "ROOT %dot.8 = f32[4,3]{1,0} dot(%convert.5, %convert.7), "
                          "lhs_contracting_dims={1}, rhs_contracting_dims={0}"));
}

TEST(TpuNumericsTest, HighIsThreePassesAndHighestSix) {
  auto high = RunNumerics(Dot(4, 8, 3), hlo::Precision::kHigh);
  std::vector<std::string> ops = Opcodes(*high->entry_computation());
  EXPECT_EQ(std::count(ops.begin(), ops.end(), "dot"), 3);
  EXPECT_EQ(std::count(ops.begin(), ops.end(), "add"), 2);
  EXPECT_EQ(std::count(ops.begin(), ops.end(), "subtract"), 2);  // x - hi, w - hi
  auto highest = RunNumerics(Dot(4, 8, 3), hlo::Precision::kHighest);
  ops = Opcodes(*highest->entry_computation());
  EXPECT_EQ(std::count(ops.begin(), ops.end(), "dot"), 6);
  EXPECT_EQ(std::count(ops.begin(), ops.end(), "add"), 5);
  EXPECT_EQ(std::count(ops.begin(), ops.end(), "subtract"), 4);
  EXPECT_EQ(BF16PassCount(hlo::Precision::kDefault), 1);
  EXPECT_EQ(BF16PassCount(hlo::Precision::kHigh), 3);
  EXPECT_EQ(BF16PassCount(hlo::Precision::kHighest), 6);
}

TEST(TpuNumericsTest, ReadsTheOperandPrecisionOfEachContraction) {
  // The higher operand precision wins; the pass's fallback only raises it.
  std::string text = Dot(4, 8, 3);
  text.insert(text.rfind('\n', text.size() - 3), ", operand_precision={highest,default}");
  auto module = RunNumerics(text, hlo::Precision::kDefault);
  std::vector<std::string> ops = Opcodes(*module->entry_computation());
  EXPECT_EQ(std::count(ops.begin(), ops.end(), "dot"), 6) << module->ToString();
  text = Dot(4, 8, 3);
  text.insert(text.rfind('\n', text.size() - 3), ", operand_precision={high,high}");
  module = RunNumerics(text, hlo::Precision::kDefault);
  ops = Opcodes(*module->entry_computation());
  EXPECT_EQ(std::count(ops.begin(), ops.end(), "dot"), 3) << module->ToString();
  module = RunNumerics(text, hlo::Precision::kHighest);
  ops = Opcodes(*module->entry_computation());
  EXPECT_EQ(std::count(ops.begin(), ops.end(), "dot"), 6) << module->ToString();
}

TEST(TpuNumericsTest, Bf16OperandsNeedOnePassAndAccumulateInF32) {
  // bf16 x bf16: widened (exactly) to f32, one pass at any precision, rounded once at the end.
  auto module = RunNumerics(Dot(4, 8, 3, "bf16"), hlo::Precision::kHighest);
  EXPECT_THAT(Opcodes(*module->entry_computation()),
              ElementsAre("parameter", "convert", "parameter", "convert", "dot", "convert"));
  EXPECT_EQ(module->entry_computation()->root_instruction()->shape().element_type(), hlo::BF16);
}

TEST(TpuNumericsTest, F64AndIntegerContractionsAreLeftAlone) {
  std::unique_ptr<HloModule> module = hlo::ParseHloModule(Dot(4, 8, 3, "f64")).value();
  TpuNumerics pass;
  EXPECT_FALSE(pass.Run(module.get()).value());
  EXPECT_EQ(pass.emulated_f64_ops(), 1);
  RunNumerics(Dot(4, 8, 3, "s32"), hlo::Precision::kDefault, /*expect_changed=*/false);
}

TEST(TpuNumericsTest, DefaultOnTheCpuEqualsBf16RoundedHostMatmulBitForBit) {
  // Inputs of magnitude in [1, 2): rounded to bf16 they are m/128 with m an integer of at
  // most 8 bits, so every product is an integer over 2^14 below 2^16 and any sum of K=128
  // of them stays below 2^23: exact in f32 whatever order the GEMM adds in. So the CPU
  // result must equal the bf16-rounded host matmul bit for bit, and differ from the f32 one.
  constexpr int m = 16, k = 128, n = 24;
  std::mt19937 rng(7);
  const Literal x = RandomMatrix(m, k, rng, 1, 2, /*random_sign=*/true);
  const Literal w = RandomMatrix(k, n, rng, 1, 2, /*random_sign=*/true);
  const std::vector<float> got = RunOnCpu(RunNumerics(Dot(m, k, n), hlo::Precision::kDefault), x, w);
  const std::vector<float> want = HostMatmul<float>(x, w, m, k, n, RoundToBf16);
  const std::vector<float> f32 = HostMatmul<float>(x, w, m, k, n, Identity);
  ASSERT_EQ(got.size(), want.size());
  int differs_from_f32 = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i], want[i]) << "element " << i;
    differs_from_f32 += got[i] != f32[i];
  }
  EXPECT_GT(differs_from_f32, static_cast<int>(got.size()) / 2);
}

TEST(TpuNumericsTest, DefaultMatchesBf16RoundedHostMatmulUpToAccumulationOrder) {
  // General inputs: the products of bf16 values are exact in f32, so the only difference
  // from the host loop is the order of the f32 additions (the GEMM blocks K): bounded by
  // K * 2^-24 * sum |a b| per output.
  constexpr int m = 33, k = 300, n = 70;
  std::mt19937 rng(11);
  const Literal x = RandomMatrix(m, k, rng, -2, 2);
  const Literal w = RandomMatrix(k, n, rng, -2, 2);
  const std::vector<float> got = RunOnCpu(RunNumerics(Dot(m, k, n), hlo::Precision::kDefault), x, w);
  const std::vector<float> want = HostMatmul<float>(x, w, m, k, n, RoundToBf16);
  const std::vector<double> exact_rounded = HostMatmul<double>(x, w, m, k, n, RoundToBf16);
  for (size_t i = 0; i < got.size(); ++i) {
    double scale = 0;
    for (int p = 0; p < k; ++p) {
      const int row = static_cast<int>(i) / n, col = static_cast<int>(i) % n;
      scale += std::fabs(RoundToBf16(x.data<float>()[row * k + p]) *
                         RoundToBf16(w.data<float>()[p * n + col]));
    }
    const double bound = k * std::ldexp(1.0, -24) * scale;
    EXPECT_NEAR(got[i], want[i], 2 * bound) << "element " << i;
    EXPECT_NEAR(got[i], exact_rounded[i], bound) << "element " << i;
  }
}

TEST(TpuNumericsTest, HighestMatchesF32AndHighLiesBetween) {
  constexpr int m = 32, k = 256, n = 48;
  std::mt19937 rng(3);
  const Literal x = RandomMatrix(m, k, rng, -2, 2);
  const Literal w = RandomMatrix(k, n, rng, -2, 2);
  const double e_default =
      NormwiseError(RunOnCpu(RunNumerics(Dot(m, k, n), hlo::Precision::kDefault), x, w), x, w, m, k, n);
  const double e_high =
      NormwiseError(RunOnCpu(RunNumerics(Dot(m, k, n), hlo::Precision::kHigh), x, w), x, w, m, k, n);
  const double e_highest =
      NormwiseError(RunOnCpu(RunNumerics(Dot(m, k, n), hlo::Precision::kHighest), x, w), x, w, m, k, n);
  const double e_f32 = NormwiseError(HostMatmul<float>(x, w, m, k, n, Identity), x, w, m, k, n);
  // bf16 keeps 8 significant bits: DEFAULT's error is ~2^-9 relative; bf16_3x drops the
  // lo*lo term (~2^-16); bf16_6x is as accurate as an f32 matmul.
  EXPECT_GT(e_default, 1e-4);
  EXPECT_LT(e_default, 1e-2);
  EXPECT_LT(e_high, e_default / 50);
  EXPECT_LT(e_high, 1e-4);
  EXPECT_LT(e_highest, e_high);
  EXPECT_LT(e_highest, 1e-6);
  EXPECT_LT(e_highest, 4 * e_f32 + 1e-7);
}

TEST(TpuNumericsTest, ConvolutionAtDefaultEqualsTheConvolutionOfRoundedInputs) {
  constexpr char kConv[] = R"(HloModule m
ENTRY %main {
  %x = f32[2,8,8,16]{3,2,1,0} parameter(0)
  %k = f32[3,3,16,8]{3,2,1,0} parameter(1)
  ROOT %c = f32[2,8,8,8]{3,2,1,0} convolution(%x, %k), window={size=3x3 pad=1_1x1_1}, dim_labels=b01f_01io->b01f
}
)";
  std::mt19937 rng(5);
  Literal x(hlo::ShapeUtil::MakeShape(hlo::F32, {2, 8, 8, 16}));
  Literal w(hlo::ShapeUtil::MakeShape(hlo::F32, {3, 3, 16, 8}));
  Literal xr = x, wr = w;
  std::uniform_real_distribution<float> dist(-2, 2);
  for (int64_t i = 0; i < x.element_count(); ++i) {
    x.SetFromDouble(i, dist(rng));
    xr.SetFromDouble(i, RoundToBf16(static_cast<float>(x.GetAsDouble(i))));
  }
  for (int64_t i = 0; i < w.element_count(); ++i) {
    w.SetFromDouble(i, dist(rng));
    wr.SetFromDouble(i, RoundToBf16(static_cast<float>(w.GetAsDouble(i))));
  }
  const std::vector<float> got = RunOnCpu(RunNumerics(kConv, hlo::Precision::kDefault), x, w);
  // The oracle: the unrewritten convolution on pre-rounded inputs (reference evaluator).
  std::unique_ptr<HloModule> original = hlo::ParseHloModule(kConv).value();
  hlo::HloEvaluator evaluator;
  const Literal want = evaluator.Evaluate(*original, {&xr, &wr}).value();
  const Literal unrounded = evaluator.Evaluate(*original, {&x, &w}).value();
  double max_diff = 0, max_diff_unrounded = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    max_diff = std::max(max_diff, std::fabs(got[i] - want.GetAsDouble(i)));
    max_diff_unrounded = std::max(max_diff_unrounded, std::fabs(got[i] - unrounded.GetAsDouble(i)));
  }
  // 144 products of magnitude < 4 per output: order differences stay below 144*4*2^-24*4.
  EXPECT_LT(max_diff, 1e-4);
  EXPECT_GT(max_diff_unrounded, 1e-3);  // the rounding is really there
}

}  // namespace
}  // namespace jx::tpu::tpu_numerics_test
