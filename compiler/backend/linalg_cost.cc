#include "jx/compiler/backend/linalg_cost.h"

#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "jx/compiler/analysis/hlo_cost_analysis.h"
#include "jx/lax/kernels/linalg.h"

namespace jx::backend {
namespace {

namespace kernels = ::jx::lax::kernels;

void LinalgCost(const hlo::HloInstruction& instr, hlo::HloCost* cost) {
  const std::optional<kernels::LinalgCall> call =
      kernels::DecodeLinalgCall(instr.custom_call_target(), instr.backend_config());
  if (!call) return;  // malformed: the backend declines it with the reason when compiling
  std::vector<Shape> shapes;
  for (const hlo::HloInstruction* op : instr.operands()) {
    if (!op->shape().IsArray()) return;
    shapes.emplace_back(op->shape().dimensions().begin(), op->shape().dimensions().end());
  }
  cost->flops = kernels::LinalgFlops(*call, shapes);
}

}  // namespace

void RegisterLinalgCustomCallCosts() {
  static std::once_flag once;
  std::call_once(once, [] {
    for (kernels::LinalgOp op : {kernels::LinalgOp::kCholesky, kernels::LinalgOp::kTriangularSolve,
                                 kernels::LinalgOp::kLu, kernels::LinalgOp::kQr, kernels::LinalgOp::kEigh,
                                 kernels::LinalgOp::kSvd}) {
      hlo::HloCostAnalysis::RegisterCustomCallCost(std::string(kernels::LinalgCustomCallTarget(op)), LinalgCost);
    }
  });
}

}  // namespace jx::backend
