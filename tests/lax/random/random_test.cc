// jx::random against values JAX prints (its docs and tests/random_test.py), plus
// distribution sanity checks and bad input.
#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>

#include <gtest/gtest.h>

#include <jx/jx.h>

namespace jx::random_test {
namespace {

namespace jnp = jx::numpy;

std::vector<uint32_t> Key(const Array& k) { return k.to_vector<uint32_t>(); }

// jax.random.key(seed) data, from JAX tests/random_test.py test_prng_seeds_and_keys (the
// jax_enable_x64 column: jx keeps 64-bit seeds).
TEST(RandomKeyTest, SeedsToKeys) {
  EXPECT_EQ(Key(random::key(0)), (std::vector<uint32_t>{0, 0}));
  EXPECT_EQ(Key(random::key(1)), (std::vector<uint32_t>{0, 1}));
  EXPECT_EQ(Key(random::key(-1)), (std::vector<uint32_t>{4294967295u, 4294967295u}));
  EXPECT_EQ(Key(random::key(int64_t{-3})), (std::vector<uint32_t>{4294967295u, 4294967293u}));
  EXPECT_EQ(Key(random::key(int64_t{2147483647} + 100)), (std::vector<uint32_t>{0, 2147483747u}));
  EXPECT_EQ(Key(random::key(int64_t{-2147483648} - 100)), (std::vector<uint32_t>{4294967295u, 2147483548u}));
  EXPECT_EQ(random::key(0).dtype(), uint32);
  // Integer seed arrays: 32-bit seeds give (0, bits), as JAX's int32 rows.
  EXPECT_EQ(Key(random::key(jnp::array(int32_t{-2}))), (std::vector<uint32_t>{0, 4294967294u}));
  EXPECT_EQ(Key(random::key(jnp::array(uint32_t{2}))), (std::vector<uint32_t>{0, 2}));
  EXPECT_EQ(Key(random::key(jnp::array(int64_t{-3}))), (std::vector<uint32_t>{4294967295u, 4294967293u}));
}

// JAX tests/random_test.py testPRNGValues (original scheme: the test is skipped under
// jax_threefry_partitionable).
TEST(RandomJaxValuesTest, PrngValuesOriginalScheme) {
  ThreefryPartitionableScope original(false);
  Array k = random::key(0);
  EXPECT_EQ(random::split(k, 4).to_vector<uint32_t>(),
            (std::vector<uint32_t>{2285895361u, 1501764800u, 1518642379u, 4090693311u, 433833334u, 4221794875u,
                                   839183663u, 3740430601u}));
  EXPECT_EQ(random::split(k, 4).shape(), (Shape{4, 2}));
  EXPECT_EQ(Key(random::fold_in(k, 4)), (std::vector<uint32_t>{2285895361u, 433833334u}));
  Array r32 = random::randint(k, {3, 3}, 0, 8, int32);
  EXPECT_EQ(r32.dtype(), int32);
  EXPECT_EQ(r32.to_vector<int32_t>(), (std::vector<int32_t>{2, 1, 3, 6, 1, 5, 6, 3, 4}));
  EXPECT_EQ(random::randint(k, {3, 3}, 0, 8, int64).to_vector<int64_t>(),
            (std::vector<int64_t>{7, 2, 6, 2, 1, 0, 6, 7, 7}));
}

// JAX tests/random_test.py _RANDOM_VALUES_CASES / testRandomDistributionValues (threefry2x32,
// original scheme), seeds zlib.adler32(name + "threefry2x32"), compared as the test does
// (assertAllClose: float32 tolerance 1e-6).
constexpr int64_t kSeedUniform = 1338574713;    // adler32("uniformthreefry2x32")
constexpr int64_t kSeedNormal = 1193674498;     // adler32("normalthreefry2x32")
constexpr int64_t kSeedBits = 942802475;        // adler32("bitsthreefry2x32")
constexpr int64_t kSeedBernoulli = 1612777541;  // adler32("bernoullithreefry2x32")
constexpr int64_t kSeedRandint = 1319372649;    // adler32("randintthreefry2x32")
constexpr int64_t kSeedGumbel = 1179715317;     // adler32("gumbelthreefry2x32")

void ExpectAllClose(const Array& got, const std::vector<float>& want, double tol = 1e-6) {
  const std::vector<float> g = got.to_vector<float>();
  ASSERT_EQ(g.size(), want.size());
  for (size_t i = 0; i < g.size(); ++i) {
    EXPECT_NEAR(g[i], want[i], tol + tol * std::fabs(want[i])) << "element " << i;
  }
}

TEST(RandomJaxValuesTest, DistributionValuesOriginalScheme) {
  ThreefryPartitionableScope original(false);
  ExpectAllClose(random::uniform(random::key(kSeedUniform), {5}, float32),
                 {0.298671f, 0.073213f, 0.873356f, 0.260549f, 0.412797f});
  ExpectAllClose(random::normal(random::key(kSeedNormal), {5}, float32),
                 {-1.173234f, -1.511662f, 0.070593f, -0.099764f, 1.052845f});
  ExpectAllClose(random::gumbel(random::key(kSeedGumbel), {5}, float32),
                 {2.06701f, 0.911726f, 0.145736f, 0.185427f, -0.00711f});
  Array kb = random::key(kSeedBits);
  EXPECT_EQ(random::bits(kb, {5}, uint8).to_vector<uint8_t>(), (std::vector<uint8_t>{10, 158, 82, 54, 158}));
  EXPECT_EQ(random::bits(kb, {5}, uint16).to_vector<uint16_t>(),
            (std::vector<uint16_t>{6738, 38161, 50695, 57337, 61600}));
  EXPECT_EQ(random::bits(kb, {5}, uint32).to_vector<uint32_t>(),
            (std::vector<uint32_t>{1978747883u, 4134381225u, 3628107870u, 689687174u, 2788938207u}));
  EXPECT_EQ(random::bits(kb, {5}, uint64).to_vector<uint64_t>(),
            (std::vector<uint64_t>{17649965731882839947ull, 1415307058040849897ull, 8282622628079774249ull,
                                   14024425113645909402ull, 2012979996110532418ull}));
  EXPECT_EQ(random::bernoulli(random::key(kSeedBernoulli), 0.5, Shape{5}).to_vector<bool>(),
            (std::vector<bool>{false, true, true, true, false}));
  EXPECT_EQ(random::randint(random::key(kSeedRandint), {5}, 0, 10, int32).to_vector<int32_t>(),
            (std::vector<int32_t>{0, 5, 7, 7, 5}));
}

// The jax.random module docs (https://docs.jax.dev/en/latest/jax.random.html, "PRNG keys"),
// with JAX's default jax_threefry_partitionable=True:
//   >>> key = random.key(0); random.uniform(key)           Array(0.947667, dtype=float32)
//   >>> key, subkey = random.split(key); random.uniform(subkey)   Array(0.00729382, dtype=float32)
// NumPy prints at most 8 fractional digits (floatmode "maxprec"): 0.947667 is float32's
// shortest repr, 0.00729382 is the value rounded to 8 decimals.
TEST(RandomJaxValuesTest, DocsExamplesPartitionableDefault) {
  ASSERT_TRUE(threefry_partitionable());
  Array key = random::key(0);
  Array u = random::uniform(key);
  EXPECT_EQ(u.shape(), Shape{});
  EXPECT_EQ(u.dtype(), float32);
  EXPECT_EQ(u.item<float>(), 0.947667f);
  EXPECT_EQ(random::uniform(key).item<float>(), 0.947667f);  // keys are values
  Array keys = random::split(key);
  EXPECT_NEAR(random::uniform(keys[1]).item<double>(), 0.00729382, 5e-9);
}

// JAX tests/random_test.py test_threefry_split_fold_in_symmetry (partitionable scheme).
TEST(RandomJaxValuesTest, SplitFoldInSymmetryPartitionable) {
  Array key = random::key(72);
  Array keys = random::split(key, 3);
  for (uint32_t i = 0; i < 3; ++i) {
    EXPECT_EQ(Key(random::fold_in(key, i)), Key(keys[i])) << i;
    EXPECT_EQ(Key(random::fold_in(key, jnp::array(static_cast<int32_t>(i)))), Key(keys[i])) << i;
  }
}

TEST(RandomTest, SplitShapesAndDistinctKeys) {
  for (bool part : {true, false}) {
    ThreefryPartitionableScope scope(part);
    Array keys = random::split(random::key(5), 4);
    EXPECT_EQ(keys.shape(), (Shape{4, 2}));
    EXPECT_EQ(keys.dtype(), uint32);
    const std::vector<uint32_t> v = keys.to_vector<uint32_t>();
    for (int i = 0; i < 4; ++i) {
      for (int j = i + 1; j < 4; ++j) EXPECT_FALSE(v[2 * i] == v[2 * j] && v[2 * i + 1] == v[2 * j + 1]);
    }
    EXPECT_EQ(random::split(random::key(5), 0).shape(), (Shape{0, 2}));
    // A shape of keys is the flat split reshaped (JAX's split(key, (2, 3))).
    Array grid = random::split(random::key(5), Shape{2, 3});
    EXPECT_EQ(grid.shape(), (Shape{2, 3, 2}));
    EXPECT_EQ(grid.to_vector<uint32_t>(), random::split(random::key(5), 6).to_vector<uint32_t>());
  }
}

TEST(RandomTest, UniformRangeAndDtypes) {
  Array key = random::key(11);
  for (DType d : {float16, bfloat16, float32, float64}) {
    Array u = random::uniform(key, {20000}, d);
    EXPECT_EQ(u.dtype(), d);
    const std::vector<double> v = u.to_vector<double>();
    const double mn = *std::min_element(v.begin(), v.end()), mx = *std::max_element(v.begin(), v.end());
    EXPECT_GE(mn, 0.0) << dtype_name(d);
    EXPECT_LT(mx, 1.0) << dtype_name(d);
    const double mean = std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
    EXPECT_NEAR(mean, 0.5, 0.01) << dtype_name(d);
  }
  Array r = random::uniform(key, {10000}, float64, -3.0, 5.0);
  const std::vector<double> v = r.to_vector<double>();
  EXPECT_GE(*std::min_element(v.begin(), v.end()), -3.0);
  EXPECT_LT(*std::max_element(v.begin(), v.end()), 5.0);
  // Array bounds broadcast against the shape.
  Array lo = jnp::array({0.f, 10.f});
  Array b = random::uniform(key, {1000, 2}, float32, lo, jnp::add(lo, 1.0));
  const std::vector<float> bv = b.to_vector<float>();
  for (size_t i = 0; i < bv.size(); ++i) {
    const float base = i % 2 == 0 ? 0.f : 10.f;
    EXPECT_GE(bv[i], base);
    EXPECT_LT(bv[i], base + 1.f);
  }
}

TEST(RandomTest, NormalMoments) {
  for (DType d : {float32, float64}) {
    const std::vector<double> v = random::normal(random::key(3), {50000}, d).to_vector<double>();
    double mean = 0, sq = 0;
    for (double x : v) {
      ASSERT_TRUE(std::isfinite(x));
      mean += x;
      sq += x * x;
    }
    mean /= static_cast<double>(v.size());
    const double var = sq / static_cast<double>(v.size()) - mean * mean;
    EXPECT_NEAR(mean, 0.0, 0.02) << dtype_name(d);
    EXPECT_NEAR(var, 1.0, 0.03) << dtype_name(d);
  }
  EXPECT_EQ(random::normal(random::key(3), {2, 3}, bfloat16).dtype(), bfloat16);
}

TEST(RandomTest, TruncatedNormalStaysInside) {
  const std::vector<float> v = random::truncated_normal(random::key(9), -0.3, 0.3, {5000}).to_vector<float>();
  for (float x : v) {
    EXPECT_GT(x, -0.3f);
    EXPECT_LT(x, 0.3f);
  }
}

TEST(RandomTest, BernoulliRateAndShapes) {
  Array b = random::bernoulli(random::key(4), 0.3, Shape{20000});
  EXPECT_EQ(b.dtype(), bool_);
  const std::vector<bool> v = b.to_vector<bool>();
  const double rate = static_cast<double>(std::count(v.begin(), v.end(), true)) / static_cast<double>(v.size());
  EXPECT_NEAR(rate, 0.3, 0.015);
  // JAX's testBernoulliShape: p of shape (2,) with shape (3, 2).
  EXPECT_EQ(random::bernoulli(random::key(0), jnp::array({0.2f, 0.3f}), Shape{3, 2}).shape(), (Shape{3, 2}));
  EXPECT_EQ(random::bernoulli(random::key(0), jnp::array({0.2f, 0.3f})).shape(), (Shape{2}));
}

TEST(RandomTest, RandintRangeAndDtypes) {
  for (DType d : {int8, uint8, int16, uint16, int32, uint32, int64, uint64}) {
    Array r = random::randint(random::key(7), {5000}, 5, 10, d);
    EXPECT_EQ(r.dtype(), d);
    const std::vector<int64_t> v = r.to_vector<int64_t>();
    EXPECT_EQ(*std::min_element(v.begin(), v.end()), 5) << dtype_name(d);
    EXPECT_EQ(*std::max_element(v.begin(), v.end()), 9) << dtype_name(d);
  }
  // maxval above the dtype's range (JAX's randint(key, shape, 0, 256, 'uint8')).
  const std::vector<int64_t> v = random::randint(random::key(1), {5000}, 0, 256, uint8).to_vector<int64_t>();
  EXPECT_EQ(*std::max_element(v.begin(), v.end()), 255);
  // An empty range returns minval.
  EXPECT_EQ(random::randint(random::key(1), {3}, 4, 4).to_vector<int32_t>(), (std::vector<int32_t>{4, 4, 4}));
}

TEST(RandomTest, CategoricalFrequencies) {
  Array logits = jnp::log(jnp::array({0.1f, 0.2f, 0.3f, 0.4f}));
  Array s = random::categorical(random::key(2), logits, -1, Shape{20000});
  EXPECT_EQ(s.dtype(), int32);
  EXPECT_EQ(s.shape(), Shape{20000});
  std::vector<int> counts(4, 0);
  for (int32_t c : s.to_vector<int32_t>()) counts[static_cast<size_t>(c)]++;
  for (int i = 0; i < 4; ++i) EXPECT_NEAR(counts[static_cast<size_t>(i)] / 20000.0, 0.1 * (i + 1), 0.015) << i;
  // Batched logits along axis 0: columns are independent distributions.
  Array lg = jnp::log(jnp::array({{0.5f, 0.1f}, {0.5f, 0.9f}}));
  Array t = random::categorical(random::key(3), lg, 0, Shape{5000, 2});
  EXPECT_EQ(t.shape(), (Shape{5000, 2}));
  const std::vector<int32_t> tv = t.to_vector<int32_t>();
  double ones1 = 0;
  for (size_t i = 1; i < tv.size(); i += 2) ones1 += tv[i];
  EXPECT_NEAR(ones1 / 5000.0, 0.9, 0.02);
  EXPECT_EQ(random::categorical(random::key(3), lg, 0).shape(), (Shape{2}));
}

TEST(RandomTest, PermutationIsAPermutation) {
  for (bool part : {true, false}) {
    ThreefryPartitionableScope scope(part);
    Array p = random::permutation(random::key(0), 100);
    EXPECT_EQ(p.dtype(), int32);
    std::vector<int32_t> v = p.to_vector<int32_t>();
    std::vector<int32_t> sorted = v;
    std::sort(sorted.begin(), sorted.end());
    std::vector<int32_t> want(100);
    std::iota(want.begin(), want.end(), 0);
    EXPECT_EQ(sorted, want);
    EXPECT_NE(v, want);  // unlikely to stay sorted
  }
  // Rows of a matrix move together; independent shuffles each column.
  Array x = jnp::arange(12).reshape({4, 3});
  Array px = random::permutation(random::key(1), x);
  const std::vector<int32_t> pv = px.to_vector<int32_t>();
  for (int r = 0; r < 4; ++r) {
    EXPECT_EQ(pv[static_cast<size_t>(3 * r)] % 3, 0);
    EXPECT_EQ(pv[static_cast<size_t>(3 * r + 1)], pv[static_cast<size_t>(3 * r)] + 1);
  }
  Array ind = random::permutation(random::key(1), x, 0, /*independent=*/true);
  EXPECT_EQ(ind.shape(), (Shape{4, 3}));
  EXPECT_EQ(jnp::sum(ind).item<int64_t>(), 66);
  // A permutation of one element is the identity (zero sort rounds, as in JAX).
  EXPECT_EQ(random::permutation(random::key(1), 1).to_vector<int32_t>(), std::vector<int32_t>{0});
}

TEST(RandomTest, BadInputs) {
  try {
    random::split(jnp::zeros({2}), 2);
    FAIL() << "expected TypeError";
  } catch (const TypeError& e) {
    EXPECT_NE(std::string(e.what()).find("split"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("f32[2]"), std::string::npos) << e.what();
  }
  try {
    random::uniform(random::key(0), {2}, int32);
    FAIL() << "expected ValueError";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("uniform"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("int32"), std::string::npos) << e.what();
  }
  EXPECT_THROW(random::bits(random::key(0), {2}, int8), ValueError);
  EXPECT_THROW(random::bernoulli(random::key(0), jnp::array({1, 2})), TypeError);
  EXPECT_THROW(random::uniform(random::key(0), {3}, float32, jnp::zeros({4})), ShapeError);
  EXPECT_THROW(random::permutation(random::key(0), jnp::array(1.5f)), TypeError);
  EXPECT_EQ(random::uniform(random::key(0)).item<float>(), 0.947667f);
}

}  // namespace
}  // namespace jx::random_test
