// jnp.finfo / jnp.iinfo against NumPy's and ml_dtypes' printed limits
// (numpy.org/doc/stable/reference/generated/numpy.finfo.html, numpy.iinfo.html;
// jnp.finfo(jnp.bfloat16) in docs.jax.dev), and the jnp constants.
#include <cmath>
#include <limits>

#include <gtest/gtest.h>

#include <jx/jx.h>

namespace jx::dtype_info_test {
namespace {

namespace jnp = jx::numpy;

TEST(FinfoTest, MatchesNumpyAndMlDtypes) {
  const jnp::finfo f32(jnp::float32);
  EXPECT_EQ(f32.dtype, float32);
  EXPECT_EQ(f32.bits, 32);
  EXPECT_EQ(f32.eps, static_cast<double>(std::numeric_limits<float>::epsilon()));  // 1.1920929e-07
  EXPECT_EQ(f32.max, static_cast<double>(std::numeric_limits<float>::max()));      // 3.4028235e+38
  EXPECT_EQ(f32.min, -f32.max);
  EXPECT_EQ(f32.tiny, static_cast<double>(std::numeric_limits<float>::min()));     // 1.1754944e-38
  EXPECT_EQ(f32.smallest_normal, f32.tiny);
  EXPECT_EQ(f32.smallest_subnormal, static_cast<double>(std::numeric_limits<float>::denorm_min()));
  EXPECT_EQ(f32.resolution, 1e-06);
  EXPECT_EQ(f32.precision, 6);
  EXPECT_EQ(f32.nmant, 23);
  EXPECT_EQ(f32.epsneg, std::ldexp(1.0, -24));
  const jnp::finfo f64(jnp::float64);
  EXPECT_EQ(f64.eps, std::numeric_limits<double>::epsilon());
  EXPECT_EQ(f64.max, std::numeric_limits<double>::max());
  EXPECT_EQ(f64.tiny, std::numeric_limits<double>::min());
  EXPECT_EQ(f64.resolution, 1e-15);
  EXPECT_EQ(f64.bits, 64);
  // float16: eps 0.000977, max 65504, tiny 6.104e-05, resolution 0.001.
  const jnp::finfo f16(jnp::float16);
  EXPECT_EQ(f16.bits, 16);
  EXPECT_EQ(f16.eps, 0.0009765625);
  EXPECT_EQ(f16.max, 65504.0);
  EXPECT_EQ(f16.tiny, 6.103515625e-05);
  EXPECT_EQ(f16.smallest_subnormal, std::ldexp(1.0, -24));
  EXPECT_EQ(f16.resolution, 0.001);
  // bfloat16 (ml_dtypes): eps 0.0078125, max 3.38953e+38, tiny 1.17549e-38, resolution 0.01.
  const jnp::finfo bf16(jnp::bfloat16);
  EXPECT_EQ(bf16.bits, 16);
  EXPECT_EQ(bf16.eps, 0.0078125);
  EXPECT_EQ(bf16.max, 3.3895313892515355e+38);
  EXPECT_EQ(bf16.tiny, static_cast<double>(std::numeric_limits<float>::min()));
  EXPECT_EQ(bf16.resolution, 0.01);
  // The limits are representable: casting max to the dtype and back is exact.
  for (DType d : {float16, bfloat16, float32, float64}) {
    const jnp::finfo fi(d);
    EXPECT_EQ(jnp::array(fi.max).astype(d).item<double>(), fi.max) << dtype_name(d);
    EXPECT_EQ(jnp::array(fi.tiny).astype(d).item<double>(), fi.tiny) << dtype_name(d);
    EXPECT_TRUE(std::isinf((jnp::array(fi.max).astype(d) * 2.0).item<double>())) << dtype_name(d);
  }
  EXPECT_THROW(jnp::finfo(jnp::int32), TypeError);
}

TEST(IinfoTest, MatchesNumpy) {
  EXPECT_EQ(jnp::iinfo(jnp::int8).min, -128);
  EXPECT_EQ(jnp::iinfo(jnp::int8).max, 127u);
  EXPECT_EQ(jnp::iinfo(jnp::int16).min, -32768);
  EXPECT_EQ(jnp::iinfo(jnp::int32).max, 2147483647u);
  EXPECT_EQ(jnp::iinfo(jnp::int32).min, -2147483648LL);
  EXPECT_EQ(jnp::iinfo(jnp::int64).min, std::numeric_limits<int64_t>::min());
  EXPECT_EQ(jnp::iinfo(jnp::int64).max, 9223372036854775807u);
  EXPECT_EQ(jnp::iinfo(jnp::uint8).max, 255u);
  EXPECT_EQ(jnp::iinfo(jnp::uint16).max, 65535u);
  EXPECT_EQ(jnp::iinfo(jnp::uint32).max, 4294967295u);
  EXPECT_EQ(jnp::iinfo(jnp::uint64).max, 18446744073709551615u);
  EXPECT_EQ(jnp::iinfo(jnp::uint64).min, 0);
  EXPECT_EQ(jnp::iinfo(jnp::uint64).bits, 64);
  EXPECT_EQ(jnp::iinfo(jnp::int8).dtype, int8);
  EXPECT_THROW(jnp::iinfo(jnp::float32), TypeError);
  EXPECT_THROW(jnp::iinfo(jnp::bool_), TypeError);
}

TEST(ConstantsTest, NumpyValues) {
  // numpy.org/doc/stable/reference/constants.html.
  EXPECT_EQ(jnp::pi, 3.141592653589793);
  EXPECT_EQ(jnp::e, 2.718281828459045);
  EXPECT_EQ(jnp::euler_gamma, 0.5772156649015329);
  EXPECT_TRUE(std::isinf(jnp::inf) && jnp::inf > 0);
  EXPECT_TRUE(std::isnan(jnp::nan));
  // Weak in arithmetic: float32 stays float32.
  Array x = jnp::ones({2}) * jnp::pi;
  EXPECT_EQ(x.dtype(), float32);
  Array col = jnp::arange(3)[{jx::slice(), jnp::newaxis}];
  EXPECT_EQ(col.shape(), (Shape{3, 1}));
}

}  // namespace
}  // namespace jx::dtype_info_test
