#include "jx/core/interpreter.h"

#include <atomic>
#include <cmath>
#include <string>
#include <vector>

#include "jx/core/apply_primitive.h"
#include "jx/core/config.h"
#include "jx/core/device.h"
#include "jx/core/errors.h"

namespace jx {
namespace {
thread_local Interpreter* t_current = nullptr;
// The innermost interpreter installed by an InterpreterScope: unlike t_current it stays put
// while a rule runs one level down, so errors can name the whole transform stack.
thread_local Interpreter* t_innermost = nullptr;
std::atomic<uint64_t> g_next_interpreter_id{1};

// "while tracing make_jaxpr > vmap > jvp", outermost first; empty when eager.
std::string TransformStackContext() {
  std::vector<std::string> names;
  for (const Interpreter* i = t_innermost; i != nullptr; i = i->parent()) names.push_back(i->name());
  if (names.empty()) return {};
  std::string out = "while tracing ";
  for (size_t k = names.size(); k-- > 0;) StrAppend(&out, names[k], k ? " > " : "");
  return out;
}
}  // namespace

Interpreter::Interpreter() : id_(g_next_interpreter_id.fetch_add(1, std::memory_order_relaxed)) {}

bool Interpreter::Owns(const Array& x) const {
  return x.is_tracer() && static_cast<const Tracer&>(*x.impl()).owner_id() == id_;
}

void CheckNotLeaked(const Array& x, std::string_view op, size_t argument) {
  if (!x.is_tracer()) return;
  const auto& t = static_cast<const Tracer&>(*x.impl());
  for (const Interpreter* i = t_current; i != nullptr; i = i->parent()) {
    if (i->id() == t.owner_id()) return;
  }
  ThrowOpError<TracerLeakError>(op, "argument ", argument, " (", x.aval().str(), ") is a tracer of ",
                                t.owner_name(), " used after ", t.owner_name(),
                                " finished: a traced value escaped its transformation "
                                "(store results, not intermediate tracers, outside the function)");
}

ResumeScope::ResumeScope(Interpreter* interpreter) : saved_(t_current) { t_current = interpreter; }
ResumeScope::~ResumeScope() { t_current = saved_; }

Interpreter* CurrentInterpreter() { return t_current; }

InterpreterScope::InterpreterScope(Interpreter* interpreter) : saved_(t_current), saved_innermost_(t_innermost) {
  static const bool context_installed = (SetErrorContextProvider(&TransformStackContext), true);
  (void)context_installed;
  interpreter->parent_ = t_current;
  t_current = interpreter;
  t_innermost = interpreter;
}

InterpreterScope::~InterpreterScope() {
  t_current = saved_;
  t_innermost = saved_innermost_;
}

Arrays Bind(Primitive p, absl::Span<const Array> inputs, const ParamMap& params) {
  if (Interpreter* current = t_current) return current->Process(p, inputs, params);
  return EvalPrimitive(p, inputs, params);
}

Avals AbstractEval(Primitive p, InAvals inputs, const ParamMap& params) {
  const PrimitiveRules& rules = GlobalRegistry().Get(p);
  if (!rules.abstract_eval) throw InternalError(StrCat("[", p.name(), "] has no abstract evaluation rule"));
  return rules.abstract_eval(inputs, params);
}

namespace {

bool HoldsNaN(const Array& a) {
  if (!IsFloating(a.dtype()) || !a.is_concrete()) return false;
  for (double v : a.to_vector<double>()) {
    if (std::isnan(v)) return true;
  }
  return false;
}

// jax_debug_nans in eager mode: JAX checks each primitive's outputs as it runs.
void CheckNoNaN(Primitive p, absl::Span<const Array> inputs, absl::Span<const Array> outs) {
  for (const Array& out : outs) {
    if (!HoldsNaN(out)) continue;
    std::string avals;
    for (const Array& x : inputs) StrAppend(&avals, avals.empty() ? "" : ", ", x.aval().str());
    throw FloatingPointError(StrCat("invalid value (nan) encountered in ", p.name(), " (eager, operands ", avals,
                                    "; jax_debug_nans is on)"));
  }
}

Arrays EvalPrimitiveUnchecked(Primitive p, absl::Span<const Array> inputs, const ParamMap& params);

}  // namespace

Arrays EvalPrimitive(Primitive p, absl::Span<const Array> inputs, const ParamMap& params) {
  Arrays outs = EvalPrimitiveUnchecked(p, inputs, params);
  if (config::internal::eager_nan_checks()) CheckNoNaN(p, inputs, outs);
  return outs;
}

namespace {

Arrays EvalPrimitiveUnchecked(Primitive p, absl::Span<const Array> inputs, const ParamMap& params) {
  const PrimitiveRules& rules = GlobalRegistry().Get(p);
  absl::InlinedVector<const ShapedArray*, 4> in_avals;
  in_avals.reserve(inputs.size());
  bool any_committed = false;  // the hot path's only device work: one flag read per argument
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Array& x = inputs[i];
    if (!x.defined()) ThrowOpError<ValueError>(p.name(), "argument ", i, " is an empty Array handle");
    if (!x.is_concrete()) {
      CheckNotLeaked(x, p.name(), i);
      ThrowOpError<InternalError>(p.name(), "argument ", i, " is a tracer of an active transformation "
                                  "reaching eager evaluation");
    }
    any_committed |= static_cast<const ConcreteArray&>(*x.impl()).committed();
    in_avals.push_back(&x.aval());
  }
  Avals out_avals = rules.abstract_eval(in_avals, params);
  // JAX's rules: uncommitted arguments follow the committed ones, whose device runs the op
  // and holds its (committed) results; two committed devices are an error.
  const Device* device = any_committed ? CommittedDeviceOf(inputs, p.name()) : nullptr;
  if (device != nullptr && !IsHostDevice(*device)) return ApplyPrimitiveOnDevice(p, inputs, params, *device);
  if (!rules.impl) {
    auto it = rules.unsupported.find("impl");
    ThrowOpError<NotImplementedError>(p.name(), "has no eager implementation",
                                      it == rules.unsupported.end() ? "" : ": ",
                                      it == rules.unsupported.end() ? "" : it->second);
  }
  Arrays outs = rules.impl(inputs, params, out_avals);
  if (device != nullptr) {
    for (Array& out : outs) out = CommitTo(out, device);
  }
  return outs;
}

}  // namespace

}  // namespace jx
