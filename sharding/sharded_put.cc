#include "jx/sharding/sharded_put.h"

#include <algorithm>
#include <cstring>
#include <memory>
#include <optional>

#include "absl/strings/str_join.h"
#include "jx/core/abstract_mesh_context.h"
#include "jx/core/buffer.h"
#include "jx/core/device.h"
#include "jx/core/errors.h"
#include "jx/core/sharding.h"
#include "jx/core/str_util.h"
#include "jx/sharding/eager_collective_clock.h"

namespace jx {
namespace {

// A row-major block of the global array in memory: where it starts (global coordinates)
// and its shape.
struct Block {
  const char* src = nullptr;
  char* dst = nullptr;
  std::vector<int64_t> origin;
  Shape shape;
};

// Copies the global box [start, stop) per dimension from one block to another (both
// contain it).
void CopyBox(const Block& from, const Block& to, const ShardIndex& box, int64_t item) {
  const size_t rank = box.size();
  if (rank == 0) {
    std::memcpy(to.dst, from.src, static_cast<size_t>(item));
    return;
  }
  for (const auto& [start, stop] : box) {
    if (stop <= start) return;
  }
  const std::vector<int64_t> from_strides = RowMajorStrides(from.shape), to_strides = RowMajorStrides(to.shape);
  const size_t run = static_cast<size_t>((box[rank - 1].second - box[rank - 1].first) * item);
  std::vector<int64_t> pos(rank);  // global coordinates of the current run's first element
  for (size_t d = 0; d < rank; ++d) pos[d] = box[d].first;
  while (true) {
    int64_t from_offset = 0, to_offset = 0;
    for (size_t d = 0; d < rank; ++d) {
      from_offset += (pos[d] - from.origin[d]) * from_strides[d];
      to_offset += (pos[d] - to.origin[d]) * to_strides[d];
    }
    std::memcpy(to.dst + to_offset * item, from.src + from_offset * item, run);
    size_t d = rank - 1;
    while (d-- > 0) {
      if (++pos[d] < box[d].second) break;
      pos[d] = box[d].first;
    }
    if (d == static_cast<size_t>(-1)) return;
  }
}

std::vector<int64_t> Starts(const ShardIndex& index) {
  std::vector<int64_t> out;
  for (const auto& [start, stop] : index) out.push_back(start);
  return out;
}

// Fills the piece `index` (its memory at dst) of x: from x's own pieces when x is sharded
// (each part copied from the first copy holding it, as a reshard moves it chip to chip),
// else from x's whole value.
void FillPiece(const Array& x, const ConcreteArray& c, const ShardIndex& index, const Shape& piece_shape,
               char* dst) {
  const int64_t item = ItemSize(x.dtype());
  const Block to{nullptr, dst, Starts(index), piece_shape};
  if (!c.is_sharded()) {
    CopyBox(Block{static_cast<const char*>(x.data()), nullptr, std::vector<int64_t>(index.size(), 0), x.shape()}, to,
            index, item);
    return;
  }
  for (const Shard& from : c.sharded()->shards) {
    if (from.replica_id != 0) continue;
    ShardIndex box(index.size());
    for (size_t d = 0; d < index.size(); ++d) {
      box[d] = {std::max(index[d].first, from.index[d].first), std::min(index[d].second, from.index[d].second)};
    }
    CopyBox(Block{static_cast<const char*>(from.data.data()), nullptr, Starts(from.index), from.data.shape()}, to, box,
            item);
  }
}

// The mesh axes of a NamedSharding, for core's traces: jit and make_jaxpr put their sharded
// arguments' mesh in context while they trace them (core/abstract_mesh_context.h).
std::optional<MeshAxisSizes> MeshAxesOfNamedSharding(const Sharding& sharding) {
  const auto* named = dynamic_cast<const NamedSharding*>(&sharding);
  if (named == nullptr) return std::nullopt;
  return named->mesh().shape();
}

// Installed once the first array is sharded over a mesh.
void InstallMeshAxesOfNamedSharding() {
  static const bool installed = [] {
    SetMeshAxesOfSharding(MeshAxesOfNamedSharding);
    return true;
  }();
  (void)installed;
}

}  // namespace

Array sharding_internal::DevicePutSharded(const Array& x, const NamedSharding& sharding) {
  shard_map_internal::InstallShardedGatherCost();  // gathering it back is costed on the ICI
  if (!x.defined()) ThrowOpError<ValueError>("device_put", "argument is an empty Array handle");
  if (!x.is_concrete()) {
    ThrowOpError<TypeError>("device_put", "got a traced ", x.aval().str(), " value: device_put places concrete "
                            "arrays; call it outside jit and other transformations (inside, use "
                            "lax::with_sharding_constraint)");
  }
  RegisterBuiltinClients();
  const auto& c = static_cast<const ConcreteArray&>(*x.impl());
  if (x.is_deleted()) (void)x.data();  // throws the deleted array's RuntimeError
  if (c.is_sharded() && c.sharded()->sharding->Equals(sharding)) return x;
  const Shape& shape = x.shape();
  sharding.CheckCompatible(shape, "device_put");
  const std::vector<ShardIndex> indices = sharding.devices_indices(shape);
  const Shape piece_shape = sharding.shard_shape(shape);
  ShapedArray piece_aval{piece_shape, x.dtype(), x.aval().weak_type};

  const std::vector<const Device*>& devices = sharding.device_set();
  std::vector<Array> pieces;
  pieces.reserve(devices.size());
  for (size_t i = 0; i < devices.size(); ++i) {
    // A failed allocation throws here; the pieces made so far are freed with `pieces`.
    std::shared_ptr<Buffer> buffer = devices[i]->Allocate(piece_aval.nbytes());
    FillPiece(x, c, indices[i], piece_shape, static_cast<char*>(buffer->data()));
    pieces.push_back(Array(std::make_shared<ConcreteArray>(piece_aval, std::move(buffer), devices[i], /*committed=*/true)));
  }
  return make_array_from_single_device_arrays(shape, sharding, std::move(pieces));
}

Array make_array_from_single_device_arrays(const Shape& shape, const NamedSharding& sharding,
                                           std::vector<Array> arrays) {
  shard_map_internal::InstallShardedGatherCost();
  InstallMeshAxesOfNamedSharding();
  const std::vector<const Device*>& devices = sharding.device_set();
  if (arrays.size() != devices.size()) {
    ThrowOpError<ValueError>("make_array_from_single_device_arrays", "got ", arrays.size(), " arrays for a sharding over ",
                             devices.size(), " devices (", sharding.ToString(), ")");
  }
  const std::vector<ShardIndex> indices = sharding.devices_indices(shape);
  const Shape piece_shape = sharding.shard_shape(shape);
  const DType dtype = arrays.empty() ? float32 : arrays[0].dtype();
  std::vector<Shard> shards;
  shards.reserve(devices.size());
  for (size_t i = 0; i < devices.size(); ++i) {
    const Array& a = arrays[i];
    if (a.shape() != piece_shape || a.dtype() != dtype || a.committed_device() != devices[i]) {
      ThrowOpError<ValueError>("make_array_from_single_device_arrays", "array ", i, " is ", a.aval().str(), " on ",
                               a.devices()[0]->ToString(), "; the sharding needs ", dtype_short_name(dtype),
                               "[", absl::StrJoin(piece_shape, ","), "] committed to ", devices[i]->ToString());
    }
    Shard shard;
    shard.device = devices[i];
    shard.index = indices[i];
    for (size_t j = 0; j < i; ++j) shard.replica_id += indices[j] == indices[i] ? 1 : 0;
    shard.data = std::move(arrays[i]);
    shards.push_back(std::move(shard));
  }
  ShapedArray aval{shape, shards[0].data.dtype(), shards[0].data.weak_type()};
  aval.spec = sharding.TypeSpec(static_cast<int64_t>(shape.size()));
  return Array(std::make_shared<ConcreteArray>(std::move(aval), std::make_shared<NamedSharding>(sharding),
                                               std::move(shards)));
}

namespace sharding_internal {

void CheckOneShardingPerLeaf(size_t leaves, size_t shardings) {
  if (leaves != shardings) {
    ThrowOpError<ValueError>("device_put", "got ", shardings, " shardings for a pytree of ", leaves,
                             " arrays; give one sharding per leaf, in leaf order");
  }
}

}  // namespace sharding_internal

}  // namespace jx
