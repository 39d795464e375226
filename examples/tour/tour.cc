// A short tour of jx: arrays and dtypes, JAX's promotion with weak C++ scalars, jnp and lax
// ops, random numbers, printing, and the errors bad input gets.
#include <iostream>

#include <jx/jx.h>

namespace jnp = jx::numpy;
namespace lax = jx::lax;
using jx::Array;

int main() {
  // Arrays keep their C++ element type; they are immutable values over a shared buffer.
  Array x = jnp::array({0.f, 0.5f, 1.f, 1.5f, 2.f, 2.5f}).reshape({2, 3});
  Array i = jnp::arange(6).reshape({2, 3});
  std::cout << "x = " << x << "\n";
  std::cout << "x has aval " << jx::ShapedArray{x.shape(), x.dtype()} << "\n\n";

  // Promotion follows JAX's lattice; C++ scalars are weak and keep the array's dtype.
  std::cout << "x * 2.0           -> " << (x * 2.0).dtype() << "\n";
  std::cout << "i + 1             -> " << (i + 1).dtype() << "\n";
  std::cout << "i + x             -> " << (i + x).dtype() << "\n";
  std::cout << "bf16 + f16        -> " << jx::promote_types(jx::bfloat16, jx::float16) << "\n";
  std::cout << "int8 + uint8      -> " << jx::promote_types(jx::int8, jx::uint8) << "\n";
  std::cout << "uint32 + int32    -> " << jx::promote_types(jx::uint32, jx::int32) << "\n\n";

  // jnp: broadcasting, reductions with axis/keepdims, linear algebra.
  std::cout << "jnp::sum(x, 0)    = " << jnp::sum(x, 0) << "\n";
  std::cout << "jnp::mean(x, 1, keepdims) =\n" << jnp::mean(x, 1, /*keepdims=*/true) << "\n";
  std::cout << "x @ x.T           =\n" << jnp::matmul(x, x.T()) << "\n";
  std::cout << "jnp::tanh(x)      =\n" << jnp::tanh(x) << "\n";
  std::cout << "jnp::where(x > 1, x, 0) =\n" << jnp::where(x > 1.0, x, jnp::zeros_like(x)) << "\n\n";

  // lax: the primitives by JAX's names.
  Array w = jnp::ones({3, 2});
  std::cout << "lax::dot_general  =\n" << lax::dot_general(x, w, {{1}, {0}, {}, {}}) << "\n";
  std::cout << "lax::cumsum(i, 1) =\n" << lax::cumsum(i, 1) << "\n\n";

  // Random numbers: threefry2x32 keys, as in jax.random.
  Array key = jx::random::key(0);
  Array keys = jx::random::split(key, 2);  // u32[2,2]: one key per row
  std::cout << "random::normal    = " << jx::random::normal(keys[1], {4}) << "\n";
  std::cout << "random::uniform   = " << jx::random::uniform(keys[0], {4}) << "\n\n";

  // Large arrays print summarized, like NumPy.
  std::cout << "jnp::arange(10000) = " << jnp::arange(10000) << "\n\n";

  // Bad input throws an exception naming the op, shapes and dtypes; the process keeps going.
  try {
    lax::add(x, jnp::ones({3, 2}));
  } catch (const jx::Error& e) {
    std::cout << "error: " << e.what() << "\n";
  }
  std::cout << "x.sum() after the error = " << jnp::sum(x).item<float>() << "\n";
  return 0;
}
