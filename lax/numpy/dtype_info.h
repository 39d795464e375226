// jnp.finfo and jnp.iinfo: the machine limits of jx's float and integer dtypes, with NumPy's
// field names and values (https://numpy.org/doc/stable/reference/generated/numpy.finfo.html,
// numpy.iinfo.html), bfloat16 and float16 included as JAX's ml_dtypes define them.
//
//   jnp::finfo(jnp::float32).eps;          // 1.1920929e-07
//   jnp::finfo(jnp::bfloat16).max;         // 3.3895314e+38
//   jnp::iinfo(jnp::int8).min;             // -128
//   jnp::iinfo(jnp::uint32).max;           // 4294967295
#pragma once

#include <cstdint>

#include "jx/core/dtype.h"

namespace jx::numpy {

// Limits of a float dtype (TypeError for any other dtype, as NumPy's "not inexact"). Values
// are exact as doubles; cast them to the dtype for arithmetic in it.
struct finfo {
  explicit finfo(DType dtype);

  DType dtype;
  int bits;             // storage bits
  int nmant;            // explicit mantissa bits
  int nexp;             // exponent bits
  int minexp;           // smallest exponent of a normal number (tiny = 2**minexp)
  int maxexp;           // first exponent that overflows (max < 2**maxexp)
  int precision;        // decimal digits: floor(-log10(eps))
  double eps;           // 1.0's distance to the next larger float: 2**-nmant
  double epsneg;        // 1.0's distance to the next smaller float: 2**(-nmant-1)
  double max;           // largest finite value
  double min;           // -max
  double tiny;          // smallest positive normal number (= smallest_normal)
  double smallest_normal;
  double smallest_subnormal;
  double resolution;    // 10**-precision
};

// Limits of an integer dtype (TypeError for floats and bool, as NumPy's "Invalid integer data
// type"). max is unsigned so uint64's fits; min is 0 for unsigned types.
struct iinfo {
  explicit iinfo(DType dtype);

  DType dtype;
  int bits;
  int64_t min;
  uint64_t max;
};

}  // namespace jx::numpy
