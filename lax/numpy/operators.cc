#include "jx/lax/numpy/operators.h"

namespace jx {

#define JX_DEFINE_BINARY_OPERATOR(OP, FN) \
  Array operator OP(const Array& x, const Array& y) { return numpy::FN(x, y); }

JX_DEFINE_BINARY_OPERATOR(+, add)
JX_DEFINE_BINARY_OPERATOR(-, subtract)
JX_DEFINE_BINARY_OPERATOR(*, multiply)
JX_DEFINE_BINARY_OPERATOR(/, true_divide)
JX_DEFINE_BINARY_OPERATOR(%, remainder)
JX_DEFINE_BINARY_OPERATOR(==, equal)
JX_DEFINE_BINARY_OPERATOR(!=, not_equal)
JX_DEFINE_BINARY_OPERATOR(<, less)
JX_DEFINE_BINARY_OPERATOR(<=, less_equal)
JX_DEFINE_BINARY_OPERATOR(>, greater)
JX_DEFINE_BINARY_OPERATOR(>=, greater_equal)
JX_DEFINE_BINARY_OPERATOR(&, bitwise_and)
JX_DEFINE_BINARY_OPERATOR(|, bitwise_or)
JX_DEFINE_BINARY_OPERATOR(^, bitwise_xor)
JX_DEFINE_BINARY_OPERATOR(<<, left_shift)
JX_DEFINE_BINARY_OPERATOR(>>, right_shift)
#undef JX_DEFINE_BINARY_OPERATOR

Array operator-(const Array& x) { return numpy::negative(x); }
Array operator+(const Array& x) { return numpy::positive(x); }
Array operator~(const Array& x) { return numpy::bitwise_not(x); }

#define JX_DEFINE_COMPOUND_OPERATOR(OP, FN)                       \
  Array& operator OP(Array& x, const numpy::ArrayLike& y) {       \
    x = numpy::FN(x, y);                                          \
    return x;                                                     \
  }

JX_DEFINE_COMPOUND_OPERATOR(+=, add)
JX_DEFINE_COMPOUND_OPERATOR(-=, subtract)
JX_DEFINE_COMPOUND_OPERATOR(*=, multiply)
JX_DEFINE_COMPOUND_OPERATOR(/=, true_divide)
JX_DEFINE_COMPOUND_OPERATOR(%=, remainder)
JX_DEFINE_COMPOUND_OPERATOR(&=, bitwise_and)
JX_DEFINE_COMPOUND_OPERATOR(|=, bitwise_or)
JX_DEFINE_COMPOUND_OPERATOR(^=, bitwise_xor)
#undef JX_DEFINE_COMPOUND_OPERATOR

}  // namespace jx
