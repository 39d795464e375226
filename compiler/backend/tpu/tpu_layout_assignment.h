// TpuLayoutAssignment ("tpu-layout-assignment"): gives every array in the module the TPU's
// tiled layout (tpu_layout.h: T(8,128) for 32-bit types, T(16,128)(2,1) for 16-bit, ...),
// fused computations included, keeping each array's minor_to_major (the CPU's
// LayoutAssignment, run before it, makes them row-major). Memory spaces: the entry's
// parameters and the values its root returns live in HBM; any other array keeps the
// memory space it has (HBM unless the VMEM tiling pass placed it in VMEM), so running this
// pass again after that one undoes nothing. Values are unchanged: only the storage the
// cost model charges for (PaddedBytes) is. Run returns whether a layout changed.
//
//   pipeline.AddPass<hlo::LayoutAssignment>();        // row-major minor_to_major
//   pipeline.AddPass<tpu::TpuLayoutAssignment>();     // ... plus tiles and memory spaces
#pragma once

#include <string_view>

#include "jx/compiler/hlo/hlo_pass.h"

namespace jx::tpu {

class TpuLayoutAssignment : public hlo::HloPass {
 public:
  std::string_view name() const override { return "tpu-layout-assignment"; }
  absl::StatusOr<bool> Run(hlo::HloModule* module) override;
};

}  // namespace jx::tpu
