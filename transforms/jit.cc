#include "jx/transforms/jit.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <mutex>

#include "jx/core/interpreter.h"
#include "jx/core/str_util.h"
#include "jx/transforms/ad_util.h"
#include "jx/transforms/jaxpr_util.h"
#include "jx/transforms/jvp.h"
#include "jx/transforms/vmap.h"

namespace jx {
namespace {

const Primitive kJit = Primitive::Intern("jit");

bool EnvFlag(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr && v[0] != '\0' && v[0] != '0';
}

// Evaluates the jaxpr op by op: the program form without a compiler (JAX's disable_jit).
class EagerExecutable final : public JitExecutable {
 public:
  explicit EagerExecutable(ClosedJaxpr jaxpr) : jaxpr_(std::move(jaxpr)) {}
  Arrays Execute(absl::Span<const Array> args) const override { return Apply(jaxpr_, args); }
  std::string as_text() const override { return jaxpr_.ToString(); }
  CostAnalysis cost_analysis() const override { return {}; }
  MemoryAnalysis memory_analysis() const override { return {}; }

 private:
  ClosedJaxpr jaxpr_;
};

class EagerLowering final : public JitLowering {
 public:
  explicit EagerLowering(ClosedJaxpr jaxpr) : jaxpr_(std::move(jaxpr)) {}
  std::string as_text() const override { return jaxpr_.ToString(); }
  std::shared_ptr<const JitExecutable> Compile() const override { return std::make_shared<EagerExecutable>(jaxpr_); }

 private:
  ClosedJaxpr jaxpr_;
};

class EagerBackend final : public JitBackend {
 public:
  std::shared_ptr<const JitLowering> Lower(const ClosedJaxpr& jaxpr, const std::string&,
                                           const std::vector<bool>&) const override {
    return std::make_shared<EagerLowering>(jaxpr);
  }
};

std::mutex& BackendMutex() {
  static std::mutex m;
  return m;
}
std::shared_ptr<const JitBackend>& Backend() {
  static auto* backend = new std::shared_ptr<const JitBackend>();
  return *backend;
}

std::shared_ptr<const JitExecutable> Compile(const ClosedJaxpr& jaxpr, const std::string& name,
                                             const std::vector<bool>& donated) {
  const auto start = std::chrono::steady_clock::now();
  std::shared_ptr<const JitExecutable> exe = CurrentJitBackend()->Lower(jaxpr, name, donated)->Compile();
  if (EnvFlag("JX_LOG_COMPILES")) {
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    std::fprintf(stderr, "jx: compiled jit(%s) (%zu equations) in %.3f ms\n", name.c_str(), jaxpr.jaxpr->eqns.size(), ms);
  }
  return exe;
}

thread_local bool in_nan_rerun = false;

bool HasNaN(const Array& a) {
  if (!IsFloating(a.dtype()) || a.is_tracer()) return false;
  for (double v : a.to_vector<double>()) {
    if (std::isnan(v)) return true;
  }
  return false;
}

bool AnyNaN(absl::Span<const Array> xs) {
  for (const Array& x : xs) {
    if (HasNaN(x)) return true;
  }
  return false;
}

// JX_DEBUG_NANS: `outs` of the program `jaxpr` (run on `args`) hold a NaN; re-runs it
// equation by equation and throws FloatingPointError naming the first primitive that turned
// NaN-free inputs into a NaN (descending into nested jits).
[[noreturn]] void ThrowFirstNaN(const ClosedJaxpr& jaxpr, absl::Span<const Array> args, const std::string& name) {
  if (AnyNaN(args)) {
    throw FloatingPointError(StrCat("invalid value (nan) passed into jit(", name, "): an argument already holds a NaN"));
  }
  std::string where = StrCat("jit(", name, ")");
  // Nested jits run unchecked during the rerun; the observer descends into them instead,
  // so the message carries the whole path.
  struct Rerunning {
    Rerunning() { in_nan_rerun = true; }
    ~Rerunning() { in_nan_rerun = false; }
  } rerunning;
  EqnObserver observer;
  observer = [&](const Eqn& e, size_t k, absl::Span<const Array> in, absl::Span<const Array> out) {
    if (!AnyNaN(out) || AnyNaN(in)) return;
    if (e.primitive == kJit) {
      where = StrCat(where, "/jit(", e.params.GetString("name"), ")");
      const ClosedJaxpr& inner = GetJaxpr(e.params, "jaxpr");
      EvalJaxpr(*inner.jaxpr, inner.consts, in, observer);
    }
    std::string avals;
    for (const Array& x : in) StrAppend(&avals, avals.empty() ? "" : ", ", x.aval().str());
    throw FloatingPointError(StrCat("invalid value (nan) encountered in ", e.primitive.name(), " (equation ", k,
                                    " of ", where, ", operands ", avals, ")"));
  };
  EvalJaxpr(*jaxpr.jaxpr, jaxpr.consts, args, observer);
  throw FloatingPointError(StrCat("invalid value (nan) in the output of ", where,
                                  ", but the equation-by-equation rerun produced none"));
}

// Runs a program and, under JX_DEBUG_NANS=1, checks its outputs.
Arrays ExecuteChecked(const JitExecutable& exe, const ClosedJaxpr& jaxpr, absl::Span<const Array> args,
                      const std::string& name) {
  Arrays outs = exe.Execute(args);
  if (!in_nan_rerun && EnvFlag("JX_DEBUG_NANS") && AnyNaN(outs)) ThrowFirstNaN(jaxpr, args, name);
  return outs;
}

ParamMap JitParams(const ClosedJaxpr& jaxpr, const std::string& name, const std::vector<bool>& donated) {
  std::vector<int64_t> donated_ints(donated.begin(), donated.end());
  return ParamMap{{"donated_invars", donated_ints}, {"jaxpr", JaxprParamOf(jaxpr)}, {"name", name}};
}

// Binds a jit equation over a hoisted jaxpr (its consts lead the operands).
Arrays BindJit(const Hoisted& f, absl::Span<const Array> args, const std::string& name) {
  std::vector<bool> donated(f.consts.size() + args.size(), false);
  return Bind(kJit, Cat({f.consts, args}), JitParams(f.jaxpr, name, donated));
}

std::string NameOf(const ParamMap& params) { return params.GetString("name"); }

Avals JitAbstractEval(InAvals in, const ParamMap& params) {
  const ClosedJaxpr& j = GetJaxpr(params, "jaxpr");
  const std::vector<ShapedArray> want = j.jaxpr->in_avals();
  bool ok = want.size() == in.size();
  for (size_t i = 0; ok && i < in.size(); ++i) ok = SameShapeDType(want[i], *in[i]);
  if (!ok) {
    std::vector<ShapedArray> got;
    for (const ShapedArray* a : in) got.push_back(*a);
    ThrowOpError<TypeError>("jit", "operands (", AvalsStr(got), ") do not match its jaxpr's inputs (", AvalsStr(want), ")");
  }
  const std::vector<ShapedArray> outs = j.jaxpr->out_avals();
  return Avals(outs.begin(), outs.end());
}

// Executables of jit equations bound eagerly (by a transformation's rule, or a jaxpr being
// evaluated), cached per jaxpr object.
std::shared_ptr<const JitExecutable> ExecutableFor(const ClosedJaxpr& j, const std::string& name) {
  static std::mutex m;
  static auto* cache = new std::vector<std::pair<std::weak_ptr<const Jaxpr>, std::shared_ptr<const JitExecutable>>>;
  std::lock_guard<std::mutex> lock(m);
  for (auto it = cache->begin(); it != cache->end();) {
    std::shared_ptr<const Jaxpr> alive = it->first.lock();
    if (!alive) {
      it = cache->erase(it);
    } else if (alive.get() == j.jaxpr.get()) {
      return it->second;
    } else {
      ++it;
    }
  }
  if (cache->size() > 256) cache->erase(cache->begin());
  cache->emplace_back(j.jaxpr, Compile(j, name, std::vector<bool>(j.jaxpr->invars.size(), false)));
  return cache->back().second;
}

// Forward mode: one jit over the jvp'd jaxpr returning (primals, tangents); under
// linearize the partial_eval rule splits it into a known and a staged jit.
JvpResult JitJvp(absl::Span<const Array> primals, absl::Span<const Array> tangents, const ParamMap& params) {
  const ClosedJaxpr& j = GetJaxpr(params, "jaxpr");
  Arrays nonzero;
  for (const Array& t : tangents) {
    if (t.defined()) nonzero.push_back(t);
  }
  const std::vector<ShapedArray> out_avals = j.jaxpr->out_avals();
  std::vector<size_t> float_outs;
  for (size_t k = 0; k < out_avals.size(); ++k) {
    if (HasTangentSpace(out_avals[k].dtype)) float_outs.push_back(k);
  }
  const std::string name = NameOf(params);
  Hoisted jvp_fn = TraceHoisted(
      [&](absl::Span<const Array> a) {
        Arrays ts(primals.size());
        for (size_t i = 0, n = 0; i < primals.size(); ++i) {
          if (tangents[i].defined()) ts[i] = a[primals.size() + n++];
        }
        auto [po, to] = JvpCall(AsFn(j), a.subspan(0, primals.size()), ts);
        Arrays out = po;
        for (size_t k : float_outs) out.push_back(to[k].defined() ? to[k] : Zeros(out_avals[k]));
        return out;
      },
      AvalsOf(Cat({primals, nonzero})), StrCat("jvp(", name, ")"));
  Arrays outs = BindJit(jvp_fn, Cat({primals, nonzero}), StrCat("jvp(", name, ")"));
  JvpResult r;
  r.primals_out.assign(outs.begin(), outs.begin() + static_cast<ptrdiff_t>(out_avals.size()));
  r.tangents_out.resize(out_avals.size());
  for (size_t f = 0; f < float_outs.size(); ++f) r.tangents_out[float_outs[f]] = outs[out_avals.size() + f];
  return r;
}

// Partial evaluation (JAX's pjit rule): the known part runs now as one jit returning the
// known outputs and residuals; the unknown part is staged as a second jit over them.
std::optional<PartialEvalSplit> JitPartialEval(absl::Span<const Array> in, const std::vector<bool>& unknown,
                                               const ParamMap& params) {
  const ClosedJaxpr& j = GetJaxpr(params, "jaxpr");
  const std::string name = NameOf(params);
  PartialEvalResult pe = PartialEvalJaxpr(j, unknown, {});
  Arrays known_in, unknown_in;
  for (size_t i = 0; i < in.size(); ++i) (unknown[i] ? unknown_in : known_in).push_back(in[i]);
  const Arrays known_outs = BindJit(pe.known, known_in, name);
  const size_t n_res = pe.residual_avals.size(), n_known = known_outs.size() - n_res;
  PartialEvalSplit split;
  split.staged = kJit;
  split.staged_inputs = Cat({absl::MakeConstSpan(known_outs).subspan(n_known), unknown_in});
  split.staged_params = JitParams(pe.unknown, name, std::vector<bool>(split.staged_inputs.size(), false));
  for (size_t k = 0, n = 0; k < pe.out_unknown.size(); ++k) {
    split.known_outs.push_back(pe.out_unknown[k] ? Array() : known_outs[n++]);
  }
  return split;
}

// Reverse mode: one jit running the backward pass of the jaxpr.
Arrays JitTranspose(absl::Span<const Array> cts_out, absl::Span<const TransposeArg> args, const ParamMap& params) {
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
  const std::string name = StrCat("transpose(", NameOf(params), ")");
  Hoisted backward = TraceHoisted(
      [&](absl::Span<const Array> a) { return TransposeJaxpr(j, linear, a.subspan(0, known.size()), a.subspan(known.size())); },
      AvalsOf(Cat({known, cts})), name);
  Arrays outs = BindJit(backward, Cat({known, cts}), name);
  Arrays result(args.size());
  for (size_t i = 0, n = 0; i < args.size(); ++i) {
    if (linear[i]) result[i] = outs[n++];
  }
  return result;
}

BatchResult JitBatch(absl::Span<const Array> args, absl::Span<const int64_t> dims, int64_t size, const ParamMap& params) {
  std::vector<int64_t> axes;
  Arrays moved;
  for (size_t i = 0; i < args.size(); ++i) {
    moved.push_back(dims[i] == kNotMapped ? args[i] : MoveAxis(args[i], dims[i], 0));
    axes.push_back(dims[i] == kNotMapped ? kNotMapped : 0);
  }
  const ClosedJaxpr& j = GetJaxpr(params, "jaxpr");
  const std::string name = StrCat("vmap(", NameOf(params), ")");
  Hoisted batched = TraceHoisted([&](absl::Span<const Array> a) { return VmapCall(AsFn(j), a, axes, {0}, size); },
                                 AvalsOf(moved), name);
  Arrays outs = BindJit(batched, moved, name);
  return BatchResult{outs, std::vector<int64_t>(outs.size(), 0)};
}

bool HasTracer(absl::Span<const Array> xs) {
  for (const Array& x : xs) {
    if (x.is_tracer()) return true;
  }
  return false;
}

std::string TreeChange(const tree::TreeDef& was, const tree::TreeDef& now) {
  return StrCat("tree structure changed from ", was.ToString(), " to ", now.ToString());
}

// Why `now` missed, against the most similar cached signature.
std::string ExplainMiss(const jit_internal::Signature& was, const jit_internal::Signature& now) {
  std::vector<std::string> why;
  for (size_t s = 0; s < now.statics.size() && s < was.statics.size(); ++s) {
    if (!now.statics[s]->Equals(*was.statics[s])) {
      why.push_back(StrCat("static argument ", now.static_positions[s], " changed from ", was.statics[s]->ToString(),
                           " to ", now.statics[s]->ToString()));
    }
  }
  for (size_t d = 0; d < now.defs.size() && d < was.defs.size(); ++d) {
    if (!(now.Def(d) == was.Def(d))) {
      why.push_back(StrCat("argument ", now.dynamic_positions[d], ": ", TreeChange(was.Def(d), now.Def(d))));
    }
  }
  if (now.avals.size() == was.avals.size()) {
    const std::vector<std::string> labels = jit_internal::LeafLabels(now);
    for (size_t i = 0; i < now.avals.size(); ++i) {
      const ShapedArray &a = was.avals[i], &b = now.avals[i];
      if (a == b) continue;
      std::string what = a.dtype != b.dtype ? "dtype" : a.shape != b.shape ? "shape" : "weak type";
      why.push_back(StrCat(labels[i], " changed ", what, " from ", a.str(), a.weak_type ? " (weak)" : "", " to ",
                           b.str(), b.weak_type ? " (weak)" : ""));
    }
  }
  if (why.empty()) return "the arguments' structure changed";
  std::string out;
  for (const std::string& w : why) StrAppend(&out, out.empty() ? "" : "; ", w);
  return out;
}

}  // namespace

void SetJitBackend(std::shared_ptr<const JitBackend> backend) {
  std::lock_guard<std::mutex> lock(BackendMutex());
  Backend() = std::move(backend);
}

std::shared_ptr<const JitBackend> CurrentJitBackend() {
  static const auto* eager = new std::shared_ptr<const JitBackend>(std::make_shared<EagerBackend>());
  std::lock_guard<std::mutex> lock(BackendMutex());
  return Backend() ? Backend() : *eager;
}

namespace jit_internal {

const tree::TreeDef& Signature::Def(size_t d) const {
  static const tree::TreeDef* const kLeaf = new tree::TreeDef(tree::TreeDef::Leaf());
  return defs[d] ? *defs[d] : *kLeaf;
}

bool Signature::Matches(const Signature& other, absl::Span<const Array> leaves) const {
  if (avals.size() != leaves.size() || defs != other.defs || statics.size() != other.statics.size()) return false;
  for (size_t i = 0; i < leaves.size(); ++i) {
    if (!(avals[i] == leaves[i].aval())) return false;
  }
  for (size_t i = 0; i < statics.size(); ++i) {
    if (!statics[i]->Equals(*other.statics[i])) return false;
  }
  return true;
}

JitState::JitState(std::string name, std::vector<int> static_positions, std::vector<int> donate)
    : name_(std::move(name)), static_positions_(std::move(static_positions)), donate_(std::move(donate)) {
  for (int p : static_positions_) {
    if (p < 0) throw ValueError(StrCat("jit static_argnums must be non-negative, got ", p));
  }
  for (int d : donate_) {
    if (d < 0) throw ValueError(StrCat("jit donate_argnums must be non-negative, got ", d));
    if (IsStatic(static_cast<size_t>(d))) throw ValueError(StrCat("jit argument ", d, " cannot be both static and donated"));
  }
}

bool JitState::IsStatic(size_t arg) const {
  for (int p : static_positions_) {
    if (static_cast<size_t>(p) == arg) return true;
  }
  return false;
}

bool JitState::IsDonated(size_t arg) const {
  for (int p : donate_) {
    if (static_cast<size_t>(p) == arg) return true;
  }
  return false;
}

std::shared_ptr<const Traced> JitState::Lookup(Signature& sig, absl::Span<const Array> leaves,
                                                const std::function<std::shared_ptr<Traced>(const Signature&)>& trace) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (const auto& [s, t] : entries_) {
      if (s.Matches(sig, leaves)) return t;
    }
    for (const Array& leaf : leaves) sig.avals.push_back(leaf.aval());
    if (!entries_.empty() && EnvFlag("JX_EXPLAIN_CACHE_MISSES")) {
      std::fprintf(stderr, "jx: jit(%s) cache miss (%zu entries cached): %s\n", name_.c_str(), entries_.size(),
                   ExplainMiss(entries_.back().first, sig).c_str());
    }
  }
  const auto start = std::chrono::steady_clock::now();
  std::shared_ptr<const Traced> traced = trace(sig);
  std::lock_guard<std::mutex> lock(mutex_);
  ++num_traces_;
  if (EnvFlag("JX_LOG_COMPILES")) {
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    std::string avals;
    for (const ShapedArray& a : sig.avals) StrAppend(&avals, avals.empty() ? "" : ", ", a.str());
    std::fprintf(stderr, "jx: traced jit(%s) for (%s) in %.3f ms\n", name_.c_str(), avals.c_str(), ms);
  }
  // A jaxpr that closed over another transformation's tracers is only valid inside it.
  if (!HasTracer(traced->consts)) entries_.emplace_back(sig, traced);
  return traced;
}

void JitState::CheckArgnums(size_t num_args) const {
  auto check = [num_args](const std::vector<int>& positions, std::string_view what) {
    for (int p : positions) {
      if (static_cast<size_t>(p) >= num_args) {
        throw ValueError(StrCat("jit ", what, " names argument ", p, " but the function was called with ", num_args,
                                " arguments"));
      }
    }
  };
  check(static_positions_, "static_argnums");
  check(donate_, "donate_argnums");
}

std::vector<std::string> LeafLabels(const Signature& sig) {
  std::vector<std::string> labels;
  for (size_t d = 0; d < sig.defs.size(); ++d) {
    for (size_t j = 0; j < sig.Def(d).num_leaves(); ++j) {
      const std::string path = sig.Def(d).KeyPath(j);
      const int arg = sig.dynamic_positions[d];
      labels.push_back(path.empty() ? StrCat("argument ", arg) : StrCat("argument ", arg, " at ", path));
    }
  }
  return labels;
}

std::shared_ptr<Traced> TraceJit(const std::function<Arrays(absl::Span<const Array>)>& fn, const Signature& sig,
                                 const std::string& name, std::vector<bool> donated, tree::TreeDef* out_def) {
  Hoisted h = HoistConsts(TraceToJaxpr(fn, sig.avals, StrCat("jit(", name, ")"), LeafLabels(sig)));
  auto t = std::make_shared<Traced>();
  t->jaxpr = std::move(h.jaxpr);
  t->consts = std::move(h.consts);
  t->out_def = *out_def;
  t->donated.assign(t->consts.size(), false);
  t->donated.insert(t->donated.end(), donated.begin(), donated.end());
  return t;
}

Arrays Run(const Traced& t, absl::Span<const Array> leaves, const std::string& name) {
  Arrays with_consts;
  if (!t.consts.empty()) with_consts = Cat({t.consts, leaves});
  const absl::Span<const Array> args = t.consts.empty() ? leaves : absl::MakeConstSpan(with_consts);
  if (CurrentInterpreter() == nullptr) {
    std::shared_ptr<const JitExecutable> exe;
    {
      std::lock_guard<std::mutex> lock(t.compile_mutex);
      if (!t.executable) t.executable = Compile(t.jaxpr, name, t.donated);
      exe = t.executable;
    }
    return ExecuteChecked(*exe, t.jaxpr, args, name);
  }
  return Bind(kJit, args, JitParams(t.jaxpr, name, t.donated));
}

Arrays RunCompiled(const Traced& t, const JitExecutable& exe, const Signature& sig, absl::Span<const Array> leaves,
                   const std::string& name) {
  const std::vector<std::string> labels = LeafLabels(sig);
  if (leaves.size() != sig.avals.size()) {
    throw TypeError(StrCat("compiled jit(", name, ") takes ", sig.avals.size(), " array leaves (static arguments are ",
                           "fixed at lower time and not passed again), got ", leaves.size()));
  }
  for (size_t i = 0; i < leaves.size(); ++i) {
    const ShapedArray got = leaves[i].aval();
    if (!SameShapeDType(got, sig.avals[i])) {
      throw TypeError(StrCat("compiled jit(", name, ") was lowered for ", labels[i], " of type ", sig.avals[i].str(),
                             " but was called with ", got.str(), "; lower and compile again for new shapes"));
    }
    if (leaves[i].is_tracer()) {
      throw TypeError(StrCat("compiled jit(", name, ") called with a traced value for ", labels[i],
                             "; a compiled program runs concrete arrays only (call the jit object under transformations)"));
    }
  }
  return ExecuteChecked(exe, t.jaxpr, t.consts.empty() ? Arrays(leaves.begin(), leaves.end()) : Cat({t.consts, leaves}),
                        name);
}

}  // namespace jit_internal

void RegisterJit(Registry& r) {
  PrimitiveRules& rules = r.Define(kJit);
  rules.abstract_eval = JitAbstractEval;
  rules.impl = [](absl::Span<const Array> in, const ParamMap& params, absl::Span<const ShapedArray>) {
    const ClosedJaxpr& j = GetJaxpr(params, "jaxpr");
    return ExecuteChecked(*ExecutableFor(j, NameOf(params)), j, in, NameOf(params));
  };
  rules.jvp = JitJvp;
  rules.transpose = JitTranspose;
  rules.batch = JitBatch;
  rules.partial_eval = JitPartialEval;
}

}  // namespace jx
