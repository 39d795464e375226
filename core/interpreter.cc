#include "jx/core/interpreter.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <string>
#include <vector>

#include "jx/core/apply_primitive.h"
#include "jx/core/config.h"
#include "jx/core/device.h"
#include "jx/core/errors.h"
#include "jx/core/out_sharding.h"
#include "jx/core/sharding_rule_required.h"
#include "jx/core/vma.h"

namespace jx {
namespace {
thread_local Interpreter* t_current = nullptr;
// The innermost interpreter installed by an InterpreterScope: unlike t_current it stays put
// while a rule runs one level down, so errors can name the whole transform stack.
thread_local Interpreter* t_innermost = nullptr;
std::atomic<uint64_t> g_next_interpreter_id{1};

// "while tracing make_jaxpr > vmap > jvp", outermost first; empty when eager.
std::string TransformStackContext() {
  std::vector<std::string> names;
  for (const Interpreter* i = t_innermost; i != nullptr; i = i->parent()) names.push_back(i->name());
  if (names.empty()) return {};
  std::string out = "while tracing ";
  for (size_t k = names.size(); k-- > 0;) StrAppend(&out, names[k], k ? " > " : "");
  return out;
}
}  // namespace

Interpreter::Interpreter() : id_(g_next_interpreter_id.fetch_add(1, std::memory_order_relaxed)) {}

bool Interpreter::Owns(const Array& x) const {
  return x.is_tracer() && static_cast<const Tracer&>(*x.impl()).owner_id() == id_;
}

void CheckNotLeaked(const Array& x, std::string_view op, size_t argument) {
  if (!x.is_tracer()) return;
  const auto& t = static_cast<const Tracer&>(*x.impl());
  for (const Interpreter* i = t_current; i != nullptr; i = i->parent()) {
    if (i->id() == t.owner_id()) return;
  }
  ThrowOpError<TracerLeakError>(op, "argument ", argument, " (", x.aval().str(), ") is a tracer of ",
                                t.owner_name(), " used after ", t.owner_name(),
                                " finished: a traced value escaped its transformation "
                                "(store results, not intermediate tracers, outside the function)");
}

ResumeScope::ResumeScope(Interpreter* interpreter) : saved_(t_current) { t_current = interpreter; }
ResumeScope::~ResumeScope() { t_current = saved_; }

Interpreter* CurrentInterpreter() { return t_current; }

InterpreterScope::InterpreterScope(Interpreter* interpreter) : saved_(t_current), saved_innermost_(t_innermost) {
  static const bool context_installed = (SetErrorContextProvider(&TransformStackContext), true);
  (void)context_installed;
  interpreter->parent_ = t_current;
  t_current = interpreter;
  t_innermost = interpreter;
}

InterpreterScope::~InterpreterScope() {
  t_current = saved_;
  t_innermost = saved_innermost_;
}

namespace {
thread_local OperandVmaHook t_operand_vma_hook = nullptr;
}  // namespace

OperandVmaHook SetOperandVmaHook(OperandVmaHook hook) {
  OperandVmaHook saved = t_operand_vma_hook;
  t_operand_vma_hook = hook;
  return saved;
}

void JoinOperandVma(Primitive p, std::vector<Array>* operands) {
  OperandVmaHook hook = t_operand_vma_hook;
  if (hook == nullptr || operands->size() < 2) return;
  Arrays joined;
  if (!hook(p, *operands, &joined)) return;
  for (size_t i = 0; i < operands->size(); ++i) (*operands)[i] = std::move(joined[i]);
}

Arrays Bind(Primitive p, absl::Span<const Array> inputs, const ParamMap& params) {
  if (OperandVmaHook hook = t_operand_vma_hook; hook != nullptr && inputs.size() > 1) {
    Arrays joined;
    if (hook(p, inputs, &joined)) inputs = joined;
    if (Interpreter* current = t_current) return current->Process(p, inputs, params);
    return EvalPrimitive(p, inputs, params);
  }
  if (Interpreter* current = t_current) return current->Process(p, inputs, params);
  return EvalPrimitive(p, inputs, params);
}

namespace {
// Per primitive id: whether its abstract evaluation sets vma itself (set at registration,
// read on every abstract evaluation; lock-free).
constexpr uint32_t kMaxVmaPrimitives = 1u << 13;
std::array<std::atomic<bool>, kMaxVmaPrimitives>& ComputesVmaTable() {
  static auto* table = new std::array<std::atomic<bool>, kMaxVmaPrimitives>();
  return *table;
}
}  // namespace

void MarkComputesVma(Primitive p) {
  if (p.id() >= kMaxVmaPrimitives) throw InternalError(StrCat("MarkComputesVma: primitive id ", p.id(), " too large"));
  ComputesVmaTable()[p.id()].store(true, std::memory_order_release);
}

bool ComputesVma(Primitive p) {
  return p.id() < kMaxVmaPrimitives && ComputesVmaTable()[p.id()].load(std::memory_order_acquire);
}

Avals AbstractEval(Primitive p, InAvals inputs, const ParamMap& params) {
  const PrimitiveRules& rules = GlobalRegistry().Get(p);
  if (!rules.abstract_eval) throw InternalError(StrCat("[", p.name(), "] has no abstract evaluation rule"));
  Avals outs = rules.abstract_eval(inputs, params);
  bool sharded = false;  // explicit sharding in the operands' types (rare: one flag per input)
  for (const ShapedArray* a : inputs) sharded |= !a->spec.empty();
  if (sharded) ApplyShardingTypes(p, rules, inputs, params, outs);
  if (ComputesVma(p)) return outs;
  // JAX's standard vma rule: inside shard_map a result varies over every manual axis some
  // operand varies over (sorted by name, as ShapedArray::vma keeps them).
  const std::vector<std::string>* vma = nullptr;
  bool several = false;
  for (const ShapedArray* in : inputs) {
    if (in->vma.empty()) continue;
    if (vma != nullptr && *vma != in->vma) several = true;
    if (vma == nullptr) vma = &in->vma;
  }
  if (vma == nullptr) return outs;
  std::vector<std::string> joined = *vma;
  if (several) {
    for (const ShapedArray* in : inputs) joined.insert(joined.end(), in->vma.begin(), in->vma.end());
    std::sort(joined.begin(), joined.end());
    joined.erase(std::unique(joined.begin(), joined.end()), joined.end());
  }
  for (ShapedArray& out : outs) out.vma = joined;
  return outs;
}

void ApplyShardingTypes(Primitive p, const PrimitiveRules& rules, InAvals inputs, const ParamMap& params,
                        Avals& out) {
  if (rules.sharding_rule) {
    ApplyShardingRuleToTypes(p.name(), rules.sharding_rule(inputs, params, out), inputs, absl::MakeSpan(out));
    // JAX's out_sharding=: the result is typed as asked (the rule has checked the operands).
    if (const DimShardings* asked = OutShardingOf(params); asked != nullptr && out.size() == 1) {
      if (static_cast<int64_t>(asked->size()) != out[0].ndim()) {
        ThrowOpError<TypeError>(p.name(), "out_sharding ", params.Find("out_sharding")->ToString(), " has ",
                                asked->size(), " entries for a result of rank ", out[0].ndim());
      }
      bool sharded = false;
      for (const auto& axes : *asked) sharded |= !axes.empty();
      out[0].spec = sharded ? *asked : DimShardings{};
    }
    return;
  }
  // JAX's standard primitives need a rule in explicit mode (no silent replication).
  if (RequiresShardingRule(p)) {
    std::string types;
    for (const ShapedArray* a : inputs) StrAppend(&types, types.empty() ? "" : ", ", a->str());
    ThrowOpError<TypeError>(p.name(), "sharding rule for ", p.name(), " is not implemented (operation with inputs: ",
                            types, "). Reshard the explicitly sharded operands to replicated first (jx::reshard "
                            "with P())");
  }
  // Call-like primitives (jit, checkpoint, shard_map, collectives) type their results from
  // their bodies; a primitive with neither keeps replicated results, which is logged.
  bool typed = false;
  for (const ShapedArray& a : out) typed |= !a.spec.empty();
  if (!typed) SpmdLog(StrCat(p.name(), ": no sharding rule; results typed replicated"));
}

namespace {

bool HoldsNaN(const Array& a) {
  if (!IsFloating(a.dtype()) || !a.is_concrete()) return false;
  for (double v : a.to_vector<double>()) {
    if (std::isnan(v)) return true;
  }
  return false;
}

// jax_debug_nans in eager mode: JAX checks each primitive's outputs as it runs.
void CheckNoNaN(Primitive p, absl::Span<const Array> inputs, absl::Span<const Array> outs) {
  for (const Array& out : outs) {
    if (!HoldsNaN(out)) continue;
    std::string avals;
    for (const Array& x : inputs) StrAppend(&avals, avals.empty() ? "" : ", ", x.aval().str());
    throw FloatingPointError(StrCat("invalid value (nan) encountered in ", p.name(), " (eager, operands ", avals,
                                    "; jax_debug_nans is on)"));
  }
}

Arrays EvalPrimitiveUnchecked(Primitive p, absl::Span<const Array> inputs, const ParamMap& params);

}  // namespace

Arrays EvalPrimitive(Primitive p, absl::Span<const Array> inputs, const ParamMap& params) {
  Arrays outs = EvalPrimitiveUnchecked(p, inputs, params);
  if (config::internal::eager_nan_checks()) CheckNoNaN(p, inputs, outs);
  return outs;
}

namespace {

Arrays EvalPrimitiveUnchecked(Primitive p, absl::Span<const Array> inputs, const ParamMap& params) {
  const PrimitiveRules& rules = GlobalRegistry().Get(p);
  absl::InlinedVector<const ShapedArray*, 4> in_avals;
  in_avals.reserve(inputs.size());
  bool any_committed = false;  // the hot path's only device work: two flag reads per argument
  bool any_sharded = false;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Array& x = inputs[i];
    if (!x.defined()) ThrowOpError<ValueError>(p.name(), "argument ", i, " is an empty Array handle");
    if (!x.is_concrete()) {
      CheckNotLeaked(x, p.name(), i);
      ThrowOpError<InternalError>(p.name(), "argument ", i, " is a tracer of an active transformation "
                                  "reaching eager evaluation");
    }
    const auto& c = static_cast<const ConcreteArray&>(*x.impl());
    any_committed |= c.committed();
    any_sharded |= c.is_sharded();
    in_avals.push_back(&x.aval());
  }
  Avals out_avals = rules.abstract_eval(in_avals, params);
  // JAX's rules: uncommitted arguments follow the committed ones, whose device runs the op
  // and holds its (committed) results; two committed devices (or meshes) are an error.
  const Device* device = any_committed ? CommittedDeviceOf(inputs, p.name()) : nullptr;
  // An op on arrays sharded over several devices runs as one program per device (the SPMD
  // layer's handler), not here.
  if (any_sharded) return ApplyShardedPrimitive(p, inputs, params);
  if (device != nullptr && !IsHostDevice(*device)) return ApplyPrimitiveOnDevice(p, inputs, params, *device);
  if (!rules.impl) {
    auto it = rules.unsupported.find("impl");
    ThrowOpError<NotImplementedError>(p.name(), "has no eager implementation",
                                      it == rules.unsupported.end() ? "" : ": ",
                                      it == rules.unsupported.end() ? "" : it->second);
  }
  Arrays outs = rules.impl(inputs, params, out_avals);
  if (device != nullptr) {
    for (Array& out : outs) out = CommitTo(out, device);
  }
  return outs;
}

}  // namespace

}  // namespace jx
