// Internal to the CPU backend: the vectorized loops a tile program is made of. Each loop
// runs one elementwise op over n contiguous elements of a tile (operands and result are
// dense arrays of the op's element types). Loops are chosen once, when a kernel is
// compiled, as function pointers; an (op, element type) pair without a native loop gets
// nullptr and the caller falls back to a scalar loop through the reference evaluator.
#pragma once

#include <cstdint>

#include "jx/compiler/hlo/hlo_instruction.h"

namespace jx::cpu::internal {

// out[i] = op(in[0][i], in[1][i], ...) for i < n.
using TileOpFn = void (*)(const void* const* in, void* out, int64_t n);
// Native loop for this elementwise instruction (its opcode, attributes, operand and result
// types), or nullptr. Bit k of scalar_operands set: operand k is one value for every i
// (in[k] points at that single element: a broadcast constant or scalar parameter), held in
// a register rather than splatted into a tile. Binary ops, compare, select and clamp have
// such variants (not with every operand scalar); for the rest a nonzero mask gives nullptr.
TileOpFn FindNativeTileOp(const hlo::HloInstruction& instr, unsigned scalar_operands = 0);

// A lone unary or binary op of the kernel library over dense operands of its result's dtype,
// run exactly as eager runs it (lax/unary_ops.cc, lax/binary_ops.cc): the same loop, written
// with streaming stores when eager's would be, over the same ParallelFor chunks (grain).
struct LibraryLoop {
  TileOpFn fn = nullptr;
  int arity = 0;
  int64_t grain = 0;
};
// fn is nullptr where instr is not such an op (a scalar or broadcast operand, a mixed-dtype
// op, compare, select, clamp, convert: those stay tile programs).
LibraryLoop FindLibraryLoop(const hlo::HloInstruction& instr);

// *acc = reducer(*acc, x[0], ..., x[n-1]) in a fixed order (independent of alignment and
// threads), for reducer add/multiply/maximum/minimum.
using ReduceSpanFn = void (*)(const void* x, int64_t n, void* acc);
ReduceSpanFn FindReduceSpan(hlo::HloOpcode reducer, hlo::PrimitiveType type);

// out[i] = static_cast<type>(index[i]) (iota values).
using IndexToValueFn = void (*)(const int64_t* index, void* out, int64_t n);
IndexToValueFn FindIndexToValue(hlo::PrimitiveType type);

}  // namespace jx::cpu::internal
