// Compiled by ctest twice (tests/CMakeLists.txt): as is, the recommended alias
// `namespace jrandom = jx::random;` compiles beside <cstdlib>; with -DJX_EXPECT_COMPILE_ERROR,
// `namespace random = jx::random;` must not, because it redeclares the C library's ::random()
// as a namespace. This documents why jx recommends jrandom.
#include <cstdlib>

#include <jx/jx.h>

#ifdef JX_EXPECT_COMPILE_ERROR
namespace random = jx::random;
#else
namespace jrandom = jx::random;
#endif

long CRandom() { return ::random(); }
#ifndef JX_EXPECT_COMPILE_ERROR
jx::Array SubKey() {
  auto [key, subkey] = jrandom::split(jrandom::key(0));
  return subkey;
}
#endif
