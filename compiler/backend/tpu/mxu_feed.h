// MXU feeds: the converts the TPU numerics pass writes around a contraction's operands
// (tpu_numerics.h: bf16 -> f32 widenings, f32 -> bf16 -> f32 roundings) say what the MXU
// computes, but on a chip they are not kernels of their own: the MXU rounds and widens the
// values as they stream in from memory. A feed is a convert chain (or a fusion of nothing
// but converts) over one array whose every reader uses it as a dot or convolution operand;
// its source is the array under the converts, which is what the chip really reads. A fusion
// may also slice its parameter statically (a block of K or V in a blocked attention loop):
// the operand's DMA fetches that window of the source, and the MXU widens it as it reads.
//
//   %xb = f32[..] convert(bf16[..] %x)            // IsMxuFeed(xb), MxuFeedSource(xb) == x
//   %d  = f32[..] dot(%xb, %wb), ...
#pragma once

#include "jx/compiler/hlo/hlo_instruction.h"

namespace jx::tpu {

// Whether `instr` is an MXU feed (see above).
bool IsMxuFeed(const hlo::HloInstruction& instr);

// The array an operand's bytes really come from: the feed's source for an MXU feed, the
// operand itself otherwise.
const hlo::HloInstruction& MxuFeedSource(const hlo::HloInstruction& operand);

// Bytes per element of an operand as the chip stores what it reads: its source's padded
// bytes per element (a bf16 source of an f32 feed: 2, and 4 with no feed). A sliced feed
// reads only the operand's elements of its source.
double MxuFeedBytesPerElement(const hlo::HloInstruction& operand);

}  // namespace jx::tpu
