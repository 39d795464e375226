// Random-number primitives: the threefry2x32 block cipher (Random123's Threefry-2x32, 20
// rounds, as jax._src.prng.threefry2x32_p) and random_bits (JAX's threefry_random_bits).
// jx::random (lax/random/random.h) builds keys, split, uniform, normal, ... on these.
//
//   Array zero = jnp::zeros({}, jx::uint32);
//   auto [y1, y2] = lax::threefry2x32(zero, zero, zero, zero);   // Random123 known answer:
//   y1.item<uint32_t>();                                          // 0x6b200159 (y2: 0x99ba4efe)
//   // jax.random.PRNGKey(1701) bits, original (non-partitionable) scheme: u8[3] [216 115 43]
//   lax::random_bits(jx::random::key(1701), 8, {3}, /*partitionable=*/false);
#pragma once

#include <utility>

#include "jx/core/array.h"

namespace jx {

// JAX's jax_threefry_partitionable flag (default true since JAX 0.5.0): which counter scheme
// random_bits and random::split use. Partitionable: element i of the output hashes the 64-bit
// counter (i >> 32, i & 0xffffffff). Original: one iota of 32-bit counters split in halves.
// The two schemes give different bits for the same key.
bool threefry_partitionable();
void set_threefry_partitionable(bool enabled);
// Sets the flag for a scope (like `with jax.threefry_partitionable(False):`).
class ThreefryPartitionableScope {
 public:
  explicit ThreefryPartitionableScope(bool enabled) : saved_(threefry_partitionable()) {
    set_threefry_partitionable(enabled);
  }
  ~ThreefryPartitionableScope() { set_threefry_partitionable(saved_); }
  ThreefryPartitionableScope(const ThreefryPartitionableScope&) = delete;
  ThreefryPartitionableScope& operator=(const ThreefryPartitionableScope&) = delete;

 private:
  bool saved_;
};

namespace lax {

// threefry2x32(k1, k2, x1, x2): the 20-round Threefry-2x32 cipher, elementwise. All four are
// uint32; each is either 0-d or has the common shape of the others (keys are usually 0-d,
// or batched like the counters).
std::pair<Array, Array> threefry2x32(const Array& k1, const Array& k2, const Array& x1, const Array& x2);

// random_bits(key u32[..., 2], bit_width, shape): uint{8,16,32,64}[..., *shape] bits as JAX's
// threefry_random_bits produces them; leading key dimensions are independent keys. Uses the
// process-wide threefry_partitionable() flag unless given explicitly.
Array random_bits(const Array& key, int bit_width, const Shape& shape);
Array random_bits(const Array& key, int bit_width, const Shape& shape, bool partitionable);

}  // namespace lax
}  // namespace jx
