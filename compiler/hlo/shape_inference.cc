#include "jx/compiler/hlo/shape_inference.h"

#include <algorithm>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "jx/compiler/hlo/hlo_computation.h"
#include "jx/compiler/hlo/hlo_instruction.h"
#include "jx/compiler/hlo/status_macros.h"
#include "jx/compiler/hlo/str_util.h"

namespace jx::hlo {
namespace {

template <typename... Args>
absl::Status Invalid(const Args&... args) {
  return absl::InvalidArgumentError(StrCat(args...));
}

std::string S(const Shape& s) { return s.ToString(/*print_layout=*/false); }
std::string L(absl::Span<const int64_t> v) { return IntListToString(v); }

absl::Status ExpectArray(const Shape& s, std::string_view what) {
  if (!s.IsArray()) return Invalid(what, " must be an array, got ", S(s));
  return absl::OkStatus();
}

// Dims must be distinct and in [0, rank).
absl::Status CheckDimList(absl::Span<const int64_t> dims, int64_t rank, std::string_view attr) {
  absl::flat_hash_set<int64_t> seen;
  for (int64_t d : dims) {
    if (d < 0 || d >= rank) {
      return Invalid(attr, "=", L(dims), ": dimension ", d, " out of range for rank ", rank);
    }
    if (!seen.insert(d).second) return Invalid(attr, "=", L(dims), ": dimension ", d, " repeated");
  }
  return absl::OkStatus();
}

bool IsSorted(absl::Span<const int64_t> v) { return std::is_sorted(v.begin(), v.end()); }

// A reducer (reduce, scatter, reduce-window): N scalar accumulators + N scalar inputs of the
// given types -> N scalars (a tuple when N > 1).
absl::Status CheckReducer(const ProgramShape& f, absl::Span<const PrimitiveType> types,
                          std::string_view attr) {
  const size_t n = types.size();
  if (f.parameters.size() != 2 * n) {
    return Invalid(attr, " takes ", f.parameters.size(), " parameters, expected ", 2 * n,
                   " scalars");
  }
  for (size_t i = 0; i < 2 * n; ++i) {
    if (!ShapeUtil::IsScalarWithType(f.parameters[i], types[i % n])) {
      return Invalid(attr, " parameter ", i, " is ", S(f.parameters[i]), ", expected ",
                     PrimitiveTypeName(types[i % n]), "[]");
    }
  }
  if (n == 1) {
    if (!ShapeUtil::IsScalarWithType(f.result, types[0])) {
      return Invalid(attr, " returns ", S(f.result), ", expected ", PrimitiveTypeName(types[0]),
                     "[]");
    }
    return absl::OkStatus();
  }
  bool ok = f.result.IsTuple() && f.result.tuple_shapes_size() == static_cast<int64_t>(n);
  for (size_t i = 0; ok && i < n; ++i) {
    ok = ShapeUtil::IsScalarWithType(f.result.tuple_shapes(i), types[i]);
  }
  if (!ok) return Invalid(attr, " returns ", S(f.result), ", expected a tuple of ", n, " scalars");
  return absl::OkStatus();
}

Shape TupleOrSingle(std::vector<Shape> shapes) {
  return shapes.size() == 1 ? shapes[0] : Shape::Tuple(std::move(shapes));
}

}  // namespace

absl::StatusOr<PrimitiveType> ShapeInference::InferUnaryOpResultType(HloOpcode opcode,
                                                                     const Shape& operand) {
  HLO_RETURN_IF_ERROR(ExpectArray(operand, "operand"));
  const PrimitiveType t = operand.element_type();
  switch (opcode) {
    case HloOpcode::kAbs: case HloOpcode::kNegate: case HloOpcode::kSign:
      if (t == PRED) return Invalid("operand must be numeric, got ", S(operand));
      return t;
    case HloOpcode::kNot:
      if (t != PRED && !IsIntegralType(t)) {
        return Invalid("operand must be pred or integral, got ", S(operand));
      }
      return t;
    case HloOpcode::kPopulationCount: case HloOpcode::kClz:
      if (!IsIntegralType(t)) return Invalid("operand must be integral, got ", S(operand));
      return t;
    case HloOpcode::kIsFinite:
      if (!IsFloatingPointType(t)) return Invalid("operand must be floating-point, got ", S(operand));
      return PRED;
    default:  // the floating-point functions
      if (!IsFloatingPointType(t)) return Invalid("operand must be floating-point, got ", S(operand));
      return t;
  }
}

absl::StatusOr<Shape> ShapeInference::InferUnaryOpShape(HloOpcode opcode, const Shape& operand) {
  if (opcode == HloOpcode::kCopy) return operand;
  HLO_ASSIGN_OR_RETURN(PrimitiveType t, InferUnaryOpResultType(opcode, operand));
  return t == operand.element_type() ? operand : ShapeUtil::ChangeElementType(operand, t);
}

absl::StatusOr<PrimitiveType> ShapeInference::InferBinaryOpResultType(HloOpcode opcode,
                                                                     const Shape& lhs,
                                                                     const Shape& rhs) {
  HLO_RETURN_IF_ERROR(ExpectArray(lhs, "lhs"));
  HLO_RETURN_IF_ERROR(ExpectArray(rhs, "rhs"));
  if (lhs.dimensions() != rhs.dimensions()) {
    return Invalid("operand dimensions differ: ", S(lhs), " vs ", S(rhs),
                   " (HLO has no implicit broadcasting)");
  }
  if (lhs.element_type() != rhs.element_type()) {
    return Invalid("operand element types differ: ", S(lhs), " vs ", S(rhs));
  }
  const PrimitiveType t = lhs.element_type();
  switch (opcode) {
    case HloOpcode::kCompare:
      return PRED;
    case HloOpcode::kAnd: case HloOpcode::kOr: case HloOpcode::kXor:
      if (t != PRED && !IsIntegralType(t)) {
        return Invalid("operands must be pred or integral, got ", S(lhs));
      }
      return t;
    case HloOpcode::kShiftLeft: case HloOpcode::kShiftRightArithmetic:
    case HloOpcode::kShiftRightLogical:
      if (!IsIntegralType(t)) return Invalid("operands must be integral, got ", S(lhs));
      return t;
    case HloOpcode::kAtan2:
      if (!IsFloatingPointType(t)) return Invalid("operands must be floating-point, got ", S(lhs));
      return t;
    case HloOpcode::kAdd: case HloOpcode::kMultiply: case HloOpcode::kMaximum:
    case HloOpcode::kMinimum:
      return t;
    default:  // subtract, divide, remainder, power
      if (t == PRED) return Invalid("operands must be numeric, got ", S(lhs));
      return t;
  }
}

absl::StatusOr<Shape> ShapeInference::InferBinaryOpShape(HloOpcode opcode, const Shape& lhs,
                                                         const Shape& rhs) {
  HLO_ASSIGN_OR_RETURN(PrimitiveType t, InferBinaryOpResultType(opcode, lhs, rhs));
  return t == lhs.element_type() ? lhs : ShapeUtil::ChangeElementType(lhs, t);
}

absl::StatusOr<Shape> ShapeInference::InferTernaryOpShape(HloOpcode opcode, const Shape& a,
                                                          const Shape& b, const Shape& c) {
  HLO_RETURN_IF_ERROR(ExpectArray(a, "operand 0"));
  HLO_RETURN_IF_ERROR(ExpectArray(b, "operand 1"));
  HLO_RETURN_IF_ERROR(ExpectArray(c, "operand 2"));
  if (opcode == HloOpcode::kSelect) {
    if (a.element_type() != PRED) return Invalid("predicate must be pred, got ", S(a));
    if (!ShapeUtil::Compatible(b, c)) {
      return Invalid("on_true and on_false differ: ", S(b), " vs ", S(c));
    }
    if (a.dimensions() != b.dimensions()) {
      return Invalid("predicate dimensions ", S(a), " differ from the operands' ", S(b));
    }
    return b;
  }
  // clamp(min, operand, max): min and max are scalars or operand-shaped.
  for (const Shape* bound : {&a, &c}) {
    if (bound->element_type() != b.element_type() ||
        (bound->rank() != 0 && bound->dimensions() != b.dimensions())) {
      return Invalid("clamp bound ", S(*bound), " must be a scalar or match operand ", S(b));
    }
  }
  return b;
}

absl::StatusOr<Shape> ShapeInference::InferConvertShape(const Shape& operand, PrimitiveType type) {
  HLO_RETURN_IF_ERROR(ExpectArray(operand, "operand"));
  if (!IsArrayType(type)) return Invalid("cannot convert to ", PrimitiveTypeName(type));
  return ShapeUtil::ChangeElementType(operand, type);
}

absl::StatusOr<Shape> ShapeInference::InferBitcastConvertShape(const Shape& operand,
                                                               PrimitiveType type) {
  HLO_RETURN_IF_ERROR(ExpectArray(operand, "operand"));
  if (!IsArrayType(type)) return Invalid("cannot bitcast-convert to ", PrimitiveTypeName(type));
  const int in_bits = BitWidth(operand.element_type()), out_bits = BitWidth(type);
  std::vector<int64_t> dims = SpanToVector(operand.dimensions());
  if (in_bits > out_bits) {  // one element becomes a minor dimension of narrower ones
    dims.push_back(in_bits / out_bits);
  } else if (in_bits < out_bits) {
    if (dims.empty() || dims.back() != out_bits / in_bits) {
      return Invalid("bitcast-convert from ", S(operand), " to ", PrimitiveTypeName(type),
                     " needs a minor dimension of size ", out_bits / in_bits);
    }
    dims.pop_back();
  }
  return Shape(type, std::move(dims));
}

absl::StatusOr<Shape> ShapeInference::InferBroadcastShape(const Shape& operand,
                                                          const Shape& output,
                                                          absl::Span<const int64_t> dimensions) {
  HLO_RETURN_IF_ERROR(ExpectArray(operand, "operand"));
  HLO_RETURN_IF_ERROR(ExpectArray(output, "result"));
  if (operand.element_type() != output.element_type()) {
    return Invalid("result type ", S(output), " differs from operand type ", S(operand));
  }
  if (static_cast<int64_t>(dimensions.size()) != operand.rank()) {
    return Invalid("dimensions=", L(dimensions), " must map each of the operand's ",
                   operand.rank(), " dimensions to a result dimension");
  }
  HLO_RETURN_IF_ERROR(CheckDimList(dimensions, output.rank(), "dimensions"));
  for (int64_t i = 0; i < operand.rank(); ++i) {
    if (operand.dimensions(i) != output.dimensions(dimensions[i])) {
      return Invalid("dimensions=", L(dimensions), ": operand dimension ", i, " (size ",
                     operand.dimensions(i), ") does not match result dimension ", dimensions[i],
                     " (size ", output.dimensions(dimensions[i]), ") of ", S(output));
    }
  }
  return output;
}

absl::StatusOr<Shape> ShapeInference::InferTransposeShape(const Shape& operand,
                                                          absl::Span<const int64_t> permutation) {
  HLO_RETURN_IF_ERROR(ExpectArray(operand, "operand"));
  if (static_cast<int64_t>(permutation.size()) != operand.rank()) {
    return Invalid("dimensions=", L(permutation), " is not a permutation of rank ",
                   operand.rank());
  }
  HLO_RETURN_IF_ERROR(CheckDimList(permutation, operand.rank(), "dimensions"));
  std::vector<int64_t> dims;
  for (int64_t p : permutation) dims.push_back(operand.dimensions(p));
  return Shape(operand.element_type(), std::move(dims));
}

absl::StatusOr<Shape> ShapeInference::InferSliceShape(const Shape& operand,
                                                      const SliceConfig& slice) {
  HLO_RETURN_IF_ERROR(ExpectArray(operand, "operand"));
  const int64_t rank = operand.rank();
  if (static_cast<int64_t>(slice.starts.size()) != rank ||
      static_cast<int64_t>(slice.limits.size()) != rank ||
      static_cast<int64_t>(slice.strides.size()) != rank) {
    return Invalid("slice=", SliceConfigToString(slice), " must have one entry per dimension (",
                   rank, ")");
  }
  std::vector<int64_t> dims;
  for (int64_t i = 0; i < rank; ++i) {
    const int64_t start = slice.starts[i], limit = slice.limits[i], stride = slice.strides[i];
    if (start < 0 || limit < start || limit > operand.dimensions(i) || stride < 1) {
      return Invalid("slice=", SliceConfigToString(slice), ": dimension ", i, " [", start, ":",
                     limit, ":", stride, "] is out of bounds for size ", operand.dimensions(i));
    }
    dims.push_back((limit - start + stride - 1) / stride);
  }
  return Shape(operand.element_type(), std::move(dims));
}

namespace {

absl::Status CheckStartIndices(const Shape& operand, absl::Span<const Shape> start_indices) {
  if (static_cast<int64_t>(start_indices.size()) != operand.rank()) {
    return Invalid("expected ", operand.rank(), " start indices, got ", start_indices.size());
  }
  for (size_t i = 0; i < start_indices.size(); ++i) {
    const Shape& s = start_indices[i];
    if (!ShapeUtil::IsScalar(s) || !IsIntegralType(s.element_type()) ||
        s.element_type() != start_indices[0].element_type()) {
      return Invalid("start index ", i, " must be an integral scalar of one type, got ", S(s));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<Shape> ShapeInference::InferDynamicSliceShape(
    const Shape& operand, absl::Span<const Shape> start_indices, absl::Span<const int64_t> sizes) {
  HLO_RETURN_IF_ERROR(ExpectArray(operand, "operand"));
  HLO_RETURN_IF_ERROR(CheckStartIndices(operand, start_indices));
  if (static_cast<int64_t>(sizes.size()) != operand.rank()) {
    return Invalid("dynamic_slice_sizes=", L(sizes), " must have one entry per dimension (",
                   operand.rank(), ")");
  }
  for (int64_t i = 0; i < operand.rank(); ++i) {
    if (sizes[i] < 0 || sizes[i] > operand.dimensions(i)) {
      return Invalid("dynamic_slice_sizes=", L(sizes), ": size ", sizes[i], " of dimension ", i,
                     " exceeds ", operand.dimensions(i));
    }
  }
  return Shape(operand.element_type(), std::vector<int64_t>(sizes.begin(), sizes.end()));
}

absl::StatusOr<Shape> ShapeInference::InferDynamicUpdateSliceShape(
    const Shape& operand, const Shape& update, absl::Span<const Shape> start_indices) {
  HLO_RETURN_IF_ERROR(ExpectArray(operand, "operand"));
  HLO_RETURN_IF_ERROR(ExpectArray(update, "update"));
  HLO_RETURN_IF_ERROR(CheckStartIndices(operand, start_indices));
  if (update.element_type() != operand.element_type() || update.rank() != operand.rank()) {
    return Invalid("update ", S(update), " must have the type and rank of operand ", S(operand));
  }
  for (int64_t i = 0; i < operand.rank(); ++i) {
    if (update.dimensions(i) > operand.dimensions(i)) {
      return Invalid("update ", S(update), " is larger than operand ", S(operand),
                     " in dimension ", i);
    }
  }
  return operand;
}

absl::StatusOr<Shape> ShapeInference::InferConcatenateShape(absl::Span<const Shape> operands,
                                                            int64_t dimension) {
  if (operands.empty()) return Invalid("needs at least one operand");
  const Shape& first = operands[0];
  HLO_RETURN_IF_ERROR(ExpectArray(first, "operand 0"));
  if (dimension < 0 || dimension >= first.rank()) {
    return Invalid("dimensions={", dimension, "} out of range for rank ", first.rank());
  }
  std::vector<int64_t> dims = SpanToVector(first.dimensions());
  for (size_t i = 1; i < operands.size(); ++i) {
    const Shape& s = operands[i];
    HLO_RETURN_IF_ERROR(ExpectArray(s, "operand"));
    bool ok = s.element_type() == first.element_type() && s.rank() == first.rank();
    for (int64_t d = 0; ok && d < s.rank(); ++d) {
      ok = d == dimension || s.dimensions(d) == first.dimensions(d);
    }
    if (!ok) {
      return Invalid("operand ", i, " ", S(s), " does not match operand 0 ", S(first),
                     " outside dimensions={", dimension, "}");
    }
    dims[dimension] += s.dimensions(dimension);
  }
  return Shape(first.element_type(), std::move(dims));
}

absl::StatusOr<Shape> ShapeInference::InferPadShape(const Shape& operand,
                                                    const Shape& padding_value,
                                                    const PaddingConfig& padding) {
  HLO_RETURN_IF_ERROR(ExpectArray(operand, "operand"));
  if (!ShapeUtil::IsScalarWithType(padding_value, operand.element_type())) {
    return Invalid("padding value must be a ", PrimitiveTypeName(operand.element_type()),
                   " scalar, got ", S(padding_value));
  }
  if (static_cast<int64_t>(padding.size()) != operand.rank()) {
    return Invalid("padding=", PaddingConfigToString(padding),
                   " must have one entry per dimension (", operand.rank(), ")");
  }
  std::vector<int64_t> dims;
  for (int64_t i = 0; i < operand.rank(); ++i) {
    const PaddingDim& p = padding[i];
    const int64_t d = operand.dimensions(i);
    const int64_t size = p.low + p.high + d + std::max<int64_t>(d - 1, 0) * p.interior;
    if (p.interior < 0 || size < 0) {
      return Invalid("padding=", PaddingConfigToString(padding), " is invalid for dimension ", i,
                     " of size ", d);
    }
    dims.push_back(size);
  }
  return Shape(operand.element_type(), std::move(dims));
}

absl::StatusOr<Shape> ShapeInference::InferReverseShape(const Shape& operand,
                                                        absl::Span<const int64_t> dimensions) {
  HLO_RETURN_IF_ERROR(ExpectArray(operand, "operand"));
  HLO_RETURN_IF_ERROR(CheckDimList(dimensions, operand.rank(), "dimensions"));
  return operand;
}

absl::StatusOr<Shape> ShapeInference::InferReduceShape(absl::Span<const Shape> operands,
                                                       absl::Span<const int64_t> dimensions,
                                                       const ProgramShape& to_apply) {
  if (operands.empty() || operands.size() % 2 != 0) {
    return Invalid("expects N inputs and N init values, got ", operands.size(), " operands");
  }
  const size_t n = operands.size() / 2;
  std::vector<PrimitiveType> types;
  for (size_t i = 0; i < n; ++i) {
    HLO_RETURN_IF_ERROR(ExpectArray(operands[i], "input"));
    if (operands[i].dimensions() != operands[0].dimensions()) {
      return Invalid("inputs differ in dimensions: ", S(operands[0]), " vs ", S(operands[i]));
    }
    if (!ShapeUtil::IsScalarWithType(operands[n + i], operands[i].element_type())) {
      return Invalid("init value ", i, " must be a ",
                     PrimitiveTypeName(operands[i].element_type()), " scalar, got ",
                     S(operands[n + i]));
    }
    types.push_back(operands[i].element_type());
  }
  HLO_RETURN_IF_ERROR(CheckDimList(dimensions, operands[0].rank(), "dimensions"));
  HLO_RETURN_IF_ERROR(CheckReducer(to_apply, types, "to_apply"));
  std::vector<int64_t> kept;
  for (int64_t d = 0; d < operands[0].rank(); ++d) {
    if (std::find(dimensions.begin(), dimensions.end(), d) == dimensions.end()) {
      kept.push_back(operands[0].dimensions(d));
    }
  }
  std::vector<Shape> results;
  for (PrimitiveType t : types) results.emplace_back(t, kept);
  return TupleOrSingle(std::move(results));
}

absl::StatusOr<std::vector<int64_t>> ShapeInference::InferWindowOutputDims(
    absl::Span<const int64_t> base, const Window& window) {
  if (window.size() != base.size()) {
    return Invalid("window=", WindowToString(window), " has ", window.size(),
                   " dimensions, expected ", base.size());
  }
  std::vector<int64_t> dims;
  for (size_t i = 0; i < base.size(); ++i) {
    const WindowDim& w = window[i];
    if (w.size < 1 || w.stride < 1 || w.lhs_dilation < 1 || w.rhs_dilation < 1) {
      return Invalid("window=", WindowToString(window), ": dimension ", i,
                     " needs size, stride and dilations >= 1");
    }
    const int64_t dilated_base = base[i] == 0 ? 0 : (base[i] - 1) * w.lhs_dilation + 1;
    const int64_t padded = dilated_base + w.pad_low + w.pad_high;
    const int64_t dilated_window = (w.size - 1) * w.rhs_dilation + 1;
    dims.push_back(padded < dilated_window ? 0 : (padded - dilated_window) / w.stride + 1);
  }
  return dims;
}

absl::StatusOr<Shape> ShapeInference::InferReduceWindowShape(absl::Span<const Shape> operands,
                                                             const Window& window,
                                                             const ProgramShape& to_apply) {
  if (operands.empty() || operands.size() % 2 != 0) {
    return Invalid("expects N inputs and N init values, got ", operands.size(), " operands");
  }
  const size_t n = operands.size() / 2;
  std::vector<PrimitiveType> types;
  for (size_t i = 0; i < n; ++i) {
    HLO_RETURN_IF_ERROR(ExpectArray(operands[i], "input"));
    if (operands[i].dimensions() != operands[0].dimensions()) {
      return Invalid("inputs differ in dimensions: ", S(operands[0]), " vs ", S(operands[i]));
    }
    if (!ShapeUtil::IsScalarWithType(operands[n + i], operands[i].element_type())) {
      return Invalid("init value ", i, " must be a ",
                     PrimitiveTypeName(operands[i].element_type()), " scalar, got ",
                     S(operands[n + i]));
    }
    types.push_back(operands[i].element_type());
  }
  HLO_RETURN_IF_ERROR(CheckReducer(to_apply, types, "to_apply"));
  HLO_ASSIGN_OR_RETURN(std::vector<int64_t> dims,
                       InferWindowOutputDims(operands[0].dimensions(), window));
  std::vector<Shape> results;
  for (PrimitiveType t : types) results.emplace_back(t, dims);
  return TupleOrSingle(std::move(results));
}

absl::StatusOr<Shape> ShapeInference::InferSelectAndScatterShape(
    const Shape& operand, const ProgramShape& select, const Window& window, const Shape& source,
    const Shape& init_value, const ProgramShape& scatter) {
  HLO_RETURN_IF_ERROR(ExpectArray(operand, "operand"));
  HLO_RETURN_IF_ERROR(ExpectArray(source, "source"));
  const PrimitiveType t = operand.element_type();
  if (select.parameters.size() != 2 || !ShapeUtil::IsScalarWithType(select.parameters[0], t) ||
      !ShapeUtil::IsScalarWithType(select.parameters[1], t) ||
      !ShapeUtil::IsScalarWithType(select.result, PRED)) {
    return Invalid("select must be (", PrimitiveTypeName(t), "[], ", PrimitiveTypeName(t),
                   "[]) -> pred[], got ", select.ToString(false));
  }
  const PrimitiveType types[] = {t};
  HLO_RETURN_IF_ERROR(CheckReducer(scatter, types, "scatter"));
  if (!ShapeUtil::IsScalarWithType(init_value, t)) {
    return Invalid("init value must be a ", PrimitiveTypeName(t), " scalar, got ", S(init_value));
  }
  HLO_ASSIGN_OR_RETURN(std::vector<int64_t> window_dims,
                       InferWindowOutputDims(operand.dimensions(), window));
  if (source.element_type() != t || source.dimensions() != window_dims) {
    return Invalid("source ", S(source), " must have the windowed operand's shape ",
                   S(Shape(t, window_dims)), " for window=", WindowToString(window));
  }
  return operand;
}

absl::StatusOr<Shape> ShapeInference::InferDotShape(const Shape& lhs, const Shape& rhs,
                                                    const DotDimensionNumbers& d) {
  HLO_RETURN_IF_ERROR(ExpectArray(lhs, "lhs"));
  HLO_RETURN_IF_ERROR(ExpectArray(rhs, "rhs"));
  if (lhs.element_type() != rhs.element_type()) {
    return Invalid("lhs and rhs element types differ: ", S(lhs), " vs ", S(rhs));
  }
  std::vector<int64_t> lhs_used = d.lhs_batch_dims, rhs_used = d.rhs_batch_dims;
  lhs_used.insert(lhs_used.end(), d.lhs_contracting_dims.begin(), d.lhs_contracting_dims.end());
  rhs_used.insert(rhs_used.end(), d.rhs_contracting_dims.begin(), d.rhs_contracting_dims.end());
  HLO_RETURN_IF_ERROR(CheckDimList(lhs_used, lhs.rank(), "lhs_batch_dims+lhs_contracting_dims"));
  HLO_RETURN_IF_ERROR(CheckDimList(rhs_used, rhs.rank(), "rhs_batch_dims+rhs_contracting_dims"));
  if (d.lhs_batch_dims.size() != d.rhs_batch_dims.size()) {
    return Invalid("lhs_batch_dims=", L(d.lhs_batch_dims), " and rhs_batch_dims=",
                   L(d.rhs_batch_dims), " differ in length");
  }
  if (d.lhs_contracting_dims.size() != d.rhs_contracting_dims.size()) {
    return Invalid("lhs_contracting_dims=", L(d.lhs_contracting_dims),
                   " and rhs_contracting_dims=", L(d.rhs_contracting_dims), " differ in length");
  }
  for (size_t i = 0; i < d.lhs_batch_dims.size(); ++i) {
    const int64_t a = lhs.dimensions(d.lhs_batch_dims[i]), b = rhs.dimensions(d.rhs_batch_dims[i]);
    if (a != b) {
      return Invalid("lhs_batch_dims=", L(d.lhs_batch_dims), " (size ", a,
                     ") does not match rhs_batch_dims=", L(d.rhs_batch_dims), " (size ", b, ")");
    }
  }
  for (size_t i = 0; i < d.lhs_contracting_dims.size(); ++i) {
    const int64_t a = lhs.dimensions(d.lhs_contracting_dims[i]);
    const int64_t b = rhs.dimensions(d.rhs_contracting_dims[i]);
    if (a != b) {
      return Invalid("lhs_contracting_dims=", L(d.lhs_contracting_dims), " (size ", a,
                     ") does not match rhs_contracting_dims=", L(d.rhs_contracting_dims),
                     " (size ", b, ")");
    }
  }
  // Result: batch dims, then lhs free dims, then rhs free dims.
  std::vector<int64_t> dims;
  for (int64_t b : d.lhs_batch_dims) dims.push_back(lhs.dimensions(b));
  for (int64_t i = 0; i < lhs.rank(); ++i) {
    if (std::find(lhs_used.begin(), lhs_used.end(), i) == lhs_used.end()) {
      dims.push_back(lhs.dimensions(i));
    }
  }
  for (int64_t i = 0; i < rhs.rank(); ++i) {
    if (std::find(rhs_used.begin(), rhs_used.end(), i) == rhs_used.end()) {
      dims.push_back(rhs.dimensions(i));
    }
  }
  return Shape(lhs.element_type(), std::move(dims));
}

absl::StatusOr<Shape> ShapeInference::InferConvolutionShape(
    const Shape& lhs, const Shape& rhs, const Window& window,
    const ConvolutionDimensionNumbers& d, int64_t feature_group_count,
    int64_t batch_group_count) {
  HLO_RETURN_IF_ERROR(ExpectArray(lhs, "lhs"));
  HLO_RETURN_IF_ERROR(ExpectArray(rhs, "rhs"));
  const std::string labels = "dim_labels=" + ConvolutionDimensionNumbersToString(d);
  if (lhs.element_type() != rhs.element_type()) {
    return Invalid("lhs and rhs element types differ: ", S(lhs), " vs ", S(rhs));
  }
  const int64_t num_spatial = static_cast<int64_t>(d.input_spatial_dimensions.size());
  if (lhs.rank() != num_spatial + 2 || rhs.rank() != num_spatial + 2 ||
      static_cast<int64_t>(d.kernel_spatial_dimensions.size()) != num_spatial ||
      static_cast<int64_t>(d.output_spatial_dimensions.size()) != num_spatial) {
    return Invalid(labels, " has ", num_spatial, " spatial dimensions; lhs and rhs must have rank ",
                   num_spatial + 2);
  }
  if (feature_group_count < 1 || batch_group_count < 1) {
    return Invalid("feature_group_count and batch_group_count must be >= 1");
  }
  const int64_t batch = lhs.dimensions(d.input_batch_dimension);
  const int64_t in_features = lhs.dimensions(d.input_feature_dimension);
  const int64_t kernel_in = rhs.dimensions(d.kernel_input_feature_dimension);
  const int64_t kernel_out = rhs.dimensions(d.kernel_output_feature_dimension);
  if (in_features != kernel_in * feature_group_count) {
    return Invalid(labels, ": input feature size ", in_features,
                   " must equal kernel input feature size ", kernel_in,
                   " times feature_group_count=", feature_group_count);
  }
  if (kernel_out % feature_group_count != 0) {
    return Invalid(labels, ": kernel output feature size ", kernel_out,
                   " is not divisible by feature_group_count=", feature_group_count);
  }
  if (batch % batch_group_count != 0 || kernel_out % batch_group_count != 0) {
    return Invalid(labels, ": batch size ", batch, " and kernel output feature size ",
                   kernel_out, " must be divisible by batch_group_count=", batch_group_count);
  }
  std::vector<int64_t> input_spatial;
  for (int64_t i = 0; i < num_spatial; ++i) {
    input_spatial.push_back(lhs.dimensions(d.input_spatial_dimensions[i]));
    const int64_t k = rhs.dimensions(d.kernel_spatial_dimensions[i]);
    if (i < static_cast<int64_t>(window.size()) && window[i].size != k) {
      return Invalid("window=", WindowToString(window), " size ", window[i].size,
                     " in spatial dimension ", i, " does not match kernel size ", k);
    }
  }
  HLO_ASSIGN_OR_RETURN(std::vector<int64_t> spatial, InferWindowOutputDims(input_spatial, window));
  std::vector<int64_t> dims(num_spatial + 2, 0);
  dims[d.output_batch_dimension] = batch / batch_group_count;
  dims[d.output_feature_dimension] = kernel_out;
  for (int64_t i = 0; i < num_spatial; ++i) dims[d.output_spatial_dimensions[i]] = spatial[i];
  return Shape(lhs.element_type(), std::move(dims));
}

absl::StatusOr<Shape> ShapeInference::InferGatherShape(const Shape& operand, const Shape& indices,
                                                       const GatherDimensionNumbers& d,
                                                       absl::Span<const int64_t> slice_sizes) {
  HLO_RETURN_IF_ERROR(ExpectArray(operand, "operand"));
  HLO_RETURN_IF_ERROR(ExpectArray(indices, "indices"));
  if (!IsIntegralType(indices.element_type())) {
    return Invalid("indices must be integral, got ", S(indices));
  }
  if (d.index_vector_dim < 0 || d.index_vector_dim > indices.rank()) {
    return Invalid("index_vector_dim=", d.index_vector_dim, " out of range for indices ",
                   S(indices));
  }
  const int64_t index_len =
      d.index_vector_dim == indices.rank() ? 1 : indices.dimensions(d.index_vector_dim);
  if (static_cast<int64_t>(d.start_index_map.size()) != index_len) {
    return Invalid("start_index_map=", L(d.start_index_map), " must have ", index_len,
                   " entries (the index vector length)");
  }
  HLO_RETURN_IF_ERROR(CheckDimList(d.start_index_map, operand.rank(), "start_index_map"));
  if (static_cast<int64_t>(slice_sizes.size()) != operand.rank()) {
    return Invalid("slice_sizes=", L(slice_sizes), " must have one entry per operand dimension (",
                   operand.rank(), ")");
  }
  for (int64_t i = 0; i < operand.rank(); ++i) {
    if (slice_sizes[i] < 0 || slice_sizes[i] > operand.dimensions(i)) {
      return Invalid("slice_sizes=", L(slice_sizes), ": size ", slice_sizes[i], " of dimension ",
                     i, " exceeds ", operand.dimensions(i));
    }
  }
  HLO_RETURN_IF_ERROR(CheckDimList(d.collapsed_slice_dims, operand.rank(), "collapsed_slice_dims"));
  if (!IsSorted(d.collapsed_slice_dims)) {
    return Invalid("collapsed_slice_dims=", L(d.collapsed_slice_dims), " must be sorted");
  }
  for (int64_t c : d.collapsed_slice_dims) {
    if (slice_sizes[c] > 1) {
      return Invalid("collapsed_slice_dims=", L(d.collapsed_slice_dims), ": dimension ", c,
                     " has slice size ", slice_sizes[c], ", expected <= 1");
    }
  }
  const int64_t batch_rank = indices.rank() - (d.index_vector_dim < indices.rank() ? 1 : 0);
  const int64_t out_rank = batch_rank + static_cast<int64_t>(d.offset_dims.size());
  if (static_cast<int64_t>(d.offset_dims.size()) !=
      operand.rank() - static_cast<int64_t>(d.collapsed_slice_dims.size())) {
    return Invalid("offset_dims=", L(d.offset_dims), " must have one entry per non-collapsed "
                   "operand dimension (", operand.rank() - d.collapsed_slice_dims.size(), ")");
  }
  HLO_RETURN_IF_ERROR(CheckDimList(d.offset_dims, out_rank, "offset_dims"));
  if (!IsSorted(d.offset_dims)) {
    return Invalid("offset_dims=", L(d.offset_dims), " must be sorted");
  }
  std::vector<int64_t> offset_sizes, batch_sizes;
  for (int64_t i = 0; i < operand.rank(); ++i) {
    if (std::find(d.collapsed_slice_dims.begin(), d.collapsed_slice_dims.end(), i) ==
        d.collapsed_slice_dims.end()) {
      offset_sizes.push_back(slice_sizes[i]);
    }
  }
  for (int64_t i = 0; i < indices.rank(); ++i) {
    if (i != d.index_vector_dim) batch_sizes.push_back(indices.dimensions(i));
  }
  std::vector<int64_t> dims;
  size_t next_offset = 0, next_batch = 0;
  for (int64_t i = 0; i < out_rank; ++i) {
    const bool is_offset =
        std::find(d.offset_dims.begin(), d.offset_dims.end(), i) != d.offset_dims.end();
    dims.push_back(is_offset ? offset_sizes[next_offset++] : batch_sizes[next_batch++]);
  }
  return Shape(operand.element_type(), std::move(dims));
}

absl::StatusOr<Shape> ShapeInference::InferScatterShape(absl::Span<const Shape> operands,
                                                        const ScatterDimensionNumbers& d,
                                                        const ProgramShape& to_apply) {
  if (operands.size() < 3 || operands.size() % 2 != 1) {
    return Invalid("expects N operands, indices and N updates, got ", operands.size(),
                   " operands");
  }
  const size_t n = operands.size() / 2;
  const Shape& operand = operands[0];
  const Shape& indices = operands[n];
  HLO_RETURN_IF_ERROR(ExpectArray(indices, "indices"));
  if (!IsIntegralType(indices.element_type())) {
    return Invalid("indices must be integral, got ", S(indices));
  }
  std::vector<PrimitiveType> types;
  for (size_t i = 0; i < n; ++i) {
    HLO_RETURN_IF_ERROR(ExpectArray(operands[i], "operand"));
    HLO_RETURN_IF_ERROR(ExpectArray(operands[n + 1 + i], "updates"));
    if (operands[i].dimensions() != operand.dimensions() ||
        operands[n + 1 + i].element_type() != operands[i].element_type() ||
        operands[n + 1 + i].dimensions() != operands[n + 1].dimensions()) {
      return Invalid("operand ", i, " ", S(operands[i]), " and updates ",
                     S(operands[n + 1 + i]), " do not match the first operand/updates");
    }
    types.push_back(operands[i].element_type());
  }
  const Shape& updates = operands[n + 1];
  if (d.index_vector_dim < 0 || d.index_vector_dim > indices.rank()) {
    return Invalid("index_vector_dim=", d.index_vector_dim, " out of range for indices ",
                   S(indices));
  }
  const int64_t index_len =
      d.index_vector_dim == indices.rank() ? 1 : indices.dimensions(d.index_vector_dim);
  if (static_cast<int64_t>(d.scatter_dims_to_operand_dims.size()) != index_len) {
    return Invalid("scatter_dims_to_operand_dims=", L(d.scatter_dims_to_operand_dims),
                   " must have ", index_len, " entries (the index vector length)");
  }
  HLO_RETURN_IF_ERROR(CheckDimList(d.scatter_dims_to_operand_dims, operand.rank(),
                                   "scatter_dims_to_operand_dims"));
  HLO_RETURN_IF_ERROR(CheckDimList(d.inserted_window_dims, operand.rank(), "inserted_window_dims"));
  if (!IsSorted(d.inserted_window_dims) || !IsSorted(d.update_window_dims)) {
    return Invalid("update_window_dims=", L(d.update_window_dims), " and inserted_window_dims=",
                   L(d.inserted_window_dims), " must be sorted");
  }
  if (static_cast<int64_t>(d.update_window_dims.size() + d.inserted_window_dims.size()) !=
      operand.rank()) {
    return Invalid("update_window_dims=", L(d.update_window_dims), " plus inserted_window_dims=",
                   L(d.inserted_window_dims), " must cover the operand rank ", operand.rank());
  }
  const int64_t batch_rank = indices.rank() - (d.index_vector_dim < indices.rank() ? 1 : 0);
  if (updates.rank() != batch_rank + static_cast<int64_t>(d.update_window_dims.size())) {
    return Invalid("updates ", S(updates), " must have rank ",
                   batch_rank + d.update_window_dims.size(), " (scatter batch dims of indices ",
                   S(indices), " plus update_window_dims=", L(d.update_window_dims), ")");
  }
  HLO_RETURN_IF_ERROR(CheckDimList(d.update_window_dims, updates.rank(), "update_window_dims"));
  // Window dims of updates must fit the operand's non-inserted dims, in order.
  size_t window_index = 0;
  for (int64_t i = 0; i < operand.rank(); ++i) {
    if (std::find(d.inserted_window_dims.begin(), d.inserted_window_dims.end(), i) !=
        d.inserted_window_dims.end()) {
      continue;
    }
    const int64_t u = updates.dimensions(d.update_window_dims[window_index++]);
    if (u > operand.dimensions(i)) {
      return Invalid("update window size ", u, " exceeds operand ", S(operand), " dimension ", i);
    }
  }
  // The other update dims must equal the indices' batch dims, in order.
  std::vector<int64_t> batch_sizes;
  for (int64_t i = 0; i < indices.rank(); ++i) {
    if (i != d.index_vector_dim) batch_sizes.push_back(indices.dimensions(i));
  }
  size_t batch_index = 0;
  for (int64_t i = 0; i < updates.rank(); ++i) {
    if (std::find(d.update_window_dims.begin(), d.update_window_dims.end(), i) !=
        d.update_window_dims.end()) {
      continue;
    }
    if (updates.dimensions(i) != batch_sizes[batch_index++]) {
      return Invalid("updates ", S(updates), " dimension ", i,
                     " does not match the scatter batch dims of indices ", S(indices));
    }
  }
  HLO_RETURN_IF_ERROR(CheckReducer(to_apply, types, "to_apply"));
  std::vector<Shape> results(operands.begin(), operands.begin() + n);
  return TupleOrSingle(std::move(results));
}

absl::StatusOr<Shape> ShapeInference::InferSortShape(absl::Span<const Shape> operands,
                                                     int64_t dimension,
                                                     const ProgramShape& comparator) {
  if (operands.empty()) return Invalid("needs at least one operand");
  for (const Shape& s : operands) {
    HLO_RETURN_IF_ERROR(ExpectArray(s, "operand"));
    if (s.dimensions() != operands[0].dimensions()) {
      return Invalid("operands differ in dimensions: ", S(operands[0]), " vs ", S(s));
    }
  }
  if (dimension < 0 || dimension >= operands[0].rank()) {
    return Invalid("dimensions={", dimension, "} out of range for ", S(operands[0]));
  }
  bool ok = comparator.parameters.size() == 2 * operands.size() &&
            ShapeUtil::IsScalarWithType(comparator.result, PRED);
  for (size_t i = 0; ok && i < comparator.parameters.size(); ++i) {
    ok = ShapeUtil::IsScalarWithType(comparator.parameters[i], operands[i / 2].element_type());
  }
  if (!ok) {
    return Invalid("to_apply must compare two scalars of each operand's type and return "
                   "pred[], got ",
                   comparator.ToString(false));
  }
  return TupleOrSingle(std::vector<Shape>(operands.begin(), operands.end()));
}

absl::StatusOr<Shape> ShapeInference::InferMapShape(absl::Span<const Shape> operands,
                                                    const ProgramShape& to_apply) {
  if (operands.empty()) return Invalid("needs at least one operand");
  if (to_apply.parameters.size() != operands.size()) {
    return Invalid("to_apply takes ", to_apply.parameters.size(), " parameters, expected ",
                   operands.size());
  }
  for (size_t i = 0; i < operands.size(); ++i) {
    HLO_RETURN_IF_ERROR(ExpectArray(operands[i], "operand"));
    if (operands[i].dimensions() != operands[0].dimensions() ||
        !ShapeUtil::IsScalarWithType(to_apply.parameters[i], operands[i].element_type())) {
      return Invalid("operand ", i, " ", S(operands[i]), " does not fit to_apply parameter ",
                     S(to_apply.parameters[i]));
    }
  }
  if (!ShapeUtil::IsScalar(to_apply.result)) {
    return Invalid("to_apply must return a scalar, got ", S(to_apply.result));
  }
  return Shape(to_apply.result.element_type(), operands[0].dimensions());
}

absl::StatusOr<Shape> ShapeInference::InferGetTupleElementShape(const Shape& tuple,
                                                                int64_t index) {
  if (!tuple.IsTuple()) return Invalid("operand must be a tuple, got ", S(tuple));
  if (index < 0 || index >= tuple.tuple_shapes_size()) {
    return Invalid("index=", index, " out of range for ", S(tuple));
  }
  return tuple.tuple_shapes(index);
}

namespace {

absl::Status CheckArguments(absl::Span<const Shape> args, const ProgramShape& f,
                            std::string_view attr) {
  if (args.size() != f.parameters.size()) {
    return Invalid(attr, " takes ", f.parameters.size(), " parameters, got ", args.size(),
                   " operands");
  }
  for (size_t i = 0; i < args.size(); ++i) {
    if (!ShapeUtil::Compatible(args[i], f.parameters[i])) {
      return Invalid("operand ", i, " ", S(args[i]), " does not match ", attr, " parameter ", i,
                     " ", S(f.parameters[i]));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<Shape> ShapeInference::InferCallShape(absl::Span<const Shape> arguments,
                                                     const ProgramShape& to_apply,
                                                     std::string_view attr) {
  HLO_RETURN_IF_ERROR(CheckArguments(arguments, to_apply, attr));
  return to_apply.result;
}

absl::StatusOr<Shape> ShapeInference::InferConditionalShape(
    absl::Span<const Shape> operands, absl::Span<const ProgramShape> branches) {
  if (operands.empty() || branches.empty()) return Invalid("needs a branch index and branches");
  const Shape& index = operands[0];
  if (!ShapeUtil::IsScalarWithType(index, PRED) && !ShapeUtil::IsScalarWithType(index, S32)) {
    return Invalid("branch index must be pred[] or s32[], got ", S(index));
  }
  if (index.element_type() == PRED && branches.size() != 2) {
    return Invalid("a pred branch index needs 2 branch_computations, got ", branches.size());
  }
  if (operands.size() != branches.size() + 1) {
    return Invalid("expects one operand per branch (", branches.size(), "), got ",
                   operands.size() - 1);
  }
  for (size_t i = 0; i < branches.size(); ++i) {
    HLO_RETURN_IF_ERROR(CheckArguments(operands.subspan(i + 1, 1), branches[i],
                                       StrCat("branch_computations[", i, "]")));
    if (!ShapeUtil::Compatible(branches[i].result, branches[0].result)) {
      return Invalid("branch_computations[", i, "] returns ", S(branches[i].result),
                     " but branch 0 returns ", S(branches[0].result));
    }
  }
  return branches[0].result;
}

absl::StatusOr<Shape> ShapeInference::InferWhileShape(const ProgramShape& condition,
                                                      const ProgramShape& body,
                                                      const Shape& init) {
  const Shape args[] = {init};
  HLO_RETURN_IF_ERROR(CheckArguments(args, condition, "condition"));
  HLO_RETURN_IF_ERROR(CheckArguments(args, body, "body"));
  if (!ShapeUtil::IsScalarWithType(condition.result, PRED)) {
    return Invalid("condition must return pred[], got ", S(condition.result));
  }
  if (!ShapeUtil::Compatible(body.result, init)) {
    return Invalid("body returns ", S(body.result), " but the loop state is ", S(init));
  }
  return init;
}

}  // namespace jx::hlo
