// Shape rules of the collectives (declared in shape_inference.h). A collective's result is
// the shape one partition holds; the replica groups say how many partitions take part.
#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "jx/compiler/hlo/shape_inference.h"
#include "jx/compiler/hlo/status_macros.h"
#include "jx/compiler/hlo/str_util.h"

namespace jx::hlo {
namespace {

template <typename... Args>
absl::Status Invalid(const Args&... args) {
  return absl::InvalidArgumentError(StrCat(args...));
}

std::string S(const Shape& s) { return s.ToString(/*print_layout=*/false); }

absl::Status CheckArray(const Shape& operand) {
  if (!operand.IsArray()) return Invalid("operand must be an array, got ", S(operand));
  return absl::OkStatus();
}

absl::Status CheckDimension(const Shape& operand, int64_t dimension) {
  if (dimension < 0 || dimension >= operand.rank()) {
    return Invalid("dimensions={", dimension, "} out of range for ", S(operand));
  }
  return absl::OkStatus();
}

absl::Status CheckReducer(const Shape& operand, const ProgramShape& to_apply) {
  const PrimitiveType t = operand.element_type();
  if (to_apply.parameters.size() != 2 || !ShapeUtil::IsScalarWithType(to_apply.parameters[0], t) ||
      !ShapeUtil::IsScalarWithType(to_apply.parameters[1], t) ||
      !ShapeUtil::IsScalarWithType(to_apply.result, t)) {
    return Invalid("to_apply must be (", PrimitiveTypeName(t), "[], ", PrimitiveTypeName(t),
                   "[]) -> ", PrimitiveTypeName(t), "[], got ", to_apply.ToString(false));
  }
  return absl::OkStatus();
}

absl::Status CheckGroupSize(int64_t group_size) {
  if (group_size < 1) {
    return Invalid("replica_groups={} (every partition) leaves the group size unknown: name the groups");
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<int64_t> ShapeInference::ReplicaGroupSize(const ReplicaGroups& groups) {
  if (groups.empty()) return 0;
  if (!groups.uniform()) {
    return Invalid("replica_groups=", ReplicaGroupsToString(groups), ": every group must have the same size");
  }
  if (groups.group_size() == 0) return Invalid("replica_groups=", ReplicaGroupsToString(groups), ": empty group");
  return groups.group_size();
}

absl::StatusOr<Shape> ShapeInference::InferAllReduceShape(const Shape& operand,
                                                          const ProgramShape& to_apply) {
  HLO_RETURN_IF_ERROR(CheckArray(operand));
  HLO_RETURN_IF_ERROR(CheckReducer(operand, to_apply));
  return operand;
}

absl::StatusOr<Shape> ShapeInference::InferAllGatherShape(const Shape& operand, int64_t dimension,
                                                          int64_t group_size) {
  HLO_RETURN_IF_ERROR(CheckArray(operand));
  HLO_RETURN_IF_ERROR(CheckDimension(operand, dimension));
  HLO_RETURN_IF_ERROR(CheckGroupSize(group_size));
  std::vector<int64_t> dims = SpanToVector(operand.dimensions());
  dims[dimension] *= group_size;
  return Shape(operand.element_type(), std::move(dims));
}

absl::StatusOr<Shape> ShapeInference::InferReduceScatterShape(const Shape& operand,
                                                              int64_t dimension,
                                                              int64_t group_size,
                                                              const ProgramShape& to_apply) {
  HLO_RETURN_IF_ERROR(CheckArray(operand));
  HLO_RETURN_IF_ERROR(CheckReducer(operand, to_apply));
  HLO_RETURN_IF_ERROR(CheckDimension(operand, dimension));
  HLO_RETURN_IF_ERROR(CheckGroupSize(group_size));
  std::vector<int64_t> dims = SpanToVector(operand.dimensions());
  if (dims[dimension] % group_size != 0) {
    return Invalid("dimension ", dimension, " of ", S(operand), " does not split into ",
                   group_size, " equal blocks (one per partition of a group)");
  }
  dims[dimension] /= group_size;
  return Shape(operand.element_type(), std::move(dims));
}

absl::StatusOr<Shape> ShapeInference::InferAllToAllShape(const Shape& operand,
                                                         int64_t split_dimension,
                                                         int64_t group_size) {
  HLO_RETURN_IF_ERROR(CheckArray(operand));
  HLO_RETURN_IF_ERROR(CheckDimension(operand, split_dimension));
  HLO_RETURN_IF_ERROR(CheckGroupSize(group_size));
  if (operand.dimensions()[split_dimension] % group_size != 0) {
    return Invalid("dimension ", split_dimension, " of ", S(operand), " does not split into ",
                   group_size, " equal blocks (one per partition of a group)");
  }
  return operand;
}

absl::StatusOr<Shape> ShapeInference::InferCollectivePermuteShape(const Shape& operand,
                                                                  const SourceTargetPairs& pairs) {
  HLO_RETURN_IF_ERROR(CheckArray(operand));
  // Partition ids are dense (0..n-1): marks in a vector, not hash sets, since a pod-wide
  // permute pairs every device (18432 on a v7 pod). Grown if an id lies past the count.
  std::vector<uint8_t> sends(pairs.size(), 0), receives(pairs.size(), 0);
  auto mark = [](std::vector<uint8_t>& marks, int64_t id) {
    const size_t i = static_cast<size_t>(id);
    if (i >= marks.size()) marks.resize(i + 1, 0);
    return std::exchange(marks[i], uint8_t{1}) == 0;
  };
  for (const auto& [source, target] : pairs) {
    if (source < 0 || target < 0) {
      return Invalid("source_target_pairs=", SourceTargetPairsToString(pairs), ": negative id");
    }
    if (!mark(sends, source)) {
      return Invalid("source_target_pairs=", SourceTargetPairsToString(pairs), ": partition ",
                     source, " sends twice");
    }
    if (!mark(receives, target)) {
      return Invalid("source_target_pairs=", SourceTargetPairsToString(pairs), ": partition ",
                     target, " receives twice");
    }
  }
  return operand;
}

absl::StatusOr<Shape> ShapeInference::InferAsyncStartShape(HloOpcode start, const Shape& operand,
                                                           const Shape& result) {
  switch (start) {
    case HloOpcode::kAllReduceStart:
      return result;
    case HloOpcode::kAllGatherStart: case HloOpcode::kCollectivePermuteStart:
      return Shape::Tuple({operand, result});
    case HloOpcode::kReduceScatterStart: case HloOpcode::kAllToAllStart:
      return Shape::Tuple({Shape::Tuple({operand}), result});
    default:
      return Invalid(HloOpcodeString(start), " is not an asynchronous collective's start");
  }
}

absl::StatusOr<Shape> ShapeInference::InferAsyncStartShape(HloOpcode start, absl::Span<const Shape> operands,
                                                           absl::Span<const Shape> results) {
  if (operands.empty() || operands.size() != results.size()) {
    return Invalid(HloOpcodeString(start), " needs one result per operand, got ", operands.size(), " operand(s) and ",
                   results.size(), " result(s)");
  }
  if (operands.size() == 1) return InferAsyncStartShape(start, operands[0], results[0]);
  if (start == HloOpcode::kCollectivePermuteStart) {
    return Invalid("collective-permute-start takes one operand, got ", operands.size());
  }
  Shape all_results = Shape::Tuple(std::vector<Shape>(results.begin(), results.end()));
  if (start == HloOpcode::kAllReduceStart) return all_results;
  if (!IsAsyncCollectiveStart(start)) return Invalid(HloOpcodeString(start), " is not an asynchronous collective's start");
  return Shape::Tuple({Shape::Tuple(std::vector<Shape>(operands.begin(), operands.end())), std::move(all_results)});
}

absl::StatusOr<Shape> ShapeInference::InferAsyncDoneShape(HloOpcode start, const Shape& start_shape) {
  if (!IsAsyncCollectiveStart(start)) {
    return Invalid(HloOpcodeString(start), " is not an asynchronous collective's start");
  }
  if (start == HloOpcode::kAllReduceStart) return start_shape;
  if (!start_shape.IsTuple() || start_shape.tuple_shapes_size() != 2) {
    return Invalid(HloOpcodeString(start), " must produce a pair (operand, result), got ", S(start_shape));
  }
  return start_shape.tuple_shapes(1);
}

}  // namespace jx::hlo
