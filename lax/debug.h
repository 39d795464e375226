// jax.debug: printing and host callbacks that run with concrete values inside transformed
// code. The call is staged as one `debug_callback` equation (effect=Debug) that jit lowers to
// a side-effecting host custom-call, so it runs every time the compiled program runs; vmap
// calls it once per batch element (JAX unrolls the mapped axis), and grad calls it in the
// forward pass with the primal values (tangents are never printed).
//
//   auto f = jx::jit([](const Array& x) {
//     jx::debug::print("x = {}", x);           // jax.debug.print("x = {}", x)
//     return jnp::sin(x);
//   });
//   f(2.0f);                                   // prints: x = 2.0
//
// Formats follow Python's str.format for positional fields: `{}` (next argument), `{0}`,
// `{1}` (by position), `{{` and `}}` (literal braces); values print as str(array) does.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/types/span.h"
#include "jx/core/array.h"
#include "jx/core/primitive.h"

namespace jx::lax {
inline const Primitive kDebugCallback = Primitive::Intern("debug_callback");
}  // namespace jx::lax

namespace jx::debug {

// jax.debug.callback: calls fn on the host with the concrete values of args, wherever the
// call sits (eager, jit, vmap, grad, inside loops). fn must not return values to the program.
void callback(std::function<void(absl::Span<const Array> args)> fn, std::vector<Array> args);

// The text fmt makes of args (str.format with positional fields). Throws ValueError for an
// unmatched brace, a field with no argument, a format spec, or mixed automatic and manual
// numbering. format("x = {}", {x}) == "x = " + x.str().
std::string format(std::string_view fmt, absl::Span<const Array> args);

// jax.debug.print: writes format(fmt, args) and a newline to stdout when the values exist.
// The format is checked at the call, before anything is staged.
void print_values(std::string fmt, std::vector<Array> args);

template <typename... Args>
void print(std::string_view fmt, const Args&... args) {
  print_values(std::string(fmt), std::vector<Array>{Array(args)...});
}

}  // namespace jx::debug
