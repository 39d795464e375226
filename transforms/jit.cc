#include "jx/transforms/jit.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <optional>
#include <ostream>

#include "jx/core/abstract_mesh_context.h"
#include "jx/core/apply_primitive.h"
#include "jx/core/config.h"
#include "jx/core/device.h"
#include "jx/core/interpreter.h"
#include "jx/core/sharding.h"
#include "jx/core/str_util.h"
#include "jx/transforms/jaxpr_cache.h"
#include "jx/transforms/jaxpr_util.h"
#include "jx/transforms/jit_rules.h"

namespace jx {
namespace {

const Primitive kJit = Primitive::Intern("jit");

// Lowers and compiles a traced program for `device` (nullptr: the default device).
std::shared_ptr<const Executable> Compile(const ClosedJaxpr& jaxpr, const std::string& name, std::vector<bool> donated,
                                          const Device* device) {
  const auto start = std::chrono::steady_clock::now();
  const Device& target = jit_internal::TargetDevice(device);
  LoweringOptions options;
  options.name = name;
  options.donated = std::move(donated);
  options.device_assignment = {&target};
  std::shared_ptr<const Executable> exe = target.client().Lower(jaxpr, options)->Compile();
  if (config::log_compiles()) {
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    std::fprintf(stderr, "jx: compiled jit(%s) (%zu equations) for %s in %.3f ms\n", name.c_str(),
                 jaxpr.jaxpr->eqns.size(), target.ToString().c_str(), ms);
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
    config::internal::SuspendEagerNanChecks eager_checks_off;  // this rerun reports the path itself
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
Arrays ExecuteChecked(const Executable& exe, const ClosedJaxpr& jaxpr, absl::Span<const Array> args,
                      const std::string& name) {
  Arrays outs = exe.Execute(args);
  if (!in_nan_rerun && config::debug_nans() && AnyNaN(outs)) ThrowFirstNaN(jaxpr, args, name);
  return outs;
}

std::string NameOf(const ParamMap& params) { return params.GetString("name"); }

// Called for every jit equation bound under a transformation: reads the jaxpr's avals in
// place rather than copying them into vectors.
Avals JitAbstractEval(InAvals in, const ParamMap& params) {
  const Jaxpr& j = *GetJaxpr(params, "jaxpr").jaxpr;
  bool ok = j.invars.size() == in.size();
  for (size_t i = 0; ok && i < in.size(); ++i) ok = SameShapeDType(j.aval(j.invars[i]), *in[i]);
  if (!ok) {
    std::vector<ShapedArray> got;
    for (const ShapedArray* a : in) got.push_back(*a);
    ThrowOpError<TypeError>("jit", "operands (", AvalsStr(got), ") do not match its jaxpr's inputs (",
                            AvalsStr(j.in_avals()), ")");
  }
  Avals outs;
  outs.reserve(j.outvars.size());
  for (const Atom& a : j.outvars) outs.push_back(j.aval(a));
  return outs;
}

// Executables of jit equations run eagerly (by a transformation's rule, or a jaxpr being
// evaluated), per jaxpr object and device: the transformation rules' caches hand out the same
// jaxpr objects call after call, so their programs are neither lowered nor compiled again.
JaxprCache<Executable>& Executables() {
  static auto* cache = new JaxprCache<Executable>("jit executables", 256);
  return *cache;
}

std::shared_ptr<const Executable> ExecutableFor(const ClosedJaxpr& j, const std::string& name, const Device* device) {
  const Device& target = jit_internal::TargetDevice(device);
  return Executables().Get(j.jaxpr, JaxprCacheKey().Add(target.id()), [&] {
    return Compile(j, name, std::vector<bool>(j.jaxpr->invars.size(), false), &target);
  });
}

std::string DeviceName(const Device* d) { return d == nullptr ? "the default device (uncommitted)" : d->ToString(); }

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
  if (!(now.trace_context == was.trace_context)) why.push_back("default_matmul_precision changed");
  if (now.device != was.device) {
    why.push_back(StrCat("device changed from ", DeviceName(was.device), " to ", DeviceName(now.device)));
  }
  if (why.empty()) return "the arguments' structure changed";
  std::string out;
  for (const std::string& w : why) StrAppend(&out, out.empty() ? "" : "; ", w);
  return out;
}

}  // namespace

std::ostream& operator<<(std::ostream& os, const ShapeDtypeStruct& s) {
  os << "ShapeDtypeStruct(shape=(";
  for (size_t i = 0; i < s.shape.size(); ++i) os << (i ? ", " : "") << s.shape[i] << (s.shape.size() == 1 ? "," : "");
  os << "), dtype=" << dtype_name(s.dtype);
  if (s.weak_type) os << ", weak_type=True";
  if (s.device != nullptr) os << ", device=" << s.device->ToString();
  return os << ")";
}

namespace jit_internal {

const tree::TreeDef& Signature::Def(size_t d) const {
  static const tree::TreeDef* const kLeaf = new tree::TreeDef(tree::TreeDef::Leaf());
  return defs[d] ? *defs[d] : *kLeaf;
}

bool Signature::Matches(const Signature& other, absl::Span<const Array> leaves) const {
  if (avals.size() != leaves.size() || device != other.device || defs != other.defs ||
      statics.size() != other.statics.size() || !(trace_context == other.trace_context)) {
    return false;
  }
  for (size_t i = 0; i < leaves.size(); ++i) {
    if (!(avals[i] == leaves[i].aval())) return false;
  }
  for (size_t i = 0; i < statics.size(); ++i) {
    if (!statics[i]->Equals(*other.statics[i])) return false;
  }
  return true;
}

JitState::JitState(std::string name, std::vector<int> static_positions, std::vector<int> donate)
    : name_(std::move(name)), what_(StrCat("jit(", name_, ")")), static_positions_(std::move(static_positions)), donate_(std::move(donate)) {
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
  std::vector<std::pair<Signature, std::shared_ptr<const Traced>>> cleared;  // freed unlocked
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (const uint64_t epoch = caches_internal::CacheEpoch(); epoch != entries_epoch_) {
      cleared.swap(entries_);
      entries_epoch_ = epoch;
    }
    for (const auto& [s, t] : entries_) {
      if (s.Matches(sig, leaves)) return t;
    }
    for (const Array& leaf : leaves) sig.avals.push_back(leaf.aval());
    if (!entries_.empty() && config::explain_cache_misses()) {
      std::fprintf(stderr, "jx: jit(%s) cache miss (%zu entries cached): %s\n", name_.c_str(), entries_.size(),
                   ExplainMiss(entries_.back().first, sig).c_str());
    }
  }
  const auto start = std::chrono::steady_clock::now();
  // Arguments sharded over a mesh put it in context while they trace (JAX's jit reads the mesh
  // from their types): explicit-sharding type rules then see its axis sizes.
  std::optional<ScopedContextMeshAxes> arguments_mesh;
  if (ContextMeshAxes() == nullptr) {
    if (std::optional<MeshAxisSizes> axes = MeshAxesOfArguments(leaves)) arguments_mesh.emplace(*std::move(axes));
  }
  std::shared_ptr<const Traced> traced = trace(sig);
  std::lock_guard<std::mutex> lock(mutex_);
  ++num_traces_;
  if (config::log_compiles()) {
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
  t->params = JitParams(t->jaxpr, name, t->donated);
  // Closed-over committed arrays pin the program to their device as arguments do.
  const Device* const call_device[] = {sig.device};
  t->device = CallDevice(t->consts, absl::MakeConstSpan(call_device, sig.device != nullptr ? 1 : 0),
                         StrCat("jit(", name, ")"));
  for (const Eqn& eqn : t->jaxpr.jaxpr->eqns) {
    const PrimitiveRules* rules = GlobalRegistry().Find(eqn.primitive);
    t->runs_on_mesh |= rules != nullptr && rules->runs_on_mesh;
  }
  return t;
}

const Device& TargetDevice(const Device* device) {
  if (device != nullptr) return *device;
  // Registered by jit's templates (RegisterBuiltinClients is defined a layer above).
  if (const Device* d = DefaultDevice()) return *d;
  throw InternalError("jit: no device is registered (the host CPU's client registers itself when jx::jit or "
                      "jx::devices() is first called from a program linking jx::jx)");
}

std::shared_ptr<const Lowering> LowerTraced(const Traced& t, const std::string& name) {
  const Device& target = TargetDevice(t.device);
  LoweringOptions options;
  options.name = name;
  options.donated = t.donated;
  options.device_assignment = {&target};
  return target.client().Lower(t.jaxpr, options);
}

const Device* CallDevice(absl::Span<const Array> leaves, absl::Span<const Device* const> abstract_devices,
                         std::string_view what) {
  const Device* device = CommittedDeviceOf(leaves, what);
  for (const Device* d : abstract_devices) {
    if (device != nullptr && d != device) {
      ThrowOpError<ValueError>(what, "received arguments on different devices: ", device->ToString(), " and ",
                               d->ToString(), " (a ShapeDtypeStruct's device); move them to one device with "
                               "jx::device_put");
    }
    device = d;
  }
  return device;
}

namespace {

// The sharding of a leaf sharded over several devices, else null.
const Sharding* ShardingOfShardedLeaf(const Array& x) {
  const ConcreteArray* c = x.defined() && x.is_concrete() ? x.impl()->ConcreteValue() : nullptr;
  return c != nullptr && c->is_sharded() ? c->sharded()->sharding.get() : nullptr;
}

}  // namespace

Arrays Run(const Traced& t, absl::Span<const Array> leaves, const std::string& name) {
  Arrays with_consts;
  if (!t.consts.empty()) with_consts = Cat({t.consts, leaves});
  const absl::Span<const Array> args = t.consts.empty() ? leaves : absl::MakeConstSpan(with_consts);
  bool any_sharded = false;
  for (const Array& x : leaves) any_sharded |= ShardingOfShardedLeaf(x) != nullptr;
  // A call on arrays sharded over several devices is one jit equation the eval interpreter
  // hands to the sharded-eager handler (core/apply_primitive.h), which runs it per device; so
  // is a program with a shard_map (it runs on the mesh's chips whatever its arguments).
  if (CurrentInterpreter() == nullptr && t.runs_on_mesh && !any_sharded) {
    return ApplyShardedPrimitive(kJit, args, t.params);
  }
  if (CurrentInterpreter() == nullptr && !any_sharded) {
    std::shared_ptr<const Executable> exe;
    {
      std::lock_guard<std::mutex> lock(t.compile_mutex);
      if (!t.executable) t.executable = Compile(t.jaxpr, name, t.donated, t.device);
      exe = t.executable;
    }
    return ExecuteChecked(*exe, t.jaxpr, args, name);
  }
  return Bind(kJit, args, t.params);
}

Arrays RunCompiled(const Traced& t, const Executable& exe, const Signature& sig, absl::Span<const Array> leaves,
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
    if (const Sharding* sharding = ShardingOfShardedLeaf(leaves[i])) {
      throw ValueError(StrCat("compiled jit(", name, ") was compiled for ", TargetDevice(t.device).ToString(),
                              " but ", labels[i], " is sharded with ", sharding->ToString(),
                              "; call the jit object itself, or jx::device_put the argument to that device"));
    }
    const Device* d = leaves[i].committed_device();
    if (d != nullptr && d != &TargetDevice(t.device)) {
      throw ValueError(StrCat("compiled jit(", name, ") was compiled for ", TargetDevice(t.device).ToString(),
                              " but ", labels[i], " is committed to ", d->ToString(),
                              "; lower and compile again for that device, or jx::device_put the argument"));
    }
  }
  return ExecuteChecked(exe, t.jaxpr, t.consts.empty() ? Arrays(leaves.begin(), leaves.end()) : Cat({t.consts, leaves}),
                        name);
}

JaxprCacheStats GetJitExecutableCacheStats() { return Executables().stats(); }

}  // namespace jit_internal

void RegisterJit(Registry& r) {
  PrimitiveRules& rules = r.Define(kJit);
  rules.abstract_eval = JitAbstractEval;
  rules.impl = [](absl::Span<const Array> in, const ParamMap& params, absl::Span<const ShapedArray>) {
    const ClosedJaxpr& j = GetJaxpr(params, "jaxpr");
    const std::string name = NameOf(params);
    // The eval interpreter ran the committed-device rules already: these arguments are on
    // one device (a chip's jit equations reach here only through its one-equation programs).
    const Device* device = CommittedDeviceOf(in, "jit");
    return ExecuteChecked(*ExecutableFor(j, name, device), j, in, name);
  };
  jit_internal::SetJitTransformRules(rules);
}

}  // namespace jx
