// Elementwise kernels shared by eager impl rules (lax/unary_ops.cc,
// lax/binary_ops.cc) and the CPU backend's loop kernels (compiler/backend/cpu/tile_ops.cc), so
// that an op gives the same bits eager and under jit, fused or not.
//
// Every element is computed by the same code whatever its position: where the op has a packet
// (SIMD) version, the last partial packet of a span runs as a padded full packet rather than
// through a scalar fallback, so a value never depends on whether it falls in a full packet, in
// the tail of an array, or on a chunk or tile boundary. Ops without a packet version run one
// scalar function on every element. 16-bit floats are widened to f32 in L1-sized blocks,
// computed by the f32 kernel and rounded once to nearest even.
//
// Denormals are kept (IEEE gradual underflow, as std::exp and the HLO evaluator give): for
// example exp(-101.2f) = 1.1e-44 and log(1e-40f) = -92.1. XLA's CPU runtime instead runs with
// flush-to-zero and denormals-are-zero set; jx does not set those modes anywhere, so a flushing
// exp would disagree with jx's own multiply.
//
// Integer, bool and comparison kernels are plain loops (elementwise_integer.cc).
//
//   ElementwiseFn exp = FindUnaryFn(UnaryOp::kExp, DType::kFloat32);
//   const void* in[] = {x};
//   exp(in, out, n);                           // one thread, any n
//   RunElementwise(exp, 1, in, 0, sizeof(float), out, sizeof(float), n, /*grain=*/4096);
#pragma once

#include <cstdint>

#include "jx/core/dtype.h"

namespace jx::lax::kernels {

enum class UnaryOp : uint8_t {
  kNeg, kAbs, kSign, kFloor, kCeil, kRoundAwayFromZero, kRoundNearestEven, kExp, kLog, kLog1p,
  kExpm1, kTanh, kLogistic, kSin, kCos, kTan, kAtan, kSqrt, kRsqrt, kCbrt, kErf, kErfInv,
  kNot,  // integers and bool only
};
enum class BinaryOp : uint8_t {
  kAdd, kSub, kMul, kDiv, kRem, kPow, kMax, kMin, kAtan2,
  kAnd, kOr, kXor, kShiftLeft, kShiftRightLogical, kShiftRightArithmetic,  // integers (and/or/xor: bool)
};
enum class CompareOp : uint8_t { kEq, kNe, kLt, kLe, kGt, kGe };

// out[i] = op(in[0][i], in[1][i]) for i < n, dense operands and result of one floating dtype.
// An operand flagged scalar (see FindBinaryFn) is one element read for every i.
using ElementwiseFn = void (*)(const void* const* in, void* out, int64_t n);

// How a kernel writes its result. kStreaming uses non-temporal stores for f32/f64 (an output
// far larger than the cache is not read back soon; the stores skip the read-for-ownership of
// each destination line); the values are the same as kNormal's.
enum class StoreMode : uint8_t { kNormal, kStreaming };

// The kernel for op on dtype, nullptr where the op does not take that dtype. Floats (f16,
// bf16, f32, f64) take every op but kNot and the bitwise ones; integers take neg, abs (signed),
// sign, not and every binary op but atan2 (arithmetic wraps; x / 0 = -1, x % 0 = x, shifts
// past the width saturate, as XLA); bool takes not, max, min, and, or, xor.
ElementwiseFn FindUnaryFn(UnaryOp op, DType dtype, StoreMode store = StoreMode::kNormal);
// scalar_operands: bit k set means operand k is one element (0, 1 or 2; both scalar is not
// offered: splat one of them). nullptr for scalar_operands == 3.
ElementwiseFn FindBinaryFn(BinaryOp op, DType dtype, unsigned scalar_operands = 0,
                           StoreMode store = StoreMode::kNormal);
// out (bool) = a op b, IEEE comparison for floats (NaN unordered), any dtype.
ElementwiseFn FindCompareFn(CompareOp op, DType dtype, unsigned scalar_operands = 0);

// clamp(lo, x, hi) = min(hi, max(lo, x)) with XLA's max/min (NaN-propagating, -0 < +0), for
// floating dtypes. scalar_operands 0-6 (bit 0 lo, bit 1 x, bit 2 hi; not all three).
ElementwiseFn FindClampFn(DType dtype, unsigned scalar_operands = 0, StoreMode store = StoreMode::kNormal);

// out (bool) = x is neither infinite nor NaN (its exponent bits are not all ones), floats.
ElementwiseFn FindIsFiniteFn(DType dtype);

// convert_element_type from one dtype to another (any pair; XLA's CPU semantics:
// elementwise_convert.cc). bool is one byte, 0 or 1.
ElementwiseFn FindConvertFn(DType from, DType to);

// reduce_precision on a floating dtype (XLA's: mantissa rounded to nearest even, exponent
// range clipped to +-inf and +-0, NaN kept). in[0] is x, in[1] points at one
// ReducePrecisionBits (exponent_bits >= 1, mantissa_bits >= 0; wider than dtype is a no-op):
// run it with scalar_operands = 2. nullptr for non-float dtypes.
struct ReducePrecisionBits {
  int32_t exponent_bits = 0, mantissa_bits = 0;
};
ElementwiseFn FindReducePrecisionFn(DType dtype);

// Whether op costs tens of cycles per element (worth splitting smaller arrays over threads).
bool IsExpensive(UnaryOp op);
bool IsExpensive(BinaryOp op);

// Runs fn over [0, n) on the thread pool in chunks of at least `grain` elements. Operand k
// (of `arity`, at most 3) advances by in_esize bytes per element unless bit k of scalar_operands is set.
void RunElementwise(ElementwiseFn fn, int arity, const void* const* in, unsigned scalar_operands,
                    int64_t in_esize, void* out, int64_t out_esize, int64_t n, int64_t grain);

// Whether an output of this many bytes should be written with streaming stores.
bool UseStreamingStores(int64_t out_bytes);

}  // namespace jx::lax::kernels
