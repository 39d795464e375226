#include "jx/transforms/jvp.h"

#include "jx/core/errors.h"
#include "jx/core/str_util.h"

namespace jx {

bool HasTangentSpace(DType d) { return IsFloating(d); }

Array JvpInterpreter::Wrap(Array primal, Array tangent) const {
  return Array(std::make_shared<JvpTracer>(*this, std::move(primal), std::move(tangent)));
}

std::pair<Array, Array> JvpInterpreter::Unwrap(const Array& x) const {
  if (Owns(x)) {
    const auto& t = static_cast<const JvpTracer&>(*x.impl());
    return {t.primal(), t.tangent()};
  }
  return {x, Array()};
}

Arrays JvpInterpreter::Process(Primitive p, absl::Span<const Array> inputs, const ParamMap& params) {
  // Inline for the usual arities: no heap work per traced equation.
  absl::InlinedVector<Array, 4> primals, tangents;
  bool any_tangent = false;
  for (size_t i = 0; i < inputs.size(); ++i) {
    CheckNotLeaked(inputs[i], p.name(), i);
    auto [primal, tangent] = Unwrap(inputs[i]);
    any_tangent = any_tangent || tangent.defined();
    primals.push_back(std::move(primal));
    tangents.push_back(std::move(tangent));
  }
  ResumeScope down(parent());
  if (!any_tangent) return Bind(p, primals, params);
  const PrimitiveRules& rules = GlobalRegistry().Get(p);
  if (!rules.jvp) {
    auto it = rules.unsupported.find("jvp");
    ThrowOpError<NotImplementedError>(p.name(), "is not differentiable in forward mode",
                                      it == rules.unsupported.end() ? "" : ": ",
                                      it == rules.unsupported.end() ? "" : it->second);
  }
  JvpResult r = rules.jvp(primals, tangents, params);
  Arrays outs;
  for (size_t i = 0; i < r.primals_out.size(); ++i) {
    Array t = i < r.tangents_out.size() ? std::move(r.tangents_out[i]) : Array();
    if (t.defined() && (t.shape() != r.primals_out[i].shape())) {
      throw InternalError(StrCat("[", p.name(), "] jvp rule gave tangent ", t.aval().str(), " for primal ",
                                 r.primals_out[i].aval().str()));
    }
    outs.push_back(Wrap(std::move(r.primals_out[i]), std::move(t)));
  }
  return outs;
}

std::pair<Arrays, Arrays> JvpCall(const std::function<Arrays(absl::Span<const Array>)>& fn,
                                  absl::Span<const Array> primals, absl::Span<const Array> tangents) {
  if (primals.size() != tangents.size()) {
    throw ValueError(StrCat("jvp: got ", primals.size(), " primals but ", tangents.size(), " tangents"));
  }
  JvpInterpreter jvp;
  Arrays args;
  for (size_t i = 0; i < primals.size(); ++i) {
    const Array& t = tangents[i];
    if (t.defined() && (t.shape() != primals[i].shape() || t.dtype() != primals[i].dtype())) {
      throw TypeError(StrCat("jvp: primal and tangent arguments must have equal shapes and dtypes, got primal ",
                             primals[i].aval().str(), " and tangent ", t.aval().str(), " for argument ", i));
    }
    args.push_back(jvp.Wrap(primals[i], HasTangentSpace(primals[i].dtype()) ? t : Array()));
  }
  Arrays outs;
  {
    InterpreterScope scope(&jvp);
    outs = fn(args);
  }
  Arrays primals_out, tangents_out;
  for (const Array& y : outs) {
    auto [p, t] = jvp.Unwrap(y);
    primals_out.push_back(std::move(p));
    tangents_out.push_back(std::move(t));
  }
  return {std::move(primals_out), std::move(tangents_out)};
}

}  // namespace jx
