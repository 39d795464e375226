// Dead-code elimination of jaxprs (JAX's pe.dce_jaxpr): the equations that compute the used
// outputs, and which inputs they read. An equation stays when one of its outputs is read or
// when it has an effect (no outputs, as debug_callback, an `effect` param, or an effect in a
// sub-jaxpr); the outputs of a kept equation that nothing reads stay in it, unread, and print
// as `_` (JAX's DropVar):
//
//   { lambda ; a:f32[]. let b:f32[] c:f32[] = f a in (b,) }   // c is dropped:
//   { lambda ; a:f32[]. let b:f32[] _:f32[] = f a in (b,) }
//
// A primitive with a DCE rule (JAX's pe.dce_rules: scan, while, cond, jit and checkpoint
// register theirs) prunes its
// own sub-jaxprs instead: given which of its outputs are used it returns the inputs it still
// reads and the equation rewritten without the rest (a scan drops the unused ys and the
// carries nothing needs; a cond drops unused outputs from every branch).
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "jx/core/jaxpr.h"
#include "jx/core/primitive.h"

namespace jx {

struct DceResult {
  std::shared_ptr<Jaxpr> jaxpr;  // outvars: the used outputs; invars: the used or instantiated inputs
  std::vector<bool> used_inputs; // per input of the original jaxpr: whether it is read
};

// used_outputs has one entry per outvar. With instantiate, every input is kept (used_inputs
// still says which are read); without, only the used ones.
DceResult DceJaxpr(const Jaxpr& j, const std::vector<bool>& used_outputs, bool instantiate = false);
// Per input: input k is kept when it is read or instantiate[k] holds (JAX's instantiate as a
// sequence).
DceResult DceJaxpr(const Jaxpr& j, const std::vector<bool>& used_outputs, const std::vector<bool>& instantiate);

// Every output used and every input kept: only the equations nothing needs go.
std::shared_ptr<Jaxpr> DceJaxpr(const Jaxpr& j);

// JAX's dce rule: (used_outputs, eqn) -> (used_inputs, the equation with only the used
// outputs, or none when nothing is used and it has no effect).
struct DceRuleResult {
  std::vector<bool> used_inputs;
  std::optional<Eqn> eqn;
};
using DceRule = std::function<DceRuleResult(const std::vector<bool>& used_outputs, const Eqn& eqn)>;
// Registers p's rule (at registration time, before any DceJaxpr runs).
void RegisterDceRule(Primitive p, DceRule rule);

// JAX's dce_jaxpr_closed_call_rule, for call-like primitives whose `jaxpr` param is their
// body (jit, checkpoint): the body keeps what the used outputs need and the call only the
// operands the pruned body reads; a call with no used output and no effect goes. Per-operand
// params other than the body are the caller's to prune (jit's donated_invars).
DceRuleResult DceClosedCall(const std::vector<bool>& used_outputs, const Eqn& eqn);

// Whether the equation has an effect: no outputs, an `effect` param, or an effectful
// equation inside one of its sub-jaxprs (JAX's eqn.effects joins its bodies').
bool HasEffect(const Eqn& e);

}  // namespace jx
