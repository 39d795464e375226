// Forward-mode differentiation: the JVP interpreter carries (primal, tangent) pairs and
// applies each primitive's jvp rule. A tangent is a symbolic zero (an undefined Array) until
// something makes it nonzero, so untouched inputs cost nothing.
//
//   auto [outs, tangent_outs] = jx::JvpCall(f, {x}, {t});
#pragma once

#include <functional>
#include <string>
#include <utility>

#include "jx/core/interpreter.h"

namespace jx {

class JvpTracer final : public Tracer {
 public:
  JvpTracer(const Interpreter& owner, Array primal, Array tangent)
      : Tracer(primal.aval(), owner), primal_(std::move(primal)), tangent_(std::move(tangent)) {}
  const Array& primal() const { return primal_; }
  const Array& tangent() const { return tangent_; }  // undefined: symbolic zero
  std::string Provenance() const override {
    return primal_.is_tracer() ? primal_.impl()->Provenance() : " It is traced by " + owner_name() + ".";
  }
  const ConcreteArray* ConcreteValue() const override {
    return primal_.impl() ? primal_.impl()->ConcreteValue() : nullptr;
  }

 private:
  Array primal_, tangent_;
};

class JvpInterpreter final : public Interpreter {
 public:
  Arrays Process(Primitive p, absl::Span<const Array> inputs, const ParamMap& params) override;
  std::string name() const override { return "jvp"; }

  // A tracer carrying primal and tangent (tangent undefined: zero).
  Array Wrap(Array primal, Array tangent) const;
  // (primal, tangent) of x: its own pair if x is this interpreter's tracer, else (x, zero).
  std::pair<Array, Array> Unwrap(const Array& x) const;
};

// True for dtypes that have tangents (floating point); integer and bool inputs get zero
// (float0-style) tangents.
bool HasTangentSpace(DType d);

// Calls fn on primals with tangents under a new JVP interpreter. tangents[i] may be
// undefined (zero). Returns primal outputs and their tangents (undefined where zero).
std::pair<Arrays, Arrays> JvpCall(const std::function<Arrays(absl::Span<const Array>)>& fn,
                                  absl::Span<const Array> primals, absl::Span<const Array> tangents);

}  // namespace jx
