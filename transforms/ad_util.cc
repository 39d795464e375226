#include "jx/transforms/ad_util.h"

#include <cstring>
#include <numeric>

#include "jx/core/interpreter.h"

namespace jx {

Array AddAny(const Array& a, const Array& b) {
  if (!a.defined()) return b;
  if (!b.defined()) return a;
  return Bind1(kAddAny, {a, b});
}

Array Zeros(const ShapedArray& aval) {
  // Under a trace, a large zero is a staged broadcast of a scalar (JAX's instantiate_zeros is
  // lax.full): a jit over global shapes (a dry run of a pod step) holds no global-size constant.
  constexpr int64_t kStagedZeroBytes = 1 << 16;
  if (aval.nbytes() >= kStagedZeroBytes && CurrentInterpreter() != nullptr) {
    static const Primitive kBroadcastInDim = Primitive::Intern("broadcast_in_dim");
    return Bind1(kBroadcastInDim, {Zeros(ShapedArray{{}, aval.dtype, aval.weak_type})},
                 ParamMap{{"shape", aval.shape}, {"broadcast_dimensions", std::vector<int64_t>{}}, {"sharding", ParamNone{}}});
  }
  Array z = Array::Empty(ShapedArray{aval.shape, aval.dtype, aval.weak_type});
  if (z.nbytes() > 0) std::memset(z.mutable_data(), 0, static_cast<size_t>(z.nbytes()));
  return z;
}

Array MoveAxis(const Array& x, int64_t from, int64_t to) {
  if (from == to) return x;
  std::vector<int64_t> perm(static_cast<size_t>(x.ndim()));
  std::iota(perm.begin(), perm.end(), 0);
  perm.erase(perm.begin() + from);
  perm.insert(perm.begin() + to, from);
  static const Primitive kTranspose = Primitive::Intern("transpose");
  return Bind1(kTranspose, {x}, ParamMap{{"permutation", perm}});
}

Array BroadcastAxis(const Array& x, int64_t n, int64_t axis) {
  Shape shape = x.shape();
  shape.insert(shape.begin() + axis, n);
  std::vector<int64_t> dims;
  for (int64_t d = 0; d < x.ndim(); ++d) dims.push_back(d < axis ? d : d + 1);
  static const Primitive kBroadcastInDim = Primitive::Intern("broadcast_in_dim");
  return Bind1(kBroadcastInDim, {x},
               ParamMap{{"shape", shape}, {"broadcast_dimensions", dims}, {"sharding", ParamNone{}}});
}

Array SumLeadingAxis(const Array& x) {
  static const Primitive kReduceSum = Primitive::Intern("reduce_sum");
  return Bind1(kReduceSum, {x}, ParamMap{{"axes", std::vector<int64_t>{0}}});
}

}  // namespace jx
