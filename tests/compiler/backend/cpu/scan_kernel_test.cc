// The scan kernel (reduce-window as a running prefix/suffix scan) against the evaluator.
// Both fold each line in the same order, so results must be the same bits. The exceptions
// are the kernel library's (eager's) float sums and products: f32 and 16-bit floats
// accumulate in f64 and round once, compared bit for bit with the evaluator running that
// widened scan spelled out in HLO, and f64 sums are compensated, compared bit for bit with
// an in-test Neumaier reference.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "jx/compiler/hlo/str_util.h"
#include "tests/compiler/backend/cpu/cpu_test_util.h"

namespace jx::cpu::scan_kernel_test {
namespace {

using hlo::Literal;
using testing::Ranges;

constexpr double kInf = std::numeric_limits<double>::infinity();

struct Scan {
  std::string type;
  std::vector<int64_t> dims;
  int axis = 0;
  bool reverse = false;
  // A binary opcode, or "logaddexp" for cumlogsumexp's reducer (as the lowering writes it).
  std::string op = "add";
  std::string init = "0";  // a constant; empty: the scalar parameter %y
  bool swap = false;       // the reducer's parameters swapped
  std::string reducer_name = "red";
};

// cumlogsumexp's reducer as lax/reduction_lowering.cc lowers it: max + log1p(exp(d)), d = 0
// for equal operands and -|lhs - rhs| otherwise.
std::string LogAddExpBody(const std::string& t) {
  return hlo::StrCat("  %m = ", t, "[] maximum(%p0, %p1)\n  %eq = pred[] compare(%p0, %p1), ",
                     "direction=EQ\n  %zero = ", t, "[] constant(0)\n  %sub = ", t,
                     "[] subtract(%p0, %p1)\n  %abs = ", t, "[] abs(%sub)\n  %neg = ", t,
                     "[] negate(%abs)\n  %d = ", t, "[] select(%eq, %zero, %neg)\n  %e = ", t,
                     "[] exponential(%d)\n  %l = ", t, "[] log-plus-one(%e)\n  ROOT %r = ", t,
                     "[] add(%m, %l)\n");
}

// A reduce-window of x: T[dims] scanning the axis with the given reducer and body.
std::string ScanModule(const Scan& s, const std::string& body = "") {
  const std::string& t = s.type;
  std::string shape = t + "[", size, pad;
  for (size_t d = 0; d < s.dims.size(); ++d) {
    const std::string sep = d == 0 ? "" : "x";
    shape += (d == 0 ? "" : ",") + std::to_string(s.dims[d]);
    const bool scanned = static_cast<int>(d) == s.axis;
    size += sep + std::to_string(scanned ? s.dims[d] : 1);
    const int64_t p = scanned ? s.dims[d] - 1 : 0;
    pad += sep + (s.reverse ? hlo::StrCat("0_", p) : hlo::StrCat(p, "_0"));
  }
  shape += "]";
  std::string reducer = body;
  if (reducer.empty()) {
    reducer = s.op == "logaddexp"
                  ? LogAddExpBody(t)
                  : hlo::StrCat("  ROOT %r = ", t, "[] ", s.op, s.swap ? "(%p1, %p0)" : "(%p0, %p1)", "\n");
  }
  const std::string params = s.init.empty() ? hlo::StrCat("x: ", shape, ", y: ", t, "[]")
                                            : hlo::StrCat("x: ", shape);
  const std::string init_line = s.init.empty()
                                    ? hlo::StrCat("%i = ", t, "[] parameter(1)")
                                    : hlo::StrCat("%i = ", t, "[] constant(", s.init, ")");
  return hlo::StrCat("HloModule scan\n%", s.reducer_name, " (p0: ", t, "[], p1: ", t, "[]) -> ",
                     t, "[] {\n  %p0 = ", t, "[] parameter(0)\n  %p1 = ", t,
                     "[] parameter(1)\n", reducer, "}\nENTRY %main (", params, ") -> ", shape,
                     " {\n  %x = ", shape, " parameter(0)\n  ", init_line, "\n  ROOT %s = ",
                     shape, " reduce-window(%x, %i), window={size=", size, " pad=", pad,
                     "}, to_apply=%", s.reducer_name, "\n}\n");
}

struct Result {
  std::unique_ptr<CpuExecutable> exe;
  Literal got, want;  // compiled, evaluator
};

// Compiles and runs `text` and the evaluator on the same arguments.
Result RunBoth(const std::string& text, const std::vector<Literal>& args,
               CpuCompileOptions options = {}) {
  Result r;
  auto exe = CompileForCpu(hlo::ParseHloModule(text).value(), options);
  EXPECT_TRUE(exe.ok()) << exe.status();
  if (!exe.ok()) return r;
  r.exe = *std::move(exe);
  std::vector<const Literal*> ptrs;
  for (const Literal& a : args) ptrs.push_back(&a);
  r.got = std::move(r.exe->Run(ptrs).value()[0]);
  r.want = hlo::HloEvaluator().Evaluate(*hlo::ParseHloModule(text).value(), ptrs).value();
  return r;
}

// Random arguments for the module's parameters.
std::vector<Literal> RandomArgs(const std::string& text, Ranges r, uint32_t seed = 1) {
  auto module = hlo::ParseHloModule(text).value();
  std::mt19937 rng(seed);
  std::vector<Literal> args;
  const hlo::HloComputation& entry = *module->entry_computation();
  for (int64_t i = 0; i < entry.num_parameters(); ++i) {
    args.push_back(testing::RandomLiteral(entry.parameter_instruction(i)->shape(), rng, r.lo, r.hi));
  }
  return args;
}

// Element by element the same bytes (so -0 differs from +0). With nan_any, any NaN matches
// any NaN: log-add-exp's NaN comes out of an add of two NaNs, whose payload is whichever
// operand the instruction takes first, which the compiler may order either way.
::testing::AssertionResult SameBits(const Literal& got, const Literal& want, bool nan_any = false) {
  if (got.shape() != want.shape()) {
    return ::testing::AssertionFailure() << "shape " << got.shape() << " vs " << want.shape();
  }
  const int64_t esize = hlo::ByteSizeOfPrimitiveType(got.shape().element_type());
  const bool is_float = hlo::IsFloatingPointType(got.shape().element_type());
  for (int64_t i = 0; i < got.element_count(); ++i) {
    if (std::memcmp(got.untyped_data().data() + i * esize, want.untyped_data().data() + i * esize,
                    esize) == 0) {
      continue;
    }
    if (nan_any && is_float && std::isnan(got.GetAsDouble(i)) && std::isnan(want.GetAsDouble(i))) {
      continue;
    }
    return ::testing::AssertionFailure() << "element " << i << ": got " << got.GetAsDouble(i)
                                         << " want " << want.GetAsDouble(i);
  }
  return ::testing::AssertionSuccess();
}

// Eager cumsum's f64 running sum (lax/cumulative_ops.cc Running), line by line in scan
// order from init.
Literal NeumaierScan(const Literal& x, int axis, bool reverse, double init) {
  Literal out = x;
  absl::Span<const int64_t> dims = x.shape().dimensions();
  int64_t outer = 1, inner = 1;
  for (int d = 0; d < axis; ++d) outer *= dims[d];
  for (size_t d = axis + 1; d < dims.size(); ++d) inner *= dims[d];
  const int64_t len = dims[axis];
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < inner; ++i) {
      double s = init, c = 0;
      for (int64_t k = 0; k < len; ++k) {
        const int64_t at = (o * len + (reverse ? len - 1 - k : k)) * inner + i;
        const double v = x.GetAsDouble(at);
        const double t = s + v;
        if (std::isfinite(t)) c += std::fabs(s) >= std::fabs(v) ? (s - t) + v : (v - t) + s;
        s = t;
        out.SetFromDouble(at, std::isfinite(s) ? s + c : s);
      }
    }
  }
  return out;
}

bool IsFloatType(const std::string& t) { return t[0] == 'f' || t[0] == 'b'; }

// Whether the kernel accumulates this scan wider than its element type (f32 and 16-bit float
// sums and products, in f64).
bool Widened(const std::string& type, const std::string& op) {
  return IsFloatType(type) && type != "f64" && (op == "add" || op == "multiply");
}

// The evaluator's result for scan s computed as the kernel does: x and init converted to
// f64, scanned, rounded to f32 and then (16-bit floats) to the element type.
Literal WidenedReference(const Scan& s, const std::vector<Literal>& args) {
  Scan wide = s;
  wide.type = "f64";
  std::string text = ScanModule(wide);
  const std::string t = s.type;
  std::string shape = "[";
  for (size_t d = 0; d < s.dims.size(); ++d) shape += (d == 0 ? "" : ",") + std::to_string(s.dims[d]);
  shape += "]";
  // Parameters keep the element type; converts feed the f64 scan and round its result.
  const std::string wide_params = s.init.empty() ? hlo::StrCat("x: f64", shape, ", y: f64[]")
                                                 : hlo::StrCat("x: f64", shape);
  const std::string params = s.init.empty() ? hlo::StrCat("x: ", t, shape, ", y: ", t, "[]")
                                            : hlo::StrCat("x: ", t, shape);
  text.replace(text.find(wide_params), wide_params.size(), params);
  text.replace(text.find(") -> f64" + shape), 8 + shape.size(), ") -> " + t + shape);
  const std::string x_line = "%x = f64" + shape + " parameter(0)";
  text.replace(text.find(x_line), x_line.size(),
               hlo::StrCat("%x0 = ", t, shape, " parameter(0)\n  %x = f64", shape, " convert(%x0)"));
  if (s.init.empty()) {
    const std::string y_line = "%i = f64[] parameter(1)";
    text.replace(text.find(y_line), y_line.size(),
                 hlo::StrCat("%i0 = ", t, "[] parameter(1)\n  %i = f64[] convert(%i0)"));
  }
  const std::string root = "ROOT %s = f64" + shape;
  text.replace(text.find(root), root.size(), "%s = f64" + shape);
  text.replace(text.rfind("\n}\n"), 3,
               hlo::StrCat("\n  %s32 = f32", shape, " convert(%s)\n  ROOT %out = ", t, shape, " convert(%s32)\n}\n"));
  std::vector<const Literal*> ptrs;
  for (const Literal& a : args) ptrs.push_back(&a);
  return hlo::HloEvaluator().Evaluate(*hlo::ParseHloModule(text).value(), ptrs).value();
}

TEST(ScanKernelTest, EveryTypeReducerAxisAndDirection) {
  // Axis 2: contiguous lines; axis 1: strided lines, 5 lanes; axis 0: 35 lanes.
  const std::vector<int64_t> dims = {4, 7, 90};
  for (const char* type : {"pred", "s8", "s16", "s32", "s64", "u8", "u16", "u32", "u64", "f16",
                           "bf16", "f32", "f64"}) {
    for (const char* op : {"add", "multiply", "maximum", "minimum", "and", "or", "xor"}) {
      const bool is_float = IsFloatType(type);
      const std::string o = op;
      const bool bitwise = o == "and" || o == "or" || o == "xor";
      if (is_float && bitwise) continue;  // and/or/xor are not float ops
      for (int axis = 0; axis < 3; ++axis) {
        for (const bool reverse : {false, true}) {
          SCOPED_TRACE(hlo::StrCat(type, " ", op, " axis ", axis, reverse ? " suffix" : " prefix"));
          // Init from a parameter (not the identity); the reducer's operands swapped on odd
          // axes. Float products of values in [0.5, 1.5] stay finite; integers wrap.
          const Scan s{type, dims, axis, reverse, op, "", axis % 2 == 1};
          const std::string text = ScanModule(s);
          const Ranges r = is_float ? Ranges{0.5, 1.5} : Ranges{-3, 3};
          const std::vector<Literal> args = RandomArgs(text, r);
          Result res = RunBoth(text, args);
          ASSERT_TRUE(res.exe);
          EXPECT_EQ(res.exe->KernelKind("s"), "scan");
          if (std::string(type) == "f64" && o == "add") {
            EXPECT_TRUE(SameBits(res.got, NeumaierScan(args[0], axis, reverse, args[1].GetAsDouble(0))));
          } else if (Widened(type, o)) {
            EXPECT_TRUE(SameBits(res.got, WidenedReference(s, args)));
          } else {
            EXPECT_TRUE(SameBits(res.got, res.want));
          }
        }
      }
    }
  }
}

TEST(ScanKernelTest, F64SumsAreCompensatedLikeEager) {
  // 1 + 1e100 + 1 - 1e100: the plain fold gives 0, the compensated sum the exact 2.
  const std::string text = ScanModule(Scan{"f64", {4}, 0, false, "add"});
  std::vector<Literal> args;
  args.push_back(Literal::CreateR1<double>({1, 1e100, 1, -1e100}));
  Result res = RunBoth(text, args);
  ASSERT_TRUE(res.exe);
  EXPECT_EQ(res.exe->KernelKind("s"), "scan");
  EXPECT_EQ(res.got, Literal::CreateR1<double>({1, 1e100, 1e100, 2}));
  EXPECT_EQ(res.want, Literal::CreateR1<double>({1, 1e100, 1e100, 0}));
  // Overflow: the compensation stops while the sum is infinite (no inf - inf = NaN), and
  // NaN propagates.
  args[0] = Literal::CreateR1<double>({1e308, 1e308, -kInf, 1});
  EXPECT_EQ(RunBoth(text, args).got, NeumaierScan(args[0], 0, false, 0));
  args[0] = Literal::CreateR1<double>({0.1, NAN, 0.2, kInf});
  EXPECT_TRUE(SameBits(RunBoth(text, args).got, NeumaierScan(args[0], 0, false, 0), true));
}

TEST(ScanKernelTest, LogAddExp) {
  for (const char* type : {"f16", "bf16", "f32", "f64"}) {
    for (int axis = 0; axis < 2; ++axis) {
      for (const bool reverse : {false, true}) {
        SCOPED_TRACE(hlo::StrCat(type, " axis ", axis, reverse ? " suffix" : " prefix"));
        const std::string text = ScanModule(Scan{type, {6, 300}, axis, reverse, "logaddexp",
                                                 "-inf", false, "logaddexp_reducer"});
        std::vector<Literal> args = RandomArgs(text, Ranges{-30, 30});
        // Equal neighbours (the select's other branch) and specials in some lines.
        for (int64_t i = 0; i < 300; i += 7) args[0].SetFromDouble(i + 1, args[0].GetAsDouble(i));
        for (const auto& [at, v] : std::vector<std::pair<int64_t, double>>{
                 {310, NAN}, {620, kInf}, {640, kInf}, {930, -kInf}, {931, -kInf}, {1250, kInf},
                 {1260, -kInf}, {1270, NAN}, {1500, -kInf}}) {
          args[0].SetFromDouble(at, v);
        }
        Result res = RunBoth(text, args);
        ASSERT_TRUE(res.exe);
        EXPECT_EQ(res.exe->KernelKind("s"), "scan");
        EXPECT_TRUE(SameBits(res.got, res.want, /*nan_any=*/true));
      }
    }
  }
  // A line of only -inf stays -inf (-inf + log 2); +inf then anything stays +inf.
  const std::string text =
      ScanModule(Scan{"f64", {5}, 0, false, "logaddexp", "-inf", false, "logaddexp_reducer"});
  std::vector<Literal> args;
  args.push_back(Literal::CreateR1<double>({-kInf, -kInf, kInf, 3, kInf}));
  Result res = RunBoth(text, args);
  EXPECT_EQ(res.got.ToString(), "{-inf, -inf, inf, inf, inf}");
  EXPECT_TRUE(SameBits(res.got, res.want));
}

// The reducer is recognized by its name and its ops, in the forms rewrites may leave it.
TEST(ScanKernelTest, LogAddExpReducerForms) {
  const std::string t = "f64";
  const std::string rewritten = hlo::StrCat(
      "  %m = f64[] maximum(%p1, %p0)\n  %ne = pred[] compare(%p1, %p0), direction=NE\n"
      "  %zero = f64[] constant(0)\n  %sub = f64[] subtract(%p1, %p0)\n  %abs = f64[] abs(%sub)\n"
      "  %neg = f64[] negate(%abs)\n  %d = f64[] select(%ne, %neg, %zero)\n"
      "  %e = f64[] exponential(%d)\n  %l = f64[] log-plus-one(%e)\n  ROOT %r = f64[] add(%l, %m)\n");
  std::string with_log = LogAddExpBody(t);
  with_log.replace(with_log.find("log-plus-one"), 12, "log");
  std::string total_order = LogAddExpBody(t);
  total_order.replace(total_order.find("direction=EQ"), 12, "direction=EQ, type=TOTALORDER");
  struct Case {
    std::string name, body;
    bool scan;
  };
  for (const Case& c : std::vector<Case>{{"logaddexp_reducer.3", rewritten, true},
                                         {"logaddexp_reducer", LogAddExpBody(t), true},
                                         {"my_reducer", LogAddExpBody(t), false},
                                         {"logaddexp_reducer", with_log, false},
                                         {"logaddexp_reducer", total_order, false}}) {
    SCOPED_TRACE(c.name + (c.scan ? " (a scan)" : " (not a scan)"));
    const std::string text =
        ScanModule(Scan{t, {40}, 0, false, "logaddexp", "-inf", false, c.name}, c.body);
    Result res = RunBoth(text, RandomArgs(text, Ranges{-5, 5}));
    ASSERT_TRUE(res.exe);
    EXPECT_EQ(res.exe->KernelKind("s") == "scan", c.scan);
    EXPECT_TRUE(SameBits(res.got, res.want, true));
  }
}

TEST(ScanKernelTest, MaxMinNaNInfAndSignedZeros) {
  for (const char* type : {"f16", "bf16", "f32", "f64"}) {
    for (const char* op : {"maximum", "minimum"}) {
      for (const bool reverse : {false, true}) {
        SCOPED_TRACE(hlo::StrCat(type, " ", op, reverse ? " suffix" : " prefix"));
        const std::string text = ScanModule(Scan{type, {3, 8}, 1, reverse, op, "", false});
        std::vector<Literal> args;
        Literal x(hlo::ShapeUtil::MakeShape(hlo::StringToPrimitiveType(type).value(), {3, 8}));
        const double v[24] = {-0.0, 0.0, -1, 2,   NAN,  3,    -0.0, 1,    kInf, -kInf, 0.0,  -0.0,
                              5,    -kInf, 1, NAN, -2,  kInf, 0.0,  -0.0, -0.0, 0.0,   -kInf, kInf};
        for (int i = 0; i < 24; ++i) x.SetFromDouble(i, v[i]);
        args.push_back(std::move(x));
        args.push_back(Literal::CreateScalar(args[0].shape().element_type(), -0.0));
        Result res = RunBoth(text, args);
        ASSERT_TRUE(res.exe);
        EXPECT_EQ(res.exe->KernelKind("s"), "scan");
        EXPECT_TRUE(SameBits(res.got, res.want));
      }
    }
  }
  const std::string text = ScanModule(Scan{"f32", {8}, 0, false, "maximum", "-inf"});
  std::vector<Literal> args;
  args.push_back(Literal::CreateR1<float>({-0.f, 0.f, -1.f, 2.f, NAN, 3.f, -0.f, 1.f}));
  EXPECT_EQ(RunBoth(text, args).got.ToString(), "{-0, 0, 0, 2, nan, nan, nan, nan}");
}

// Over 100K elements: long lines, many lines, wide lane blocks (inner > one block, ragged).
// The split over threads must not change a bit.
TEST(ScanKernelTest, LargeAndThreadIndependent) {
  struct Case {
    std::string type, op;
    std::vector<int64_t> dims;
    int axis;
  };
  for (const Case& c : std::vector<Case>{{"f32", "add", {120000}, 0},
                                         {"f64", "add", {3, 40000}, 1},
                                         {"f64", "add", {2, 60000, 3}, 1},
                                         {"f16", "maximum", {400, 300}, 0},
                                         {"s8", "multiply", {2, 100, 1300}, 1},
                                         {"u64", "xor", {64, 3000}, 1},
                                         {"f64", "logaddexp", {110000}, 0},
                                         {"f32", "logaddexp", {200, 600}, 0}}) {
    for (const bool reverse : {false, true}) {
      SCOPED_TRACE(hlo::StrCat(c.type, " ", c.op, " axis ", c.axis, " of ", c.dims.size(), "-d",
                               reverse ? " suffix" : " prefix"));
      const bool lse = c.op == "logaddexp";
      const std::string text = ScanModule(Scan{c.type, c.dims, c.axis, reverse, c.op,
                                               lse ? "-inf" : "0", false,
                                               lse ? "logaddexp_reducer" : "red"});
      const std::vector<Literal> args = RandomArgs(text, Ranges{-3, 3});
      CpuCompileOptions one;
      one.max_threads = 1;
      Result single = RunBoth(text, args, one);
      ASSERT_TRUE(single.exe);
      EXPECT_EQ(single.exe->KernelKind("s"), "scan");
      auto multi = CompileForCpu(hlo::ParseHloModule(text).value()).value();
      EXPECT_TRUE(SameBits(multi->Run({&args[0]}).value()[0], single.got));
      if (c.type == "f64" && c.op == "add") {
        EXPECT_TRUE(SameBits(single.got, NeumaierScan(args[0], c.axis, reverse, 0)));
        // The compensation is visible at this length (a plain fold drifts from it).
        EXPECT_FALSE(SameBits(single.got, single.want));
      } else if (Widened(c.type, c.op)) {
        const Scan s{c.type, c.dims, c.axis, reverse, c.op, "0"};
        EXPECT_TRUE(SameBits(single.got, WidenedReference(s, args)));
        // Accumulating in f64 is visible at this length (an f32 fold drifts from it).
        EXPECT_FALSE(SameBits(single.got, single.want));
      } else {
        EXPECT_TRUE(SameBits(single.got, single.want, lse));
      }
    }
  }
}

// Other windows and reducers are not scans (they run on other kernels), still correct.
TEST(ScanKernelTest, OtherWindowsAndReducersAreNotScans) {
  auto partial = testing::CheckAgainstEvaluator(R"(HloModule m
%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %r = f32[] add(%a, %b)
}
ENTRY %main (x: f32[40]) -> f32[40] {
  %x = f32[40] parameter(0)
  %z = f32[] constant(0)
  ROOT %s = f32[40] reduce-window(%x, %z), window={size=3 pad=2_0}, to_apply=%add
})", 1e-6, 1e-6);
  if (partial) {
    EXPECT_NE(partial->KernelKind("s"), "scan");
  }
  auto sub = testing::CheckAgainstEvaluator(ScanModule(Scan{"f32", {30}, 0, false, "subtract"}),
                                            1e-5, 1e-5);
  if (sub) {
    EXPECT_NE(sub->KernelKind("s"), "scan");
  }
}

}  // namespace
}  // namespace jx::cpu::scan_kernel_test
