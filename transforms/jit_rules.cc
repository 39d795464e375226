#include "jx/transforms/jit_rules.h"

#include <memory>
#include <optional>
#include <variant>

#include "absl/container/flat_hash_map.h"
#include "jx/core/str_util.h"
#include "jx/transforms/ad_util.h"
#include "jx/transforms/dce.h"
#include "jx/transforms/jaxpr_util.h"
#include "jx/transforms/jvp.h"
#include "jx/transforms/vmap.h"

namespace jx::jit_internal {
namespace {

const Primitive kJit = Primitive::Intern("jit");

// Live programs' transforms; past this many the least recently used are traced again.
constexpr size_t kTransformCacheCapacity = 1024;

std::string NameOf(const ParamMap& params) { return params.GetString("name"); }

// A transformed jaxpr and the parameters of the jit equation that runs it, built once per
// cache entry (a ParamMap costs allocations, and a call binds several jit equations).
struct JitCall {
  Hoisted fn;
  ParamMap params;
};

JitCall MakeJitCall(Hoisted fn, const std::string& name) {
  ParamMap params = JitParams(fn.jaxpr, name, std::vector<bool>(fn.jaxpr.jaxpr->invars.size(), false));
  return JitCall{std::move(fn), std::move(params)};
}

// Binds the jit equation (the hoisted consts lead the operands).
Arrays BindJit(const JitCall& call, absl::Span<const Array> args) {
  if (call.fn.consts.empty()) return Bind(kJit, args, call.params);
  return Bind(kJit, Cat({call.fn.consts, args}), call.params);
}

bool HasTracer(absl::Span<const Array> xs) {
  for (const Array& x : xs) {
    if (x.is_tracer()) return true;
  }
  return false;
}

// A transformed jaxpr may be reused only if it closes over no tracer: those belong to the
// transformation that was running when it was traced (the inner jaxprs jit binds have no
// consts, so this holds unless some caller binds jit over a closure of tracers).
bool ClosesOverNoTracer(const JitCall& c) { return !HasTracer(c.fn.consts); }

// The jvp of a jit's jaxpr: (primals..., nonzero tangents...) -> (primals_out...,
// tangents of the floating outputs...).
struct JvpJaxpr {
  JitCall call;
  std::vector<size_t> float_outs;  // outputs that have a tangent output
};

// A jit's jaxpr split by partial evaluation (JAX's partial_eval_jaxpr_nounits with known
// input forwarding): known outputs and residuals that are just known inputs (or constants)
// are passed through instead of being copied out by the known program.
struct JitSplit {
  JitCall known;            // known inputs -> the outputs not forwarded
  ParamMap unknown_params;  // of the staged jit: (residuals..., unknown inputs...)
  std::vector<bool> out_unknown;
  size_t num_residuals = 0;
  // Per output of the full known program (known outputs, then residuals): kComputed, or
  // the index into (known.fn.consts..., known inputs...) of the value it forwards.
  std::vector<int64_t> source;
  static constexpr int64_t kComputed = -1;
};

JitSplit SplitJaxpr(const ClosedJaxpr& j, const std::vector<bool>& unknown, const std::string& name) {
  PartialEvalResult pe = PartialEvalJaxpr(j, unknown, {});
  JitSplit split;
  split.out_unknown = std::move(pe.out_unknown);
  split.num_residuals = pe.residual_avals.size();
  split.unknown_params = JitParams(pe.unknown, name, std::vector<bool>(pe.unknown.jaxpr->invars.size(), false));
  const Jaxpr& known = *pe.known.jaxpr.jaxpr;
  absl::flat_hash_map<size_t, int64_t> input_position;  // var index -> invar position
  for (size_t i = 0; i < known.invars.size(); ++i)
    input_position.emplace(known.invars[i].index, static_cast<int64_t>(i));
  auto pruned = std::make_shared<Jaxpr>(known);
  pruned->outvars.clear();
  for (const Atom& out : known.outvars) {
    const Var* v = std::get_if<Var>(&out);
    auto it = v == nullptr ? input_position.end() : input_position.find(v->index);
    split.source.push_back(it == input_position.end() ? JitSplit::kComputed : it->second);
    if (it == input_position.end()) pruned->outvars.push_back(out);
  }
  split.known = MakeJitCall(Hoisted{ClosedJaxpr{std::move(pruned), {}}, std::move(pe.known.consts)}, name);
  return split;
}

JaxprCache<JvpJaxpr>& JvpCache() {
  static auto* cache = new JaxprCache<JvpJaxpr>("jit jvp", kTransformCacheCapacity);
  return *cache;
}
JaxprCache<JitSplit>& PartialEvalCache() {
  static auto* cache = new JaxprCache<JitSplit>("jit partial_eval", kTransformCacheCapacity);
  return *cache;
}
JaxprCache<JitCall>& TransposeCache() {
  static auto* cache = new JaxprCache<JitCall>("jit transpose", kTransformCacheCapacity);
  return *cache;
}
JaxprCache<JitCall>& BatchCache() {
  static auto* cache = new JaxprCache<JitCall>("jit batch", kTransformCacheCapacity);
  return *cache;
}

// Forward mode: one jit over the jvp'd jaxpr returning (primals, tangents); under
// linearize the partial_eval rule splits it into a known and a staged jit.
JvpResult JitJvp(absl::Span<const Array> primals, absl::Span<const Array> tangents, const ParamMap& params) {
  const ClosedJaxpr& j = GetJaxpr(params, "jaxpr");
  std::vector<bool> nonzero_mask(tangents.size());
  Arrays args(primals.begin(), primals.end());
  for (size_t i = 0; i < tangents.size(); ++i) {
    nonzero_mask[i] = tangents[i].defined();
    if (nonzero_mask[i]) args.push_back(tangents[i]);
  }
  JaxprCacheKey key;
  key.AddTraceContext();
  key.AddMask(nonzero_mask).AddAvals(args);
  std::shared_ptr<const JvpJaxpr> jvp = JvpCache().Get(
      j.jaxpr, key,
      [&] {
        auto out = std::make_shared<JvpJaxpr>();
        const std::vector<ShapedArray> out_avals = j.jaxpr->out_avals();
        for (size_t k = 0; k < out_avals.size(); ++k) {
          if (HasTangentSpace(out_avals[k].dtype)) out->float_outs.push_back(k);
        }
        const std::string name = StrCat("jvp(", NameOf(params), ")");
        Hoisted fn = TraceHoisted(
            [&](absl::Span<const Array> a) {
              Arrays ts(primals.size());
              for (size_t i = 0, n = 0; i < primals.size(); ++i) {
                if (nonzero_mask[i]) ts[i] = a[primals.size() + n++];
              }
              auto [po, to] = JvpCall(AsFn(j), a.subspan(0, primals.size()), ts);
              Arrays outs = po;
              for (size_t k : out->float_outs) outs.push_back(to[k].defined() ? to[k] : Zeros(out_avals[k]));
              return outs;
            },
            AvalsOf(args), name);
        out->call = MakeJitCall(std::move(fn), name);
        return out;
      },
      [](const JvpJaxpr& v) { return ClosesOverNoTracer(v.call); });
  Arrays outs = BindJit(jvp->call, args);
  const size_t n_out = outs.size() - jvp->float_outs.size();
  JvpResult r;
  r.primals_out.assign(outs.begin(), outs.begin() + static_cast<ptrdiff_t>(n_out));
  r.tangents_out.resize(n_out);
  for (size_t f = 0; f < jvp->float_outs.size(); ++f) r.tangents_out[jvp->float_outs[f]] = outs[n_out + f];
  return r;
}

// Partial evaluation (JAX's pjit rule): the known part runs now as one jit returning the
// known outputs and residuals; the unknown part is staged as a second jit over them.
std::optional<PartialEvalSplit> JitPartialEval(absl::Span<const Array> in, const std::vector<bool>& unknown,
                                               const ParamMap& params) {
  const ClosedJaxpr& j = GetJaxpr(params, "jaxpr");
  // The split depends only on the jaxpr (whose avals are fixed) and which inputs are unknown.
  JaxprCacheKey key;
  key.AddTraceContext();
  key.AddMask(unknown);
  std::shared_ptr<const JitSplit> split = PartialEvalCache().Get(
      j.jaxpr, key, [&] { return std::make_shared<const JitSplit>(SplitJaxpr(j, unknown, NameOf(params))); },
      [](const JitSplit& v) { return ClosesOverNoTracer(v.known); });
  Arrays known_in, unknown_in;
  for (size_t i = 0; i < in.size(); ++i) (unknown[i] ? unknown_in : known_in).push_back(in[i]);
  // A known program whose every output is forwarded need not run.
  const bool runs = !split->known.fn.jaxpr.jaxpr->outvars.empty();
  const Arrays computed = runs ? BindJit(split->known, known_in) : Arrays();
  const std::vector<Array>& consts = split->known.fn.consts;
  Arrays known_outs;  // known outputs, then residuals
  known_outs.reserve(split->source.size());
  for (size_t k = 0, n = 0; k < split->source.size(); ++k) {
    const int64_t from = split->source[k];
    if (from == JitSplit::kComputed) {
      known_outs.push_back(computed[n++]);
    } else {
      const size_t i = static_cast<size_t>(from);
      known_outs.push_back(i < consts.size() ? consts[i] : known_in[i - consts.size()]);
    }
  }
  const size_t n_known = known_outs.size() - split->num_residuals;
  PartialEvalSplit out;
  out.staged = kJit;
  out.staged_inputs = Cat({absl::MakeConstSpan(known_outs).subspan(n_known), unknown_in});
  out.staged_params = split->unknown_params;
  for (size_t k = 0, n = 0; k < split->out_unknown.size(); ++k) {
    out.known_outs.push_back(split->out_unknown[k] ? Array() : known_outs[n++]);
  }
  return out;
}

// Reverse mode: one jit running the backward pass of the jaxpr. It takes the known inputs
// and the defined cotangents; undefined (zero) cotangents are zeros inside the program.
Arrays JitTranspose(absl::Span<const Array> cts_out, absl::Span<const TransposeArg> args, const ParamMap& params) {
  const ClosedJaxpr& j = GetJaxpr(params, "jaxpr");
  std::vector<bool> linear, ct_defined;
  Arrays known, cts;
  for (const TransposeArg& a : args) {
    linear.push_back(a.is_linear());
    if (!a.is_linear()) known.push_back(a.value);
  }
  for (const Array& ct : cts_out) {
    ct_defined.push_back(ct.defined());
    if (ct.defined()) cts.push_back(ct);
  }
  Arrays operands = Cat({known, cts});
  JaxprCacheKey key;
  key.AddTraceContext();
  key.AddMask(linear).AddMask(ct_defined).AddAvals(operands);
  std::shared_ptr<const JitCall> backward = TransposeCache().Get(
      j.jaxpr, key,
      [&] {
        const std::vector<ShapedArray> out_avals = j.jaxpr->out_avals();
        const std::string name = StrCat("transpose(", NameOf(params), ")");
        return std::make_shared<const JitCall>(
            MakeJitCall(TraceHoisted(
                            [&](absl::Span<const Array> a) {
                              Arrays all_cts;
                              for (size_t k = 0, n = 0; k < ct_defined.size(); ++k) {
                                all_cts.push_back(ct_defined[k] ? a[known.size() + n++] : Zeros(out_avals[k]));
                              }
                              return TransposeJaxpr(j, linear, a.subspan(0, known.size()), all_cts);
                            },
                            AvalsOf(operands), name),
                        name));
      },
      ClosesOverNoTracer);
  Arrays outs = BindJit(*backward, operands);
  Arrays result(args.size());
  for (size_t i = 0, n = 0; i < args.size(); ++i) {
    if (linear[i]) result[i] = outs[n++];
  }
  return result;
}

// Batching: one jit over the batched jaxpr, which takes the operands with their batch
// dimensions where they are (no transposes before the call) and puts every output's at 0.
BatchResult JitBatch(absl::Span<const Array> args, absl::Span<const int64_t> dims, int64_t size,
                     const ParamMap& params) {
  const ClosedJaxpr& j = GetJaxpr(params, "jaxpr");
  const std::vector<int64_t> in_axes(dims.begin(), dims.end());
  JaxprCacheKey key;
  key.AddTraceContext();
  key.Add(size).Add(static_cast<int64_t>(in_axes.size()));
  for (int64_t d : in_axes) key.Add(d);
  key.AddAvals(args);
  std::shared_ptr<const JitCall> batched = BatchCache().Get(
      j.jaxpr, key,
      [&] {
        const std::string name = StrCat("vmap(", NameOf(params), ")");
        return std::make_shared<const JitCall>(MakeJitCall(
            TraceHoisted([&](absl::Span<const Array> a) { return VmapCall(AsFn(j), a, in_axes, {0}, size); },
                         AvalsOf(args), name),
            name));
      },
      ClosesOverNoTracer);
  Arrays outs = BindJit(*batched, args);
  return BatchResult{outs, std::vector<int64_t>(outs.size(), 0)};
}

// JAX's DCE rule for pjit: the closed-call rule (the inner jaxpr pruned to the used outputs,
// the call to the operands they read), with donated_invars kept for the operands that stay.
DceRuleResult JitDce(const std::vector<bool>& used_outputs, const Eqn& eqn) {
  DceRuleResult r = DceClosedCall(used_outputs, eqn);
  if (!r.eqn) return r;
  std::vector<int64_t> donated;
  const std::vector<int64_t>& old_donated = eqn.params.GetInts("donated_invars");
  for (size_t i = 0; i < eqn.inputs.size(); ++i) {
    if (r.used_inputs[i]) donated.push_back(old_donated[i]);
  }
  r.eqn->params.Set("donated_invars", std::move(donated));
  return r;
}

}  // namespace

ParamMap JitParams(const ClosedJaxpr& jaxpr, const std::string& name, const std::vector<bool>& donated) {
  std::vector<int64_t> donated_ints(donated.begin(), donated.end());
  return ParamMap{{"donated_invars", donated_ints}, {"jaxpr", JaxprParamOf(jaxpr)}, {"name", name}};
}

void SetJitTransformRules(PrimitiveRules& rules) {
  rules.jvp = JitJvp;
  rules.transpose = JitTranspose;
  rules.batch = JitBatch;
  rules.partial_eval = JitPartialEval;
  RegisterDceRule(kJit, JitDce);
}

JitTransformCacheStats GetJitTransformCacheStats() {
  return JitTransformCacheStats{JvpCache().stats(), PartialEvalCache().stats(), TransposeCache().stats(),
                                BatchCache().stats()};
}

}  // namespace jx::jit_internal
