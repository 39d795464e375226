// Lowering rules of the threefry PRNG: threefry2x32 and random_bits as explicit u32 adds,
// xors and rotations, counter for counter as the eager kernels hash them.
#include <utility>
#include <vector>

#include "jx/compiler/hlo/status_macros.h"
#include "jx/compiler/lower/lower_ops.h"
#include "jx/core/registry.h"
#include "jx/lax/primitives.h"

namespace jx::lax::internal {
namespace {

using hlo::HloBuilder;
using lower::XOp;

XOp RotateLeft(const XOp& x, int r) {
  return lower::ShiftLeft(x, lower::LikeUint(x, static_cast<uint64_t>(r))) |
         lower::ShiftRightLogical(x, lower::LikeUint(x, static_cast<uint64_t>(32 - r)));
}

// One Threefry-2x32 block (20 rounds) over u32 arrays of one shape.
std::pair<XOp, XOp> Threefry(const XOp& k0, const XOp& k1, XOp x0, XOp x1) {
  const XOp k2 = k0 ^ k1 ^ lower::LikeUint(k0, 0x1BD11BDAu);
  const XOp ks[3] = {k0, k1, k2};
  static constexpr int kRotations[2][4] = {{13, 15, 26, 6}, {17, 29, 16, 24}};
  x0 = x0 + k0;
  x1 = x1 + k1;
  for (int block = 0; block < 5; ++block) {
    for (int r : kRotations[block % 2]) {
      x0 = x0 + x1;
      x1 = RotateLeft(x1, r);
      x1 = x1 ^ x0;
    }
    x0 = x0 + ks[(block + 1) % 3];
    x1 = x1 + ks[(block + 2) % 3] + lower::LikeUint(x1, static_cast<uint64_t>(block + 1));
  }
  return {x0, x1};
}

absl::Status LowerThreefry(LowerContext& ctx) {
  std::vector<XOp> in = lower::ElementwiseOperands(ctx);
  auto [y0, y1] = Threefry(in[0], in[1], in[2], in[3]);
  return lower::Outputs(ctx, {y0, y1});
}

// random_bits for keys u32[K..., 2] -> bits[K..., shape...]; see random_ops.cc for the two
// counter schemes.
absl::Status LowerRandomBits(LowerContext& ctx) {
  HloBuilder& b = ctx.builder();
  const XOp key(&b, ctx.operand(0));
  const int64_t bit_width = ctx.params().GetInt("bit_width");
  const bool partitionable = ctx.params().GetBool("partitionable");
  const int64_t size = NumElements(ctx.params().GetInts("shape"));
  const std::vector<int64_t> key_dims(key.dims().begin(), key.dims().end() - 1);
  int64_t num_keys = 1;
  for (int64_t d : key_dims) num_keys *= d;
  const XOp keys = lower::Reshape(key, {num_keys, 2});
  const XOp k0 = lower::Reshape(lower::Slice(keys, {0, 0}, {num_keys, 1}), {num_keys});
  const XOp k1 = lower::Reshape(lower::Slice(keys, {0, 1}, {num_keys, 2}), {num_keys});
  auto keys_over = [&](int64_t n) -> std::pair<XOp, XOp> {
    return {lower::Broadcast(k0, {num_keys, n}, {0}), lower::Broadcast(k1, {num_keys, n}, {0})};
  };
  auto counter = [&](int64_t n) { return lower::Wrap(b, b.Iota(hlo::ShapeUtil::MakeShape(hlo::U32, {num_keys, n}), 1)); };
  const hlo::PrimitiveType out_type = LowerContext::TypeOf(ctx.out_aval(0).dtype);
  XOp bits;
  if (partitionable) {
    // Counter i = (i >> 32, i & 0xffffffff); sizes stay below 2^32 here, so the high word is 0.
    auto [a, c] = keys_over(size);
    auto [hi, lo] = Threefry(a, c, lower::FullUint(b, hlo::U32, {num_keys, size}, 0), counter(size));
    if (bit_width == 64) {
      const XOp h = lower::Convert(hi, hlo::U64), l = lower::Convert(lo, hlo::U64);
      bits = lower::ShiftLeft(h, lower::LikeUint(h, 32)) | l;
    } else {
      bits = lower::Convert(hi ^ lo, out_type);
    }
  } else {
    const int64_t n = (bit_width * size + 31) / 32, half = (n + 1) / 2, pairs = n / 2;
    auto [a, c] = keys_over(half);
    const XOp i = counter(half);
    // Pairs (i, half + i); an odd count pads the last pair's second counter with 0.
    const XOp second = lower::Select(i < lower::LikeUint(i, static_cast<uint64_t>(pairs)),
                                     i + lower::LikeUint(i, static_cast<uint64_t>(half)), lower::LikeUint(i, 0));
    auto [y0, y1] = Threefry(a, c, i, second);
    const XOp words = lower::Wrap(
        b, b.Concatenate({y0.instr(), lower::Slice(y1, {0, 0}, {num_keys, pairs}).instr()}, 1));  // [K, n]
    if (bit_width == 32) {
      bits = words;
    } else if (bit_width == 64) {
      const XOp h = lower::Convert(lower::Slice(words, {0, 0}, {num_keys, size}), hlo::U64);
      const XOp l = lower::Convert(lower::Slice(words, {0, size}, {num_keys, 2 * size}), hlo::U64);
      bits = lower::ShiftLeft(h, lower::LikeUint(h, 32)) | l;
    } else {
      // The little-endian 8/16-bit view of the words, truncated to size.
      const int64_t per_word = 32 / bit_width;
      const XOp narrow = lower::BitcastConvert(words, out_type);  // [K, n, per_word]
      bits = lower::Slice(lower::Reshape(narrow, {num_keys, n * per_word}), {0, 0}, {num_keys, size});
    }
  }
  return lower::Output(ctx, lower::Reshape(bits, ctx.out_aval(0).shape));
}

}  // namespace

void RegisterRandomLowering(Registry& r) {
  r.Define(kThreefry2x32).lower = LowerThreefry;
  r.Define(kRandomBits).lower = LowerRandomBits;
}

}  // namespace jx::lax::internal
