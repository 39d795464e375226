#include "jx/devices/tpu/tpu_client.h"

#include <utility>

#include "jx/core/errors.h"
#include "jx/core/str_util.h"
#include "jx/devices/interconnect/torus.h"
#include "jx/devices/tpu/tpu_compiler.h"

namespace jx::tpu {

TpuClient::TpuClient(TpuChipSpec spec, std::vector<int64_t> shape, int first_id)
    : spec_(std::move(spec)),
      shape_(std::move(shape)),
      torus_(std::make_shared<const ici::Torus>(ici::Torus::ForSlice(spec_, shape_))) {
  int64_t count = 1;
  for (int64_t d : shape_) count *= d;
  std::vector<int64_t> coords(shape_.size(), 0);
  int id = first_id;
  for (int64_t i = 0; i < count; ++i) {
    // A chip is one device, or (v2/v3/v7) one per TensorCore, the core counting fastest: the
    // torus' vertex order.
    for (int core = 0; core < spec_.devices_per_chip; ++core) {
      chips_.push_back(std::make_unique<TpuChip>(*this, spec_, id++, coords, core));
    }
    // The next position in row-major order: the last axis counts fastest.
    for (size_t axis = shape_.size(); axis-- > 0;) {
      if (++coords[axis] < shape_[axis]) break;
      coords[axis] = 0;
    }
  }
}

std::vector<const Device*> TpuClient::devices() const {
  std::vector<const Device*> out;
  out.reserve(chips_.size());
  for (const auto& chip : chips_) out.push_back(chip.get());
  return out;
}

std::shared_ptr<const Lowering> TpuClient::Lower(const ClosedJaxpr& jaxpr, const LoweringOptions& options) const {
  std::vector<const TpuChip*> chips;
  for (const Device* device : options.device_assignment) {
    const TpuChip* chip = nullptr;
    for (const auto& c : chips_) {
      if (c.get() == device) chip = c.get();
    }
    if (chip == nullptr) {
      throw InternalError(StrCat("jit(", options.name, "): lowered by the client of a ", spec_.generation,
                                 " pod for ", device->ToString(), ", which is not one of its chips"));
    }
    chips.push_back(chip);
  }
  if (chips.size() > 1) return LowerForPod(jaxpr, options, *this, std::move(chips));
  return LowerForTpu(jaxpr, options, chips.empty() ? *chips_.front() : *chips.front());
}

StepReport TpuClient::last_step() const {
  std::lock_guard<std::mutex> lock(step_mu_);
  return last_step_;
}

void TpuClient::RecordStep(const StepReport& report) const {
  std::lock_guard<std::mutex> lock(step_mu_);
  last_step_ = report;
}

}  // namespace jx::tpu
