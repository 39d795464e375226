#include "jx/devices/tpu/pod.h"

#include <algorithm>
#include <mutex>

#include "absl/strings/str_join.h"
#include "jx/core/array.h"
#include "jx/core/errors.h"
#include "jx/core/str_util.h"
#include "jx/devices/tpu/chip_specs.h"
#include "jx/devices/tpu/tpu_client.h"

namespace jx::tpu {
namespace {

std::string ShapeText(const std::vector<int64_t>& shape) { return StrCat("{", absl::StrJoin(shape, ", "), "}"); }

void CheckShape(const TpuChipSpec& spec, const std::vector<int64_t>& shape) {
  const std::string pod = absl::StrJoin(spec.full_pod, "x");
  if (static_cast<int64_t>(shape.size()) != spec.torus_rank) {
    throw ValueError(StrCat("[make_pod] ", spec.generation, " chips form a ", spec.torus_rank, "D torus (full pod ",
                            pod, "): shape ", ShapeText(shape), " has ", shape.size(), " dimension",
                            shape.size() == 1 ? "" : "s", ", expected ", spec.torus_rank));
  }
  for (int64_t d : shape) {
    if (d < 1) {
      throw ValueError(StrCat("[make_pod] ", spec.generation, " shape ", ShapeText(shape),
                              ": every dimension must be at least 1"));
    }
  }
  // A slice fits when, sides sorted, each is at most the full pod's (slices may be oriented
  // either way on the torus).
  std::vector<int64_t> sides = shape, full = spec.full_pod;
  std::sort(sides.begin(), sides.end());
  std::sort(full.begin(), full.end());
  for (size_t i = 0; i < sides.size(); ++i) {
    if (sides[i] > full[i]) {
      int64_t chips = 1;
      for (int64_t d : spec.full_pod) chips *= d;
      throw ValueError(StrCat("[make_pod] a ", spec.generation, " slice of shape ", ShapeText(shape),
                              " does not fit the full ", spec.generation, " pod ", pod, " (", chips, " chips)"));
    }
  }
}

}  // namespace

Pod make_pod(std::string_view generation, const std::vector<int64_t>& shape, const PodOptions& options) {
  TpuChipSpec spec = ChipSpec(generation);
  CheckShape(spec, shape);
  if (options.hbm_bytes < 0) {
    throw ValueError(StrCat("[make_pod] PodOptions::hbm_bytes must be positive (0: the generation's), got ",
                            options.hbm_bytes));
  }
  if (options.hbm_bytes > 0) spec.hbm_bytes = options.hbm_bytes;
  // Ids continue after every registered device (the host CPU's first); one pod at a time, so
  // two threads making pods never hand out the same id.
  static std::mutex mu;
  std::lock_guard<std::mutex> lock(mu);
  RegisterBuiltinClients();
  int first_id = 0;
  for (const Device* d : RegisteredDevices()) first_id = std::max(first_id, d->id() + 1);
  auto client = std::make_shared<const TpuClient>(std::move(spec), shape, first_id);
  RegisterClient(client);
  return Pod(std::move(client));
}

std::vector<const Device*> Pod::devices() const { return client_->devices(); }
const std::vector<int64_t>& Pod::shape() const { return client_->shape(); }
const std::string& Pod::generation() const { return client_->spec().generation; }
const TpuChipSpec& Pod::spec() const { return client_->spec(); }
int64_t Pod::num_chips() const { return num_devices() / spec().devices_per_chip; }
int64_t Pod::num_devices() const { return static_cast<int64_t>(client_->chips().size()); }

const TpuChip& Pod::chip(const std::vector<int64_t>& coords, int core_on_chip) const {
  const std::vector<int64_t>& shape = client_->shape();
  bool inside = coords.size() == shape.size();
  int64_t index = 0;
  for (size_t axis = 0; inside && axis < shape.size(); ++axis) {
    inside = coords[axis] >= 0 && coords[axis] < shape[axis];
    index = index * shape[axis] + coords[axis];
  }
  if (!inside) {
    throw ValueError(StrCat("[Pod::chip] position ", ShapeText(coords), " is not on the ", generation(), " pod of shape ",
                            ShapeText(shape)));
  }
  const int64_t cores = spec().devices_per_chip;
  if (core_on_chip < 0 || core_on_chip >= cores) {
    throw ValueError(StrCat("[Pod::chip] core_on_chip ", core_on_chip, " is not a core of a ", generation(),
                            " chip (", cores, " device", cores == 1 ? "" : "s", " per chip)"));
  }
  return *client_->chips()[static_cast<size_t>(index * cores + core_on_chip)];
}

const std::vector<int64_t>& Pod::coords(const Device* device) const {
  for (const auto& chip : client_->chips()) {
    if (chip.get() == device) return chip->coords();
  }
  throw ValueError(StrCat("[Pod::coords] ", device == nullptr ? std::string("null") : device->ToString(),
                          " is not a chip of this ", generation(), " pod"));
}

}  // namespace jx::tpu
