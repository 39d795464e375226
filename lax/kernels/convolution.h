// Convolution kernel (internal): XLA's Convolution on raw buffers, shared by eager
// conv_general_dilated (lax/convolution.cc) and the CPU backend's conv kernel, so compiled and
// eager convolutions agree bit for bit.
//
//   kernels::ConvArgs c;
//   c.lhs_dtype = c.rhs_dtype = c.out_dtype = DType::kFloat32;
//   c.lhs_shape = {8, 56, 56, 64}; c.rhs_shape = {3, 3, 64, 64}; c.out_shape = {8, 56, 56, 64};
//   c.lhs_spec = {0, 3, 1, 2}; c.rhs_spec = {3, 2, 0, 1}; c.out_spec = {0, 3, 1, 2};  // NHWC, HWIO
//   c.window_strides = {1, 1}; c.padding_low = c.padding_high = {1, 1};
//   c.lhs_dilation = c.rhs_dilation = {1, 1};
//   c.lhs = x; c.rhs = w; c.out = y;
//   kernels::ConvGeneralDilated(c);
//
// Numerics: operands are widened to the accumulation dtype (AccumulationDType: f16/bf16 in
// f32, integers wrapping in int32/int64, bool as int32 then != 0) and multiplied by the
// GEMM of gemm.h; the result is rounded to out_dtype once.
#pragma once

#include <cstdint>

#include "absl/types/span.h"
#include "jx/core/dtype.h"
#include "jx/lax/kernels/gemm.h"

namespace jx::lax::kernels {

struct ConvArgs {
  DType lhs_dtype = DType::kFloat32, rhs_dtype = DType::kFloat32, out_dtype = DType::kFloat32;
  // Dense row-major operands and result.
  absl::Span<const int64_t> lhs_shape, rhs_shape, out_shape;
  // Dimension numbers: lhs (batch, feature, spatial...), rhs (output feature, input feature,
  // spatial...), out (batch, feature, spatial...); spatial dim i of each is window dim i.
  absl::Span<const int64_t> lhs_spec, rhs_spec, out_spec;
  // One entry per spatial dim.
  absl::Span<const int64_t> window_strides, padding_low, padding_high, lhs_dilation,
      rhs_dilation;
  int64_t feature_group_count = 1, batch_group_count = 1;
  const void* lhs = nullptr;
  const void* rhs = nullptr;
  void* out = nullptr;
  // Optional: called on ranges of out's elements once they hold their final values (each
  // element once, ranges of a tile of output rows while they are still in cache), possibly
  // from several threads at once.
  OutputEpilogue epilogue;
};

// Computes the convolution into args.out. Shapes must be consistent (as shape inference
// checks); throws InvalidArgument naming the shapes when they are not.
void ConvGeneralDilated(const ConvArgs& args);

}  // namespace jx::lax::kernels
