// dot_general: abstract eval (XLA's dot shape inference and JAX's dtype rule), the eager
// kernel (canonicalize to a batched [B, M, K] x [B, K, N] GEMM, copying an operand only when
// its dims do not already form strided GEMM axes or its dtype needs converting), lax::dot.
#include "jx/lax/dot_general.h"

#include <algorithm>
#include <memory>
#include <optional>
#include <tuple>

#include "absl/container/inlined_vector.h"
#include "absl/hash/hash.h"
#include "absl/strings/str_join.h"
#include "jx/core/buffer.h"
#include "jx/lax/kernels/gemm.h"
#include "jx/lax/op_util.h"
#include "jx/lax/primitives.h"

namespace jx::lax {
namespace internal {
namespace {

// The dimension_numbers param: JAX prints it as (([1], [0]), ([], [])).
class DotDimensionNumbersParam final : public ParamObject {
 public:
  explicit DotDimensionNumbersParam(DotDimensionNumbers d) : d_(std::move(d)) {}
  const DotDimensionNumbers& value() const { return d_; }
  size_t Hash() const override {
    size_t h = 0x9e3779b97f4a7c15ull;
    for (const auto* v : {&d_.lhs_contracting_dims, &d_.rhs_contracting_dims, &d_.lhs_batch_dims,
                          &d_.rhs_batch_dims}) {
      h = absl::HashOf(h, *v);
    }
    return h;
  }
  bool Equals(const ParamObject& other) const override {
    const auto* o = dynamic_cast<const DotDimensionNumbersParam*>(&other);
    return o != nullptr && o->d_ == d_;
  }
  std::string ToString() const override {
    auto list = [](const std::vector<int64_t>& v) { return StrCat("[", absl::StrJoin(v, ", "), "]"); };
    return StrCat("((", list(d_.lhs_contracting_dims), ", ", list(d_.rhs_contracting_dims), "), (",
                  list(d_.lhs_batch_dims), ", ", list(d_.rhs_batch_dims), "))");
  }

 private:
  DotDimensionNumbers d_;
};

std::string DimsStr(const std::vector<int64_t>& v) {
  if (v.size() == 1) return StrCat("(", v[0], ",)");
  return StrCat("(", absl::StrJoin(v, ", "), ")");
}

// XLA's HigherPrecisionType ordering, as JAX's _dot_general_dtype_rule compares dtypes:
// (max exponent, mantissa bits, bit width, signed) for real types.
std::tuple<int, int, int, bool> TypeProperties(DType d) {
  int maxexp = -1, nmant = -1;
  switch (d) {
    case DType::kFloat16: maxexp = 16; nmant = 10; break;
    case DType::kBFloat16: maxexp = 128; nmant = 7; break;
    case DType::kFloat32: maxexp = 128; nmant = 23; break;
    case DType::kFloat64: maxexp = 1024; nmant = 52; break;
    default: break;
  }
  const int bits = IsBool(d) ? 1 : static_cast<int>(ItemSize(d) * 8);
  return {maxexp, nmant, bits, !IsUnsignedInt(d)};
}

}  // namespace

DType ValidatePreferredElementType(std::string_view op, DType result, std::optional<DType> preferred,
                                   const ShapedArray& lhs, const ShapedArray& rhs) {
  if (!preferred) return result;
  const DType p = *preferred;
  const bool int_to_float = IsInteger(result) && IsFloating(p);
  if (!int_to_float) {
    if ((IsInteger(result) && !IsInteger(p)) || (IsFloating(result) && !IsFloating(p))) {
      ThrowOpError<TypeError>(op, "input type ", dtype_name(result), " (lhs ", lhs.str(), ", rhs ", rhs.str(),
                              ") is incompatible with preferred_element_type ", dtype_name(p),
                              ": the compatible combinations are (integral, integral), (integral, "
                              "floating) and (floating, floating)");
    }
    if (IsSignedInt(result) && !IsSignedInt(p)) {
      ThrowOpError<TypeError>(op, "preferred_element_type ", dtype_name(p),
                              " must have the same signedness as the input type ", dtype_name(result),
                              " (lhs ", lhs.str(), ", rhs ", rhs.str(), ")");
    }
    if (ItemSize(p) < ItemSize(result)) {
      ThrowOpError<TypeError>(op, "preferred_element_type ", dtype_name(p),
                              " must not be narrower than the input type ", dtype_name(result), " (lhs ",
                              lhs.str(), ", rhs ", rhs.str(), ")");
    }
  }
  return p;
}

std::optional<DType> OptionalDTypeParam(const ParamMap& params, std::string_view name) {
  const Param* p = params.Find(name);
  if (p == nullptr || p->is_none()) return std::nullopt;
  return params.GetDType(name);
}

ParamMap DotGeneralParams(const DotDimensionNumbers& dimension_numbers, std::optional<DType> preferred_element_type) {
  return ParamMap{
      {"dimension_numbers",
       std::shared_ptr<const ParamObject>(std::make_shared<DotDimensionNumbersParam>(dimension_numbers))},
      {"precision", ParamNone{}},
      {"preferred_element_type", preferred_element_type ? Param(*preferred_element_type) : Param(ParamNone{})},
  };
}

const DotDimensionNumbers& GetDotDimensionNumbers(const ParamMap& params) {
  const auto* p = dynamic_cast<const DotDimensionNumbersParam*>(params.GetObject("dimension_numbers").get());
  if (p == nullptr) throw InternalError("dot_general: dimension_numbers param has the wrong type");
  return p->value();
}

namespace {

constexpr std::string_view kOp = "dot_general";

// The free (neither batch nor contracting) dims of an operand, in increasing order.
std::vector<int64_t> FreeDims(int64_t rank, const std::vector<int64_t>& batch, const std::vector<int64_t>& contract) {
  std::vector<int64_t> out;
  for (int64_t d = 0; d < rank; ++d) {
    if (std::find(batch.begin(), batch.end(), d) == batch.end() &&
        std::find(contract.begin(), contract.end(), d) == contract.end()) {
      out.push_back(d);
    }
  }
  return out;
}

// The dtype mixed operands compute in: the more precise one (JAX's _dot_general_dtype_rule).
DType DotInputDType(const ShapedArray& lhs, const ShapedArray& rhs) {
  const auto lp = TypeProperties(lhs.dtype), rp = TypeProperties(rhs.dtype);
  if (rp > lp) return rhs.dtype;
  if (lp == rp && lhs.dtype != rhs.dtype) {
    ThrowOpError<TypeError>(kOp, "argument type error: lhs ", lhs.str(), ", rhs ", rhs.str());
  }
  return lhs.dtype;
}

void CheckOperandDims(const ShapedArray& a, std::string_view side, const std::vector<int64_t>& batch,
                      const std::vector<int64_t>& contract) {
  std::vector<bool> seen(static_cast<size_t>(a.ndim()), false);
  for (auto [dims, what] : {std::pair{&batch, "batch"}, std::pair{&contract, "contracting"}}) {
    for (int64_t d : *dims) {
      if (d < 0 || d >= a.ndim()) {
        ThrowOpError<ShapeError>(kOp, side, "_", what, "_dims ", DimsStr(*dims), " has dim ", d,
                                 " out of range for ", side, " ", a.str(), " of rank ", a.ndim());
      }
      if (seen[static_cast<size_t>(d)]) {
        ThrowOpError<ShapeError>(kOp, "dim ", d, " of ", side, " ", a.str(), " appears more than once in ", side,
                                 "_batch_dims ", DimsStr(batch), " and ", side, "_contracting_dims ",
                                 DimsStr(contract));
      }
      seen[static_cast<size_t>(d)] = true;
    }
  }
}

Avals DotGeneralAbstractEval(InAvals in, const ParamMap& params) {
  CheckArity(kOp, in, 2);
  const ShapedArray& lhs = *in[0];
  const ShapedArray& rhs = *in[1];
  const DotDimensionNumbers& dn = GetDotDimensionNumbers(params);
  if (dn.lhs_contracting_dims.size() != dn.rhs_contracting_dims.size()) {
    ThrowOpError<ShapeError>(kOp, "lhs_contracting_dims ", DimsStr(dn.lhs_contracting_dims),
                             " and rhs_contracting_dims ", DimsStr(dn.rhs_contracting_dims),
                             " must have equal lengths (lhs ", lhs.str(), ", rhs ", rhs.str(), ")");
  }
  if (dn.lhs_batch_dims.size() != dn.rhs_batch_dims.size()) {
    ThrowOpError<ShapeError>(kOp, "lhs_batch_dims ", DimsStr(dn.lhs_batch_dims), " and rhs_batch_dims ",
                             DimsStr(dn.rhs_batch_dims), " must have equal lengths (lhs ", lhs.str(), ", rhs ",
                             rhs.str(), ")");
  }
  CheckOperandDims(lhs, "lhs", dn.lhs_batch_dims, dn.lhs_contracting_dims);
  CheckOperandDims(rhs, "rhs", dn.rhs_batch_dims, dn.rhs_contracting_dims);
  for (size_t i = 0; i < dn.lhs_batch_dims.size(); ++i) {
    const int64_t l = dn.lhs_batch_dims[i], r = dn.rhs_batch_dims[i];
    if (lhs.shape[l] != rhs.shape[r]) {
      ThrowOpError<ShapeError>(kOp, "batch dims differ: lhs ", lhs.str(), " dim ", l, " (", lhs.shape[l], ") vs rhs ",
                               rhs.str(), " dim ", r, " (", rhs.shape[r], ")");
    }
  }
  for (size_t i = 0; i < dn.lhs_contracting_dims.size(); ++i) {
    const int64_t l = dn.lhs_contracting_dims[i], r = dn.rhs_contracting_dims[i];
    if (lhs.shape[l] != rhs.shape[r]) {
      ThrowOpError<ShapeError>(kOp, "contracting dims differ: lhs ", lhs.str(), " dim ", l, " (", lhs.shape[l],
                               ") vs rhs ", rhs.str(), " dim ", r, " (", rhs.shape[r], ")");
    }
  }
  const std::optional<DType> preferred = OptionalDTypeParam(params, "preferred_element_type");
  const DType dtype = ValidatePreferredElementType(kOp, DotInputDType(lhs, rhs), preferred, lhs, rhs);
  Shape shape;
  for (int64_t d : dn.lhs_batch_dims) shape.push_back(lhs.shape[d]);
  for (int64_t d : FreeDims(lhs.ndim(), dn.lhs_batch_dims, dn.lhs_contracting_dims)) shape.push_back(lhs.shape[d]);
  for (int64_t d : FreeDims(rhs.ndim(), dn.rhs_batch_dims, dn.rhs_contracting_dims)) shape.push_back(rhs.shape[d]);
  return {ShapedArray{std::move(shape), dtype, lhs.weak_type && rhs.weak_type && !preferred}};
}

using DimVec = absl::InlinedVector<int64_t, 8>;

int64_t GroupSize(const Shape& shape, const std::vector<int64_t>& dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= shape[d];
  return n;
}

// The stride of dims (in this order) merged into one axis of a row-major array, 0 for a group
// of total size <= 1, or nullopt when the dims do not nest.
std::optional<int64_t> MergedStride(const Shape& shape, const std::vector<int64_t>& strides,
                                    const std::vector<int64_t>& dims) {
  int64_t prev = -1;
  for (int64_t d : dims) {
    if (shape[d] == 1) continue;
    if (prev >= 0 && strides[prev] != strides[d] * shape[d]) return std::nullopt;
    prev = d;
  }
  return prev < 0 ? 0 : strides[prev];
}

// One GEMM operand: rows x cols matrices (op(X) before transposition), one per batch entry.
struct GemmOperand {
  const void* data = nullptr;
  int64_t ld = 0, batch_stride = 0;
  bool transposed = false;
  std::shared_ptr<Buffer> scratch;  // owns packed data, if any
};

// Views the operand as [batch, rows, cols] without copying when its dims allow it.
bool TryDirectOperand(const Array& x, const std::vector<int64_t>& batch, const std::vector<int64_t>& row_dims,
                      const std::vector<int64_t>& col_dims, GemmOperand* op) {
  const Shape& shape = x.shape();
  const std::vector<int64_t> strides = RowMajorStrides(shape);
  const auto sb = MergedStride(shape, strides, batch);
  const auto sr = MergedStride(shape, strides, row_dims);
  const auto sc = MergedStride(shape, strides, col_dims);
  if (!sb || !sr || !sc) return false;
  const int64_t rows = GroupSize(shape, row_dims), cols = GroupSize(shape, col_dims);
  op->data = x.data();
  op->batch_stride = *sb;
  if (cols <= 1 || *sc == 1) {
    op->transposed = false;
    op->ld = rows <= 1 ? std::max<int64_t>(cols, 1) : *sr;
    return true;
  }
  if (rows <= 1 || *sr == 1) {
    op->transposed = true;
    op->ld = cols <= 1 ? std::max<int64_t>(rows, 1) : *sc;
    return true;
  }
  return false;
}

// Copies (and converts to acc) the operand into a dense [batch, rows, cols] or, when its
// innermost memory dim is a row dim, [batch, cols, rows] buffer.
GemmOperand PackOperand(const Array& x, DType acc, const std::vector<int64_t>& batch,
                        const std::vector<int64_t>& row_dims, const std::vector<int64_t>& col_dims) {
  const Shape& shape = x.shape();
  const std::vector<int64_t> strides = RowMajorStrides(shape);
  int64_t inner = -1;
  for (int64_t d = x.ndim() - 1; d >= 0; --d) {
    if (shape[d] != 1) {
      inner = d;
      break;
    }
  }
  GemmOperand op;
  op.transposed = inner >= 0 && std::find(row_dims.begin(), row_dims.end(), inner) != row_dims.end();
  DimVec sizes, src_strides;
  auto add = [&](const std::vector<int64_t>& dims) {
    for (int64_t d : dims) {
      sizes.push_back(shape[d]);
      src_strides.push_back(strides[d]);
    }
  };
  add(batch);
  add(op.transposed ? col_dims : row_dims);
  add(op.transposed ? row_dims : col_dims);
  const int64_t rows = GroupSize(shape, row_dims), cols = GroupSize(shape, col_dims);
  op.scratch = Buffer::Allocate(x.size() * ItemSize(acc));
  kernels::PackConvert(x.dtype(), x.data(), sizes, src_strides, acc, op.scratch->data());
  op.data = op.scratch->data();
  op.ld = std::max<int64_t>(1, op.transposed ? rows : cols);
  op.batch_stride = rows * cols;
  return op;
}

GemmOperand MakeOperand(const Array& x, DType acc, const std::vector<int64_t>& batch,
                        const std::vector<int64_t>& row_dims, const std::vector<int64_t>& col_dims) {
  GemmOperand op;
  if (kernels::SameRepresentation(x.dtype(), acc) && TryDirectOperand(x, batch, row_dims, col_dims, &op)) return op;
  return PackOperand(x, acc, batch, row_dims, col_dims);
}

Arrays DotGeneralImpl(absl::Span<const Array> in, const ParamMap& params, absl::Span<const ShapedArray> out_avals) {
  const Array& lhs = in[0];
  const Array& rhs = in[1];
  Array out = Array::Empty(out_avals[0]);
  if (out.size() == 0) return {out};
  const DotDimensionNumbers& dn = GetDotDimensionNumbers(params);
  const std::vector<int64_t> lhs_free = FreeDims(lhs.ndim(), dn.lhs_batch_dims, dn.lhs_contracting_dims);
  const std::vector<int64_t> rhs_free = FreeDims(rhs.ndim(), dn.rhs_batch_dims, dn.rhs_contracting_dims);
  const int64_t b = GroupSize(lhs.shape(), dn.lhs_batch_dims);
  const int64_t m = GroupSize(lhs.shape(), lhs_free);
  const int64_t n = GroupSize(rhs.shape(), rhs_free);
  const int64_t k = GroupSize(lhs.shape(), dn.lhs_contracting_dims);
  const DType acc = kernels::AccumulationDType(lhs.dtype(), rhs.dtype(), out.dtype());

  GemmOperand a, bop;
  if (k > 0) {
    a = MakeOperand(lhs, acc, dn.lhs_batch_dims, lhs_free, dn.lhs_contracting_dims);
    bop = MakeOperand(rhs, acc, dn.rhs_batch_dims, dn.rhs_contracting_dims, rhs_free);
  }
  const bool direct_out = kernels::SameRepresentation(out.dtype(), acc);
  std::shared_ptr<Buffer> tmp;
  if (!direct_out) tmp = Buffer::Allocate(out.size() * ItemSize(acc));

  kernels::GemmArgs g;
  g.dtype = acc;
  g.batch = b;
  g.m = m;
  g.n = n;
  g.k = k;
  g.a = a.data;
  g.lda = a.ld;
  g.stride_a = a.batch_stride;
  g.transpose_a = a.transposed;
  g.b = bop.data;
  g.ldb = bop.ld;
  g.stride_b = bop.batch_stride;
  g.transpose_b = bop.transposed;
  g.c = direct_out ? out.mutable_data() : tmp->data();
  g.ldc = n;
  g.stride_c = m * n;
  kernels::Gemm(g);
  if (!direct_out) {
    const int64_t total = out.size();
    kernels::PackConvert(acc, tmp->data(), {total}, {1}, out.dtype(), out.mutable_data());
  }
  return {out};
}

}  // namespace

void RegisterDotGeneral(Registry& r) {
  PrimitiveRules& rules = r.Define(kDotGeneral);
  rules.abstract_eval = DotGeneralAbstractEval;
  rules.impl = DotGeneralImpl;
  DefineDotGeneralRules(rules);
}

}  // namespace internal

Array dot_general(const Array& lhs, const Array& rhs, const DotDimensionNumbers& dimension_numbers,
                  std::optional<DType> preferred_element_type) {
  return internal::BindOp1(kDotGeneral, {lhs, rhs},
                           internal::DotGeneralParams(dimension_numbers, preferred_element_type));
}

Array dot(const Array& lhs, const Array& rhs, std::optional<DType> preferred_element_type) {
  const int64_t lr = lhs.ndim(), rr = rhs.ndim();
  if (lr < 1 || lr > 2 || rr < 1 || rr > 2 || lhs.shape().back() != rhs.shape()[0]) {
    ThrowOpError<ShapeError>("dot", "Incompatible shapes for dot: got ", lhs.aval().str(), " and ", rhs.aval().str(),
                             " (lax.dot takes rank-1 or rank-2 operands with lhs.shape[-1] == rhs.shape[0])");
  }
  return dot_general(lhs, rhs, DotDimensionNumbers{{lr - 1}, {0}, {}, {}}, preferred_element_type);
}

}  // namespace jx::lax
