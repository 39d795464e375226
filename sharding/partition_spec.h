// PartitionSpec (JAX's jax.sharding.PartitionSpec, aliased P): for each leading dimension of
// an array, the mesh axes it is split over (none, one, or several, major first). Trailing
// dimensions not named are unsplit.
//
//   jx::P("x", jx::none)          // dim 0 split over x, dim 1 whole
//   jx::P({"x", "y"}, jx::none)   // dim 0 split over x then y (x major)
//   jx::P()                       // fully replicated
//   std::cout << jx::P("x", jx::none);   // PartitionSpec('x', None)
#pragma once

#include <cstdint>
#include <initializer_list>
#include <iosfwd>
#include <string>
#include <vector>

#include "jx/core/none.h"

namespace jx {

// One dimension's entry: the mesh axes splitting it (empty: not split).
class DimSpec {
 public:
  DimSpec() = default;
  DimSpec(NoneType) {}
  DimSpec(const char* axis) : axes_{axis} {}
  DimSpec(std::string axis) : axes_{std::move(axis)} {}
  DimSpec(std::initializer_list<std::string> axes) : axes_(axes) {}
  explicit DimSpec(std::vector<std::string> axes) : axes_(std::move(axes)) {}
  const std::vector<std::string>& axes() const { return axes_; }
  bool is_none() const { return axes_.empty(); }
  friend bool operator==(const DimSpec&, const DimSpec&) = default;

 private:
  std::vector<std::string> axes_;
};

class PartitionSpec {
 public:
  PartitionSpec() = default;
  explicit PartitionSpec(std::vector<DimSpec> dims) : dims_(std::move(dims)) {}
  const std::vector<DimSpec>& dims() const { return dims_; }
  int64_t size() const { return static_cast<int64_t>(dims_.size()); }
  // Dimension i's entry (none beyond the listed ones).
  const DimSpec& operator[](int64_t i) const {
    static const DimSpec kWhole;
    return i < size() ? dims_[i] : kWhole;
  }
  // Every mesh axis named, in order of appearance.
  std::vector<std::string> axes() const;
  std::string ToString() const;  // PartitionSpec('x', None), PartitionSpec(('x', 'y'),)
  friend bool operator==(const PartitionSpec&, const PartitionSpec&) = default;

 private:
  std::vector<DimSpec> dims_;
};

std::ostream& operator<<(std::ostream& os, const PartitionSpec& p);

// jx::P(...): a PartitionSpec from up to eight entries (each a name, jx::none or {names}).
inline PartitionSpec P() { return PartitionSpec(); }
inline PartitionSpec P(DimSpec a) { return PartitionSpec({std::move(a)}); }
inline PartitionSpec P(DimSpec a, DimSpec b) { return PartitionSpec({std::move(a), std::move(b)}); }
inline PartitionSpec P(DimSpec a, DimSpec b, DimSpec c) { return PartitionSpec({std::move(a), std::move(b), std::move(c)}); }
inline PartitionSpec P(DimSpec a, DimSpec b, DimSpec c, DimSpec d) {
  return PartitionSpec({std::move(a), std::move(b), std::move(c), std::move(d)});
}
inline PartitionSpec P(DimSpec a, DimSpec b, DimSpec c, DimSpec d, DimSpec e) {
  return PartitionSpec({std::move(a), std::move(b), std::move(c), std::move(d), std::move(e)});
}
inline PartitionSpec P(DimSpec a, DimSpec b, DimSpec c, DimSpec d, DimSpec e, DimSpec f) {
  return PartitionSpec({std::move(a), std::move(b), std::move(c), std::move(d), std::move(e), std::move(f)});
}

}  // namespace jx
