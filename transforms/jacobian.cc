#include "jx/transforms/jacobian.h"

#include <vector>

#include "jx/core/errors.h"
#include "jx/core/interpreter.h"
#include "jx/transforms/ad_util.h"
#include "jx/transforms/jvp.h"
#include "jx/transforms/vmap.h"

namespace jx {
namespace {

const Primitive kReshape = Primitive::Intern("reshape");
const Primitive kConvert = Primitive::Intern("convert_element_type");

// The standard basis of a space shaped like aval: [size, *aval.shape], one-hot rows.
Array Basis(const ShapedArray& aval) {
  const int64_t n = aval.size();
  std::vector<double> eye(static_cast<size_t>(n * n), 0.0);
  for (int64_t i = 0; i < n; ++i) eye[static_cast<size_t>(i * n + i)] = 1.0;
  Shape shape = aval.shape;
  shape.insert(shape.begin(), n);
  Array basis = Array::FromData(eye.data(), shape, float64);
  if (aval.dtype == float64) return basis;
  return Bind1(kConvert, {basis},
               ParamMap{{"new_dtype", aval.dtype}, {"sharding", ParamNone{}}, {"weak_type", false}});
}

Shape Concat(const Shape& a, const Shape& b) {
  Shape s = a;
  s.insert(s.end(), b.begin(), b.end());
  return s;
}

void CheckFloating(const Array& x, std::string_view transform, std::string_view what, size_t index) {
  if (!HasTangentSpace(x.dtype())) {
    throw TypeError(StrCat(transform, " requires floating-point ", what, "s, but ", what, " ", index, " is ",
                           x.aval().str(), " (integer and bool values have no derivative)"));
  }
}

}  // namespace

Array ReshapeTo(const Array& x, Shape shape) {
  if (x.shape() == shape) return x;
  return Bind1(kReshape, {x}, ParamMap{{"new_sizes", shape}, {"dimensions", ParamNone{}}, {"sharding", ParamNone{}}});
}

JacobianBlocks JacfwdFlat(const ArraysFn& fn, absl::Span<const Array> inputs) {
  for (size_t i = 0; i < inputs.size(); ++i) CheckFloating(inputs[i], "jacfwd", "input", i);
  const Arrays outs = fn(inputs);
  for (size_t k = 0; k < outs.size(); ++k) CheckFloating(outs[k], "jacfwd", "output", k);
  JacobianBlocks jac(outs.size(), std::vector<Array>(inputs.size()));
  for (size_t i = 0; i < inputs.size(); ++i) {
    const ShapedArray in = inputs[i].aval();
    if (in.size() == 0) {
      for (size_t k = 0; k < outs.size(); ++k) {
        jac[k][i] = Zeros(ShapedArray{Concat(outs[k].shape(), in.shape), outs[k].dtype()});
      }
      continue;
    }
    // Column block i: the tangent of input i runs over its basis, the others stay zero.
    ArraysFn push = [&](absl::Span<const Array> t) {
      Arrays tangents(inputs.size());
      tangents[i] = t[0];
      auto [primals_out, tangents_out] = JvpCall(fn, inputs, tangents);
      for (size_t k = 0; k < tangents_out.size(); ++k) {
        if (!tangents_out[k].defined()) tangents_out[k] = Zeros(ShapedArray{primals_out[k].shape(), primals_out[k].dtype()});
      }
      return tangents_out;
    };
    const Arrays cols = VmapCall(push, {Basis(in)}, {0}, {-1});  // [*out_k, n_i]
    for (size_t k = 0; k < outs.size(); ++k) jac[k][i] = ReshapeTo(cols[k], Concat(outs[k].shape(), in.shape));
  }
  return jac;
}

JacobianBlocks JacrevFlat(const ArraysFn& fn, absl::Span<const Array> inputs) {
  for (size_t i = 0; i < inputs.size(); ++i) CheckFloating(inputs[i], "jacrev", "input", i);
  auto [outs, pullback] = VjpCall(fn, inputs);
  for (size_t k = 0; k < outs.size(); ++k) CheckFloating(outs[k], "jacrev", "output", k);
  JacobianBlocks jac(outs.size(), std::vector<Array>(inputs.size()));
  for (size_t k = 0; k < outs.size(); ++k) {
    const ShapedArray out{outs[k].shape(), outs[k].dtype()};
    if (out.size() == 0) {
      for (size_t i = 0; i < inputs.size(); ++i) {
        jac[k][i] = Zeros(ShapedArray{Concat(out.shape, inputs[i].shape()), out.dtype});
      }
      continue;
    }
    // Row block k: the cotangent of output k runs over its basis, the others stay zero.
    ArraysFn pull = [&](absl::Span<const Array> c) {
      Arrays cts(outs.size());
      cts[k] = c[0];
      Arrays grads = pullback(cts);
      for (size_t i = 0; i < grads.size(); ++i) {
        if (!grads[i].defined()) grads[i] = Zeros(ShapedArray{inputs[i].shape(), inputs[i].dtype()});
      }
      return grads;
    };
    const Arrays rows = VmapCall(pull, {Basis(out)}, {0}, {0});  // [m_k, *in_i]
    for (size_t i = 0; i < inputs.size(); ++i) {
      // Cotangents come back in the input's dtype; the Jacobian is in the output's.
      Array row = rows[i];
      if (row.dtype() != out.dtype) {
        row = Bind1(kConvert, {row}, ParamMap{{"new_dtype", out.dtype}, {"sharding", ParamNone{}}, {"weak_type", false}});
      }
      jac[k][i] = ReshapeTo(row, Concat(out.shape, inputs[i].shape()));
    }
  }
  return jac;
}

}  // namespace jx
