// erf_inv for f32 (f16 and bf16 through f32), defined once for eager and jit: Giles'
// single-precision approximation ("Approximating the erfinv function", GPU Computing Gems,
// the one XLA's ErfInv32 uses), as a fixed sequence of correctly rounded f32 ops
//
//   w  = -log((1 - x) * (1 + x))
//   ws = w < 5 ? w - 2.5 : sqrt(w) - 3
//   p  = c[0];  p = c[i] + p * ws  for i = 1..8   (c: kErfInvCentral if w < 5, else kErfInvTail)
//   r  = |x| == 1 ? x * inf : p * x               (NaN for |x| > 1)
//
// with no fused multiply-add. The eager kernel (elementwise_unary.cc) runs it per packet; the
// lowering (lax/unary_lowering.cc) emits it as HLO, whose ops the CPU backend runs through
// the same library kernels (log, sqrt, add, multiply), so both give the same bits.
#pragma once

namespace jx::lax::kernels {

// Coefficients, highest power first, each rounded to f32 once.
inline constexpr double kErfInvCentral[9] = {2.81022636e-08,  3.43273939e-07, -3.5233877e-06,
                                             -4.39150654e-06, 0.00021858087,  -0.00125372503,
                                             -0.00417768164, 0.246640727,    1.50140941};
inline constexpr double kErfInvTail[9] = {-0.000200214257, 0.000100950558, 0.00134934322,
                                          -0.00367342844,  0.00573950773,  -0.0076224613,
                                          0.00943887047,   1.00167406,     2.83297682};
// Below this w the central polynomial applies.
inline constexpr double kErfInvTailW = 5.0;

}  // namespace jx::lax::kernels
