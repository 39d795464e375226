// The traps a JAX user falls into when porting line by line, closed: scan's options are
// named (a bare `3` or `true` does not compile), split(key) destructures into two keys, and
// the recommended jrandom alias lives beside the C library's random(). The cases that must not
// compile are also checked as real compiler runs (tests/compile_fail, wired in
// tests/CMakeLists.txt).
#include <cstdlib>  // ::random(), the name a `namespace random = jx::random;` alias clashes with
#include <tuple>
#include <type_traits>
#include <utility>

#include <gtest/gtest.h>
#include <jx/jx.h>

namespace jrandom = jx::random;  // the recommended alias (JAX's `from jax import random`)

namespace jx::no_silent_traps_test {
namespace {

namespace jnp = jx::numpy;

Array F64(std::vector<double> v) { return jnp::array(v).astype(float64); }

struct CumSum {
  std::pair<Array, Array> operator()(const Array& carry, const Array& x) const {
    Array s = carry + x;
    return {s, s};
  }
};

// What the fourth argument of lax::scan accepts: named options only.
template <typename Options>
concept ScanAcceptsAsOptions = requires(Options o) { lax::scan(CumSum{}, Array(), Array(), o); };
static_assert(ScanAcceptsAsOptions<lax::ScanOptions>);
static_assert(!ScanAcceptsAsOptions<int>, "lax::scan(f, init, xs, 3) must not compile (3 is not reverse=true)");
static_assert(!ScanAcceptsAsOptions<bool>, "lax::scan(f, init, xs, true) must not compile: write {.reverse = true}");

// The jax.lax.scan documentation (https://docs.jax.dev/en/latest/_autosummary/jax.lax.scan.html)
// defines scan by its Python semantics:
//   def scan(f, init, xs, length=None):
//     carry = init; ys = []
//     for x in xs: carry, y = f(carry, x); ys.append(y)
//     return carry, np.stack(ys)
// with reverse=True running the loop over reversed(xs) and returning ys in xs's order.
TEST(ScanOptionsTest, NamedLengthReverseUnrollFollowTheDocumentedSemantics) {
  Array xs = F64({1, 2, 3, 4});
  auto [total, partial] = lax::scan(CumSum{}, jnp::zeros({}, float64), xs);
  EXPECT_EQ(total.item<double>(), 10.0);
  EXPECT_EQ(partial.to_vector<double>(), (std::vector<double>{1, 3, 6, 10}));

  auto [rtotal, rpartial] = lax::scan(CumSum{}, jnp::zeros({}, float64), xs, {.length = 4, .reverse = true});
  EXPECT_EQ(rtotal.item<double>(), 10.0);
  EXPECT_EQ(rpartial.to_vector<double>(), (std::vector<double>{10, 9, 7, 4}));

  // unroll is a performance hint: the values do not change.
  auto [utotal, upartial] = lax::scan(CumSum{}, jnp::zeros({}, float64), xs, {.unroll = 2});
  EXPECT_EQ(upartial.to_vector<double>(), (std::vector<double>{1, 3, 6, 10}));

  // A length that disagrees with xs, or an unroll below 1, is an error naming the option.
  EXPECT_THROW(lax::scan(CumSum{}, jnp::zeros({}, float64), xs, {.length = 3}), ValueError);
  try {
    lax::scan(CumSum{}, jnp::zeros({}, float64), xs, {.unroll = 0});
    FAIL() << "expected ValueError";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("unroll"), std::string::npos) << e.what();
  }
}

// jax.random.split (https://docs.jax.dev/en/latest/_autosummary/jax.random.split.html) and the
// jax.random module docs: `key, subkey = jax.random.split(key)`; split(key, num) gives num keys.
TEST(RandomSplitTest, SplitOfOneKeyDestructuresIntoTwoKeys) {
  Array key = jrandom::key(0);
  auto [k1, k2] = jrandom::split(key);
  static_assert(std::is_same_v<decltype(k1), Array>);
  EXPECT_EQ(k1.shape(), Shape{2});
  EXPECT_EQ(k2.dtype(), uint32);
  Array keys = jrandom::split(key, 2);  // still one u32[2, 2] array of keys
  EXPECT_EQ(keys.shape(), (Shape{2, 2}));
  EXPECT_EQ(k1.to_vector<uint32_t>(), keys[0].to_vector<uint32_t>());
  EXPECT_EQ(k2.to_vector<uint32_t>(), keys[1].to_vector<uint32_t>());
  // jax.random.uniform(jax.random.split(jax.random.key(0))[1]) = 0.00729382 (the value
  // tests/lax/random/random_test.cc checks against JAX).
  EXPECT_NEAR(jrandom::uniform(k2).item<double>(), 0.00729382, 5e-9);
  // The pair is still the u32[2, 2] array JAX returns.
  Array both = jrandom::split(key);
  EXPECT_EQ(both.shape(), (Shape{2, 2}));
  EXPECT_EQ(jrandom::split(key, 3).shape(), (Shape{3, 2}));
  // jax.vmap(jax.random.split)(keys): a function may return the pair; it is one Array leaf.
  Array keys3 = jrandom::split(key, 3);
  Array split_each = vmap([](const Array& k) { return jrandom::split(k); })(keys3);
  EXPECT_EQ(split_each.shape(), (Shape{3, 2, 2}));
  EXPECT_EQ(split_each[1].to_vector<uint32_t>(), jrandom::split(keys3[1], 2).to_vector<uint32_t>());
}

// The alias and the C library's random() coexist in one translation unit (this one).
TEST(RandomSplitTest, JrandomAliasLivesBesideCRandom) {
  const long r = ::random();  // the C function, still reachable
  EXPECT_GE(r, 0);
  EXPECT_EQ(jrandom::key(0).shape(), Shape{2});
}

}  // namespace
}  // namespace jx::no_silent_traps_test
