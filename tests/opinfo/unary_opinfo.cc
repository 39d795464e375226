// opinfo records for the unary elementwise family.
#include <cmath>

#include "opinfo.h"

namespace jx::opinfo {
namespace {

JX_OPINFO(sin) { return Unary("sin", lax::sin, [](double x) { return std::sin(x); }, kFloatDTypes); }
JX_OPINFO(exp) { return Unary("exp", lax::exp, [](double x) { return std::exp(x); }, kFloatDTypes); }

}  // namespace
}  // namespace jx::opinfo
