// Random primitives: threefry2x32 and random_bits. The cipher is plain uint32 arithmetic
// (add, rotate, xor) in simple loops that GCC vectorizes; random_bits generates its counters
// inline instead of materializing JAX's iota arrays, but produces the same bits.
#include "jx/lax/random_ops.h"

#include <atomic>
#include <bit>
#include <cstring>
#include <vector>

#include "jx/lax/kernels/dispatch.h"
#include "jx/lax/op_util.h"
#include "jx/lax/primitives.h"
#include "jx/lax/rule_util.h"

namespace jx {

namespace {
std::atomic<bool> g_threefry_partitionable{true};
}  // namespace

bool threefry_partitionable() { return g_threefry_partitionable.load(std::memory_order_relaxed); }
void set_threefry_partitionable(bool enabled) { g_threefry_partitionable.store(enabled, std::memory_order_relaxed); }

namespace lax {

using internal::BindOp;

std::pair<Array, Array> threefry2x32(const Array& k1, const Array& k2, const Array& x1, const Array& x2) {
  const Array in[] = {k1, k2, x1, x2};
  Arrays out = BindOp(kThreefry2x32, in);
  return {out[0], out[1]};
}

Array random_bits(const Array& key, int bit_width, const Shape& shape, bool partitionable) {
  const Array in[] = {key};
  return BindOp(kRandomBits, in,
                ParamMap{{"bit_width", int64_t{bit_width}}, {"shape", shape}, {"partitionable", partitionable}})[0];
}

Array random_bits(const Array& key, int bit_width, const Shape& shape) {
  return random_bits(key, bit_width, shape, threefry_partitionable());
}

namespace internal {
namespace {

// Threefry is ~80 integer ops per block: worth splitting over threads early.
constexpr int64_t kRandomGrain = 1 << 13;

template <int R>
inline __attribute__((always_inline)) void Round(uint32_t& x0, uint32_t& x1) {
  x0 += x1;
  x1 = (x1 << R) | (x1 >> (32 - R));
  x1 ^= x0;
}

// One Threefry-2x32 block with 20 rounds: Random123's rotation constants (13 15 26 6 /
// 17 29 16 24) and key schedule (third key word k0 ^ k1 ^ 0x1BD11BDA, injection every 4
// rounds with the injection counter added to the second word), as jax._src.prng.
inline __attribute__((always_inline)) void Threefry(uint32_t k0, uint32_t k1, uint32_t& io0, uint32_t& io1) {
  const uint32_t k2 = k0 ^ k1 ^ 0x1BD11BDAu;
  uint32_t x0 = io0 + k0, x1 = io1 + k1;
  Round<13>(x0, x1); Round<15>(x0, x1); Round<26>(x0, x1); Round<6>(x0, x1);
  x0 += k1; x1 += k2 + 1u;
  Round<17>(x0, x1); Round<29>(x0, x1); Round<16>(x0, x1); Round<24>(x0, x1);
  x0 += k2; x1 += k0 + 2u;
  Round<13>(x0, x1); Round<15>(x0, x1); Round<26>(x0, x1); Round<6>(x0, x1);
  x0 += k0; x1 += k1 + 3u;
  Round<17>(x0, x1); Round<29>(x0, x1); Round<16>(x0, x1); Round<24>(x0, x1);
  x0 += k1; x1 += k2 + 4u;
  Round<13>(x0, x1); Round<15>(x0, x1); Round<26>(x0, x1); Round<6>(x0, x1);
  x0 += k2; x1 += k0 + 5u;
  io0 = x0;
  io1 = x1;
}

// ---- threefry2x32 ----

Avals ThreefryAbstractEval(InAvals in, const ParamMap&) {
  constexpr std::string_view kOp = "threefry2x32";
  CheckArity(kOp, in, 4);
  static constexpr const char* kNames[] = {"k1", "k2", "x1", "x2"};
  const Shape* shape = nullptr;
  for (size_t i = 0; i < 4; ++i) {
    if (in[i]->dtype != DType::kUInt32) {
      ThrowOpError<TypeError>(kOp, "arguments must have uint32 type, got ", AvalsToString(in), " (", kNames[i],
                              " is ", in[i]->str(), ")");
    }
    if (in[i]->ndim() == 0) continue;
    if (shape == nullptr) {
      shape = &in[i]->shape;
    } else if (in[i]->shape != *shape) {
      ThrowOpError<ShapeError>(kOp, "arguments must be 0-d or share one shape, got ", AvalsToString(in), " (",
                               kNames[i], " is ", in[i]->str(), ")");
    }
  }
  const ShapedArray out{shape ? *shape : Shape{}, DType::kUInt32, false};
  return {out, out};
}

Arrays ThreefryImpl(absl::Span<const Array> in, const ParamMap&, absl::Span<const ShapedArray> out_avals) {
  Array y0 = Array::Empty(out_avals[0]);
  Array y1 = Array::Empty(out_avals[1]);
  const int64_t n = y0.size();
  if (n == 0) return {y0, y1};
  uint32_t* o0 = kernels::MutableData<uint32_t>(y0);
  uint32_t* o1 = kernels::MutableData<uint32_t>(y1);
  const uint32_t* p[4];
  for (int i = 0; i < 4; ++i) p[i] = kernels::Data<uint32_t>(in[i]);
  const bool scalar_keys = in[0].ndim() == 0 && in[1].ndim() == 0;
  const bool full_counts = in[2].size() == n && in[3].size() == n;
  if (scalar_keys && full_counts) {
    const uint32_t k0 = p[0][0], k1 = p[1][0];
    const uint32_t* __restrict x0 = p[2];
    const uint32_t* __restrict x1 = p[3];
    kernels::ForChunks(n, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) {
        uint32_t a = x0[i], c = x1[i];
        Threefry(k0, k1, a, c);
        o0[i] = a;
        o1[i] = c;
      }
    }, kRandomGrain);
    return {y0, y1};
  }
  // General case: any input may be 0-d; stride 0 repeats it.
  int64_t stride[4];
  for (int i = 0; i < 4; ++i) stride[i] = in[i].size() == n ? 1 : 0;
  kernels::ForChunks(n, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      uint32_t a = p[2][i * stride[2]], c = p[3][i * stride[3]];
      Threefry(p[0][i * stride[0]], p[1][i * stride[1]], a, c);
      o0[i] = a;
      o1[i] = c;
    }
  }, kRandomGrain);
  return {y0, y1};
}

// ---- random_bits ----

DType UIntOfWidth(int64_t bits) {
  switch (bits) {
    case 8: return DType::kUInt8;
    case 16: return DType::kUInt16;
    case 32: return DType::kUInt32;
    default: return DType::kUInt64;
  }
}

Avals RandomBitsAbstractEval(InAvals in, const ParamMap& params) {
  constexpr std::string_view kOp = "random_bits";
  CheckArity(kOp, in, 1);
  const ShapedArray& key = *in[0];
  if (key.dtype != DType::kUInt32 || key.ndim() < 1 || key.shape.back() != 2) {
    ThrowOpError<TypeError>(kOp, "expects a threefry key of type u32[..., 2], got ", key.str());
  }
  const int64_t bit_width = params.GetInt("bit_width");
  if (bit_width != 8 && bit_width != 16 && bit_width != 32 && bit_width != 64) {
    ThrowOpError<ValueError>(kOp, "requires 8-, 16-, 32- or 64-bit field width, got bit_width=", bit_width,
                             " (key ", key.str(), ")");
  }
  const Shape& shape = params.GetInts("shape");
  for (int64_t d : shape) {
    if (d < 0) ThrowOpError<ShapeError>(kOp, "shape must be nonnegative, got ", ShapeToString(shape), " (key ", key.str(), ")");
  }
  Shape out_shape(key.shape.begin(), key.shape.end() - 1);
  out_shape.insert(out_shape.end(), shape.begin(), shape.end());
  if (!params.GetBool("partitionable")) {
    // The original scheme counts 32-bit words of one iota (JAX splits the key beyond that).
    const int64_t words = (bit_width * NumElements(shape) + 31) / 32;
    if (words >= int64_t{0xFFFFFFFF}) {
      ThrowOpError<NotImplementedError>(kOp, "more than 2^32 - 1 words of random bits per key (shape ",
                                        ShapeToString(shape), ", bit_width ", bit_width,
                                        ") with the non-partitionable scheme");
    }
  }
  return {ShapedArray{std::move(out_shape), UIntOfWidth(bit_width), false}};
}

// Partitionable scheme: element i hashes the counter (i >> 32, i & 0xffffffff); 64-bit
// outputs join the two words, narrower ones take (low bits of) their xor.
template <typename U>
void PartitionableBits(uint32_t k0, uint32_t k1, int64_t size, U* __restrict out) {
  kernels::ForChunks(size, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      uint32_t hi = static_cast<uint32_t>(static_cast<uint64_t>(i) >> 32);
      uint32_t lo = static_cast<uint32_t>(i);
      Threefry(k0, k1, hi, lo);
      if constexpr (sizeof(U) == 8) {
        out[i] = (static_cast<uint64_t>(hi) << 32) | lo;
      } else {
        out[i] = static_cast<U>(hi ^ lo);
      }
    }
  }, kRandomGrain);
}

// Original scheme: n = ceil(bits / 32) words from threefry_2x32(key, iota(n)), which hashes
// the counter pairs (i, half + i) of the iota split in halves (an odd n pads one 0 counter)
// and writes the two results back to positions i and half + i.
void OriginalWords(uint32_t k0, uint32_t k1, int64_t n, uint32_t* __restrict words) {
  const int64_t half = (n + 1) / 2;
  const int64_t pairs = n / 2;
  kernels::ForChunks(pairs, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      uint32_t a = static_cast<uint32_t>(i), c = static_cast<uint32_t>(half + i);
      Threefry(k0, k1, a, c);
      words[i] = a;
      words[half + i] = c;
    }
  }, kRandomGrain);
  if (n % 2 == 1) {
    uint32_t a = static_cast<uint32_t>(half - 1), c = 0;
    Threefry(k0, k1, a, c);
    words[half - 1] = a;
  }
}

void OriginalBits(uint32_t k0, uint32_t k1, int bit_width, int64_t size, void* out) {
  static_assert(std::endian::native == std::endian::little, "8/16-bit random bits are a little-endian view");
  const int64_t n = (bit_width * size + 31) / 32;
  if (bit_width == 32) {
    OriginalWords(k0, k1, n, static_cast<uint32_t*>(out));
    return;
  }
  std::vector<uint32_t> words(static_cast<size_t>(n));
  OriginalWords(k0, k1, n, words.data());
  if (bit_width == 64) {
    // The first half of the words are the high halves, the second half the low halves.
    uint64_t* o = static_cast<uint64_t*>(out);
    for (int64_t j = 0; j < size; ++j) o[j] = (static_cast<uint64_t>(words[j]) << 32) | words[size + j];
  } else {
    // bits.view(uint8/uint16)[:size] of the little-endian words.
    std::memcpy(out, words.data(), static_cast<size_t>(size * bit_width / 8));
  }
}

Arrays RandomBitsImpl(absl::Span<const Array> in, const ParamMap& params, absl::Span<const ShapedArray> out_avals) {
  Array out = Array::Empty(out_avals[0]);
  const int bit_width = static_cast<int>(params.GetInt("bit_width"));
  const bool partitionable = params.GetBool("partitionable");
  const int64_t size = NumElements(params.GetInts("shape"));
  const int64_t num_keys = in[0].size() / 2;
  const uint32_t* keys = kernels::Data<uint32_t>(in[0]);
  char* base = static_cast<char*>(out.mutable_data());
  const int64_t bytes_per_key = size * bit_width / 8;
  for (int64_t k = 0; k < num_keys && size > 0; ++k) {
    const uint32_t k0 = keys[2 * k], k1 = keys[2 * k + 1];
    void* dst = base + k * bytes_per_key;
    if (!partitionable) {
      OriginalBits(k0, k1, bit_width, size, dst);
      continue;
    }
    switch (bit_width) {
      case 8: PartitionableBits(k0, k1, size, static_cast<uint8_t*>(dst)); break;
      case 16: PartitionableBits(k0, k1, size, static_cast<uint16_t*>(dst)); break;
      case 32: PartitionableBits(k0, k1, size, static_cast<uint32_t*>(dst)); break;
      default: PartitionableBits(k0, k1, size, static_cast<uint64_t*>(dst)); break;
    }
  }
  return {out};
}

// ---- transformation rules ----

// Keys and bits are integers: no tangent space, so every output tangent is a symbolic zero.
JvpRule IntegerOutputsJvp(Primitive p) {
  return [p](absl::Span<const Array> primals, absl::Span<const Array>, const ParamMap& params) {
    Arrays outs = BindOp(p, primals, params);
    return JvpResult{outs, Arrays(outs.size())};
  };
}

// random_bits maps over leading key dims already: the vmapped axis becomes one more of them.
BatchResult RandomBitsBatch(absl::Span<const Array> args, absl::Span<const int64_t> dims, int64_t n,
                            const ParamMap& params) {
  const Array keys = MoveBatchToFront(args[0], dims[0], n);
  return BatchResult{BindOp(kRandomBits, absl::MakeConstSpan(&keys, 1), params), {0}};
}

}  // namespace

void RegisterRandomOps(Registry& r) {
  const std::string not_linear = "not linear: its outputs are integer bits with no tangent space";
  PrimitiveRules& tf = r.Define(kThreefry2x32);
  tf.abstract_eval = ThreefryAbstractEval;
  tf.impl = ThreefryImpl;
  tf.jvp = IntegerOutputsJvp(kThreefry2x32);
  tf.unsupported["transpose"] = not_linear;
  tf.batch = BatchElementwise(kThreefry2x32);
  PrimitiveRules& rb = r.Define(kRandomBits);
  rb.abstract_eval = RandomBitsAbstractEval;
  rb.impl = RandomBitsImpl;
  rb.jvp = IntegerOutputsJvp(kRandomBits);
  rb.unsupported["transpose"] = not_linear;
  rb.batch = RandomBitsBatch;
}

}  // namespace internal
}  // namespace lax
}  // namespace jx
