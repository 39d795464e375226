// The collectives' parameters and user API (JAX's lax.psum & co.). Their rules live in
// collectives_rules.cc, their evaluation across devices in collective_eval.cc.
#include "jx/sharding/collectives.h"

#include <algorithm>
#include <numeric>

#include "absl/hash/hash.h"
#include "absl/strings/str_join.h"
#include "jx/core/errors.h"
#include "jx/core/interpreter.h"
#include "jx/core/str_util.h"
#include "jx/lax/binary_ops.h"
#include "jx/lax/convert_ops.h"
#include "jx/lax/shape_ops.h"
#include "jx/sharding/manual_context.h"
#include "jx/transforms/builtin_rules.h"

namespace jx {

// ---- CollectiveMesh ----

CollectiveMesh::CollectiveMesh(std::vector<std::string> axis_names, std::vector<int64_t> axis_sizes,
                               std::vector<std::string> manual_axes)
    : axis_names_(std::move(axis_names)), axis_sizes_(std::move(axis_sizes)), manual_axes_(std::move(manual_axes)) {
  if (axis_names_.size() != axis_sizes_.size()) {
    throw InternalError("CollectiveMesh: axis names and sizes differ in number");
  }
}

int64_t CollectiveMesh::num_devices() const {
  return std::accumulate(axis_sizes_.begin(), axis_sizes_.end(), int64_t{1}, std::multiplies<>());
}

int64_t CollectiveMesh::axis_size(const std::string& name) const {
  for (size_t i = 0; i < axis_names_.size(); ++i) {
    if (axis_names_[i] == name) return axis_sizes_[i];
  }
  throw ValueError(StrCat("unknown mesh axis '", name, "': the mesh is ", MeshString()));
}

bool CollectiveMesh::is_manual(const std::string& name) const {
  return std::find(manual_axes_.begin(), manual_axes_.end(), name) != manual_axes_.end();
}

namespace {

std::string Quoted(const std::vector<std::string>& names) {
  std::vector<std::string> q;
  for (const std::string& n : names) q.push_back(StrCat("'", n, "'"));
  return StrCat("(", absl::StrJoin(q, ", "), names.size() == 1 ? ",)" : ")");
}

// Mesh coordinates of a flat device id (row-major over the axes).
std::vector<int64_t> Coords(int64_t device, const std::vector<int64_t>& sizes) {
  std::vector<int64_t> c(sizes.size());
  for (size_t i = sizes.size(); i-- > 0;) {
    c[i] = device % sizes[i];
    device /= sizes[i];
  }
  return c;
}

size_t AxisPosition(const std::vector<std::string>& names, const std::string& name) {
  return static_cast<size_t>(std::find(names.begin(), names.end(), name) - names.begin());
}

}  // namespace

std::vector<size_t> CollectiveMesh::AxisPositions(const std::vector<std::string>& axes) const {
  std::vector<size_t> pos;
  for (const std::string& a : axes) {
    axis_size(a);  // validates
    const size_t p = AxisPosition(axis_names_, a);
    if (std::find(pos.begin(), pos.end(), p) != pos.end()) {
      throw ValueError(StrCat("collective over mesh axes ", Quoted(axes), ": axis '", a, "' is named twice"));
    }
    pos.push_back(p);
  }
  return pos;
}

hlo::ReplicaGroups CollectiveMesh::IotaGroups(const std::vector<std::string>& axes) const {
  const std::vector<size_t> pos = AxisPositions(axes);
  std::vector<int64_t> perm;  // the other axes in mesh order, then `axes` as given
  int64_t group_size = 1;
  for (size_t i = 0; i < axis_sizes_.size(); ++i) {
    if (std::find(pos.begin(), pos.end(), i) == pos.end()) perm.push_back(static_cast<int64_t>(i));
  }
  for (const size_t p : pos) {
    perm.push_back(static_cast<int64_t>(p));
    group_size *= axis_sizes_[p];
  }
  absl::StatusOr<hlo::ReplicaGroups> groups =
      hlo::ReplicaGroups::Iota(num_devices() / group_size, group_size, axis_sizes_, std::move(perm));
  if (!groups.ok()) throw InternalError(StrCat("groups over ", Quoted(axes), " of ", MeshString(), ": ", groups.status().message()));
  return *std::move(groups);
}

std::vector<std::vector<int64_t>> CollectiveMesh::Groups(const std::vector<std::string>& axes) const {
  const std::vector<size_t> pos = AxisPositions(axes);
  // Groups keyed by the coordinates along the other axes, in row-major order of those (the
  // group index is computed, not searched: meshes of thousands of devices).
  std::vector<bool> grouped(axis_sizes_.size(), false);
  for (size_t p : pos) grouped[p] = true;
  int64_t num_groups = 1;
  for (size_t i = 0; i < axis_sizes_.size(); ++i) {
    if (!grouped[i]) num_groups *= axis_sizes_[i];
  }
  const int64_t n = num_devices();
  const int64_t group_size = n / num_groups;
  // Device d joins group g (its coordinates along the other axes) at its position along
  // `axes`: written in place, no per-device allocation or sort (pods of thousands of chips
  // lower thousands of collectives).
  std::vector<std::vector<int64_t>> groups(static_cast<size_t>(num_groups),
                                           std::vector<int64_t>(static_cast<size_t>(group_size)));
  std::vector<int64_t> c(axis_sizes_.size(), 0);  // d's coordinates, counted up row-major
  for (int64_t d = 0; d < n; ++d) {
    int64_t g = 0, a = 0;
    for (size_t i = 0; i < c.size(); ++i) {
      if (!grouped[i]) g = g * axis_sizes_[i] + c[i];
    }
    for (size_t p : pos) a = a * axis_sizes_[p] + c[p];
    groups[static_cast<size_t>(g)][static_cast<size_t>(a)] = d;
    for (size_t i = c.size(); i-- > 0;) {
      if (++c[i] < axis_sizes_[i]) break;
      c[i] = 0;
    }
  }
  return groups;
}

int64_t CollectiveMesh::PositionAlong(int64_t device, const std::vector<std::string>& axes) const {
  std::vector<int64_t> c = Coords(device, axis_sizes_);
  int64_t p = 0;
  for (const std::string& a : axes) {
    const size_t i = AxisPosition(axis_names_, a);
    p = p * axis_sizes_[i] + c[i];
  }
  return p;
}

std::string CollectiveMesh::MeshString() const {
  std::vector<std::string> parts;
  for (size_t i = 0; i < axis_names_.size(); ++i) parts.push_back(StrCat("'", axis_names_[i], "': ", axis_sizes_[i]));
  return StrCat("Mesh(", absl::StrJoin(parts, ", "), ")");
}

std::string CollectiveMesh::ManualString() const { return Quoted(manual_axes_); }

size_t CollectiveMesh::Hash() const { return absl::HashOf(axis_names_, axis_sizes_, manual_axes_); }

bool CollectiveMesh::Equals(const ParamObject& other) const {
  const auto* o = dynamic_cast<const CollectiveMesh*>(&other);
  return o != nullptr && o->axis_names_ == axis_names_ && o->axis_sizes_ == axis_sizes_ &&
         o->manual_axes_ == manual_axes_;
}

// ---- parameter readers ----

const CollectiveMesh& CollectiveMeshOf(const ParamMap& params) {
  const auto* m = dynamic_cast<const CollectiveMesh*>(params.GetObject("mesh").get());
  if (m == nullptr) throw InternalError("collective: parameter 'mesh' is not a CollectiveMesh");
  return *m;
}

size_t AxisNamesParam::Hash() const { return absl::HashOf(names_); }

bool AxisNamesParam::Equals(const ParamObject& other) const {
  const auto* o = dynamic_cast<const AxisNamesParam*>(&other);
  return o != nullptr && o->names_ == names_;
}

std::string AxisNamesParam::ToString() const { return Quoted(names_); }

Param AxisNamesTuple(std::vector<std::string> names) {
  return Param(std::make_shared<const AxisNamesParam>(std::move(names)));
}

std::vector<std::string> AxisNamesOf(const Param& p) {
  if (const auto* s = std::get_if<std::string>(&p.value)) return {*s};
  if (const auto* obj = std::get_if<std::shared_ptr<const ParamObject>>(&p.value)) {
    if (const auto* names = dynamic_cast<const AxisNamesParam*>(obj->get())) return names->names();
  }
  throw InternalError(StrCat("expected mesh axis names, got ", p.ToString()));
}

std::vector<std::string> CollectiveAxes(const ParamMap& params) {
  const Param* p = params.Find("axes");
  return AxisNamesOf(p != nullptr ? *p : params.Get("axis_name"));
}

hlo::ReplicaGroups ReplicaGroups(const ParamMap& params) {
  return CollectiveMeshOf(params).IotaGroups(CollectiveAxes(params));
}

std::vector<std::pair<int64_t, int64_t>> PermOf(const ParamMap& params) {
  std::vector<std::pair<int64_t, int64_t>> perm;
  for (const Param& pair : params.GetList("perm")) {
    const auto& v = std::get<std::vector<int64_t>>(pair.value);
    perm.emplace_back(v[0], v[1]);
  }
  return perm;
}

std::vector<std::pair<int64_t, int64_t>> PermutePairs(const ParamMap& params) {
  std::vector<std::pair<int64_t, int64_t>> pairs;
  const auto perm = PermOf(params);
  for (const std::vector<int64_t>& group : ReplicaGroups(params)) {
    for (const auto& [src, dst] : perm) pairs.emplace_back(group[src], group[dst]);
  }
  return pairs;
}

// ---- the manual context ----

namespace shard_map_internal {
namespace {
thread_local const ManualContext* current_context = nullptr;
}  // namespace

const ManualContext* CurrentManualContext() { return current_context; }

ManualContextScope::ManualContextScope(ManualContext context)
    : context_(std::move(context)), saved_(current_context) {
  current_context = &context_;
}
ManualContextScope::~ManualContextScope() { current_context = saved_; }

}  // namespace shard_map_internal

// ---- user API ----

namespace lax {
namespace {

using shard_map_internal::CurrentManualContext;
using shard_map_internal::ManualContext;

// The context a collective binds in, after checking its axis names: each must be a manual
// axis of the enclosing shard_map, and none may repeat.
const ManualContext& RequireAxes(std::string_view op, const std::vector<std::string>& axes) {
  const ManualContext* ctx = CurrentManualContext();
  if (axes.empty()) ThrowOpError<ValueError>(op, "needs at least one axis name");
  if (ctx == nullptr) {
    ThrowOpError<ValueError>(op, "unbound axis name '", axes[0],
                             "': collectives run inside a shard_map body, where the mesh's manual "
                             "axes are bound; no shard_map is being traced here");
  }
  for (size_t i = 0; i < axes.size(); ++i) {
    if (!ctx->mesh->is_manual(axes[i])) {
      ThrowOpError<ValueError>(op, "unbound axis name '", axes[i], "': the enclosing shard_map's manual axes are ",
                               ctx->mesh->ManualString(), " (mesh ", ctx->mesh->MeshString(), ")");
    }
    for (size_t j = 0; j < i; ++j) {
      if (axes[j] == axes[i]) ThrowOpError<ValueError>(op, "axis name '", axes[i], "' appears twice");
    }
  }
  return *ctx;
}

Param NamesParam(const std::vector<std::string>& names) { return AxisNamesTuple(names); }
// JAX prints a single axis_name bare ('x') and several as a tuple.
Param AxisNameParam(const std::vector<std::string>& names) {
  return names.size() == 1 ? Param(names[0]) : NamesParam(names);
}

int64_t GroupSize(const ManualContext& ctx, const std::vector<std::string>& axes) {
  int64_t n = 1;
  for (const std::string& a : axes) n *= ctx.mesh->axis_size(a);
  return n;
}

// The axes among `axes` that x does not vary over yet.
std::vector<std::string> MissingVma(const Array& x, const std::vector<std::string>& axes) {
  std::vector<std::string> missing;
  for (const std::string& a : axes) {
    if (std::find(x.aval().vma.begin(), x.aval().vma.end(), a) == x.aval().vma.end()) missing.push_back(a);
  }
  return missing;
}

// Under check_vma, collectives that take varying operands (JAX's insert_collective_pvary)
// first make x vary over every axis they run over.
Array VaryOver(const ManualContext& ctx, const Array& x, const std::vector<std::string>& axes) {
  if (!ctx.check_vma) return x;
  std::vector<std::string> missing = MissingVma(x, axes);
  if (missing.empty()) return x;
  return Bind1(kPvary, {x}, ParamMap{{"axes", NamesParam(missing)}, {"mesh", Param(ctx.mesh)}});
}

std::vector<Array> ToVector(Arrays xs) { return {std::make_move_iterator(xs.begin()), std::make_move_iterator(xs.end())}; }

Array BoolToInt(const Array& x) { return x.dtype() == DType::kBool ? convert_element_type(x, DType::kInt32) : x; }

// One bind of p over all the leaves (psum/pmax/pmin: boolean leaves summed as int32; psum
// first makes each leaf vary over the axes it is invariant over, as JAX's
// insert_collective_pvary does leaf by leaf).
std::vector<Array> Reduction(Primitive p, std::string_view op, std::vector<Array> leaves, const AxisNames& axes) {
  RegisterCollectives(GlobalRegistry());
  const ManualContext& ctx = RequireAxes(op, axes.names());
  if (leaves.empty()) return leaves;
  for (Array& x : leaves) {
    x = BoolToInt(x);
    // psum of a value invariant over an axis of size N is N times it.
    if (p == kPsum) x = VaryOver(ctx, x, axes.names());
  }
  return ToVector(Bind(p, leaves, ParamMap{{"axes", NamesParam(axes.names())}, {"mesh", Param(ctx.mesh)}}));
}

Primitive PsumPrimitive() {
  const ManualContext* ctx = CurrentManualContext();
  return ctx != nullptr && !ctx->check_vma ? kPsumUntyped : kPsum;
}

// psum(leaves) / (product of the axes' sizes), leaf by leaf.
std::vector<Array> Mean(std::vector<Array> leaves, const AxisNames& axes) {
  RegisterCollectives(GlobalRegistry());
  const ManualContext& ctx = RequireAxes("pmean", axes.names());
  std::vector<Array> sums = Reduction(PsumPrimitive(), "pmean", std::move(leaves), axes);
  for (Array& sum : sums) {
    sum = div(sum, convert_element_type(Array(GroupSize(ctx, axes.names())), sum.dtype(), /*weak_type=*/true));
  }
  return sums;
}

}  // namespace

bool IsCollective(Primitive p) {
  return p == kPsum || p == kPsumUntyped || p == kPmax || p == kPmin || p == kAllGather || p == kReduceScatter || p == kAllToAll ||
         p == kPpermute || p == kAxisIndex || p == kPvary;
}

Array psum(const Array& x, const AxisNames& axes) { return Reduction(PsumPrimitive(), "psum", {x}, axes)[0]; }
Array pmax(const Array& x, const AxisNames& axes) { return Reduction(kPmax, "pmax", {x}, axes)[0]; }
Array pmin(const Array& x, const AxisNames& axes) { return Reduction(kPmin, "pmin", {x}, axes)[0]; }
Array pmean(const Array& x, const AxisNames& axes) { return Mean({x}, axes)[0]; }

namespace internal {
std::vector<Array> PsumLeaves(std::vector<Array> leaves, const AxisNames& axes) {
  return Reduction(PsumPrimitive(), "psum", std::move(leaves), axes);
}
std::vector<Array> PmaxLeaves(std::vector<Array> leaves, const AxisNames& axes) {
  return Reduction(kPmax, "pmax", std::move(leaves), axes);
}
std::vector<Array> PminLeaves(std::vector<Array> leaves, const AxisNames& axes) {
  return Reduction(kPmin, "pmin", std::move(leaves), axes);
}
std::vector<Array> PmeanLeaves(std::vector<Array> leaves, const AxisNames& axes) { return Mean(std::move(leaves), axes); }
std::vector<Array> PvaryLeaves(std::vector<Array> leaves, const AxisNames& axes) {
  RegisterCollectives(GlobalRegistry());
  const ManualContext& ctx = RequireAxes("pvary", axes.names());
  if (leaves.empty()) return leaves;
  return ToVector(Bind(kPvary, leaves, ParamMap{{"axes", NamesParam(axes.names())}, {"mesh", Param(ctx.mesh)}}));
}
}  // namespace internal

Array all_gather(const Array& x, const AxisNames& axis_name, int64_t axis, bool tiled) {
  RegisterCollectives(GlobalRegistry());
  const ManualContext& ctx = RequireAxes("all_gather", axis_name.names());
  const int64_t rank = x.ndim() + (tiled ? 0 : 1);
  const int64_t dim = CanonicalizeAxis(axis, std::max<int64_t>(rank, 1), "all_gather");
  Array in = VaryOver(ctx, x, axis_name.names());
  return Bind1(kAllGather, {in},
               ParamMap{{"all_gather_dimension", dim},
                        {"axis_name", AxisNameParam(axis_name.names())},
                        {"axis_size", GroupSize(ctx, axis_name.names())},
                        {"mesh", Param(ctx.mesh)},
                        {"tiled", tiled}});
}

Array psum_scatter(const Array& x, const AxisNames& axis_name, int64_t scatter_dimension, bool tiled) {
  RegisterCollectives(GlobalRegistry());
  const ManualContext& ctx = RequireAxes("psum_scatter", axis_name.names());
  const int64_t dim = CanonicalizeAxis(scatter_dimension, x.ndim(), "psum_scatter");
  Array in = VaryOver(ctx, BoolToInt(x), axis_name.names());
  return Bind1(kReduceScatter, {in},
               ParamMap{{"axis_name", AxisNameParam(axis_name.names())},
                        {"axis_size", GroupSize(ctx, axis_name.names())},
                        {"mesh", Param(ctx.mesh)},
                        {"scatter_dimension", dim},
                        {"tiled", tiled}});
}

Array all_to_all(const Array& x, const AxisNames& axis_name, int64_t split_axis, int64_t concat_axis, bool tiled) {
  RegisterCollectives(GlobalRegistry());
  const ManualContext& ctx = RequireAxes("all_to_all", axis_name.names());
  const int64_t n = GroupSize(ctx, axis_name.names());
  int64_t split = CanonicalizeAxis(split_axis, x.ndim(), "all_to_all");
  int64_t concat = CanonicalizeAxis(concat_axis, x.ndim(), "all_to_all");
  Array in = VaryOver(ctx, x, axis_name.names());
  if (!tiled) {
    // JAX's untiled form: split_axis (of the group's size) is removed and a new axis of that
    // size appears at concat_axis; the primitive itself always splits and concatenates.
    JX_CHECK_OP(x.shape()[static_cast<size_t>(split)] == n, ShapeError, "all_to_all",
                "with tiled=False, split_axis ", split, " of ", x.aval().str(), " must equal the size of ",
                AxisNameParam(axis_name.names()).ToString(), " (", n, ")");
    if (split < concat) {
      ++concat;
    } else if (split > concat) {
      ++split;
    }
    in = lax::expand_dims(in, {concat});
  }
  Array out = Bind1(kAllToAll, {in},
                    ParamMap{{"axis_name", AxisNameParam(axis_name.names())},
                             {"axis_size", n},
                             {"concat_axis", concat},
                             {"mesh", Param(ctx.mesh)},
                             {"split_axis", split},
                             {"tiled", tiled}});
  return tiled ? out : lax::squeeze(out, {split});
}

Array ppermute(const Array& x, const AxisNames& axis_name, std::vector<std::pair<int64_t, int64_t>> perm) {
  RegisterCollectives(GlobalRegistry());
  const ManualContext& ctx = RequireAxes("ppermute", axis_name.names());
  ParamList pairs;
  for (const auto& [src, dst] : perm) pairs.emplace_back(std::vector<int64_t>{src, dst});
  Array in = VaryOver(ctx, x, axis_name.names());
  return Bind1(kPpermute, {in},
               ParamMap{{"axis_name", AxisNameParam(axis_name.names())},
                        {"mesh", Param(ctx.mesh)},
                        {"perm", Param(std::move(pairs))}});
}

Array axis_index(const AxisNames& axis_name) {
  RegisterCollectives(GlobalRegistry());
  const ManualContext& ctx = RequireAxes("axis_index", axis_name.names());
  return Bind(kAxisIndex, {}, ParamMap{{"axis_name", AxisNameParam(axis_name.names())}, {"mesh", Param(ctx.mesh)}})[0];
}

Array pvary(const Array& x, const AxisNames& axes) { return internal::PvaryLeaves({x}, axes)[0]; }

}  // namespace lax
}  // namespace jx
