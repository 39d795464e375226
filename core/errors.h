// The exceptions the user-facing API throws. A message names the op, the shapes and dtypes
// involved and, once transforms are active, the transform stack and argument path:
//   [dot_general] contracting dims differ: lhs f32[2,3] dim 1 (3) vs rhs f32[4,5] dim 0 (4)
// Compiler and device code return absl::Status and convert at one boundary (ThrowIfError).
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>

#include "jx/core/str_util.h"

namespace jx {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& what) : std::runtime_error(what) {}
};
class TypeError : public Error { using Error::Error; };
class ShapeError : public Error { using Error::Error; };
class ValueError : public Error { using Error::Error; };
class IndexError : public Error { using Error::Error; };
class ConcretizationError : public Error { using Error::Error; };
class TracerLeakError : public Error { using Error::Error; };
class ResourceExhaustedError : public Error { using Error::Error; };
class NotImplementedError : public Error { using Error::Error; };
class InternalError : public Error { using Error::Error; };
// JX_DEBUG_NANS=1 found a NaN (JAX's FloatingPointError).
class FloatingPointError : public Error { using Error::Error; };
// Use of an array whose buffer is gone (donated to a jit call), as JAX's RuntimeError.
class RuntimeError : public Error { using Error::Error; };

// "[op] message"; the context hook (set by transforms) appends the transform stack.
std::string OpErrorMessage(std::string_view op, std::string_view message);

template <typename E = ShapeError, typename... Args>
[[noreturn]] void ThrowOpError(std::string_view op, const Args&... args) {
  throw E(OpErrorMessage(op, StrCat(args...)));
}

// Transforms install a provider of extra context ("while tracing jit(grad(loss))") that
// OpErrorMessage appends. Returns the previous provider.
using ErrorContextFn = std::string (*)();
ErrorContextFn SetErrorContextProvider(ErrorContextFn fn);

}  // namespace jx

// Throws TypeError/ShapeError with the op's name when cond is false.
#define JX_CHECK_OP(cond, ErrorType, op, ...)           \
  do {                                                   \
    if (!(cond)) ::jx::ThrowOpError<ErrorType>(op, __VA_ARGS__); \
  } while (false)
