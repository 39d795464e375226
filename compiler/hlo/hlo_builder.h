// HloBuilder: builds HLO one op at a time, inferring each result shape with XLA's rules.
// Every op returns absl::StatusOr<HloInstruction*>; a bad combination of shapes fails with
// a message naming the op, the operand shapes and the offending attribute, and adds nothing.
//
//   auto module = std::make_unique<HloModule>("jit_f");
//   HloBuilder add(module.get(), "add");                       // a scalar reducer
//   auto* a = add.Parameter(0, ShapeUtil::MakeScalarShape(F32)).value();
//   auto* b = add.Parameter(1, ShapeUtil::MakeScalarShape(F32)).value();
//   HloComputation* add_comp = add.Build(add.Add(a, b).value()).value();
//
//   HloBuilder main(module.get(), "main");
//   auto* x = main.Parameter(0, ShapeUtil::MakeShape(F32, {8, 4}), "x").value();
//   auto* zero = main.Constant(Literal::CreateR0<float>(0)).value();
//   auto* sum = main.Reduce(x, zero, {1}, add_comp).value();   // f32[8]
//   module->set_entry_computation(main.Build(sum).value());
//
// Passes reuse the builder on an existing computation: HloBuilder b(computation).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "jx/compiler/hlo/hlo_module.h"

namespace jx::hlo {

class HloBuilder {
 public:
  using Operands = absl::Span<HloInstruction* const>;
  using Ints = absl::Span<const int64_t>;

  // Starts a new computation `name` in module.
  HloBuilder(HloModule* module, std::string_view name);
  // Adds instructions to an existing computation.
  explicit HloBuilder(HloComputation* computation) : computation_(computation) {}

  HloComputation* computation() const { return computation_; }
  // Metadata attached to every instruction added from now on. Equal metadata set again (the
  // same primitive at the same place, equation after equation) is shared, not copied.
  void set_metadata(OpMetadata metadata);
  // Shares metadata already held (an instruction's shared_metadata()); null: none.
  void set_shared_metadata(std::shared_ptr<const OpMetadata> metadata) { metadata_ = std::move(metadata); }
  void clear_metadata() { metadata_ = nullptr; }

  // Sets the root (default: the last instruction added), checks the parameters are numbered
  // 0..n-1, and returns the computation.
  absl::StatusOr<HloComputation*> Build(HloInstruction* root = nullptr);

  // Infers the shape of a hand-made instruction and adds it (the generic escape hatch).
  absl::StatusOr<HloInstruction*> AddInstruction(std::unique_ptr<HloInstruction> instr,
                                                 std::string_view name = "");

  absl::StatusOr<HloInstruction*> Parameter(int64_t number, const Shape& shape,
                                            std::string_view name = "");
  absl::StatusOr<HloInstruction*> Constant(Literal literal);
  absl::StatusOr<HloInstruction*> Iota(const Shape& shape, int64_t iota_dimension);

  absl::StatusOr<HloInstruction*> Unary(HloOpcode opcode, HloInstruction* operand);
  absl::StatusOr<HloInstruction*> Binary(HloOpcode opcode, HloInstruction* lhs,
                                         HloInstruction* rhs);
  absl::StatusOr<HloInstruction*> Ternary(HloOpcode opcode, HloInstruction* a, HloInstruction* b,
                                          HloInstruction* c);

#define HLO_BUILDER_UNARY(Name, opcode) \
  absl::StatusOr<HloInstruction*> Name(HloInstruction* x) { return Unary(HloOpcode::opcode, x); }
  HLO_BUILDER_UNARY(Abs, kAbs)
  HLO_BUILDER_UNARY(Cbrt, kCbrt)
  HLO_BUILDER_UNARY(Ceil, kCeil)
  HLO_BUILDER_UNARY(Clz, kClz)
  HLO_BUILDER_UNARY(Copy, kCopy)
  HLO_BUILDER_UNARY(Cos, kCos)
  HLO_BUILDER_UNARY(Erf, kErf)
  HLO_BUILDER_UNARY(Exp, kExp)
  HLO_BUILDER_UNARY(Expm1, kExpm1)
  HLO_BUILDER_UNARY(Floor, kFloor)
  HLO_BUILDER_UNARY(IsFinite, kIsFinite)
  HLO_BUILDER_UNARY(Log, kLog)
  HLO_BUILDER_UNARY(Log1p, kLog1p)
  HLO_BUILDER_UNARY(Logistic, kLogistic)
  HLO_BUILDER_UNARY(Negate, kNegate)
  HLO_BUILDER_UNARY(Not, kNot)
  HLO_BUILDER_UNARY(OptimizationBarrier, kOptimizationBarrier)
  HLO_BUILDER_UNARY(PopulationCount, kPopulationCount)
  HLO_BUILDER_UNARY(RoundNearestAfz, kRoundNearestAfz)
  HLO_BUILDER_UNARY(RoundNearestEven, kRoundNearestEven)
  HLO_BUILDER_UNARY(Rsqrt, kRsqrt)
  HLO_BUILDER_UNARY(Sign, kSign)
  HLO_BUILDER_UNARY(Sin, kSin)
  HLO_BUILDER_UNARY(Sqrt, kSqrt)
  HLO_BUILDER_UNARY(Tan, kTan)
  HLO_BUILDER_UNARY(Tanh, kTanh)
#undef HLO_BUILDER_UNARY

#define HLO_BUILDER_BINARY(Name, opcode)                                          \
  absl::StatusOr<HloInstruction*> Name(HloInstruction* lhs, HloInstruction* rhs) { \
    return Binary(HloOpcode::opcode, lhs, rhs);                                   \
  }
  HLO_BUILDER_BINARY(Add, kAdd)
  HLO_BUILDER_BINARY(And, kAnd)
  HLO_BUILDER_BINARY(Atan2, kAtan2)
  HLO_BUILDER_BINARY(Divide, kDivide)
  HLO_BUILDER_BINARY(Maximum, kMaximum)
  HLO_BUILDER_BINARY(Minimum, kMinimum)
  HLO_BUILDER_BINARY(Multiply, kMultiply)
  HLO_BUILDER_BINARY(Or, kOr)
  HLO_BUILDER_BINARY(Power, kPower)
  HLO_BUILDER_BINARY(Remainder, kRemainder)
  HLO_BUILDER_BINARY(ShiftLeft, kShiftLeft)
  HLO_BUILDER_BINARY(ShiftRightArithmetic, kShiftRightArithmetic)
  HLO_BUILDER_BINARY(ShiftRightLogical, kShiftRightLogical)
  HLO_BUILDER_BINARY(Subtract, kSubtract)
  HLO_BUILDER_BINARY(Xor, kXor)
#undef HLO_BUILDER_BINARY

  absl::StatusOr<HloInstruction*> Compare(HloInstruction* lhs, HloInstruction* rhs,
                                          ComparisonDirection direction,
                                          ComparisonType type = ComparisonType::kDefault);
  absl::StatusOr<HloInstruction*> Select(HloInstruction* pred, HloInstruction* on_true,
                                         HloInstruction* on_false) {
    return Ternary(HloOpcode::kSelect, pred, on_true, on_false);
  }
  absl::StatusOr<HloInstruction*> Clamp(HloInstruction* min, HloInstruction* operand,
                                        HloInstruction* max) {
    return Ternary(HloOpcode::kClamp, min, operand, max);
  }
  absl::StatusOr<HloInstruction*> Convert(HloInstruction* operand, PrimitiveType type);
  absl::StatusOr<HloInstruction*> BitcastConvert(HloInstruction* operand, PrimitiveType type);
  absl::StatusOr<HloInstruction*> ReducePrecision(HloInstruction* operand, int32_t exponent_bits,
                                                  int32_t mantissa_bits);

  absl::StatusOr<HloInstruction*> Bitcast(HloInstruction* operand, const Shape& shape);
  // operand dim i becomes result dim broadcast_dimensions[i]; result type = operand type.
  absl::StatusOr<HloInstruction*> Broadcast(HloInstruction* operand, Ints result_dims,
                                            Ints broadcast_dimensions);
  absl::StatusOr<HloInstruction*> Reshape(HloInstruction* operand, Ints result_dims);
  absl::StatusOr<HloInstruction*> Transpose(HloInstruction* operand, Ints permutation);
  absl::StatusOr<HloInstruction*> Slice(HloInstruction* operand, Ints starts, Ints limits,
                                        Ints strides);
  absl::StatusOr<HloInstruction*> DynamicSlice(HloInstruction* operand, Operands start_indices,
                                               Ints sizes);
  absl::StatusOr<HloInstruction*> DynamicUpdateSlice(HloInstruction* operand,
                                                     HloInstruction* update,
                                                     Operands start_indices);
  absl::StatusOr<HloInstruction*> Concatenate(Operands operands, int64_t dimension);
  absl::StatusOr<HloInstruction*> Pad(HloInstruction* operand, HloInstruction* padding_value,
                                      const PaddingConfig& padding);
  absl::StatusOr<HloInstruction*> Reverse(HloInstruction* operand, Ints dimensions);

  absl::StatusOr<HloInstruction*> Reduce(HloInstruction* operand, HloInstruction* init,
                                         Ints dimensions, HloComputation* to_apply);
  absl::StatusOr<HloInstruction*> Reduce(Operands inputs, Operands inits, Ints dimensions,
                                         HloComputation* to_apply);
  absl::StatusOr<HloInstruction*> ReduceWindow(Operands inputs, Operands inits,
                                               const Window& window, HloComputation* to_apply);
  absl::StatusOr<HloInstruction*> SelectAndScatter(HloInstruction* operand,
                                                   HloComputation* select, const Window& window,
                                                   HloInstruction* source, HloInstruction* init,
                                                   HloComputation* scatter);
  // result_type: a wider accumulation/result type (bf16 x bf16 -> f32); default lhs's.
  // precision: the operands' MXU precision (operand_precision=), read by TPU targets.
  absl::StatusOr<HloInstruction*> Dot(HloInstruction* lhs, HloInstruction* rhs,
                                      const DotDimensionNumbers& dnums,
                                      PrimitiveType result_type = PRIMITIVE_TYPE_INVALID,
                                      const PrecisionConfig& precision = {});
  absl::StatusOr<HloInstruction*> Convolution(HloInstruction* lhs, HloInstruction* rhs,
                                              const Window& window,
                                              const ConvolutionDimensionNumbers& dnums,
                                              int64_t feature_group_count = 1,
                                              int64_t batch_group_count = 1,
                                              PrimitiveType result_type = PRIMITIVE_TYPE_INVALID,
                                              const PrecisionConfig& precision = {});
  absl::StatusOr<HloInstruction*> Gather(HloInstruction* operand, HloInstruction* indices,
                                         const GatherDimensionNumbers& dnums, Ints slice_sizes);
  absl::StatusOr<HloInstruction*> Scatter(Operands operands, HloInstruction* indices,
                                          Operands updates, const ScatterDimensionNumbers& dnums,
                                          HloComputation* to_apply);
  absl::StatusOr<HloInstruction*> Sort(Operands operands, int64_t dimension,
                                       HloComputation* comparator, bool is_stable = false);
  absl::StatusOr<HloInstruction*> Map(Operands operands, HloComputation* to_apply);

  absl::StatusOr<HloInstruction*> Tuple(Operands elements);
  absl::StatusOr<HloInstruction*> GetTupleElement(HloInstruction* tuple, int64_t index);
  absl::StatusOr<HloInstruction*> Call(HloComputation* to_apply, Operands arguments);
  // branch_index: pred[] (branch 0 runs when true, branch 1 when false, as in XLA) or
  // s32[] (N branches; out-of-range picks the last); one operand per branch.
  absl::StatusOr<HloInstruction*> Conditional(HloInstruction* branch_index,
                                              absl::Span<HloComputation* const> branches,
                                              Operands branch_operands);
  absl::StatusOr<HloInstruction*> While(HloComputation* condition, HloComputation* body,
                                        HloInstruction* init);
  absl::StatusOr<HloInstruction*> Fusion(FusionKind kind, Operands operands,
                                         HloComputation* fused_computation);
  absl::StatusOr<HloInstruction*> CustomCall(std::string target, Operands operands,
                                             const Shape& shape, std::string backend_config = "",
                                             bool has_side_effect = false);
  // Result is (new state, bits of output_shape).
  absl::StatusOr<HloInstruction*> RngBitGenerator(RandomAlgorithm algorithm,
                                                  HloInstruction* state,
                                                  const Shape& output_shape);

  // Collectives across the partitions of an SPMD program: groups of partition ids
  // (use_global_device_ids=true) and a channel, as XLA's SPMD partitioner emits them.
  struct CollectiveOptions {
    ReplicaGroups replica_groups;
    int64_t channel_id = 1;
  };
  absl::StatusOr<HloInstruction*> AllReduce(HloInstruction* operand, HloComputation* reducer,
                                            const CollectiveOptions& options);
  absl::StatusOr<HloInstruction*> AllGather(HloInstruction* operand, int64_t dimension,
                                            const CollectiveOptions& options);
  absl::StatusOr<HloInstruction*> ReduceScatter(HloInstruction* operand, int64_t dimension,
                                                HloComputation* reducer,
                                                const CollectiveOptions& options);
  absl::StatusOr<HloInstruction*> AllToAll(HloInstruction* operand, int64_t split_dimension,
                                           const CollectiveOptions& options);
  absl::StatusOr<HloInstruction*> CollectivePermute(HloInstruction* operand,
                                                    const SourceTargetPairs& pairs,
                                                    int64_t channel_id = 1);
  absl::StatusOr<HloInstruction*> PartitionId();

 private:
  std::unique_ptr<HloInstruction> MakeCollective(HloOpcode opcode, HloInstruction* operand,
                                                 const CollectiveOptions& options);
  // An instruction whose shape AddInstruction infers. The shape is built in place, not
  // moved from a default argument: GCC 12 then flags the empty shape's inline dims storage
  // as read uninitialized (-Wmaybe-uninitialized, a false positive on absl::InlinedVector).
  std::unique_ptr<HloInstruction> Make(HloOpcode opcode, Operands operands) {
    return HloInstruction::Create(opcode, Shape(), operands);
  }
  std::unique_ptr<HloInstruction> Make(HloOpcode opcode, Operands operands, Shape shape) {
    return HloInstruction::Create(opcode, std::move(shape), operands);
  }

  HloComputation* computation_;
  std::shared_ptr<const OpMetadata> metadata_;  // null: none
  absl::flat_hash_map<OpMetadata, std::shared_ptr<const OpMetadata>> interned_metadata_;
  HloInstruction* last_added_ = nullptr;
};

}  // namespace jx::hlo
