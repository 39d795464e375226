// The interpreter stack (the "stackless" design of current JAX and autodidax).
//
// Binding a primitive asks the current interpreter (thread-local) to process it. With no
// transformation active the eval interpreter runs the primitive's impl rule on the CPU. A
// transformation installs its interpreter with an InterpreterScope; each interpreter points
// to its parent, and values it does not own are constants to it.
//
//   jx::Array y = jx::Bind1(lax::kSin, {x});   // what lax::sin(x) does
#pragma once

#include <cstdint>
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
  Interpreter();
  virtual ~Interpreter() = default;
  Interpreter(const Interpreter&) = delete;
  Interpreter& operator=(const Interpreter&) = delete;
  // Applies primitive p to inputs (some may belong to outer interpreters or be concrete).
  virtual Arrays Process(Primitive p, absl::Span<const Array> inputs, const ParamMap& params) = 0;
  // The transformation's name for error messages: "jvp", "vmap", "jit(f)".
  virtual std::string name() const = 0;
  Interpreter* parent() const { return parent_; }
  // Unique for the life of the process (addresses are reused; ids are not).
  uint64_t id() const { return id_; }
  // True if x is a tracer created by this interpreter.
  bool Owns(const Array& x) const;

 private:
  friend class InterpreterScope;
  Interpreter* parent_ = nullptr;
  uint64_t id_;
};

// A traced value: owned by one interpreter, identified by the interpreter's id so that a
// tracer outliving its transformation is detected rather than misread.
class Tracer : public ArrayImpl {
 public:
  Tracer(ShapedArray aval, const Interpreter& owner)
      : ArrayImpl(Kind::kTracer, std::move(aval)), owner_id_(owner.id()), owner_name_(owner.name()) {}
  uint64_t owner_id() const { return owner_id_; }
  // The transformation that created this tracer ("jvp", "vmap", "jit(f)").
  const std::string& owner_name() const { return owner_name_; }

 private:
  uint64_t owner_id_;
  std::string owner_name_;
};

// Throws TracerLeakError (naming op and argument) if x is a tracer whose interpreter is not
// on this thread's active chain: it escaped a finished transformation.
void CheckNotLeaked(const Array& x, std::string_view op, size_t argument);

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
  Interpreter* saved_innermost_;
};

// Makes `interpreter` current for a scope without re-parenting it: a transformation runs its
// rules "one level down" by resuming its parent.
class ResumeScope {
 public:
  explicit ResumeScope(Interpreter* interpreter);
  ~ResumeScope();
  ResumeScope(const ResumeScope&) = delete;
  ResumeScope& operator=(const ResumeScope&) = delete;

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
// Explicit-sharding types: sets `out`'s specs from the sharded inputs' specs by p's sharding
// rule (TypeError on conflicting shardings). AbstractEval calls it when an input is sharded.
void ApplyShardingTypes(Primitive p, const PrimitiveRules& rules, InAvals inputs, const ParamMap& params, Avals& out);

}  // namespace jx
