#include "jx/devices/tpu/tpu_chip.h"

#include <utility>

#include "jx/core/str_util.h"

namespace jx::tpu {
namespace {

// One process today (multi-process execution is future work: the index will come from it).
constexpr int kProcessIndex = 0;

std::string ChipName(int id, const std::vector<int64_t>& coords, int core_on_chip) {
  std::string name = StrCat("TPU_", id, "(process=", kProcessIndex, ",(");
  for (size_t axis = 0; axis < 3; ++axis) StrAppend(&name, axis < coords.size() ? coords[axis] : 0, ",");
  StrAppend(&name, core_on_chip, "))");
  return name;
}

}  // namespace

TpuChip::TpuChip(const Client& client, const TpuChipSpec& spec, int id, std::vector<int64_t> coords, int core_on_chip)
    : client_(client),
      spec_(spec),
      id_(id),
      coords_(std::move(coords)),
      core_on_chip_(core_on_chip),
      name_(ChipName(id_, coords_, core_on_chip_)),
      hbm_(std::make_shared<MemoryAccount>(StrCat(name_, " HBM"), spec.hbm_bytes)) {}

MemoryStats TpuChip::memory_stats() const {
  const MemoryAccount::Usage u = hbm_->usage();
  return MemoryStats{.bytes_in_use = u.bytes_in_use,
                     .peak_bytes_in_use = u.peak_bytes_in_use,
                     .bytes_limit = hbm_->capacity(),
                     .num_allocs = u.num_allocs,
                     .largest_alloc_size = u.largest_alloc_size};
}

std::vector<int64_t> TpuChip::torus_coords() const {
  std::vector<int64_t> position = coords_;
  if (spec_.devices_per_chip > 1) position.push_back(core_on_chip_);
  return position;
}

std::shared_ptr<Buffer> TpuChip::Allocate(int64_t nbytes) const { return Buffer::Allocate(nbytes, hbm_); }

}  // namespace jx::tpu
