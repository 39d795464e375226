#include "jx/transforms/jaxpr_util.h"

#include "jx/core/errors.h"
#include "jx/core/interpreter.h"
#include "jx/transforms/ad_util.h"
#include "jx/transforms/remat_partial_eval.h"
#include "jx/transforms/staging.h"

namespace jx {
Hoisted HoistConsts(ClosedJaxpr c) {
  auto j = std::make_shared<Jaxpr>(*c.jaxpr);
  j->invars.insert(j->invars.begin(), j->constvars.begin(), j->constvars.end());
  j->constvars.clear();
  return Hoisted{ClosedJaxpr{std::move(j), {}}, std::move(c.consts)};
}

Hoisted TraceHoisted(const ArraysFn& fn, absl::Span<const ShapedArray> avals, const std::string& name) {
  return HoistConsts(TraceToJaxpr(fn, avals, name));
}

Arrays Apply(const ClosedJaxpr& j, absl::Span<const Array> args) { return EvalJaxpr(*j.jaxpr, j.consts, args); }

Param JaxprParamOf(ClosedJaxpr j) {
  return Param(std::shared_ptr<const ParamObject>(std::make_shared<JaxprParam>(std::move(j))));
}

const ClosedJaxpr& GetJaxpr(const ParamMap& params, std::string_view name) {
  const auto* p = dynamic_cast<const JaxprParam*>(params.GetObject(name).get());
  if (p == nullptr) throw InternalError(StrCat("parameter ", name, " is not a jaxpr"));
  return p->closed();
}

std::vector<ShapedArray> AvalsOf(absl::Span<const Array> xs) {
  std::vector<ShapedArray> avals;
  avals.reserve(xs.size());
  for (const Array& x : xs) avals.push_back(x.aval());
  return avals;
}

std::string AvalsStr(absl::Span<const ShapedArray> avals) {
  std::string s;
  for (size_t i = 0; i < avals.size(); ++i) StrAppend(&s, i ? ", " : "", avals[i].str());
  return s;
}

bool SameShapeDType(const ShapedArray& a, const ShapedArray& b) { return a.shape == b.shape && a.dtype == b.dtype; }

PartialEvalResult PartialEvalJaxpr(const ClosedJaxpr& j, const std::vector<bool>& in_unknown,
                                   const std::vector<bool>& force_out_unknown) {
  // Inside a checkpoint with a policy (a scan's body split while the checkpoint splits).
  if (const SaveablePolicy* policy = CurrentRematPolicy()) {
    return PartialEvalJaxprCustom(j, in_unknown, force_out_unknown, *policy);
  }
  const std::vector<ShapedArray> in_avals = j.jaxpr->in_avals();
  // The known program is staged by an outer interpreter; a partial-evaluation interpreter
  // inside it stages only what depends on unknown inputs and runs the rest on the known one.
  StagingInterpreter known(StagingInterpreter::Mode::kStageAll, "partial_eval(known)");
  Arrays args(in_avals.size());
  for (size_t i = 0; i < in_avals.size(); ++i) {
    if (!in_unknown[i]) args[i] = known.NewArg(in_avals[i]);
  }
  PartialEvalResult r;
  Arrays known_outs;
  {
    InterpreterScope known_scope(&known);
    StagingInterpreter unknown(StagingInterpreter::Mode::kStageUnknown, "partial_eval(unknown)");
    for (size_t i = 0; i < in_avals.size(); ++i) {
      if (in_unknown[i]) args[i] = unknown.NewArg(in_avals[i]);
    }
    Arrays outs;
    {
      InterpreterScope unknown_scope(&unknown);
      outs = Apply(j, args);
    }
    Arrays unknown_outs;
    for (size_t k = 0; k < outs.size(); ++k) {
      const bool is_unknown = unknown.Owns(outs[k]) || (k < force_out_unknown.size() && force_out_unknown[k]);
      r.out_unknown.push_back(is_unknown);
      (is_unknown ? unknown_outs : known_outs).push_back(outs[k]);
    }
    Hoisted u = HoistConsts(unknown.Build(unknown_outs));
    r.unknown = std::move(u.jaxpr);
    for (const Array& res : u.consts) {
      r.residual_avals.push_back(res.aval());
      known_outs.push_back(res);
    }
  }
  r.known = HoistConsts(known.Build(known_outs));
  return r;
}

Arrays TransposeJaxpr(const ClosedJaxpr& f, const std::vector<bool>& linear, absl::Span<const Array> known,
                      absl::Span<const Array> cts_out) {
  const std::vector<ShapedArray> in_avals = f.jaxpr->in_avals();
  std::vector<ShapedArray> lin_avals;
  for (size_t i = 0; i < in_avals.size(); ++i) {
    if (linear[i]) lin_avals.push_back(in_avals[i]);
  }
  // f restricted to its linear inputs, the known ones closed over: the backward pass runs
  // the equations that only read known values forward, and transposes the rest.
  ClosedJaxpr restricted = TraceToJaxpr(
      [&](absl::Span<const Array> lin) {
        Arrays args;
        size_t l = 0, k = 0;
        for (size_t i = 0; i < in_avals.size(); ++i) args.push_back(linear[i] ? lin[l++] : known[k++]);
        return Apply(f, args);
      },
      lin_avals, "transpose");
  Arrays cts = BackwardPass(*restricted.jaxpr, restricted.consts, cts_out);
  for (size_t i = 0; i < cts.size(); ++i) {
    if (!cts[i].defined()) cts[i] = Zeros(ShapedArray{lin_avals[i].shape, lin_avals[i].dtype, lin_avals[i].weak_type});
  }
  return cts;
}


std::vector<ClosedJaxpr> JoinHoisted(const std::vector<Hoisted>& traced, absl::Span<const ShapedArray> arg_avals,
                                     std::vector<Array>* consts) {
  consts->clear();
  for (const Hoisted& t : traced) consts->insert(consts->end(), t.consts.begin(), t.consts.end());
  std::vector<ShapedArray> avals = AvalsOf(*consts);
  avals.insert(avals.end(), arg_avals.begin(), arg_avals.end());
  const size_t num_consts = consts->size();
  std::vector<ClosedJaxpr> joined;
  size_t offset = 0;
  for (const Hoisted& t : traced) {
    const size_t start = offset, n = t.consts.size();
    offset += n;
    if (traced.size() == 1) {
      joined.push_back(t.jaxpr);
      continue;
    }
    Hoisted j = TraceHoisted(
        [&](absl::Span<const Array> args) { return Apply(t.jaxpr, Cat({args.subspan(start, n), args.subspan(num_consts)})); },
        avals, "join");
    if (!j.consts.empty()) throw InternalError("joining traced functions produced new constants");
    joined.push_back(std::move(j.jaxpr));
  }
  return joined;
}

ArraysFn AsFn(const ClosedJaxpr& j) {
  return [j](absl::Span<const Array> args) { return Apply(j, args); };
}

Arrays Cat(std::initializer_list<absl::Span<const Array>> parts) {
  Arrays out;
  for (absl::Span<const Array> p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}

}  // namespace jx
