#include "jx/core/axis.h"

#include <algorithm>

#include "jx/core/errors.h"
#include "jx/core/shape.h"

namespace jx {

std::vector<int64_t> Axis::Canonical(int64_t rank, std::string_view op) const {
  std::vector<int64_t> out;
  if (all_) {
    out.resize(static_cast<size_t>(rank));
    for (int64_t i = 0; i < rank; ++i) out[static_cast<size_t>(i)] = i;
    return out;
  }
  for (int64_t a : axes_) {
    if (a < -rank || a >= rank) {
      ThrowOpError<ValueError>(op, "axis ", a, " is out of bounds for array of dimension ", rank);
    }
    out.push_back(a < 0 ? a + rank : a);
  }
  std::sort(out.begin(), out.end());
  if (std::adjacent_find(out.begin(), out.end()) != out.end()) {
    ThrowOpError<ValueError>(op, "repeated axis in ", ShapeToString(axes_), " for array of dimension ", rank);
  }
  return out;
}

}  // namespace jx
