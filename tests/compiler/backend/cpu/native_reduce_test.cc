// The native reduce (any element type, simple reducer) and arg-reduce ((value, index)
// argmax/argmin reducers) kernels against the evaluator, bit for bit.
#include <gtest/gtest.h>

#include <string>

#include "jx/compiler/backend/cpu/generic_reduce_expander.h"
#include "jx/compiler/hlo/str_util.h"
#include "tests/compiler/backend/cpu/native_kernel_test_util.h"

namespace jx::cpu::native_reduce_test {
namespace {

using testing::ArgModule;
using testing::ExactOptions;
using testing::ExpectExact;
using testing::SpecialLiteral;

std::string ReduceModule(const std::string& t, const std::string& in, const std::string& out,
                         const std::string& dims, const std::string& op,
                         const std::string& init) {
  return hlo::StrCat("HloModule r\n%red (a: ", t, "[], b: ", t, "[]) -> ", t, "[] {\n  %a = ", t,
                     "[] parameter(0)\n  %b = ", t, "[] parameter(1)\n  ROOT %c = ", t, "[] ",
                     op, "(%a, %b)\n}\nENTRY %main (x: ", t, "[", in, "]) -> ", t, "[", out,
                     "] {\n  %x = ", t, "[", in, "] parameter(0)\n  %i = ", t, "[] constant(",
                     init, ")\n  ROOT %r = ", t, "[", out, "] reduce(%x, %i), dimensions={", dims,
                     "}, to_apply=%red\n}\n");
}

CpuCompileOptions SmallTiles() {
  CpuCompileOptions o;
  o.tile_elements = 64;
  return o;
}

TEST(NativeReduceTest, EveryTypeOpAndLayout) {
  struct Layout {
    const char *out, *dims;
  };
  const Layout layouts[] = {{"3,5", "2"}, {"5,7", "0"}, {"5", "0,2"}, {"", "0,1,2"}};
  for (const char* t : {"pred", "s8", "s16", "u8", "u16", "f16", "bf16"}) {
    const bool is_float = t[0] == 'f' || t[0] == 'b';
    std::vector<std::string> ops = {"add", "multiply", "maximum", "minimum"};
    if (!is_float) ops.insert(ops.end(), {"and", "or", "xor"});
    for (const std::string& op : ops) {
      for (const Layout& l : layouts) {
        SCOPED_TRACE(hlo::StrCat(t, " ", op, " dims ", l.dims));
        // Not the op's identity: a reduce from the identity runs the kernel library's
        // reduction (library_reduce_test.cc), these test the evaluator-exact kernels.
        const bool pred_identity_true = op == "and" || op == "minimum";
        const std::string init = std::string(t) == "pred" ? (pred_identity_true ? "false" : "true") : "2";
        ExactOptions o;
        o.lo = is_float ? -2 : -100;
        o.hi = is_float ? 2 : 100;
        o.special = op == "maximum" || op == "minimum" ? 0.05 : 0;
        ExpectExact(ReduceModule(t, "3,5,7", l.out, l.dims, op, init), "r", "reduce", o);
        o.compile = SmallTiles();  // rows longer than a tile
        ExpectExact(ReduceModule(t, "3,5,7", l.out, l.dims, op, init), "r", "reduce", o);
      }
    }
  }
}

TEST(NativeReduceTest, LargeInputsTakeTheParallelPaths) {
  // Order-free ops split long rows into blocks; f16 sums fold each row in order.
  ExpectExact(ReduceModule("s8", "300000", "", "0", "add", "5"), "r", "reduce");
  ExpectExact(ReduceModule("u16", "2,150000", "2", "1", "maximum", "1"), "r", "reduce");
  ExactOptions nan;
  nan.special = 0.001;
  ExpectExact(ReduceModule("f16", "400,300", "300", "0", "maximum", "-65504"), "r", "reduce", nan);
  ExpectExact(ReduceModule("bf16", "400,300", "400", "1", "minimum", "1e38"), "r", "reduce", nan);
  ExactOptions small;
  small.lo = -0.01;
  small.hi = 0.01;
  ExpectExact(ReduceModule("f16", "3,70000", "3", "1", "add", "0"), "r", "reduce", small);
  ExpectExact(ReduceModule("pred", "200,1000", "1000", "0", "and", "false"), "r", "reduce");
  ExpectExact(ReduceModule("pred", "200,1000", "200", "1", "xor", "true"), "r", "reduce");
}

TEST(NativeReduceTest, PredPartialsFromParallelBlocksAreNotLost) {
  // Long rows of an order-free op fold in parallel blocks, one partial per block. For pred
  // the partials once lived in a std::vector<bool>, whose bits share words: blocks finishing
  // on different threads overwrote each other's bits and `or` rows came out false. Every
  // row here holds about 150 trues, so every output is true; runs repeat to meet the race.
  // (pred add is or; an `or` from false would run the kernel library's reduction.)
  auto parsed = hlo::ParseHloModule(ReduceModule("pred", "4096,300", "4096", "1", "add", "false"));
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  auto exe = CompileForCpu(*std::move(parsed), SmallTiles());  // rows longer than a tile
  ASSERT_TRUE(exe.ok()) << exe.status();
  ASSERT_EQ((*exe)->KernelKind("r"), "reduce");
  std::mt19937 rng(7);
  const hlo::Literal x = SpecialLiteral(hlo::ShapeUtil::MakeShape(hlo::PRED, {4096, 300}), rng, 0, 1, 0);
  for (int run = 0; run < 100; ++run) {
    absl::StatusOr<std::vector<hlo::Literal>> got = (*exe)->Run({&x});
    ASSERT_TRUE(got.ok()) << got.status();
    int64_t false_rows = 0;
    for (int64_t o = 0; o < 4096; ++o) false_rows += (*got)[0].GetAsInt64(o) == 0 ? 1 : 0;
    ASSERT_EQ(false_rows, 0) << "run " << run;
  }
}

TEST(NativeReduceTest, EmptyDims) {
  ExpectExact(ReduceModule("s8", "0,5", "5", "0", "add", "3"), "r", "reduce");
  ExpectExact(ReduceModule("f16", "5,0", "0", "0", "maximum", "0"), "r", "reduce");
}

TEST(NativeReduceTest, InputFusionOfANarrowType) {
  // reduce(negate(x)) on s16 as a kInput fusion.
  ExpectExact(R"(HloModule m
%red (a: s16[], b: s16[]) -> s16[] {
  %a = s16[] parameter(0)
  %b = s16[] parameter(1)
  ROOT %c = s16[] add(%a, %b)
}
%fused (p0: s16[40,900]) -> s16[900] {
  %p0 = s16[40,900] parameter(0)
  %n = s16[40,900] negate(%p0)
  %init = s16[] constant(7)
  ROOT %r = s16[900] reduce(%n, %init), dimensions={0}, to_apply=%red
}
ENTRY %main (x: s16[40,900]) -> s16[900] {
  %x = s16[40,900] parameter(0)
  ROOT %fusion = s16[900] fusion(%x), kind=kInput, calls=%fused
})", "fusion", "reduce", ExactOptions{-1000, 1000});
}

TEST(ArgReduceTest, ArgmaxArgminEveryTypeWithNaNsAndTies) {
  for (const char* vt : {"f32", "f64", "f16", "bf16", "s32", "u8", "s64"}) {
    const bool is_float = vt[0] == 'f' || vt[0] == 'b';
    for (const char* it : {"s32", "s64", "u32"}) {
      for (bool is_max : {true, false}) {
        for (int64_t axis : {0, 1}) {
          SCOPED_TRACE(hlo::StrCat(vt, " ", it, is_max ? " argmax" : " argmin", " axis ", axis));
          ExactOptions o;
          o.lo = is_float ? -3 : 0;  // few distinct values: many ties
          o.hi = 3;
          o.special = is_float ? 0.05 : 0;
          // Inits that are max/min's identity (floats: -+inf; unsigned argmax: 0) make it
          // the kernel library's argmax/argmin.
          const bool library = is_float || (is_max && vt[0] == 'u');
          ExpectExact(ArgModule(vt, it, "17,23", axis == 0 ? "23" : "17", axis, is_max, is_float),
                      "r", library ? "library-arg-reduce" : "arg-reduce", o);
        }
      }
    }
  }
}

TEST(ArgReduceTest, LargeAndEmpty) {
  ExactOptions o;
  o.special = 0.0001;
  ExpectExact(ArgModule("f32", "s32", "300,1000", "300", 1, true, true), "r", "library-arg-reduce", o);
  ExpectExact(ArgModule("f32", "s32", "300,1000", "1000", 0, false, true), "r", "library-arg-reduce", o);
  ExpectExact(ArgModule("f32", "s64", "200000", "", 0, true, true), "r", "library-arg-reduce", o);
  ExpectExact(ArgModule("f32", "s32", "0,4", "4", 0, true, true), "r", "library-arg-reduce");
  ExpectExact(ArgModule("s32", "s32", "300,1000", "300", 1, true, false), "r", "arg-reduce");
  ExpectExact(ArgModule("s8", "s32", "4,0", "4", 1, false, false), "r", "arg-reduce");
}

// A pick that is not argmax/argmin's is not taken by the arg-reduce kernel: the generic reduce
// expander writes it as a tree of elementwise code (no instruction `r` is left). This reducer is
// not associative, so the evaluator runs the expanded module: the tree's order.
TEST(ArgReduceTest, OtherReducersAreExpandedNotArgReduces) {
  // The value select reads a product: not a pick between parameters.
  std::string text = ArgModule("f32", "s32", "4,5", "4", 1, true, true);
  const std::string from = "%sv = f32[] select(%better, %xv, %av)";
  text.replace(text.find(from), from.size(),
               "%prod = f32[] multiply(%xv, %av)\n  %sv = f32[] select(%better, %prod, %av)");
  auto expanded = hlo::ParseHloModule(text).value();
  absl::StatusOr<bool> changed = GenericReduceExpander().Run(expanded.get());
  ASSERT_TRUE(changed.ok()) << changed.status();
  ASSERT_TRUE(*changed);
  ExactOptions o;
  o.reference = expanded->ToString();
  ExpectExact(text, "r", "", o);
}

}  // namespace
}  // namespace jx::cpu::native_reduce_test
