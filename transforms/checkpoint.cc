#include "jx/transforms/checkpoint.h"

#include <algorithm>

#include "jx/core/errors.h"
#include "jx/core/interpreter.h"
#include "jx/transforms/ad_util.h"
#include "jx/transforms/dce.h"
#include "jx/transforms/jaxpr_util.h"
#include "jx/transforms/jvp.h"
#include "jx/transforms/optimization_barrier.h"
#include "jx/transforms/remat_partial_eval.h"
#include "jx/transforms/vmap.h"

namespace jx {
namespace {

const Primitive kCheckpoint = Primitive::Intern("checkpoint");
const Primitive kName = Primitive::Intern("name");
const Primitive kOptimizationBarrier = Primitive::Intern("optimization_barrier");

using PolicyPtr = std::shared_ptr<const CheckpointPolicy>;

// The policy as a primitive parameter: equal when it is the same policy object.
class PolicyParam final : public ParamObject {
 public:
  explicit PolicyParam(PolicyPtr policy) : policy_(std::move(policy)) {}
  const PolicyPtr& policy() const { return policy_; }
  size_t Hash() const override { return std::hash<const void*>{}(policy_.get()); }
  bool Equals(const ParamObject& other) const override {
    const auto* o = dynamic_cast<const PolicyParam*>(&other);
    return o != nullptr && o->policy_ == policy_;
  }
  std::string ToString() const override { return policy_->name; }

 private:
  PolicyPtr policy_;
};

PolicyPtr GetPolicy(const ParamMap& params) {
  const Param* p = params.Find("policy");
  if (p == nullptr || std::holds_alternative<ParamNone>(p->value)) return nullptr;
  const auto* obj = dynamic_cast<const PolicyParam*>(params.GetObject("policy").get());
  return obj == nullptr ? nullptr : obj->policy();
}

Arrays BindCheckpoint(const Hoisted& f, absl::Span<const Array> args, bool differentiated, const PolicyPtr& policy) {
  return Bind(kCheckpoint, Cat({f.consts, args}),
              ParamMap{{"differentiated", differentiated},
                       {"jaxpr", JaxprParamOf(f.jaxpr)},
                       {"policy", policy ? Param(std::shared_ptr<const ParamObject>(std::make_shared<PolicyParam>(policy)))
                                         : Param(ParamNone{})},
                       {"prevent_cse", true}});
}

Avals CheckpointAbstractEval(InAvals in, const ParamMap& params) {
  const ClosedJaxpr& j = GetJaxpr(params, "jaxpr");
  const std::vector<ShapedArray> want = j.jaxpr->in_avals();
  bool ok = want.size() == in.size();
  for (size_t i = 0; ok && i < in.size(); ++i) ok = SameShapeDType(want[i], *in[i]);
  if (!ok) throw InternalError("checkpoint: operands do not match its jaxpr");
  const std::vector<ShapedArray> outs = j.jaxpr->out_avals();
  return Avals(outs.begin(), outs.end());
}

// The jvp of a checkpointed function split by a policy, as JAX's remat partial evaluation
// (pe.partial_eval_jaxpr_custom): `forward` (consts..., primals...) -> (primal outputs...,
// saved...) runs the primal equations; `tangent` (saved..., tangents...) -> tangent outputs
// reads the saved values and recomputes the other primal values it needs (under linearize it
// is staged with them as residuals, and its transpose reruns its primal part). The policy
// reaches into scan/cond bodies: their partial_eval rules split them under it, and the
// values a body saves are stacked per iteration and saved.
struct PolicySplit {
  ClosedJaxpr forward, tangent;
  Arrays consts;
  size_t num_saved = 0;
};

PolicySplit SplitByPolicy(const ClosedJaxpr& j, const CheckpointPolicy& policy, absl::Span<const Array> primals,
                          absl::Span<const Array> tangents, const std::vector<size_t>& float_outs) {
  const std::vector<ShapedArray> out_avals = j.jaxpr->out_avals();
  const size_t np = primals.size(), nout = out_avals.size();
  Arrays nonzero;
  for (const Array& t : tangents) {
    if (t.defined()) nonzero.push_back(t);
  }
  // The jvp of j as one jaxpr: (consts..., primals..., tangents...) -> (outs..., tangents of
  // the float outs...).
  Hoisted jvp = TraceHoisted(
      [&](absl::Span<const Array> a) {
        Arrays ts(np);
        for (size_t i = 0, n = 0; i < np; ++i) {
          if (tangents[i].defined()) ts[i] = a[np + n++];
        }
        auto [po, to] = JvpCall(AsFn(j), a.subspan(0, np), ts);
        for (size_t k : float_outs) po.push_back(to[k].defined() ? to[k] : Zeros(out_avals[k]));
        return po;
      },
      AvalsOf(Cat({primals, nonzero})), "checkpoint jvp");
  const Jaxpr& J = *jvp.jaxpr.jaxpr;
  const size_t nc = jvp.consts.size();
  std::vector<bool> in_unknown(J.invars.size(), true);
  std::fill(in_unknown.begin(), in_unknown.begin() + static_cast<ptrdiff_t>(nc + np), false);
  std::vector<bool> force(J.outvars.size(), false);
  std::fill(force.begin() + static_cast<ptrdiff_t>(nout), force.end(), true);
  const SaveablePolicy saveable = policy.saveable;
  const ScopedRematPolicy scope(&saveable);
  PartialEvalResult pe = PartialEvalJaxprCustom(jvp.jaxpr, in_unknown, force, saveable);
  for (size_t k = 0; k < nout; ++k) {
    if (pe.out_unknown[k]) throw InternalError("checkpoint: a primal output depends on a tangent");
  }
  Arrays consts(pe.known.consts.begin(), pe.known.consts.end());
  consts.insert(consts.end(), jvp.consts.begin(), jvp.consts.end());
  return PolicySplit{pe.known.jaxpr, pe.unknown, consts, pe.residual_avals.size()};
}

// Forward mode: the primal outputs by the function itself, the tangents by a second
// checkpoint over its jvp that returns only tangents. Under linearize the first runs now and
// the second is staged with only the primal inputs as residuals: nothing inside is saved.
// With a policy, the first also returns the values the policy saves, and the second reads
// them instead of recomputing them (they become residuals too).
JvpResult CheckpointJvp(absl::Span<const Array> primals, absl::Span<const Array> tangents, const ParamMap& params) {
  const ClosedJaxpr& j = GetJaxpr(params, "jaxpr");
  const PolicyPtr policy = GetPolicy(params);
  const std::vector<ShapedArray> out_avals = j.jaxpr->out_avals();
  Arrays nonzero;
  for (const Array& t : tangents) {
    if (t.defined()) nonzero.push_back(t);
  }
  std::vector<size_t> float_outs;
  for (size_t k = 0; k < out_avals.size(); ++k) {
    if (HasTangentSpace(out_avals[k].dtype)) float_outs.push_back(k);
  }
  JvpResult r;
  r.tangents_out.resize(out_avals.size());
  if (nonzero.empty() || float_outs.empty()) {
    r.primals_out = BindCheckpoint(Hoisted{j, {}}, primals, false, policy);
    return r;
  }
  Arrays touts;
  if (policy) {
    PolicySplit split = SplitByPolicy(j, *policy, primals, tangents, float_outs);
    Arrays all = BindCheckpoint(Hoisted{split.forward, {}}, Cat({split.consts, primals}), false, policy);
    r.primals_out.assign(all.begin(), all.begin() + static_cast<ptrdiff_t>(out_avals.size()));
    const Arrays saved(all.begin() + static_cast<ptrdiff_t>(out_avals.size()), all.end());
    touts = BindCheckpoint(Hoisted{split.tangent, {}}, Cat({saved, nonzero}), false, policy);
  } else {
    r.primals_out = BindCheckpoint(Hoisted{j, {}}, primals, false, policy);
    Hoisted tangent_fn = TraceHoisted(
        [&](absl::Span<const Array> a) {
          Arrays ts(primals.size());
          for (size_t i = 0, n = 0; i < primals.size(); ++i) {
            if (tangents[i].defined()) ts[i] = a[primals.size() + n++];
          }
          auto [po, to] = JvpCall(AsFn(j), a.subspan(0, primals.size()), ts);
          Arrays out;
          for (size_t k : float_outs) out.push_back(to[k].defined() ? to[k] : Zeros(out_avals[k]));
          return out;
        },
        AvalsOf(Cat({primals, nonzero})), "checkpoint jvp");
    // The jvp's primal outputs are not returned: their last equations need not rerun.
    tangent_fn.jaxpr.jaxpr = DceJaxpr(*tangent_fn.jaxpr.jaxpr);
    touts = BindCheckpoint(tangent_fn, Cat({primals, nonzero}), false, policy);
  }
  for (size_t f = 0; f < float_outs.size(); ++f) r.tangents_out[float_outs[f]] = touts[f];
  return r;
}

// Reverse mode: one checkpoint that recomputes the non-linear part and runs the backward pass.
Arrays CheckpointTranspose(absl::Span<const Array> cts_out, absl::Span<const TransposeArg> args, const ParamMap& params) {
  const ClosedJaxpr& j = GetJaxpr(params, "jaxpr");
  std::vector<bool> linear;
  Arrays known;
  for (const TransposeArg& a : args) {
    linear.push_back(a.is_linear());
    if (!a.is_linear()) known.push_back(a.value);
  }
  const std::vector<ShapedArray> out_avals = j.jaxpr->out_avals();
  Arrays cts;
  for (size_t k = 0; k < cts_out.size(); ++k) cts.push_back(cts_out[k].defined() ? cts_out[k] : Zeros(out_avals[k]));
  Hoisted backward = TraceHoisted(
      [&](absl::Span<const Array> a) { return TransposeJaxpr(j, linear, a.subspan(0, known.size()), a.subspan(known.size())); },
      AvalsOf(Cat({known, cts})), "checkpoint transpose");
  Arrays outs = BindCheckpoint(backward, Cat({known, cts}), true, nullptr);
  Arrays result(args.size());
  for (size_t i = 0, n = 0; i < args.size(); ++i) {
    if (linear[i]) result[i] = outs[n++];
  }
  return result;
}

BatchResult CheckpointBatch(absl::Span<const Array> args, absl::Span<const int64_t> dims, int64_t size,
                            const ParamMap& params) {
  std::vector<int64_t> axes;
  Arrays moved;
  for (size_t i = 0; i < args.size(); ++i) {
    moved.push_back(dims[i] == kNotMapped ? args[i] : MoveAxis(args[i], dims[i], 0));
    axes.push_back(dims[i] == kNotMapped ? kNotMapped : 0);
  }
  const ClosedJaxpr& j = GetJaxpr(params, "jaxpr");
  Hoisted batched = TraceHoisted([&](absl::Span<const Array> a) { return VmapCall(AsFn(j), a, axes, {0}, size); },
                                 AvalsOf(moved), "checkpoint vmap");
  Arrays outs = BindCheckpoint(batched, moved, params.GetBool("differentiated"), GetPolicy(params));
  return BatchResult{outs, std::vector<int64_t>(outs.size(), 0)};
}

}  // namespace

Arrays CheckpointCall(const ArraysFn& f, absl::Span<const Array> args, std::shared_ptr<const CheckpointPolicy> policy) {
  return BindCheckpoint(TraceHoisted(f, AvalsOf(args), "checkpoint"), args, false, policy);
}

Array checkpoint_name(const Array& x, const std::string& name) {
  return Bind(kName, {x}, ParamMap{{"name", name}})[0];
}

std::vector<std::string> SavedResidualsFlat(const ArraysFn& fn, absl::Span<const Array> args) {
  const Linearized lin = Linearize(fn, args);
  std::vector<std::string> lines;
  for (const Array& r : lin.linear.consts) {
    std::string from = "computed in the forward pass";
    for (size_t i = 0; i < args.size(); ++i) {
      if (args[i].impl() == r.impl()) from = StrCat("from the argument ", i);
    }
    lines.push_back(StrCat(r.aval().str(), " ", from));
  }
  return lines;
}

Primitive OptimizationBarrierPrimitive() { return kOptimizationBarrier; }

Arrays OptimizationBarrier(absl::Span<const Array> values) {
  return values.empty() ? Arrays{} : Bind(kOptimizationBarrier, values, ParamMap{});
}

const std::string* CheckpointNameOf(Primitive p, const ParamMap& params) {
  if (!(p == kName)) return nullptr;
  return &std::get<std::string>(params.Find("name")->value);
}

void RegisterCheckpoint(Registry& r) {
  PrimitiveRules& rules = r.Define(kCheckpoint);
  rules.abstract_eval = CheckpointAbstractEval;
  rules.impl = [](absl::Span<const Array> in, const ParamMap& params, absl::Span<const ShapedArray>) {
    return Apply(GetJaxpr(params, "jaxpr"), in);
  };
  rules.jvp = CheckpointJvp;
  rules.transpose = CheckpointTranspose;
  rules.batch = CheckpointBatch;
  // JAX's remat_dce: the body pruned to the used outputs, as a closed call's.
  RegisterDceRule(kCheckpoint, DceClosedCall);

  PrimitiveRules& name = r.Define(kName);
  name.abstract_eval = [](InAvals in, const ParamMap&) {
    if (in.size() != 1) throw TypeError(StrCat("checkpoint_name takes one array, got ", in.size()));
    return Avals{*in[0]};
  };
  name.impl = [](absl::Span<const Array> in, const ParamMap&, absl::Span<const ShapedArray>) { return Arrays{in[0]}; };
  // The tangent is not named (JAX's name_jvp).
  name.jvp = [](absl::Span<const Array> primals, absl::Span<const Array> tangents, const ParamMap& params) {
    return JvpResult{Bind(kName, primals, params), {tangents[0]}};
  };
  // Linear (the identity): a named tangent's cotangent passes through.
  name.transpose = [](absl::Span<const Array> cts, absl::Span<const TransposeArg>, const ParamMap&) {
    return Arrays{cts[0]};
  };
  name.batch = [](absl::Span<const Array> args, absl::Span<const int64_t> dims, int64_t, const ParamMap& params) {
    return BatchResult{Bind(kName, args, params), {dims[0]}};
  };

  // optimization_barrier (JAX's lax.optimization_barrier_p): the identity on its operands,
  // which the compiler may neither move computations across nor CSE through.
  PrimitiveRules& barrier = r.Define(kOptimizationBarrier);
  barrier.abstract_eval = [](InAvals in, const ParamMap&) {
    Avals out;
    for (const ShapedArray* a : in) out.push_back(*a);
    return out;
  };
  barrier.impl = [](absl::Span<const Array> in, const ParamMap&, absl::Span<const ShapedArray>) {
    return Arrays(in.begin(), in.end());
  };
  // As JAX's: the primals pass one barrier and the tangents another (one joint barrier would
  // make the primal results depend on the tangents under linearize).
  barrier.jvp = [](absl::Span<const Array> primals, absl::Span<const Array> tangents, const ParamMap&) {
    Arrays defined;
    for (const Array& t : tangents) {
      if (t.defined()) defined.push_back(t);
    }
    const Arrays fenced = OptimizationBarrier(defined);
    JvpResult r{OptimizationBarrier(primals), Arrays(primals.size())};
    for (size_t i = 0, n = 0; i < tangents.size(); ++i) {
      if (tangents[i].defined()) r.tangents_out[i] = fenced[n++];
    }
    return r;
  };
  // Linear in each operand: the cotangents pass a barrier of their own.
  barrier.transpose = [](absl::Span<const Array> cts, absl::Span<const TransposeArg> args, const ParamMap&) {
    Arrays defined;
    for (size_t i = 0; i < cts.size(); ++i) {
      if (args[i].is_linear() && cts[i].defined()) defined.push_back(cts[i]);
    }
    const Arrays fenced = OptimizationBarrier(defined);
    Arrays out(args.size());
    for (size_t i = 0, n = 0; i < cts.size(); ++i) {
      if (args[i].is_linear() && cts[i].defined()) out[i] = fenced[n++];
    }
    return out;
  };
  barrier.batch = [](absl::Span<const Array> args, absl::Span<const int64_t> dims, int64_t, const ParamMap&) {
    return BatchResult{OptimizationBarrier(args), std::vector<int64_t>(dims.begin(), dims.end())};
  };
}

}  // namespace jx
