#include "jx/transforms/ad.h"

#include "jx/core/errors.h"
#include "jx/core/interpreter.h"
#include "jx/core/str_util.h"
#include "jx/transforms/ad_util.h"
#include "jx/transforms/jvp.h"
#include "jx/transforms/staging.h"

namespace jx {
namespace {

// A primal's tangent type (JAX's to_tangent_aval): its shape and dtype, and inside shard_map
// the manual axes it varies over, so that the tangent varies where the primal does. (A tangent
// typed invariant would get pvary over those axes in the linear program, and the transpose of
// that pvary would sum the cotangent over them: the gradient of a weight split over "model"
// would come out summed over the chips of "model".) In explicit sharding mode it keeps the
// primal's sharding too: cotangent types are primal types (JAX's sharding-in-types rule).
ShapedArray TangentAval(const ShapedArray& primal) {
  ShapedArray t{primal.shape, primal.dtype};
  t.vma = primal.vma;
  t.spec = primal.spec;
  return t;
}

}  // namespace

Linearized Linearize(const ArraysFn& fn, absl::Span<const Array> primals) {
  Linearized out;
  StagingInterpreter pe(StagingInterpreter::Mode::kStageUnknown, "linearize");
  JvpInterpreter jvp;
  Arrays outs;
  {
    InterpreterScope pe_scope(&pe);
    Arrays args;
    for (const Array& x : primals) {
      out.in_avals.push_back(x.aval());
      const bool has = HasTangentSpace(x.dtype());
      out.input_has_tangent.push_back(has);
      args.push_back(jvp.Wrap(x, has ? pe.NewArg(TangentAval(x.aval())) : Array()));
    }
    InterpreterScope jvp_scope(&jvp);
    outs = fn(args);
  }
  Arrays tangents_out;
  for (const Array& y : outs) {
    auto [p, t] = jvp.Unwrap(y);
    out.primals_out.push_back(std::move(p));
    out.output_is_zero.push_back(!t.defined());
    if (t.defined()) tangents_out.push_back(std::move(t));
  }
  out.linear = pe.Build(tangents_out);
  return out;
}

Arrays BackwardPass(const Jaxpr& jaxpr, absl::Span<const Array> consts, absl::Span<const Array> cts_out) {
  const size_t n = jaxpr.num_vars();
  std::vector<bool> linear(n, false);
  for (Var v : jaxpr.invars) linear[v.index] = true;
  std::vector<Array> value(n);  // values of non-linear vars
  for (size_t i = 0; i < consts.size(); ++i) value[jaxpr.constvars[i].index] = consts[i];
  auto is_linear = [&](const Atom& a) {
    const Var* v = std::get_if<Var>(&a);
    return v != nullptr && linear[v->index];
  };
  auto read = [&](const Atom& a) -> const Array& {
    if (const Var* v = std::get_if<Var>(&a)) return value[v->index];
    return std::get<Literal>(a).value;
  };
  // Forward: mark linear equations, evaluate the others.
  std::vector<bool> eqn_linear(jaxpr.eqns.size(), false);
  for (size_t k = 0; k < jaxpr.eqns.size(); ++k) {
    const Eqn& e = jaxpr.eqns[k];
    bool any = false;
    for (const Atom& a : e.inputs) any = any || is_linear(a);
    eqn_linear[k] = any;
    if (any) {
      for (Var v : e.outputs) linear[v.index] = true;
      continue;
    }
    absl::InlinedVector<Array, 4> in;
    for (const Atom& a : e.inputs) in.push_back(read(a));
    Arrays res = Bind(e.primitive, in, e.params);
    for (size_t i = 0; i < e.outputs.size(); ++i) value[e.outputs[i].index] = std::move(res[i]);
  }
  // Backward: accumulate cotangents of linear vars.
  std::vector<Array> ct(n);
  for (size_t i = 0; i < jaxpr.outvars.size() && i < cts_out.size(); ++i) {
    if (const Var* v = std::get_if<Var>(&jaxpr.outvars[i]); v && linear[v->index] && cts_out[i].defined()) {
      ct[v->index] = AddAny(ct[v->index], cts_out[i]);
    }
  }
  for (size_t k = jaxpr.eqns.size(); k-- > 0;) {
    if (!eqn_linear[k]) continue;
    const Eqn& e = jaxpr.eqns[k];
    Arrays cts;
    bool any_ct = false;
    for (Var v : e.outputs) {
      cts.push_back(ct[v.index]);
      any_ct = any_ct || ct[v.index].defined();
      ct[v.index] = Array();
    }
    if (!any_ct) continue;
    const PrimitiveRules& rules = GlobalRegistry().Get(e.primitive);
    if (!rules.transpose) {
      auto it = rules.unsupported.find("transpose");
      ThrowOpError<NotImplementedError>(e.primitive.name(), "has no transpose rule (it is not linear",
                                        it == rules.unsupported.end() ? "" : ": ",
                                        it == rules.unsupported.end() ? "" : it->second, ")");
    }
    absl::InlinedVector<TransposeArg, 4> args;
    for (const Atom& a : e.inputs) {
      if (is_linear(a)) {
        static const Array kLinear;  // undefined: the input is linear
        args.push_back(TransposeArg{kLinear, jaxpr.aval(a)});
      } else {
        args.push_back(TransposeArg{read(a), jaxpr.aval(a)});
      }
    }
    Arrays cts_in = rules.transpose(cts, args, e.params);
    for (size_t i = 0; i < e.inputs.size() && i < cts_in.size(); ++i) {
      if (!args[i].is_linear() || !cts_in[i].defined()) continue;
      const Var v = std::get<Var>(e.inputs[i]);
      if (cts_in[i].shape() != jaxpr.aval(v).shape) {
        throw InternalError(StrCat("[", e.primitive.name(), "] transpose rule gave cotangent ",
                                   cts_in[i].aval().str(), " for input ", i, " of type ", jaxpr.aval(v).str()));
      }
      ct[v.index] = AddAny(ct[v.index], cts_in[i]);
    }
  }
  Arrays result;
  for (Var v : jaxpr.invars) result.push_back(ct[v.index]);
  return result;
}

std::pair<Arrays, Pullback> VjpCall(const ArraysFn& fn, absl::Span<const Array> primals) {
  auto lin = std::make_shared<Linearized>(Linearize(fn, primals));
  Arrays outs = lin->primals_out;
  Pullback pullback = [lin](absl::Span<const Array> cts_out) {
    if (cts_out.size() != lin->primals_out.size()) {
      throw ValueError(StrCat("vjp: the pullback takes ", lin->primals_out.size(), " cotangents, got ",
                              cts_out.size()));
    }
    Arrays nonzero;
    for (size_t i = 0; i < cts_out.size(); ++i) {
      const ShapedArray& want = lin->primals_out[i].aval();
      if (cts_out[i].defined() && (cts_out[i].shape() != want.shape || cts_out[i].dtype() != want.dtype)) {
        throw TypeError(StrCat("vjp: cotangent ", i, " has type ", cts_out[i].aval().str(),
                               " but the primal output has type ", want.str()));
      }
      if (!lin->output_is_zero[i]) nonzero.push_back(cts_out[i]);
    }
    Arrays cts = BackwardPass(*lin->linear.jaxpr, lin->linear.consts, nonzero);
    Arrays result;
    size_t k = 0;
    for (size_t i = 0; i < lin->in_avals.size(); ++i) {
      Array c = lin->input_has_tangent[i] ? cts[k++] : Array();
      const ShapedArray& aval = lin->in_avals[i];
      result.push_back(c.defined() ? c : Zeros(ShapedArray{aval.shape, aval.dtype}));
    }
    return result;
  };
  return {std::move(outs), std::move(pullback)};
}

}  // namespace jx
