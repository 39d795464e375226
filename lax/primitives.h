// The handles of every built-in lax primitive, by JAX's printed names.
//
//   jx::Bind1(jx::lax::kSin, {x});
#pragma once

#include "jx/core/primitive.h"

namespace jx::lax {

// X(handle, printed name)
#define JX_LAX_PRIMITIVES(X)                                                                  \
  /* unary elementwise */                                                                     \
  X(kNeg, "neg") X(kSign, "sign") X(kFloor, "floor") X(kCeil, "ceil") X(kRound, "round")      \
  X(kIsFinite, "is_finite") X(kExp, "exp") X(kExp2, "exp2") X(kLog, "log")                    \
  X(kLog1p, "log1p") X(kExpm1, "expm1") X(kTanh, "tanh") X(kLogistic, "logistic")             \
  X(kSin, "sin") X(kCos, "cos") X(kTan, "tan") X(kAsin, "asin") X(kAcos, "acos")              \
  X(kAtan, "atan") X(kSinh, "sinh") X(kCosh, "cosh") X(kAsinh, "asinh") X(kAcosh, "acosh")    \
  X(kAtanh, "atanh") X(kSqrt, "sqrt") X(kRsqrt, "rsqrt") X(kCbrt, "cbrt") X(kAbs, "abs")      \
  X(kErf, "erf") X(kErfc, "erfc") X(kErfInv, "erf_inv") X(kLgamma, "lgamma")                  \
  X(kDigamma, "digamma") X(kIntegerPow, "integer_pow") X(kSquare, "square")                   \
  X(kReciprocal, "reciprocal") X(kNot, "not")                                                 \
  /* binary elementwise */                                                                    \
  X(kAdd, "add") X(kSub, "sub") X(kMul, "mul") X(kDiv, "div") X(kRem, "rem") X(kPow, "pow")   \
  X(kMax, "max") X(kMin, "min") X(kAtan2, "atan2") X(kAnd, "and") X(kOr, "or")                \
  X(kXor, "xor") X(kShiftLeft, "shift_left") X(kShiftRightLogical, "shift_right_logical")     \
  X(kShiftRightArithmetic, "shift_right_arithmetic") X(kNextafter, "nextafter")               \
  /* comparisons */                                                                           \
  X(kEq, "eq") X(kNe, "ne") X(kLt, "lt") X(kLe, "le") X(kGt, "gt") X(kGe, "ge")               \
  /* selection */                                                                             \
  X(kSelectN, "select_n") X(kClamp, "clamp")                                                  \
  /* type conversion */                                                                       \
  X(kConvertElementType, "convert_element_type")                                              \
  X(kBitcastConvertType, "bitcast_convert_type") X(kReducePrecision, "reduce_precision")      \
  /* reductions */                                                                            \
  X(kReduceSum, "reduce_sum") X(kReduceProd, "reduce_prod") X(kReduceMax, "reduce_max")       \
  X(kReduceMin, "reduce_min") X(kReduceAnd, "reduce_and") X(kReduceOr, "reduce_or")           \
  X(kArgmax, "argmax") X(kArgmin, "argmin")                                                   \
  /* cumulative */                                                                            \
  X(kCumsum, "cumsum") X(kCumprod, "cumprod") X(kCummax, "cummax") X(kCummin, "cummin")       \
  X(kCumlogsumexp, "cumlogsumexp")                                                            \
  /* shape */                                                                                 \
  X(kBroadcastInDim, "broadcast_in_dim") X(kReshape, "reshape") X(kTranspose, "transpose")    \
  X(kSqueeze, "squeeze") X(kExpandDims, "expand_dims") X(kRev, "rev") X(kIota, "iota")        \
  X(kCopy, "copy")                                                                            \
  /* slicing and indexing */                                                                  \
  X(kSlice, "slice") X(kDynamicSlice, "dynamic_slice")                                        \
  X(kDynamicUpdateSlice, "dynamic_update_slice") X(kConcatenate, "concatenate") X(kPad, "pad") \
  X(kGather, "gather") X(kScatter, "scatter") X(kScatterAdd, "scatter_add")                   \
  X(kScatterMul, "scatter_mul") X(kScatterMin, "scatter_min") X(kScatterMax, "scatter_max")   \
  /* linear algebra and windows */                                                            \
  X(kDotGeneral, "dot_general") X(kConvGeneralDilated, "conv_general_dilated")                \
  X(kReduceWindowMax, "reduce_window_max") X(kReduceWindowMin, "reduce_window_min") X(kReduceWindowSum, "reduce_window_sum")           \
  /* sorting */                                                                               \
  X(kSort, "sort") X(kTopK, "top_k")                                                          \
  /* random */                                                                                \
  X(kThreefry2x32, "threefry2x32") X(kRandomBits, "random_bits")

#define JX_DECLARE_PRIMITIVE(handle, name) inline const Primitive handle = Primitive::Intern(name);
JX_LAX_PRIMITIVES(JX_DECLARE_PRIMITIVE)
#undef JX_DECLARE_PRIMITIVE

}  // namespace jx::lax
