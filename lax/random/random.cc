// jx::random on the threefry2x32 / random_bits primitives, following jax/_src/random.py and
// jax/_src/prng.py step by step (same constants, same operation order) so values match JAX.
#include "jx/lax/random/random.h"

#include "jx/lax/random/random_internal.h"

#include <cfloat>
#include <cmath>
#include <limits>

#include "jx/core/errors.h"
#include "jx/lax/binary_ops.h"
#include "jx/lax/convert_ops.h"
#include "jx/lax/shape_ops.h"
#include "jx/lax/slicing_ops.h"
#include "jx/lax/sort_ops.h"
#include "jx/lax/stop_gradient.h"
#include "jx/lax/unary_ops.h"
#include "jx/lax/numpy/creation.h"
#include "jx/lax/numpy/manipulation.h"
#include "jx/lax/numpy/math.h"
#include "jx/lax/numpy/reductions.h"

namespace jx::random {
namespace jnp = ::jx::numpy;
using internal::CheckFloat;
using internal::CheckKey;
using internal::CheckShape;
using internal::Finfo;
using internal::FloatInfo;

namespace internal {

void CheckKey(std::string_view op, const Array& key) {
  if (key.dtype() != uint32 || key.shape() != Shape{2}) {
    ThrowOpError<TypeError>(op, "expects a single PRNG key of type u32[2] (from jx::random::key or split), got ",
                            key.aval().str());
  }
}

void CheckFloat(std::string_view op, DType dtype) {
  if (!IsFloating(dtype)) {
    ThrowOpError<ValueError>(op, "dtype argument to `", op, "` must be a float dtype, got ", dtype_name(dtype));
  }
}

void CheckShape(std::string_view op, const Shape& shape, const Shape& param) {
  if (jnp::broadcast_shapes(shape, param, op) != shape) {
    ThrowOpError<ShapeError>(op, "parameter shapes must be broadcast-compatible with shape argument ",
                             ShapeToString(shape), ", got parameter shape ", ShapeToString(param));
  }
}

Array KeyAt(const Array& keys, int64_t i) { return lax::reshape(lax::slice(keys, {i, 0}, {i + 1, 2}), {2}); }

FloatInfo Finfo(DType d) {
  switch (d) {
    case DType::kFloat16: return {16, 10, 0x3C00u, 6.103515625e-05, -1.0 + 0x1p-11, 0x1p-10};
    case DType::kBFloat16: return {16, 7, 0x3F80u, 0x1p-126, -1.0 + 0x1p-8, 0x1p-7};
    case DType::kFloat32:
      return {32, 23, 0x3F800000u, FLT_MIN, static_cast<double>(std::nextafter(-1.0f, 0.0f)), 0x1p-23};
    default: return {64, 52, 0x3FF0000000000000ull, DBL_MIN, std::nextafter(-1.0, 0.0), 0x1p-52};
  }
}

}  // namespace internal

namespace {

// The key words as 0-d arrays.
std::pair<Array, Array> KeyWords(const Array& key) {
  return {lax::reshape(lax::slice(key, {0}, {1}), {}), lax::reshape(lax::slice(key, {1}, {2}), {})};
}

Array U32Scalar(int64_t v) { return jnp::internal::ScalarOf(v, uint32); }

DType UIntOfBits(int bits) {
  switch (bits) {
    case 8: return uint8;
    case 16: return uint16;
    case 32: return uint32;
    default: return uint64;
  }
}

}  // namespace

Array key(int64_t seed) {
  const uint64_t s = static_cast<uint64_t>(seed);
  const uint32_t words[2] = {static_cast<uint32_t>(s >> 32), static_cast<uint32_t>(s & 0xFFFFFFFFu)};
  return Array::FromData(words, Shape{2}, uint32);
}

Array key(const Array& seed) {
  if (seed.ndim() != 0 || !(IsInteger(seed.dtype()) || IsBool(seed.dtype()))) {
    ThrowOpError<TypeError>("key", "PRNG key seed must be an integer scalar; got ", seed.aval().str());
  }
  Array hi, lo;
  if (ItemSize(seed.dtype()) == 8) {
    Array bits64 = lax::bitcast_convert_type(seed, uint64);
    hi = lax::convert_element_type(lax::shift_right_logical(bits64, jnp::internal::ScalarOf(int64_t{32}, uint64)), uint32);
    lo = lax::convert_element_type(lax::bitwise_and(bits64, jnp::internal::ScalarOf(int64_t{0xFFFFFFFF}, uint64)), uint32);
  } else {
    // 32-bit and narrower seeds: shifting right by 32 leaves nothing; the low word is the
    // seed's two's-complement bits.
    hi = U32Scalar(0);
    lo = lax::convert_element_type(seed, uint32);
  }
  return lax::concatenate({lax::reshape(hi, {1}), lax::reshape(lo, {1})}, 0);
}

Array PRNGKey(int64_t seed) { return key(seed); }
Array key_data(const Array& keys) { return keys; }

Array threefry_2x32(const Array& key, const Array& count) {
  CheckKey("threefry_2x32", key);
  if (count.dtype() != uint32) {
    ThrowOpError<TypeError>("threefry_2x32", "requires uint32 arguments, got key ", key.aval().str(), " and count ",
                            count.aval().str());
  }
  auto [k1, k2] = KeyWords(key);
  Array flat = lax::reshape(count, {count.size()});
  const bool odd = count.size() % 2 == 1;
  if (odd) flat = lax::concatenate({flat, lax::reshape(U32Scalar(0), {1})}, 0);
  const int64_t half = flat.size() / 2;
  Array x1 = lax::slice(flat, {0}, {half});
  Array x2 = lax::slice(flat, {half}, {2 * half});
  auto [y1, y2] = lax::threefry2x32(k1, k2, x1, x2);
  Array out = lax::concatenate({y1, y2}, 0);
  if (odd) out = lax::slice(out, {0}, {count.size()});
  return lax::reshape(out, count.shape());
}

Array split(const Array& key, const Shape& shape) {
  CheckKey("split", key);
  for (int64_t d : shape) {
    if (d < 0) ThrowOpError<ValueError>("split", "shape must be nonnegative, got ", ShapeToString(shape));
  }
  const int64_t num = NumElements(shape);
  Shape out_shape = shape;
  out_shape.push_back(2);
  if (!threefry_partitionable()) {
    // _threefry_split_original: hash iota(2 num) and pair the results up.
    return lax::reshape(threefry_2x32(key, lax::iota(uint32, 2 * num)), out_shape);
  }
  // _threefry_split_foldlike: key i hashes the 64-bit counter i (num < 2^32 here, so the high
  // word is 0).
  if (num > int64_t{0xFFFFFFFF}) ThrowOpError<NotImplementedError>("split", "more than 2^32 keys (shape ", ShapeToString(shape), ")");
  auto [k1, k2] = KeyWords(key);
  auto [b1, b2] = lax::threefry2x32(k1, k2, jnp::zeros({num}, uint32), lax::iota(uint32, num));
  return lax::reshape(lax::concatenate({lax::reshape(b1, {num, 1}), lax::reshape(b2, {num, 1})}, 1), out_shape);
}

KeyPair split(const Array& key) { return KeyPair(split(key, Shape{2})); }

Array split(const Array& key, int64_t num) {
  if (num < 0) ThrowOpError<ValueError>("split", "num must be nonnegative, got ", num, " (key ", key.aval().str(), ")");
  return split(key, Shape{num});
}

Array fold_in(const Array& key, uint32_t data) {
  CheckKey("fold_in", key);
  // threefry_2x32(key, threefry_seed(uint32 data)) with seed words (0, data).
  const uint32_t words[2] = {0u, data};
  return threefry_2x32(key, Array::FromData(words, Shape{2}, uint32));
}

Array fold_in(const Array& key, const Array& data) {
  CheckKey("fold_in", key);
  if (data.ndim() != 0 || !(IsInteger(data.dtype()) || IsBool(data.dtype()))) {
    ThrowOpError<TypeError>("fold_in", "data must be an integer scalar, got ", data.aval().str());
  }
  Array d = lax::reshape(lax::convert_element_type(data, uint32), {1});
  return threefry_2x32(key, lax::concatenate({lax::reshape(U32Scalar(0), {1}), d}, 0));
}

Array bits(const Array& key, const Shape& shape, DType dtype) {
  CheckKey("bits", key);
  if (!IsUnsignedInt(dtype)) {
    ThrowOpError<ValueError>("bits", "dtype argument must be an unsigned int dtype, got ", dtype_name(dtype));
  }
  return lax::random_bits(key, static_cast<int>(ItemSize(dtype) * 8), shape);
}

Array uniform(const Array& key, const Shape& shape, DType dtype, const numpy::ArrayLike& minval,
              const numpy::ArrayLike& maxval) {
  CheckKey("uniform", key);
  CheckFloat("uniform", dtype);
  Array lo = minval.as(dtype, false);
  Array hi = maxval.as(dtype, false);
  CheckShape("uniform", shape, lo.shape());
  CheckShape("uniform", shape, hi.shape());
  const FloatInfo fi = Finfo(dtype);
  // Random mantissa bits under the exponent of 1.0 give a float in [1, 2); subtract 1.
  const int rng_bits = fi.nmant < 8 ? 8 : fi.nbits;
  const DType uint_dtype = UIntOfBits(fi.nbits);
  Array b = lax::random_bits(key, rng_bits, shape);
  if (rng_bits != fi.nbits) b = lax::convert_element_type(b, uint_dtype);
  Array shift = jnp::full(shape, jnp::ArrayLike(int64_t{rng_bits - fi.nmant}), uint_dtype);
  Array one_bits = jnp::full(shape, jnp::ArrayLike(fi.one_bits), uint_dtype);
  Array float_bits = lax::bitwise_or(lax::shift_right_logical(b, shift), one_bits);
  Array floats = lax::sub(lax::bitcast_convert_type(float_bits, dtype), jnp::ones(shape, dtype));
  // With the default [0, 1) bounds, max(0, floats * 1 + 0) is exactly floats: skip the passes.
  if (minval.is_scalar() && maxval.is_scalar() && minval.float_value() == 0.0 && maxval.float_value() == 1.0 &&
      !std::signbit(minval.float_value())) {
    return floats;
  }
  return jnp::maximum(lo, jnp::add(jnp::multiply(floats, jnp::subtract(hi, lo)), lo));
}

Array normal(const Array& key, const Shape& shape, DType dtype) {
  CheckKey("normal", key);
  CheckFloat("normal", dtype);
  const FloatInfo fi = Finfo(dtype);
  Array u = uniform(key, shape, dtype, fi.neg_one_up, 1.0);
  return jnp::multiply(jnp::internal::ScalarOf(std::sqrt(2.0), dtype), lax::erf_inv(u));
}

Array truncated_normal(const Array& key, const numpy::ArrayLike& lower, const numpy::ArrayLike& upper) {
  return truncated_normal(key, lower, upper, jnp::broadcast_shapes(lower.shape(), upper.shape(), "truncated_normal"));
}

Array truncated_normal(const Array& key, const numpy::ArrayLike& lower, const numpy::ArrayLike& upper,
                       const Shape& s, DType dtype) {
  CheckKey("truncated_normal", key);
  CheckFloat("truncated_normal", dtype);
  Array lo = lower.as(dtype, false);
  Array hi = upper.as(dtype, false);
  CheckShape("truncated_normal", s, lo.shape());
  CheckShape("truncated_normal", s, hi.shape());
  Array sqrt2 = jnp::internal::ScalarOf(std::sqrt(2.0), dtype);
  Array a = lax::erf(jnp::true_divide(lo, sqrt2));
  Array b = lax::erf(jnp::true_divide(hi, sqrt2));
  Array u = uniform(key, s, dtype, a, b);
  Array out = jnp::multiply(sqrt2, lax::erf_inv(u));
  // Rounding (or u == a) must not leave the open interval; the bounds get no gradient here.
  const double inf = std::numeric_limits<double>::infinity();
  Array lo_in = lax::stop_gradient(lo), hi_in = lax::stop_gradient(hi);
  return jnp::clip(out, lax::nextafter(lo_in, jnp::full_like(lo_in, inf)),
                   lax::nextafter(hi_in, jnp::full_like(hi_in, -inf)));
}

namespace {

// randint with C++ integer bounds: the span and multiplier are host integers.
Array RandintScalar(const Array& key, const Shape& shape, int64_t minval, int64_t maxval, DType dtype) {
  const int nbits = static_cast<int>(ItemSize(dtype) * 8);
  const DType udtype = UIntOfBits(nbits);
  // The dtype's range, and the bounds clipped into it (JAX's _convert_and_clip_integer).
  int64_t dmin, dmax;
  bool maxval_out_of_range;
  if (IsSignedInt(dtype)) {
    dmax = nbits == 64 ? std::numeric_limits<int64_t>::max() : (int64_t{1} << (nbits - 1)) - 1;
    dmin = -dmax - 1;
    maxval_out_of_range = maxval > dmax;
  } else {
    dmin = 0;
    dmax = nbits == 64 ? std::numeric_limits<int64_t>::max() : (int64_t{1} << nbits) - 1;
    maxval_out_of_range = nbits < 64 && maxval > dmax;
  }
  const int64_t lo = std::clamp(minval, dmin, dmax);
  const int64_t hi = std::clamp(maxval, dmin, dmax);
  const uint64_t mask = nbits == 64 ? ~uint64_t{0} : (uint64_t{1} << nbits) - 1;
  // span = maxval - minval in the unsigned type (1 when empty, one more past the top).
  uint64_t span = (static_cast<uint64_t>(hi) - static_cast<uint64_t>(lo)) & mask;
  if (hi <= lo) span = 1;
  if (maxval_out_of_range && hi > lo) span = (span + 1) & mask;

  Array keys = split(key, 2);
  Array higher = lax::random_bits(lax::reshape(lax::slice(keys, {0, 0}, {1, 2}), {2}), nbits, shape);
  Array lower = lax::random_bits(lax::reshape(lax::slice(keys, {1, 0}, {2, 2}), {2}), nbits, shape);
  Array offset;
  if (span == 0) {
    // The span wrapped to 2^nbits: every value is in range and the remainders are no-ops.
    offset = lower;
  } else {
    // (higher % span) * (2^nbits % span) + lower % span, mod span, in wrapping unsigned math.
    uint64_t mult = (uint64_t{1} << (nbits / 2)) % span;
    mult = ((mult * mult) & mask) % span;
    Array s = jnp::full(shape, jnp::ArrayLike(span), udtype);
    Array m = jnp::full(shape, jnp::ArrayLike(mult), udtype);
    offset = lax::rem(lax::add(lax::mul(lax::rem(higher, s), m), lax::rem(lower, s)), s);
  }
  return lax::add(jnp::full(shape, jnp::ArrayLike(lo), dtype), lax::convert_element_type(offset, dtype));
}

using Int128 = __int128;

Int128 IntMin(DType d) { return IsSignedInt(d) ? -(Int128{1} << (ItemSize(d) * 8 - 1)) : 0; }
Int128 IntMax(DType d) {
  const int bits = static_cast<int>(ItemSize(d) * 8);
  return IsSignedInt(d) ? (Int128{1} << (bits - 1)) - 1 : (Int128{1} << bits) - 1;
}
// An integer constant of dtype d (v in d's range), through the two's-complement bits.
Array IntConst(Int128 v, DType d) { return jnp::internal::ScalarOf(static_cast<int64_t>(static_cast<uint64_t>(v)), d); }

// JAX's _convert_and_clip_integer: v clipped into dtype's range (in v's own dtype), converted.
Array ConvertAndClip(const Array& v, DType dtype) {
  const DType vd = v.dtype();
  Array lo = IntConst(std::max(IntMin(dtype), IntMin(vd)), vd);
  Array hi = IntConst(std::min(IntMax(dtype), IntMax(vd)), vd);
  return lax::convert_element_type(jnp::clip(v, lo, hi), dtype);
}

// randint with array bounds: jax/_src/random.py's _randint step by step, traced.
Array RandintArrays(const Array& key, const Shape& shape, Array minval, Array maxval, DType dtype) {
  if (!IsInteger(minval.dtype())) minval = lax::convert_element_type(minval, int32);
  if (!IsInteger(maxval.dtype())) maxval = lax::convert_element_type(maxval, int32);
  CheckShape("randint", shape, minval.shape());
  CheckShape("randint", shape, maxval.shape());
  const int nbits = static_cast<int>(ItemSize(dtype) * 8);
  const DType udtype = UIntOfBits(nbits);
  // Where maxval is past dtype's top (randint(key, s, 0, 256, uint8)).
  Array top = IntConst(std::min(IntMax(dtype), IntMax(maxval.dtype())), maxval.dtype());
  Array out_of_range = jnp::broadcast_to(jnp::greater(maxval, top), shape);
  Array lo = jnp::broadcast_to(ConvertAndClip(minval, dtype), shape);
  Array hi = jnp::broadcast_to(ConvertAndClip(maxval, dtype), shape);
  Array keys = split(key, 2);
  Array higher = lax::random_bits(internal::KeyAt(keys, 0), nbits, shape);
  Array lower = lax::random_bits(internal::KeyAt(keys, 1), nbits, shape);
  auto u = [&](int64_t v) { return jnp::full(shape, v, udtype); };
  // span = maxval - minval in wrapping unsigned arithmetic; 1 when empty; one more past the top.
  Array span = lax::sub(lax::convert_element_type(hi, udtype), lax::convert_element_type(lo, udtype));
  span = lax::select(jnp::less_equal(hi, lo), u(1), span);
  span = lax::select(jnp::logical_and(out_of_range, jnp::greater(hi, lo)), lax::add(span, u(1)), span);
  // A span that wrapped to 0 covers every value: the offset is the bits themselves (XLA's
  // x % 0 == x); elsewhere (higher % span) * (2^nbits % span) + lower % span, mod span.
  Array wrapped = lax::eq(span, u(0));
  Array safe = lax::select(wrapped, u(1), span);
  Array mult = lax::rem(u(int64_t{1} << (nbits / 2)), safe);
  mult = lax::rem(lax::mul(mult, mult), safe);
  Array offset = lax::rem(lax::add(lax::mul(lax::rem(higher, safe), mult), lax::rem(lower, safe)), safe);
  offset = lax::select(wrapped, lower, offset);
  return lax::add(lo, lax::convert_element_type(offset, dtype));
}

}  // namespace

Array randint(const Array& key, const Shape& shape, const numpy::ArrayLike& minval, const numpy::ArrayLike& maxval,
              DType dtype) {
  CheckKey("randint", key);
  if (!IsInteger(dtype)) ThrowOpError<TypeError>("randint", "only accepts integer dtypes, got ", dtype_name(dtype));
  if (minval.is_scalar() && maxval.is_scalar()) {
    // Float bounds truncate, as JAX's astype(int).
    auto host = [](const numpy::ArrayLike& v) {
      return v.is_integer_scalar() ? v.int_value() : static_cast<int64_t>(v.float_value());
    };
    return RandintScalar(key, shape, host(minval), host(maxval), dtype);
  }
  // A C++ integer bound next to an array bound keeps its full value as int64.
  auto arr = [](const numpy::ArrayLike& v) {
    if (v.is_array()) return v.array();
    if (v.is_integer_scalar()) return jnp::internal::ScalarOf(v.int_value(), int64);
    return v.to_array();
  };
  return RandintArrays(key, shape, arr(minval), arr(maxval), dtype);
}

Array bernoulli(const Array& key, const numpy::ArrayLike& p, std::optional<Shape> shape) {
  CheckKey("bernoulli", key);
  Array pa = p.is_array() ? p.array() : p.as(float32, false);
  if (!IsFloating(pa.dtype())) {
    ThrowOpError<TypeError>("bernoulli", "probability `p` must have a floating dtype, got ", pa.aval().str());
  }
  const Shape s = shape.value_or(pa.shape());
  CheckShape("bernoulli", s, pa.shape());
  return jnp::less(uniform(key, s, pa.dtype()), pa);
}

Array gumbel(const Array& key, const Shape& shape, DType dtype) {
  CheckKey("gumbel", key);
  CheckFloat("gumbel", dtype);
  Array u = uniform(key, shape, dtype, Finfo(dtype).tiny, 1.0);
  return jnp::negative(jnp::log(jnp::negative(jnp::log(u))));
}

Array exponential(const Array& key, const Shape& shape, DType dtype) {
  CheckKey("exponential", key);
  CheckFloat("exponential", dtype);
  return lax::neg(lax::log1p(lax::neg(uniform(key, shape, dtype))));
}

Array categorical(const Array& key, const Array& logits, int64_t axis, std::optional<Shape> shape) {
  CheckKey("categorical", key);
  const int64_t r = logits.ndim();
  if (r == 0) ThrowOpError<ValueError>("categorical", "logits must have at least one dimension, got ", logits.aval().str());
  CheckFloat("categorical", logits.dtype());
  const int64_t ax = CanonicalizeAxis(axis, r, "categorical");
  Shape batch = logits.shape();
  batch.erase(batch.begin() + ax);
  const Shape s = shape.value_or(batch);
  if (s.size() < batch.size()) {
    ThrowOpError<ShapeError>("categorical", "shape ", ShapeToString(s), " is shorter than the batch shape ",
                             ShapeToString(batch), " of logits ", logits.aval().str());
  }
  CheckShape("categorical", s, batch);
  const size_t prefix = s.size() - batch.size();
  // Gumbel-max: argmax(logits + gumbel noise) over the category axis.
  Shape noise_shape(s.begin(), s.end());
  noise_shape.insert(noise_shape.begin() + static_cast<std::ptrdiff_t>(prefix) + ax, logits.shape()[static_cast<size_t>(ax)]);
  std::vector<int64_t> lead(prefix);
  for (size_t i = 0; i < prefix; ++i) lead[i] = static_cast<int64_t>(i);
  Array noisy = jnp::add(gumbel(key, noise_shape, logits.dtype()), lax::expand_dims(logits, lead));
  return jnp::argmax(noisy, static_cast<int64_t>(prefix) + ax);
}

namespace {

// _shuffle: sort by fresh random 32-bit keys, ceil(3 ln(n) / ln(2^32 - 1)) times.
Array Shuffle(Array key, Array x, int64_t axis) {
  const double n = static_cast<double>(std::max<int64_t>(1, x.size()));
  const int rounds = static_cast<int>(std::ceil(3.0 * std::log(n) / std::log(4294967295.0)));
  for (int i = 0; i < rounds; ++i) {
    Array keys = split(key, 2);
    key = lax::reshape(lax::slice(keys, {0, 0}, {1, 2}), {2});
    Array subkey = lax::reshape(lax::slice(keys, {1, 0}, {2, 2}), {2});
    Array sort_keys = lax::random_bits(subkey, 32, x.shape());
    x = lax::sort({sort_keys, x}, axis, /*is_stable=*/true, /*num_keys=*/1)[1];
  }
  return x;
}

}  // namespace

Array permutation(const Array& key, int64_t n) {
  CheckKey("permutation", key);
  if (n < 0) ThrowOpError<ValueError>("permutation", "n must be nonnegative, got ", n);
  return Shuffle(key, jnp::arange(n), 0);
}

Array permutation(const Array& key, const Array& x, int64_t axis, bool independent) {
  CheckKey("permutation", key);
  if (x.ndim() == 0) {
    if (!IsInteger(x.dtype())) ThrowOpError<TypeError>("permutation", "x must be an integer or at least 1-dimensional, got ", x.aval().str());
    return permutation(key, x.item<int64_t>());
  }
  const int64_t ax = CanonicalizeAxis(axis, x.ndim(), "permutation");
  if (independent || x.ndim() == 1) return Shuffle(key, x, ax);
  Array ind = Shuffle(key, jnp::arange(x.shape()[static_cast<size_t>(ax)]), 0);
  return jnp::take(x, ind, ax);
}

}  // namespace jx::random
