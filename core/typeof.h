// jx::typeof(x): an array's type (JAX's jax.typeof), for concrete arrays and tracers alike.
// It is the ShapedArray, printed in JAX's long form: dtype name, global dims, and the mesh
// axes of a sharded dimension.
//
//   std::cout << jx::typeof(x);    // float32[8,4]
//   std::cout << jx::typeof(xs);   // float32[8@x,4] (xs = device_put(x, NamedSharding(mesh, P("x"))))
//   jx::typeof(xs).spec;           // {{"x"}, {}}
//
// typeof is a keyword in GNU dialects of C++ (-std=gnu++20): jx::jx compiles its users with
// -fno-gnu-keywords, so the name works in every dialect (GCC and Clang; __typeof__ remains).
// A build that does not link jx::jx uses -std=c++20 or that flag.
#pragma once

#include <ostream>

#include "jx/core/array.h"
#include "jx/core/shape.h"

namespace jx {

// A ShapedArray that prints its long form (long_str) rather than the jaxpr's short one.
struct ArrayType : ShapedArray {
};

inline std::ostream& operator<<(std::ostream& os, const ArrayType& t) { return os << t.long_str(); }

inline ArrayType typeof(const Array& x) { return ArrayType{x.aval()}; }

}  // namespace jx
