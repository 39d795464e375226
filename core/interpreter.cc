#include "jx/core/interpreter.h"

#include "jx/core/errors.h"

namespace jx {
namespace {
thread_local Interpreter* t_current = nullptr;
}  // namespace

Interpreter* CurrentInterpreter() { return t_current; }

InterpreterScope::InterpreterScope(Interpreter* interpreter) : saved_(t_current) {
  interpreter->parent_ = t_current;
  t_current = interpreter;
}

InterpreterScope::~InterpreterScope() { t_current = saved_; }

Arrays Bind(Primitive p, absl::Span<const Array> inputs, const ParamMap& params) {
  if (Interpreter* current = t_current) return current->Process(p, inputs, params);
  return EvalPrimitive(p, inputs, params);
}

Avals AbstractEval(Primitive p, InAvals inputs, const ParamMap& params) {
  const PrimitiveRules& rules = GlobalRegistry().Get(p);
  if (!rules.abstract_eval) throw InternalError(StrCat("[", p.name(), "] has no abstract evaluation rule"));
  return rules.abstract_eval(inputs, params);
}

Arrays EvalPrimitive(Primitive p, absl::Span<const Array> inputs, const ParamMap& params) {
  const PrimitiveRules& rules = GlobalRegistry().Get(p);
  absl::InlinedVector<const ShapedArray*, 4> in_avals;
  in_avals.reserve(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Array& x = inputs[i];
    if (!x.defined()) ThrowOpError<ValueError>(p.name(), "argument ", i, " is an empty Array handle");
    if (!x.is_concrete()) {
      ThrowOpError<TracerLeakError>(p.name(), "argument ", i, " (", x.aval().str(),
                                    ") is a tracer whose transformation has already finished; "
                                    "a traced value escaped its transformation");
    }
    in_avals.push_back(&x.aval());
  }
  Avals out_avals = rules.abstract_eval(in_avals, params);
  if (!rules.impl) {
    auto it = rules.unsupported.find("impl");
    ThrowOpError<NotImplementedError>(p.name(), "has no eager implementation",
                                      it == rules.unsupported.end() ? "" : ": ",
                                      it == rules.unsupported.end() ? "" : it->second);
  }
  return rules.impl(inputs, params, out_avals);
}

}  // namespace jx
