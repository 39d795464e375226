#include "jx/core/apply_primitive.h"

#include <atomic>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/hash/hash.h"
#include "jx/core/caches.h"
#include "jx/core/device.h"
#include "jx/core/errors.h"
#include "jx/core/executable.h"
#include "jx/core/interpreter.h"
#include "jx/core/jaxpr.h"
#include "jx/core/sharding.h"
#include "jx/core/str_util.h"

namespace jx {
namespace {

struct ProgramKey {
  Primitive primitive;
  ParamMap params;
  std::vector<ShapedArray> avals;  // weak types included: they decide the outputs' weak types
  const Device* device;
  friend bool operator==(const ProgramKey&, const ProgramKey&) = default;
  template <typename H>
  friend H AbslHashValue(H h, const ProgramKey& k) {
    h = H::combine(std::move(h), k.primitive, k.params.Hash(), k.device, k.avals.size());
    for (const ShapedArray& a : k.avals) {
      h = H::combine(std::move(h), static_cast<int>(a.dtype), a.weak_type);
      for (int64_t d : a.shape) h = H::combine(std::move(h), d);
    }
    return h;
  }
};

constexpr size_t kCapacity = 4096;

struct ProgramCache {
  std::mutex mutex;
  absl::flat_hash_map<ProgramKey, std::shared_ptr<const Executable>> programs;
};

ProgramCache& Programs() {
  static auto* cache = [] {
    auto* programs = new ProgramCache;  // never destroyed: executables outlive static teardown
    caches_internal::RegisterCache([programs] {
      absl::flat_hash_map<ProgramKey, std::shared_ptr<const Executable>> dropped;  // freed unlocked
      std::lock_guard<std::mutex> lock(programs->mutex);
      dropped.swap(programs->programs);
    });
    return programs;
  }();
  return *cache;
}

std::atomic<int64_t> g_compiles{0}, g_hits{0};

// `{ lambda ; a:f32[3]. let b:f32[3] = sin a in (b) }`
ClosedJaxpr OneEquationProgram(Primitive p, absl::Span<const ShapedArray> in, const ParamMap& params) {
  auto j = std::make_shared<Jaxpr>();
  Eqn eqn{p, {}, {}, params};
  std::vector<const ShapedArray*> in_ptrs;
  for (const ShapedArray& a : in) {
    const Var v = j->NewVar(a);
    j->invars.push_back(v);
    eqn.inputs.push_back(v);
    in_ptrs.push_back(&a);
  }
  for (const ShapedArray& out : AbstractEval(p, in_ptrs, params)) {
    const Var v = j->NewVar(out);
    eqn.outputs.push_back(v);
    j->outvars.push_back(v);
  }
  j->eqns.push_back(std::move(eqn));
  return ClosedJaxpr{std::move(j), {}};
}

}  // namespace

Arrays ApplyPrimitiveOnDevice(Primitive p, absl::Span<const Array> inputs, const ParamMap& params,
                              const Device& device) {
  ProgramKey key{p, params, {}, &device};
  key.avals.reserve(inputs.size());
  for (const Array& x : inputs) key.avals.push_back(x.aval());
  ProgramCache& cache = Programs();
  std::shared_ptr<const Executable> exe;
  {
    std::lock_guard<std::mutex> lock(cache.mutex);
    if (auto it = cache.programs.find(key); it != cache.programs.end()) exe = it->second;
  }
  if (exe) {
    g_hits.fetch_add(1, std::memory_order_relaxed);
  } else {
    // Compiled outside the lock: a compile may run eager ops of its own.
    const ClosedJaxpr program = OneEquationProgram(p, key.avals, params);
    LoweringOptions options;
    options.name = std::string(p.name());
    options.device_assignment = {&device};
    exe = device.client().Lower(program, options)->Compile();
    g_compiles.fetch_add(1, std::memory_order_relaxed);
    std::lock_guard<std::mutex> lock(cache.mutex);
    // Bounded like JAX's primitive-callable cache: a process that keeps making new shapes
    // recompiles rather than holding every program it ever ran.
    if (cache.programs.size() >= kCapacity) cache.programs.clear();
    exe = cache.programs.try_emplace(std::move(key), exe).first->second;
  }
  Arrays outs = exe->Execute(inputs);
  // Results of an op on committed arrays are committed to their device (JAX's rule), whatever
  // the client's executable returned.
  for (Array& out : outs) out = CommitTo(out, &device);
  return outs;
}

ApplyPrimitiveStats GetApplyPrimitiveStats() { return {g_compiles.load(), g_hits.load()}; }

namespace {

// The default: no SPMD executor is installed, so an eager op cannot run on a sharded array.
Arrays NoShardedEager(Primitive p, absl::Span<const Array> inputs, const ParamMap&) {
  for (size_t i = 0; i < inputs.size(); ++i) {
    const ConcreteArray* c = inputs[i].impl()->ConcreteValue();
    if (c == nullptr || !c->is_sharded()) continue;
    ThrowOpError<NotImplementedError>(p.name(), "argument ", i, " (", inputs[i].aval().str(), ") is sharded with ",
                                      c->sharded()->sharding->ToString(), ", and no SPMD executor is installed for "
                                      "eager ops on sharded arrays; gather it to one device first with "
                                      "jx::device_put(x, device)");
  }
  throw InternalError(StrCat("[", p.name(), "] reached the sharded eager path without a sharded argument"));
}

struct ShardedEagerSlot {
  std::mutex mutex;
  ShardedEagerHandler handler = NoShardedEager;
};

ShardedEagerSlot& ShardedEager() {
  static auto* slot = new ShardedEagerSlot;
  return *slot;
}

}  // namespace

ShardedEagerHandler SetShardedEagerHandler(ShardedEagerHandler handler) {
  ShardedEagerSlot& slot = ShardedEager();
  std::lock_guard<std::mutex> lock(slot.mutex);
  ShardedEagerHandler previous = std::move(slot.handler);
  slot.handler = handler ? std::move(handler) : ShardedEagerHandler(NoShardedEager);
  return previous;
}

Arrays ApplyShardedPrimitive(Primitive p, absl::Span<const Array> inputs, const ParamMap& params) {
  ShardedEagerHandler handler;
  {
    ShardedEagerSlot& slot = ShardedEager();
    std::lock_guard<std::mutex> lock(slot.mutex);
    handler = slot.handler;
  }
  return handler(p, inputs, params);
}

}  // namespace jx
