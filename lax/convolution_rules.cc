// conv_general_dilated's jvp, transpose and batching rules (JAX's
// _conv_general_dilated_transpose_lhs/_rhs and _conv_general_dilated_batch_rule).
//
// The convolution is bilinear. Ignoring spatial dims, with m = batch, j = input feature and
// k = output feature, it contracts [m, j] x [j, k] -> [m, k]; the transposes are
// convolutions too, like a matmul's:
//   lhs: [m, k] x [k, j] -> [m, j]   (window flipped; strides become lhs dilation)
//   rhs: [j, m] x [m, k] -> [j, k]   (the batch is contracted; strides become rhs dilation)
// Feature groups of the forward conv are batch groups of the rhs transpose and vice versa.
// Every convolution a rule emits keeps the equation's precision and preferred_element_type,
// as JAX's rules pass them on.
#include <numeric>
#include <utility>

#include "jx/lax/convert_ops.h"
#include "jx/lax/convolution.h"
#include "jx/lax/dot_general.h"
#include "jx/lax/op_util.h"
#include "jx/lax/primitives.h"
#include "jx/lax/rule_util.h"
#include "jx/lax/shape_ops.h"
#include "jx/transforms/jvp.h"

namespace jx::lax::internal {
namespace {

using Dims = std::vector<int64_t>;
using Pads = std::vector<std::pair<int64_t, int64_t>>;

// The params of one conv_general_dilated equation.
struct Conv {
  Dims window_strides;
  Pads padding;
  Dims lhs_dilation, rhs_dilation;
  ConvDimensionNumbers dn;
  int64_t feature_group_count = 1, batch_group_count = 1;
  std::optional<PrecisionPair> precision;
  std::optional<DType> preferred_element_type;

  static Conv FromParams(const ParamMap& params) {
    Conv c;
    c.window_strides = params.GetInts("window_strides");
    for (const Param& pad : params.GetList("padding")) {
      const auto& v = std::get<std::vector<int64_t>>(pad.value);
      c.padding.emplace_back(v[0], v[1]);
    }
    c.lhs_dilation = params.GetInts("lhs_dilation");
    c.rhs_dilation = params.GetInts("rhs_dilation");
    c.dn = GetConvDimensionNumbers(params);
    c.feature_group_count = params.GetInt("feature_group_count");
    c.batch_group_count = params.GetInt("batch_group_count");
    c.precision = GetPrecision(params);
    c.preferred_element_type = OptionalDTypeParam(params, "preferred_element_type");
    return c;
  }

  Array operator()(const Array& lhs, const Array& rhs) const {
    return conv_general_dilated(lhs, rhs, window_strides, Padding(padding), lhs_dilation, rhs_dilation, dn,
                                feature_group_count, batch_group_count, precision, preferred_element_type);
  }
};

int64_t DilateDim(int64_t d, int64_t dilation) { return d == 0 ? 0 : 1 + dilation * (d - 1); }

// (spec[1], spec[0], spatial...): the roles of the first two dims exchanged.
Dims SwapFirstTwo(Dims spec) {
  std::swap(spec[0], spec[1]);
  return spec;
}

// The sizes of x's dims spec[2:], dilated.
Dims DilatedSpatial(const Shape& shape, const Dims& spec, const Dims& dilation) {
  Dims out;
  for (size_t i = 2; i < spec.size(); ++i) out.push_back(DilateDim(shape[spec[i]], dilation[i - 2]));
  return out;
}

// Merges axis src of x into axis dst (numbered after removing src), src varying slowest
// (JAX's _reshape_axis_into).
Array ReshapeAxisInto(int64_t src, int64_t dst, const Array& x) {
  Dims perm;
  for (int64_t i = 0; i < x.ndim(); ++i) {
    if (i != src) perm.push_back(i);
  }
  perm.insert(perm.begin() + dst, src);
  Shape shape;
  for (int64_t i = 0; i < x.ndim(); ++i) {
    if (i != src) shape.push_back(x.shape()[i]);
  }
  shape[dst] *= x.shape()[src];
  return reshape(transpose(x, perm), shape);
}

// Splits axis src of x into (size1, rest) (JAX's _reshape_axis_out_of).
Array ReshapeAxisOutOf(int64_t src, int64_t size1, const Array& x) {
  Shape shape = x.shape();
  const int64_t size2 = shape[src] / size1;
  shape[src] = size2;
  shape.insert(shape.begin() + src, size1);
  return reshape(x, shape);
}

Array WithDType(const Array& x, DType d) { return x.dtype() == d ? x : convert_element_type(x, d); }

JvpResult ConvJvp(absl::Span<const Array> primals, absl::Span<const Array> tangents, const ParamMap& params) {
  Array out = BindOp(kConvGeneralDilated, primals, params)[0];
  if (!HasTangentSpace(out.dtype())) return JvpResult{{std::move(out)}, {Array()}};
  const Conv conv = Conv::FromParams(params);
  Array t;
  if (tangents[0].defined()) t = MatchAval(conv(tangents[0], primals[1]), out.aval());
  if (tangents[1].defined()) t = AddTangents(t, MatchAval(conv(primals[0], tangents[1]), out.aval()));
  return JvpResult{{std::move(out)}, {std::move(t)}};
}

// The cotangent of lhs: ct convolved with the spatially flipped kernel whose in/out
// features are exchanged, window strides turned into lhs dilation.
Array TransposeLhs(const Array& ct, const ShapedArray& lhs_aval, Array rhs, const Conv& c) {
  const ConvDimensionNumbers& dn = c.dn;
  const Shape rhs_shape = rhs.shape();
  int64_t groups = c.feature_group_count;
  if (c.feature_group_count > 1 || c.batch_group_count > 1) {
    // Move the group axis from the kernel's output features into its input features.
    groups = std::max(c.feature_group_count, c.batch_group_count);
    rhs = ReshapeAxisInto(dn.rhs_spec[0], dn.rhs_spec[1], ReshapeAxisOutOf(dn.rhs_spec[0], groups, rhs));
  }
  const Dims lhs_d = DilatedSpatial(lhs_aval.shape, dn.lhs_spec, c.lhs_dilation);
  const Dims rhs_d = DilatedSpatial(rhs_shape, dn.rhs_spec, c.rhs_dilation);
  const Dims out_d = DilatedSpatial(ct.shape(), dn.out_spec, c.window_strides);
  Pads pads;
  for (size_t i = 0; i < lhs_d.size(); ++i) {
    const int64_t before = rhs_d[i] - c.padding[i].first - 1;
    pads.emplace_back(before, lhs_d[i] + rhs_d[i] - 1 - out_d[i] - before);
  }
  const Dims spatial(dn.rhs_spec.begin() + 2, dn.rhs_spec.end());
  const Array flipped = WithDType(rev(rhs, spatial), ct.dtype());
  const ConvDimensionNumbers trans_dn{dn.out_spec, SwapFirstTwo(dn.rhs_spec), dn.lhs_spec};
  Array out = conv_general_dilated(ct, flipped, c.lhs_dilation, Padding(pads), c.window_strides, c.rhs_dilation,
                                   trans_dn, groups, /*batch_group_count=*/1, c.precision, c.preferred_element_type);
  if (c.batch_group_count > 1) {
    // The groups came out in the features; they belong to the batch.
    out = ReshapeAxisInto(dn.lhs_spec[1], dn.lhs_spec[0], ReshapeAxisOutOf(dn.lhs_spec[1], c.batch_group_count, out));
  }
  return MatchAval(out, lhs_aval);
}

// The cotangent of rhs: lhs (batch and features exchanged) convolved with ct, window
// strides turned into rhs dilation; feature groups become batch groups and vice versa.
Array TransposeRhs(const Array& ct, const Array& lhs, const ShapedArray& rhs_aval, const Conv& c) {
  if (ct.size() == 0) return Array();  // a zero cotangent; avoids kernels of spatial size 0
  const ConvDimensionNumbers& dn = c.dn;
  const Dims lhs_d = DilatedSpatial(lhs.shape(), dn.lhs_spec, c.lhs_dilation);
  const Dims rhs_d = DilatedSpatial(rhs_aval.shape, dn.rhs_spec, c.rhs_dilation);
  const Dims out_d = DilatedSpatial(ct.shape(), dn.out_spec, c.window_strides);
  Pads pads;
  for (size_t i = 0; i < lhs_d.size(); ++i) {
    const int64_t lo = c.padding[i].first;
    pads.emplace_back(lo, (out_d[i] - lhs_d[i]) + (rhs_d[i] - lo - 1));
  }
  const ConvDimensionNumbers trans_dn{SwapFirstTwo(dn.lhs_spec), SwapFirstTwo(dn.out_spec), SwapFirstTwo(dn.rhs_spec)};
  const Array out = conv_general_dilated(WithDType(lhs, ct.dtype()), ct, c.rhs_dilation, Padding(pads),
                                         c.lhs_dilation, c.window_strides, trans_dn,
                                         /*feature_group_count=*/c.batch_group_count,
                                         /*batch_group_count=*/c.feature_group_count, c.precision,
                                         c.preferred_element_type);
  return MatchAval(out, rhs_aval);
}

Arrays ConvTranspose(absl::Span<const Array> cts, absl::Span<const TransposeArg> args, const ParamMap& params) {
  if (args[0].is_linear() == args[1].is_linear()) {
    throw InternalError("[conv_general_dilated] transpose: exactly one operand must be linear");
  }
  Arrays out(2);
  if (!cts[0].defined()) return out;
  const Conv c = Conv::FromParams(params);
  if (args[0].is_linear()) {
    out[0] = TransposeLhs(cts[0], args[0].aval, args[1].value, c);
  } else {
    out[1] = TransposeRhs(cts[0], args[0].value, args[1].aval, c);
  }
  return out;
}

// Both operands batched: the vmapped axis becomes extra feature groups (or batch groups),
// the kernel's copies stacked in its output features.
BatchResult BatchBoth(const Array& lhs, int64_t lbd, const Array& rhs, int64_t rbd, Conv c) {
  const ConvDimensionNumbers& dn = c.dn;
  const int64_t n = lhs.shape()[lbd];
  Array new_lhs;
  if (c.batch_group_count > 1) {
    new_lhs = ReshapeAxisInto(lbd, dn.lhs_spec[0], lhs);
    c.batch_group_count *= n;
  } else {
    new_lhs = ReshapeAxisInto(lbd, dn.lhs_spec[1], lhs);
    c.feature_group_count *= n;
  }
  const Array out = c(new_lhs, ReshapeAxisInto(rbd, dn.rhs_spec[0], rhs));
  return BatchResult{{ReshapeAxisOutOf(dn.out_spec[1], n, out)}, {dn.out_spec[1]}};
}

// Only lhs batched: the vmapped axis folds into the conv's batch (inside each batch group).
BatchResult BatchLhs(const Array& lhs, int64_t lbd, const Array& rhs, const Conv& c) {
  const ConvDimensionNumbers& dn = c.dn;
  const int64_t n = lhs.shape()[lbd];
  Array new_lhs;
  if (c.batch_group_count == 1) {
    new_lhs = ReshapeAxisInto(lbd, dn.lhs_spec[0], lhs);
  } else {
    // Batch groups must stay outermost: split them off, fold the vmapped axis into the
    // per-group batch, then merge the groups back.
    const int64_t batch = dn.lhs_spec[0];
    new_lhs = ReshapeAxisOutOf(batch + (lbd <= batch ? 1 : 0), c.batch_group_count, lhs);
    new_lhs = ReshapeAxisInto(lbd + (batch < lbd ? 1 : 0), batch + 1, new_lhs);
    new_lhs = ReshapeAxisInto(batch, batch, new_lhs);
  }
  return BatchResult{{ReshapeAxisOutOf(dn.out_spec[0], n, c(new_lhs, rhs))}, {dn.out_spec[0]}};
}

// Only rhs batched: the vmapped axis folds into the kernel's output features (inside each
// feature or batch group), and comes back out of the output's features.
BatchResult BatchRhs(const Array& lhs, const Array& rhs, int64_t rbd, const Conv& c) {
  const ConvDimensionNumbers& dn = c.dn;
  const int64_t n = rhs.shape()[rbd];
  const int64_t out_feature = dn.rhs_spec[0];
  if (c.feature_group_count == 1 && c.batch_group_count == 1) {
    const Array out = c(lhs, ReshapeAxisInto(rbd, out_feature, rhs));
    return BatchResult{{ReshapeAxisOutOf(dn.out_spec[1], n, out)}, {dn.out_spec[1]}};
  }
  const int64_t groups = std::max(c.feature_group_count, c.batch_group_count);
  Array new_rhs = ReshapeAxisOutOf(out_feature + (rbd <= out_feature ? 1 : 0), groups, rhs);
  new_rhs = ReshapeAxisInto(rbd + (out_feature < rbd ? 1 : 0), out_feature + 1, new_rhs);
  new_rhs = ReshapeAxisInto(out_feature, out_feature, new_rhs);
  Array out = c(lhs, new_rhs);
  const int64_t feature = dn.out_spec[1];
  out = ReshapeAxisOutOf(feature, groups, out);
  out = ReshapeAxisOutOf(feature + 1, n, out);
  return BatchResult{{ReshapeAxisInto(feature, feature + 1, out)}, {feature}};
}

// The output of a vmap over an empty axis: zeros of the unbatched result's shape with a
// leading 0 (the reshapes above cannot fold an axis of size 0).
BatchResult BatchEmpty(const Array& lhs, int64_t lbd, const Array& rhs, int64_t rbd, const ParamMap& params) {
  auto unbatched = [](const Array& x, int64_t bd) {
    if (bd == kNotMapped) return x.aval();
    Shape shape = x.shape();
    shape.erase(shape.begin() + bd);
    return ShapedArray{shape, x.dtype(), x.aval().weak_type};
  };
  const ShapedArray l = unbatched(lhs, lbd), r = unbatched(rhs, rbd);
  const ShapedArray out =
      GlobalRegistry().Get(kConvGeneralDilated).abstract_eval(std::vector<const ShapedArray*>{&l, &r}, params)[0];
  Shape shape = out.shape;
  shape.insert(shape.begin(), 0);
  return BatchResult{{Zeros(ShapedArray{shape, out.dtype, out.weak_type})}, {0}};
}

BatchResult ConvBatch(absl::Span<const Array> args, absl::Span<const int64_t> dims, int64_t axis_size,
                      const ParamMap& params) {
  const Array& lhs = args[0];
  const Array& rhs = args[1];
  const int64_t lbd = dims[0], rbd = dims[1];
  if (lbd == kNotMapped && rbd == kNotMapped) {
    return BatchResult{{BindOp(kConvGeneralDilated, args, params)[0]}, {kNotMapped}};
  }
  if (axis_size == 0) return BatchEmpty(lhs, lbd, rhs, rbd, params);
  const Conv c = Conv::FromParams(params);
  if (lbd != kNotMapped && rbd != kNotMapped) return BatchBoth(lhs, lbd, rhs, rbd, c);
  if (lbd != kNotMapped) return BatchLhs(lhs, lbd, rhs, c);
  return BatchRhs(lhs, rhs, rbd, c);
}

}  // namespace

void DefineConvolutionRules(PrimitiveRules& rules) {
  rules.jvp = ConvJvp;
  rules.transpose = ConvTranspose;
  rules.batch = ConvBatch;
}

}  // namespace jx::lax::internal
