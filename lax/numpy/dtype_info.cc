#include "jx/lax/numpy/dtype_info.h"

#include <cmath>

#include "jx/core/errors.h"

namespace jx::numpy {
namespace {

// IEEE-style binary formats: bits, explicit mantissa bits, exponent bits.
struct FloatFormat {
  int bits, nmant, nexp;
};

FloatFormat FormatOf(DType dtype) {
  switch (dtype) {
    case DType::kFloat16: return {16, 10, 5};
    case DType::kBFloat16: return {16, 7, 8};
    case DType::kFloat32: return {32, 23, 8};
    case DType::kFloat64: return {64, 52, 11};
    default: ThrowOpError<TypeError>("finfo", "data type ", dtype_name(dtype), " not inexact");
  }
}

}  // namespace

finfo::finfo(DType d) : dtype(d) {
  const FloatFormat f = FormatOf(d);
  bits = f.bits;
  nmant = f.nmant;
  nexp = f.nexp;
  const int bias = (1 << (f.nexp - 1)) - 1;
  minexp = 1 - bias;
  maxexp = bias + 1;
  eps = std::ldexp(1.0, -nmant);
  epsneg = std::ldexp(1.0, -nmant - 1);
  // (2 - eps) * 2**(maxexp - 1): all mantissa bits set under the largest finite exponent.
  max = std::ldexp(2.0 - eps, maxexp - 1);
  min = -max;
  tiny = std::ldexp(1.0, minexp);
  smallest_normal = tiny;
  smallest_subnormal = std::ldexp(1.0, minexp - nmant);
  precision = static_cast<int>(std::floor(-std::log10(eps)));
  resolution = 1.0 / std::pow(10.0, precision);  // correctly rounded, as the literal 1e-p
}

iinfo::iinfo(DType d) : dtype(d) {
  if (!IsInteger(d)) ThrowOpError<TypeError>("iinfo", "Invalid integer data type ", dtype_name(d), ".");
  bits = static_cast<int>(ItemSize(d) * 8);
  if (IsSignedInt(d)) {
    max = (uint64_t{1} << (bits - 1)) - 1;
    min = -static_cast<int64_t>(max) - 1;
  } else {
    max = bits == 64 ? ~uint64_t{0} : (uint64_t{1} << bits) - 1;
    min = 0;
  }
}

}  // namespace jx::numpy
