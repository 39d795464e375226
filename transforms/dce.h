// Dead-code elimination of jaxprs (JAX's pe.dce_jaxpr): the equations that compute the used
// outputs, and which inputs they read. An equation stays when one of its outputs is read or
// when it has an effect (no outputs, as debug_callback, or an `effect` param); the outputs
// of a kept equation that nothing reads stay in it, unread, and print as `_` (JAX's DropVar):
//
//   { lambda ; a:f32[]. let b:f32[] c:f32[] = f a in (b,) }   // c is dropped:
//   { lambda ; a:f32[]. let b:f32[] _:f32[] = f a in (b,) }
//
// Higher-order equations (scan, cond, while, pjit) are kept or dropped whole: their bodies
// are not pruned (JAX's per-primitive dce rules do that).
#pragma once

#include <memory>
#include <vector>

#include "jx/core/jaxpr.h"

namespace jx {

struct DceResult {
  std::shared_ptr<Jaxpr> jaxpr;  // outvars: the used outputs; invars: the used inputs
  std::vector<bool> used_inputs; // per input of the original jaxpr
};

// used_outputs has one entry per outvar. With instantiate, every input is kept (used_inputs
// still says which are read); without, only the used ones.
DceResult DceJaxpr(const Jaxpr& j, const std::vector<bool>& used_outputs, bool instantiate = false);

// Every output used and every input kept: only the equations nothing needs go.
std::shared_ptr<Jaxpr> DceJaxpr(const Jaxpr& j);

}  // namespace jx
