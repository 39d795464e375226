// lax.Precision as a TPU's MXU executes it: how many bf16 passes a f32 contraction takes
// (tpu_numerics.h writes them into the program).
#pragma once

#include <cstdint>

namespace jx::tpu {

enum class MxuPrecision : uint8_t {
  kDefault,  // one bf16 pass
  kHigh,     // bf16_3x
  kHighest,  // bf16_6x, f32-accurate
};

}  // namespace jx::tpu
