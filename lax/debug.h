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
// Formats follow Python's str.format, as jax.debug.print's do: `{}` (next argument), `{0}`
// (by position), `{name}` (a named argument, jx::debug::arg("name", x) for JAX's name=x),
// `!s`/`!r` conversions, `{{`/`}}` for literal braces, and format specs (`{x:.2f}`, `{:>8}`,
// `{:+,d}`): an empty spec prints str(array); a spec formats a 0-d array as the Python scalar
// it holds (NumPy's rule; a spec on an n-d array is NumPy's TypeError).
//
//   jx::debug::print("loss {l:.4f} at step {s:>5}", jx::debug::arg("l", loss), jx::debug::arg("s", step));
//   // jax.debug.print("loss {l:.4f} at step {s:>5}", l=loss, s=step)
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
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

// A named argument of print/format: jax.debug.print's keyword argument name=value.
struct NamedArg {
  std::string name;
  Array value;
};
template <typename T>
NamedArg arg(std::string name, const T& value) {
  return NamedArg{std::move(name), Array(value)};
}

// The text fmt makes of args and the named arguments (Python's str.format). Throws
// ValueError naming the field for an unmatched brace, a field with no argument (an index out
// of range, an unknown name), mixed automatic and manual numbering, or a spec that does not
// fit the value's type; TypeError for a spec on an n-d array.
// format("x = {}", {x}) == "x = " + x.str().
std::string format(std::string_view fmt, absl::Span<const Array> args,
                   absl::Span<const NamedArg> named = {});

// jax.debug.print: writes format(fmt, args, named) and a newline to stdout when the values
// exist. The format is checked against the arguments' types at the call, before anything is
// staged.
void print_values(std::string fmt, std::vector<Array> args, std::vector<NamedArg> named = {});

namespace internal {
template <typename T>
void CollectArg(std::vector<Array>& args, std::vector<NamedArg>& named, const T& a) {
  if constexpr (std::is_same_v<T, NamedArg>) {
    named.push_back(a);
  } else {
    args.emplace_back(a);
  }
}
}  // namespace internal

// Positional arguments and jx::debug::arg(...) named ones, in any order.
template <typename... Args>
void print(std::string_view fmt, const Args&... args) {
  std::vector<Array> positional;
  std::vector<NamedArg> named;
  (internal::CollectArg(positional, named, args), ...);
  print_values(std::string(fmt), std::move(positional), std::move(named));
}

}  // namespace jx::debug
