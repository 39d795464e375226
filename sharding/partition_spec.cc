#include "jx/sharding/partition_spec.h"

#include <ostream>

#include "jx/core/str_util.h"

namespace jx {

std::vector<std::string> PartitionSpec::axes() const {
  std::vector<std::string> out;
  for (const DimSpec& d : dims_) out.insert(out.end(), d.axes().begin(), d.axes().end());
  return out;
}

// Python's repr of the spec's tuple: None, 'x', ('x', 'y'); a one-entry spec keeps its comma.
std::string PartitionSpec::ToString() const {
  std::string out = "PartitionSpec(";
  for (size_t i = 0; i < dims_.size(); ++i) {
    const std::vector<std::string>& axes = dims_[i].axes();
    if (i > 0) out += ", ";
    if (axes.empty()) {
      out += "None";
    } else if (axes.size() == 1) {
      StrAppend(&out, "'", axes[0], "'");
    } else {
      out += "(";
      for (size_t k = 0; k < axes.size(); ++k) StrAppend(&out, k ? ", " : "", "'", axes[k], "'");
      out += ")";
    }
  }
  return StrCat(out, dims_.size() == 1 ? ",)" : ")");
}

std::ostream& operator<<(std::ostream& os, const PartitionSpec& p) { return os << p.ToString(); }

}  // namespace jx
