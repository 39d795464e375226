// Lowering rules of the windowed reductions (reduce_window_sum, reduce_window_max,
// reduce_window_min): HLO
// reduce-window; windowed sums accumulate per platform, as the reductions' do.
#include <vector>

#include "jx/lax/primitives.h"
#include "jx/lax/reduction_lowering.h"

namespace jx::lax::internal {
namespace {

using hlo::HloOpcode;
using hlo::PrimitiveType;
using lower::XOp;

LowerRule ReduceWindowRule(HloOpcode op, FloatAccumulation acc) {
  return [op, acc](LowerContext& ctx) -> absl::Status {
    XOp x = lower::Operands(ctx)[0];
    const PrimitiveType out_type = x.type();
    if (op == HloOpcode::kAdd) x = lower::Convert(x, AccumulationType(out_type, acc));
    const ParamMap& params = ctx.params();
    const std::vector<int64_t>& dims = params.GetInts("window_dimensions");
    const std::vector<int64_t>& strides = params.GetInts("window_strides");
    const std::vector<int64_t>& base = params.GetInts("base_dilation");
    const std::vector<int64_t>& wdil = params.GetInts("window_dilation");
    const ParamList& padding = params.GetList("padding");
    hlo::Window w(dims.size());
    for (size_t i = 0; i < dims.size(); ++i) {
      const auto& pad = std::get<std::vector<int64_t>>(padding[i].value);
      w[i] = hlo::WindowDim{dims[i], strides[i], pad[0], pad[1], base[i], wdil[i]};
    }
    hlo::HloBuilder& b = ctx.builder();
    const XOp init = InitValue(b, op, x.type());
    const XOp y = lower::Wrap(b, b.ReduceWindow({x.instr()}, {init.instr()}, w, Reducer(ctx, op, x.type())));
    return lower::Output(ctx, lower::Convert(y, out_type));
  };
}

void DefineReduceWindow(Registry& r, Primitive p, HloOpcode op) {
  if (op == HloOpcode::kAdd) {
    DefinePerPlatform(r, p, [op](FloatAccumulation acc) { return ReduceWindowRule(op, acc); });
  } else {
    r.Define(p).lower = ReduceWindowRule(op, FloatAccumulation::kF64);  // no accumulation: one rule
  }
}

}  // namespace

void RegisterWindowLowering(Registry& r) {
  DefineReduceWindow(r, kReduceWindowSum, HloOpcode::kAdd);
  DefineReduceWindow(r, kReduceWindowMax, HloOpcode::kMaximum);
  DefineReduceWindow(r, kReduceWindowMin, HloOpcode::kMinimum);
}

}  // namespace jx::lax::internal
