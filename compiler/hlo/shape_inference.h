// Shape inference with XLA's rules: the shape an HLO op produces from its operand shapes
// and attributes, or an InvalidArgument error naming the op, the operand shapes and the
// offending attribute:
//   "dot(f32[2,3], f32[4,5]): lhs_contracting_dims={1} (size 3) does not match
//    rhs_contracting_dims={0} (size 4)"
// HLO has no implicit broadcasting: elementwise operands must have equal dimensions.
// InferInstructionShape is the one dispatcher over opcodes; the builder calls it to set
// shapes and the verifier calls it to check them.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "jx/compiler/hlo/hlo_attributes.h"
#include "jx/compiler/hlo/opcode.h"
#include "jx/compiler/hlo/shape.h"

namespace jx::hlo {

class HloInstruction;

class ShapeInference {
 public:
  // The shape `instr` must have, from its opcode, operands, attributes and called
  // computations. Where the result shape is itself an input (parameter, constant, iota,
  // broadcast, reshape, bitcast, custom-call, rng-bit-generator) it is checked and
  // returned; convert/bitcast-convert read their target type, and dot/convolution their
  // (possibly wider) result type, from instr.shape().element_type() when it is set.
  static absl::StatusOr<Shape> InferInstructionShape(const HloInstruction& instr);
  // Whether instr's shape is the one InferInstructionShape gives (layouts aside), as the
  // verifier asks of every instruction: for the elementwise ops of one or two operands
  // without a rule of their own, by the result type alone (their result has their
  // operands' dimensions), building no shape. False where the rule rejects instr too
  // (InferInstructionShape says why).
  static bool InferredShapeMatches(const HloInstruction& instr);

  static absl::StatusOr<Shape> InferUnaryOpShape(HloOpcode opcode, const Shape& operand);
  static absl::StatusOr<Shape> InferBinaryOpShape(HloOpcode opcode, const Shape& lhs,
                                                  const Shape& rhs);
  // The element type of their result (which has the operands' dimensions): the rules
  // themselves, which the two above apply (copy, any shape to itself, aside).
  static absl::StatusOr<PrimitiveType> InferUnaryOpResultType(HloOpcode opcode, const Shape& operand);
  static absl::StatusOr<PrimitiveType> InferBinaryOpResultType(HloOpcode opcode, const Shape& lhs,
                                                               const Shape& rhs);
  static absl::StatusOr<Shape> InferTernaryOpShape(HloOpcode opcode, const Shape& a,
                                                   const Shape& b, const Shape& c);
  static absl::StatusOr<Shape> InferConvertShape(const Shape& operand, PrimitiveType type);
  static absl::StatusOr<Shape> InferBitcastConvertShape(const Shape& operand, PrimitiveType type);
  static absl::StatusOr<Shape> InferBroadcastShape(const Shape& operand, const Shape& output,
                                                   absl::Span<const int64_t> dimensions);
  static absl::StatusOr<Shape> InferTransposeShape(const Shape& operand,
                                                   absl::Span<const int64_t> permutation);
  static absl::StatusOr<Shape> InferSliceShape(const Shape& operand, const SliceConfig& slice);
  static absl::StatusOr<Shape> InferDynamicSliceShape(const Shape& operand,
                                                      absl::Span<const Shape> start_indices,
                                                      absl::Span<const int64_t> sizes);
  static absl::StatusOr<Shape> InferDynamicUpdateSliceShape(
      const Shape& operand, const Shape& update, absl::Span<const Shape> start_indices);
  static absl::StatusOr<Shape> InferConcatenateShape(absl::Span<const Shape> operands,
                                                     int64_t dimension);
  static absl::StatusOr<Shape> InferPadShape(const Shape& operand, const Shape& padding_value,
                                             const PaddingConfig& padding);
  static absl::StatusOr<Shape> InferReverseShape(const Shape& operand,
                                                 absl::Span<const int64_t> dimensions);
  // operands = N inputs then N init values; to_apply: (N scalars, N scalars) -> N scalars.
  static absl::StatusOr<Shape> InferReduceShape(absl::Span<const Shape> operands,
                                                absl::Span<const int64_t> dimensions,
                                                const ProgramShape& to_apply);
  static absl::StatusOr<Shape> InferReduceWindowShape(absl::Span<const Shape> operands,
                                                      const Window& window,
                                                      const ProgramShape& to_apply);
  static absl::StatusOr<Shape> InferSelectAndScatterShape(const Shape& operand,
                                                          const ProgramShape& select,
                                                          const Window& window,
                                                          const Shape& source,
                                                          const Shape& init_value,
                                                          const ProgramShape& scatter);
  // Shape of sliding `window` over `base` (dilations and padding applied).
  static absl::StatusOr<std::vector<int64_t>> InferWindowOutputDims(
      absl::Span<const int64_t> base, const Window& window);
  static absl::StatusOr<Shape> InferDotShape(const Shape& lhs, const Shape& rhs,
                                             const DotDimensionNumbers& dnums);
  static absl::StatusOr<Shape> InferConvolutionShape(const Shape& lhs, const Shape& rhs,
                                                     const Window& window,
                                                     const ConvolutionDimensionNumbers& dnums,
                                                     int64_t feature_group_count,
                                                     int64_t batch_group_count);
  static absl::StatusOr<Shape> InferGatherShape(const Shape& operand, const Shape& indices,
                                                const GatherDimensionNumbers& dnums,
                                                absl::Span<const int64_t> slice_sizes);
  // operands = N operands, indices, N updates.
  static absl::StatusOr<Shape> InferScatterShape(absl::Span<const Shape> operands,
                                                 const ScatterDimensionNumbers& dnums,
                                                 const ProgramShape& to_apply);
  static absl::StatusOr<Shape> InferSortShape(absl::Span<const Shape> operands,
                                              int64_t dimension, const ProgramShape& comparator);
  static absl::StatusOr<Shape> InferMapShape(absl::Span<const Shape> operands,
                                             const ProgramShape& to_apply);
  static absl::StatusOr<Shape> InferGetTupleElementShape(const Shape& tuple, int64_t index);
  // `attr` names the callee in errors ("to_apply" for call, "calls" for fusion).
  static absl::StatusOr<Shape> InferCallShape(absl::Span<const Shape> arguments,
                                              const ProgramShape& to_apply,
                                              std::string_view attr = "to_apply");
  // operands = branch index (pred or s32 scalar), then one operand per branch.
  static absl::StatusOr<Shape> InferConditionalShape(absl::Span<const Shape> operands,
                                                     absl::Span<const ProgramShape> branches);
  static absl::StatusOr<Shape> InferWhileShape(const ProgramShape& condition,
                                               const ProgramShape& body, const Shape& init);

  // Collectives (infer_collective_shape.cc). group_size: the partitions per replica group
  // (every group has the same size, none empty), from ReplicaGroupSize; 0 for {} (every
  // partition). The ids themselves (each partition in at most one group) are the verifier's
  // check, as in XLA: it is linear in the ids, and a pod's groups hold thousands.
  static absl::StatusOr<int64_t> ReplicaGroupSize(const ReplicaGroups& groups);
  // to_apply: (T[], T[]) -> T[] for the operand's element type T.
  static absl::StatusOr<Shape> InferAllReduceShape(const Shape& operand,
                                                   const ProgramShape& to_apply);
  // The gathered dimension grows group_size times.
  static absl::StatusOr<Shape> InferAllGatherShape(const Shape& operand, int64_t dimension,
                                                   int64_t group_size);
  // The scattered dimension (a multiple of group_size) shrinks group_size times.
  static absl::StatusOr<Shape> InferReduceScatterShape(const Shape& operand, int64_t dimension,
                                                       int64_t group_size,
                                                       const ProgramShape& to_apply);
  // The split dimension (a multiple of group_size) keeps its size: block j goes to member j,
  // block i of the result came from member i.
  static absl::StatusOr<Shape> InferAllToAllShape(const Shape& operand, int64_t split_dimension,
                                                  int64_t group_size);
  // Sources distinct, targets distinct, ids non-negative.
  static absl::StatusOr<Shape> InferCollectivePermuteShape(const Shape& operand,
                                                           const SourceTargetPairs& pairs);
  // An asynchronous collective's start (opcode.def): around its collective's result R,
  // all-reduce-start is R, all-gather-start and collective-permute-start (operand, R),
  // reduce-scatter-start and all-to-all-start ((operand), R).
  static absl::StatusOr<Shape> InferAsyncStartShape(HloOpcode start, const Shape& operand,
                                                    const Shape& result);
  // The start of a collective of several operands (XLA's variadic all-reduce, all-gather,
  // reduce-scatter, all-to-all; results[i] of operands[i]): one operand gives the shapes
  // above; several give all-reduce-start (R0, R1, ...) and the others ((a, b, ...), (R0, R1, ...)).
  static absl::StatusOr<Shape> InferAsyncStartShape(HloOpcode start, absl::Span<const Shape> operands,
                                                    absl::Span<const Shape> results);
  // R of a start's shape (what its done produces).
  static absl::StatusOr<Shape> InferAsyncDoneShape(HloOpcode start, const Shape& start_shape);
};

}  // namespace jx::hlo
