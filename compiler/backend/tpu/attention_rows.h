// The query rows of an attention kernel's values, so the kernel can run a query block as a
// grid of row blocks, as Pallas's TPU flash attention does with block_q: each row block holds
// its rows of the score tiles, the row statistics and the output, while sums over the rows
// (the backward pass's dk and dv) accumulate in VMEM across the row blocks and are finished
// after the last one.
//
// The rows are found by following dims through the kernel's ops (nested fusions included):
// elementwise ops, broadcasts, transposes, reduces' kept dims, dots' batch, contracting and
// free dims, reshapes that only add or drop unit dims, and data movement that keeps a dim's
// extent tie a result's dim to an operand's. The query rows are the free lhs dim of every dot
// whose lhs no other dot computed (QK^T's Q, the backward's dO V^T's dO, as read or widened for
// the MXU), and every dim tied to one. A value with no row dim that a row dim flows into (a reduce or a dot over
// the rows, or what is computed from one) is summed over the rows.
//
// The rows cannot be split (extent 0) when a value has two row dims, when query blocks of
// different lengths meet in one kernel, or when a value with rows reads a sum over the rows
// (it would need every row block first).
//
//   const QueryRows rows = FindQueryRows(members, [&](const HloInstruction* x) { return in.contains(x); });
//   if (rows.extent > 0) ... rows.RowDim(x) ...
#pragma once

#include <cstdint>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/functional/function_ref.h"
#include "absl/types/span.h"
#include "jx/compiler/hlo/hlo_instruction.h"

namespace jx::tpu {

struct QueryRows {
  int64_t extent = 0;  // rows of the query block; 0: the kernel cannot split them
  // The dim holding the query rows, per value of the kernel with one (its members and the
  // operands it reads from outside).
  absl::flat_hash_map<const hlo::HloInstruction*, int64_t> row_dim;
  // Members summed over the rows (accumulators and what is computed from them only).
  absl::flat_hash_set<const hlo::HloInstruction*> summed;

  // The row dim of x, or -1 when it has none.
  int64_t RowDim(const hlo::HloInstruction& x) const {
    auto it = row_dim.find(&x);
    return it == row_dim.end() ? -1 : it->second;
  }
};

// The query rows of the kernel running `members` (operands first); `inside(x)` says whether x
// is a member (every other operand is read from outside the kernel).
QueryRows FindQueryRows(absl::Span<hlo::HloInstruction* const> members,
                        absl::FunctionRef<bool(const hlo::HloInstruction*)> inside);

}  // namespace jx::tpu
