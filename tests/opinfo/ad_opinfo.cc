// Records for the differentiation-only primitives.
#include "opinfo.h"

namespace jx::opinfo::ad_opinfo {

JX_OPINFO(stop_gradient) {
  OpInfo info = Unary("stop_gradient", lax::stop_gradient, [](double x) { return x; }, kAllDTypes);
  // Its derivative is zero by definition while finite differences see the identity, so the
  // derivative columns do not apply; tests/transforms/jacobian_test.cc checks the zero.
  info.differentiable = false;
  return info;
}

}  // namespace jx::opinfo::ad_opinfo
