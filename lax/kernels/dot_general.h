// dot_general kernel (internal): XLA's Dot on raw buffers, shared by eager dot_general
// (lax/dot_general.cc) and the CPU backend's dot kernel, so compiled and eager dots agree
// bit for bit.
//
//   kernels::DotGeneralArgs d;
//   d.lhs_dtype = d.rhs_dtype = d.out_dtype = DType::kBFloat16;
//   d.lhs_shape = {1024, 512}; d.rhs_shape = {512, 256};
//   d.lhs_contracting_dims = {1}; d.rhs_contracting_dims = {0};
//   d.lhs = a; d.rhs = b; d.out = c;  // c: bf16[1024, 256]
//   kernels::DotGeneral(d);
//
// The operands are brought to a batched [B, M, K] x [B, K, N] GEMM (gemm.h), mapped in place
// when their dims already form strided GEMM axes in the accumulation dtype, else packed (and
// widened: f16/bf16 into f32, small integers into int32) by PackConvert. The f32/f64/int32/
// int64 product is rounded to out_dtype once per GEMM block, right after the block is final.
#pragma once

#include <cstdint>

#include "absl/types/span.h"
#include "jx/core/dtype.h"
#include "jx/lax/kernels/gemm.h"

namespace jx::lax::kernels {

struct DotGeneralArgs {
  DType lhs_dtype = DType::kFloat32, rhs_dtype = DType::kFloat32, out_dtype = DType::kFloat32;
  // Dense row-major operands; out is dense [batch..., lhs free..., rhs free...].
  absl::Span<const int64_t> lhs_shape, rhs_shape;
  absl::Span<const int64_t> lhs_batch_dims, rhs_batch_dims;
  absl::Span<const int64_t> lhs_contracting_dims, rhs_contracting_dims;
  const void* lhs = nullptr;
  const void* rhs = nullptr;
  void* out = nullptr;
  // Optional: runs over each GEMM block of out once it holds its final values.
  OutputEpilogue epilogue;
};

// Computes the dot into args.out. Throws ValueError naming shapes and dims when the
// dimension numbers do not describe a dot of these shapes.
void DotGeneral(const DotGeneralArgs& args);

}  // namespace jx::lax::kernels
