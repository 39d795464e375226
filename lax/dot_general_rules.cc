// dot_general's jvp, transpose and batching rules (JAX's _dot_general_transpose_lhs/_rhs and
// _dot_general_batch_rule). dot_general is bilinear: the jvp sums the contractions of each
// tangent with the other primal, and each operand's cotangent contracts the output
// cotangent with the other operand, then transposes back to the operand's dimension order.
// Every dot a rule emits keeps the equation's precision and preferred_element_type, as JAX's
// rules pass them on (the cotangent dots too: a cotangent is then converted back to its
// operand's dtype). A None precision is canonicalized again, as in JAX: a
// default_matmul_precision scope active while transforming applies to the new dots.
#include <algorithm>
#include <numeric>

#include "jx/core/out_sharding.h"
#include "jx/lax/convert_ops.h"
#include "jx/lax/dot_general.h"
#include "jx/lax/op_util.h"
#include "jx/lax/primitives.h"
#include "jx/lax/rule_util.h"
#include "jx/lax/shape_ops.h"
#include "jx/transforms/jvp.h"

namespace jx::lax::internal {
namespace {

using Dims = std::vector<int64_t>;

// The dims of [0, rank) in neither a nor b, in increasing order.
Dims Remaining(int64_t rank, const Dims& a, const Dims& b) {
  Dims out;
  for (int64_t d = 0; d < rank; ++d) {
    if (std::find(a.begin(), a.end(), d) == a.end() && std::find(b.begin(), b.end(), d) == b.end()) {
      out.push_back(d);
    }
  }
  return out;
}

Dims Range(int64_t start, int64_t size) {
  Dims out(static_cast<size_t>(size));
  std::iota(out.begin(), out.end(), start);
  return out;
}

// The equation's precision and preferred_element_type, which every dot a rule emits keeps,
// and its out_sharding, which the jvp's dots keep (the batch rule adds the batch dim's entry).
struct Options {
  std::optional<PrecisionPair> precision;
  std::optional<DType> preferred_element_type;
  std::optional<DimShardings> out_sharding;

  static Options FromParams(const ParamMap& params) {
    const DimShardings* s = OutShardingOf(params);
    return {GetPrecision(params), OptionalDTypeParam(params, "preferred_element_type"),
            s == nullptr ? std::nullopt : std::optional<DimShardings>(*s)};
  }
  // A dot with the equation's options (its out_sharding too).
  Array Dot(const Array& lhs, const Array& rhs, const DotDimensionNumbers& dn) const {
    if (out_sharding.has_value()) return Dot(lhs, rhs, dn, *out_sharding);
    return dot_general(lhs, rhs, dn, precision, preferred_element_type);
  }
  // With the result's explicit sharding given (JAX's out_sharding=; one entry per result dim).
  Array Dot(const Array& lhs, const Array& rhs, const DotDimensionNumbers& dn, DimShardings out_spec) const {
    ParamMap params = DotGeneralParams(dn, precision, preferred_element_type);
    params.Set("out_sharding", OutShardingParam::Make(std::move(out_spec)));
    return BindOp1(kDotGeneral, {lhs, rhs}, params);
  }
};

// The cotangent of x in dot_general(x, y, dn) (or, with swap_ans, of x in dot_general(y, x,
// swapped dn)): contract ct's free-y dims with y's free dims, then restore x's dim order.
Array TransposeLhs(const Array& ct, const ShapedArray& x_aval, const Array& y, const DotDimensionNumbers& dn,
                   const Options& options, bool swap_ans) {
  const Dims& x_contract = dn.lhs_contracting_dims;
  const Dims& y_contract = dn.rhs_contracting_dims;
  const Dims& x_batch = dn.lhs_batch_dims;
  const Dims& y_batch = dn.rhs_batch_dims;
  const Dims x_kept = Remaining(x_aval.ndim(), x_contract, x_batch);
  const Dims y_kept = Remaining(y.ndim(), y_contract, y_batch);
  const auto nb = static_cast<int64_t>(x_batch.size());
  const Dims ans_batch = Range(0, nb);
  const Dims ans_y = swap_ans ? Range(nb, static_cast<int64_t>(y_kept.size()))
                              : Range(nb + static_cast<int64_t>(x_kept.size()), static_cast<int64_t>(y_kept.size()));
  // ct's y-free dims contract with y's free dims; the batch dims stay batch dims. The result
  // holds x's batch dims, x's free dims, then x's contracting dims.
  const DotDimensionNumbers dims{ans_y, y_kept, ans_batch, y_batch};
  // x's contracting dims appear in the result ordered as y's (numpy's argsort(y_contract)).
  Dims sorted_idx = Range(0, static_cast<int64_t>(y_contract.size()));
  std::sort(sorted_idx.begin(), sorted_idx.end(),
            [&](int64_t a, int64_t b) { return y_contract[a] < y_contract[b]; });
  Dims result_to_x = x_batch;  // result dim i holds x's dim result_to_x[i]
  result_to_x.insert(result_to_x.end(), x_kept.begin(), x_kept.end());
  for (int64_t i : sorted_idx) result_to_x.push_back(x_contract[i]);
  // In explicit mode (some operand's type is sharded) the cotangent is typed as x is (JAX
  // passes out_sharding=x's sharding): the product is asked for in x's sharding, permuted to
  // the product's dim order. (The primal's out_sharding types ct, not this product.)
  Array prod;
  if (x_aval.spec.empty() && ct.aval().spec.empty() && y.aval().spec.empty()) {
    prod = dot_general(ct, y, dims, options.precision, options.preferred_element_type);
  } else {
    DimShardings prod_spec;
    for (int64_t d : result_to_x) {
      prod_spec.push_back(x_aval.spec.empty() ? std::vector<std::string>{} : x_aval.spec[static_cast<size_t>(d)]);
    }
    prod = options.Dot(ct, y, dims, std::move(prod_spec));
  }
  return MatchAval(transpose(prod, InversePermutation(result_to_x)), x_aval);
}

DotDimensionNumbers Swapped(const DotDimensionNumbers& dn) {
  return {dn.rhs_contracting_dims, dn.lhs_contracting_dims, dn.rhs_batch_dims, dn.lhs_batch_dims};
}

JvpResult DotGeneralJvp(absl::Span<const Array> primals, absl::Span<const Array> tangents, const ParamMap& params) {
  Array out = BindOp(kDotGeneral, primals, params)[0];
  if (!HasTangentSpace(out.dtype())) return JvpResult{{std::move(out)}, {Array()}};
  const DotDimensionNumbers& dn = GetDotDimensionNumbers(params);
  const Options options = Options::FromParams(params);
  auto contract = [&](const Array& l, const Array& r) { return MatchAval(options.Dot(l, r, dn), out.aval()); };
  Array t;
  if (tangents[0].defined()) t = contract(tangents[0], primals[1]);
  if (tangents[1].defined()) t = AddTangents(t, contract(primals[0], tangents[1]));
  return JvpResult{{std::move(out)}, {std::move(t)}};
}

Arrays DotGeneralTranspose(absl::Span<const Array> cts, absl::Span<const TransposeArg> args, const ParamMap& params) {
  if (args[0].is_linear() == args[1].is_linear()) {
    throw InternalError("[dot_general] transpose: exactly one operand must be linear");
  }
  Arrays out(2);
  if (!cts[0].defined()) return out;
  const DotDimensionNumbers& dn = GetDotDimensionNumbers(params);
  const Options options = Options::FromParams(params);
  if (args[0].is_linear()) {
    out[0] = TransposeLhs(cts[0], args[0].aval, args[1].value, dn, options, /*swap_ans=*/false);
  } else {
    out[1] = TransposeLhs(cts[0], args[1].aval, args[0].value, Swapped(dn), options, /*swap_ans=*/true);
  }
  return out;
}

// dims with every entry >= b shifted up by one (b is a batch dim inserted before them).
Dims Bump(const Dims& dims, int64_t b) {
  Dims out = dims;
  for (int64_t& d : out) d += d >= b ? 1 : 0;
  return out;
}

// Number of dims of `dims` below b.
int64_t CountBelow(const Dims& dims, int64_t b) {
  return std::count_if(dims.begin(), dims.end(), [b](int64_t d) { return d < b; });
}

// Folds the vmapped dim into the contraction: a new leading batch dim when both operands
// are batched, else a free dim of the batched operand (JAX's _dot_general_batch_dim_nums).
BatchResult DotGeneralBatch(absl::Span<const Array> args, absl::Span<const int64_t> dims, int64_t,
                            const ParamMap& params) {
  DotDimensionNumbers dn = GetDotDimensionNumbers(params);
  const int64_t lbd = dims[0], rbd = dims[1];
  int64_t out_dim = 0;
  if (lbd != kNotMapped && rbd != kNotMapped) {
    dn.lhs_batch_dims = Bump(dn.lhs_batch_dims, lbd);
    dn.lhs_batch_dims.insert(dn.lhs_batch_dims.begin(), lbd);
    dn.rhs_batch_dims = Bump(dn.rhs_batch_dims, rbd);
    dn.rhs_batch_dims.insert(dn.rhs_batch_dims.begin(), rbd);
    dn.lhs_contracting_dims = Bump(dn.lhs_contracting_dims, lbd);
    dn.rhs_contracting_dims = Bump(dn.rhs_contracting_dims, rbd);
  } else if (lbd != kNotMapped) {
    const int64_t unbatched_rank = args[0].ndim() - 1;
    const Dims lhs_free = Remaining(unbatched_rank, dn.lhs_batch_dims, dn.lhs_contracting_dims);
    out_dim = static_cast<int64_t>(dn.lhs_batch_dims.size()) + CountBelow(lhs_free, lbd);
    dn.lhs_batch_dims = Bump(dn.lhs_batch_dims, lbd);
    dn.lhs_contracting_dims = Bump(dn.lhs_contracting_dims, lbd);
  } else {
    const int64_t unbatched_rank = args[1].ndim() - 1;
    const Dims rhs_free = Remaining(unbatched_rank, dn.rhs_batch_dims, dn.rhs_contracting_dims);
    out_dim = args[0].ndim() - static_cast<int64_t>(dn.lhs_contracting_dims.size()) + CountBelow(rhs_free, rbd);
    dn.rhs_batch_dims = Bump(dn.rhs_batch_dims, rbd);
    dn.rhs_contracting_dims = Bump(dn.rhs_contracting_dims, rbd);
  }
  Options options = Options::FromParams(params);
  if (options.out_sharding.has_value()) {  // the vmapped dim is whole (JAX's batching of out_sharding)
    options.out_sharding->insert(options.out_sharding->begin() + out_dim, std::vector<std::string>{});
  }
  return BatchResult{{options.Dot(args[0], args[1], dn)}, {out_dim}};
}

}  // namespace

void DefineDotGeneralRules(PrimitiveRules& rules) {
  rules.jvp = DotGeneralJvp;
  rules.transpose = DotGeneralTranspose;
  rules.batch = DotGeneralBatch;
}

}  // namespace jx::lax::internal
