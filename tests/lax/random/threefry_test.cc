// The threefry2x32 and random_bits primitives: Random123 known-answer vectors, JAX's printed
// random bits, both counter schemes, shapes, and bad input.
#include <cstring>
#include <string>

#include <gtest/gtest.h>

#include <jx/jx.h>

namespace jx::threefry_test {
namespace {

namespace jnp = jx::numpy;

Array U32(uint32_t v) { return Array::FromData(&v, {}, uint32); }
Array U32s(std::vector<uint32_t> v) { return jnp::array(v); }

// Random123 known-answer vectors for threefry2x32 with 20 rounds (kat_vectors:
// "threefry2x32 20 <ctr0> <ctr1> <key0> <key1> <out0> <out1>"), the same three vectors JAX's
// tests/random_test.py testThreefry2x32 checks, citing
// https://github.com/DEShawResearch/Random123-Boost/blob/65e3d874b67aa7b3e02d5ad8306462f52d2079c0/libs/random/test/test_threefry.cpp#L30-L32
struct Kat {
  uint32_t ctr0, ctr1, key0, key1, out0, out1;
};
constexpr Kat kKats[] = {
    {0x00000000u, 0x00000000u, 0x00000000u, 0x00000000u, 0x6b200159u, 0x99ba4efeu},
    {0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu, 0x1cb996fcu, 0xbb002be7u},
    {0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u, 0xc4923a9cu, 0x483df7a0u},
};

TEST(ThreefryTest, Random123KnownAnswers) {
  for (const Kat& k : kKats) {
    auto [y0, y1] = lax::threefry2x32(U32(k.key0), U32(k.key1), U32(k.ctr0), U32(k.ctr1));
    EXPECT_EQ(y0.dtype(), uint32);
    EXPECT_EQ(y0.item<uint32_t>(), k.out0) << std::hex << k.key0;
    EXPECT_EQ(y1.item<uint32_t>(), k.out1) << std::hex << k.key0;
  }
}

// JAX's testThreefry2x32 goes through prng.threefry_2x32(keypair, count), where the count
// array's two halves are the two counter words.
TEST(ThreefryTest, RawHashMatchesJaxTestThreefry2x32) {
  for (const Kat& k : kKats) {
    Array out = random::threefry_2x32(U32s({k.key0, k.key1}), U32s({k.ctr0, k.ctr1}));
    EXPECT_EQ(out.to_vector<uint32_t>(), (std::vector<uint32_t>{k.out0, k.out1}));
  }
}

// JAX's testThreefry2x32Large, with 10^6 instead of 10^7 counters per word (parallel path).
TEST(ThreefryTest, LargeMatchesKnownAnswerEverywhere) {
  const int64_t n = 1000000;
  Array count = jnp::concatenate({jnp::full({n}, 0x243f6a88u, uint32), jnp::full({n}, 0x85a308d3u, uint32)});
  Array out = random::threefry_2x32(U32s({0x13198a2eu, 0x03707344u}), count);
  const std::vector<uint32_t> v = out.to_vector<uint32_t>();
  ASSERT_EQ(v.size(), static_cast<size_t>(2 * n));
  for (int64_t i = 0; i < n; ++i) {
    ASSERT_EQ(v[static_cast<size_t>(i)], 0xc4923a9cu) << i;
    ASSERT_EQ(v[static_cast<size_t>(n + i)], 0x483df7a0u) << i;
  }
}

TEST(ThreefryTest, BatchedKeysAndOddCounts) {
  // Per-element keys give the same as scalar keys element by element.
  Array k0 = U32s({0u, 0xffffffffu, 0x13198a2eu});
  Array k1 = U32s({0u, 0xffffffffu, 0x03707344u});
  Array x0 = U32s({0u, 0xffffffffu, 0x243f6a88u});
  Array x1 = U32s({0u, 0xffffffffu, 0x85a308d3u});
  auto [y0, y1] = lax::threefry2x32(k0, k1, x0, x1);
  EXPECT_EQ(y0.to_vector<uint32_t>(), (std::vector<uint32_t>{0x6b200159u, 0x1cb996fcu, 0xc4923a9cu}));
  EXPECT_EQ(y1.to_vector<uint32_t>(), (std::vector<uint32_t>{0x99ba4efeu, 0xbb002be7u, 0x483df7a0u}));
  // An odd count pads one zero counter and drops its output: element 0 hashes (c0, c2),
  // element 1 hashes (c1, 0).
  Array key = U32s({7u, 9u});
  Array out = random::threefry_2x32(key, U32s({1u, 2u, 3u}));
  auto [a0, a1] = lax::threefry2x32(U32(7), U32(9), U32s({1u, 2u}), U32s({3u, 0u}));
  const std::vector<uint32_t> lo = a0.to_vector<uint32_t>(), hi = a1.to_vector<uint32_t>();
  EXPECT_EQ(out.to_vector<uint32_t>(), (std::vector<uint32_t>{lo[0], lo[1], hi[0]}));
}

TEST(ThreefryTest, EmptyCounts) {
  // JAX's testThreefry2x32Empty.
  Array out = random::threefry_2x32(U32s({0x13198a2eu, 0x03707344u}), jnp::ones({10, 0}, uint32));
  EXPECT_EQ(out.shape(), (Shape{10, 0}));
  auto [y0, y1] = lax::threefry2x32(U32(1), U32(2), jnp::zeros({0}, uint32), jnp::zeros({0}, uint32));
  EXPECT_EQ(y0.shape(), (Shape{0}));
}

TEST(ThreefryTest, BadInputs) {
  try {
    lax::threefry2x32(U32(1), U32(2), jnp::zeros({3}, float32), jnp::zeros({3}, uint32));
    FAIL() << "expected TypeError";
  } catch (const TypeError& e) {
    EXPECT_NE(std::string(e.what()).find("threefry2x32"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("f32[3]"), std::string::npos) << e.what();
  }
  try {
    lax::threefry2x32(U32(1), U32(2), jnp::zeros({3}, uint32), jnp::zeros({4}, uint32));
    FAIL() << "expected ShapeError";
  } catch (const ShapeError& e) {
    EXPECT_NE(std::string(e.what()).find("threefry2x32"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("u32[4]"), std::string::npos) << e.what();
  }
  try {
    lax::random_bits(jnp::zeros({3}, uint32), 32, {2});
    FAIL() << "expected TypeError";
  } catch (const TypeError& e) {
    EXPECT_NE(std::string(e.what()).find("random_bits"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("u32[3]"), std::string::npos) << e.what();
  }
  EXPECT_THROW(lax::random_bits(random::key(0), 12, {2}), ValueError);
  // The process keeps working.
  auto [y0, y1] = lax::threefry2x32(U32(0), U32(0), U32(0), U32(0));
  EXPECT_EQ(y0.item<uint32_t>(), 0x6b200159u);
}

// JAX tests/random_test.py testRngRandomBits (skipped under jax_threefry_partitionable, i.e.
// these are the original scheme's values): random_bits(PRNGKey(1701), width, (3,)).
TEST(RandomBitsTest, JaxRngRandomBitsOriginalScheme) {
  Array key = random::key(1701);
  EXPECT_EQ(lax::random_bits(key, 8, {3}, false).to_vector<uint8_t>(), (std::vector<uint8_t>{216, 115, 43}));
  EXPECT_EQ(lax::random_bits(key, 16, {3}, false).to_vector<uint16_t>(), (std::vector<uint16_t>{41682, 1300, 55017}));
  EXPECT_EQ(lax::random_bits(key, 32, {3}, false).to_vector<uint32_t>(),
            (std::vector<uint32_t>{56197195u, 4200222568u, 961309823u}));
  // The x64 expectation (jx keeps 64-bit types).
  EXPECT_EQ(lax::random_bits(key, 64, {3}, false).to_vector<uint64_t>(),
            (std::vector<uint64_t>{3982329540505020460ull, 16822122385914693683ull, 7882654074788531506ull}));
  EXPECT_EQ(lax::random_bits(key, 64, {3}, false).dtype(), uint64);
}

// JAX's testRngRandomBitsViewProperty: in the original scheme the 8/16-bit draws are a
// little-endian view of the 32-bit words.
TEST(RandomBitsTest, OriginalSchemeViewProperty) {
  Array key = random::key(1701);
  const std::vector<uint32_t> w32 = lax::random_bits(key, 32, {20}, false).to_vector<uint32_t>();
  const std::vector<uint8_t> w8 = lax::random_bits(key, 8, {80}, false).to_vector<uint8_t>();
  const std::vector<uint16_t> w16 = lax::random_bits(key, 16, {40}, false).to_vector<uint16_t>();
  EXPECT_EQ(std::memcmp(w32.data(), w8.data(), 80), 0);
  EXPECT_EQ(std::memcmp(w32.data(), w16.data(), 80), 0);
}

// The partitionable scheme: element i hashes the counter (i >> 32, i & 0xffffffff).
TEST(RandomBitsTest, PartitionableSchemeDefinition) {
  Array key = U32s({0x13198a2eu, 0x03707344u});
  const int64_t n = 37;
  auto [b0, b1] = lax::threefry2x32(U32(0x13198a2eu), U32(0x03707344u), jnp::zeros({n}, uint32), lax::iota(uint32, n));
  const std::vector<uint32_t> hi = b0.to_vector<uint32_t>(), lo = b1.to_vector<uint32_t>();
  const std::vector<uint32_t> bits32 = lax::random_bits(key, 32, {n}, true).to_vector<uint32_t>();
  const std::vector<uint64_t> bits64 = lax::random_bits(key, 64, {n}, true).to_vector<uint64_t>();
  const std::vector<uint8_t> bits8 = lax::random_bits(key, 8, {n}, true).to_vector<uint8_t>();
  for (int64_t i = 0; i < n; ++i) {
    const size_t k = static_cast<size_t>(i);
    EXPECT_EQ(bits32[k], hi[k] ^ lo[k]);
    EXPECT_EQ(bits64[k], (uint64_t{hi[k]} << 32) | lo[k]);
    EXPECT_EQ(bits8[k], static_cast<uint8_t>(hi[k] ^ lo[k]));
  }
}

TEST(RandomBitsTest, ShapesBatchedKeysAndFlag) {
  Array key = random::key(3);
  EXPECT_EQ(lax::random_bits(key, 32, {}).shape(), Shape{});
  EXPECT_EQ(lax::random_bits(key, 16, {2, 0, 3}).shape(), (Shape{2, 0, 3}));
  Array r = lax::random_bits(key, 32, {4, 5});
  EXPECT_EQ(r.shape(), (Shape{4, 5}));
  EXPECT_EQ(r.dtype(), uint32);
  // A batch of keys draws for each key independently.
  Array keys = random::split(key, 3);
  Array batched = lax::random_bits(keys, 32, {6});
  ASSERT_EQ(batched.shape(), (Shape{3, 6}));
  for (int64_t i = 0; i < 3; ++i) {
    EXPECT_EQ(batched[i].to_vector<uint32_t>(), lax::random_bits(keys[i], 32, {6}).to_vector<uint32_t>());
  }
  // The process-wide flag picks the scheme.
  {
    ThreefryPartitionableScope scope(false);
    EXPECT_FALSE(threefry_partitionable());
    EXPECT_EQ(lax::random_bits(key, 32, {5}).to_vector<uint32_t>(),
              lax::random_bits(key, 32, {5}, false).to_vector<uint32_t>());
  }
  EXPECT_TRUE(threefry_partitionable());
  EXPECT_EQ(lax::random_bits(key, 32, {5}).to_vector<uint32_t>(), lax::random_bits(key, 32, {5}, true).to_vector<uint32_t>());
  EXPECT_NE(lax::random_bits(key, 32, {5}, true).to_vector<uint32_t>(),
            lax::random_bits(key, 32, {5}, false).to_vector<uint32_t>());
}

}  // namespace
}  // namespace jx::threefry_test
