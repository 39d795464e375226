// Lowering rules of the slicing primitives (slice, dynamic_slice, dynamic_update_slice,
// concatenate, pad): each maps to the HLO op of the same meaning.
#include <vector>

#include "jx/compiler/lower/lower_ops.h"
#include "jx/core/registry.h"
#include "jx/lax/primitives.h"

namespace jx::lax::internal {
namespace {

using hlo::HloBuilder;
using lower::XOp;

// Start indices as scalars of one integer type (HLO requires it).
std::vector<hlo::HloInstruction*> StartIndices(LowerContext& ctx, size_t first) {
  std::vector<XOp> starts;
  bool same = true;
  for (size_t i = first; i < ctx.operands().size(); ++i) {
    starts.emplace_back(&ctx.builder(), ctx.operand(i));
    same = same && starts.back().type() == starts.front().type();
  }
  std::vector<hlo::HloInstruction*> out;
  for (XOp& s : starts) out.push_back((same ? s : lower::Convert(s, hlo::S64)).instr());
  return out;
}

}  // namespace

void RegisterSlicingLowering(Registry& r) {
  r.Define(kSlice).lower = [](LowerContext& ctx) -> absl::Status {
    const Param& strides = ctx.params().Get("strides");
    return lower::Output(ctx, lower::Slice(lower::Operands(ctx)[0], ctx.params().GetInts("start_indices"),
                                           ctx.params().GetInts("limit_indices"),
                                           strides.is_none() ? std::vector<int64_t>{} : ctx.params().GetInts("strides")));
  };
  r.Define(kDynamicSlice).lower = [](LowerContext& ctx) -> absl::Status {
    HloBuilder& b = ctx.builder();
    return lower::Output(ctx, lower::Wrap(b, b.DynamicSlice(ctx.operand(0), StartIndices(ctx, 1),
                                                             ctx.params().GetInts("slice_sizes"))));
  };
  r.Define(kDynamicUpdateSlice).lower = [](LowerContext& ctx) -> absl::Status {
    HloBuilder& b = ctx.builder();
    return lower::Output(ctx, lower::Wrap(b, b.DynamicUpdateSlice(ctx.operand(0), ctx.operand(1), StartIndices(ctx, 2))));
  };
  r.Define(kConcatenate).lower = [](LowerContext& ctx) -> absl::Status {
    HloBuilder& b = ctx.builder();
    return lower::Output(ctx, lower::Wrap(b, b.Concatenate(ctx.operands(), ctx.params().GetInt("dimension"))));
  };
  r.Define(kPad).lower = [](LowerContext& ctx) -> absl::Status {
    hlo::PaddingConfig config;
    for (const Param& c : ctx.params().GetList("padding_config")) {
      const auto& v = std::get<std::vector<int64_t>>(c.value);
      config.push_back(hlo::PaddingDim{v[0], v[1], v[2]});
    }
    HloBuilder& b = ctx.builder();
    return lower::Output(ctx, lower::Wrap(b, b.Pad(ctx.operand(0), ctx.operand(1), config)));
  };
}

}  // namespace jx::lax::internal
