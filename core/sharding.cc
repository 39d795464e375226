#include "jx/core/sharding.h"

#include <cstring>
#include <mutex>
#include <ostream>

#include "absl/hash/hash.h"
#include "jx/core/device.h"
#include "jx/core/errors.h"

namespace jx {

namespace {

// Copies a row-major block of shard data into its [start, stop) region of the global array.
void CopyBlockInto(const Shape& global, const ShardIndex& index, int64_t item, const char* src, char* dst) {
  const size_t rank = global.size();
  if (rank == 0) {
    std::memcpy(dst, src, static_cast<size_t>(item));
    return;
  }
  const std::vector<int64_t> strides = RowMajorStrides(global);
  const int64_t run = (index[rank - 1].second - index[rank - 1].first) * item;
  std::vector<int64_t> pos(rank, 0);  // position in the block's outer dims
  Shape block(rank);
  for (size_t d = 0; d < rank; ++d) block[d] = index[d].second - index[d].first;
  if (NumElements(block) == 0) return;
  while (true) {
    int64_t offset = 0;
    for (size_t d = 0; d < rank; ++d) offset += (index[d].first + pos[d]) * strides[d];
    std::memcpy(dst + offset * item, src, static_cast<size_t>(run));
    src += run;
    size_t d = rank - 1;
    while (d-- > 0) {
      if (++pos[d] < block[d]) break;
      pos[d] = 0;
    }
    if (d == static_cast<size_t>(-1)) return;
  }
}

}  // namespace

ConcreteArray::ConcreteArray(ShapedArray aval, std::shared_ptr<const Sharding> sharding, std::vector<Shard> shards)
    : ArrayImpl(Kind::kConcrete, std::move(aval)), device_(nullptr), committed_(false) {
  auto value = std::make_shared<ShardedValue>();
  value->sharding = std::move(sharding);
  value->shards = std::move(shards);
  sharded_ = std::move(value);
}

void ConcreteArray::AssembleOnce() const {
  std::call_once(sharded_->assembled, [&] {
    const ShapedArray& a = aval();
    auto global = Buffer::Allocate(a.nbytes());
    const int64_t item = ItemSize(a.dtype);
    for (const Shard& shard : sharded_->shards) {
      if (shard.replica_id != 0) continue;
      CopyBlockInto(a.shape, shard.index, item, static_cast<const char*>(shard.data.data()),
                    static_cast<char*>(global->data()));
    }
    buffer_ = std::move(global);
  });
}

std::shared_ptr<const Sharding> ConcreteArray::sharding() const {
  if (sharded_ != nullptr) return sharded_->sharding;
  return std::make_shared<SingleDeviceSharding>(device_ != nullptr ? device_ : DefaultDevice());
}

std::vector<ShardIndex> SingleDeviceSharding::devices_indices(const Shape& global_shape) const {
  ShardIndex whole;
  for (int64_t d : global_shape) whole.emplace_back(0, d);
  return {whole};
}

std::string SingleDeviceSharding::ToString() const {
  return StrCat("SingleDeviceSharding(device=", device()->ToString(), ")");
}

bool SingleDeviceSharding::Equals(const Sharding& other) const {
  const auto* o = dynamic_cast<const SingleDeviceSharding*>(&other);
  return o != nullptr && o->device() == device();
}

size_t SingleDeviceSharding::Hash() const { return absl::HashOf(device()); }

std::ostream& operator<<(std::ostream& os, const Sharding& s) { return os << s.ToString(); }

}  // namespace jx
