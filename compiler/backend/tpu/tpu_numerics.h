// TpuNumerics ("tpu-numerics"): writes what a TPU's MXU computes into the program, so the
// CPU backend, running the rewritten program, produces a TPU's numbers. The MXU multiplies
// bf16 values (products exact in f32) and accumulates in f32. Each floating-point dot and
// convolution becomes, per the precision its operands ask for (operand_precision=, the
// higher of the two, or the pass's fallback when that is higher):
//   - DEFAULT: one bf16 pass: both operands rounded to bf16 (convert f32->bf16->f32, round
//     to nearest even) and contracted in f32;
//   - HIGH (bf16_3x): each operand split as x = hi + lo with hi = bf16(x), lo = bf16(x - hi);
//     three passes hi*lo + lo*hi + hi*hi (the small terms summed first), f32 accumulation;
//   - HIGHEST (bf16_6x, f32-accurate): x = hi + mid + lo, each a bf16 value; six passes
//     hi*lo + lo*hi + mid*mid + hi*mid + mid*hi + hi*hi.
// A pass is an f32 contraction whose operands are converts from bf16, which is how a later
// run (and the MXU tiling pass, which costs each as one bf16 pass) recognizes it. An
// operand that already is bf16 has no lower parts, so the terms that would multiply them
// are left out (bf16 x bf16 needs one pass at any precision). 16-bit results (bf16 and f16
// dots) are accumulated in f32 and rounded once at the end, as the MXU's f32 accumulators
// are. f16 operands are widened to f32 and split like f32 ones.
// f64: a TPU has no f64 units; XLA emulates f64 arithmetic in software, aiming at f64
// accuracy. This pass leaves f64 dots and convolutions as they are (the host computes
// them in f64, which is what the emulation aims for) and counts them (emulated_f64_ops()),
// so the compile can warn and the cost model charges them as emulated. Integer dots (int8
// on the MXU) are exact and left alone.
// Elementwise math is f32 on the VPU and already f32 in the program: nothing to rewrite.
//
//   TpuNumerics numerics;                                     // DEFAULT unless stated
//   HLO_ASSIGN_OR_RETURN(bool changed, numerics.Run(module));   // before fusion
#pragma once

#include <cstdint>
#include <string_view>

#include "jx/compiler/hlo/hlo_attributes.h"
#include "jx/compiler/hlo/hlo_instruction.h"
#include "jx/compiler/hlo/hlo_pass.h"

namespace jx::tpu {

// The MXU's bf16 passes per precision: 1 (DEFAULT), 3 (HIGH), 6 (HIGHEST).
int64_t BF16PassCount(hlo::Precision precision);

// The precision a contraction runs at: the higher of its operands' (operand_precision=)
// and `fallback`.
hlo::Precision EffectivePrecision(const hlo::HloInstruction& contraction,
                                  hlo::Precision fallback);

class TpuNumerics : public hlo::HloPass {
 public:
  // `fallback`: the least precision of every contraction (what contractions that state
  // none, i.e. DEFAULT, run at), as a target-wide default matmul precision.
  explicit TpuNumerics(hlo::Precision fallback = hlo::Precision::kDefault) : fallback_(fallback) {}
  std::string_view name() const override { return "tpu-numerics"; }
  absl::StatusOr<bool> Run(hlo::HloModule* module) override;

  // f64 dots and convolutions the last Run left to emulation.
  int64_t emulated_f64_ops() const { return emulated_f64_ops_; }

 private:
  hlo::Precision fallback_;
  int64_t emulated_f64_ops_ = 0;
};

}  // namespace jx::tpu
