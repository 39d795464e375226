// The linalg custom-calls (lax/linalg_lowering.cc: "jx_linalg_cholesky", ..., XLA's LAPACK
// calls): the kernel library's linalg numerics (lax/kernels/linalg.h), the code eager
// lax.linalg runs, on the operand and result buffers. The backend_config is decoded once, at
// kernel selection; a malformed one declines the instruction with the reason.
#include <string>
#include <vector>

#include "jx/compiler/backend/cpu/cpu_kernels.h"
#include "jx/compiler/hlo/str_util.h"
#include "jx/lax/kernels/linalg.h"

namespace jx::cpu::internal {
namespace {

namespace kernels = ::jx::lax::kernels;

class LinalgKernel : public Kernel {
 public:
  LinalgKernel(kernels::LinalgCall call, DType dtype, std::vector<Shape> shapes)
      : call_(call), dtype_(dtype), shapes_(std::move(shapes)) {}

  absl::Status Run(absl::Span<const void* const> operands, absl::Span<void* const> results) const override {
    try {
      kernels::RunLinalg(call_, dtype_, shapes_, operands, results);
    } catch (const std::exception& e) {
      return absl::InternalError(hlo::StrCat(kernels::LinalgCustomCallTarget(call_.op), " failed: ", e.what()));
    }
    return absl::OkStatus();
  }
  std::string_view kind() const override { return "linalg"; }

 private:
  kernels::LinalgCall call_;
  DType dtype_;
  std::vector<Shape> shapes_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<Kernel>> MakeLinalgKernel(const hlo::HloInstruction& instr) {
  if (instr.opcode() != hlo::HloOpcode::kCustomCall ||
      !kernels::LinalgOpFromCustomCallTarget(instr.custom_call_target())) {
    return absl::UnimplementedError("not a linalg custom-call");
  }
  const std::optional<kernels::LinalgCall> call =
      kernels::DecodeLinalgCall(instr.custom_call_target(), instr.backend_config());
  if (!call) {
    return absl::InvalidArgumentError(hlo::StrCat(instr.custom_call_target(), " custom-call: backend_config \"",
                                                  instr.backend_config(), "\" is malformed"));
  }
  std::vector<Shape> shapes;
  std::optional<DType> dtype;
  for (const hlo::HloInstruction* op : instr.operands()) {
    dtype = KernelDTypeOf(op->shape().element_type());
    if (!dtype || !kernels::IsLinalgDType(*dtype) || op->shape().rank() < 2) {
      return absl::UnimplementedError(hlo::StrCat(instr.custom_call_target(), " custom-call: operand ",
                                                  op->shape().ToString(false), " is not a float32/float64 matrix batch"));
    }
    shapes.emplace_back(op->shape().dimensions().begin(), op->shape().dimensions().end());
  }
  return std::unique_ptr<Kernel>(new LinalgKernel(*call, *dtype, std::move(shapes)));
}

}  // namespace jx::cpu::internal
