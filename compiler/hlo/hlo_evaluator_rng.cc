// rng-bit-generator for the reference evaluator, bit-exact with XLA's expansion
// (RngBitGeneratorExpander over client/lib/prng): the state is u64[]; state[0] is the key.
//   three_fry: counter = state[1]; each output pair comes from Threefry2x32(counter + i).
//   philox (and default, as on XLA's CPU): a 128-bit counter (state[1], state[2]), or for a
//   2-element state (state[1], state[0]); Philox4x32 with 10 rounds.
// The new state keeps the key and advances the counter by the blocks used.
#include <array>

#include "jx/compiler/hlo/hlo_evaluator_internal.h"
#include "jx/compiler/hlo/status_macros.h"

namespace jx::hlo::eval_internal {
namespace {

uint32_t Rotl(uint32_t v, int d) { return (v << d) | (v >> (32 - d)); }

std::array<uint32_t, 2> Threefry2x32(std::array<uint32_t, 2> x, std::array<uint32_t, 2> key) {
  static constexpr int kRotations[8] = {13, 15, 26, 6, 17, 29, 16, 24};
  const uint32_t ks[3] = {key[0], key[1], 0x1BD11BDAu ^ key[0] ^ key[1]};
  x[0] += ks[0];
  x[1] += ks[1];
  for (int block = 0; block < 5; ++block) {
    const int* rot = kRotations + (block % 2) * 4;
    for (int r = 0; r < 4; ++r) {
      x[0] += x[1];
      x[1] = Rotl(x[1], rot[r]) ^ x[0];
    }
    x[0] += ks[(block + 1) % 3];
    x[1] += ks[(block + 2) % 3] + static_cast<uint32_t>(block + 1);
  }
  return x;
}

std::array<uint32_t, 4> Philox4x32(std::array<uint32_t, 4> x, std::array<uint32_t, 2> key) {
  constexpr uint32_t kW32A = 0x9E3779B9u, kW32B = 0xBB67AE85u;
  constexpr uint32_t kM4x32A = 0xD2511F53u, kM4x32B = 0xCD9E8D57u;
  for (int round = 0; round < 10; ++round) {
    const uint64_t p0 = static_cast<uint64_t>(x[0]) * kM4x32A;
    const uint64_t p1 = static_cast<uint64_t>(x[2]) * kM4x32B;
    x = {static_cast<uint32_t>(p1 >> 32) ^ x[1] ^ key[0], static_cast<uint32_t>(p1),
         static_cast<uint32_t>(p0 >> 32) ^ x[3] ^ key[1], static_cast<uint32_t>(p0)};
    key = {key[0] + kW32A, key[1] + kW32B};
  }
  return x;
}

std::array<uint32_t, 2> Split(uint64_t v) {
  return {static_cast<uint32_t>(v), static_cast<uint32_t>(v >> 32)};
}

void StoreBits(Literal& out, int64_t i, uint64_t bits) { out.SetFromUint64(i, bits); }

// XLA's ThreeFryRngBit32 splits the shape in halves along one dimension: the first even
// dimension, else the largest (first of equals). Returns the dim, or -1 for scalars.
int64_t SplitDim(const Shape& shape) {
  if (shape.rank() == 0) return -1;
  for (int64_t d = 0; d < shape.rank(); ++d) {
    if (shape.dimensions(d) % 2 == 0) return d;
  }
  int64_t best = 0;
  for (int64_t d = 1; d < shape.rank(); ++d) {
    if (shape.dimensions(d) > shape.dimensions(best)) best = d;
  }
  return best;
}

// Returns the number of counter values used.
uint64_t ThreeFry(uint64_t key, uint64_t counter, Literal& out) {
  const Shape& shape = out.shape();
  const int bits = BitWidth(shape.element_type());
  const std::array<uint32_t, 2> k = Split(key);
  const int64_t n = out.element_count();
  if (bits == 64) {
    for (int64_t i = 0; i < n; ++i) {
      const auto r = Threefry2x32(Split(counter + static_cast<uint64_t>(i)), k);
      StoreBits(out, i, static_cast<uint64_t>(r[0]) | (static_cast<uint64_t>(r[1]) << 32));
    }
    return static_cast<uint64_t>(n);
  }
  // 32 bits and narrower: outputs x[0] and x[1] of one block fill two neighbours along the
  // split dimension; the counter is the row-major position in the half-size shape.
  const int64_t split = SplitDim(shape);
  if (split < 0) {
    StoreBits(out, 0, Threefry2x32(Split(counter), k)[0]);
    return 1;
  }
  std::vector<int64_t> half = SpanToVector(shape.dimensions());
  half[split] = (half[split] + 1) / 2;
  const std::vector<int64_t> half_strides = RowMajorStrides(half);
  uint64_t half_count = 1;
  for (int64_t d : half) half_count *= static_cast<uint64_t>(d);
  if (n == 0) return half_count;
  std::vector<int64_t> idx(shape.rank(), 0);
  int64_t o = 0;
  do {
    std::vector<int64_t> h = idx;
    h[split] = idx[split] / 2;
    const uint64_t position = static_cast<uint64_t>(LinearIndex(h, half_strides));
    const auto r = Threefry2x32(Split(counter + position), k);
    StoreBits(out, o++, r[idx[split] % 2]);  // narrower types keep the low bits
  } while (NextIndex(shape.dimensions(), idx));
  return half_count;
}

// counter128 = {low, high}; returns the advanced counter.
std::array<uint64_t, 2> Philox(uint64_t key, std::array<uint64_t, 2> counter, Literal& out) {
  const int bits = BitWidth(out.shape().element_type());
  const int64_t n = out.element_count();
  const std::array<uint32_t, 2> k = Split(key);
  const int64_t words = bits == 64 ? 2 * n : n;  // 32-bit words needed
  const uint64_t blocks = static_cast<uint64_t>((words + 3) / 4);
  auto add = [](std::array<uint64_t, 2> c, uint64_t v) {
    const uint64_t low = c[0] + v;
    return std::array<uint64_t, 2>{low, low < c[0] ? c[1] + 1 : c[1]};
  };
  // Block b's 4 words land at positions 4b..4b+3 (round-robin over the four outputs).
  std::vector<uint32_t> stream(blocks * 4);
  for (uint64_t b = 0; b < blocks; ++b) {
    const auto c = add(counter, b);
    const auto lo = Split(c[0]), hi = Split(c[1]);
    const auto r = Philox4x32({lo[0], lo[1], hi[0], hi[1]}, k);
    for (int j = 0; j < 4; ++j) stream[4 * b + j] = r[j];
  }
  for (int64_t i = 0; i < n; ++i) {
    if (bits == 64) {
      // 64-bit values pair words (0,1) and (2,3) of each block.
      StoreBits(out, i, static_cast<uint64_t>(stream[2 * i]) |
                            (static_cast<uint64_t>(stream[2 * i + 1]) << 32));
    } else {
      StoreBits(out, i, stream[i]);
    }
  }
  return add(counter, blocks);
}

}  // namespace

absl::StatusOr<Literal> EvalRngBitGenerator(const HloInstruction& instr, Operands ops) {
  const Literal& state = *ops[0];
  const Shape& shape = instr.shape();
  if (!shape.IsTuple() || shape.tuple_shapes_size() != 2) {
    return Invalid("result must be a (state, bits) tuple");
  }
  if (state.shape().element_type() != U64 || state.shape().rank() != 1) {
    return Invalid("the reference evaluator supports a u64[] state, got ",
                   state.shape().ToString(false));
  }
  const Shape& data_shape = shape.tuple_shapes(1);
  if (!IsUnsignedIntegralType(data_shape.element_type())) {
    return Invalid("bits must be unsigned integers");
  }
  const int64_t state_size = state.element_count();
  Literal new_state = state;
  Literal bits(data_shape);
  const uint64_t key = state_size > 0 ? state.GetAsUint64(0) : 0;
  switch (instr.rng_algorithm()) {
    case RandomAlgorithm::kThreeFry: {
      if (state_size != 2) return Invalid("rng_three_fry needs a u64[2] state");
      const uint64_t counter = state.GetAsUint64(1);
      new_state.SetFromUint64(1, counter + ThreeFry(key, counter, bits));
      break;
    }
    case RandomAlgorithm::kDefault:
    case RandomAlgorithm::kPhilox: {
      if (state_size < 2) return Invalid("rng_philox needs a u64[2] or larger state");
      if (state_size >= 3) {
        const auto next = Philox(key, {state.GetAsUint64(1), state.GetAsUint64(2)}, bits);
        new_state.SetFromUint64(1, next[0]);
        new_state.SetFromUint64(2, next[1]);
      } else {
        const auto next = Philox(key, {state.GetAsUint64(1), state.GetAsUint64(0)}, bits);
        new_state.SetFromUint64(1, next[0]);
      }
      break;
    }
  }
  std::vector<Literal> parts;
  parts.push_back(LiteralWithBytes(shape.tuple_shapes(0), new_state.untyped_data()));
  parts.push_back(std::move(bits));
  return Literal::CreateTuple(std::move(parts));
}

}  // namespace jx::hlo::eval_internal
