// The CPU backend's library reduce and arg-reduce kernels (the kernel library's reductions,
// lax/kernels/reduction.h, which eager also runs): for every element type, op and axis layout
// (rows, columns, middle axes, non-contiguous axes, all axes, size-1 and empty dims, the
// parallel paths) in the form lax lowers them, (1) the compiled result equals the library
// called directly, bit for bit (what jit == eager rests on), and (2) it agrees with the HLO
// evaluator: exactly for max/min/and/or and integer sums and products, to rounding for float
// sums and products (the library accumulates them in f64 lanes, the evaluator in order).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "absl/strings/str_join.h"
#include "jx/compiler/hlo/str_util.h"
#include "jx/lax/kernels/reduction.h"
#include "tests/compiler/backend/cpu/native_kernel_test_util.h"

namespace jx::cpu::library_reduce_test {
namespace {

using lax::kernels::ReduceOp;
using testing::ArgModule;
using testing::ExactOptions;
using testing::ExpectExact;
using testing::SpecialLiteral;

struct ElementType {
  const char* hlo;
  DType dtype;
  std::string lowest, highest;  // max's and min's identities, as HLO constants
};

template <typename T>
ElementType Int(const char* hlo, DType d) {
  return {hlo, d, std::to_string(std::numeric_limits<T>::lowest()), std::to_string(std::numeric_limits<T>::max())};
}

std::vector<ElementType> AllTypes() {
  return {{"pred", DType::kBool, "false", "true"},
          Int<int8_t>("s8", DType::kInt8),
          Int<int16_t>("s16", DType::kInt16),
          Int<int32_t>("s32", DType::kInt32),
          Int<int64_t>("s64", DType::kInt64),
          Int<uint8_t>("u8", DType::kUInt8),
          Int<uint16_t>("u16", DType::kUInt16),
          Int<uint32_t>("u32", DType::kUInt32),
          Int<uint64_t>("u64", DType::kUInt64),
          {"f16", DType::kFloat16, "-inf", "inf"},
          {"bf16", DType::kBFloat16, "-inf", "inf"},
          {"f32", DType::kFloat32, "-inf", "inf"},
          {"f64", DType::kFloat64, "-inf", "inf"}};
}

struct Op {
  const char* hlo;
  ReduceOp op;
};

const Op kOps[] = {{"add", ReduceOp::kSum},     {"multiply", ReduceOp::kProd}, {"maximum", ReduceOp::kMax},
                   {"minimum", ReduceOp::kMin}, {"and", ReduceOp::kAnd},       {"or", ReduceOp::kOr}};

std::string Identity(const ElementType& t, ReduceOp op) {
  const bool pred = t.dtype == DType::kBool;
  switch (op) {
    case ReduceOp::kSum: case ReduceOp::kOr: return pred ? "false" : "0";
    case ReduceOp::kProd: return "1";
    case ReduceOp::kMax: return t.lowest;
    case ReduceOp::kMin: return t.highest;
    case ReduceOp::kAnd: return pred ? "true" : IsSignedInt(t.dtype) ? "-1" : t.highest;
  }
  return "";
}

std::string Dims(const std::vector<int64_t>& d) { return absl::StrJoin(d, ","); }

struct Case {
  std::vector<int64_t> dims, axes;
};

std::vector<int64_t> KeptDims(const Case& c) {
  std::vector<int64_t> kept;
  for (size_t i = 0; i < c.dims.size(); ++i) {
    if (std::find(c.axes.begin(), c.axes.end(), static_cast<int64_t>(i)) == c.axes.end()) kept.push_back(c.dims[i]);
  }
  return kept;
}

// A reduction as lax lowers and the fusion pass fuses it: float sums and products below f64
// reduce in f64 a widening convert of the operand (a kInput fusion named "fusion"), then
// convert back; the rest reduce the operand from the op's identity (named "r").
std::string LoweredReduce(const ElementType& t, const Op& op, const Case& c) {
  const std::string in = Dims(c.dims), out = Dims(KeptDims(c)), dims = Dims(c.axes);
  const std::string id = Identity(t, op.op);
  if (lax::kernels::ReducesInFloat64(op.op, t.dtype)) {
    return hlo::StrCat(
        "HloModule m\n%red (a: f64[], b: f64[]) -> f64[] {\n  %a = f64[] parameter(0)\n  %b = f64[] parameter(1)\n"
        "  ROOT %c = f64[] ", op.hlo, "(%a, %b)\n}\n%fused (p: ", t.hlo, "[", in, "]) -> f64[", out, "] {\n  %p = ",
        t.hlo, "[", in, "] parameter(0)\n  %w = f64[", in, "] convert(%p)\n  %i = f64[] constant(", id,
        ")\n  ROOT %r = f64[", out, "] reduce(%w, %i), dimensions={", dims, "}, to_apply=%red\n}\nENTRY %main (x: ",
        t.hlo, "[", in, "]) -> ", t.hlo, "[", out, "] {\n  %x = ", t.hlo, "[", in, "] parameter(0)\n  %fusion = f64[",
        out, "] fusion(%x), kind=kInput, calls=%fused\n  ROOT %y = ", t.hlo, "[", out, "] convert(%fusion)\n}\n");
  }
  return hlo::StrCat("HloModule m\n%red (a: ", t.hlo, "[], b: ", t.hlo, "[]) -> ", t.hlo, "[] {\n  %a = ", t.hlo,
                     "[] parameter(0)\n  %b = ", t.hlo, "[] parameter(1)\n  ROOT %c = ", t.hlo, "[] ", op.hlo,
                     "(%a, %b)\n}\nENTRY %main (x: ", t.hlo, "[", in, "]) -> ", t.hlo, "[", out, "] {\n  %x = ", t.hlo,
                     "[", in, "] parameter(0)\n  %i = ", t.hlo, "[] constant(", id, ")\n  ROOT %r = ", t.hlo, "[", out,
                     "] reduce(%x, %i), dimensions={", dims, "}, to_apply=%red\n}\n");
}

std::unique_ptr<CpuExecutable> Compile(const std::string& text) {
  auto parsed = hlo::ParseHloModule(text);
  EXPECT_TRUE(parsed.ok()) << parsed.status();
  if (!parsed.ok()) return nullptr;
  CpuCompileOptions options;
  options.allow_evaluator_fallback = false;
  auto exe = CompileForCpu(*std::move(parsed), options);
  EXPECT_TRUE(exe.ok()) << exe.status();
  return exe.ok() ? *std::move(exe) : nullptr;
}

// Runs the compiled reduction and the library on one input (with NaNs, zeros and infinities
// among float elements) and requires identical bytes.
void ExpectLibraryBits(const ElementType& t, const Op& op, const Case& c) {
  const std::string text = LoweredReduce(t, op, c);
  std::unique_ptr<CpuExecutable> exe = Compile(text);
  if (exe == nullptr) return;
  const bool widened = lax::kernels::ReducesInFloat64(op.op, t.dtype);
  EXPECT_EQ(exe->KernelKind(widened ? "fusion" : "r"), "library-reduce");
  std::mt19937 rng(3);
  const bool narrow_range = op.op == ReduceOp::kProd;  // long products stay finite
  const hlo::Literal x = SpecialLiteral(hlo::ShapeUtil::MakeShape(exe->module().entry_computation()->parameter_instruction(0)->shape().element_type(), c.dims), rng,
                                        narrow_range ? 0.5 : -100, narrow_range ? 1.5 : 100, 0.02);
  absl::StatusOr<std::vector<hlo::Literal>> got = exe->Run({&x});
  ASSERT_TRUE(got.ok()) << got.status();
  const absl::Span<const uint8_t> bytes = (*got)[0].untyped_data();
  std::vector<uint8_t> want(bytes.size() + 8);
  lax::kernels::Reduce(op.op, t.dtype, c.dims, c.axes, x.untyped_data().data(), want.data());
  // An empty result has no data pointer to compare (memcmp must not see a null one).
  if (!bytes.empty()) {
    EXPECT_EQ(std::memcmp(bytes.data(), want.data(), bytes.size()), 0) << "compiled and library results differ";
  }
}

// The compiled reduction against the evaluator (no special values for sums and products).
void ExpectMatchesEvaluator(const ElementType& t, const Op& op, const Case& c) {
  const std::string text = LoweredReduce(t, op, c);
  const bool widened = lax::kernels::ReducesInFloat64(op.op, t.dtype);
  const bool is_float = IsFloating(t.dtype);
  const char* name = widened ? "fusion" : "r";
  if (is_float && (op.op == ReduceOp::kSum || op.op == ReduceOp::kProd)) {
    // Rounding only: f64 lanes vs the evaluator's in-order f64 fold, then one rounding.
    const double rtol = t.dtype == DType::kFloat64 ? 1e-12 : t.dtype == DType::kFloat32 ? 1e-6 : 1e-2;
    CpuCompileOptions options;
    options.allow_evaluator_fallback = false;
    const testing::Ranges range = op.op == ReduceOp::kProd ? testing::Ranges{0.5, 1.5} : testing::Ranges{-2, 2};
    std::unique_ptr<CpuExecutable> exe = testing::CheckAgainstEvaluator(text, rtol, 1e-9, options, range);
    ASSERT_NE(exe, nullptr);
    EXPECT_EQ(exe->KernelKind(name), "library-reduce");
    return;
  }
  ExactOptions o;
  o.lo = IsUnsignedInt(t.dtype) ? 0 : -100;
  o.hi = 100;
  o.special = 0.02;
  o.bits = !is_float;  // NaN payloads and the zero a -0/+0 tie keeps may differ
  o.compile.allow_evaluator_fallback = false;
  ExpectExact(text, name, "library-reduce", o);
}

std::vector<Case> SmallCases() {
  return {{{3, 5, 7}, {2}},          {{3, 5, 7}, {0}},          {{3, 5, 7}, {1}},       {{3, 5, 7}, {0, 2}},
          {{3, 5, 7}, {0, 1, 2}},    {{3, 5, 7}, {1, 2}},       {{3, 5, 7}, {0, 1}},    {{4, 1, 3, 1, 5}, {1, 3}},
          {{4, 1, 3, 1, 5}, {0, 3, 4}}, {{2, 3, 2, 3}, {0, 2}}, {{0, 5}, {0}},          {{5, 0}, {0}},
          {{1, 6}, {0}},             {{6}, {0}},                {{}, {}},               {{1}, {0}}};
}

std::vector<Case> LargeCases() {
  return {{{70000}, {0}},  {{300, 257}, {0}},  {{300, 257}, {1}},     {{40000, 3}, {0}},
          {{2, 270000}, {1}}, {{64, 40, 33}, {1}}, {{64, 40, 33}, {0, 2}}};
}

bool Defined(const ElementType& t, const Op& op) { return lax::kernels::IsReduceDefined(op.op, t.dtype); }

TEST(LibraryReduceTest, EveryTypeOpAndLayoutMatchesTheLibraryBitForBit) {
  for (const ElementType& t : AllTypes()) {
    for (const Op& op : kOps) {
      if (!Defined(t, op)) continue;
      for (const Case& c : SmallCases()) {
        SCOPED_TRACE(hlo::StrCat(t.hlo, " ", op.hlo, " [", Dims(c.dims), "] axes {", Dims(c.axes), "}"));
        ExpectLibraryBits(t, op, c);
      }
    }
  }
}

TEST(LibraryReduceTest, EveryTypeOpAndLayoutMatchesTheEvaluator) {
  for (const ElementType& t : AllTypes()) {
    for (const Op& op : kOps) {
      if (!Defined(t, op)) continue;
      for (const Case& c : SmallCases()) {
        SCOPED_TRACE(hlo::StrCat(t.hlo, " ", op.hlo, " [", Dims(c.dims), "] axes {", Dims(c.axes), "}"));
        ExpectMatchesEvaluator(t, op, c);
      }
    }
  }
}

TEST(LibraryReduceTest, ParallelPaths) {
  for (const ElementType& t : AllTypes()) {
    const std::string name = t.hlo;
    if (name != "pred" && name != "u8" && name != "s32" && name != "f16" && name != "f32" && name != "f64") continue;
    for (const Op& op : kOps) {
      if (!Defined(t, op)) continue;
      for (const Case& c : LargeCases()) {
        SCOPED_TRACE(hlo::StrCat(t.hlo, " ", op.hlo, " [", Dims(c.dims), "] axes {", Dims(c.axes), "}"));
        ExpectLibraryBits(t, op, c);
        if (op.op != ReduceOp::kProd) ExpectMatchesEvaluator(t, op, c);
      }
    }
  }
}

TEST(LibraryReduceTest, OtherReducesKeepTheEvaluatorExactKernels) {
  // Not the identity: folded onto init in order by the tile-program kernels.
  std::string text = LoweredReduce(AllTypes()[3], kOps[2], {{30, 50}, {1}});
  text.replace(text.find("constant(-2147483648)"), 21, "constant(7)");
  ExpectExact(text, "r", "reduce");
  // An f32 sum in f32 (not lax's f64 lowering): the library would accumulate in f64.
  text = hlo::StrCat(
      "HloModule m\n%red (a: f32[], b: f32[]) -> f32[] {\n  %a = f32[] parameter(0)\n  %b = f32[] parameter(1)\n"
      "  ROOT %c = f32[] add(%a, %b)\n}\nENTRY %main (x: f32[30,50]) -> f32[30] {\n  %x = f32[30,50] parameter(0)\n"
      "  %i = f32[] constant(0)\n  ROOT %r = f32[30] reduce(%x, %i), dimensions={1}, to_apply=%red\n}\n");
  std::unique_ptr<CpuExecutable> exe = testing::CheckAgainstEvaluator(text, 1e-5, 1e-5);
  ASSERT_NE(exe, nullptr);
  EXPECT_EQ(exe->KernelKind("r"), "reduce");
}

// argmax/argmin as lax lowers them, against the library (bit for bit) and the evaluator.
TEST(LibraryArgReduceTest, EveryTypeAndAxisMatchesTheLibraryAndTheEvaluator) {
  for (const ElementType& t : AllTypes()) {
    const bool is_float = IsFloating(t.dtype);
    for (const char* it : {"s32", "s64", "u8"}) {
      for (bool is_max : {true, false}) {
        std::vector<Case> cases = {{{17, 23}, {0}}, {{17, 23}, {1}}, {{4, 5, 6}, {1}}, {{1, 9}, {1}}};
        if (std::string(it) == "s32" && (t.dtype == DType::kFloat32 || t.dtype == DType::kInt16)) {
          // The parallel paths: many rows, columns, one long row.
          cases.insert(cases.end(), {{{300, 1000}, {1}}, {{1000, 300}, {0}}, {{200000}, {0}}});
        }
        for (const Case& c : cases) {
          SCOPED_TRACE(hlo::StrCat(t.hlo, " ", it, is_max ? " argmax" : " argmin", " [", Dims(c.dims), "] axis ",
                                   c.axes[0]));
          std::string text = ArgModule(t.hlo, it, Dims(c.dims), Dims(KeptDims(c)), c.axes[0], is_max, is_float);
          // The lowering's inits: max's (min's) identity and index 0.
          const std::string init_v = is_float ? (is_max ? "-inf" : "inf") : "0";
          const std::string from = hlo::StrCat("%v0 = ", t.hlo, "[] constant(", init_v, ")");
          text.replace(text.find(from), from.size(),
                       hlo::StrCat("%v0 = ", t.hlo, "[] constant(", is_max ? t.lowest : t.highest, ")"));
          if (std::string(it) == "u8" && c.dims[static_cast<size_t>(c.axes[0])] > 255) continue;
          ExactOptions o;
          o.lo = is_float ? -3 : 0;  // few distinct values: many ties
          o.hi = 3;
          o.special = is_float ? 0.05 : 0;
          o.compile.allow_evaluator_fallback = false;
          ExpectExact(text, "r", "library-arg-reduce", o);
          // Bit for bit with the library (the index output).
          std::unique_ptr<CpuExecutable> exe = Compile(text);
          if (exe == nullptr) continue;
          std::mt19937 rng(5);
          const hlo::Literal x = SpecialLiteral(hlo::ShapeUtil::MakeShape(
                                                    exe->module().entry_computation()->parameter_instruction(0)->shape().element_type(), c.dims),
                                                rng, -3, 3, is_float ? 0.05 : 0);
          absl::StatusOr<std::vector<hlo::Literal>> got = exe->Run({&x});
          ASSERT_TRUE(got.ok()) << got.status();
          const absl::Span<const uint8_t> bytes = (*got)[1].untyped_data();
          std::vector<uint8_t> want(bytes.size());
          const DType index_dtype = std::string(it) == "s32" ? DType::kInt32 : std::string(it) == "s64" ? DType::kInt64 : DType::kUInt8;
          lax::kernels::ArgReduce(is_max, t.dtype, c.dims, c.axes[0], index_dtype, x.untyped_data().data(), want.data());
          if (!bytes.empty()) {
            EXPECT_EQ(std::memcmp(bytes.data(), want.data(), bytes.size()), 0) << "indices differ from the library's";
          }
        }
      }
    }
  }
}

TEST(LibraryArgReduceTest, EmptyAxisGivesTheInits) {
  ExpectExact(ArgModule("f32", "s32", "0,4", "4", 0, true, true), "r", "library-arg-reduce");
  ExpectExact(ArgModule("f64", "s64", "3,0", "3", 1, false, true), "r", "library-arg-reduce");
}


// argmax as an input fusion that computes its iota (how the fusion pass leaves it): the
// library's argmax reads the value parameter; with a fused value expression, the tile-program
// arg-reduce evaluates both.
std::string FusedArgmax(bool fuse_value) {
  const std::string value = fuse_value ? "  %v = f32[40,300] multiply(%p, %p)\n" : "";
  return hlo::StrCat(R"(HloModule m
%arg (av: f32[], ai: s32[], xv: f32[], xi: s32[]) -> (f32[], s32[]) {
  %av = f32[] parameter(0)
  %ai = s32[] parameter(1)
  %xv = f32[] parameter(2)
  %xi = s32[] parameter(3)
  %gt = pred[] compare(%xv, %av), direction=GT
  %eq = pred[] compare(%xv, %av), direction=EQ
  %xnan = pred[] compare(%xv, %xv), direction=NE
  %anan = pred[] compare(%av, %av), direction=NE
  %nanan = pred[] not(%anan)
  %b1 = pred[] and(%gt, %nanan)
  %b2 = pred[] and(%xnan, %nanan)
  %better = pred[] or(%b1, %b2)
  %bothnan = pred[] and(%xnan, %anan)
  %same = pred[] or(%eq, %bothnan)
  %ilt = pred[] compare(%xi, %ai), direction=LT
  %tie = pred[] and(%same, %ilt)
  %pick = pred[] or(%better, %tie)
  %sv = f32[] select(%better, %xv, %av)
  %si = s32[] select(%pick, %xi, %ai)
  ROOT %t = (f32[], s32[]) tuple(%sv, %si)
}
%fused (p: f32[40,300]) -> (f32[40], s32[40]) {
  %p = f32[40,300] parameter(0)
)", value, R"(  %io = s32[40,300] iota(), iota_dimension=1
  %v0 = f32[] constant(-inf)
  %i0 = s32[] constant(0)
  ROOT %r = (f32[40], s32[40]) reduce()", fuse_value ? "%v" : "%p", R"(, %io, %v0, %i0), dimensions={1}, to_apply=%arg
}
ENTRY %main (x: f32[40,300]) -> (f32[40], s32[40]) {
  %x = f32[40,300] parameter(0)
  ROOT %fusion = (f32[40], s32[40]) fusion(%x), kind=kInput, calls=%fused
}
)");
}

TEST(LibraryArgReduceTest, InputFusionWithItsIota) {
  ExactOptions o;
  o.special = 0.01;
  o.compile.allow_evaluator_fallback = false;
  ExpectExact(FusedArgmax(false), "fusion", "library-arg-reduce", o);
  ExpectExact(FusedArgmax(true), "fusion", "arg-reduce", o);
}

// An outer-axis reduce of a fused expression, T[rows, cols] summed over rows (in f64 for
// floats, as lax lowers f32 sums).
std::string FusedColumnSum(const std::string& t, int64_t rows, int64_t cols) {
  const std::string acc = t == "f32" ? "f64" : t;
  const std::string in = hlo::StrCat(rows, ",", cols);
  const std::string widen = t == "f32" ? hlo::StrCat("  %w = f64[", in, "] convert(%n)\n") : "";
  return hlo::StrCat("HloModule m\n%red (a: ", acc, "[], b: ", acc, "[]) -> ", acc, "[] {\n  %a = ", acc,
                     "[] parameter(0)\n  %b = ", acc, "[] parameter(1)\n  ROOT %c = ", acc,
                     "[] add(%a, %b)\n}\n%fused (p: ", t, "[", in, "]) -> ", acc, "[", cols, "] {\n  %p = ", t, "[",
                     in, "] parameter(0)\n  %n = ", t, "[", in, "] multiply(%p, %p)\n", widen, "  %i = ", acc,
                     "[] constant(0)\n  ROOT %r = ", acc, "[", cols, "] reduce(", t == "f32" ? "%w" : "%n",
                     ", %i), dimensions={0}, to_apply=%red\n}\nENTRY %main (x: ", t, "[", in, "]) -> ", acc, "[",
                     cols, "] {\n  %x = ", t, "[", in, "] parameter(0)\n  ROOT %fusion = ", acc, "[", cols,
                     "] fusion(%x), kind=kInput, calls=%fused\n}\n");
}

TEST(ColumnReduceTest, LongColumnsFoldFixedChunksOfRows) {
  // Integers: exact in any order, so the evaluator's bits.
  ExactOptions o;
  o.compile.allow_evaluator_fallback = false;
  ExpectExact(FusedColumnSum("s32", 3000, 70), "fusion", "reduce", o);
  ExpectExact(FusedColumnSum("s32", 50, 3000), "fusion", "reduce", o);
  // f64 sums of fixed chunks combined in order: within rounding of the in-order fold, and
  // the same bits on one thread as on several.
  CpuCompileOptions one, two;
  one.max_threads = 1;
  two.max_threads = 2;
  std::unique_ptr<CpuExecutable> a = testing::CheckAgainstEvaluator(FusedColumnSum("f32", 3000, 70), 1e-12, 1e-12, one);
  std::unique_ptr<CpuExecutable> b = testing::CheckAgainstEvaluator(FusedColumnSum("f32", 3000, 70), 1e-12, 1e-12, two);
  ASSERT_TRUE(a != nullptr && b != nullptr);
  EXPECT_EQ(a->KernelKind("fusion"), "reduce");
  std::mt19937 rng(9);
  const hlo::Literal x = testing::RandomLiteral(hlo::ShapeUtil::MakeShape(hlo::F32, {3000, 70}), rng);
  absl::StatusOr<std::vector<hlo::Literal>> ra = a->Run({&x}), rb = b->Run({&x});
  ASSERT_TRUE(ra.ok() && rb.ok());
  EXPECT_TRUE((*ra)[0] == (*rb)[0]);
}

}  // namespace
}  // namespace jx::cpu::library_reduce_test
