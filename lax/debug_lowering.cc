// debug_callback lowers to a side-effecting custom-call on the host (XLA's
// emit_python_callback): the operands are the values, the result an empty tuple, and the
// backend_config the callback's id in the host-callback table (core/host_callback.h). Being
// side-effecting, DCE, CSE and the scheduler keep it and its order. The simulated TPU chips
// run their programs on the host's CPU backend, so the same custom-call serves both.
#include <string>

#include "jx/compiler/hlo/status_macros.h"
#include "jx/compiler/lower/lower_context.h"
#include "jx/core/host_callback.h"
#include "jx/core/registry.h"
#include "jx/lax/debug.h"
#include "jx/lax/debug_internal.h"

namespace jx::lax::internal {

void RegisterDebugLowering(Registry& r) {
  r.Define(kDebugCallback).lower = [](LowerContext& ctx) -> absl::Status {
    const int64_t id = DebugCallbackHostId(ctx.params());
    std::vector<hlo::HloInstruction*> operands(ctx.operands().begin(), ctx.operands().end());
    HLO_ASSIGN_OR_RETURN(hlo::HloInstruction * call,
                         ctx.builder().CustomCall(std::string(kHostCallbackTarget), operands,
                                                  hlo::Shape::Tuple({}), std::to_string(id),
                                                  /*has_side_effect=*/true));
    (void)call;
    ctx.SetOutputs({});
    return absl::OkStatus();
  };
}

}  // namespace jx::lax::internal
