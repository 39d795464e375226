// The lowering driver shared by LowerJaxpr and LowerContext (internal to compiler/lower).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "jx/compiler/hlo/hlo_builder.h"
#include "jx/core/jaxpr.h"

namespace jx::lower_internal {

class Lowerer {
 public:
  Lowerer(hlo::HloModule* module, std::string platform) : module_(module), platform_(std::move(platform)) {}
  hlo::HloModule* module() const { return module_; }
  // The target platform: which of a primitive's per-platform lowering rules apply.
  const std::string& platform() const { return platform_; }
  // A channel id no collective of the module has yet (one lowerer makes a module's ids).
  int64_t NewChannelId() { return next_channel_id_++; }

  // Emits jaxpr's equations into builder on args (one per invar). Constvars read
  // const_args when given (one per constvar), else the ClosedJaxpr's consts as constants.
  // Returns one instruction per outvar.
  absl::StatusOr<std::vector<hlo::HloInstruction*>> Emit(hlo::HloBuilder& builder, const ClosedJaxpr& jaxpr,
                                                         absl::Span<hlo::HloInstruction* const> args,
                                                         const std::string& name_stack,
                                                         absl::Span<hlo::HloInstruction* const> const_args = {});

 private:
  hlo::HloModule* module_;
  std::string platform_;
  int64_t next_channel_id_ = 1;
};

}  // namespace jx::lower_internal
