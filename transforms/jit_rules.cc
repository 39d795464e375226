#include "jx/transforms/jit_rules.h"

#include <memory>
#include <optional>

#include "jx/core/str_util.h"
#include "jx/transforms/ad_util.h"
#include "jx/transforms/jaxpr_util.h"
#include "jx/transforms/jvp.h"
#include "jx/transforms/vmap.h"

namespace jx::jit_internal {
namespace {

const Primitive kJit = Primitive::Intern("jit");

// Live programs' transforms; past this many the least recently used are traced again.
constexpr size_t kTransformCacheCapacity = 1024;

std::string NameOf(const ParamMap& params) { return params.GetString("name"); }

// Binds a jit equation over a hoisted jaxpr (its consts lead the operands).
Arrays BindJit(const Hoisted& f, absl::Span<const Array> args, const std::string& name) {
  std::vector<bool> donated(f.consts.size() + args.size(), false);
  return Bind(kJit, f.consts.empty() ? Arrays(args.begin(), args.end()) : Cat({f.consts, args}),
              JitParams(f.jaxpr, name, donated));
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
bool ClosesOverNoTracer(const Hoisted& h) { return !HasTracer(h.consts); }

// The jvp of a jit's jaxpr: (primals..., nonzero tangents...) -> (primals_out...,
// tangents of the floating outputs...).
struct JvpJaxpr {
  Hoisted fn;
  std::vector<size_t> float_outs;  // outputs that have a tangent output
};

JaxprCache<JvpJaxpr>& JvpCache() {
  static auto* cache = new JaxprCache<JvpJaxpr>("jit jvp", kTransformCacheCapacity);
  return *cache;
}
JaxprCache<PartialEvalResult>& PartialEvalCache() {
  static auto* cache = new JaxprCache<PartialEvalResult>("jit partial_eval", kTransformCacheCapacity);
  return *cache;
}
JaxprCache<Hoisted>& TransposeCache() {
  static auto* cache = new JaxprCache<Hoisted>("jit transpose", kTransformCacheCapacity);
  return *cache;
}
JaxprCache<Hoisted>& BatchCache() {
  static auto* cache = new JaxprCache<Hoisted>("jit batch", kTransformCacheCapacity);
  return *cache;
}

// Forward mode: one jit over the jvp'd jaxpr returning (primals, tangents); under
// linearize the partial_eval rule splits it into a known and a staged jit.
JvpResult JitJvp(absl::Span<const Array> primals, absl::Span<const Array> tangents, const ParamMap& params) {
  const ClosedJaxpr& j = GetJaxpr(params, "jaxpr");
  std::vector<bool> nonzero_mask(tangents.size());
  Arrays nonzero;
  for (size_t i = 0; i < tangents.size(); ++i) {
    nonzero_mask[i] = tangents[i].defined();
    if (nonzero_mask[i]) nonzero.push_back(tangents[i]);
  }
  const std::string name = StrCat("jvp(", NameOf(params), ")");
  JaxprCacheKey key;
  key.AddMask(nonzero_mask).AddAvals(primals).AddAvals(nonzero);
  std::shared_ptr<const JvpJaxpr> jvp = JvpCache().Get(
      j.jaxpr, key,
      [&] {
        auto out = std::make_shared<JvpJaxpr>();
        const std::vector<ShapedArray> out_avals = j.jaxpr->out_avals();
        for (size_t k = 0; k < out_avals.size(); ++k) {
          if (HasTangentSpace(out_avals[k].dtype)) out->float_outs.push_back(k);
        }
        out->fn = TraceHoisted(
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
            AvalsOf(Cat({primals, nonzero})), name);
        return out;
      },
      [](const JvpJaxpr& v) { return ClosesOverNoTracer(v.fn); });
  Arrays outs = BindJit(jvp->fn, Cat({primals, nonzero}), name);
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
  const std::string name = NameOf(params);
  // The split depends only on the jaxpr (whose avals are fixed) and which inputs are unknown.
  JaxprCacheKey key;
  key.AddMask(unknown);
  std::shared_ptr<const PartialEvalResult> pe = PartialEvalCache().Get(
      j.jaxpr, key, [&] { return std::make_shared<const PartialEvalResult>(PartialEvalJaxpr(j, unknown, {})); },
      [](const PartialEvalResult& v) { return ClosesOverNoTracer(v.known); });
  Arrays known_in, unknown_in;
  for (size_t i = 0; i < in.size(); ++i) (unknown[i] ? unknown_in : known_in).push_back(in[i]);
  const Arrays known_outs = BindJit(pe->known, known_in, name);
  const size_t n_res = pe->residual_avals.size(), n_known = known_outs.size() - n_res;
  PartialEvalSplit split;
  split.staged = kJit;
  split.staged_inputs = Cat({absl::MakeConstSpan(known_outs).subspan(n_known), unknown_in});
  split.staged_params = JitParams(pe->unknown, name, std::vector<bool>(split.staged_inputs.size(), false));
  for (size_t k = 0, n = 0; k < pe->out_unknown.size(); ++k) {
    split.known_outs.push_back(pe->out_unknown[k] ? Array() : known_outs[n++]);
  }
  return split;
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
  const std::string name = StrCat("transpose(", NameOf(params), ")");
  JaxprCacheKey key;
  key.AddMask(linear).AddMask(ct_defined).AddAvals(known).AddAvals(cts);
  std::shared_ptr<const Hoisted> backward = TransposeCache().Get(
      j.jaxpr, key,
      [&] {
        const std::vector<ShapedArray> out_avals = j.jaxpr->out_avals();
        return std::make_shared<const Hoisted>(TraceHoisted(
            [&](absl::Span<const Array> a) {
              Arrays all_cts;
              for (size_t k = 0, n = 0; k < ct_defined.size(); ++k) {
                all_cts.push_back(ct_defined[k] ? a[known.size() + n++] : Zeros(out_avals[k]));
              }
              return TransposeJaxpr(j, linear, a.subspan(0, known.size()), all_cts);
            },
            AvalsOf(Cat({known, cts})), name));
      },
      ClosesOverNoTracer);
  Arrays outs = BindJit(*backward, Cat({known, cts}), name);
  Arrays result(args.size());
  for (size_t i = 0, n = 0; i < args.size(); ++i) {
    if (linear[i]) result[i] = outs[n++];
  }
  return result;
}

// Batching: one jit over the batched jaxpr, which takes the operands with their batch
// dimensions where they are (no transposes before the call) and puts every output's at 0.
BatchResult JitBatch(absl::Span<const Array> args, absl::Span<const int64_t> dims, int64_t size, const ParamMap& params) {
  const ClosedJaxpr& j = GetJaxpr(params, "jaxpr");
  const std::string name = StrCat("vmap(", NameOf(params), ")");
  const std::vector<int64_t> in_axes(dims.begin(), dims.end());
  JaxprCacheKey key;
  key.Add(size).Add(static_cast<int64_t>(in_axes.size()));
  for (int64_t d : in_axes) key.Add(d);
  key.AddAvals(args);
  std::shared_ptr<const Hoisted> batched = BatchCache().Get(
      j.jaxpr, key,
      [&] {
        return std::make_shared<const Hoisted>(TraceHoisted(
            [&](absl::Span<const Array> a) { return VmapCall(AsFn(j), a, in_axes, {0}, size); }, AvalsOf(args), name));
      },
      ClosesOverNoTracer);
  Arrays outs = BindJit(*batched, args, name);
  return BatchResult{outs, std::vector<int64_t>(outs.size(), 0)};
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
}

JitTransformCacheStats GetJitTransformCacheStats() {
  return JitTransformCacheStats{JvpCache().stats(), PartialEvalCache().stats(), TransposeCache().stats(),
                                BatchCache().stats()};
}

}  // namespace jx::jit_internal
