// Random-number primitives: the threefry2x32 block cipher (Random123) and random_bits.
// jx::random (lax/random/random.h) builds keys, split, uniform, normal, ... on these.
#pragma once

#include <utility>

#include "jx/core/array.h"

namespace jx::lax {

// threefry2x32(k1, k2, x1, x2): the 20-round Threefry-2x32 cipher, elementwise over the
// uint32 counter arrays x1, x2 (equal shapes) with the scalar uint32 key words k1, k2.
std::pair<Array, Array> threefry2x32(const Array& k1, const Array& k2, const Array& x1, const Array& x2);

// random_bits(key u32[2], bit_width, shape): uint{8,16,32,64} bits as JAX's threefry
// random_bits produces them.
Array random_bits(const Array& key, int bit_width, const Shape& shape);

}  // namespace jx::lax
