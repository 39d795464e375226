// Lowering rules of the higher-order primitives: cond -> conditional (index form, one branch
// computation per sub-jaxpr over a tuple of the operands), while -> while over a tuple carry,
// scan -> while with a loop counter that dynamic-slices xs and dynamic-update-slices ys
// buffers (reverse walks the counter down). custom_jvp_call, custom_vjp_call and checkpoint
// only matter to differentiation, and a nested jit to caching: they lower their inner jaxpr
// inline (a checkpoint's rematerialization behind an opt-barrier). stop_gradient is the identity.
#include <vector>

#include "jx/compiler/hlo/status_macros.h"
#include "jx/compiler/lower/lower_ops.h"
#include "jx/core/registry.h"
#include "jx/lax/stop_gradient.h"
#include "jx/transforms/jaxpr_util.h"
#include "jx/transforms/optimization_barrier.h"

namespace jx::lax::internal {
namespace {

using hlo::HloBuilder;
using hlo::HloInstruction;
using lower::XOp;

std::vector<HloInstruction*> Concat(absl::Span<HloInstruction* const> a, absl::Span<HloInstruction* const> b) {
  std::vector<HloInstruction*> out(a.begin(), a.end());
  out.insert(out.end(), b.begin(), b.end());
  return out;
}

// The elements of a tuple-shaped value.
std::vector<HloInstruction*> Unpack(HloBuilder& b, HloInstruction* tuple, int64_t begin, int64_t end) {
  std::vector<HloInstruction*> out;
  for (int64_t i = begin; i < end; ++i) out.push_back(lower::Check(b.GetTupleElement(tuple, i)));
  return out;
}

absl::Status LowerCond(LowerContext& ctx) {
  std::vector<ClosedJaxpr> branches;
  for (const Param& p : ctx.params().GetList("branches")) {
    branches.push_back(static_cast<const JaxprParam&>(*std::get<std::shared_ptr<const ParamObject>>(p.value)).closed());
  }
  HloBuilder& b = ctx.builder();
  const absl::Span<HloInstruction* const> ops = ctx.operands().subspan(1);
  if (branches.size() == 1) {
    HLO_ASSIGN_OR_RETURN(std::vector<HloInstruction*> outs, ctx.InlineJaxpr(b, branches[0], ops, "branch_0"));
    ctx.SetOutputs(outs);
    return absl::OkStatus();
  }
  // jx clamps the index into range (HLO's conditional would send negatives to the last).
  const XOp index(&b, ctx.operand(0));
  const XOp clamped = lower::Max(lower::Min(index, lower::FullInt(b, index.type(), {}, static_cast<int64_t>(branches.size()) - 1)),
                                 lower::FullInt(b, index.type(), {}, 0));
  std::vector<HloInstruction*> tuple_ops(branches.size(), nullptr);
  const XOp operand_tuple = lower::Wrap(b, b.Tuple(ops));
  std::vector<hlo::HloComputation*> computations;
  for (size_t i = 0; i < branches.size(); ++i) {
    const std::string name = "branch_" + std::to_string(i);
    HLO_ASSIGN_OR_RETURN(hlo::HloComputation * c, ctx.LowerSubJaxpr(branches[i], name, name, /*tuple_param=*/true));
    computations.push_back(c);
    tuple_ops[i] = operand_tuple.instr();
  }
  const XOp result = lower::Wrap(b, b.Conditional(lower::Convert(clamped, hlo::S32).instr(), computations, tuple_ops));
  ctx.SetOutputs(Unpack(b, result.instr(), 0, static_cast<int64_t>(ctx.out_avals().size())));
  return absl::OkStatus();
}

hlo::Shape TupleShapeOf(absl::Span<HloInstruction* const> values) {
  std::vector<hlo::Shape> shapes;
  for (HloInstruction* v : values) shapes.push_back(v->shape());
  return hlo::ShapeUtil::MakeTupleShape(shapes);
}

// while over the tuple (cond consts..., body consts..., carry...).
absl::Status LowerWhile(LowerContext& ctx) {
  const ClosedJaxpr& cond = GetJaxpr(ctx.params(), "cond_jaxpr");
  const ClosedJaxpr& body = GetJaxpr(ctx.params(), "body_jaxpr");
  const int64_t nc = ctx.params().GetInt("cond_nconsts"), nb = ctx.params().GetInt("body_nconsts");
  const int64_t n = static_cast<int64_t>(ctx.operands().size());
  const hlo::Shape state = TupleShapeOf(ctx.operands());

  HloBuilder cb = ctx.NewBuilder("while_cond");
  HLO_ASSIGN_OR_RETURN(HloInstruction * cp, cb.Parameter(0, state, "state"));
  const std::vector<HloInstruction*> c_consts = Unpack(cb, cp, 0, nc), c_carry = Unpack(cb, cp, nc + nb, n);
  HLO_ASSIGN_OR_RETURN(std::vector<HloInstruction*> pred, ctx.InlineJaxpr(cb, cond, Concat(c_consts, c_carry), "cond"));
  HLO_ASSIGN_OR_RETURN(hlo::HloComputation * cond_c, cb.Build(pred.at(0)));

  HloBuilder bb = ctx.NewBuilder("while_body");
  HLO_ASSIGN_OR_RETURN(HloInstruction * bp, bb.Parameter(0, state, "state"));
  const std::vector<HloInstruction*> consts = Unpack(bb, bp, 0, nc + nb);
  const std::vector<HloInstruction*> carry = Unpack(bb, bp, nc + nb, n);
  HLO_ASSIGN_OR_RETURN(std::vector<HloInstruction*> next,
                       ctx.InlineJaxpr(bb, body, Concat(absl::MakeConstSpan(consts).subspan(static_cast<size_t>(nc)), carry), "body"));
  HLO_ASSIGN_OR_RETURN(HloInstruction * body_root, bb.Tuple(Concat(consts, next)));
  HLO_ASSIGN_OR_RETURN(hlo::HloComputation * body_c, bb.Build(body_root));

  HloBuilder& b = ctx.builder();
  HLO_ASSIGN_OR_RETURN(HloInstruction * init, b.Tuple(ctx.operands()));
  HLO_ASSIGN_OR_RETURN(HloInstruction * loop, b.While(cond_c, body_c, init));
  ctx.SetOutputs(Unpack(b, loop, nc + nb, n));
  return absl::OkStatus();
}

// scan as while over (i, consts..., carry..., xs..., ys buffers...).
absl::Status LowerScan(LowerContext& ctx) {
  const ClosedJaxpr& body = GetJaxpr(ctx.params(), "jaxpr");
  const int64_t length = ctx.params().GetInt("length");
  const bool reverse = ctx.params().GetBool("reverse");
  const int64_t num_consts = ctx.params().GetInt("num_consts"), num_carry = ctx.params().GetInt("num_carry");
  const int64_t num_xs = static_cast<int64_t>(ctx.operands().size()) - num_consts - num_carry;
  const int64_t num_ys = static_cast<int64_t>(ctx.out_avals().size()) - num_carry;
  HloBuilder& b = ctx.builder();
  std::vector<HloInstruction*> init = {lower::Check(ctx.ConstantScalar(0, DType::kInt32))};
  init.insert(init.end(), ctx.operands().begin(), ctx.operands().end());
  for (int64_t j = 0; j < num_ys; ++j) {
    const ShapedArray& ys = ctx.out_aval(static_cast<size_t>(num_carry + j));
    init.push_back(lower::FullInt(b, LowerContext::TypeOf(ys.dtype), ys.shape, 0).instr());
  }
  if (length == 0) {
    // No steps: the carry comes out as it went in and ys are empty (a loop body would
    // dynamic-slice a step out of zero-length xs, which is invalid HLO).
    std::vector<HloInstruction*> results(init.begin() + 1 + num_consts, init.begin() + 1 + num_consts + num_carry);
    results.insert(results.end(), init.end() - num_ys, init.end());
    ctx.SetOutputs(results);
    return absl::OkStatus();
  }
  const int64_t n = static_cast<int64_t>(init.size());
  const hlo::Shape state = TupleShapeOf(init);
  const int64_t xs_begin = 1 + num_consts + num_carry, ys_begin = xs_begin + num_xs;

  HloBuilder cb = ctx.NewBuilder("scan_cond");
  HLO_ASSIGN_OR_RETURN(HloInstruction * cp, cb.Parameter(0, state, "state"));
  const XOp ci = lower::Wrap(cb, cb.GetTupleElement(cp, 0));
  HLO_ASSIGN_OR_RETURN(hlo::HloComputation * cond_c, cb.Build((ci < lower::FullInt(cb, hlo::S32, {}, length)).instr()));

  HloBuilder bb = ctx.NewBuilder("scan_body");
  HLO_ASSIGN_OR_RETURN(HloInstruction * bp, bb.Parameter(0, state, "state"));
  const std::vector<HloInstruction*> all = Unpack(bb, bp, 0, n);
  const XOp i(&bb, all[0]);
  const XOp idx = reverse ? lower::FullInt(bb, hlo::S32, {}, length - 1) - i : i;
  const XOp zero = lower::FullInt(bb, hlo::S32, {}, 0);
  auto starts = [&](int64_t rank) {
    std::vector<HloInstruction*> s = {idx.instr()};
    for (int64_t d = 1; d < rank; ++d) s.push_back(zero.instr());
    return s;
  };
  std::vector<HloInstruction*> args(all.begin() + 1, all.begin() + xs_begin);
  for (int64_t j = 0; j < num_xs; ++j) {
    const XOp xs(&bb, all[static_cast<size_t>(xs_begin + j)]);
    std::vector<int64_t> sizes = hlo::SpanToVector(xs.dims());
    sizes[0] = 1;
    const XOp x = lower::Wrap(bb, bb.DynamicSlice(xs.instr(), starts(xs.rank()), sizes));
    args.push_back(lower::Reshape(x, std::vector<int64_t>(sizes.begin() + 1, sizes.end())).instr());
  }
  HLO_ASSIGN_OR_RETURN(std::vector<HloInstruction*> outs, ctx.InlineJaxpr(bb, body, args, "body"));
  std::vector<HloInstruction*> next = {(i + lower::FullInt(bb, hlo::S32, {}, 1)).instr()};
  next.insert(next.end(), all.begin() + 1, all.begin() + 1 + num_consts);
  next.insert(next.end(), outs.begin(), outs.begin() + num_carry);
  next.insert(next.end(), all.begin() + xs_begin, all.begin() + ys_begin);
  for (int64_t j = 0; j < num_ys; ++j) {
    const XOp buf(&bb, all[static_cast<size_t>(ys_begin + j)]);
    std::vector<int64_t> one = hlo::SpanToVector(buf.dims());
    one[0] = 1;
    const XOp y = lower::Reshape(XOp(&bb, outs[static_cast<size_t>(num_carry + j)]), one);
    next.push_back(lower::Check(bb.DynamicUpdateSlice(buf.instr(), y.instr(), starts(buf.rank()))));
  }
  HLO_ASSIGN_OR_RETURN(HloInstruction * body_root, bb.Tuple(next));
  HLO_ASSIGN_OR_RETURN(hlo::HloComputation * body_c, bb.Build(body_root));

  HLO_ASSIGN_OR_RETURN(HloInstruction * init_tuple, b.Tuple(init));
  HLO_ASSIGN_OR_RETURN(HloInstruction * loop, b.While(cond_c, body_c, init_tuple));
  std::vector<HloInstruction*> results = Unpack(b, loop, 1 + num_consts, 1 + num_consts + num_carry);
  const std::vector<HloInstruction*> ys = Unpack(b, loop, ys_begin, n);
  results.insert(results.end(), ys.begin(), ys.end());
  ctx.SetOutputs(results);
  return absl::OkStatus();
}

// Lowers the jaxpr param `name` inline on all operands.
LowerRule InlineCall(std::string name) {
  return [name](LowerContext& ctx) -> absl::Status {
    HLO_ASSIGN_OR_RETURN(std::vector<HloInstruction*> outs,
                         ctx.InlineJaxpr(ctx.builder(), GetJaxpr(ctx.params(), name), ctx.operands(), ""));
    ctx.SetOutputs(outs);
    return absl::OkStatus();
  };
}

// Values through one opt-barrier over their tuple.
absl::StatusOr<std::vector<HloInstruction*>> Fence(HloBuilder& b, absl::Span<HloInstruction* const> values) {
  if (values.empty()) return std::vector<HloInstruction*>{};
  HLO_ASSIGN_OR_RETURN(HloInstruction * tuple, b.Tuple(values));
  HLO_ASSIGN_OR_RETURN(HloInstruction * fenced, b.OptimizationBarrier(tuple));
  return Unpack(b, fenced, 0, static_cast<int64_t>(values.size()));
}

// checkpoint: inline, but a rematerialization (the backward pass's copy of the forward part,
// `differentiated` with prevent_cse) first passes all its operands through one opt-barrier, as
// JAX's remat lowering does (transforms/optimization_barrier.h says why).
absl::Status LowerCheckpoint(LowerContext& ctx) {
  std::vector<HloInstruction*> operands(ctx.operands().begin(), ctx.operands().end());
  if (ctx.params().GetBool("differentiated") && ctx.params().GetBool("prevent_cse")) {
    HLO_ASSIGN_OR_RETURN(operands, Fence(ctx.builder(), operands));
  }
  HLO_ASSIGN_OR_RETURN(std::vector<HloInstruction*> outs,
                       ctx.InlineJaxpr(ctx.builder(), GetJaxpr(ctx.params(), "jaxpr"), operands, ""));
  ctx.SetOutputs(outs);
  return absl::OkStatus();
}

}  // namespace

void RegisterControlFlowLowering(Registry& r) {
  r.Define(Primitive::Intern("cond")).lower = LowerCond;
  r.Define(Primitive::Intern("while")).lower = LowerWhile;
  r.Define(Primitive::Intern("scan")).lower = LowerScan;
  r.Define(Primitive::Intern("custom_jvp_call")).lower = InlineCall("call_jaxpr");
  r.Define(Primitive::Intern("custom_vjp_call")).lower = InlineCall("call_jaxpr");
  r.Define(Primitive::Intern("checkpoint")).lower = LowerCheckpoint;
  // A nested jit lowers inline (XLA would inline the call anyway).
  r.Define(Primitive::Intern("jit")).lower = InlineCall("jaxpr");
  r.Define(Primitive::Intern("custom_lin")).unsupported["lower"] =
      "custom_lin exists only between linearize and transpose (its bwd is a host C++ function), so no "
      "jaxpr handed to jit contains it";
  r.Define(kStopGradient).lower = [](LowerContext& ctx) -> absl::Status {
    ctx.SetOutputs({ctx.operand(0)});
    return absl::OkStatus();
  };
  r.Define(OptimizationBarrierPrimitive()).lower = [](LowerContext& ctx) -> absl::Status {
    HLO_ASSIGN_OR_RETURN(std::vector<HloInstruction*> outs, Fence(ctx.builder(), ctx.operands()));
    ctx.SetOutputs(outs);
    return absl::OkStatus();
  };
  // checkpoint_name: a tag for checkpoint policies, the identity once compiled.
  r.Define(Primitive::Intern("name")).lower = [](LowerContext& ctx) -> absl::Status {
    ctx.SetOutputs({ctx.operand(0)});
    return absl::OkStatus();
  };
}

}  // namespace jx::lax::internal
