// erf_inv, defined once for eager and jit as a fixed sequence of correctly rounded ops (no
// fused multiply-add), with log and sqrt the library kernels: the eager kernel
// (elementwise_unary.cc) runs it per packet; the lowering (lax/unary_lowering.cc) emits it as
// HLO, whose ops the CPU backend runs through the same library kernels (log, sqrt, add,
// multiply, compare, select), so both give the same bits.
//
// f32 (f16 and bf16 through f32): Giles' single-precision approximation ("Approximating the
// erfinv function", GPU Computing Gems; XLA's ErfInv32):
//
//   w  = -log((1 - x) * (1 + x))
//   ws = w < 5 ? w - 2.5 : sqrt(w) - 3
//   p  = c[0];  p = c[i] + p * ws  for i = 1..8   (c: kErfInvCentral if w < 5, else kErfInvTail)
//   r  = |x| == 1 ? x * inf : p * x               (NaN for |x| > 1)
//
// f64: Giles' double-precision approximation (XLA's ErfInv64), three polynomials of 23, 19
// and 17 coefficients aligned at the highest power:
//
//   w  = -log((1 - x) * (1 + x))
//   ws = w < 6.25 ? w - 3.125 : sqrt(w) - (w < 16 ? 3.25 : 5)
//   p  = c[0];  p = c[i] + p * ws  for i = 1..22, where c[i] is kErfInvF64Central[i] if
//        w < 6.25, else kErfInvF64Middle[i] if w < 16, else kErfInvF64Tail[i], and a step
//        past the end of the chosen polynomial keeps p
//   r  = |x| == 1 ? x * inf : p * x
//
// XLA computes w as -log1p(-x * x); (1 - x) * (1 + x) keeps 1 - x^2 exact to an ulp near
// |x| = 1, where x * x has already lost the difference (within 4 ulps of erfinv over (-1, 1)).
#pragma once

namespace jx::lax::kernels {

// f32: coefficients, highest power first, each rounded to f32 once.
inline constexpr double kErfInvCentral[9] = {2.81022636e-08,  3.43273939e-07, -3.5233877e-06,
                                             -4.39150654e-06, 0.00021858087,  -0.00125372503,
                                             -0.00417768164, 0.246640727,    1.50140941};
inline constexpr double kErfInvTail[9] = {-0.000200214257, 0.000100950558, 0.00134934322,
                                          -0.00367342844,  0.00573950773,  -0.0076224613,
                                          0.00943887047,   1.00167406,     2.83297682};
// Below this w the central polynomial applies.
inline constexpr double kErfInvTailW = 5.0;

// f64: w < kErfInvF64MiddleW, w < kErfInvF64TailW, and beyond; highest power first.
inline constexpr double kErfInvF64MiddleW = 6.25;
inline constexpr double kErfInvF64TailW = 16.0;
inline constexpr int kErfInvF64CentralSize = 23, kErfInvF64MiddleSize = 19, kErfInvF64TailSize = 17;
inline constexpr double kErfInvF64Central[kErfInvF64CentralSize] = {
    -3.6444120640178196996e-21, -1.685059138182016589e-19,  1.2858480715256400167e-18,
    1.115787767802518096e-17,   -1.333171662854620906e-16,  2.0972767875968561637e-17,
    6.6376381343583238325e-15,  -4.0545662729752068639e-14, -8.1519341976054721522e-14,
    2.6335093153082322977e-12,  -1.2975133253453532498e-11, -5.4154120542946279317e-11,
    1.051212273321532285e-09,   -4.1126339803469836976e-09, -2.9070369957882005086e-08,
    4.2347877827932403518e-07,  -1.3654692000834678645e-06, -1.3882523362786468719e-05,
    0.0001867342080340571352,   -0.00074070253416626697512, -0.0060336708714301490533,
    0.24015818242558961693,     1.6536545626831027356};
inline constexpr double kErfInvF64Middle[kErfInvF64MiddleSize] = {
    2.2137376921775787049e-09,   9.0756561938885390979e-08, -2.7517406297064545428e-07,
    1.8239629214389227755e-08,   1.5027403968909827627e-06, -4.013867526981545969e-06,
    2.9234449089955446044e-06,   1.2475304481671778723e-05, -4.7318229009055733981e-05,
    6.8284851459573175448e-05,   2.4031110387097893999e-05, -0.0003550375203628474796,
    0.00095328937973738049703,   -0.0016882755560235047313, 0.0024914420961078508066,
    -0.0037512085075692412107,   0.005370914553590063617,   1.0052589676941592334,
    3.0838856104922207635};
inline constexpr double kErfInvF64Tail[kErfInvF64TailSize] = {
    -2.7109920616438573243e-11, -2.5556418169965252055e-10, 1.5076572693500548083e-09,
    -3.7894654401267369937e-09, 7.6157012080783393804e-09,  -1.4960026627149240478e-08,
    2.9147953450901080826e-08,  -6.7711997758452339498e-08, 2.2900482228026654717e-07,
    -9.9298272942317002539e-07, 4.5260625972231537039e-06,  -1.9681778105531670567e-05,
    7.5995277030017761139e-05,  -0.00021503011930044477347, -0.00013871931833623122026,
    1.0103004648645343977,      4.8499064014085844221};

}  // namespace jx::lax::kernels
