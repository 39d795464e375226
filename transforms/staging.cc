#include "jx/transforms/staging.h"

#include <algorithm>

#include "jx/core/errors.h"
#include "jx/core/registry.h"
#include "jx/core/str_util.h"

namespace jx {

StagingInterpreter::StagingInterpreter(Mode mode, std::string name) : mode_(mode), name_(std::move(name)) {}

Array StagingInterpreter::NewArg(ShapedArray aval, std::string label) {
  Var v = jaxpr_->NewVar(aval);
  jaxpr_->invars.push_back(v);
  labels_->push_back(label.empty() ? StrCat("input ", jaxpr_->invars.size() - 1) : std::move(label));
  return Array(std::make_shared<StagedTracer>(std::move(aval), *this, v, jaxpr_, labels_));
}

std::string StagedTracer::Provenance() const {
  // Walk the equations backward from var_, collecting everything it was computed from.
  std::vector<bool> needed(jaxpr_->num_vars(), false);
  needed[var_.index] = true;
  for (auto e = jaxpr_->eqns.rbegin(); e != jaxpr_->eqns.rend(); ++e) {
    bool used = false;
    for (Var out : e->outputs) used = used || needed[out.index];
    if (!used) continue;
    for (const Atom& in : e->inputs) {
      if (const Var* v = std::get_if<Var>(&in)) needed[v->index] = true;
    }
  }
  std::string names;
  for (size_t i = 0; i < jaxpr_->invars.size() && i < labels_->size(); ++i) {
    if (needed[jaxpr_->invars[i].index]) StrAppend(&names, names.empty() ? "" : ", ", (*labels_)[i]);
  }
  if (names.empty()) return StrCat(" It is traced by ", owner_name(), " and depends on no input (a closed-over traced value).");
  return StrCat(" It is traced by ", owner_name(), " and depends on the value of ", names, ".");
}

Atom StagingInterpreter::AtomFor(const Array& x, std::string_view op, size_t argument) {
  if (Owns(x)) return static_cast<const StagedTracer&>(*x.impl()).var();
  CheckNotLeaked(x, op, argument);
  // A 0-d concrete value is written inline; anything else becomes a constvar, once per value.
  if (x.is_concrete() && x.ndim() == 0) return Literal{x};
  auto [it, inserted] = const_vars_.try_emplace(x.impl().get(), Var{});
  if (inserted) {
    it->second = jaxpr_->NewVar(x.aval());
    jaxpr_->constvars.push_back(it->second);
    consts_.push_back(x);
  }
  return it->second;
}

Arrays StagingInterpreter::Process(Primitive p, absl::Span<const Array> inputs, const ParamMap& params) {
  if (mode_ == Mode::kStageUnknown) {
    size_t num_own = 0;
    for (const Array& x : inputs) num_own += Owns(x) ? 1 : 0;
    if (num_own == 0) {
      ResumeScope down(parent());
      return Bind(p, inputs, params);
    }
    if (num_own < inputs.size()) {
      if (std::optional<Arrays> outs = SplitKnown(p, inputs, params)) return *std::move(outs);
    }
  }
  return Stage(p, inputs, params);
}

std::optional<Arrays> StagingInterpreter::SplitKnown(Primitive p, absl::Span<const Array> inputs,
                                                     const ParamMap& params) {
  const PrimitiveRules* rules = GlobalRegistry().Find(p);
  if (rules == nullptr || !rules->partial_eval) return std::nullopt;
  std::vector<bool> unknown(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) unknown[i] = Owns(inputs[i]);
  std::optional<PartialEvalSplit> split;
  {
    ResumeScope down(parent());
    split = rules->partial_eval(inputs, unknown, params);
  }
  if (!split) return std::nullopt;
  Arrays outs = std::move(split->known_outs);
  // Every output known (none depends on the unknown inputs): nothing to stage.
  if (std::all_of(outs.begin(), outs.end(), [](const Array& o) { return o.defined(); })) return outs;
  Arrays staged = Stage(split->staged, split->staged_inputs, split->staged_params);
  const std::vector<size_t>& from = split->unknown_from;
  size_t next = 0;
  for (Array& o : outs) {
    if (o.defined()) continue;
    o = staged.at(from.empty() ? next : from.at(next));
    ++next;
  }
  if (from.empty() ? next != staged.size() : next != from.size()) {
    throw InternalError(StrCat(p.name(), " partial_eval: ", staged.size(), " staged outputs for ", next, " unknown ones"));
  }
  return outs;
}

Arrays StagingInterpreter::Stage(Primitive p, absl::Span<const Array> inputs, const ParamMap& params) {
  Eqn eqn{p, {}, {}, params};
  absl::InlinedVector<const ShapedArray*, 4> in_avals;
  eqn.inputs.reserve(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i].defined()) ThrowOpError<ValueError>(p.name(), "argument ", i, " is an empty Array handle");
    eqn.inputs.push_back(AtomFor(inputs[i], p.name(), i));
    in_avals.push_back(&inputs[i].aval());
  }
  Avals out_avals = AbstractEval(p, in_avals, params);
  Arrays outs;
  for (ShapedArray& aval : out_avals) {
    Var v = jaxpr_->NewVar(aval);
    eqn.outputs.push_back(v);
    outs.push_back(Array(std::make_shared<StagedTracer>(std::move(aval), *this, v, jaxpr_, labels_)));
  }
  jaxpr_->eqns.push_back(std::move(eqn));
  return outs;
}

ClosedJaxpr StagingInterpreter::Build(absl::Span<const Array> outs) {
  for (size_t i = 0; i < outs.size(); ++i) {
    const Array& x = outs[i];
    if (!x.defined()) throw InternalError(StrCat(name_, ": output ", i, " is an empty Array handle"));
    if (Owns(x)) {
      jaxpr_->outvars.push_back(static_cast<const StagedTracer&>(*x.impl()).var());
    } else {
      jaxpr_->outvars.push_back(AtomFor(x, name_, i));
    }
  }
  ClosedJaxpr closed{jaxpr_, std::move(consts_)};
  jaxpr_ = std::make_shared<Jaxpr>();
  labels_ = std::make_shared<std::vector<std::string>>();
  consts_.clear();
  const_vars_.clear();
  return closed;
}

ClosedJaxpr TraceToJaxpr(const std::function<Arrays(absl::Span<const Array>)>& fn,
                         absl::Span<const ShapedArray> in_avals, std::string name,
                         absl::Span<const std::string> in_labels) {
  StagingInterpreter staging(StagingInterpreter::Mode::kStageAll, std::move(name));
  Arrays args;
  for (size_t i = 0; i < in_avals.size(); ++i) args.push_back(staging.NewArg(in_avals[i], i < in_labels.size() ? in_labels[i] : ""));
  Arrays outs;
  {
    InterpreterScope scope(&staging);
    outs = fn(args);
  }
  return staging.Build(outs);
}

}  // namespace jx
