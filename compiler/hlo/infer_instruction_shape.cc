// ShapeInference::InferInstructionShape: the one dispatch from an instruction's opcode to
// its shape rule (shared by HloBuilder and the verifier).
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "jx/compiler/hlo/hlo_computation.h"
#include "jx/compiler/hlo/hlo_instruction.h"
#include "jx/compiler/hlo/shape_inference.h"
#include "jx/compiler/hlo/status_macros.h"
#include "jx/compiler/hlo/str_util.h"

namespace jx::hlo {
namespace {

template <typename... Args>
absl::Status Invalid(const Args&... args) {
  return absl::InvalidArgumentError(StrCat(args...));
}

absl::StatusOr<ProgramShape> Signature(const HloComputation* c, std::string_view attr) {
  if (c == nullptr) return Invalid("missing ", attr, "=");
  if (c->root_instruction() == nullptr) return Invalid(attr, "=%", c->name(), " has no root");
  for (int64_t i = 0; i < c->num_parameters(); ++i) {
    if (c->parameter_instruction(i) == nullptr) {
      return Invalid(attr, "=%", c->name(), " has no parameter ", i);
    }
  }
  return c->ComputeProgramShape();
}

// Dot and convolution may produce a wider type than their inputs (bf16 x bf16 -> f32).
Shape WithResultType(Shape inferred, const Shape& declared) {
  if (declared.IsArray() && declared.element_type() != inferred.element_type()) {
    return Shape(declared.element_type(), inferred.dimensions());
  }
  return inferred;
}

// The partitions per group. replica_groups={} (every partition, a count the HLO does not
// state) takes it from the declared result: gathered / operand size along the dimension.
absl::StatusOr<int64_t> GroupSize(const HloInstruction& instr, const Shape& operand, const Shape& declared) {
  HLO_ASSIGN_OR_RETURN(int64_t size, ShapeInference::ReplicaGroupSize(instr.replica_groups()));
  if (size > 0) return size;
  if (!declared.valid() || !declared.IsArray() || !operand.IsArray() || instr.dimensions().size() != 1) {
    return Invalid("replica_groups={} (every partition) needs the result shape to tell the group size");
  }
  const int64_t d = instr.dimensions(0);
  if (d < 0 || d >= operand.rank() || d >= declared.rank()) return int64_t{1};
  const HloOpcode op = SyncCollectiveOpcode(instr.opcode());
  const bool gathers = op == HloOpcode::kAllGather;
  const int64_t big = gathers ? declared.dimensions()[d] : operand.dimensions()[d];
  const int64_t small = gathers ? operand.dimensions()[d] : declared.dimensions()[d];
  if (op == HloOpcode::kAllToAll || small == 0 || big % small != 0) return int64_t{1};
  return big / small;
}

absl::StatusOr<int64_t> OneDimension(const HloInstruction& instr) {
  if (instr.dimensions().size() != 1) {
    return Invalid("dimensions=", IntListToString(instr.dimensions()), " must name one dimension");
  }
  return instr.dimensions(0);
}

// The result of a collective, or of the collective a start begins; declared is the result
// the instruction states (for replica_groups={}).
absl::StatusOr<Shape> InferCollectiveResult(const HloInstruction& instr, const Shape& operand,
                                            const Shape& declared) {
  using SI = ShapeInference;
  switch (SyncCollectiveOpcode(instr.opcode())) {
    case HloOpcode::kAllReduce: {
      HLO_ASSIGN_OR_RETURN(ProgramShape f, Signature(instr.to_apply(), "to_apply"));
      HLO_RETURN_IF_ERROR(SI::ReplicaGroupSize(instr.replica_groups()).status());
      return SI::InferAllReduceShape(operand, f);
    }
    case HloOpcode::kAllGather: {
      HLO_ASSIGN_OR_RETURN(int64_t d, OneDimension(instr));
      HLO_ASSIGN_OR_RETURN(int64_t n, GroupSize(instr, operand, declared));
      return SI::InferAllGatherShape(operand, d, n);
    }
    case HloOpcode::kReduceScatter: {
      HLO_ASSIGN_OR_RETURN(ProgramShape f, Signature(instr.to_apply(), "to_apply"));
      HLO_ASSIGN_OR_RETURN(int64_t d, OneDimension(instr));
      HLO_ASSIGN_OR_RETURN(int64_t n, GroupSize(instr, operand, declared));
      return SI::InferReduceScatterShape(operand, d, n, f);
    }
    case HloOpcode::kAllToAll: {
      HLO_ASSIGN_OR_RETURN(int64_t d, OneDimension(instr));
      HLO_ASSIGN_OR_RETURN(int64_t n, GroupSize(instr, operand, declared));
      return SI::InferAllToAllShape(operand, d, n);
    }
    case HloOpcode::kCollectivePermute:
      return SI::InferCollectivePermuteShape(operand, instr.source_target_pairs());
    default:
      return Invalid(HloOpcodeString(instr.opcode()), " is not a collective");
  }
}

// The results of a collective (or of the one a start begins) over each of its operands, as
// XLA's variadic all-reduce, all-gather, reduce-scatter and all-to-all: one result per
// operand, each by the opcode's rule. declared: the result the instruction states (one
// array, or a tuple of one per operand).
absl::StatusOr<std::vector<Shape>> InferCollectiveResults(const HloInstruction& instr, absl::Span<const Shape> operands,
                                                          const Shape& declared) {
  if (operands.empty()) return Invalid("takes at least one operand");
  std::vector<Shape> results;
  for (size_t i = 0; i < operands.size(); ++i) {
    Shape declared_i;
    if (operands.size() == 1) {
      declared_i = declared;
    } else if (declared.valid() && declared.IsTuple() && declared.tuple_shapes_size() == static_cast<int64_t>(operands.size())) {
      declared_i = declared.tuple_shapes(static_cast<int64_t>(i));
    }
    absl::StatusOr<Shape> result = InferCollectiveResult(instr, operands[i], declared_i);
    if (!result.ok()) {
      if (operands.size() == 1) return result.status();
      return Invalid("operand ", i, " (of ", operands.size(), "): ", result.status().message());
    }
    results.push_back(*std::move(result));
  }
  return results;
}

// XLA's tuple all-to-all (no dimensions=): one operand per member of a group, all of one
// shape; member r's result i is member i's operand r. Its result is a tuple of the operands'
// shape, however many there are.
bool IsTupleAllToAll(const HloInstruction& instr) {
  return SyncCollectiveOpcode(instr.opcode()) == HloOpcode::kAllToAll && instr.dimensions().empty();
}

absl::StatusOr<std::vector<Shape>> InferTupleAllToAllResults(const HloInstruction& instr,
                                                             absl::Span<const Shape> operands) {
  if (operands.empty()) return Invalid("takes at least one operand");
  HLO_ASSIGN_OR_RETURN(int64_t group_size, ShapeInference::ReplicaGroupSize(instr.replica_groups()));
  if (group_size > 0 && group_size != static_cast<int64_t>(operands.size())) {
    return Invalid("an all-to-all of ", operands.size(), " operands without dimensions= sends operand i to member i ",
                   "of its group, but replica_groups=", ReplicaGroupsToString(instr.replica_groups()),
                   " has groups of ", group_size);
  }
  for (size_t i = 0; i < operands.size(); ++i) {
    if (!operands[i].IsArray()) return Invalid("operand ", i, " must be an array, got ", operands[i].ToString(false));
    if (!ShapeUtil::Compatible(operands[i], operands[0])) {
      return Invalid("the operands of a tuple all-to-all must have one shape: operand 0 is ",
                     operands[0].ToString(false), ", operand ", i, " is ", operands[i].ToString(false));
    }
  }
  return std::vector<Shape>(operands.size(), operands[0]);
}

// XLA's array all-to-all (dimensions= names its split dimension) takes one operand.
absl::Status CheckArrayAllToAllOperands(const HloInstruction& instr) {
  if (SyncCollectiveOpcode(instr.opcode()) != HloOpcode::kAllToAll || instr.operand_count() == 1) {
    return absl::OkStatus();
  }
  return Invalid("an ", HloOpcodeString(instr.opcode()), " with dimensions= (its split dimension) takes one operand, got ",
                 instr.operand_count(), "; several operands are the tuple form, without dimensions=");
}
// An instruction's operand shapes: each by reference, or all as a span, copied on first use
// (only the variadic rules take them all; copying every operand's shape for every instruction
// was most of what the builder and the verifier allocated on big programs).
class OperandShapes {
 public:
  explicit OperandShapes(const HloInstruction& instr) : instr_(instr) {}
  const Shape& operator[](int64_t i) const { return instr_.operand(i)->shape(); }
  absl::Span<const Shape> all() {
    if (copies_.size() != static_cast<size_t>(instr_.operand_count())) {
      copies_.clear();
      for (const HloInstruction* operand : instr_.operands()) copies_.push_back(operand->shape());
    }
    return copies_;
  }

 private:
  const HloInstruction& instr_;
  std::vector<Shape> copies_;
};

// The elementwise ops of one or two operands whose shape rule is InferUnaryOpShape's or
// InferBinaryOpShape's alone (the others have cases of their own in Infer).
bool HasElementwiseRule(HloOpcode op) {
  switch (op) {
    case HloOpcode::kConvert: case HloOpcode::kBitcastConvert: case HloOpcode::kReducePrecision:
    case HloOpcode::kCompare:
      return false;
    default:
      return IsElementwiseOpcode(op) && (HloOpcodeArity(op) == 1 || HloOpcodeArity(op) == 2);
  }
}

absl::StatusOr<Shape> Infer(const HloInstruction& instr) {
  using SI = ShapeInference;
  const HloOpcode op = instr.opcode();
  const int arity = HloOpcodeArity(op);
  if (arity != kVariadic && instr.operand_count() != arity) {
    return Invalid("expects ", arity, " operand(s), got ", instr.operand_count());
  }
  if (HasElementwiseRule(op)) {
    return arity == 1 ? SI::InferUnaryOpShape(op, instr.operand(0)->shape())
                      : SI::InferBinaryOpShape(op, instr.operand(0)->shape(), instr.operand(1)->shape());
  }
  OperandShapes shapes(instr);
  const Shape& declared = instr.shape();
  switch (op) {
    case HloOpcode::kParameter:
    case HloOpcode::kCustomCall:
      HLO_RETURN_IF_ERROR(ShapeUtil::ValidateShape(declared));
      return declared;
    case HloOpcode::kConstant: {
      const Shape& lit = instr.literal().shape();
      if (!declared.valid()) return lit;
      if (!ShapeUtil::Compatible(lit, declared)) {
        return Invalid("literal of shape ", lit.ToString(false), " does not match ",
                       declared.ToString(false));
      }
      return declared;
    }
    case HloOpcode::kIota:
      HLO_RETURN_IF_ERROR(ShapeUtil::ValidateShape(declared));
      if (!declared.IsArray() || declared.rank() == 0 || declared.element_type() == PRED) {
        return Invalid("iota needs a numeric array shape of rank >= 1, got ", declared.ToString(false));
      }
      if (instr.iota_dimension() < 0 || instr.iota_dimension() >= declared.rank()) {
        return Invalid("iota_dimension=", instr.iota_dimension(), " out of range for ", declared.ToString(false));
      }
      return declared;
    case HloOpcode::kConvert:
      return SI::InferConvertShape(shapes[0], declared.element_type());
    case HloOpcode::kBitcastConvert:
      return SI::InferBitcastConvertShape(shapes[0], declared.element_type());
    case HloOpcode::kReducePrecision:
      if (!shapes[0].IsArray() || !IsFloatingPointType(shapes[0].element_type())) {
        return Invalid("operand must be floating-point");
      }
      if (instr.exponent_bits() < 1 || instr.mantissa_bits() < 0) {
        return Invalid("exponent_bits=", instr.exponent_bits(), ", mantissa_bits=",
                       instr.mantissa_bits(), " (need exponent_bits >= 1, mantissa_bits >= 0)");
      }
      return shapes[0];
    case HloOpcode::kCompare:
      if (!instr.HasAttr(HloAttr::kDirection)) return Invalid("missing direction=");
      return SI::InferBinaryOpShape(op, shapes[0], shapes[1]);
    case HloOpcode::kClamp:
    case HloOpcode::kSelect:
      return SI::InferTernaryOpShape(op, shapes[0], shapes[1], shapes[2]);
    case HloOpcode::kBitcast:
      HLO_RETURN_IF_ERROR(ShapeUtil::ValidateShape(declared));
      if (!shapes[0].IsArray() || !declared.IsArray() ||
          ShapeUtil::ByteSizeOf(shapes[0]) != ShapeUtil::ByteSizeOf(declared)) {
        return Invalid("bitcast must keep the byte size: ", shapes[0].ToString(false), " -> ",
                       declared.ToString(false));
      }
      return declared;
    case HloOpcode::kBroadcast:
      return SI::InferBroadcastShape(shapes[0], declared, instr.dimensions());
    case HloOpcode::kConcatenate:
      if (instr.dimensions().size() != 1) {
        return Invalid("dimensions=", IntListToString(instr.dimensions()),
                       " must name one dimension");
      }
      return SI::InferConcatenateShape(shapes.all(), instr.dimensions(0));
    case HloOpcode::kDynamicSlice:
      if (shapes.all().empty()) return Invalid("needs an operand");
      return SI::InferDynamicSliceShape(shapes[0], shapes.all().subspan(1), instr.dynamic_slice_sizes());
    case HloOpcode::kDynamicUpdateSlice:
      if (shapes.all().size() < 2) return Invalid("needs an operand and an update");
      return SI::InferDynamicUpdateSliceShape(shapes[0], shapes[1], shapes.all().subspan(2));
    case HloOpcode::kGather:
      return SI::InferGatherShape(shapes[0], shapes[1], instr.gather_dimension_numbers(),
                                  instr.gather_slice_sizes());
    case HloOpcode::kPad:
      return SI::InferPadShape(shapes[0], shapes[1], instr.padding_config());
    case HloOpcode::kReshape:
      HLO_RETURN_IF_ERROR(ShapeUtil::ValidateShape(declared));
      if (!shapes[0].IsArray() || !declared.IsArray() ||
          shapes[0].element_type() != declared.element_type() ||
          ShapeUtil::ElementsIn(shapes[0]) != ShapeUtil::ElementsIn(declared)) {
        return Invalid("reshape must keep element type and count: ", shapes[0].ToString(false),
                       " -> ", declared.ToString(false));
      }
      return declared;
    case HloOpcode::kReverse:
      return SI::InferReverseShape(shapes[0], instr.dimensions());
    case HloOpcode::kScatter: {
      HLO_ASSIGN_OR_RETURN(ProgramShape f, Signature(instr.to_apply(), "to_apply"));
      return SI::InferScatterShape(shapes.all(), instr.scatter_dimension_numbers(), f);
    }
    case HloOpcode::kSlice:
      return SI::InferSliceShape(shapes[0], instr.slice());
    case HloOpcode::kTranspose:
      return SI::InferTransposeShape(shapes[0], instr.dimensions());
    case HloOpcode::kConvolution: {
      HLO_ASSIGN_OR_RETURN(
          Shape s, SI::InferConvolutionShape(shapes[0], shapes[1], instr.window(),
                                             instr.convolution_dimension_numbers(),
                                             instr.feature_group_count(),
                                             instr.batch_group_count()));
      return WithResultType(std::move(s), declared);
    }
    case HloOpcode::kDot: {
      HLO_ASSIGN_OR_RETURN(
          Shape s, SI::InferDotShape(shapes[0], shapes[1], instr.dot_dimension_numbers()));
      return WithResultType(std::move(s), declared);
    }
    case HloOpcode::kMap: {
      HLO_ASSIGN_OR_RETURN(ProgramShape f, Signature(instr.to_apply(), "to_apply"));
      return SI::InferMapShape(shapes.all(), f);
    }
    case HloOpcode::kReduce: {
      HLO_ASSIGN_OR_RETURN(ProgramShape f, Signature(instr.to_apply(), "to_apply"));
      return SI::InferReduceShape(shapes.all(), instr.dimensions(), f);
    }
    case HloOpcode::kReduceWindow: {
      HLO_ASSIGN_OR_RETURN(ProgramShape f, Signature(instr.to_apply(), "to_apply"));
      return SI::InferReduceWindowShape(shapes.all(), instr.window(), f);
    }
    case HloOpcode::kSelectAndScatter: {
      HLO_ASSIGN_OR_RETURN(ProgramShape select, Signature(instr.select(), "select"));
      HLO_ASSIGN_OR_RETURN(ProgramShape scatter, Signature(instr.scatter(), "scatter"));
      return SI::InferSelectAndScatterShape(shapes[0], select, instr.window(), shapes[1],
                                            shapes[2], scatter);
    }
    case HloOpcode::kSort: {
      if (instr.dimensions().size() != 1) {
        return Invalid("dimensions=", IntListToString(instr.dimensions()),
                       " must name one dimension");
      }
      HLO_ASSIGN_OR_RETURN(ProgramShape f, Signature(instr.to_apply(), "to_apply"));
      return SI::InferSortShape(shapes.all(), instr.dimensions(0), f);
    }
    case HloOpcode::kCall: {
      HLO_ASSIGN_OR_RETURN(ProgramShape f, Signature(instr.to_apply(), "to_apply"));
      return SI::InferCallShape(shapes.all(), f);
    }
    case HloOpcode::kFusion: {
      HLO_ASSIGN_OR_RETURN(ProgramShape f,
                           Signature(instr.fused_instructions_computation(), "calls"));
      if (!instr.HasAttr(HloAttr::kFusionKind)) return Invalid("missing kind=");
      return SI::InferCallShape(shapes.all(), f, "calls");
    }
    case HloOpcode::kConditional: {
      std::vector<ProgramShape> branches;
      for (size_t i = 0; i < instr.branch_computations().size(); ++i) {
        HLO_ASSIGN_OR_RETURN(ProgramShape f,
                             Signature(instr.branch_computations()[i],
                                       StrCat("branch_computations[", i, "]")));
        branches.push_back(std::move(f));
      }
      return SI::InferConditionalShape(shapes.all(), branches);
    }
    case HloOpcode::kWhile: {
      HLO_ASSIGN_OR_RETURN(ProgramShape cond, Signature(instr.while_condition(), "condition"));
      HLO_ASSIGN_OR_RETURN(ProgramShape body, Signature(instr.while_body(), "body"));
      return SI::InferWhileShape(cond, body, shapes[0]);
    }
    case HloOpcode::kGetTupleElement:
      return SI::InferGetTupleElementShape(shapes[0], instr.tuple_index());
    case HloOpcode::kTuple:
      return Shape::Tuple(std::vector<Shape>(shapes.all().begin(), shapes.all().end()));
    case HloOpcode::kOptimizationBarrier:
      return shapes[0];
    case HloOpcode::kRngBitGenerator:
      if (!shapes[0].IsArray() || !declared.IsTuple() || declared.tuple_shapes_size() != 2 ||
          !ShapeUtil::Compatible(declared.tuple_shapes(0), shapes[0]) ||
          !declared.tuple_shapes(1).IsArray() ||
          !IsUnsignedIntegralType(declared.tuple_shapes(1).element_type())) {
        return Invalid("result must be (state ", shapes[0].ToString(false),
                       ", unsigned integer array), got ", declared.ToString(false));
      }
      return declared;
    case HloOpcode::kCollectivePermute:
      return InferCollectiveResult(instr, shapes[0], declared);
    case HloOpcode::kAllReduce: case HloOpcode::kAllGather: case HloOpcode::kReduceScatter:
    case HloOpcode::kAllToAll: {
      if (IsTupleAllToAll(instr)) {
        HLO_ASSIGN_OR_RETURN(std::vector<Shape> results, InferTupleAllToAllResults(instr, shapes.all()));
        return Shape::Tuple(std::move(results));
      }
      HLO_RETURN_IF_ERROR(CheckArrayAllToAllOperands(instr));
      HLO_ASSIGN_OR_RETURN(std::vector<Shape> results, InferCollectiveResults(instr, shapes.all(), declared));
      return results.size() == 1 ? results[0] : Shape::Tuple(std::move(results));
    }
    case HloOpcode::kAllReduceStart: case HloOpcode::kAllGatherStart:
    case HloOpcode::kReduceScatterStart: case HloOpcode::kAllToAllStart:
    case HloOpcode::kCollectivePermuteStart: {
      if (IsTupleAllToAll(instr)) {
        HLO_ASSIGN_OR_RETURN(std::vector<Shape> results, InferTupleAllToAllResults(instr, shapes.all()));
        return Shape::Tuple({Shape::Tuple(std::vector<Shape>(shapes.all().begin(), shapes.all().end())), Shape::Tuple(std::move(results))});
      }
      HLO_RETURN_IF_ERROR(CheckArrayAllToAllOperands(instr));
      absl::StatusOr<Shape> declared_result = SI::InferAsyncDoneShape(op, declared);
      HLO_ASSIGN_OR_RETURN(std::vector<Shape> results,
                           InferCollectiveResults(instr, shapes.all(), declared_result.ok() ? *declared_result : Shape()));
      return SI::InferAsyncStartShape(op, shapes.all(), results);
    }
    case HloOpcode::kAllReduceDone: case HloOpcode::kAllGatherDone:
    case HloOpcode::kReduceScatterDone: case HloOpcode::kAllToAllDone:
    case HloOpcode::kCollectivePermuteDone: {
      const HloOpcode start = instr.operand(0)->opcode();
      if (!IsAsyncCollectiveStart(start) || SyncCollectiveOpcode(start) != SyncCollectiveOpcode(op)) {
        return Invalid("operand must be a ", HloOpcodeString(*AsyncStartOpcode(SyncCollectiveOpcode(op))),
                       ", got ", HloOpcodeString(start), " %", instr.operand(0)->name());
      }
      return SI::InferAsyncDoneShape(start, shapes[0]);
    }
    case HloOpcode::kPartitionId:
      return ShapeUtil::MakeScalarShape(U32);
    default:
      return Invalid("no shape rule for opcode ", HloOpcodeString(op));
  }
}

}  // namespace

bool ShapeInference::InferredShapeMatches(const HloInstruction& instr) {
  const HloOpcode op = instr.opcode();
  const int arity = HloOpcodeArity(op);
  if (HasElementwiseRule(op) && instr.operand_count() == arity && op != HloOpcode::kCopy) {
    const Shape& first = instr.operand(0)->shape();
    const absl::StatusOr<PrimitiveType> type =
        arity == 1 ? InferUnaryOpResultType(op, first) : InferBinaryOpResultType(op, first, instr.operand(1)->shape());
    // An array type (the rules take arrays only): equal types make the declared shape an array.
    return type.ok() && instr.shape().element_type() == *type && instr.shape().dimensions() == first.dimensions();
  }
  const absl::StatusOr<Shape> inferred = Infer(instr);
  return inferred.ok() && ShapeUtil::Compatible(*inferred, instr.shape());
}

absl::StatusOr<Shape> ShapeInference::InferInstructionShape(const HloInstruction& instr) {
  absl::StatusOr<Shape> shape = Infer(instr);
  if (shape.ok()) return shape;
  std::vector<std::string> operand_shapes;
  for (const HloInstruction* operand : instr.operands()) {
    operand_shapes.push_back(operand->shape().ToString(/*print_layout=*/false));
  }
  return absl::InvalidArgumentError(StrCat(
      instr.name().empty() ? "" : StrCat("%", instr.name(), " = "),
      HloOpcodeString(instr.opcode()), "(", absl::StrJoin(operand_shapes, ", "),
      "): ", Message(shape.status())));
}

}  // namespace jx::hlo
