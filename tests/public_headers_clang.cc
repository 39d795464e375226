// Compiled with clang++ -fsyntax-only by the public_headers_compile_with_clang test: the
// umbrella header every user includes must build with clang as well as g++ (and, by
// public_headers_compile_in_gnu_dialect, in the GNU dialect with jx::jx's -fno-gnu-keywords).
#include <jx/jx.h>

// jx::typeof is a name (JAX's jax.typeof), not the GNU keyword.
[[maybe_unused]] static jx::ArrayType (*const kTypeof)(const jx::Array&) = &jx::typeof;

int main() { return 0; }
