// MaskedGatherFusion and its kernel: a gather whose rows a loop fusion then replaces by a
// fill value where a mask is false (how jnp.take's default FILL_OR_DROP mode lowers) runs as
// one kCustom fusion: the gather, then the fill over the masked rows. The result must be the
// unfused program's (the evaluator on the same text), bit for bit: every element type the
// test claims, batch sizes 1, 15, 16, 17, 33, indices in bounds, negative and past the end,
// masks along leading dims (the run-per-row path) and along a trailing dim (the odometer
// path), a mask that is a fusion parameter. A gather read elsewhere stays unfused.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "jx/compiler/backend/cpu/masked_gather_fusion.h"
#include "jx/compiler/hlo/hlo_computation.h"
#include "jx/compiler/hlo/str_util.h"
#include "tests/compiler/backend/cpu/cpu_test_util.h"

namespace jx::cpu::masked_gather_fusion_test {
namespace {

using hlo::HloInstruction;
using hlo::HloOpcode;
using hlo::Literal;

// Rows of x: T[n, 5] by s32[b] indices; out-of-range rows get `fill`. `extra_root`, when
// set, replaces the root (to read the gather elsewhere too).
std::string TakeRows(const std::string& t, int64_t n, int64_t b, const std::string& fill,
                     const std::string& extra_root = "") {
  const std::string x = hlo::StrCat(t, "[", n, ",5]"), out = hlo::StrCat(t, "[", b, ",5]");
  const std::string idx = hlo::StrCat("s32[", b, "]");
  return hlo::StrCat(
      "HloModule take\n",
      "%idx_f (p: ", idx, ") -> s32[", b, ",1] {\n  %p = ", idx, " parameter(0)\n  ROOT %r = s32[", b,
      ",1] reshape(%p)\n}\n",
      "%sel_f (p0: ", idx, ", p1: ", out, ") -> ", out, " {\n  %p0 = ", idx, " parameter(0)\n  %p1 = ", out,
      " parameter(1)\n  %zero = s32[] constant(0)\n  %bz = ", idx, " broadcast(%zero), dimensions={}\n",
      "  %last = s32[] constant(", n - 1, ")\n  %bl = ", idx, " broadcast(%last), dimensions={}\n",
      "  %ge = pred[", b, "] compare(%p0, %bz), direction=GE\n  %le = pred[", b,
      "] compare(%p0, %bl), direction=LE\n  %in = pred[", b, "] and(%ge, %le)\n  %m = pred[", b,
      ",5] broadcast(%in), dimensions={0}\n  %f = ", t, "[] constant(", fill, ")\n  %bf = ", out,
      " broadcast(%f), dimensions={}\n  ROOT %s = ", out, " select(%m, %p1, %bf)\n}\n",
      "ENTRY %main (x: ", x, ", i: ", idx, ") -> ", extra_root.empty() ? out : hlo::StrCat("(", out, ", ", out, ")"),
      " {\n  %x = ", x, " parameter(0)\n  %i = ", idx, " parameter(1)\n  %ii = s32[", b,
      ",1] fusion(%i), kind=kLoop, calls=%idx_f\n  %g = ", out,
      " gather(%x, %ii), offset_dims={1}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=1, "
      "slice_sizes={1,5}\n  ",
      extra_root.empty() ? "ROOT " : "", "%y = ", out, " fusion(%i, %g), kind=kLoop, calls=%sel_f\n", extra_root,
      "}\n");
}

// Columns of x: f32[3, n] (the mask broadcast along result dim 1 of f32[3, b]), the mask a
// parameter of the select's fusion computed outside it.
std::string TakeColumns(int64_t n, int64_t b) {
  const std::string x = hlo::StrCat("f32[3,", n, "]"), out = hlo::StrCat("f32[3,", b, "]");
  const std::string idx = hlo::StrCat("s32[", b, "]"), mask = hlo::StrCat("pred[", b, "]");
  return hlo::StrCat(
      "HloModule cols\n",
      "%sel_f (pm: ", mask, ", pg: ", out, ") -> ", out, " {\n  %pm = ", mask, " parameter(0)\n  %pg = ", out,
      " parameter(1)\n  %bm = pred[3,", b, "] broadcast(%pm), dimensions={1}\n  %f = f32[] constant(-7.5)\n",
      "  %bf = ", out, " broadcast(%f), dimensions={}\n  ROOT %s = ", out, " select(%bm, %pg, %bf)\n}\n",
      "ENTRY %main (x: ", x, ", i: ", idx, ") -> ", out, " {\n  %x = ", x, " parameter(0)\n  %i = ", idx,
      " parameter(1)\n  %ii = s32[", b, ",1] reshape(%i)\n  %lim = s32[] constant(", n, ")\n  %bl = ", idx,
      " broadcast(%lim), dimensions={}\n  %in = ", mask, " compare(%i, %bl), direction=LT\n  %g = ", out,
      " gather(%x, %ii), offset_dims={0}, collapsed_slice_dims={1}, start_index_map={1}, index_vector_dim=1, "
      "slice_sizes={3,1}\n  ROOT %y = ", out, " fusion(%in, %g), kind=kLoop, calls=%sel_f\n}\n");
}

Literal Indices(int64_t b, int64_t n, std::mt19937& rng) {
  Literal i(hlo::ShapeUtil::MakeShape(hlo::S32, {b}));
  std::uniform_int_distribution<int> d(static_cast<int>(-2 * n), static_cast<int>(2 * n));
  for (int64_t k = 0; k < b; ++k) i.SetFromInt64(k, k == 0 ? n - 1 : d(rng));  // row 0 in bounds
  return i;
}

bool SameBits(const Literal& a, const Literal& b) {
  return a.untyped_data().size() == b.untyped_data().size() &&
         std::memcmp(a.untyped_data().data(), b.untyped_data().data(), a.untyped_data().size()) == 0;
}

// Compiles text, checks its root runs as a fused gather, and compares with the evaluator.
void ExpectFusedAndExact(const std::string& text, const Literal& x, const Literal& i) {
  auto module = hlo::ParseHloModule(text);
  ASSERT_TRUE(module.ok()) << module.status();
  auto exe = CompileForCpu(*std::move(module));
  ASSERT_TRUE(exe.ok()) << exe.status();
  const HloInstruction* root = (*exe)->computation().root_instruction();
  if (root->opcode() == HloOpcode::kTuple) root = root->operand(0);
  ASSERT_EQ(root->opcode(), HloOpcode::kFusion);
  EXPECT_EQ(root->fusion_kind(), hlo::FusionKind::kCustom);
  EXPECT_TRUE(AsMaskedGather(*root).has_value());
  EXPECT_EQ((*exe)->KernelKind(root->name()), "gather");
  for (const HloInstruction* instr : (*exe)->computation().instructions()) {
    EXPECT_NE(instr->opcode(), HloOpcode::kGather) << "the gather is still a separate step";
  }
  const Literal want = hlo::HloEvaluator().Evaluate(*hlo::ParseHloModule(text).value(), {&x, &i}).value();
  const std::vector<Literal> got = (*exe)->Run({&x, &i}).value();
  ASSERT_EQ(got.size(), 1u);
  EXPECT_TRUE(SameBits(got[0], want));
}

TEST(MaskedGatherFusionTest, TakeRowsEveryTypeAndBatchSize) {
  std::mt19937 rng(3);
  struct Type {
    const char* hlo;
    const char* fill;
  };
  for (const Type& t : {Type{"f32", "nan"}, Type{"f64", "-inf"}, Type{"f16", "nan"}, Type{"bf16", "nan"},
                        Type{"s32", "-2147483648"}, Type{"u8", "255"}, Type{"pred", "true"}}) {
    for (const int64_t b : {1, 15, 16, 17, 33}) {
      SCOPED_TRACE(hlo::StrCat(t.hlo, " b=", b));
      const int64_t n = 9;
      std::mt19937 values(b);
      const Literal x = testing::RandomLiteral(hlo::ShapeUtil::MakeShape(hlo::StringToPrimitiveType(t.hlo).value(), {n, 5}),
                                               values, -50, 50);
      ExpectFusedAndExact(TakeRows(t.hlo, n, b, t.fill), x, Indices(b, n, rng));
    }
  }
}

TEST(MaskedGatherFusionTest, AllInBoundsAndAllOutOfBounds) {
  std::mt19937 rng(4);
  const Literal x = testing::RandomLiteral(hlo::ShapeUtil::MakeShape(hlo::F32, {6, 5}), rng);
  Literal in(hlo::ShapeUtil::MakeShape(hlo::S32, {17})), out(hlo::ShapeUtil::MakeShape(hlo::S32, {17}));
  for (int64_t k = 0; k < 17; ++k) {
    in.SetFromInt64(k, k % 6);
    out.SetFromInt64(k, k % 2 == 0 ? -1 - k : 6 + k);
  }
  ExpectFusedAndExact(TakeRows("f32", 6, 17, "nan"), x, in);
  ExpectFusedAndExact(TakeRows("f32", 6, 17, "nan"), x, out);
}

TEST(MaskedGatherFusionTest, MaskAlongATrailingDimFromAParameter) {
  std::mt19937 rng(5);
  for (const int64_t b : {1, 15, 17, 33}) {
    SCOPED_TRACE(b);
    const Literal x = testing::RandomLiteral(hlo::ShapeUtil::MakeShape(hlo::F32, {3, 8}), rng);
    ExpectFusedAndExact(TakeColumns(8, b), x, Indices(b, 8, rng));
  }
}

TEST(MaskedGatherFusionTest, GatherReadElsewhereStaysUnfused) {
  const std::string text = TakeRows("f32", 9, 16, "nan", "  ROOT %t = (f32[16,5], f32[16,5]) tuple(%y, %g)\n");
  auto module = hlo::ParseHloModule(text);
  ASSERT_TRUE(module.ok()) << module.status();
  auto changed = MaskedGatherFusion().Run(module->get());
  ASSERT_TRUE(changed.ok()) << changed.status();
  EXPECT_FALSE(*changed);
  std::mt19937 rng(6);
  const Literal x = testing::RandomLiteral(hlo::ShapeUtil::MakeShape(hlo::F32, {9, 5}), rng);
  const Literal i = Indices(16, 9, rng);
  auto exe = CompileForCpu(*std::move(module));
  ASSERT_TRUE(exe.ok()) << exe.status();
  EXPECT_EQ((*exe)->KernelKind("g"), "gather");
  EXPECT_EQ((*exe)->KernelKind("y"), "loop");
  const Literal want = hlo::HloEvaluator().Evaluate(*hlo::ParseHloModule(text).value(), {&x, &i}).value();
  const std::vector<Literal> got = (*exe)->Run({&x, &i}).value();
  ASSERT_EQ(got.size(), 2u);
  EXPECT_TRUE(SameBits(got[0], want.tuple_elements()[0]));
}

}  // namespace
}  // namespace jx::cpu::masked_gather_fusion_test
