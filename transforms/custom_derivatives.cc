#include "jx/transforms/custom_derivatives.h"

#include "jx/core/errors.h"
#include "jx/core/interpreter.h"
#include "jx/transforms/ad_util.h"
#include "jx/transforms/jaxpr_util.h"
#include "jx/transforms/jvp.h"
#include "jx/transforms/vmap.h"

namespace jx {
namespace {

const Primitive kCustomJvpCall = Primitive::Intern("custom_jvp_call");
const Primitive kCustomVjpCall = Primitive::Intern("custom_vjp_call");
const Primitive kCustomLin = Primitive::Intern("custom_lin");

// A user rule as a primitive parameter; equal only to itself (like JAX's thunks).
template <typename Fn>
class FunctionParam final : public ParamObject {
 public:
  FunctionParam(std::string name, Fn fn) : name_(std::move(name)), fn_(std::move(fn)) {}
  const Fn& fn() const { return fn_; }
  size_t Hash() const override { return std::hash<const void*>{}(this); }
  bool Equals(const ParamObject& other) const override { return &other == this; }
  std::string ToString() const override { return name_; }

 private:
  std::string name_;
  Fn fn_;
};

template <typename Fn>
Param FnParam(std::string name, Fn fn) {
  return Param(std::shared_ptr<const ParamObject>(std::make_shared<FunctionParam<Fn>>(std::move(name), std::move(fn))));
}
template <typename Fn>
const Fn& GetFn(const ParamMap& params, std::string_view name) {
  return static_cast<const FunctionParam<Fn>&>(*params.GetObject(name)).fn();
}

Avals OutAvals(const ParamMap& params) {
  const std::vector<ShapedArray> outs = GetJaxpr(params, "call_jaxpr").jaxpr->out_avals();
  return Avals(outs.begin(), outs.end());
}

Avals CallAbstractEval(InAvals in, const ParamMap& params) {
  const std::vector<ShapedArray> want = GetJaxpr(params, "call_jaxpr").jaxpr->in_avals();
  bool ok = want.size() == in.size();
  for (size_t i = 0; ok && i < in.size(); ++i) ok = SameShapeDType(want[i], *in[i]);
  if (!ok) throw InternalError("custom derivative call: operands do not match the function's jaxpr");
  return OutAvals(params);
}

Arrays CallImpl(absl::Span<const Array> in, const ParamMap& params, absl::Span<const ShapedArray>) {
  return Apply(GetJaxpr(params, "call_jaxpr"), in);
}

void CheckNoConstTangents(absl::Span<const Array> tangents, size_t num_consts, std::string_view what) {
  for (size_t i = 0; i < num_consts; ++i) {
    if (tangents[i].defined()) {
      throw TypeError(StrCat("Detected differentiation of a ", what, " function with respect to a closed-over value. "
                             "That is not supported because the custom rule only says how to differentiate with "
                             "respect to the explicit arguments; pass the value as an argument instead"));
    }
  }
}

void CheckOutputs(absl::Span<const Array> got, const Avals& want, std::string_view what) {
  bool ok = got.size() == want.size();
  for (size_t k = 0; ok && k < got.size(); ++k) ok = SameShapeDType(got[k].aval(), want[k]);
  if (!ok) {
    throw TypeError(StrCat(what, " must return outputs shaped like the function's (", AvalsStr(absl::MakeConstSpan(want.data(), want.size())),
                           "), got (", AvalsStr(AvalsOf(got)), ")"));
  }
}

Arrays Instantiated(absl::Span<const Array> tangents, absl::Span<const Array> primals) {
  Arrays out;
  for (size_t i = 0; i < primals.size(); ++i) out.push_back(tangents[i].defined() ? tangents[i] : Zeros(primals[i].aval()));
  return out;
}

// vmap of a flat function over fixed in_axes, every output batched along axis 0.
ArraysFn Batched(ArraysFn fn, std::vector<int64_t> in_axes, int64_t size) {
  return [fn = std::move(fn), in_axes = std::move(in_axes), size](absl::Span<const Array> args) {
    return VmapCall(fn, args, in_axes, {0}, size);
  };
}

std::pair<std::vector<int64_t>, Arrays> MappedArgs(absl::Span<const Array> args, absl::Span<const int64_t> dims) {
  std::vector<int64_t> axes;
  Arrays moved;
  for (size_t i = 0; i < args.size(); ++i) {
    moved.push_back(dims[i] == kNotMapped ? args[i] : MoveAxis(args[i], dims[i], 0));
    axes.push_back(dims[i] == kNotMapped ? kNotMapped : 0);
  }
  return {axes, moved};
}

// ----- custom_jvp_call: inputs (consts..., args...) -----

// Inputs: f's hoisted consts, then consts (values the function closed over that are
// arguments of f's jaxpr already, e.g. after vmap), then the explicit arguments.
Arrays BindCustomJvp(const Hoisted& f, absl::Span<const Array> consts, FlatJvpFn jvp, absl::Span<const Array> args) {
  return Bind(kCustomJvpCall, Cat({f.consts, consts, args}),
              ParamMap{{"call_jaxpr", JaxprParamOf(f.jaxpr)},
                       {"jvp_jaxpr_fun", FnParam("jvp", std::move(jvp))},
                       {"num_consts", static_cast<int64_t>(f.consts.size() + consts.size())},
                       {"symbolic_zeros", false}});
}

JvpResult CustomJvpJvp(absl::Span<const Array> primals, absl::Span<const Array> tangents, const ParamMap& params) {
  const size_t nc = static_cast<size_t>(params.GetInt("num_consts"));
  CheckNoConstTangents(tangents, nc, "custom_jvp");
  const FlatJvpFn& rule = GetFn<FlatJvpFn>(params, "jvp_jaxpr_fun");
  const absl::Span<const Array> args = primals.subspan(nc);
  auto [outs, touts] = rule(args, Instantiated(tangents.subspan(nc), args));
  const Avals want = OutAvals(params);
  CheckOutputs(outs, want, "a custom_jvp rule's primal output");
  CheckOutputs(touts, want, "a custom_jvp rule's tangent output");
  JvpResult r{std::move(outs), {}};
  for (const Array& t : touts) r.tangents_out.push_back(HasTangentSpace(t.dtype()) ? t : Array());
  return r;
}

BatchResult CustomJvpBatch(absl::Span<const Array> args, absl::Span<const int64_t> dims, int64_t size,
                           const ParamMap& params) {
  const size_t nc = static_cast<size_t>(params.GetInt("num_consts"));
  auto [axes, moved] = MappedArgs(args, dims);
  const ClosedJaxpr& call = GetJaxpr(params, "call_jaxpr");
  Hoisted f = TraceHoisted(Batched(AsFn(call), axes, size), AvalsOf(moved), "custom_jvp vmap");
  // The batched rule sees primals and tangents batched alike; consts have no tangents.
  const std::vector<int64_t> arg_axes(axes.begin() + static_cast<ptrdiff_t>(nc), axes.end());
  FlatJvpFn rule = GetFn<FlatJvpFn>(params, "jvp_jaxpr_fun");
  FlatJvpFn batched_rule = [rule, arg_axes, size](absl::Span<const Array> p, absl::Span<const Array> t) {
    const size_t n = p.size();
    std::vector<int64_t> both = arg_axes;
    both.insert(both.end(), arg_axes.begin(), arg_axes.end());
    size_t num_out = 0;
    Arrays outs = VmapCall(
        [&](absl::Span<const Array> a) {
          auto [o, to] = rule(a.subspan(0, n), a.subspan(n));
          num_out = o.size();
          return Cat({o, to});
        },
        Cat({p, t}), both, {0}, size);
    return std::pair{Arrays(outs.begin(), outs.begin() + static_cast<ptrdiff_t>(num_out)),
                     Arrays(outs.begin() + static_cast<ptrdiff_t>(num_out), outs.end())};
  };
  const absl::Span<const Array> all(moved);
  Arrays outs = BindCustomJvp(f, all.subspan(0, nc), std::move(batched_rule), all.subspan(nc));
  return BatchResult{outs, std::vector<int64_t>(outs.size(), 0)};
}

// ----- custom_vjp_call: inputs (consts..., args...); custom_lin: (residuals..., tangents...) -----

Arrays BindCustomVjp(const Hoisted& f, absl::Span<const Array> consts, FlatFwdFn fwd, FlatBwdFn bwd,
                     absl::Span<const Array> args) {
  return Bind(kCustomVjpCall, Cat({f.consts, consts, args}),
              ParamMap{{"bwd", FnParam("bwd", std::move(bwd))},
                       {"call_jaxpr", JaxprParamOf(f.jaxpr)},
                       {"fwd_jaxpr_thunk", FnParam("fwd", std::move(fwd))},
                       {"num_consts", static_cast<int64_t>(f.consts.size() + consts.size())}});
}

JvpResult CustomVjpJvp(absl::Span<const Array> primals, absl::Span<const Array> tangents, const ParamMap& params) {
  const size_t nc = static_cast<size_t>(params.GetInt("num_consts"));
  CheckNoConstTangents(tangents, nc, "custom_vjp");
  const absl::Span<const Array> args = primals.subspan(nc), arg_tangents = tangents.subspan(nc);
  auto [outs, res] = GetFn<FlatFwdFn>(params, "fwd_jaxpr_thunk")(args);
  const Avals want = OutAvals(params);
  CheckOutputs(outs, want, "a custom_vjp fwd's primal output");
  // The tangent map is linear and opaque: custom_lin, transposed by the user's bwd.
  std::vector<int64_t> nonzero;
  Arrays lin_in = res;
  for (size_t i = 0; i < args.size(); ++i) {
    if (!arg_tangents[i].defined()) continue;
    nonzero.push_back(static_cast<int64_t>(i));
    lin_in.push_back(arg_tangents[i]);
  }
  JvpResult r{std::move(outs), {}};
  if (nonzero.empty()) {
    r.tangents_out.resize(r.primals_out.size());
    return r;
  }
  std::vector<int64_t> arg_sizes;
  Arrays touts = Bind(kCustomLin, lin_in,
                      ParamMap{{"bwd", *params.Find("bwd")},
                               {"call_jaxpr", *params.Find("call_jaxpr")},
                               {"nonzero_args", nonzero},
                               {"num_args", static_cast<int64_t>(args.size())},
                               {"num_res", static_cast<int64_t>(res.size())}});
  for (const Array& t : touts) r.tangents_out.push_back(HasTangentSpace(t.dtype()) ? t : Array());
  return r;
}

BatchResult CustomVjpBatch(absl::Span<const Array> args, absl::Span<const int64_t> dims, int64_t size,
                           const ParamMap& params) {
  const size_t nc = static_cast<size_t>(params.GetInt("num_consts"));
  auto [axes, moved] = MappedArgs(args, dims);
  Hoisted f = TraceHoisted(Batched(AsFn(GetJaxpr(params, "call_jaxpr")), axes, size), AvalsOf(moved), "custom_vjp vmap");
  const std::vector<int64_t> arg_axes(axes.begin() + static_cast<ptrdiff_t>(nc), axes.end());
  FlatFwdFn fwd = GetFn<FlatFwdFn>(params, "fwd_jaxpr_thunk");
  FlatBwdFn bwd = GetFn<FlatBwdFn>(params, "bwd");
  const size_t num_out = GetJaxpr(params, "call_jaxpr").jaxpr->outvars.size();
  FlatFwdFn batched_fwd = [fwd, arg_axes, size, num_out](absl::Span<const Array> a) {
    Arrays both = VmapCall(
        [&](absl::Span<const Array> x) {
          auto [o, res] = fwd(x);
          return Cat({o, res});
        },
        a, arg_axes, {0}, size);
    return std::pair{Arrays(both.begin(), both.begin() + static_cast<ptrdiff_t>(num_out)),
                     Arrays(both.begin() + static_cast<ptrdiff_t>(num_out), both.end())};
  };
  FlatBwdFn batched_bwd = [bwd, arg_axes, size](absl::Span<const Array> res, absl::Span<const Array> cts) {
    const size_t nr = res.size();
    // Undefined cotangents (bwd's jx::none) stay undefined: only the others are batched.
    std::vector<bool> none;
    Arrays defined = VmapCall(
        [&](absl::Span<const Array> x) {
          Arrays all = bwd(x.subspan(0, nr), x.subspan(nr));
          none.clear();
          Arrays out;
          for (const Array& ct : all) {
            none.push_back(!ct.defined());
            if (ct.defined()) out.push_back(ct);
          }
          return out;
        },
        Cat({res, cts}), std::vector<int64_t>(nr + cts.size(), 0), {0}, size);
    Arrays per_example(none.size());
    for (size_t i = 0, k = 0; i < none.size(); ++i) {
      if (none[i]) continue;
      // An argument shared by every example gets the sum of their cotangents.
      per_example[i] = arg_axes[i] == kNotMapped ? SumLeadingAxis(defined[k]) : defined[k];
      ++k;
    }
    return per_example;
  };
  const absl::Span<const Array> all(moved);
  Arrays outs = BindCustomVjp(f, all.subspan(0, nc), std::move(batched_fwd), std::move(batched_bwd), all.subspan(nc));
  return BatchResult{outs, std::vector<int64_t>(outs.size(), 0)};
}

Arrays CustomLinImpl(absl::Span<const Array>, const ParamMap&, absl::Span<const ShapedArray>) {
  throw TypeError("can't apply forward-mode autodiff (jvp) to a custom_vjp function; use reverse mode "
                  "(grad, vjp, jacrev) or define the function with custom_jvp");
}

Arrays CustomLinTranspose(absl::Span<const Array> cts_out, absl::Span<const TransposeArg> args, const ParamMap& params) {
  const size_t nr = static_cast<size_t>(params.GetInt("num_res"));
  Arrays res;
  for (size_t i = 0; i < nr; ++i) res.push_back(args[i].value);
  const Avals out_avals = OutAvals(params);
  Arrays cts;
  for (size_t k = 0; k < cts_out.size(); ++k) cts.push_back(cts_out[k].defined() ? cts_out[k] : Zeros(out_avals[k]));
  Arrays arg_cts = GetFn<FlatBwdFn>(params, "bwd")(res, cts);
  const std::vector<ShapedArray> arg_avals = GetJaxpr(params, "call_jaxpr").jaxpr->in_avals();
  const size_t num_args = static_cast<size_t>(params.GetInt("num_args"));
  if (arg_cts.size() != num_args) {
    throw TypeError(StrCat("custom_vjp bwd returned ", arg_cts.size(), " cotangents for ", num_args, " arguments"));
  }
  const size_t nc = arg_avals.size() - num_args;
  Arrays result(args.size());
  const std::vector<int64_t>& nonzero = params.GetInts("nonzero_args");
  for (size_t j = 0; j < nonzero.size(); ++j) {
    const Array& ct = arg_cts[static_cast<size_t>(nonzero[j])];
    if (!ct.defined()) continue;  // bwd returned no cotangent (jx::none): zeros
    const ShapedArray& want = arg_avals[nc + static_cast<size_t>(nonzero[j])];
    if (!SameShapeDType(ct.aval(), want)) {
      throw TypeError(StrCat("custom_vjp bwd returned a ", ct.aval().str(), " cotangent for argument leaf ", nonzero[j],
                             ", which is ", want.str()));
    }
    result[nr + j] = ct;
  }
  return result;
}

}  // namespace

namespace custom_internal {

void AccumulateTangent(Arrays& sum, absl::Span<const Array> contribution, size_t arg) {
  if (contribution.size() != sum.size()) {
    throw TypeError(StrCat("defjvps: the jvp for argument ", arg, " returned ", contribution.size(),
                           " tangent leaves but the function has ", sum.size(), " outputs"));
  }
  for (size_t k = 0; k < sum.size(); ++k) sum[k] = sum[k].defined() ? AddAny(sum[k], contribution[k]) : contribution[k];
}

void FillZeroTangents(Arrays& sum, absl::Span<const Array> out) {
  for (size_t k = 0; k < sum.size(); ++k) {
    if (!sum[k].defined()) sum[k] = Zeros(out[k].aval());
  }
}

}  // namespace custom_internal

Arrays CustomJvpCall(const ArraysFn& f, FlatJvpFn jvp, absl::Span<const Array> args) {
  return BindCustomJvp(TraceHoisted(f, AvalsOf(args), "custom_jvp"), {}, std::move(jvp), args);
}

Arrays CustomVjpCall(const ArraysFn& f, FlatFwdFn fwd, FlatBwdFn bwd, absl::Span<const Array> args) {
  return BindCustomVjp(TraceHoisted(f, AvalsOf(args), "custom_vjp"), {}, std::move(fwd), std::move(bwd), args);
}

void RegisterCustomDerivatives(Registry& r) {
  PrimitiveRules& jvp_call = r.Define(kCustomJvpCall);
  jvp_call.abstract_eval = CallAbstractEval;
  jvp_call.impl = CallImpl;
  jvp_call.jvp = CustomJvpJvp;
  jvp_call.batch = CustomJvpBatch;
  jvp_call.unsupported["transpose"] = "not linear: reverse mode transposes the linear ops of its custom jvp rule";

  PrimitiveRules& vjp_call = r.Define(kCustomVjpCall);
  vjp_call.abstract_eval = CallAbstractEval;
  vjp_call.impl = CallImpl;
  vjp_call.jvp = CustomVjpJvp;
  vjp_call.batch = CustomVjpBatch;
  vjp_call.unsupported["transpose"] = "not linear: its jvp emits custom_lin, which the bwd rule transposes";

  PrimitiveRules& lin = r.Define(kCustomLin);
  lin.abstract_eval = [](InAvals, const ParamMap& params) { return OutAvals(params); };
  lin.impl = CustomLinImpl;
  lin.transpose = CustomLinTranspose;
  lin.unsupported["jvp"] = "custom_lin only lives in linearize's staged tangent program, which is transposed";
  lin.unsupported["batch"] = "custom_lin is never batched: vmap of reverse mode batches the bwd rule it calls";
}

}  // namespace jx
