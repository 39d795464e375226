// WhileLoopOuterProductToDot: a loop that adds the outer product of two per-trip values to an
// accumulator it carries (the weight cotangent of a scanned layer, dW += h_t^T g_t, as the
// transpose of a scan leaves it) stacks the two factors by trip instead and contracts the stacks
// over the trips in one dot after the loop:
//
//   acc = init                                  as = zeros[N, m]; bs = zeros[N, n]
//   for i in [0, N):                            for i in [0, N):
//     a = ...  (f32[m])                           a = ...; b = ...
//     b = ...  (f32[n])                  ->       as[i] = a; bs[i] = b
//     acc = acc + bcast(a) * bcast(b)           use(init + dot(as, bs, contracting the trips))
//   use(acc)
//
// Each trip read and wrote the whole m x n accumulator (a memory-bound rank-1 update); it now
// writes m + n values, and the N updates run as one GEMM of depth N. The product may be a
// multiply of two broadcasts whose dimensions split the product's (factors of any rank, their
// dimensions in any order: a transpose follows the dot) or a dot with neither contracting nor
// batch dimensions.
//
// It applies only where that holds and pays: the loop counts trips with a state element that
// starts at a constant, steps by 1 and is compared below a constant bound (scans and fori_loops
// with static bounds), so the trip index is known; nothing in the loop (body or condition)
// reads the accumulator but the add, and nothing but the add reads the product; the factors
// hold fewer elements than the product; the stacks of one loop fit in max_stack_bytes (the
// memory traded for the loop's traffic). The loop's results are read through
// get-tuple-element. Floating-point sums are reassociated (the GEMM's order, not trip by
// trip); integer sums are exact.
//
//   WhileLoopOuterProductToDot pass;
//   HLO_ASSIGN_OR_RETURN(bool changed, pass.Run(module));
#pragma once

#include <cstdint>
#include <string_view>

#include "jx/compiler/hlo/hlo_computation.h"
#include "jx/compiler/hlo/hlo_pass.h"

namespace jx::hlo {

class WhileLoopOuterProductToDot : public HloPass {
 public:
  static constexpr int64_t kDefaultMaxStackBytes = int64_t{256} << 20;

  explicit WhileLoopOuterProductToDot(int64_t max_stack_bytes = kDefaultMaxStackBytes)
      : max_stack_bytes_(max_stack_bytes) {}

  std::string_view name() const override { return "while-loop-outer-product-to-dot"; }
  absl::StatusOr<bool> Run(HloModule* module) override;

 private:
  int64_t max_stack_bytes_;
};

}  // namespace jx::hlo
