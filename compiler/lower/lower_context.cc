#include "jx/compiler/lower/lower_context.h"

#include <utility>

#include "jx/core/str_util.h"
#include "jx/compiler/hlo/status_macros.h"
#include "jx/compiler/lower/literal_convert.h"
#include "jx/compiler/lower/lowerer.h"

namespace jx {

LowerContext::LowerContext(lower_internal::Lowerer& lowerer, hlo::HloBuilder& builder, const Eqn& eqn,
                           absl::Span<hlo::HloInstruction* const> operands, AvalSpan in_avals,
                           AvalSpan out_avals, const std::string& name_stack)
    : lowerer_(lowerer),
      builder_(builder),
      eqn_(eqn),
      operands_(operands),
      in_avals_(in_avals),
      out_avals_(out_avals),
      name_stack_(name_stack) {}

hlo::HloModule& LowerContext::module() { return *lowerer_.module(); }
int64_t LowerContext::NewChannelId() { return lowerer_.NewChannelId(); }

const std::string& LowerContext::platform() const { return lowerer_.platform(); }

std::string LowerContext::op_name() const { return StrCat(name_stack_, "/", primitive_name()); }

hlo::OpMetadata LowerContext::metadata() const {
  return hlo::OpMetadata{std::string(primitive_name()), op_name(), "", 0};
}

hlo::Shape LowerContext::ShapeOf(const ShapedArray& aval) { return ShapeOfAval(aval); }
hlo::PrimitiveType LowerContext::TypeOf(DType dtype) { return PrimitiveTypeOf(dtype); }

absl::StatusOr<hlo::HloInstruction*> LowerContext::ConstantScalar(double value, DType dtype) {
  return builder_.Constant(hlo::Literal::CreateScalar(TypeOf(dtype), value));
}

absl::StatusOr<hlo::HloInstruction*> LowerContext::ConstantInt(int64_t value, DType dtype) {
  hlo::Literal literal(hlo::ShapeUtil::MakeScalarShape(TypeOf(dtype)));
  literal.SetFromInt64(0, value);
  return builder_.Constant(std::move(literal));
}

hlo::HloBuilder LowerContext::NewBuilder(std::string_view name) {
  hlo::HloBuilder b(&module(), name);
  b.set_metadata(metadata());
  return b;
}

absl::StatusOr<hlo::HloComputation*> LowerContext::ScalarBinaryComputation(hlo::HloOpcode op, hlo::PrimitiveType type,
                                                                           std::string_view name) {
  hlo::HloBuilder b = NewBuilder(name);
  const hlo::Shape scalar = hlo::ShapeUtil::MakeScalarShape(type);
  HLO_ASSIGN_OR_RETURN(hlo::HloInstruction * lhs, b.Parameter(0, scalar, "lhs"));
  HLO_ASSIGN_OR_RETURN(hlo::HloInstruction * rhs, b.Parameter(1, scalar, "rhs"));
  HLO_ASSIGN_OR_RETURN(hlo::HloInstruction * root, b.Binary(op, lhs, rhs));
  return b.Build(root);
}

absl::StatusOr<hlo::HloComputation*> LowerContext::LowerSubJaxpr(const ClosedJaxpr& jaxpr, std::string_view name,
                                                                 std::string_view scope, bool tuple_param,
                                                                 bool tuple_result) {
  hlo::HloBuilder b = NewBuilder(name);
  std::vector<hlo::HloInstruction*> args;
  const std::vector<ShapedArray> in = jaxpr.jaxpr->in_avals();
  if (tuple_param) {
    std::vector<hlo::Shape> shapes;
    for (const ShapedArray& a : in) shapes.push_back(ShapeOf(a));
    HLO_ASSIGN_OR_RETURN(hlo::HloInstruction * p, b.Parameter(0, hlo::ShapeUtil::MakeTupleShape(shapes), "arg_tuple"));
    for (size_t i = 0; i < in.size(); ++i) {
      HLO_ASSIGN_OR_RETURN(hlo::HloInstruction * x, b.GetTupleElement(p, static_cast<int64_t>(i)));
      args.push_back(x);
    }
  } else {
    for (size_t i = 0; i < in.size(); ++i) {
      HLO_ASSIGN_OR_RETURN(hlo::HloInstruction * x,
                           b.Parameter(static_cast<int64_t>(i), ShapeOf(in[i]), StrCat("Arg_", i)));
      args.push_back(x);
    }
  }
  HLO_ASSIGN_OR_RETURN(std::vector<hlo::HloInstruction*> outs, InlineJaxpr(b, jaxpr, args, scope));
  hlo::HloInstruction* root;
  if (!tuple_result && outs.size() == 1) {
    root = outs[0];
  } else {
    HLO_ASSIGN_OR_RETURN(root, b.Tuple(outs));
  }
  return b.Build(root);
}

absl::StatusOr<std::vector<hlo::HloInstruction*>> LowerContext::InlineJaxpr(
    hlo::HloBuilder& builder, const ClosedJaxpr& jaxpr, absl::Span<hlo::HloInstruction* const> args,
    std::string_view scope) {
  std::string stack = op_name();
  if (!scope.empty()) StrAppend(&stack, "/", scope);
  auto outs = lowerer_.Emit(builder, jaxpr, args, stack);
  builder.set_metadata(metadata());
  return outs;
}

}  // namespace jx
