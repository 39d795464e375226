// Native reduce-window: general windows (strides, padding, base and window dilation) with an
// add/multiply/maximum/minimum/and/or reducer on any element type, run by the kernel
// library's ReduceWindow (lax/kernels/window.h), the same code as eager reduce_window_sum /
// reduce_window_max, so jit and eager agree bit for bit. The init operand is read at run
// time; padding and base-dilation holes are skipped, as XLA's evaluator does. Running scans
// (hlo::AsScanWindow, how cumulative ops lower) are the scan kernel's: a window walk would be
// O(n^2). A widened-window fusion (convert -> f64 window -> convert, widened_window_fusion.h)
// runs as the library's window in the narrow type: one pass, eager's bits.
#include <exception>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "jx/compiler/backend/cpu/cpu_kernels.h"
#include "jx/compiler/backend/cpu/scalar_semantics.h"
#include "jx/compiler/backend/cpu/widened_window_fusion.h"
#include "jx/compiler/hlo/hlo_computation.h"
#include "jx/compiler/hlo/status_macros.h"
#include "jx/lax/kernels/window.h"

namespace jx::cpu::internal {
namespace {

using hlo::HloInstruction;
using hlo::HloOpcode;
using lax::kernels::WindowReducer;

class ReduceWindowKernel : public Kernel {
 public:
  absl::Status Run(absl::Span<const void* const> operands,
                   absl::Span<void* const> results) const override {
    try {
      lax::kernels::ReduceWindow(dtype_, op_, operands[0], axes_, identity_init_ ? nullptr : operands[1],
                                 results[0]);
    } catch (const std::exception& e) {
      return absl::InternalError(std::string("reduce-window: ") + e.what());
    }
    return absl::OkStatus();
  }
  std::string_view kind() const override { return "reduce-window"; }

  DType dtype_ = DType::kFloat32;
  WindowReducer op_ = WindowReducer::kSum;
  std::vector<lax::kernels::WindowAxis> axes_;
  // A widened-window fusion: one operand, the init is the op's identity.
  bool identity_init_ = false;
};

std::optional<WindowReducer> WindowReducerOf(HloOpcode op) {
  switch (op) {
    case HloOpcode::kAdd: return WindowReducer::kSum;
    case HloOpcode::kMultiply: return WindowReducer::kProd;
    case HloOpcode::kMaximum: return WindowReducer::kMax;
    case HloOpcode::kMinimum: return WindowReducer::kMin;
    case HloOpcode::kAnd: return WindowReducer::kAnd;
    case HloOpcode::kOr: return WindowReducer::kOr;
    default: return std::nullopt;
  }
}

// The library kernel of reduce-window `window` computed in dtype (its own element type, or
// a widened-window fusion's narrow type).
absl::StatusOr<std::unique_ptr<ReduceWindowKernel>> MakeLibraryWindow(const HloInstruction& window,
                                                                      std::optional<DType> dtype) {
  const hlo::Shape& in = window.operand(0)->shape();
  const hlo::Window& w = window.window();
  const std::optional<HloOpcode> op = SimpleBinaryReducer(*window.to_apply());
  const std::optional<WindowReducer> reducer = op ? WindowReducerOf(*op) : std::nullopt;
  if (!dtype || !reducer || static_cast<int64_t>(w.size()) != in.rank() ||
      !lax::kernels::WindowReducerAccepts(*reducer, *dtype)) {
    return absl::UnimplementedError("reducer is not an add/multiply/maximum/minimum/and/or");
  }
  auto kernel = std::make_unique<ReduceWindowKernel>();
  kernel->dtype_ = *dtype;
  kernel->op_ = *reducer;
  for (size_t d = 0; d < w.size(); ++d) {
    const hlo::WindowDim& wd = w[d];
    if (wd.stride < 1 || wd.lhs_dilation < 1 || wd.rhs_dilation < 1 || wd.size < 1) {
      return absl::UnimplementedError("bad window");
    }
    kernel->axes_.push_back({in.dimensions(d), window.shape().dimensions(d), wd.size, wd.stride, wd.pad_low,
                             wd.pad_high, wd.lhs_dilation, wd.rhs_dilation});
  }
  return kernel;
}

}  // namespace

absl::StatusOr<std::unique_ptr<Kernel>> MakeReduceWindowKernel(const HloInstruction& instr) {
  if (const HloInstruction* window = WidenedReduceWindow(instr)) {
    // convert -> f64 window -> convert as one pass: the library's window in the narrow type
    // (f64 accumulator), eager's reduce_window_sum.
    if (hlo::AsScanWindow(window->window(), window->operand(0)->shape().dimensions())) {
      return absl::UnimplementedError("running scan: left to the scan kernel");
    }
    HLO_ASSIGN_OR_RETURN(std::unique_ptr<ReduceWindowKernel> kernel,
                         MakeLibraryWindow(*window, KernelDTypeOf(instr.shape().element_type())));
    kernel->identity_init_ = true;
    return kernel;
  }
  if (instr.opcode() != HloOpcode::kReduceWindow || instr.operand_count() != 2 ||
      !instr.shape().IsArray() || !instr.operand(0)->shape().IsArray()) {
    return absl::UnimplementedError("not a single-input reduce-window");
  }
  const hlo::Shape& in = instr.operand(0)->shape();
  if (hlo::AsScanWindow(instr.window(), in.dimensions())) {
    return absl::UnimplementedError("running scan: left to the scan kernel");
  }
  const hlo::PrimitiveType type = instr.shape().element_type();
  if (in.element_type() != type || instr.operand(1)->shape().element_type() != type) {
    return absl::UnimplementedError("mixed element types");
  }
  HLO_ASSIGN_OR_RETURN(std::unique_ptr<ReduceWindowKernel> kernel, MakeLibraryWindow(instr, KernelDTypeOf(type)));
  return kernel;
}

}  // namespace jx::cpu::internal
