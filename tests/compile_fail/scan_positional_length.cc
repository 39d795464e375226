// Compiled by ctest twice (tests/CMakeLists.txt): as is it must compile; with
// -DJX_EXPECT_COMPILE_ERROR it must not, because lax::scan's fourth argument is named options
// ({.length = 3}, {.reverse = true}), never a bare value that could mean reverse=true.
#include <utility>

#include <jx/jx.h>

namespace lax = jx::lax;

std::pair<jx::Array, jx::Array> Run(const jx::Array& init, const jx::Array& xs) {
  auto f = [](const jx::Array& c, const jx::Array& x) { return std::pair{c + x, c}; };
#ifdef JX_EXPECT_COMPILE_ERROR
  return lax::scan(f, init, xs, 3);
#else
  return lax::scan(f, init, xs, {.length = 3});
#endif
}
