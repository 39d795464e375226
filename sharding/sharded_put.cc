#include "jx/sharding/sharded_put.h"

#include <cstring>
#include <memory>

#include "jx/core/buffer.h"
#include "jx/core/device.h"
#include "jx/core/errors.h"
#include "jx/core/sharding.h"
#include "jx/core/str_util.h"

namespace jx {
namespace {

// Copies the [start, stop) block of a row-major global array into a contiguous row-major
// buffer of the block's shape.
void CopyBlockOut(const Shape& global, const ShardIndex& index, int64_t item, const char* src, char* dst) {
  const size_t rank = global.size();
  if (rank == 0) {
    std::memcpy(dst, src, static_cast<size_t>(item));
    return;
  }
  Shape block(rank);
  for (size_t d = 0; d < rank; ++d) block[d] = index[d].second - index[d].first;
  if (NumElements(block) == 0) return;
  const std::vector<int64_t> strides = RowMajorStrides(global);
  const size_t run = static_cast<size_t>(block[rank - 1] * item);
  std::vector<int64_t> pos(rank, 0);
  while (true) {
    int64_t offset = 0;
    for (size_t d = 0; d < rank; ++d) offset += (index[d].first + pos[d]) * strides[d];
    std::memcpy(dst, src + offset * item, run);
    dst += run;
    size_t d = rank - 1;
    while (d-- > 0) {
      if (++pos[d] < block[d]) break;
      pos[d] = 0;
    }
    if (d == static_cast<size_t>(-1)) return;
  }
}

}  // namespace

Array device_put(const Array& x, const NamedSharding& sharding) {
  if (!x.defined()) ThrowOpError<ValueError>("device_put", "argument is an empty Array handle");
  if (!x.is_concrete()) {
    ThrowOpError<TypeError>("device_put", "got a traced ", x.aval().str(), " value: device_put places concrete "
                            "arrays; call it outside jit and other transformations (inside, use "
                            "lax::with_sharding_constraint)");
  }
  RegisterBuiltinClients();
  const auto& c = static_cast<const ConcreteArray&>(*x.impl());
  if (c.is_sharded() && c.sharded()->sharding->Equals(sharding) && !x.is_deleted()) return x;
  const Shape& shape = x.shape();
  sharding.CheckCompatible(shape, "device_put");
  const std::vector<ShardIndex> indices = sharding.devices_indices(shape);
  const Shape piece_shape = sharding.shard_shape(shape);
  ShapedArray piece_aval{piece_shape, x.dtype(), x.aval().weak_type};
  const int64_t item = ItemSize(x.dtype());
  const char* global = static_cast<const char*>(x.data());  // assembles a sharded x; throws if deleted

  const std::vector<const Device*>& devices = sharding.device_set();
  std::vector<Shard> shards;
  shards.reserve(devices.size());
  for (size_t i = 0; i < devices.size(); ++i) {
    Shard shard;
    shard.device = devices[i];
    shard.index = indices[i];
    for (size_t j = 0; j < i; ++j) shard.replica_id += indices[j] == indices[i] ? 1 : 0;
    // A failed allocation throws here; the shards made so far are freed with `shards`.
    std::shared_ptr<Buffer> buffer = devices[i]->Allocate(piece_aval.nbytes());
    CopyBlockOut(shape, shard.index, item, global, static_cast<char*>(buffer->data()));
    shard.data = Array(std::make_shared<ConcreteArray>(piece_aval, std::move(buffer), devices[i], /*committed=*/true));
    shards.push_back(std::move(shard));
  }
  ShapedArray aval{shape, x.dtype(), x.aval().weak_type};
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
