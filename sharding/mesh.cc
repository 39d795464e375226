#include "jx/sharding/mesh.h"

#include <algorithm>
#include <ostream>

#include "absl/hash/hash.h"
#include "absl/strings/str_join.h"
#include "jx/core/device.h"
#include "jx/core/errors.h"
#include "jx/core/str_util.h"

namespace jx {
namespace {

const char* AxisTypeName(AxisType t) {
  switch (t) {
    case AxisType::kExplicit: return "Explicit";
    case AxisType::kAuto: return "Auto";
    case AxisType::kManual: return "Manual";
  }
  return "?";
}

// ('x', 'y'): a Python tuple of the names, as JAX's messages show axis names.
std::string NamesTuple(const std::vector<std::string>& names) {
  std::string out = "(";
  for (size_t i = 0; i < names.size(); ++i) StrAppend(&out, i ? ", " : "", "'", names[i], "'");
  return StrCat(out, names.size() == 1 ? ",)" : ")");
}

// 'x': 4, 'y': 2, axis_types=(Explicit, Explicit): the body of JAX's str(mesh).
std::string MeshBody(const AbstractMesh& m) {
  std::string out;
  for (int64_t i = 0; i < m.rank(); ++i) StrAppend(&out, i ? ", " : "", "'", m.axis_names()[i], "': ", m.axis_sizes()[i]);
  std::string types = "(";
  for (size_t i = 0; i < m.axis_types().size(); ++i) StrAppend(&types, i ? ", " : "", AxisTypeName(m.axis_types()[i]));
  types += m.axis_types().size() == 1 ? ",)" : ")";
  return StrCat(out, m.rank() > 0 ? ", " : "", "axis_types=", types);
}

}  // namespace

AbstractMesh::AbstractMesh(std::vector<int64_t> axis_sizes, std::vector<std::string> axis_names,
                           std::vector<AxisType> axis_types)
    : axis_sizes_(std::move(axis_sizes)), axis_names_(std::move(axis_names)), axis_types_(std::move(axis_types)) {
  if (axis_types_.empty()) axis_types_.assign(axis_sizes_.size(), AxisType::kExplicit);
  if (axis_names_.size() != axis_sizes_.size() || axis_types_.size() != axis_sizes_.size()) {
    ThrowOpError<ValueError>("Mesh", "got ", axis_sizes_.size(), " axis sizes (", absl::StrJoin(axis_sizes_, ", "),
                             "), ", axis_names_.size(), " axis names ", NamesTuple(axis_names_), " and ",
                             axis_types_.size(), " axis types: give one name (and type) per axis");
  }
  for (size_t i = 0; i < axis_sizes_.size(); ++i) {
    if (axis_sizes_[i] < 1) {
      ThrowOpError<ValueError>("Mesh", "axis '", axis_names_[i], "' has size ", axis_sizes_[i],
                               "; every mesh axis needs at least one device");
    }
    for (size_t j = 0; j < i; ++j) {
      if (axis_names_[i] == axis_names_[j]) {
        ThrowOpError<ValueError>("Mesh", "axis names must be unique, but '", axis_names_[i], "' appears twice in ",
                                 NamesTuple(axis_names_));
      }
    }
  }
}

int64_t AbstractMesh::size() const {
  int64_t n = 1;
  for (int64_t s : axis_sizes_) n *= s;
  return n;
}

int64_t AbstractMesh::axis_position(std::string_view name) const {
  for (size_t i = 0; i < axis_names_.size(); ++i) {
    if (axis_names_[i] == name) return static_cast<int64_t>(i);
  }
  throw ValueError(StrCat("unknown mesh axis '", name, "': the mesh has axes ", NamesTuple(axis_names_)));
}

bool AbstractMesh::has_axis(std::string_view name) const {
  return std::find(axis_names_.begin(), axis_names_.end(), name) != axis_names_.end();
}

std::vector<std::vector<int64_t>> AbstractMesh::AxisGroups(const std::vector<std::string>& axes) const {
  const AbstractMesh& a = *this;
  const size_t rank = axis_sizes_.size();
  std::vector<int64_t> strides(rank, 1);
  for (size_t i = rank; i-- > 1;) strides[i - 1] = strides[i] * axis_sizes_[i];
  std::vector<bool> in_group(rank, false);
  std::vector<int64_t> group_axes;
  for (const std::string& name : axes) {
    const int64_t p = a.axis_position(name);
    if (in_group[p]) {
      ThrowOpError<ValueError>("AxisGroups", "axis '", name, "' is named twice in ", NamesTuple(axes));
    }
    in_group[p] = true;
    group_axes.push_back(p);
  }
  std::vector<int64_t> rest_axes;
  for (size_t i = 0; i < rank; ++i) {
    if (!in_group[i]) rest_axes.push_back(static_cast<int64_t>(i));
  }
  // Enumerates positions of `dims` row-major (the last fastest), calling f with each.
  auto for_each = [&](const std::vector<int64_t>& dims, std::vector<int64_t>& pos, auto&& f) {
    int64_t count = 1;
    for (int64_t d : dims) count *= a.axis_sizes()[d];
    for (int64_t n = 0; n < count; ++n) {
      int64_t r = n;
      for (size_t k = dims.size(); k-- > 0;) {
        pos[dims[k]] = r % a.axis_sizes()[dims[k]];
        r /= a.axis_sizes()[dims[k]];
      }
      f();
    }
  };
  std::vector<std::vector<int64_t>> groups;
  std::vector<int64_t> pos(rank, 0);
  for_each(rest_axes, pos, [&] {
    std::vector<int64_t> group;
    for_each(group_axes, pos, [&] {
      int64_t flat = 0;
      for (size_t i = 0; i < rank; ++i) flat += pos[i] * strides[i];
      group.push_back(flat);
    });
    groups.push_back(std::move(group));
  });
  return groups;
}

std::string AbstractMesh::ToString() const { return StrCat("AbstractMesh(", MeshBody(*this), ")"); }

struct Mesh::Impl {
  AbstractMesh abstract;
  std::vector<const Device*> devices;
  std::vector<int64_t> strides;  // row-major strides over the axes
};

Mesh::Mesh(std::vector<const Device*> devices, std::vector<int64_t> axis_sizes, std::vector<std::string> axis_names,
           std::vector<AxisType> axis_types) {
  auto impl = std::make_shared<Impl>();
  impl->abstract = AbstractMesh(std::move(axis_sizes), std::move(axis_names), std::move(axis_types));
  const AbstractMesh& a = impl->abstract;
  if (static_cast<int64_t>(devices.size()) != a.size()) {
    ThrowOpError<ValueError>("Mesh", "a mesh of shape (", absl::StrJoin(a.axis_sizes(), ", "), ") needs ", a.size(),
                             " devices, got ", devices.size());
  }
  for (size_t i = 0; i < devices.size(); ++i) {
    if (devices[i] == nullptr) ThrowOpError<ValueError>("Mesh", "device ", i, " is null");
    for (size_t j = 0; j < i; ++j) {
      if (devices[i] == devices[j]) {
        ThrowOpError<ValueError>("Mesh", "device ", devices[i]->ToString(), " appears twice (positions ", j, " and ",
                                 i, "); a mesh's devices must be distinct");
      }
    }
  }
  impl->devices = std::move(devices);
  impl->strides.assign(a.axis_sizes().size(), 1);
  for (size_t i = a.axis_sizes().size(); i-- > 1;) impl->strides[i - 1] = impl->strides[i] * a.axis_sizes()[i];
  impl_ = std::move(impl);
}

const AbstractMesh& Mesh::abstract_mesh() const {
  static const AbstractMesh* const kEmpty = new AbstractMesh();
  return impl_ ? impl_->abstract : *kEmpty;
}

std::vector<std::pair<std::string, int64_t>> Mesh::shape() const {
  std::vector<std::pair<std::string, int64_t>> out;
  for (size_t i = 0; i < axis_names().size(); ++i) out.emplace_back(axis_names()[i], axis_sizes()[i]);
  return out;
}

const std::vector<const Device*>& Mesh::devices() const {
  static const std::vector<const Device*>* const kNone = new std::vector<const Device*>();
  return impl_ ? impl_->devices : *kNone;
}

const Device* Mesh::device_at(const std::vector<int64_t>& position) const {
  if (position.size() != axis_sizes().size()) {
    ThrowOpError<ValueError>("Mesh.device_at", "a position of mesh ", ToString(), " has ", axis_sizes().size(),
                             " indices, got ", position.size());
  }
  int64_t flat = 0;
  for (size_t i = 0; i < position.size(); ++i) {
    if (position[i] < 0 || position[i] >= axis_sizes()[i]) {
      ThrowOpError<ValueError>("Mesh.device_at", "index ", position[i], " is out of range for axis '",
                               axis_names()[i], "' of size ", axis_sizes()[i]);
    }
    flat += position[i] * impl_->strides[i];
  }
  return impl_->devices[flat];
}

std::vector<int64_t> Mesh::position_of(const Device* device) const {
  const auto& ds = devices();
  auto it = std::find(ds.begin(), ds.end(), device);
  if (it == ds.end()) {
    ThrowOpError<ValueError>("Mesh.position_of", device != nullptr ? device->ToString() : "null device",
                             " is not a device of ", ToString());
  }
  int64_t flat = it - ds.begin();
  std::vector<int64_t> pos(axis_sizes().size());
  for (size_t i = 0; i < pos.size(); ++i) {
    pos[i] = flat / impl_->strides[i];
    flat %= impl_->strides[i];
  }
  return pos;
}

std::string Mesh::ToString() const {
  if (empty()) return "Mesh()";
  return StrCat("Mesh(", MeshBody(abstract_mesh()), ")");
}

bool operator==(const Mesh& a, const Mesh& b) {
  if (a.impl_ == b.impl_) return true;
  return a.abstract_mesh() == b.abstract_mesh() && a.devices() == b.devices();
}

size_t Mesh::Hash() const {
  const AbstractMesh& a = abstract_mesh();
  return absl::HashOf(a.axis_sizes(), a.axis_names(), devices());
}

std::ostream& operator<<(std::ostream& os, const AbstractMesh& m) { return os << m.ToString(); }
std::ostream& operator<<(std::ostream& os, const Mesh& m) { return os << m.ToString(); }

}  // namespace jx
