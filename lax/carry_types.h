// JAX's typing of loop carries (lax/control_flow/loops.py), shared by scan and while_loop:
// a weakly typed init leaf (a C++ scalar) takes the type the body returns for it
// (_promote_weak_typed_inputs), and otherwise the body must return every carry leaf with its
// shape and dtype (_check_carry_type's TypeError).
//
//   std::vector<Array> carry(init.begin(), init.end());
//   Hoisted body = TraceHoisted(f, AvalsOf(carry), "scan body");
//   if (PromoteWeakCarry(carry, body.jaxpr.jaxpr->out_avals())) body = TraceHoisted(...);  // again
//   CheckCarryTypes("scan body", AvalsOf(carry), body.jaxpr.jaxpr->out_avals());
#pragma once

#include <string_view>
#include <vector>

#include "jx/core/array.h"

namespace jx::lax::internal {

// Converts each weakly typed carry leaf whose dtype (same shape) differs from the body's output
// for it to result_type(leaf, output), strongly typed, as JAX's convert_element_type. Returns
// whether any changed (the body is then traced again with the new carry).
bool PromoteWeakCarry(std::vector<Array>& carry, const std::vector<ShapedArray>& out);

// Throws TypeError with JAX's text ("<name> function carry input and carry output must have
// equal types ...", a line per differing leaf) unless the body's first in.size() outputs have
// the carry's shapes and dtypes (weak types aside).
void CheckCarryTypes(std::string_view name, const std::vector<ShapedArray>& in, const std::vector<ShapedArray>& out);

}  // namespace jx::lax::internal
