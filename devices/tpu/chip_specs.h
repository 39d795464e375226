// The table of TPU chip generations a simulated chip or a TPU compile target can be: one
// TpuChipSpec per generation (v2, v3, v4, v5e, v5p, v6e, v7; v2 and v3 per TensorCore, as
// JAX lists their two cores per chip as devices; the others per chip), every constant with
// its public source (../shared/TPU.md: the scaling book "How to Scale Your Model", the Cloud
// TPU pages).
// Clocks are derived from peak = cores x MXUs x R x C x 2 x f where no clock is published.
//
//   const tpu::TpuChipSpec& v5e = tpu::ChipSpec("v5e");
//   v5e.bf16_flops / v5e.hbm_bandwidth;   // ~240 FLOPs/byte: the roofline's ridge
//   tpu::ChipSpec("v9");                  // throws ValueError listing the known generations
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "jx/compiler/backend/tpu/tpu_chip_spec.h"

namespace jx::tpu {

// The spec of `generation` ("v2", "v3", "v4", "v5e", "v5p", "v6e", "v7"). Throws jx::ValueError
// naming the generation and listing the known ones when it is unknown.
const TpuChipSpec& ChipSpec(std::string_view generation);

// Every generation in the table, oldest first.
const std::vector<TpuChipSpec>& AllChipSpecs();

// The known generation names, oldest first ("v2", ..., "v7").
std::vector<std::string> KnownGenerations();

}  // namespace jx::tpu
