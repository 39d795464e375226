#include "jx/devices/tpu/tpu_chip.h"

#include <utility>

#include "jx/core/str_util.h"

namespace jx::tpu {
namespace {

// One process today (multi-process execution is future work: the index will come from it).
constexpr int kProcessIndex = 0;

std::string ChipName(int id, const std::vector<int64_t>& coords) {
  std::string name = StrCat("TPU_", id, "(process=", kProcessIndex, ",(");
  for (size_t axis = 0; axis < 3; ++axis) StrAppend(&name, axis < coords.size() ? coords[axis] : 0, ",");
  name += "0))";  // the core on the chip: a chip is one device
  return name;
}

}  // namespace

TpuChip::TpuChip(const Client& client, const TpuChipSpec& spec, int id, std::vector<int64_t> coords)
    : client_(client),
      spec_(spec),
      id_(id),
      coords_(std::move(coords)),
      name_(ChipName(id_, coords_)),
      hbm_(std::make_shared<MemoryAccount>(StrCat(name_, " HBM"), spec.hbm_bytes)) {}

MemoryStats TpuChip::memory_stats() const {
  const MemoryAccount::Usage u = hbm_->usage();
  return MemoryStats{.bytes_in_use = u.bytes_in_use,
                     .peak_bytes_in_use = u.peak_bytes_in_use,
                     .bytes_limit = hbm_->capacity(),
                     .num_allocs = u.num_allocs,
                     .largest_alloc_size = u.largest_alloc_size};
}

std::shared_ptr<Buffer> TpuChip::Allocate(int64_t nbytes) const { return Buffer::Allocate(nbytes, hbm_); }

}  // namespace jx::tpu
