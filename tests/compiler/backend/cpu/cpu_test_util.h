// Shared helpers for the CPU backend tests: random literals, tolerant comparison, and
// "compile HLO text, run it on random inputs, compare with HloEvaluator".
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "jx/compiler/backend/cpu/cpu_executable.h"
#include "jx/compiler/hlo/hlo_evaluator.h"
#include "jx/compiler/hlo/hlo_parser.h"

namespace jx::cpu::testing {

using hlo::Literal;
using hlo::Shape;

// Floats uniform in [lo, hi]; integers in [lo, hi] rounded; pred random.
inline Literal RandomLiteral(const Shape& shape, std::mt19937& rng, double lo = -2,
                             double hi = 2) {
  if (shape.IsTuple()) {
    std::vector<Literal> elements;
    for (const Shape& s : shape.tuple_shapes()) elements.push_back(RandomLiteral(s, rng, lo, hi));
    return Literal::CreateTuple(std::move(elements));
  }
  Literal lit(shape);
  std::uniform_real_distribution<double> dist(lo, hi);
  // The count and the type test are hoisted: large inputs made them a fifth of some tests.
  const int64_t n = lit.element_count();
  const bool is_float = hlo::IsFloatingPointType(shape.element_type());
  for (int64_t i = 0; i < n; ++i) {
    const double v = dist(rng);
    if (is_float) {
      lit.SetFromDouble(i, v);
    } else if (shape.element_type() == hlo::PRED) {
      lit.SetFromInt64(i, v > (lo + hi) / 2);
    } else {
      lit.SetFromInt64(i, static_cast<int64_t>(std::round(v)));
    }
  }
  return lit;
}

// Elementwise |got - want| <= atol + rtol * |want|; NaN matches NaN, inf matches inf.
inline ::testing::AssertionResult Near(const Literal& got, const Literal& want, double rtol,
                                       double atol) {
  if (!hlo::ShapeUtil::Compatible(got.shape(), want.shape())) {
    return ::testing::AssertionFailure() << "shape " << got.shape() << " vs " << want.shape();
  }
  if (got.shape().IsTuple()) {
    for (size_t i = 0; i < got.tuple_elements().size(); ++i) {
      auto r = Near(got.tuple_elements()[i], want.tuple_elements()[i], rtol, atol);
      if (!r) return r << " (tuple element " << i << ")";
    }
    return ::testing::AssertionSuccess();
  }
  const bool is_float = hlo::IsFloatingPointType(got.shape().element_type());
  for (int64_t i = 0; i < got.element_count(); ++i) {
    if (!is_float) {
      if (got.GetAsInt64(i) != want.GetAsInt64(i)) {
        return ::testing::AssertionFailure() << "element " << i << ": " << got.GetAsInt64(i)
                                             << " vs " << want.GetAsInt64(i);
      }
      continue;
    }
    const double g = got.GetAsDouble(i), w = want.GetAsDouble(i);
    if (std::isnan(w) && std::isnan(g)) continue;
    if (std::isinf(w) && g == w) continue;
    if (!(std::fabs(g - w) <= atol + rtol * std::fabs(w))) {
      return ::testing::AssertionFailure()
             << "element " << i << ": got " << g << " want " << w << " (rtol " << rtol << ")";
    }
  }
  return ::testing::AssertionSuccess();
}

struct Ranges {
  double lo = -2, hi = 2;
};

// Compiles `text`, runs it and the evaluator on the same random inputs and compares.
// Returns the executable (null on failure) for further checks.
inline std::unique_ptr<CpuExecutable> CheckAgainstEvaluator(
    std::string_view text, double rtol = 1e-5, double atol = 1e-6,
    CpuCompileOptions options = {}, Ranges ranges = {}, uint32_t seed = 1) {
  auto parsed = hlo::ParseHloModule(text);
  EXPECT_TRUE(parsed.ok()) << parsed.status();
  if (!parsed.ok()) return nullptr;
  auto reference = hlo::ParseHloModule(text).value();
  auto exe = CompileForCpu(*std::move(parsed), options);
  EXPECT_TRUE(exe.ok()) << exe.status();
  if (!exe.ok()) return nullptr;
  std::mt19937 rng(seed);
  std::vector<Literal> args;
  const hlo::HloComputation& entry = *reference->entry_computation();
  for (int64_t i = 0; i < entry.num_parameters(); ++i) {
    args.push_back(RandomLiteral(entry.parameter_instruction(i)->shape(), rng, ranges.lo,
                                 ranges.hi));
  }
  std::vector<const Literal*> ptrs;
  for (const Literal& a : args) ptrs.push_back(&a);
  hlo::HloEvaluator evaluator;
  absl::StatusOr<Literal> want = evaluator.Evaluate(*reference, ptrs);
  EXPECT_TRUE(want.ok()) << want.status();
  absl::StatusOr<std::vector<Literal>> got = (*exe)->Run(ptrs);
  EXPECT_TRUE(got.ok()) << got.status();
  if (!want.ok() || !got.ok()) return nullptr;
  if (want->shape().IsTuple()) {
    EXPECT_EQ(got->size(), want->tuple_elements().size());
    for (size_t i = 0; i < got->size() && i < want->tuple_elements().size(); ++i) {
      EXPECT_TRUE(Near((*got)[i], want->tuple_elements()[i], rtol, atol)) << "output " << i;
    }
  } else {
    EXPECT_EQ(got->size(), 1u);
    if (got->size() == 1) {
      EXPECT_TRUE(Near((*got)[0], *want, rtol, atol));
    }
  }
  return *std::move(exe);
}

}  // namespace jx::cpu::testing
