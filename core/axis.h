// jx::Axis: an axis argument of a reduction or shape function (jnp::sum(x, axis),
// x.sum(axis)): one axis, several, or none (= all axes). Negative axes count from the end.
//
//   jnp::sum(x);           // all axes
//   x.mean(1);             // axis 1
//   x.max({0, 2}, true);   // axes 0 and 2, keepdims
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string_view>
#include <vector>

namespace jx {

class Axis {
 public:
  Axis() = default;  // all axes
  Axis(int axis) : all_(false), axes_{axis} {}  // NOLINT
  Axis(int64_t axis) : all_(false), axes_{axis} {}  // NOLINT
  Axis(std::initializer_list<int64_t> axes) : all_(false), axes_(axes) {}
  Axis(std::vector<int64_t> axes) : all_(false), axes_(std::move(axes)) {}  // NOLINT
  bool all() const { return all_; }
  const std::vector<int64_t>& axes() const { return axes_; }
  // The sorted, canonical (nonnegative) axes for a rank; throws ValueError naming op on an
  // out-of-range or repeated axis.
  std::vector<int64_t> Canonical(int64_t rank, std::string_view op) const;

 private:
  bool all_ = true;
  std::vector<int64_t> axes_;
};

}  // namespace jx
