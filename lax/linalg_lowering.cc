// Lowering of lax.linalg's primitives: one HLO custom-call per equation, as XLA lowers them to
// LAPACK calls on the CPU. The target names the kernel ("jx_linalg_qr"), the backend_config
// carries the equation's params in the kernel library's encoding (lax/kernels/linalg.h), and
// the CPU backend runs that same kernel, so jit and eager agree bit for bit. Simulated TPU
// chips run their programs on the host's CPU backend, so the same custom-call serves both
// platforms. Several outputs are one tuple, unpacked with get-tuple-element.
#include <string>
#include <vector>

#include "jx/compiler/hlo/status_macros.h"
#include "jx/compiler/lower/lower_ops.h"
#include "jx/core/registry.h"
#include "jx/lax/kernels/linalg.h"
#include "jx/lax/linalg.h"

namespace jx::lax::linalg::internal {
namespace {

using kernels::LinalgCall;
using kernels::LinalgOp;

LinalgCall CallOf(LinalgOp op, const ParamMap& p) {
  LinalgCall c;
  c.op = op;
  auto flag = [&p](const char* name, bool fallback) { return p.Has(name) ? p.GetBool(name) : fallback; };
  c.left_side = flag("left_side", false);
  c.lower = flag("lower", false);
  c.transpose_a = flag("transpose_a", false);
  c.conjugate_a = flag("conjugate_a", false);
  c.unit_diagonal = flag("unit_diagonal", false);
  c.full_matrices = flag("full_matrices", false);
  c.compute_uv = flag("compute_uv", true);
  c.sort_eigenvalues = flag("sort_eigenvalues", true);
  return c;
}

LowerRule CustomCallLowering(LinalgOp op) {
  return [op](LowerContext& ctx) -> absl::Status {
    const LinalgCall call = CallOf(op, ctx.params());
    std::vector<hlo::Shape> shapes;
    for (const ShapedArray& a : ctx.out_avals()) shapes.push_back(LowerContext::ShapeOf(a));
    const bool tuple = shapes.size() > 1;
    std::vector<hlo::HloInstruction*> operands(ctx.operands().begin(), ctx.operands().end());
    hlo::HloBuilder& b = ctx.builder();
    HLO_ASSIGN_OR_RETURN(hlo::HloInstruction * cc,
                         b.CustomCall(std::string(kernels::LinalgCustomCallTarget(op)), operands,
                                      tuple ? hlo::Shape::Tuple(shapes) : shapes[0], kernels::EncodeLinalgCall(call)));
    if (!tuple) {
      ctx.SetOutputs({cc});
      return absl::OkStatus();
    }
    const lower::XOp t(&b, cc);
    std::vector<lower::XOp> outs;
    for (size_t i = 0; i < shapes.size(); ++i) outs.push_back(lower::GetTupleElement(t, static_cast<int64_t>(i)));
    return lower::Outputs(ctx, outs);
  };
}

}  // namespace

void RegisterLinalgLowering(Registry& r) {
  r.Define(kCholesky).lower = CustomCallLowering(LinalgOp::kCholesky);
  r.Define(kTriangularSolve).lower = CustomCallLowering(LinalgOp::kTriangularSolve);
  r.Define(kLu).lower = CustomCallLowering(LinalgOp::kLu);
  r.Define(kQr).lower = CustomCallLowering(LinalgOp::kQr);
  r.Define(kEigh).lower = CustomCallLowering(LinalgOp::kEigh);
  r.Define(kSvd).lower = CustomCallLowering(LinalgOp::kSvd);
}

}  // namespace jx::lax::linalg::internal
