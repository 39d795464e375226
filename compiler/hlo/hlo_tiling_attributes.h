// Target tiling plans recorded on HLO instructions, so the plan a TPU pass chose is visible
// in the HLO text and read back by the cost model. Neither changes what an instruction
// computes: a backend that does not tile (the CPU) ignores them.
//
// mxu_tiling (on dot and convolution; set by the TPU's MXU tiling pass):
//   mxu_tiling={tile=128x128, mkn=512x256x300, padded_mkn=512x256x384, batch=1,
//               k_tiles=2, n_tiles=3, m_groups=64, mxus=4, waves=2}
//   The op as `batch` independent GEMMs [M,K] x [K,N] (a dot's batch dims, a convolution's
//   feature groups; a convolution's M is batch x output positions and its K input features x
//   window taps). The MXU is a `tile` (R x C) weight-stationary systolic array: each [R, C]
//   tile of the padded weights (K padded to R, N padded to C: padded_mkn) is loaded once
//   and the M rows of the streamed operand pass through it in groups of 8 (M padded to 8).
//   k_tiles = K/R, n_tiles = N/C, m_groups = M/8 (padded); the batch x k_tiles x n_tiles
//   weight tiles are dealt round-robin to `mxus` MXUs, `waves` = ceil(tiles / mxus) each.
//   A f32 dot on a TPU target is one bf16 MXU pass after the numerics pass has expanded its
//   precision (tpu_numerics.h); a f64 dot is emulated.
//
// vmem_tiling (on fusions, dots and convolutions whose working set exceeds VMEM; set by the
// TPU's VMEM tiling pass):
//   vmem_tiling={grid=4x1, block=256x512, steps=4, vmem_bytes=6291456, hbm_bytes=25165824}
//   The kernel runs as `grid` steps over blocks of `block` elements (`steps` in all, each
//   paying the per-step overhead): for a matmul the grid and block are over its (M, N)
//   output (plus a third entry over K when even one output block with all of K would not
//   fit: the K blocks are walked with the output block accumulated in VMEM), otherwise over the dims of the kernel's largest array, split along the most
//   major one. A step's blocks are double-buffered in VMEM (vmem_bytes, padded to tiles);
//   hbm_bytes is the HBM<->VMEM traffic of all steps (an operand re-read counts each time).
//
//   MxuTiling t = ParseMxuTiling("{tile=128x128, ...}").value();
//   MxuTilingToString(t);  // the same text
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace jx::hlo {

struct MxuTiling {
  int64_t tile_rows = 128, tile_cols = 128;  // R x C, the MXU's size
  int64_t m = 0, k = 0, n = 0;               // the GEMM of one batch instance
  int64_t padded_m = 0, padded_k = 0, padded_n = 0;
  int64_t batch = 1;
  int64_t k_tiles = 0, n_tiles = 0, m_groups = 0;
  int64_t mxus = 1;
  int64_t waves = 0;

  // The share of MXU work that is useful: (M K N) / (padded M K N); 1 when nothing pads.
  double UsefulFraction() const;
  friend bool operator==(const MxuTiling&, const MxuTiling&) = default;
};
std::string MxuTilingToString(const MxuTiling& t);
absl::StatusOr<MxuTiling> ParseMxuTiling(std::string_view s);

struct VmemTiling {
  std::vector<int64_t> grid;   // steps along each output dim
  std::vector<int64_t> block;  // output elements one step computes, per dim
  int64_t steps = 1;
  int64_t vmem_bytes = 0;
  int64_t hbm_bytes = 0;
  friend bool operator==(const VmemTiling&, const VmemTiling&) = default;
};
std::string VmemTilingToString(const VmemTiling& t);
absl::StatusOr<VmemTiling> ParseVmemTiling(std::string_view s);

}  // namespace jx::hlo
