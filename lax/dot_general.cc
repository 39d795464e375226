// dot_general: abstract eval (XLA's dot shape inference and JAX's dtype rule), the eager
// impl (lax/kernels/dot_general.h: a batched [B, M, K] x [B, K, N] GEMM) and lax::dot.
#include "jx/lax/dot_general.h"

#include <algorithm>
#include <memory>
#include <optional>
#include <tuple>

#include "absl/hash/hash.h"
#include "absl/strings/str_join.h"
#include "jx/lax/kernels/dot_general.h"
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

ParamMap DotGeneralParams(const DotDimensionNumbers& dimension_numbers, const std::optional<PrecisionPair>& precision,
                          std::optional<DType> preferred_element_type) {
  return ParamMap{
      {"dimension_numbers",
       std::shared_ptr<const ParamObject>(std::make_shared<DotDimensionNumbersParam>(dimension_numbers))},
      {"precision", PrecisionParam(precision)},
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

// The numerics live in lax/kernels/dot_general.cc, shared with the compiled CPU backend. The
// CPU multiplies in the operands' type at any precision, so precision is not read here.
Arrays DotGeneralImpl(absl::Span<const Array> in, const ParamMap& params, absl::Span<const ShapedArray> out_avals) {
  const Array& lhs = in[0];
  const Array& rhs = in[1];
  Array out = Array::Empty(out_avals[0]);
  if (out.size() == 0) return {out};
  const DotDimensionNumbers& dn = GetDotDimensionNumbers(params);
  kernels::DotGeneralArgs d;
  d.lhs_dtype = lhs.dtype();
  d.rhs_dtype = rhs.dtype();
  d.out_dtype = out.dtype();
  d.lhs_shape = lhs.shape();
  d.rhs_shape = rhs.shape();
  d.lhs_batch_dims = dn.lhs_batch_dims;
  d.rhs_batch_dims = dn.rhs_batch_dims;
  d.lhs_contracting_dims = dn.lhs_contracting_dims;
  d.rhs_contracting_dims = dn.rhs_contracting_dims;
  d.lhs = lhs.data();
  d.rhs = rhs.data();
  d.out = out.mutable_data();
  kernels::DotGeneral(d);
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
                  PrecisionLike precision, std::optional<DType> preferred_element_type,
                  const OutSharding& out_sharding) {
  ParamMap params = internal::DotGeneralParams(dimension_numbers, internal::CanonicalizePrecision(precision),
                                               preferred_element_type);
  if (!out_sharding.is_none()) {
    // The result's rank: batch dims, then each operand's free dims.
    const auto n = [](const std::vector<int64_t>& v) { return static_cast<int64_t>(v.size()); };
    const int64_t rank = lhs.ndim() + rhs.ndim() - 2 * n(dimension_numbers.lhs_contracting_dims) -
                         n(dimension_numbers.lhs_batch_dims);
    SetOutSharding(params, "dot_general", out_sharding, rank, {lhs, rhs});
  }
  return internal::BindOp1(kDotGeneral, {lhs, rhs}, params);
}

Array dot_general(const Array& lhs, const Array& rhs, const DotDimensionNumbers& dimension_numbers,
                  const OutSharding& out_sharding) {
  return dot_general(lhs, rhs, dimension_numbers, PrecisionLike(), std::nullopt, out_sharding);
}

Array dot_general(const Array& lhs, const Array& rhs, const DotDimensionNumbers& dimension_numbers,
                  std::optional<DType> preferred_element_type) {
  return dot_general(lhs, rhs, dimension_numbers, PrecisionLike(), preferred_element_type);
}

Array dot(const Array& lhs, const Array& rhs, std::optional<DType> preferred_element_type) {
  return dot(lhs, rhs, PrecisionLike(), preferred_element_type);
}

Array dot(const Array& lhs, const Array& rhs, PrecisionLike precision, std::optional<DType> preferred_element_type) {
  const int64_t lr = lhs.ndim(), rr = rhs.ndim();
  if (lr < 1 || lr > 2 || rr < 1 || rr > 2 || lhs.shape().back() != rhs.shape()[0]) {
    ThrowOpError<ShapeError>("dot", "Incompatible shapes for dot: got ", lhs.aval().str(), " and ", rhs.aval().str(),
                             " (lax.dot takes rank-1 or rank-2 operands with lhs.shape[-1] == rhs.shape[0])");
  }
  return dot_general(lhs, rhs, DotDimensionNumbers{{lr - 1}, {0}, {}, {}}, std::move(precision), preferred_element_type);
}

}  // namespace jx::lax
