#include "jx/lax/numpy/promotion.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "jx/core/errors.h"
#include "jx/core/vma.h"
#include "jx/lax/convert_ops.h"
#include "jx/lax/primitives.h"
#include "jx/lax/shape_ops.h"

namespace jx::numpy {
namespace {

// A double converted to an integer dtype: truncation toward zero, NaN -> 0, saturating at
// the type's range (what XLA's float -> int conversion does).
template <typename I>
I SaturatingToInt(double v) {
  if (std::isnan(v)) return I{0};
  if (v <= static_cast<double>(std::numeric_limits<I>::min())) return std::numeric_limits<I>::min();
  if (v >= static_cast<double>(std::numeric_limits<I>::max())) return std::numeric_limits<I>::max();
  return static_cast<I>(v);
}

template <typename Out, typename V>
Out ConvertValue(V v) {
  if constexpr (std::is_same_v<Out, bool>) {
    return v != V{0};
  } else if constexpr (std::is_same_v<Out, float16_t> || std::is_same_v<Out, bfloat16_t>) {
    return Out(static_cast<float>(v));
  } else if constexpr (std::is_integral_v<Out> && std::is_floating_point_v<V>) {
    return SaturatingToInt<Out>(static_cast<double>(v));
  } else {
    return static_cast<Out>(v);
  }
}

template <typename Out, typename V>
void FillTyped(const V* v, int64_t n, void* out) {
  Out* o = static_cast<Out*>(out);
  for (int64_t i = 0; i < n; ++i) o[i] = ConvertValue<Out>(v[i]);
}

// n values converted with C++ semantics (floats saturate into ints; no float32 detour).
template <typename V>
Array FromValuesImpl(const V* v, int64_t n, const Shape& shape, DType dtype, bool weak) {
  Array out = Array::Empty(ShapedArray{shape, dtype, weak});
  void* p = out.mutable_data();
  switch (dtype) {
    case DType::kBool: FillTyped<bool>(v, n, p); break;
    case DType::kInt8: FillTyped<int8_t>(v, n, p); break;
    case DType::kInt16: FillTyped<int16_t>(v, n, p); break;
    case DType::kInt32: FillTyped<int32_t>(v, n, p); break;
    case DType::kInt64: FillTyped<int64_t>(v, n, p); break;
    case DType::kUInt8: FillTyped<uint8_t>(v, n, p); break;
    case DType::kUInt16: FillTyped<uint16_t>(v, n, p); break;
    case DType::kUInt32: FillTyped<uint32_t>(v, n, p); break;
    case DType::kUInt64: FillTyped<uint64_t>(v, n, p); break;
    case DType::kFloat16: FillTyped<float16_t>(v, n, p); break;
    case DType::kBFloat16: FillTyped<bfloat16_t>(v, n, p); break;
    case DType::kFloat32: FillTyped<float>(v, n, p); break;
    case DType::kFloat64: FillTyped<double>(v, n, p); break;
  }
  return out;
}

template <typename V>
Array TypedScalar(V v, DType dtype, bool weak) {
  return FromValuesImpl(&v, 1, Shape{}, dtype, weak);
}

Array FloatScalar(double v, DType dtype, bool weak) { return TypedScalar(v, dtype, weak); }

}  // namespace

namespace internal {
Array FromDoubles(const std::vector<double>& v, const Shape& shape, DType dtype, bool weak) {
  return FromValuesImpl(v.data(), static_cast<int64_t>(v.size()), shape, dtype, weak);
}
Array FromInt64s(const std::vector<int64_t>& v, const Shape& shape, DType dtype, bool weak) {
  return FromValuesImpl(v.data(), static_cast<int64_t>(v.size()), shape, dtype, weak);
}
Array ScalarOf(double v, DType dtype, bool weak) { return TypedScalar(v, dtype, weak); }
Array ScalarOf(int64_t v, DType dtype, bool weak) { return TypedScalar(v, dtype, weak); }
}  // namespace internal

TypeAndWeak ArrayLike::type() const {
  switch (kind_) {
    case Kind::kArray: return {array_.dtype(), array_.weak_type()};
    case Kind::kBool: return {bool_, false};
    case Kind::kInt:
    case Kind::kUInt: return {int32, true};
    case Kind::kFloat: return {float32, true};
  }
  return {float32, true};
}

Shape ArrayLike::shape() const { return is_array() ? array_.shape() : Shape{}; }

double ArrayLike::float_value() const {
  switch (kind_) {
    case Kind::kFloat: return f_;
    case Kind::kUInt: return static_cast<double>(u_);
    case Kind::kInt:
    case Kind::kBool: return static_cast<double>(i_);
    case Kind::kArray: return array_.item<double>();
  }
  return 0;
}

Array ArrayLike::as(DType dtype, bool weak) const {
  switch (kind_) {
    case Kind::kArray:
      if (array_.dtype() == dtype && array_.weak_type() == weak) return array_;
      return lax::convert_element_type(array_, dtype, weak);
    case Kind::kBool: return TypedScalar(i_, dtype, weak);
    case Kind::kInt: return TypedScalar(i_, dtype, weak);
    case Kind::kUInt: return TypedScalar(u_, dtype, weak);
    case Kind::kFloat: return FloatScalar(f_, dtype, weak);
  }
  return array_;
}

Array ArrayLike::to_array() const {
  if (is_array()) return array_;
  const TypeAndWeak t = type();
  return as(t.dtype, t.weak);
}

TypeAndWeak result_type_weak(const std::vector<ArrayLike>& args) {
  if (args.empty()) throw ValueError("[result_type] at least one array or dtype is required");
  TypeAndWeak acc = args[0].type();
  for (size_t i = 1; i < args.size(); ++i) acc = PromoteWeak(acc, args[i].type());
  return acc;
}
TypeAndWeak result_type_weak(std::initializer_list<ArrayLike> args) {
  return result_type_weak(std::vector<ArrayLike>(args));
}
DType result_type(const std::vector<ArrayLike>& args) { return result_type_weak(args).dtype; }
DType result_type(std::initializer_list<ArrayLike> args) { return result_type_weak(args).dtype; }

TypeAndWeak to_inexact(TypeAndWeak t) {
  if (IsFloating(t.dtype)) return t;
  return {promote_types(t.dtype, float32), t.weak};
}

DType promote_integers_dtype(DType d) {
  if (IsBool(d)) return int32;
  if (IsSignedInt(d) && ItemSize(d) < 4) return int32;
  if (IsUnsignedInt(d) && ItemSize(d) < 4) return uint32;
  return d;
}

Shape broadcast_shapes(const Shape& a, const Shape& b, std::string_view op) {
  const size_t n = std::max(a.size(), b.size());
  Shape out(n);
  for (size_t i = 0; i < n; ++i) {
    const int64_t da = i < n - a.size() ? 1 : a[i - (n - a.size())];
    const int64_t db = i < n - b.size() ? 1 : b[i - (n - b.size())];
    if (da == db || db == 1) {
      out[i] = da;
    } else if (da == 1) {
      out[i] = db;
    } else {
      ThrowOpError<ShapeError>(op, "operands could not be broadcast together with shapes ", ShapeToString(a), " ",
                               ShapeToString(b));
    }
  }
  return out;
}

Shape broadcast_shapes(const std::vector<Shape>& shapes, std::string_view op) {
  Shape out;
  for (const Shape& s : shapes) out = broadcast_shapes(out, s, op);
  return out;
}

Array broadcast_to(const Array& x, const Shape& shape) {
  const Shape& s = x.shape();
  if (s == shape) return x;
  const int64_t lead = static_cast<int64_t>(shape.size()) - x.ndim();
  bool ok = lead >= 0;
  for (int64_t i = 0; ok && i < x.ndim(); ++i) {
    ok = s[static_cast<size_t>(i)] == 1 || s[static_cast<size_t>(i)] == shape[static_cast<size_t>(lead + i)];
  }
  if (!ok) {
    ThrowOpError<ShapeError>("broadcast_to", "cannot broadcast ", x.aval().str(), " to shape ", ShapeToString(shape));
  }
  std::vector<int64_t> dims(static_cast<size_t>(x.ndim()));
  for (int64_t i = 0; i < x.ndim(); ++i) dims[static_cast<size_t>(i)] = lead + i;
  return lax::broadcast_in_dim(x, shape, dims);
}

namespace {
std::vector<Array> ConvertAndBroadcast(std::string_view op, const std::vector<ArrayLike>& args, TypeAndWeak t,
                                       bool broadcast) {
  std::vector<Array> out;
  out.reserve(args.size());
  Shape shape;
  if (broadcast) {
    for (const ArrayLike& a : args) shape = broadcast_shapes(shape, a.shape(), op);
  }
  bool reshaped = false;
  for (const ArrayLike& a : args) {
    out.push_back(a.as(t.dtype, t.weak));
    reshaped |= broadcast && out.back().shape() != shape;
  }
  if (!reshaped) return out;
  // Inside a shard_map body, operands agree on their varying axes before the broadcast (a
  // bias is pvary'd, not its broadcast), as lax's binary op would make them after it.
  JoinOperandVma(lax::kBroadcastInDim, &out);
  for (Array& x : out) {
    if (x.shape() != shape) x = broadcast_to(x, shape);
  }
  return out;
}
}  // namespace

std::vector<Array> promote_args(std::string_view op, const std::vector<ArrayLike>& args) {
  return ConvertAndBroadcast(op, args, result_type_weak(args), true);
}

std::vector<Array> promote_args_inexact(std::string_view op, const std::vector<ArrayLike>& args) {
  return ConvertAndBroadcast(op, args, to_inexact(result_type_weak(args)), true);
}

std::vector<Array> promote_dtypes(const std::vector<ArrayLike>& args) {
  return ConvertAndBroadcast("promote_dtypes", args, result_type_weak(args), false);
}

}  // namespace jx::numpy
