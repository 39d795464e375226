// Windowed reductions (XLA's reduce-window with one operand), written once for eager
// lax::reduce_window_{sum,max} and the CPU backend's reduce-window kernel.
//
// Output element o of each axis reduces the window taps o * stride + k * window_dilation -
// pad_lo (k < size) that land on an input element of the base-dilated operand; padding and
// base-dilation holes are skipped, so out = fold(init, taps) in row-major tap order, and an
// all-padding window gives init. Accumulation is the reduction family's (lax/kernels/
// reducer.h): float sums and products in f64, 16-bit floats in f32, integers wrap. Float
// max/min follow XLA: NaN wins (as the quiet NaN) and -0 < +0. Booleans are 0/1 bytes:
// sum and max are or, product and min are and.
//
// Usage (2x2 max pool with stride 2 of f32[N, H, W, C]):
//   std::vector<WindowAxis> axes = {{N, N}, {H, H / 2, 2, 2}, {W, W / 2, 2, 2}, {C, C}};
//   ReduceWindow(DType::kFloat32, WindowReducer::kMax, x, axes, /*init=*/nullptr, y);
#pragma once

#include <cstdint>

#include "absl/types/span.h"
#include "jx/core/dtype.h"

namespace jx::lax::kernels {

enum class WindowReducer { kSum, kProd, kMax, kMin, kAnd, kOr };

// One axis of the window: input and output sizes, then the window's size, stride, padding
// and dilations.
struct WindowAxis {
  int64_t in = 0, out = 0;
  int64_t size = 1, stride = 1, pad_lo = 0, pad_hi = 0, base_dilation = 1, window_dilation = 1;
};

// Whether op is defined on dtype (and/or: integers and bool only).
bool WindowReducerAccepts(WindowReducer op, DType dtype);

// y = reduce_window(x) with the initial value *init (one element of dtype), or the
// reducer's identity when init is null. Throws InvalidArgument-style jx errors never: the
// caller validates the window; op must be accepted for dtype.
void ReduceWindow(DType dtype, WindowReducer op, const void* x, absl::Span<const WindowAxis> axes,
                  const void* init, void* y);

}  // namespace jx::lax::kernels
