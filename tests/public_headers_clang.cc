// Compiled with clang++ -fsyntax-only by the public_headers_compile_with_clang test: the
// umbrella header every user includes must build with clang as well as g++.
#include <jx/jx.h>

int main() { return 0; }
