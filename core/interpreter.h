// The interpreter stack (the "stackless" design of current JAX and autodidax).
//
// Binding a primitive asks the current interpreter (thread-local) to process it. With no
// transformation active the eval interpreter runs the primitive's impl rule on the CPU. A
// transformation installs its interpreter with an InterpreterScope; each interpreter points
// to its parent, and values it does not own are constants to it.
//
//   jx::Array y = jx::Bind1(lax::kSin, {x});   // what lax::sin(x) does
#pragma once

#include <initializer_list>
#include <string>

#include "absl/types/span.h"
#include "jx/core/array.h"
#include "jx/core/param_map.h"
#include "jx/core/primitive.h"
#include "jx/core/registry.h"

namespace jx {

class Interpreter {
 public:
  virtual ~Interpreter() = default;
  // Applies primitive p to inputs (some may belong to outer interpreters or be concrete).
  virtual Arrays Process(Primitive p, absl::Span<const Array> inputs, const ParamMap& params) = 0;
  // The transformation's name for error messages: "jvp", "vmap", "jit(f)".
  virtual std::string name() const = 0;
  Interpreter* parent() const { return parent_; }

 private:
  friend class InterpreterScope;
  Interpreter* parent_ = nullptr;
};

// The innermost active interpreter of this thread, or nullptr for eager evaluation.
Interpreter* CurrentInterpreter();

// Installs an interpreter for the duration of a scope (RAII); restores the previous one.
class InterpreterScope {
 public:
  explicit InterpreterScope(Interpreter* interpreter);
  ~InterpreterScope();
  InterpreterScope(const InterpreterScope&) = delete;
  InterpreterScope& operator=(const InterpreterScope&) = delete;

 private:
  Interpreter* saved_;
};

// Applies a primitive through the current interpreter.
Arrays Bind(Primitive p, absl::Span<const Array> inputs, const ParamMap& params = {});
inline Array Bind1(Primitive p, std::initializer_list<Array> inputs, const ParamMap& params = {}) {
  return Bind(p, absl::MakeConstSpan(inputs.begin(), inputs.size()), params)[0];
}
inline Array Bind1(Primitive p, absl::Span<const Array> inputs, const ParamMap& params = {}) {
  return Bind(p, inputs, params)[0];
}

// Eager evaluation on the host: abstract eval (shape and dtype checks), then the impl rule.
Arrays EvalPrimitive(Primitive p, absl::Span<const Array> inputs, const ParamMap& params);

// Output avals of p applied to inputs of the given avals.
Avals AbstractEval(Primitive p, InAvals inputs, const ParamMap& params);

}  // namespace jx
