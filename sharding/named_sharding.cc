#include "jx/sharding/named_sharding.h"

#include <algorithm>

#include "absl/hash/hash.h"
#include "jx/core/errors.h"
#include "jx/core/str_util.h"

namespace jx {

NamedSharding::NamedSharding(Mesh mesh, PartitionSpec spec) : mesh_(std::move(mesh)), spec_(std::move(spec)) {
  if (mesh_.empty()) ThrowOpError<ValueError>("NamedSharding", "the mesh is empty (a default-constructed Mesh)");
  const AbstractMesh& a = mesh_.abstract_mesh();
  std::vector<std::string> seen;
  for (const std::string& axis : spec_.axes()) {
    if (!a.has_axis(axis)) {
      std::string names = "(";
      for (size_t i = 0; i < a.axis_names().size(); ++i) StrAppend(&names, i ? ", " : "", "'", a.axis_names()[i], "'");
      names += a.axis_names().size() == 1 ? ",)" : ")";
      ThrowOpError<ValueError>("NamedSharding", "Resource axis: ", axis, " of ", spec_.ToString(),
                               " is not found in mesh: ", names, ".");
    }
    if (std::find(seen.begin(), seen.end(), axis) != seen.end()) {
      ThrowOpError<ValueError>("NamedSharding", "A single NamedSharding spec specification can map every mesh axis "
                               "to at most one positional dimension, but ", spec_.ToString(),
                               " has duplicate entries for `", axis, "`");
    }
    seen.push_back(axis);
  }
}

int64_t NamedSharding::num_pieces(int64_t dim) const {
  int64_t n = 1;
  for (const std::string& axis : spec_[dim].axes()) n *= mesh_.axis_size(axis);
  return n;
}

void NamedSharding::CheckCompatible(const Shape& global_shape, std::string_view op) const {
  const int64_t rank = static_cast<int64_t>(global_shape.size());
  if (rank < spec_.size()) {
    ThrowOpError<ShapeError>(op, "Sharding ", ToString(), " is only valid for values of rank at least ", spec_.size(),
                             ", but was applied to a value of rank ", rank, ".",
                             rank == 0 ? " For scalars the PartitionSpec should be P()" : "");
  }
  for (int64_t d = 0; d < spec_.size(); ++d) {
    const int64_t pieces = num_pieces(d);
    if (global_shape[d] % pieces != 0) {
      ThrowOpError<ShapeError>(op, "the sharding ", ToString(), " implies that the global size of dimension ", d,
                               " should be divisible by ", pieces, ", but it is equal to ", global_shape[d],
                               " (full shape: ", ShapeToString(global_shape), ")");
    }
  }
}

std::vector<ShardIndex> NamedSharding::devices_indices(const Shape& global_shape) const {
  CheckCompatible(global_shape, "NamedSharding");
  const AbstractMesh& a = mesh_.abstract_mesh();
  std::vector<ShardIndex> out;
  out.reserve(mesh_.devices().size());
  for (const Device* device : mesh_.devices()) {
    const std::vector<int64_t> pos = mesh_.position_of(device);
    ShardIndex index;
    for (size_t d = 0; d < global_shape.size(); ++d) {
      int64_t piece = 0;  // row-major over the dim's axes, the first major
      for (const std::string& axis : spec_[d].axes()) {
        const int64_t p = a.axis_position(axis);
        piece = piece * a.axis_sizes()[p] + pos[p];
      }
      const int64_t chunk = global_shape[d] / num_pieces(d);
      index.emplace_back(piece * chunk, (piece + 1) * chunk);
    }
    out.push_back(std::move(index));
  }
  return out;
}

Shape NamedSharding::shard_shape(const Shape& global_shape) const {
  CheckCompatible(global_shape, "NamedSharding");
  Shape out = global_shape;
  for (int64_t d = 0; d < spec_.size(); ++d) out[d] /= num_pieces(d);
  return out;
}

bool NamedSharding::is_fully_replicated() const {
  for (const std::string& axis : spec_.axes()) {
    if (mesh_.axis_size(axis) > 1) return false;
  }
  return true;
}

std::vector<std::vector<std::string>> NamedSharding::TypeSpec(int64_t rank) const {
  const AbstractMesh& a = mesh_.abstract_mesh();
  std::vector<std::vector<std::string>> out(static_cast<size_t>(std::max<int64_t>(rank, 0)));
  bool any = false;
  for (int64_t d = 0; d < rank && d < spec_.size(); ++d) {
    for (const std::string& axis : spec_[d].axes()) {
      if (a.axis_types()[a.axis_position(axis)] != AxisType::kExplicit) continue;  // Auto/Manual: not typed
      out[d].push_back(axis);
      any = true;
    }
  }
  if (!any) out.clear();
  return out;
}

std::string NamedSharding::ToString() const {
  return StrCat("NamedSharding(mesh=", mesh_.ToString(), ", spec=", spec_.ToString(), ")");
}

bool NamedSharding::Equals(const Sharding& other) const {
  const auto* o = dynamic_cast<const NamedSharding*>(&other);
  if (o == nullptr) return false;
  if (!(o->mesh_ == mesh_)) return false;
  // Trailing unsplit entries do not change the layout: P('x') == P('x', None).
  const int64_t n = std::max(spec_.size(), o->spec_.size());
  for (int64_t d = 0; d < n; ++d) {
    if (!(spec_[d] == o->spec_[d])) return false;
  }
  return true;
}

size_t NamedSharding::Hash() const {
  size_t h = mesh_.Hash();
  int64_t last = spec_.size();
  while (last > 0 && spec_[last - 1].is_none()) --last;
  for (int64_t d = 0; d < last; ++d) h = absl::HashOf(h, d, spec_[d].axes());
  return h;
}

}  // namespace jx
