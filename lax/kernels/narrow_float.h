// f64 -> f16/bf16 as convert_element_type rounds it (internal; includes Eigen): the one
// definition that convert and the f64-accumulating reductions (an f16 sum converts its f64
// accumulator) share, so both give the same bits.
//   - f16: rounded once, through f32 rounded to odd (24 >= 11 + 2 bits, so the second
//     rounding to nearest even is exact);
//   - bf16: through f32 rounded to nearest, then to bf16, in XLA's order.
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>
#include <type_traits>

#include <Eigen/Core>

namespace jx::lax::kernels {

template <typename T>
T NarrowFromF64(double d) {
  float f = static_cast<float>(d);
  if constexpr (std::is_same_v<T, Eigen::half>) {
    if (std::isfinite(f) && static_cast<double>(f) != d) {
      uint32_t b = std::bit_cast<uint32_t>(f);
      if (std::fabs(static_cast<double>(f)) > std::fabs(d)) b -= 1;  // truncate toward zero
      f = std::bit_cast<float>(b | 1u);
    }
  }
  return T(f);
}

}  // namespace jx::lax::kernels
