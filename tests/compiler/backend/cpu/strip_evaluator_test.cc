// The tile program's strip evaluator (compiler/backend/cpu/tile_program.h): a fused program
// evaluated strip by strip (every op over a strip of a dozen vectors before the next strip)
// gives the same bits as evaluating it op by op over the whole array with the same library
// loops, which is what eager runs. Checked for every op kind the loop kernels have, on every
// dtype they take, at lengths and starts that put elements in full vectors, in vector tails,
// on strip and tile boundaries, with special values (NaN of either sign, +-inf, +-0,
// denormals, the edges of exp's range, integer extremes, shifts past the width). Programs of
// contiguous loads, scalars and native ops take the straight path (TileProgram::straight());
// index-mapped and broadcast-run loads the general one: both are checked.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "jx/compiler/backend/cpu/tile_ops.h"
#include "jx/compiler/backend/cpu/tile_program.h"
#include "jx/compiler/hlo/hlo_computation.h"
#include "jx/compiler/hlo/hlo_evaluator.h"
#include "jx/compiler/hlo/hlo_parser.h"
#include "jx/compiler/hlo/str_util.h"
#include "jx/lax/kernels/elementwise.h"

namespace jx::cpu::internal::strip_evaluator_test {
namespace {

using hlo::HloInstruction;
using hlo::HloOpcode;
using hlo::Literal;
using hlo::PrimitiveType;
using hlo::Shape;

constexpr int64_t kTile = 8192;
// Two full tiles and a ragged third.
constexpr int64_t kN = 2 * kTile + 37;

bool IsFloat(PrimitiveType t) { return hlo::IsFloatingPointType(t); }

// Special values at every third position (cycling, so each lands in vector bodies and in
// tails), random values in between; `shift` varies the pattern between operands.
Literal Operand(PrimitiveType type, int64_t n, int shift, std::mt19937& rng) {
  Literal lit(Shape(type, {n}));
  const double inf = std::numeric_limits<double>::infinity();
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const std::vector<double> float_specials = {
      nan, std::copysign(nan, -1.0), inf, -inf, 0.0, -0.0, 1e-40, -1e-40, 1e-310, 1e-45,
      -101.2, -87.5, 88.5, 88.8, 709.9, -745.5, 3.5, -2.5, 0.5, 1.0, -1.0, 65504.0, 1e30, -1e-5};
  const std::vector<int64_t> int_specials = {0, 1, -1, 2, 7, 8, 31, 32, 33, 63, 64, 127, -128,
                                             255, 32767, -32768, 2147483647, -2147483647 - 1};
  std::uniform_real_distribution<double> dist(-3, 3);
  std::uniform_int_distribution<int64_t> idist(-100, 100);
  for (int64_t i = 0; i < n; ++i) {
    const bool special = (i + shift) % 3 == 0;
    const int64_t k = (i + shift) / 3;
    if (type == hlo::PRED) {
      lit.SetFromInt64(i, (rng() >> 7) & 1);
    } else if (IsFloat(type)) {
      lit.SetFromDouble(i, special ? float_specials[k % float_specials.size()] : dist(rng));
    } else {
      lit.SetFromInt64(i, special ? int_specials[k % int_specials.size()] : idist(rng));
    }
  }
  return lit;
}

// The fused computation evaluated op by op over all n elements: one library loop per op
// (FindNativeTileOp with every operand a full array), in post order.
std::vector<uint8_t> OpByOp(const hlo::HloComputation& c, const std::vector<Literal>& params,
                            int64_t n) {
  absl::flat_hash_map<const HloInstruction*, std::vector<uint8_t>> value;
  lax::kernels::ReducePrecisionBits bits;
  for (const HloInstruction* instr : c.MakeInstructionPostOrder()) {
    const int64_t es = hlo::ByteSizeOfPrimitiveType(instr->shape().element_type());
    std::vector<uint8_t>& out = value[instr];
    switch (instr->opcode()) {
      case HloOpcode::kParameter: {
        absl::Span<const uint8_t> d = params[instr->parameter_number()].untyped_data();
        out.assign(d.begin(), d.end());
        continue;
      }
      case HloOpcode::kConstant: {
        absl::Span<const uint8_t> d = instr->literal().untyped_data();
        out.assign(d.begin(), d.end());
        continue;
      }
      case HloOpcode::kBroadcast: {  // of a scalar
        const std::vector<uint8_t>& s = value[instr->operand(0)];
        out.resize(n * es);
        for (int64_t i = 0; i < n; ++i) std::memcpy(out.data() + i * es, s.data(), es);
        continue;
      }
      default:
        break;
    }
    const TileOpFn fn = FindNativeTileOp(*instr);
    EXPECT_NE(fn, nullptr) << instr->ToString();
    if (fn == nullptr) return {};
    std::vector<const void*> args;
    for (const HloInstruction* op : instr->operands()) args.push_back(value[op].data());
    if (instr->opcode() == HloOpcode::kReducePrecision) {
      bits.exponent_bits = static_cast<int32_t>(instr->exponent_bits());
      bits.mantissa_bits = static_cast<int32_t>(instr->mantissa_bits());
      args.push_back(&bits);
    }
    out.resize(n * es);
    fn(args.data(), out.data(), n);
  }
  return value[c.root_instruction()];
}

// Windows [start, start + len) evaluated as one Evaluate call each (len <= tile).
std::vector<std::pair<int64_t, int64_t>> Windows(int64_t strip) {
  return {{0, 1},           {0, 15},          {0, 16},         {0, 17},
          {0, 33},          {5, strip - 1},   {3, strip},      {7, strip + 1},
          {1, 2 * strip + 5}, {kTile - 3, kTile}, {2 * kTile, 37}, {11, kTile - 11}};
}

// Parses `body` as the fused computation over operands p0, p1 (type `type`, kN elements)
// and a scalar constant c (value `c`), evaluates it strip by strip in the windows above and
// whole tiles over all of kN, and compares the bytes with the op-by-op evaluation.
void ExpectStripsMatchOpByOp(PrimitiveType type, const std::string& body, double c = 1.5,
                             PrimitiveType root_type = hlo::PRIMITIVE_TYPE_INVALID) {
  if (root_type == hlo::PRIMITIVE_TYPE_INVALID) root_type = type;
  const std::string t(hlo::PrimitiveTypeName(type)), r(hlo::PrimitiveTypeName(root_type));
  const std::string n = std::to_string(kN);
  std::string text = hlo::StrCat(
      "HloModule m\n%f (p0: ", t, "[", n, "], p1: ", t, "[", n, "]) -> ", r, "[", n, "] {\n",
      "  %p0 = ", t, "[", n, "] parameter(0)\n  %p1 = ", t, "[", n, "] parameter(1)\n",
      "  %c = ", t, "[] constant(", IsFloat(type) ? std::to_string(c) : std::to_string(int64_t(c)),
      ")\n  %bc = ", t, "[", n, "] broadcast(%c), dimensions={}\n", body, "\n}\n",
      "ENTRY %main (arg0: ", t, "[", n, "], arg1: ", t, "[", n, "]) -> ", r, "[", n, "] {\n",
      "  %arg0 = ", t, "[", n, "] parameter(0)\n  %arg1 = ", t, "[", n, "] parameter(1)\n",
      "  ROOT %fusion = ", r, "[", n, "] fusion(%arg0, %arg1), kind=kLoop, calls=%f\n}\n");
  // The pred constant prints as true/false.
  if (type == hlo::PRED) {
    const std::string from = hlo::StrCat("pred[] constant(", int64_t(c), ")");
    text.replace(text.find(from), from.size(), c != 0 ? "pred[] constant(true)" : "pred[] constant(false)");
  }
  SCOPED_TRACE(hlo::StrCat(t, ":\n", body));
  auto module = hlo::ParseHloModule(text);
  ASSERT_TRUE(module.ok()) << module.status() << "\n" << text;
  const hlo::HloComputation* f =
      (*module)->entry_computation()->root_instruction()->fused_instructions_computation();
  auto program = TileProgram::Compile(f->root_instruction(), ParameterLeaves(), kTile);
  ASSERT_TRUE(program.ok()) << program.status();
  const TileProgram& p = **program;
  EXPECT_EQ(p.num_fallback_ops(), 0) << p.FallbackOpNames();
  // Strips, not whole tiles: the property under test.
  ASSERT_LT(p.strip_elements(), kTile);

  std::mt19937 rng(7);
  std::vector<Literal> params;
  params.push_back(Operand(type, kN, 0, rng));
  params.push_back(Operand(type, kN, 1, rng));
  const std::vector<uint8_t> want = OpByOp(*f, params, kN);
  ASSERT_EQ(want.size(), static_cast<size_t>(kN * p.element_size()));
  const void* inputs[] = {params[0].untyped_data().data(), params[1].untyped_data().data()};
  const int64_t es = p.element_size();
  for (auto [start, len] : Windows(p.strip_elements())) {
    // Guard bytes after the window catch a strip written past its end.
    std::vector<uint8_t> got((len + 64) * es, 0xA5);
    p.Evaluate(inputs, start, len, got.data());
    EXPECT_EQ(std::memcmp(got.data(), want.data() + start * es, len * es), 0)
        << "window [" << start << ", " << start + len << ") of strip " << p.strip_elements();
    for (int64_t b = len * es; b < (len + 64) * es; ++b) ASSERT_EQ(got[b], 0xA5) << "past the end";
  }
  std::vector<uint8_t> all(kN * es);
  for (int64_t s = 0; s < kN; s += kTile) {
    p.Evaluate(inputs, s, std::min(kTile, kN - s), all.data() + s * es);
  }
  for (int64_t i = 0; i < kN; ++i) {
    if (std::memcmp(all.data() + i * es, want.data() + i * es, es) != 0) {
      ADD_FAILURE() << "element " << i << " (position " << i % p.strip_elements()
                    << " in its strip) differs";
      break;
    }
  }
}

const std::vector<PrimitiveType> kFloatTypes = {hlo::F32, hlo::F64, hlo::F16, hlo::BF16};
const std::vector<PrimitiveType> kIntTypes = {hlo::S8, hlo::S16, hlo::S32, hlo::S64,
                                              hlo::U8, hlo::U16, hlo::U32, hlo::U64};

std::string Op(PrimitiveType type, const std::string& name, const std::string& op,
               const std::string& operands, const std::string& attrs = "") {
  return hlo::StrCat("  %", name, " = ", hlo::PrimitiveTypeName(type), "[", kN, "] ", op, "(",
                     operands, ")", attrs, "\n");
}

TEST(StripEvaluatorTest, FloatUnaryOpsInAStrip) {
  for (PrimitiveType t : kFloatTypes) {
    for (const char* op : {"negate", "abs", "sign", "floor", "ceil", "round-nearest-afz",
                           "round-nearest-even", "exponential", "log", "log-plus-one",
                           "exponential-minus-one", "tanh", "logistic", "sine", "cosine", "tan",
                           "sqrt", "rsqrt", "cbrt", "erf"}) {
      // The op, then two cheap ops reading it from its strip register.
      ExpectStripsMatchOpByOp(t, Op(t, "u", op, "%p0") + Op(t, "v", "multiply", "%u, %bc") +
                                     "  ROOT" + Op(t, "r", "add", "%v, %p1").substr(1));
    }
  }
}

TEST(StripEvaluatorTest, FloatBinaryOpsWithTileAndScalarOperands) {
  for (PrimitiveType t : kFloatTypes) {
    for (const char* op : {"add", "subtract", "multiply", "divide", "remainder", "power",
                           "maximum", "minimum", "atan2"}) {
      ExpectStripsMatchOpByOp(t, Op(t, "u", op, "%p0, %p1") + Op(t, "s", op, "%p0, %bc") +
                                     Op(t, "w", op, "%bc, %p1") + Op(t, "v", "add", "%u, %s") +
                                     "  ROOT" + Op(t, "r", "subtract", "%v, %w").substr(1));
    }
  }
}

TEST(StripEvaluatorTest, IntegerOpsInAStrip) {
  for (PrimitiveType t : kIntTypes) {
    const bool is_signed = hlo::IsSignedIntegralType(t);
    std::vector<std::string> unary = {"negate", "not"};
    if (is_signed) unary.push_back("abs");
    for (const std::string& op : unary) {
      ExpectStripsMatchOpByOp(t, Op(t, "u", op, "%p0") + "  ROOT" +
                                     Op(t, "r", "add", "%u, %p1").substr(1), 3);
    }
    for (const char* op : {"add", "subtract", "multiply", "divide", "remainder", "maximum",
                           "minimum", "and", "or", "xor", "shift-left", "shift-right-logical",
                           "shift-right-arithmetic"}) {
      ExpectStripsMatchOpByOp(t, Op(t, "u", op, "%p0, %p1") + Op(t, "s", op, "%p0, %bc") +
                                     Op(t, "w", op, "%bc, %p1") + Op(t, "v", "xor", "%u, %s") +
                                     "  ROOT" + Op(t, "r", "add", "%v, %w").substr(1), 3);
    }
  }
}

TEST(StripEvaluatorTest, CompareSelectClampConvertIsFinite) {
  std::vector<PrimitiveType> types = kFloatTypes;
  types.insert(types.end(), kIntTypes.begin(), kIntTypes.end());
  for (PrimitiveType t : types) {
    for (const char* dir : {"EQ", "NE", "LT", "LE", "GT", "GE"}) {
      std::string attrs = hlo::StrCat(", direction=", dir);
      std::string body = Op(hlo::PRED, "c0", "compare", "%p0, %p1", attrs) +
                         Op(hlo::PRED, "c1", "compare", "%p0, %bc", attrs) +
                         Op(hlo::PRED, "c2", "or", "%c0, %c1");
      if (IsFloat(t)) {
        body += Op(hlo::PRED, "c3", "compare", "%p1, %p0", attrs + ", type=TOTALORDER") +
                Op(hlo::PRED, "c4", "xor", "%c2, %c3");
      } else {
        body += Op(hlo::PRED, "c4", "not", "%c2");
      }
      ExpectStripsMatchOpByOp(t, body + "  ROOT" + Op(t, "r", "select", "%c4, %p0, %p1").substr(1), 1);
    }
    ExpectStripsMatchOpByOp(t, Op(t, "a", "clamp", "%bc, %p0, %p1") +
                                   Op(t, "b", "clamp", "%p1, %p0, %bc") + "  ROOT" +
                                   Op(t, "r", "add", "%a, %b").substr(1), 1);
    for (PrimitiveType to : {hlo::F32, hlo::S32, hlo::F16, hlo::U8, hlo::PRED}) {
      ExpectStripsMatchOpByOp(t, Op(to, "v", "convert", "%p0") + Op(t, "w", "convert", "%v") +
                                     "  ROOT" + Op(t, "r", "add", "%w, %p1").substr(1), 1);
    }
    if (IsFloat(t)) {
      ExpectStripsMatchOpByOp(t, Op(hlo::PRED, "f", "is-finite", "%p0") + "  ROOT" +
                                     Op(t, "r", "select", "%f, %p0, %p1").substr(1));
      ExpectStripsMatchOpByOp(t, Op(t, "q", "reduce-precision", "%p0", ", exponent_bits=5, mantissa_bits=3") +
                                     "  ROOT" + Op(t, "r", "add", "%q, %p1").substr(1));
    }
  }
  // pred: logic ops and select on pred.
  ExpectStripsMatchOpByOp(hlo::PRED, Op(hlo::PRED, "a", "and", "%p0, %p1") +
                                         Op(hlo::PRED, "b", "or", "%a, %bc") +
                                         Op(hlo::PRED, "x", "xor", "%b, %p0") +
                                         Op(hlo::PRED, "n", "not", "%x") + "  ROOT" +
                                         Op(hlo::PRED, "r", "select", "%n, %p1, %a").substr(1), 1);
}

// The 8-op chain of the benchmark, at every window: exp's denormal results for x near
// +-10 sit in full vectors and in tails alike.
TEST(StripEvaluatorTest, BenchmarkChain) {
  const PrimitiveType t = hlo::F32;
  ExpectStripsMatchOpByOp(
      t, Op(t, "m", "multiply", "%p0, %bc") + Op(t, "a", "add", "%m, %p1") +
             Op(t, "th", "tanh", "%a") + Op(t, "tx", "multiply", "%th, %p0") +
             Op(t, "xx", "multiply", "%p0, %p0") + Op(t, "ng", "negate", "%xx") +
             Op(t, "e", "exponential", "%ng") + "  ROOT" +
             Op(t, "r", "subtract", "%tx, %e").substr(1));
}

// Strip sizes: a chain of ops runs 1 KB strips of its widest type (each op's result still in
// L1 for the next op); a lone op streams input to output in strips sized by the L1 working
// set, longer, so that it pays fewer calls.
TEST(StripEvaluatorTest, ChainsRunKilobyteStripsLoneOpsLonger) {
  auto strip_of = [](const std::string& body, PrimitiveType t) -> int64_t {
    const std::string ty(hlo::PrimitiveTypeName(t));
    const std::string text = hlo::StrCat(
        "HloModule m\n%f (p0: ", ty, "[65536]) -> ", ty, "[65536] {\n  %p0 = ", ty,
        "[65536] parameter(0)\n", body, "}\nENTRY %main (a: ", ty, "[65536]) -> ", ty,
        "[65536] {\n  %a = ", ty, "[65536] parameter(0)\n  ROOT %fusion = ", ty,
        "[65536] fusion(%a), kind=kLoop, calls=%f\n}\n");
    auto module = hlo::ParseHloModule(text);
    EXPECT_TRUE(module.ok()) << module.status();
    if (!module.ok()) return -1;
    const hlo::HloComputation* f =
        (*module)->entry_computation()->root_instruction()->fused_instructions_computation();
    auto program = TileProgram::Compile(f->root_instruction(), ParameterLeaves(), kTile);
    EXPECT_TRUE(program.ok());
    return program.ok() ? (*program)->strip_elements() : -1;
  };
  for (PrimitiveType t : {hlo::F32, hlo::F64}) {
    const std::string ty(hlo::PrimitiveTypeName(t));
    const int64_t esize = hlo::ByteSizeOfPrimitiveType(t);
    const std::string chain = "  %e = " + ty + "[65536] exponential(%p0)\n  ROOT %r = " + ty +
                              "[65536] multiply(%e, %p0)\n";
    const std::string lone = "  ROOT %e = " + ty + "[65536] exponential(%p0)\n";
    EXPECT_EQ(strip_of(chain, t), 1024 / esize) << ty;
    EXPECT_GT(strip_of(lone, t), 2 * 1024 / esize) << ty;
  }
}

// Values uniform in [-4, 4] for each parameter of f.
std::vector<Literal> RandomArgs(const hlo::HloComputation& f, int seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> dist(-4, 4);
  std::vector<Literal> args;
  for (const HloInstruction* param : f.parameter_instructions()) {
    Literal lit(param->shape());
    for (int64_t i = 0; i < lit.element_count(); ++i) lit.SetFromDouble(i, dist(rng));
    args.push_back(std::move(lit));
  }
  return args;
}

// f on args by the reference evaluator.
absl::StatusOr<Literal> Evaluated(const hlo::HloComputation& f, const std::vector<Literal>& args) {
  std::vector<const Literal*> arg_ptrs;
  for (const Literal& a : args) arg_ptrs.push_back(&a);
  hlo::HloEvaluator evaluator;
  return evaluator.Evaluate(f, arg_ptrs);
}

// Loads that are not plain streams (offset slices, gathers through transposes and
// broadcasts, iota, a scalar parameter) change per strip too: strips of a 2-D program
// against the reference evaluator (add and multiply are correctly rounded, so the bits
// agree).
TEST(StripEvaluatorTest, IndexMappedLoadsPerStrip) {
  constexpr char kText[] = R"(HloModule m
%f (p0: f32[40,130], p1: f32[130,40], p2: f32[130], p3: f32[]) -> f32[40,129] {
  %p0 = f32[40,130] parameter(0)
  %p1 = f32[130,40] parameter(1)
  %p2 = f32[130] parameter(2)
  %p3 = f32[] parameter(3)
  %s0 = f32[40,129] slice(%p0), slice={[0:40], [1:130]}
  %t1 = f32[40,130] transpose(%p1), dimensions={1,0}
  %s1 = f32[40,129] slice(%t1), slice={[0:40], [0:129]}
  %b2 = f32[40,130] broadcast(%p2), dimensions={1}
  %s2 = f32[40,129] slice(%b2), slice={[0:40], [1:130]}
  %io = f32[40,129] iota(), iota_dimension=0
  %b3 = f32[40,129] broadcast(%p3), dimensions={}
  %a = f32[40,129] add(%s0, %s1)
  %m = f32[40,129] multiply(%a, %s2)
  %i = f32[40,129] add(%m, %io)
  ROOT %r = f32[40,129] multiply(%i, %b3)
}
ENTRY %main (e0: f32[40,130], e1: f32[130,40], e2: f32[130], e3: f32[]) -> f32[40,129] {
  %e0 = f32[40,130] parameter(0)
  %e1 = f32[130,40] parameter(1)
  %e2 = f32[130] parameter(2)
  %e3 = f32[] parameter(3)
  ROOT %fusion = f32[40,129] fusion(%e0, %e1, %e2, %e3), kind=kLoop, calls=%f
})";
  auto module = hlo::ParseHloModule(kText);
  ASSERT_TRUE(module.ok()) << module.status();
  const HloInstruction* fusion = (*module)->entry_computation()->root_instruction();
  const hlo::HloComputation* f = fusion->fused_instructions_computation();
  auto program = TileProgram::Compile(f->root_instruction(), ParameterLeaves(), 1024);
  ASSERT_TRUE(program.ok()) << program.status();
  const TileProgram& p = **program;
  ASSERT_LT(p.strip_elements(), 1024);
  EXPECT_FALSE(p.straight());  // the general path: loads through index maps
  std::vector<Literal> args = RandomArgs(*f, 3);
  absl::StatusOr<Literal> want = Evaluated(*f, args);
  ASSERT_TRUE(want.ok()) << want.status();
  const void* inputs[4];
  for (int k = 0; k < 4; ++k) inputs[k] = args[k].untyped_data().data();
  const int64_t n = 40 * 129;
  const int64_t strip = p.strip_elements();
  for (auto [start, len] : std::vector<std::pair<int64_t, int64_t>>{
           {0, 1}, {0, 17}, {128, strip + 1}, {129, 2 * strip - 1}, {n - 1024, 1024}, {7, 1000}}) {
    std::vector<float> got(len);
    p.Evaluate(inputs, start, len, got.data());
    EXPECT_EQ(std::memcmp(got.data(), want->untyped_data().data() + start * 4, len * 4), 0)
        << "window [" << start << ", " << start + len << ")";
  }
}

// The fused update of a scan RNN's backward body (issue 16): dW + outer(g * (h + dh), x),
// the [256] operands broadcast along either dim of [256, 256] through size-1 reshapes, and a
// transpose of a size-1 reshape. Every load is a run copy or a per-run splat (no index per
// element), and the values match the reference evaluator at every window.
TEST(StripEvaluatorTest, BroadcastOperandsLoadRunByRun) {
  constexpr char kText[] = R"(HloModule m
%f (p0: f32[256,256], p1: f32[256], p2: f32[1,256], p3: f32[1,256], p4: f32[1,1,256], p5: f32[256,1]) -> f32[256,256] {
  %p0 = f32[256,256] parameter(0)
  %p1 = f32[256] parameter(1)
  %p2 = f32[1,256] parameter(2)
  %r2 = f32[256] reshape(%p2)
  %a = f32[256] add(%p1, %r2)
  %p3 = f32[1,256] parameter(3)
  %r3 = f32[256] reshape(%p3)
  %m = f32[256] multiply(%a, %r3)
  %bm = f32[256,256] broadcast(%m), dimensions={1}
  %p4 = f32[1,1,256] parameter(4)
  %r4 = f32[256] reshape(%p4)
  %b4 = f32[256,256] broadcast(%r4), dimensions={0}
  %o = f32[256,256] multiply(%bm, %b4)
  %p5 = f32[256,1] parameter(5)
  %t5 = f32[1,256] transpose(%p5), dimensions={1,0}
  %r5 = f32[256] reshape(%t5)
  %b5 = f32[256,256] broadcast(%r5), dimensions={0}
  %t = f32[256,256] transpose(%b5), dimensions={1,0}
  %u = f32[256,256] add(%o, %t)
  ROOT %r = f32[256,256] add(%p0, %u)
}
ENTRY %main (e0: f32[256,256], e1: f32[256], e2: f32[1,256], e3: f32[1,256], e4: f32[1,1,256], e5: f32[256,1]) -> f32[256,256] {
  %e0 = f32[256,256] parameter(0)
  %e1 = f32[256] parameter(1)
  %e2 = f32[1,256] parameter(2)
  %e3 = f32[1,256] parameter(3)
  %e4 = f32[1,1,256] parameter(4)
  %e5 = f32[256,1] parameter(5)
  ROOT %fusion = f32[256,256] fusion(%e0, %e1, %e2, %e3, %e4, %e5), kind=kLoop, calls=%f
})";
  auto module = hlo::ParseHloModule(kText);
  ASSERT_TRUE(module.ok()) << module.status();
  const hlo::HloComputation* f =
      (*module)->entry_computation()->root_instruction()->fused_instructions_computation();
  auto program = TileProgram::Compile(f->root_instruction(), ParameterLeaves(), 4096);
  ASSERT_TRUE(program.ok()) << program.status();
  const TileProgram& p = **program;
  EXPECT_EQ(p.num_indexed_loads(), 0);
  EXPECT_FALSE(p.straight());  // the general path: broadcast runs
  std::vector<Literal> args = RandomArgs(*f, 7);
  absl::StatusOr<Literal> want = Evaluated(*f, args);
  ASSERT_TRUE(want.ok()) << want.status();
  std::vector<const void*> inputs;
  for (const Literal& a : args) inputs.push_back(a.untyped_data().data());
  const int64_t n = 256 * 256;
  // Strips of one 256-element row: each reads its broadcast runs in place (the row of m) or
  // as one value (the element of r4), at aligned windows; unaligned ones copy the runs.
  EXPECT_EQ(p.strip_elements(), 256);
  for (auto [start, len] : std::vector<std::pair<int64_t, int64_t>>{
           {0, 1}, {0, 17}, {255, 2}, {250, 600}, {1, 4095}, {256, 256}, {512, 1024},
           {n - 4096, 4096}, {n - 3, 3}}) {
    std::vector<float> got(len);
    p.Evaluate(inputs.data(), start, len, got.data());
    EXPECT_EQ(std::memcmp(got.data(), want->untyped_data().data() + start * 4, len * 4), 0)
        << "window [" << start << ", " << start + len << ")";
  }
  std::vector<float> all(n);
  for (int64_t s = 0; s < n; s += p.tile_elements()) {
    p.Evaluate(inputs.data(), s, std::min(p.tile_elements(), n - s), all.data() + s);
  }
  EXPECT_EQ(std::memcmp(all.data(), want->untyped_data().data(), n * 4), 0);
}

// In place (the output aliases an input read at the same positions): each strip is staged in
// scratch before it is stored, so later ops of the strip still read the input.
TEST(StripEvaluatorTest, InPlaceAcrossStrips) {
  const PrimitiveType t = hlo::F32;
  const std::string n = std::to_string(kN);
  const std::string text = hlo::StrCat(
      "HloModule m\n%f (p0: f32[", n, "]) -> f32[", n, "] {\n  %p0 = f32[", n,
      "] parameter(0)\n", Op(t, "e", "exponential", "%p0"), Op(t, "m", "multiply", "%e, %p0"),
      "  ROOT", Op(t, "r", "subtract", "%m, %p0").substr(1), "}\nENTRY %main (arg0: f32[", n,
      "]) -> f32[", n, "] {\n  %arg0 = f32[", n, "] parameter(0)\n  ROOT %fusion = f32[", n,
      "] fusion(%arg0), kind=kLoop, calls=%f\n}\n");
  auto module = hlo::ParseHloModule(text);
  ASSERT_TRUE(module.ok()) << module.status();
  const hlo::HloComputation* f =
      (*module)->entry_computation()->root_instruction()->fused_instructions_computation();
  auto program = TileProgram::Compile(f->root_instruction(), ParameterLeaves(), kTile);
  ASSERT_TRUE(program.ok());
  const TileProgram& p = **program;
  ASSERT_TRUE(p.InputReadInPlace(0));
  EXPECT_TRUE(p.straight());
  std::mt19937 rng(5);
  std::vector<Literal> params;
  params.push_back(Operand(t, kN, 0, rng));
  const std::vector<uint8_t> want = OpByOp(*f, params, kN);
  std::vector<uint8_t> buf(params[0].untyped_data().begin(), params[0].untyped_data().end());
  for (int64_t s = 0; s < kN; s += kTile) {
    const void* inputs[] = {buf.data()};
    p.Evaluate(inputs, s, std::min(kTile, kN - s), buf.data() + s * 4, /*in_place=*/true);
  }
  EXPECT_EQ(std::memcmp(buf.data(), want.data(), kN * 4), 0);
}

}  // namespace
}  // namespace jx::cpu::internal::strip_evaluator_test
