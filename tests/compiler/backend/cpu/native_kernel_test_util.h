// Helpers for the native reduce/arg-reduce/sort/reduce-window/scatter kernel tests: inputs
// with special float values, and a bit-exact comparison with the evaluator that also
// checks which kernel an instruction compiled to.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "jx/compiler/hlo/str_util.h"
#include "tests/compiler/backend/cpu/cpu_test_util.h"

namespace jx::cpu::testing {

// Random values in [lo, hi] (integers rounded), with a `special` fraction of float
// elements replaced by NaN, -NaN, +-0 or +-inf.
inline Literal SpecialLiteral(const Shape& shape, std::mt19937& rng, double lo, double hi,
                              double special) {
  Literal lit = RandomLiteral(shape, rng, lo, hi);
  if (!hlo::IsFloatingPointType(shape.element_type()) || special <= 0) return lit;
  std::uniform_real_distribution<double> u(0, 1);
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  const double values[] = {nan, -nan, 0.0, -0.0, inf, -inf};
  for (int64_t i = 0; i < lit.element_count(); ++i) {
    if (u(rng) < special) lit.SetFromDouble(i, values[static_cast<int>(u(rng) * 6) % 6]);
  }
  return lit;
}

struct ExactOptions {
  double lo = -4, hi = 4;
  double special = 0;      // fraction of special float values
  CpuCompileOptions compile = {};
  uint32_t seed = 1;
  // When set, the evaluator runs this module instead (same parameters): the kernel's
  // documented numerics spelled out in HLO, e.g. a sum widened to f64 and rounded once.
  std::string reference = {};
  // False: equal values suffice (the kernel library's max/min keep a NaN's payload and may
  // pick either zero of a -0/+0 tie, where the evaluator returns the quiet NaN and +0).
  bool bits = true;
};

// Compiles `text`, checks that instruction `name` runs as `kind`, runs it and the
// evaluator (on o.reference when set) on the same inputs and requires identical bytes (or
// values: o.bits).
inline void ExpectExact(std::string_view text, std::string_view name, std::string_view kind,
                        const ExactOptions& o = {}) {
  auto parsed = hlo::ParseHloModule(text);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  auto reference = hlo::ParseHloModule(o.reference.empty() ? text : o.reference).value();
  auto exe = CompileForCpu(*std::move(parsed), o.compile);
  ASSERT_TRUE(exe.ok()) << exe.status();
  EXPECT_EQ((*exe)->KernelKind(name), kind);
  std::mt19937 rng(o.seed);
  std::vector<Literal> args;
  const hlo::HloComputation& entry = *reference->entry_computation();
  for (int64_t i = 0; i < entry.num_parameters(); ++i) {
    args.push_back(
        SpecialLiteral(entry.parameter_instruction(i)->shape(), rng, o.lo, o.hi, o.special));
  }
  std::vector<const Literal*> ptrs;
  for (const Literal& a : args) ptrs.push_back(&a);
  hlo::HloEvaluator evaluator;
  absl::StatusOr<Literal> want = evaluator.Evaluate(*reference, ptrs);
  ASSERT_TRUE(want.ok()) << want.status();
  absl::StatusOr<std::vector<Literal>> got = (*exe)->Run(ptrs);
  ASSERT_TRUE(got.ok()) << got.status();
  std::vector<const Literal*> wants;
  if (want->shape().IsTuple()) {
    for (const Literal& w : want->tuple_elements()) wants.push_back(&w);
  } else {
    wants.push_back(&*want);
  }
  ASSERT_EQ(got->size(), wants.size());
  for (size_t k = 0; k < wants.size(); ++k) {
    EXPECT_TRUE(Near((*got)[k], *wants[k], 0, 0)) << "output " << k;
    if (o.bits) {
      EXPECT_TRUE((*got)[k] == *wants[k]) << "output " << k << " differs in its bits";
    }
  }
}

// The argmax/argmin reducer exactly as lax/reduction_lowering.cc builds it: larger (or
// smaller) value wins, NaN beats numbers, ties go to the lower index.
inline std::string ArgModule(const std::string& vt, const std::string& it, const std::string& in,
                      const std::string& out, int64_t axis, bool is_max, bool is_float) {
  const std::string better_cmp = is_max ? "GT" : "LT";
  std::string body = hlo::StrCat(
      "  %av = ", vt, "[] parameter(0)\n  %ai = ", it, "[] parameter(1)\n  %xv = ", vt,
      "[] parameter(2)\n  %xi = ", it, "[] parameter(3)\n  %gt = pred[] compare(%xv, %av), direction=",
      better_cmp, "\n  %eq = pred[] compare(%xv, %av), direction=EQ\n");
  if (is_float) {
    body += hlo::StrCat(
        "  %xnan = pred[] compare(%xv, %xv), direction=NE\n"
        "  %anan = pred[] compare(%av, %av), direction=NE\n"
        "  %nanan = pred[] not(%anan)\n"
        "  %b1 = pred[] and(%gt, %nanan)\n"
        "  %b2 = pred[] and(%xnan, %nanan)\n"
        "  %better = pred[] or(%b1, %b2)\n"
        "  %bothnan = pred[] and(%xnan, %anan)\n"
        "  %same = pred[] or(%eq, %bothnan)\n");
  } else {
    body += "  %better = pred[] or(%gt, %gt)\n  %same = pred[] and(%eq, %eq)\n";
  }
  body += hlo::StrCat(
      "  %ilt = pred[] compare(%xi, %ai), direction=LT\n"
      "  %tie = pred[] and(%same, %ilt)\n"
      "  %pick = pred[] or(%better, %tie)\n"
      "  %sv = ", vt, "[] select(%better, %xv, %av)\n"
      "  %si = ", it, "[] select(%pick, %xi, %ai)\n"
      "  ROOT %t = (", vt, "[], ", it, "[]) tuple(%sv, %si)\n");
  const std::string init_v = is_float ? (is_max ? "-inf" : "inf") : "0";
  return hlo::StrCat("HloModule a\n%arg (av: ", vt, "[], ai: ", it, "[], xv: ", vt, "[], xi: ",
                     it, "[]) -> (", vt, "[], ", it, "[]) {\n", body, "}\nENTRY %main (x: ", vt,
                     "[", in, "]) -> (", vt, "[", out, "], ", it, "[", out, "]) {\n  %x = ", vt,
                     "[", in, "] parameter(0)\n  %io = ", it, "[", in, "] iota(), iota_dimension=",
                     axis, "\n  %v0 = ", vt, "[] constant(", init_v, ")\n  %i0 = ", it,
                     "[] constant(0)\n  ROOT %r = (", vt, "[", out, "], ", it, "[", out,
                     "]) reduce(%x, %io, %v0, %i0), dimensions={", axis, "}, to_apply=%arg\n}\n");
}

}  // namespace jx::cpu::testing
