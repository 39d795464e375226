// Data-movement ops for the reference evaluator: broadcast, reshape, bitcast, transpose,
// slice, dynamic-slice, dynamic-update-slice, concatenate, pad and reverse. They move
// element bytes, so one implementation serves every element type.
#include <algorithm>

#include "jx/compiler/hlo/hlo_evaluator_internal.h"
#include "jx/compiler/hlo/status_macros.h"

namespace jx::hlo::eval_internal {
namespace {

// Element bytes in physical order (most major layout dim first) for `shape`'s layout.
std::vector<uint8_t> ToPhysical(const Literal& lit) {
  const Shape& shape = lit.shape();
  const int64_t rank = shape.rank();
  const auto& m2m = shape.layout().minor_to_major;
  const int64_t bytes = ElementBytes(lit);
  std::vector<uint8_t> out(lit.untyped_data().size());
  if (lit.element_count() == 0) return out;
  // Physical dims in major-to-minor order.
  std::vector<int64_t> perm(rank);
  for (int64_t i = 0; i < rank; ++i) perm[i] = m2m.empty() ? i : m2m[rank - 1 - i];
  std::vector<int64_t> pdims(rank);
  for (int64_t i = 0; i < rank; ++i) pdims[i] = shape.dimensions(perm[i]);
  const std::vector<int64_t> strides = RowMajorStrides(shape.dimensions());
  std::vector<int64_t> pidx(rank, 0);
  int64_t p = 0;
  do {
    int64_t logical = 0;
    for (int64_t i = 0; i < rank; ++i) logical += pidx[i] * strides[perm[i]];
    std::memcpy(out.data() + p * bytes, lit.untyped_data().data() + logical * bytes, bytes);
    ++p;
  } while (NextIndex(pdims, pidx));
  return out;
}

Literal FromPhysical(const Shape& shape, absl::Span<const uint8_t> physical) {
  Literal out(shape);
  const int64_t rank = shape.rank();
  if (out.element_count() == 0) return out;
  const auto& m2m = shape.layout().minor_to_major;
  const int64_t bytes = ByteSizeOfPrimitiveType(shape.element_type());
  std::vector<int64_t> perm(rank);
  for (int64_t i = 0; i < rank; ++i) perm[i] = m2m.empty() ? i : m2m[rank - 1 - i];
  std::vector<int64_t> pdims(rank);
  for (int64_t i = 0; i < rank; ++i) pdims[i] = shape.dimensions(perm[i]);
  const std::vector<int64_t> strides = RowMajorStrides(shape.dimensions());
  std::vector<int64_t> pidx(rank, 0);
  int64_t p = 0;
  do {
    int64_t logical = 0;
    for (int64_t i = 0; i < rank; ++i) logical += pidx[i] * strides[perm[i]];
    std::memcpy(out.mutable_untyped_data().data() + logical * bytes, physical.data() + p * bytes,
                bytes);
    ++p;
  } while (NextIndex(pdims, pidx));
  return out;
}

// Calls fn(out_index, out_linear) for every element of `shape`.
template <typename Fn>
void ForEachIndex(const Shape& shape, Fn&& fn) {
  if (ShapeUtil::ElementsIn(shape) == 0) return;
  std::vector<int64_t> idx(shape.rank(), 0);
  int64_t linear = 0;
  do {
    fn(idx, linear++);
  } while (NextIndex(shape.dimensions(), idx));
}

int64_t ClampStart(int64_t start, int64_t dim, int64_t size) {
  return std::clamp<int64_t>(start, 0, std::max<int64_t>(dim - size, 0));
}

absl::StatusOr<Literal> Broadcast(const HloInstruction& instr, const Literal& in) {
  const Shape& out_shape = instr.shape();
  const auto& dims = instr.dimensions();
  if (static_cast<int64_t>(dims.size()) != in.shape().rank()) {
    return Invalid("dimensions=", IntListToString(dims), " does not match operand rank");
  }
  Literal out(out_shape);
  const std::vector<int64_t> in_strides = RowMajorStrides(in.shape().dimensions());
  ForEachIndex(out_shape, [&](const std::vector<int64_t>& idx, int64_t o) {
    int64_t src = 0;
    for (size_t j = 0; j < dims.size(); ++j) src += idx[dims[j]] * in_strides[j];
    CopyElement(in, src, out, o);
  });
  return out;
}

absl::StatusOr<Literal> Transpose(const HloInstruction& instr, const Literal& in) {
  const auto& perm = instr.dimensions();
  const std::vector<int64_t> in_strides = RowMajorStrides(in.shape().dimensions());
  Literal out(instr.shape());
  ForEachIndex(instr.shape(), [&](const std::vector<int64_t>& idx, int64_t o) {
    int64_t src = 0;  // output dim i is operand dim perm[i]
    for (size_t i = 0; i < perm.size(); ++i) src += idx[i] * in_strides[perm[i]];
    CopyElement(in, src, out, o);
  });
  return out;
}

absl::StatusOr<Literal> Slice(const HloInstruction& instr, const Literal& in) {
  const SliceConfig& s = instr.slice();
  const std::vector<int64_t> in_strides = RowMajorStrides(in.shape().dimensions());
  Literal out(instr.shape());
  ForEachIndex(instr.shape(), [&](const std::vector<int64_t>& idx, int64_t o) {
    int64_t src = 0;
    for (size_t d = 0; d < idx.size(); ++d) {
      const int64_t stride = d < s.strides.size() ? s.strides[d] : 1;
      src += (s.starts[d] + idx[d] * stride) * in_strides[d];
    }
    CopyElement(in, src, out, o);
  });
  return out;
}

// Start indices of dynamic-slice / dynamic-update-slice: scalars, clamped so the window fits.
std::vector<int64_t> DynamicStarts(Operands index_ops, const Shape& operand,
                                   absl::Span<const int64_t> sizes) {
  std::vector<int64_t> starts(operand.rank(), 0);
  for (int64_t d = 0; d < operand.rank(); ++d) {
    const int64_t raw = d < static_cast<int64_t>(index_ops.size()) ? IndexValue(*index_ops[d], 0) : 0;
    starts[d] = ClampStart(raw, operand.dimensions(d), sizes[d]);
  }
  return starts;
}

absl::StatusOr<Literal> DynamicSlice(const HloInstruction& instr, Operands ops) {
  const Literal& in = *ops[0];
  if (static_cast<int64_t>(ops.size()) - 1 != in.shape().rank()) {
    return Invalid("needs ", in.shape().rank(), " start indices, got ", ops.size() - 1);
  }
  const std::vector<int64_t> starts =
      DynamicStarts(ops.subspan(1), in.shape(), instr.shape().dimensions());
  const std::vector<int64_t> in_strides = RowMajorStrides(in.shape().dimensions());
  Literal out(instr.shape());
  ForEachIndex(instr.shape(), [&](const std::vector<int64_t>& idx, int64_t o) {
    int64_t src = 0;
    for (size_t d = 0; d < idx.size(); ++d) src += (starts[d] + idx[d]) * in_strides[d];
    CopyElement(in, src, out, o);
  });
  return out;
}

absl::StatusOr<Literal> DynamicUpdateSlice(const HloInstruction& instr, Operands ops) {
  const Literal &in = *ops[0], &update = *ops[1];
  if (static_cast<int64_t>(ops.size()) - 2 != in.shape().rank()) {
    return Invalid("needs ", in.shape().rank(), " start indices, got ", ops.size() - 2);
  }
  const std::vector<int64_t> starts =
      DynamicStarts(ops.subspan(2), in.shape(), update.shape().dimensions());
  const std::vector<int64_t> out_strides = RowMajorStrides(in.shape().dimensions());
  Literal out = LiteralWithBytes(instr.shape(), in.untyped_data());
  ForEachIndex(update.shape(), [&](const std::vector<int64_t>& idx, int64_t u) {
    int64_t dst = 0;
    for (size_t d = 0; d < idx.size(); ++d) dst += (starts[d] + idx[d]) * out_strides[d];
    CopyElement(update, u, out, dst);
  });
  return out;
}

absl::StatusOr<Literal> Concatenate(const HloInstruction& instr, Operands ops) {
  const int64_t dim = instr.concatenate_dimension();
  const std::vector<int64_t> out_strides = RowMajorStrides(instr.shape().dimensions());
  Literal out(instr.shape());
  int64_t offset = 0;
  for (const Literal* op : ops) {
    ForEachIndex(op->shape(), [&](const std::vector<int64_t>& idx, int64_t s) {
      int64_t dst = 0;
      for (size_t d = 0; d < idx.size(); ++d) {
        dst += (idx[d] + (static_cast<int64_t>(d) == dim ? offset : 0)) * out_strides[d];
      }
      CopyElement(*op, s, out, dst);
    });
    offset += op->shape().dimensions(dim);
  }
  return out;
}

absl::StatusOr<Literal> Pad(const HloInstruction& instr, const Literal& in,
                            const Literal& pad_value) {
  const PaddingConfig& cfg = instr.padding_config();
  const Shape& out_shape = instr.shape();
  Literal out(out_shape);
  for (int64_t i = 0; i < out.element_count(); ++i) CopyElement(pad_value, 0, out, i);
  const std::vector<int64_t> out_strides = RowMajorStrides(out_shape.dimensions());
  ForEachIndex(in.shape(), [&](const std::vector<int64_t>& idx, int64_t s) {
    int64_t dst = 0;
    for (size_t d = 0; d < idx.size(); ++d) {
      // Negative low/high padding crops: positions outside the output are dropped.
      const int64_t pos = cfg[d].low + idx[d] * (cfg[d].interior + 1);
      if (pos < 0 || pos >= out_shape.dimensions(d)) return;
      dst += pos * out_strides[d];
    }
    CopyElement(in, s, out, dst);
  });
  return out;
}

absl::StatusOr<Literal> Reverse(const HloInstruction& instr, const Literal& in) {
  std::vector<bool> reversed(in.shape().rank(), false);
  for (int64_t d : instr.dimensions()) reversed[d] = true;
  const std::vector<int64_t> strides = RowMajorStrides(in.shape().dimensions());
  Literal out(instr.shape());
  ForEachIndex(instr.shape(), [&](const std::vector<int64_t>& idx, int64_t o) {
    int64_t src = 0;
    for (size_t d = 0; d < idx.size(); ++d) {
      src += (reversed[d] ? in.shape().dimensions(d) - 1 - idx[d] : idx[d]) * strides[d];
    }
    CopyElement(in, src, out, o);
  });
  return out;
}

}  // namespace

absl::StatusOr<Literal> EvalShapeOp(const HloInstruction& instr, Operands ops) {
  if (!instr.shape().IsArray() || !ops[0]->shape().IsArray()) {
    return Invalid(HloOpcodeString(instr.opcode()), " needs array shapes");
  }
  switch (instr.opcode()) {
    case HloOpcode::kBroadcast:
      return Broadcast(instr, *ops[0]);
    case HloOpcode::kReshape:
      // Literals are row-major, so a reshape keeps the bytes.
      return LiteralWithBytes(instr.shape(), ops[0]->untyped_data());
    case HloOpcode::kBitcast: {
      // A bitcast reinterprets the physical buffer: operand layout in, result layout out.
      if (ShapeUtil::ByteSizeOf(instr.shape()) != ShapeUtil::ByteSizeOf(ops[0]->shape())) {
        return Invalid("bitcast must keep the byte size");
      }
      std::vector<uint8_t> physical = ToPhysical(*ops[0]);
      return FromPhysical(instr.shape(), physical);
    }
    case HloOpcode::kTranspose:
      return Transpose(instr, *ops[0]);
    case HloOpcode::kSlice:
      return Slice(instr, *ops[0]);
    case HloOpcode::kDynamicSlice:
      return DynamicSlice(instr, ops);
    case HloOpcode::kDynamicUpdateSlice:
      return DynamicUpdateSlice(instr, ops);
    case HloOpcode::kConcatenate:
      return Concatenate(instr, ops);
    case HloOpcode::kPad:
      return Pad(instr, *ops[0], *ops[1]);
    case HloOpcode::kReverse:
      return Reverse(instr, *ops[0]);
    default:
      return absl::InternalError("not a data-movement opcode");
  }
}

}  // namespace jx::hlo::eval_internal
