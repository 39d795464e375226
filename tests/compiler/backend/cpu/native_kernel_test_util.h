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
  std::string reference;
};

// Compiles `text`, checks that instruction `name` runs as `kind`, runs it and the
// evaluator (on o.reference when set) on the same inputs and requires identical bytes.
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
    EXPECT_TRUE((*got)[k] == *wants[k]) << "output " << k << " differs in its bits";
  }
}

}  // namespace jx::cpu::testing
