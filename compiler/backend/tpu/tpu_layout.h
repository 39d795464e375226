// The TPU's on-chip array layouts: which tiles an array is stored in and how many bytes it
// takes once padded to whole tiles (what HBM and VMEM really hold and move).
//
// Tiles (XLA's TPU notation, written in the layout: "f32[256,512]{1,0:T(8,128)}"):
//   - rank >= 2: the two minor dims in (8, 128) tiles for 32- and 64-bit types: a vreg is 8
//     sublanes x 128 lanes of 32 bits. Narrower types pack several rows into one 32-bit
//     sublane, so a tile covers more rows: 16-bit (16, 128) with the packing sub-tile (2, 1),
//     8-bit and pred (32, 128)(4, 1);
//   - a second-minor dim smaller than the tile's rows gets the next power of two instead
//     (XLA's small tiles: f32[2,300] is T(2,128)), at least the packing factor;
//   - rank 1: the elements in rows of 128 lanes, one tile holding as many rows as the rank-2
//     rule would give an [ceil(n/128), 128] array: f32[100] is T(128), f32[5000] T(1024);
//   - scalars are untiled (they live in scalar registers/SMEM).
// Memory spaces: HBM is the default (0, unprinted); VMEM is S(1).
//
//   Shape s = ShapeUtil::MakeShape(F32, {300, 100});
//   TpuTilesFor(s);                                 // {T(8,128)}
//   PaddedBytes(s);                                 // 304 * 128 * 4 = 155648
#pragma once

#include <cstdint>
#include <vector>

#include "jx/compiler/hlo/shape.h"

namespace jx::tpu {

inline constexpr int64_t kHbmMemorySpace = hlo::kDefaultMemorySpace;
inline constexpr int64_t kVmemMemorySpace = 1;

// The lanes of a vreg and the sublanes of a 32-bit one.
inline constexpr int64_t kLanes = 128;
inline constexpr int64_t kSublanes = 8;

// The tiles the TPU stores an array of this shape in (empty for scalars, tuples, tokens).
std::vector<hlo::Tile> TpuTilesFor(const hlo::Shape& shape);

// `shape` (recursively through tuples) with TPU tiles on every array and memory_space.
hlo::Shape WithTpuLayout(const hlo::Shape& shape, int64_t memory_space = kHbmMemorySpace);

// Bytes of the array once each physical dim is padded to its layout's tiles (the layout's
// own tiles, or TpuTilesFor(shape) when it has none); the sum over a tuple's elements.
int64_t PaddedBytes(const hlo::Shape& shape);

}  // namespace jx::tpu
