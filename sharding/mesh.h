// Meshes: named logical axes over a grid of devices (JAX's jax.sharding.Mesh / AbstractMesh,
// jax.make_mesh). On a simulated pod, make_mesh lays the logical axes on the torus so that a
// logical axis is a physical ring (or line) of chips where possible; collectives over an axis
// then run over that axis's links.
//
//   auto pod = jx::tpu::make_pod("v5e", {4, 2});
//   jx::Mesh mesh = jx::make_mesh({4, 2}, {"x", "y"}, pod.devices());
//   mesh.shape();                 // {{"x", 4}, {"y", 2}}
//   mesh.devices();               // 8 chips, row-major over (x, y)
//   std::cout << mesh;            // Mesh('x': 4, 'y': 2, axis_types=(Explicit, Explicit))
//   jx::AbstractMesh plan({16, 16}, {"data", "model"});   // device-free, for planning
#pragma once

#include <cstdint>
#include <iosfwd>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace jx {

class Device;

// JAX's jax.sharding.AxisType: Explicit axes appear in types (f32[8@x,4]); Auto axes are
// left to the compiler's propagation; Manual axes are those a shard_map body owns.
enum class AxisType { kExplicit, kAuto, kManual };

// Axis names and sizes without devices (JAX's AbstractMesh): enough to type and plan.
class AbstractMesh {
 public:
  AbstractMesh() = default;
  // Throws ValueError when names repeat, sizes are < 1, or the lists' lengths differ
  // (axis_types empty: all Explicit).
  AbstractMesh(std::vector<int64_t> axis_sizes, std::vector<std::string> axis_names,
               std::vector<AxisType> axis_types = {});

  const std::vector<int64_t>& axis_sizes() const { return axis_sizes_; }
  const std::vector<std::string>& axis_names() const { return axis_names_; }
  const std::vector<AxisType>& axis_types() const { return axis_types_; }
  int64_t size() const;  // devices in the mesh
  int64_t rank() const { return static_cast<int64_t>(axis_sizes_.size()); }
  // Position of an axis by name; throws NameError-style ValueError listing the mesh's axes
  // ("unknown mesh axis 'z': the mesh has axes ('x', 'y')").
  int64_t axis_position(std::string_view name) const;
  int64_t axis_size(std::string_view name) const { return axis_sizes_[axis_position(name)]; }
  bool has_axis(std::string_view name) const;
  // Flat row-major positions of the groups that vary only along `axes` (the replica groups
  // of a collective over those axes), ordered by the remaining axes; within a group the
  // order is row-major over `axes` in the order given. Unknown or repeated names throw
  // ValueError. On {x: 4, y: 2}: AxisGroups({"x"}) == {{0, 2, 4, 6}, {1, 3, 5, 7}}.
  std::vector<std::vector<int64_t>> AxisGroups(const std::vector<std::string>& axes) const;
  std::string ToString() const;  // AbstractMesh('x': 4, 'y': 2, axis_types=(Explicit, Explicit))
  friend bool operator==(const AbstractMesh&, const AbstractMesh&) = default;

 private:
  std::vector<int64_t> axis_sizes_;
  std::vector<std::string> axis_names_;
  std::vector<AxisType> axis_types_;
};

// A mesh of concrete devices. Cheap to copy (shared, immutable).
class Mesh {
 public:
  Mesh() = default;
  // devices: row-major over axis_sizes (the last axis fastest); their number must be the
  // product of the sizes and none may repeat (ValueError otherwise).
  Mesh(std::vector<const Device*> devices, std::vector<int64_t> axis_sizes, std::vector<std::string> axis_names,
       std::vector<AxisType> axis_types = {});

  const AbstractMesh& abstract_mesh() const;
  const std::vector<int64_t>& axis_sizes() const { return abstract_mesh().axis_sizes(); }
  const std::vector<std::string>& axis_names() const { return abstract_mesh().axis_names(); }
  const std::vector<AxisType>& axis_types() const { return abstract_mesh().axis_types(); }
  int64_t size() const { return abstract_mesh().size(); }
  int64_t axis_size(std::string_view name) const { return abstract_mesh().axis_size(name); }
  // JAX's mesh.shape: (name, size) per axis.
  std::vector<std::pair<std::string, int64_t>> shape() const;
  // The devices, row-major over the axes.
  const std::vector<const Device*>& devices() const;
  // The device at a mesh position (one index per axis) and a device's position (ValueError
  // for a device not in the mesh).
  const Device* device_at(const std::vector<int64_t>& position) const;
  std::vector<int64_t> position_of(const Device* device) const;
  // The abstract mesh's AxisGroups: indices into devices() of each replica group over `axes`.
  std::vector<std::vector<int64_t>> AxisGroups(const std::vector<std::string>& axes) const {
    return abstract_mesh().AxisGroups(axes);
  }
  bool empty() const { return impl_ == nullptr; }
  std::string ToString() const;  // Mesh('x': 4, 'y': 2, axis_types=(Explicit, Explicit))
  // Same devices in the same places with the same axes.
  friend bool operator==(const Mesh& a, const Mesh& b);
  size_t Hash() const;

 private:
  struct Impl;
  std::shared_ptr<const Impl> impl_;
};

std::ostream& operator<<(std::ostream& os, const AbstractMesh& m);
std::ostream& operator<<(std::ostream& os, const Mesh& m);

// JAX's jax.make_mesh: a mesh of axis_shapes over `devices` (default: every device of the
// first registered "tpu" platform, else the host's), which must number the product of the
// shapes. On a simulated pod the devices are reordered so each logical axis lies along torus
// axes (a logical axis of the torus's size on one torus axis; a larger one spanning several
// whole torus axes); when no such layout exists the pod order is kept and the choice is
// logged. A v2/v3 pod (a device per TensorCore) is ordered as JAX's create_device_mesh
// orders v2/v3 devices: its 2x2-chip trays of 8 each go round their ring when the mesh has 8
// devices or a last axis of 8. Throws ValueError when the device count does not match.
Mesh make_mesh(const std::vector<int64_t>& axis_shapes, const std::vector<std::string>& axis_names,
               std::vector<const Device*> devices = {}, std::vector<AxisType> axis_types = {});

}  // namespace jx
