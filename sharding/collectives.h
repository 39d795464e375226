// Collective primitives over the manual mesh axes of a shard_map body (JAX's lax.psum,
// pmax, pmin, pmean, all_gather, psum_scatter, all_to_all, ppermute, axis_index, pvary).
// Each is an ordinary primitive with abstract eval (local shapes and varying-axes typing),
// jvp, transpose and batch rules; shard_map's eager path runs them across the per-device
// values, the compiled path lowers them to HLO collectives (podexec).
//
//   auto f = [](const Array& a, const Array& b) { return lax::psum(jnp::matmul(a, b), "y"); };
//   jx::shard_map(f, mesh, jx::in_specs{P("x", "y"), P("y", none)}, jx::out_specs{P("x", none)});
//
// Jaxprs print them as JAX does (today's JAX binds psum as `psum_invariant` under check_vma):
//   psum_invariant[axes=('y',)]  all_gather[all_gather_dimension=0 axis_name=x axis_size=4
//   tiled=True]  ppermute[axis_name=x perm=((0, 1), (1, 2), (2, 3), (3, 0))]  pvary[axes=('x',)]
//
// Parameters (for lowering; read them with CollectiveAxes / ReplicaGroups / PermutePairs):
//   psum_invariant, psum, pmax, pmin, pvary:  axes (tuple of names), mesh (a CollectiveMesh);
//                    one or several operands, one result per operand
//   all_gather:      axis_name, all_gather_dimension, axis_size, tiled, mesh
//   reduce_scatter:  axis_name, scatter_dimension, axis_size, tiled, mesh   (lax::psum_scatter)
//   all_to_all:      axis_name, split_axis, concat_axis, axis_size, tiled, mesh
//   ppermute:        axis_name, perm (((src, dst), ...) positions along axis_name), mesh
//   axis_index:      axis_name, mesh
// axis_name is one name ('x') or a tuple of names (several mesh axes flattened row-major in
// the order given). `mesh` records every axis of the shard_map's mesh (names and sizes, mesh
// order) and which are manual; it prints as nothing in jaxprs (JAX keeps it in the context).
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "jx/compiler/hlo/replica_groups.h"
#include "jx/core/array.h"
#include "jx/core/param_map.h"
#include "jx/core/primitive.h"
#include "jx/core/pytree.h"
#include "jx/core/registry.h"

namespace jx {

// The mesh a collective runs in, as a primitive parameter: every axis (mesh order) with its
// size, and the manual ones (those the shard_map body owns). Devices are numbered row-major
// over the axes, as Mesh::devices() lists them.
class CollectiveMesh final : public ParamObject {
 public:
  CollectiveMesh(std::vector<std::string> axis_names, std::vector<int64_t> axis_sizes,
                 std::vector<std::string> manual_axes);
  const std::vector<std::string>& axis_names() const { return axis_names_; }
  const std::vector<int64_t>& axis_sizes() const { return axis_sizes_; }
  const std::vector<std::string>& manual_axes() const { return manual_axes_; }
  int64_t num_devices() const;
  int64_t axis_size(const std::string& name) const;  // ValueError for an unknown axis
  bool is_manual(const std::string& name) const;
  // Device ids (flat, row-major over the mesh) of the groups varying only along `axes`,
  // ordered by the remaining axes; within a group, row-major over `axes` in the order given
  // (so member k of a group is the device at position k along the flattened axes).
  std::vector<std::vector<int64_t>> Groups(const std::vector<std::string>& axes) const;
  // The same groups in XLA's iota form (the mesh's ids reshaped to its axes, transposed so
  // `axes` come last): O(axes), no id listed.
  hlo::ReplicaGroups IotaGroups(const std::vector<std::string>& axes) const;
  // A device's position along the flattened `axes` (row-major in the order given).
  int64_t PositionAlong(int64_t device, const std::vector<std::string>& axes) const;
  // "Mesh('x': 4, 'y': 2)" (for errors).
  std::string MeshString() const;
  // The manual axes, "('x', 'y')" (for errors).
  std::string ManualString() const;

  size_t Hash() const override;
  bool Equals(const ParamObject& other) const override;
  std::string ToString() const override { return {}; }  // hidden in jaxprs

 private:
  // The positions of `axes` in the mesh; ValueError for an unknown axis or one named twice.
  std::vector<size_t> AxisPositions(const std::vector<std::string>& axes) const;

  std::vector<std::string> axis_names_;
  std::vector<int64_t> axis_sizes_;
  std::vector<std::string> manual_axes_;
};

// A tuple of mesh axis names as a parameter, printed as JAX prints one: ('x', 'y').
class AxisNamesParam final : public ParamObject {
 public:
  explicit AxisNamesParam(std::vector<std::string> names) : names_(std::move(names)) {}
  const std::vector<std::string>& names() const { return names_; }
  size_t Hash() const override;
  bool Equals(const ParamObject& other) const override;
  std::string ToString() const override;

 private:
  std::vector<std::string> names_;
};
Param AxisNamesTuple(std::vector<std::string> names);
// The names of an `axes`/`axis_name`-style parameter: a single name or an AxisNamesParam.
std::vector<std::string> AxisNamesOf(const Param& p);

// The collectives' parameters as the lowering needs them.
const CollectiveMesh& CollectiveMeshOf(const ParamMap& params);
// The axes a collective runs over (`axes` or `axis_name`, one or several names).
std::vector<std::string> CollectiveAxes(const ParamMap& params);
// Its replica groups: device ids, one group per combination of the other mesh axes (in
// the iota form).
hlo::ReplicaGroups ReplicaGroups(const ParamMap& params);
// ppermute's perm as given: (source, destination) positions along axis_name.
std::vector<std::pair<int64_t, int64_t>> PermOf(const ParamMap& params);
// ppermute's (source, destination) device-id pairs over the whole mesh (perm applied in
// every group).
std::vector<std::pair<int64_t, int64_t>> PermutePairs(const ParamMap& params);

// One or several mesh axis names: "x", std::string, {"x", "y"}.
class AxisNames {
 public:
  AxisNames(const char* name) : names_{name} {}
  AxisNames(std::string name) : names_{std::move(name)} {}
  AxisNames(std::initializer_list<std::string> names) : names_(names) {}
  explicit AxisNames(std::vector<std::string> names) : names_(std::move(names)) {}
  const std::vector<std::string>& names() const { return names_; }

 private:
  std::vector<std::string> names_;
};

void RegisterCollectives(Registry& r);

namespace lax {

inline const Primitive kPsum = Primitive::Intern("psum_invariant");
// psum in a body traced with check_vma=false (JAX's psum_p): values carry no varying-axes
// types there, so it transposes to itself (psum_invariant transposes to pvary).
inline const Primitive kPsumUntyped = Primitive::Intern("psum");
inline const Primitive kPmax = Primitive::Intern("pmax");
inline const Primitive kPmin = Primitive::Intern("pmin");
inline const Primitive kAllGather = Primitive::Intern("all_gather");
inline const Primitive kReduceScatter = Primitive::Intern("reduce_scatter");
inline const Primitive kAllToAll = Primitive::Intern("all_to_all");
inline const Primitive kPpermute = Primitive::Intern("ppermute");
inline const Primitive kAxisIndex = Primitive::Intern("axis_index");
inline const Primitive kPvary = Primitive::Intern("pvary");

// Whether p is one of the collectives above.
bool IsCollective(Primitive p);

// Each call must run inside a shard_map body whose manual axes include every name given;
// otherwise NameError-style ValueError naming the axis and the manual axes there are.
// Boolean inputs of the reductions are summed as int32, as JAX does.

// Sum over the axes; the result is invariant over them (psum of a value already invariant
// over an axis of size N is N times it).
Array psum(const Array& x, const AxisNames& axes);
Array pmax(const Array& x, const AxisNames& axes);
Array pmin(const Array& x, const AxisNames& axes);
// psum(x, axes) / (product of the axes' sizes).
Array pmean(const Array& x, const AxisNames& axes);
// Gathers every device's x along the axes: stacked on a new dimension `axis` (tiled=false),
// or concatenated along `axis` (tiled=true). The result is invariant over the axes.
Array all_gather(const Array& x, const AxisNames& axis_name, int64_t axis = 0, bool tiled = false);
// Sums over the axes and leaves device k with the k-th block of dimension scatter_dimension
// (tiled=false: that dimension must equal the group size and is removed).
Array psum_scatter(const Array& x, const AxisNames& axis_name, int64_t scatter_dimension = 0, bool tiled = false);
// Splits split_axis into group-size blocks, sends block k to device k and concatenates the
// received blocks along concat_axis (tiled=false: split_axis must equal the group size; it
// is removed and a new concat_axis of that size is inserted).
Array all_to_all(const Array& x, const AxisNames& axis_name, int64_t split_axis, int64_t concat_axis,
                 bool tiled = false);
// Sends each device's x to another along the axes: perm lists (source, destination)
// positions, no position twice as a source or as a destination; devices that receive
// nothing get zeros.
Array ppermute(const Array& x, const AxisNames& axis_name, std::vector<std::pair<int64_t, int64_t>> perm);
// The device's position along the axes (int32, varying over them).
Array axis_index(const AxisNames& axis_name);
// Marks x as varying over the axes (identity on values; its transpose is psum).
Array pvary(const Array& x, const AxisNames& axes);

// The pytree forms' single bind: psum/pmax/pmin/pvary of several arrays are ONE
// primitive of several operands (JAX binds `psum_invariant[axes=('i',)] a b`), lowered to one
// all-reduce of all of them (per element type). Each leaf is checked and converted as the
// single-array form does.
namespace internal {
std::vector<Array> PsumLeaves(std::vector<Array> leaves, const AxisNames& axes);
std::vector<Array> PmaxLeaves(std::vector<Array> leaves, const AxisNames& axes);
std::vector<Array> PminLeaves(std::vector<Array> leaves, const AxisNames& axes);
std::vector<Array> PmeanLeaves(std::vector<Array> leaves, const AxisNames& axes);
std::vector<Array> PvaryLeaves(std::vector<Array> leaves, const AxisNames& axes);
}  // namespace internal

// Pytree forms (a struct of arrays, a std::vector<Array>, ...): psum, pmean, pmax, pmin and
// pvary bind one collective of all the leaves; the others run on every leaf.
template <typename T>
  requires(!std::is_convertible_v<T, Array>)
T psum(const T& tree, const AxisNames& axes) {
  auto [leaves, def] = tree::flatten(tree);
  return tree::unflatten<T>(def, internal::PsumLeaves(std::move(leaves), axes));
}
template <typename T>
  requires(!std::is_convertible_v<T, Array>)
T pmean(const T& tree, const AxisNames& axes) {
  auto [leaves, def] = tree::flatten(tree);
  return tree::unflatten<T>(def, internal::PmeanLeaves(std::move(leaves), axes));
}
template <typename T>
  requires(!std::is_convertible_v<T, Array>)
T pmax(const T& tree, const AxisNames& axes) {
  auto [leaves, def] = tree::flatten(tree);
  return tree::unflatten<T>(def, internal::PmaxLeaves(std::move(leaves), axes));
}
template <typename T>
  requires(!std::is_convertible_v<T, Array>)
T pmin(const T& tree, const AxisNames& axes) {
  auto [leaves, def] = tree::flatten(tree);
  return tree::unflatten<T>(def, internal::PminLeaves(std::move(leaves), axes));
}
template <typename T>
  requires(!std::is_convertible_v<T, Array>)
T pvary(const T& tree, const AxisNames& axes) {
  auto [leaves, def] = tree::flatten(tree);
  return tree::unflatten<T>(def, internal::PvaryLeaves(std::move(leaves), axes));
}
template <typename T>
  requires(!std::is_convertible_v<T, Array>)
T ppermute(const T& tree, const AxisNames& axis_name, std::vector<std::pair<int64_t, int64_t>> perm) {
  auto [leaves, def] = tree::flatten(tree);
  for (Array& l : leaves) l = ppermute(l, axis_name, perm);
  return tree::unflatten<T>(def, leaves);
}
template <typename T>
  requires(!std::is_convertible_v<T, Array>)
T all_gather(const T& tree, const AxisNames& axis_name, int64_t axis = 0, bool tiled = false) {
  auto [leaves, def] = tree::flatten(tree);
  for (Array& l : leaves) l = all_gather(l, axis_name, axis, tiled);
  return tree::unflatten<T>(def, leaves);
}

}  // namespace lax
}  // namespace jx
