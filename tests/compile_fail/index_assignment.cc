// Compiled by ctest twice (tests/CMakeLists.txt): as is it must compile; with
// -DJX_EXPECT_COMPILE_ERROR it must not, because `x[1] = v` would assign to a temporary and
// change nothing (Array's assignment is lvalue-only). JAX's spelling is x.at[1].set(v):
// jx's is x.at(1).set(v).
#include <jx/jx.h>

jx::Array Update(jx::Array x, const jx::Array& v) {
#ifdef JX_EXPECT_COMPILE_ERROR
  x[1] = v;
  return x;
#else
  x = x.at(1).set(v);
  return x;
#endif
}
