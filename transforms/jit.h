// jit: trace a function once per signature into a jaxpr and run it as one program.
//
//   auto step = jx::jit(loss, jx::name{"train_step"});      // one trace per signature
//   auto scaled = jx::jit(f, jx::static_argnums{1});           // argument 1 is a C++ value
//   Array y = step(params, x);
//
// Options, in any order: static_argnums, donate_argnums, name (the program's name: HLO
// module "jit_train_step", dumps, logs and errors say jit(train_step); default "<lambda>").
//
// Each call runs on its arguments' device: the device of its committed arguments (all the
// same, else a ValueError naming both devices), else the default device (the host CPU); the
// program is lowered through that device's Client and the results are on that device
// (committed when the arguments were). The cache belongs to the jit object (copies share it)
// and is keyed on the arguments' tree structures, shapes, dtypes and weak types, the static
// arguments' values, the device and the thread's default_matmul_precision; a hit does no
// tracing. Under another transformation
// (grad, vmap, make_jaxpr, an outer jit) a call binds one `jit` equation carrying the traced
// jaxpr, so transformations of jitted code stay one program (JAX's pjit). Those
// transformations are cached too (jit_rules.h): the second call of grad(jit(f)) or
// vmap(jit(f)) with the same avals traces, transforms, lowers and compiles nothing. Values
// the function closes over are constants of its jaxpr, as in JAX: a jit object whose
// function closes over a variable sees the value it had when that signature was traced
// (a closed-over committed array pins the program to its device, as an argument would).
//
// Ahead of time: jit(f).lower(args...) traces and lowers without running (a
// ShapeDtypeStruct may stand for an Array argument, and its device picks the target like a
// committed array's), .compile() builds the executable:
//
//   auto lowered = jx::jit(f).lower(jx::ShapeDtypeStruct{{128, 784}, jx::float32, chip}, w);
//   std::cout << lowered.as_text();                 // HLO as lowered
//   auto compiled = lowered.compile();              // .as_text(): optimized HLO
//   compiled.cost_analysis().flops; compiled.memory_analysis().temp_size_in_bytes;
//   Array y = compiled(x, w);                       // dynamic arguments only
//
// JX_LOG_COMPILES=1 prints one line per trace and compile with its time;
// JX_EXPLAIN_CACHE_MISSES=1 prints why a call missed the cache (which argument's shape,
// dtype, structure, static value or device changed).
//
// eval_shape(f)(args...) (eval_shape.h) traces without lowering and returns ShapeDtypeStructs.
#pragma once

#include <functional>
#include <initializer_list>
#include <iosfwd>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "jx/core/caches.h"
#include "jx/core/device.h"
#include "jx/core/errors.h"
#include "jx/core/executable.h"
#include "jx/core/jaxpr.h"
#include "jx/core/pytree.h"
#include "jx/core/registry.h"
#include "jx/core/trace_context.h"
#include "jx/transforms/staging.h"

namespace jx {

struct static_argnums {
  std::vector<int> indices;
  static_argnums(std::initializer_list<int> list) : indices(list) {}
};
struct donate_argnums {
  std::vector<int> indices;
  donate_argnums(std::initializer_list<int> list) : indices(list) {}
};

// The program's name: jit(f, jx::name{"train_step"}) (JAX takes it from f.__name__).
struct name {
  std::string value;
};

// An abstract array (JAX's jax.ShapeDtypeStruct): a shape and dtype, nothing allocated. As a
// jit(f).lower(...) argument, a device places it like a committed array (JAX's sharding=);
// nullptr leaves it uncommitted. A sharding (a NamedSharding over a mesh of simulated chips)
// makes it a sharded argument of jit with shardings: lowering and planning a pod step from
// shapes alone (`.sharding = x.sharding()`, or std::make_shared<jx::NamedSharding>(s)).
// eval_shape returns them.
struct ShapeDtypeStruct {
  Shape shape;
  DType dtype = float32;
  const Device* device = nullptr;
  bool weak_type = false;
  std::shared_ptr<const Sharding> sharding = nullptr;
  friend bool operator==(const ShapeDtypeStruct&, const ShapeDtypeStruct&) = default;
};
std::ostream& operator<<(std::ostream& os, const ShapeDtypeStruct& s);  // ShapeDtypeStruct(shape=(2, 3), dtype=float32)

namespace jit_internal {

using StaticPtr = std::shared_ptr<const tree_internal::StaticValue>;

// What a call's cache entry is keyed on (besides the jit object).
struct Signature {
  // Per dynamic argument; nullopt for a plain Array (a single leaf), which the call path
  // then flattens without allocating.
  std::vector<std::optional<tree::TreeDef>> defs;
  std::vector<ShapedArray> avals;    // per leaf, weak types included (filled on a miss)
  std::vector<StaticPtr> statics;    // per static argument
  std::vector<int> static_positions;
  // Where the call runs: its committed arguments' device (or a ShapeDtypeStruct's), nullptr
  // for the default device.
  const Device* device = nullptr;
  std::vector<int> dynamic_positions;  // per dynamic argument (not part of the key)
  TraceContext trace_context = CurrentTraceContext();  // as of the call (default_matmul_precision)
  const tree::TreeDef& Def(size_t d) const;
  // Same key as `other` once its avals are those of `leaves` (the hit path copies no aval).
  bool Matches(const Signature& other, absl::Span<const Array> leaves) const;
};

// A traced signature: its jaxpr with the closed-over constants hoisted into leading inputs,
// the output structure, and the executable (compiled on first eager use).
struct Traced {
  ClosedJaxpr jaxpr;          // consts empty; inputs are (consts..., leaves...)
  std::vector<Array> consts;
  tree::TreeDef out_def;
  std::vector<bool> donated;  // per leaf
  ParamMap params;            // of the jit equation a call under a transformation binds
  // The signature's device, or its closed-over committed arrays' (nullptr: the default device).
  const Device* device = nullptr;
  // The program has an equation that runs across a mesh (a shard_map): a call runs it as an
  // SPMD program on the mesh's chips (through the sharded-eager handler), not on `device`.
  bool runs_on_mesh = false;
  // Compiled for `device` on first eager use; guarded because copies of a jit object share
  // entries across threads.
  mutable std::mutex compile_mutex;
  mutable std::shared_ptr<const Executable> executable;
};

// The device a call of the program runs on: `device`, or the default device (the host CPU).
const Device& TargetDevice(const Device* device);
// Lowers a traced program for its device through that device's client.
std::shared_ptr<const Lowering> LowerTraced(const Traced& t, const std::string& name);

// The cache of one jit object.
class JitState {
 public:
  JitState(std::string name, std::vector<int> static_positions, std::vector<int> donate);
  const std::string& name() const { return name_; }
  const std::string& what() const { return what_; }  // "jit(name)", for messages
  bool IsStatic(size_t arg) const;
  bool IsDonated(size_t arg) const;
  // Throws ValueError if static_argnums or donate_argnums name an argument past num_args.
  void CheckArgnums(size_t num_args) const;
  size_t num_traces() const { return num_traces_; }
  // The entry for sig, tracing it with `trace` on a miss (and logging/explaining per the
  // environment). An entry whose jaxpr closes over another transformation's tracers is
  // used for this call only: those tracers are gone by the next one.
  // sig's avals are filled from leaves on a miss.
  std::shared_ptr<const Traced> Lookup(Signature& sig, absl::Span<const Array> leaves,
                                       const std::function<std::shared_ptr<Traced>(const Signature&)>& trace);

 private:
  std::string name_, what_;
  std::vector<int> static_positions_, donate_;
  std::mutex mutex_;  // guards entries_ and num_traces_ (tracing runs outside it)
  std::vector<std::pair<Signature, std::shared_ptr<const Traced>>> entries_;  // few per object
  uint64_t entries_epoch_ = caches_internal::CacheEpoch();  // entries older than a clear_caches() are dropped
  size_t num_traces_ = 0;
};

// Runs a traced program on the leaves: eagerly through its executable, or as one `jit`
// equation under the current transformation.
Arrays Run(const Traced& t, absl::Span<const Array> leaves, const std::string& name);

// Names of the leaves for errors: "argument 0 at .w".
std::vector<std::string> LeafLabels(const Signature& sig);
// Traces fn into a Traced (hoisting consts).
std::shared_ptr<Traced> TraceJit(const std::function<Arrays(absl::Span<const Array>)>& fn, const Signature& sig,
                const std::string& name, std::vector<bool> donated, tree::TreeDef* out_def);


template <typename T>
StaticPtr MakeStatic(const T& value, size_t arg) {
  if constexpr (std::equality_comparable<T> && !std::is_same_v<T, Array> && std::is_copy_constructible_v<T>) {
    return std::make_shared<tree_internal::StaticValueOf<T>>(value);
  } else {
    throw TypeError(StrCat("jit static argument ", arg,
                           " must be a copyable C++ value with operator== (static arguments are cache keys)",
                           std::is_same_v<T, Array> ? "; an Array is a traced argument, not a static one" : ""));
  }
}

}  // namespace jit_internal

namespace jit_internal {

// The device a call runs on (Signature::device): its committed leaves' and abstract
// arguments' device; a ValueError naming `what` and both devices when they differ.
const Device* CallDevice(absl::Span<const Array> leaves, absl::Span<const Device* const> abstract_devices,
                         std::string_view what);

// lower() takes a ShapeDtypeStruct where the function takes an Array.
template <typename A>
using TracedArg = std::conditional_t<std::is_same_v<A, ShapeDtypeStruct>, Array, A>;

// Runs a compiled program on a call's leaves after checking them against what it was
// compiled for (Compiled::operator()).
Arrays RunCompiled(const Traced& t, const Executable& exe, const Signature& sig, absl::Span<const Array> leaves,
                   const std::string& name);

}  // namespace jit_internal

// jit(f).lower(args...).compile(): a program compiled ahead of time for one signature.
// Called with the dynamic arguments only (static ones were fixed by lower()), which must
// have the shapes and dtypes it was lowered for.
template <typename R>
class Compiled {
 public:
  Compiled(std::shared_ptr<const jit_internal::Traced> traced, std::shared_ptr<const Executable> exe,
           jit_internal::Signature sig, std::string name)
      : traced_(std::move(traced)), exe_(std::move(exe)), sig_(std::move(sig)), name_(std::move(name)) {}
  std::string as_text() const { return exe_->as_text(); }
  CostAnalysis cost_analysis() const { return exe_->cost_analysis(); }
  MemoryAnalysis memory_analysis() const { return exe_->memory_analysis(); }

  template <typename... Args>
  R operator()(const Args&... args) const {
    std::vector<Array> leaves;
    (
        [&] {
          if constexpr (std::is_same_v<Args, Array>) {
            leaves.push_back(args);
          } else {
            static_assert(tree::IsPytree<Args>, "compiled programs take pytrees of Arrays");
            auto [l, def] = tree::flatten(args);
            leaves.insert(leaves.end(), l.begin(), l.end());
          }
        }(),
        ...);
    return tree::unflatten<R>(traced_->out_def, jit_internal::RunCompiled(*traced_, *exe_, sig_, leaves, name_));
  }

 private:
  std::shared_ptr<const jit_internal::Traced> traced_;
  std::shared_ptr<const Executable> exe_;
  jit_internal::Signature sig_;
  std::string name_;
};

// jit(f).lower(args...): the traced program lowered for its arguments' device.
template <typename R>
class Lowered {
 public:
  Lowered(std::shared_ptr<const jit_internal::Traced> traced, std::shared_ptr<const Lowering> lowering,
          jit_internal::Signature sig, std::string name)
      : traced_(std::move(traced)), lowering_(std::move(lowering)), sig_(std::move(sig)), name_(std::move(name)) {}
  std::string as_text() const { return lowering_->as_text(); }
  Compiled<R> compile() const { return Compiled<R>(traced_, lowering_->Compile(), sig_, name_); }
  // The traced program (jaxpr with closed-over constants as leading inputs).
  const ClosedJaxpr& jaxpr() const { return traced_->jaxpr; }

 private:
  std::shared_ptr<const jit_internal::Traced> traced_;
  std::shared_ptr<const Lowering> lowering_;
  jit_internal::Signature sig_;
  std::string name_;
};

// The callable jx::jit returns.
template <typename F>
class Jitted {
 public:
  Jitted(F f, std::shared_ptr<jit_internal::JitState> state) : f_(std::move(f)), state_(std::move(state)) {}

  template <typename... Args>
  auto operator()(const Args&... args) const {
    using R = std::decay_t<std::invoke_result_t<F&, const Args&...>>;
    RegisterBuiltinClients();
    std::vector<Array> leaves;
    jit_internal::Signature sig = MakeSignature(leaves, /*fill_avals=*/false, args...);
    auto trace = [&](const jit_internal::Signature& s) { return Trace(s, args...); };
    std::shared_ptr<const jit_internal::Traced> t = state_->Lookup(sig, leaves, trace);
    const Arrays outs = jit_internal::Run(*t, leaves, state_->name());
    return tree::unflatten<R>(t->out_def, outs);
  }

  // Traces and lowers for these arguments (Arrays, pytrees of Arrays, or ShapeDtypeStructs
  // standing for Arrays; static arguments by value) without running anything.
  template <typename... Args>
  auto lower(const Args&... args) const {
    using R = std::decay_t<std::invoke_result_t<F&, const jit_internal::TracedArg<Args>&...>>;
    RegisterBuiltinClients();
    std::vector<Array> leaves;
    jit_internal::Signature sig = MakeSignature(leaves, /*fill_avals=*/true, args...);
    std::shared_ptr<const jit_internal::Traced> t = Trace(sig, args...);
    return Lowered<R>(t, jit_internal::LowerTraced(*t, state_->name()), std::move(sig), state_->name());
  }

  // Traces for these arguments (as lower() takes them) without lowering: the traced program,
  // whose jaxpr's outputs are the function's, and the output structure.
  template <typename... Args>
  std::shared_ptr<const jit_internal::Traced> trace(const Args&... args) const {
    std::vector<Array> leaves;
    jit_internal::Signature sig = MakeSignature(leaves, /*fill_avals=*/true, args...);
    return Trace(sig, args...);
  }

  // How many times this jit object has traced (cache misses), for tests and diagnostics.
  size_t num_traces() const { return state_->num_traces(); }

 private:
  // The call's signature, its Array leaves appended to `leaves`. The call path leaves the
  // avals for a cache miss to fill; lower() fills them here, a ShapeDtypeStruct giving its
  // aval and no leaf.
  template <typename... Args>
  jit_internal::Signature MakeSignature(std::vector<Array>& leaves, bool fill_avals, const Args&... args) const {
    state_->CheckArgnums(sizeof...(Args));
    jit_internal::Signature sig;
    std::vector<const Device*> abstract_devices;  // of ShapeDtypeStruct arguments
    sig.defs.reserve(sizeof...(Args));
    sig.dynamic_positions.reserve(sizeof...(Args));
    leaves.reserve(sizeof...(Args));
    size_t i = 0;
    (
        [&] {
          if (state_->IsStatic(i)) {
            sig.statics.push_back(jit_internal::MakeStatic(args, i));
            sig.static_positions.push_back(static_cast<int>(i));
          } else if constexpr (std::is_same_v<Args, Array>) {
            if (fill_avals) sig.avals.push_back(args.aval());
            leaves.push_back(args);
            sig.defs.emplace_back();
            sig.dynamic_positions.push_back(static_cast<int>(i));
          } else if constexpr (std::is_same_v<Args, ShapeDtypeStruct>) {
            sig.avals.push_back(ShapedArray{args.shape, args.dtype, args.weak_type});
            if (args.device != nullptr) abstract_devices.push_back(args.device);
            sig.defs.emplace_back();
            sig.dynamic_positions.push_back(static_cast<int>(i));
          } else if constexpr (tree::IsPytree<Args>) {
            auto [l, def] = tree::flatten(args);
            for (Array& leaf : l) {
              if (fill_avals) sig.avals.push_back(leaf.aval());
              leaves.push_back(std::move(leaf));
            }
            sig.defs.emplace_back(std::move(def));
            sig.dynamic_positions.push_back(static_cast<int>(i));
          } else {
            throw TypeError(StrCat("jit argument ", i, " is not a pytree of Arrays; pass it with jx::static_argnums{", i,
                                   "} to make it a static (compile-time) value"));
          }
          ++i;
        }(),
        ...);
    sig.device = jit_internal::CallDevice(leaves, abstract_devices, state_->what());
    return sig;
  }

  // Traces f for a signature whose avals are filled in.
  template <typename... Args>
  std::shared_ptr<jit_internal::Traced> Trace(const jit_internal::Signature& s, const Args&... args) const {
    std::vector<bool> donated;
    for (size_t a = 0, d = 0; a < sizeof...(Args); ++a) {
      if (state_->IsStatic(a)) continue;
      for (size_t j = 0; j < s.Def(d).num_leaves(); ++j) donated.push_back(state_->IsDonated(a));
      ++d;
    }
    tree::TreeDef out_def;
    auto fn = [&](absl::Span<const Array> traced) {
      return CallWithLeaves(std::index_sequence_for<Args...>{}, s, traced, &out_def, args...);
    };
    return jit_internal::TraceJit(fn, s, state_->name(), std::move(donated), &out_def);
  }

  // f on arguments rebuilt from traced leaves (static arguments passed as given).
  template <size_t... I, typename... Args>
  Arrays CallWithLeaves(std::index_sequence<I...>, const jit_internal::Signature& s, absl::Span<const Array> traced,
                        tree::TreeDef* out_def, const Args&... args) const {
    size_t next_leaf = 0, next_def = 0;
    auto rebuild = [&]<size_t K, typename A>(const A& arg) -> jit_internal::TracedArg<A> {
      if constexpr (std::is_same_v<A, ShapeDtypeStruct>) {
        ++next_def;
        return traced[next_leaf++];
      } else {
        if constexpr (tree::IsPytree<A>) {
          if (!state_->IsStatic(K)) {
            const tree::TreeDef& def = s.Def(next_def++);
            std::vector<Array> l(traced.begin() + static_cast<ptrdiff_t>(next_leaf),
                                 traced.begin() + static_cast<ptrdiff_t>(next_leaf + def.num_leaves()));
            next_leaf += def.num_leaves();
            return tree::unflatten<A>(def, l);
          }
        }
        return arg;
      }
    };
    // Braced initialization evaluates the arguments left to right (leaf order).
    std::tuple<jit_internal::TracedArg<Args>...> rebuilt{rebuild.template operator()<I>(args)...};
    auto result = std::apply(f_, rebuilt);
    auto [leaves, def] = tree::flatten(result);
    *out_def = std::move(def);
    return Arrays(leaves.begin(), leaves.end());
  }

  mutable F f_;  // transformations return mutable lambdas
  std::shared_ptr<jit_internal::JitState> state_;
};

namespace jit_internal {
struct JitOptions {
  std::string name = "<lambda>";
  std::vector<int> statics, donate;
};
inline void SetOption(JitOptions& o, static_argnums s) { o.statics = std::move(s.indices); }
inline void SetOption(JitOptions& o, donate_argnums d) { o.donate = std::move(d.indices); }
inline void SetOption(JitOptions& o, name n) { o.name = std::move(n.value); }
}  // namespace jit_internal

// jit(f, [static_argnums], [donate_argnums], [name]): see the top of this file.
template <typename F, typename... Options>
Jitted<F> jit(F f, Options... options) {
  jit_internal::JitOptions o;
  (jit_internal::SetOption(o, std::move(options)), ...);
  return Jitted<F>(std::move(f), std::make_shared<jit_internal::JitState>(std::move(o.name), std::move(o.statics),
                                                                          std::move(o.donate)));
}

void RegisterJit(Registry& r);

}  // namespace jx
