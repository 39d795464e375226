#include "jx/compiler/hlo/hlo_builder.h"

#include "absl/strings/str_cat.h"
#include "jx/compiler/hlo/shape_inference.h"
#include "jx/compiler/hlo/status_macros.h"
#include "jx/compiler/hlo/str_util.h"

namespace jx::hlo {
namespace {

std::vector<HloInstruction*> Concat(absl::Span<HloInstruction* const> a,
                                    absl::Span<HloInstruction* const> b) {
  std::vector<HloInstruction*> out(a.begin(), a.end());
  out.insert(out.end(), b.begin(), b.end());
  return out;
}

}  // namespace

HloBuilder::HloBuilder(HloModule* module, std::string_view name)
    : computation_(module->AddComputation(name)) {}

void HloBuilder::set_metadata(OpMetadata metadata) {
  if (metadata.empty()) {
    metadata_ = nullptr;
    return;
  }
  std::shared_ptr<const OpMetadata>& shared = interned_metadata_[metadata];
  if (shared == nullptr) shared = std::make_shared<const OpMetadata>(std::move(metadata));
  metadata_ = shared;
}

absl::StatusOr<HloInstruction*> HloBuilder::AddInstruction(std::unique_ptr<HloInstruction> instr,
                                                           std::string_view name) {
  for (int64_t i = 0; i < instr->operand_count(); ++i) {
    const HloInstruction* operand = instr->operand(i);
    if (operand == nullptr || operand->parent() != computation_) {
      return absl::InvalidArgumentError(StrCat(
          HloOpcodeString(instr->opcode()), ": operand ", i, " (",
          operand == nullptr ? "null" : "%" + operand->name(),
          ") does not belong to computation ", computation_->name()));
    }
  }
  HLO_ASSIGN_OR_RETURN(Shape shape, ShapeInference::InferInstructionShape(*instr));
  *instr->mutable_shape() = std::move(shape);
  if (instr->shared_metadata() == nullptr && metadata_ != nullptr) instr->set_shared_metadata(metadata_);
  last_added_ = computation_->AddInstruction(std::move(instr), name);
  return last_added_;
}

absl::StatusOr<HloComputation*> HloBuilder::Build(HloInstruction* root) {
  if (root == nullptr) root = last_added_;
  if (root == nullptr || root->parent() != computation_) {
    return absl::InvalidArgumentError(
        StrCat("computation ", computation_->name(), ": root must be an instruction of it"));
  }
  for (int64_t i = 0; i < computation_->num_parameters(); ++i) {
    if (computation_->parameter_instruction(i) == nullptr) {
      return absl::InvalidArgumentError(StrCat(
          "computation ", computation_->name(), ": parameter ", i, " is missing (parameters ",
          "must be numbered 0..", computation_->num_parameters() - 1, ")"));
    }
  }
  computation_->set_root_instruction(root);
  return computation_;
}

absl::StatusOr<HloInstruction*> HloBuilder::Parameter(int64_t number, const Shape& shape,
                                                      std::string_view name) {
  if (number < 0) {
    return absl::InvalidArgumentError(StrCat("parameter number ", number, " is negative"));
  }
  if (number < computation_->num_parameters() &&
      computation_->parameter_instruction(number) != nullptr) {
    return absl::InvalidArgumentError(StrCat("parameter ", number, " of ",
                                                   computation_->name(), " already exists"));
  }
  auto instr = Make(HloOpcode::kParameter, {}, shape);
  instr->set_parameter_number(number);
  return AddInstruction(std::move(instr), name);
}

absl::StatusOr<HloInstruction*> HloBuilder::Constant(Literal literal) {
  auto instr = Make(HloOpcode::kConstant, {}, literal.shape());
  instr->set_literal(std::move(literal));
  return AddInstruction(std::move(instr));
}

absl::StatusOr<HloInstruction*> HloBuilder::Iota(const Shape& shape, int64_t iota_dimension) {
  auto instr = Make(HloOpcode::kIota, {}, shape);
  instr->set_iota_dimension(iota_dimension);
  return AddInstruction(std::move(instr));
}

absl::StatusOr<HloInstruction*> HloBuilder::Unary(HloOpcode opcode, HloInstruction* operand) {
  return AddInstruction(Make(opcode, {operand}));
}

absl::StatusOr<HloInstruction*> HloBuilder::Binary(HloOpcode opcode, HloInstruction* lhs,
                                                   HloInstruction* rhs) {
  return AddInstruction(Make(opcode, {lhs, rhs}));
}

absl::StatusOr<HloInstruction*> HloBuilder::Ternary(HloOpcode opcode, HloInstruction* a,
                                                    HloInstruction* b, HloInstruction* c) {
  return AddInstruction(Make(opcode, {a, b, c}));
}

absl::StatusOr<HloInstruction*> HloBuilder::Compare(HloInstruction* lhs, HloInstruction* rhs,
                                                    ComparisonDirection direction,
                                                    ComparisonType type) {
  auto instr = Make(HloOpcode::kCompare, {lhs, rhs});
  instr->set_comparison_direction(direction);
  instr->set_comparison_type(type);
  return AddInstruction(std::move(instr));
}

absl::StatusOr<HloInstruction*> HloBuilder::Convert(HloInstruction* operand, PrimitiveType type) {
  return AddInstruction(Make(HloOpcode::kConvert, {operand}, Shape(type, {})));
}

absl::StatusOr<HloInstruction*> HloBuilder::BitcastConvert(HloInstruction* operand,
                                                           PrimitiveType type) {
  return AddInstruction(Make(HloOpcode::kBitcastConvert, {operand}, Shape(type, {})));
}

absl::StatusOr<HloInstruction*> HloBuilder::ReducePrecision(HloInstruction* operand,
                                                            int32_t exponent_bits,
                                                            int32_t mantissa_bits) {
  auto instr = Make(HloOpcode::kReducePrecision, {operand});
  instr->set_reduce_precision_bits(exponent_bits, mantissa_bits);
  return AddInstruction(std::move(instr));
}

absl::StatusOr<HloInstruction*> HloBuilder::Bitcast(HloInstruction* operand, const Shape& shape) {
  return AddInstruction(Make(HloOpcode::kBitcast, {operand}, shape));
}

absl::StatusOr<HloInstruction*> HloBuilder::Broadcast(HloInstruction* operand, Ints result_dims,
                                                      Ints broadcast_dimensions) {
  auto instr = Make(HloOpcode::kBroadcast, {operand},
                    ShapeUtil::MakeShape(operand->shape().element_type(), result_dims));
  instr->set_dimensions(broadcast_dimensions);
  return AddInstruction(std::move(instr));
}

absl::StatusOr<HloInstruction*> HloBuilder::Reshape(HloInstruction* operand, Ints result_dims) {
  return AddInstruction(Make(HloOpcode::kReshape, {operand},
                             ShapeUtil::MakeShape(operand->shape().element_type(), result_dims)));
}

absl::StatusOr<HloInstruction*> HloBuilder::Transpose(HloInstruction* operand, Ints permutation) {
  auto instr = Make(HloOpcode::kTranspose, {operand});
  instr->set_dimensions(permutation);
  return AddInstruction(std::move(instr));
}

absl::StatusOr<HloInstruction*> HloBuilder::Slice(HloInstruction* operand, Ints starts,
                                                  Ints limits, Ints strides) {
  auto instr = Make(HloOpcode::kSlice, {operand});
  instr->set_slice({{starts.begin(), starts.end()},
                    {limits.begin(), limits.end()},
                    {strides.begin(), strides.end()}});
  return AddInstruction(std::move(instr));
}

absl::StatusOr<HloInstruction*> HloBuilder::DynamicSlice(HloInstruction* operand,
                                                         Operands start_indices, Ints sizes) {
  auto instr = Make(HloOpcode::kDynamicSlice, Concat({operand}, start_indices));
  instr->set_dynamic_slice_sizes({sizes.begin(), sizes.end()});
  return AddInstruction(std::move(instr));
}

absl::StatusOr<HloInstruction*> HloBuilder::DynamicUpdateSlice(HloInstruction* operand,
                                                               HloInstruction* update,
                                                               Operands start_indices) {
  return AddInstruction(
      Make(HloOpcode::kDynamicUpdateSlice, Concat({operand, update}, start_indices)));
}

absl::StatusOr<HloInstruction*> HloBuilder::Concatenate(Operands operands, int64_t dimension) {
  auto instr = Make(HloOpcode::kConcatenate, operands);
  instr->set_dimensions({dimension});
  return AddInstruction(std::move(instr));
}

absl::StatusOr<HloInstruction*> HloBuilder::Pad(HloInstruction* operand,
                                                HloInstruction* padding_value,
                                                const PaddingConfig& padding) {
  auto instr = Make(HloOpcode::kPad, {operand, padding_value});
  instr->set_padding_config(padding);
  return AddInstruction(std::move(instr));
}

absl::StatusOr<HloInstruction*> HloBuilder::Reverse(HloInstruction* operand, Ints dimensions) {
  auto instr = Make(HloOpcode::kReverse, {operand});
  instr->set_dimensions(dimensions);
  return AddInstruction(std::move(instr));
}

absl::StatusOr<HloInstruction*> HloBuilder::Reduce(HloInstruction* operand, HloInstruction* init,
                                                   Ints dimensions, HloComputation* to_apply) {
  return Reduce(Operands({operand}), Operands({init}), dimensions, to_apply);
}

absl::StatusOr<HloInstruction*> HloBuilder::Reduce(Operands inputs, Operands inits,
                                                   Ints dimensions, HloComputation* to_apply) {
  auto instr = Make(HloOpcode::kReduce, Concat(inputs, inits));
  instr->set_dimensions(dimensions);
  instr->set_to_apply(to_apply);
  return AddInstruction(std::move(instr));
}

absl::StatusOr<HloInstruction*> HloBuilder::ReduceWindow(Operands inputs, Operands inits,
                                                         const Window& window,
                                                         HloComputation* to_apply) {
  auto instr = Make(HloOpcode::kReduceWindow, Concat(inputs, inits));
  instr->set_window(window);
  instr->set_to_apply(to_apply);
  return AddInstruction(std::move(instr));
}

absl::StatusOr<HloInstruction*> HloBuilder::SelectAndScatter(
    HloInstruction* operand, HloComputation* select, const Window& window, HloInstruction* source,
    HloInstruction* init, HloComputation* scatter) {
  auto instr = Make(HloOpcode::kSelectAndScatter, {operand, source, init});
  instr->set_window(window);
  instr->set_select(select);
  instr->set_scatter(scatter);
  return AddInstruction(std::move(instr));
}

absl::StatusOr<HloInstruction*> HloBuilder::Dot(HloInstruction* lhs, HloInstruction* rhs,
                                                const DotDimensionNumbers& dnums,
                                                PrimitiveType result_type,
                                                const PrecisionConfig& precision) {
  auto instr = Make(HloOpcode::kDot, {lhs, rhs}, Shape(result_type, {}));
  instr->set_dot_dimension_numbers(dnums);
  instr->set_precision_config(precision);
  return AddInstruction(std::move(instr));
}

absl::StatusOr<HloInstruction*> HloBuilder::Convolution(
    HloInstruction* lhs, HloInstruction* rhs, const Window& window,
    const ConvolutionDimensionNumbers& dnums, int64_t feature_group_count,
    int64_t batch_group_count, PrimitiveType result_type, const PrecisionConfig& precision) {
  auto instr = Make(HloOpcode::kConvolution, {lhs, rhs}, Shape(result_type, {}));
  instr->set_precision_config(precision);
  instr->set_window(window);
  instr->set_convolution_dimension_numbers(dnums);
  instr->set_feature_group_count(feature_group_count);
  instr->set_batch_group_count(batch_group_count);
  return AddInstruction(std::move(instr));
}

absl::StatusOr<HloInstruction*> HloBuilder::Gather(HloInstruction* operand,
                                                   HloInstruction* indices,
                                                   const GatherDimensionNumbers& dnums,
                                                   Ints slice_sizes) {
  auto instr = Make(HloOpcode::kGather, {operand, indices});
  instr->set_gather_dimension_numbers(dnums);
  instr->set_gather_slice_sizes({slice_sizes.begin(), slice_sizes.end()});
  return AddInstruction(std::move(instr));
}

absl::StatusOr<HloInstruction*> HloBuilder::Scatter(Operands operands, HloInstruction* indices,
                                                    Operands updates,
                                                    const ScatterDimensionNumbers& dnums,
                                                    HloComputation* to_apply) {
  auto instr = Make(HloOpcode::kScatter, Concat(Concat(operands, {indices}), updates));
  instr->set_scatter_dimension_numbers(dnums);
  instr->set_to_apply(to_apply);
  return AddInstruction(std::move(instr));
}

absl::StatusOr<HloInstruction*> HloBuilder::Sort(Operands operands, int64_t dimension,
                                                 HloComputation* comparator, bool is_stable) {
  auto instr = Make(HloOpcode::kSort, operands);
  instr->set_dimensions({dimension});
  instr->set_is_stable(is_stable);
  instr->set_to_apply(comparator);
  return AddInstruction(std::move(instr));
}

absl::StatusOr<HloInstruction*> HloBuilder::Map(Operands operands, HloComputation* to_apply) {
  auto instr = Make(HloOpcode::kMap, operands);
  // XLA's map names every dimension.
  std::vector<int64_t> dims;
  if (!operands.empty()) {
    for (int64_t i = 0; i < operands[0]->shape().rank(); ++i) dims.push_back(i);
  }
  instr->set_dimensions(std::move(dims));
  instr->set_to_apply(to_apply);
  return AddInstruction(std::move(instr));
}

absl::StatusOr<HloInstruction*> HloBuilder::Tuple(Operands elements) {
  return AddInstruction(Make(HloOpcode::kTuple, elements));
}

absl::StatusOr<HloInstruction*> HloBuilder::GetTupleElement(HloInstruction* tuple,
                                                            int64_t index) {
  auto instr = Make(HloOpcode::kGetTupleElement, {tuple});
  instr->set_tuple_index(index);
  return AddInstruction(std::move(instr));
}

absl::StatusOr<HloInstruction*> HloBuilder::Call(HloComputation* to_apply, Operands arguments) {
  auto instr = Make(HloOpcode::kCall, arguments);
  instr->set_to_apply(to_apply);
  return AddInstruction(std::move(instr));
}

absl::StatusOr<HloInstruction*> HloBuilder::Conditional(
    HloInstruction* branch_index, absl::Span<HloComputation* const> branches,
    Operands branch_operands) {
  auto instr = Make(HloOpcode::kConditional, Concat({branch_index}, branch_operands));
  instr->set_branch_computations({branches.begin(), branches.end()});
  return AddInstruction(std::move(instr));
}

absl::StatusOr<HloInstruction*> HloBuilder::While(HloComputation* condition, HloComputation* body,
                                                  HloInstruction* init) {
  auto instr = Make(HloOpcode::kWhile, {init});
  instr->set_while_condition(condition);
  instr->set_while_body(body);
  return AddInstruction(std::move(instr));
}

absl::StatusOr<HloInstruction*> HloBuilder::Fusion(FusionKind kind, Operands operands,
                                                   HloComputation* fused_computation) {
  // set_fused_computation marks the computation; undo that if the fusion is rejected.
  HloInstruction* previous =
      fused_computation != nullptr ? fused_computation->FusionInstruction() : nullptr;
  auto instr = Make(HloOpcode::kFusion, operands);
  instr->set_fusion_kind(kind);
  instr->set_fused_computation(fused_computation);
  absl::StatusOr<HloInstruction*> fusion = AddInstruction(std::move(instr));
  if (!fusion.ok() && fused_computation != nullptr) {
    fused_computation->SetFusionInstruction(previous);
  }
  return fusion;
}

absl::StatusOr<HloInstruction*> HloBuilder::CustomCall(std::string target, Operands operands,
                                                       const Shape& shape,
                                                       std::string backend_config,
                                                       bool has_side_effect) {
  auto instr = Make(HloOpcode::kCustomCall, operands, shape);
  instr->set_custom_call_target(std::move(target));
  instr->set_backend_config(std::move(backend_config));
  instr->set_custom_call_has_side_effect(has_side_effect);
  return AddInstruction(std::move(instr));
}

absl::StatusOr<HloInstruction*> HloBuilder::RngBitGenerator(RandomAlgorithm algorithm,
                                                            HloInstruction* state,
                                                            const Shape& output_shape) {
  auto instr = Make(HloOpcode::kRngBitGenerator, {state},
                    Shape::Tuple({state->shape(), output_shape}));
  instr->set_rng_algorithm(algorithm);
  return AddInstruction(std::move(instr));
}

std::unique_ptr<HloInstruction> HloBuilder::MakeCollective(HloOpcode opcode,
                                                           HloInstruction* operand,
                                                           const CollectiveOptions& options) {
  auto instr = Make(opcode, {operand});
  instr->set_channel_id(options.channel_id);
  instr->set_replica_groups(options.replica_groups);
  instr->set_use_global_device_ids(true);
  return instr;
}

absl::StatusOr<HloInstruction*> HloBuilder::AllReduce(HloInstruction* operand,
                                                      HloComputation* reducer,
                                                      const CollectiveOptions& options) {
  auto instr = MakeCollective(HloOpcode::kAllReduce, operand, options);
  instr->set_to_apply(reducer);
  return AddInstruction(std::move(instr));
}

absl::StatusOr<HloInstruction*> HloBuilder::AllGather(HloInstruction* operand, int64_t dimension,
                                                      const CollectiveOptions& options) {
  auto instr = MakeCollective(HloOpcode::kAllGather, operand, options);
  instr->set_dimensions({dimension});
  return AddInstruction(std::move(instr));
}

absl::StatusOr<HloInstruction*> HloBuilder::ReduceScatter(HloInstruction* operand,
                                                          int64_t dimension,
                                                          HloComputation* reducer,
                                                          const CollectiveOptions& options) {
  auto instr = MakeCollective(HloOpcode::kReduceScatter, operand, options);
  instr->set_dimensions({dimension});
  instr->set_to_apply(reducer);
  return AddInstruction(std::move(instr));
}

absl::StatusOr<HloInstruction*> HloBuilder::AllToAll(HloInstruction* operand,
                                                     int64_t split_dimension,
                                                     const CollectiveOptions& options) {
  auto instr = MakeCollective(HloOpcode::kAllToAll, operand, options);
  instr->set_dimensions({split_dimension});
  return AddInstruction(std::move(instr));
}

absl::StatusOr<HloInstruction*> HloBuilder::CollectivePermute(HloInstruction* operand,
                                                              const SourceTargetPairs& pairs,
                                                              int64_t channel_id) {
  auto instr = Make(HloOpcode::kCollectivePermute, {operand});
  instr->set_channel_id(channel_id);
  instr->set_source_target_pairs(pairs);
  return AddInstruction(std::move(instr));
}

absl::StatusOr<HloInstruction*> HloBuilder::PartitionId() {
  return AddInstruction(Make(HloOpcode::kPartitionId, {}));
}

}  // namespace jx::hlo
