// Type conversion primitives: convert_element_type, bitcast_convert_type, reduce_precision.
//
// convert_element_type runs the kernel library's conversions (kernels/elementwise.h, shared
// with the CPU backend), with XLA's CPU semantics: float -> int truncates toward zero,
// saturates out-of-range values and maps NaN to 0; any -> bool is x != 0 (NaN -> true);
// int -> int wraps; conversions into 16-bit floats round to nearest even (f64 -> bf16 goes
// through f32 as XLA does; f64 -> f16 rounds once).
#include "jx/lax/convert_ops.h"

#include <bit>
#include <cmath>
#include <cstring>
#include <limits>

#include "jx/lax/kernels/dispatch.h"
#include "jx/lax/kernels/elementwise.h"
#include "jx/lax/op_util.h"
#include "jx/lax/primitives.h"
#include "jx/transforms/ad_util.h"
#include "jx/transforms/jvp.h"

namespace jx {
namespace lax {

using internal::BindOp1;

Array convert_element_type(const Array& x, DType new_dtype, bool weak_type) {
  // As JAX: converting to the operand's own type is the identity.
  if (x.defined() && x.dtype() == new_dtype && x.weak_type() == weak_type) return x;
  return BindOp1(kConvertElementType, {x},
                 ParamMap{{"new_dtype", new_dtype}, {"sharding", ParamNone{}}, {"weak_type", weak_type}});
}

Array bitcast_convert_type(const Array& x, DType new_dtype) {
  return BindOp1(kBitcastConvertType, {x}, ParamMap{{"new_dtype", new_dtype}});
}

Array reduce_precision(const Array& x, int exponent_bits, int mantissa_bits) {
  return BindOp1(kReducePrecision, {x}, ParamMap{{"exponent_bits", exponent_bits}, {"mantissa_bits", mantissa_bits}});
}

namespace internal {
namespace {

using kernels::ComputeType;
using kernels::kIsFloat;
using kernels::kIsHalf;

void DefineConvertElementType(Registry& r) {
  PrimitiveRules& rules = r.Define(kConvertElementType);
  rules.abstract_eval = [](InAvals in, const ParamMap& params) -> Avals {
    CheckArity("convert_element_type", in, 1);
    return OneAval(ShapedArray{in[0]->shape, params.GetDType("new_dtype"), params.GetBool("weak_type")});
  };
  rules.impl = [](absl::Span<const Array> in, const ParamMap&, absl::Span<const ShapedArray> out_avals) -> Arrays {
    Array out = Array::Empty(out_avals[0]);
    const int64_t n = out.size();
    if (n == 0) return OneArray(std::move(out));
    // The kernel library's conversion (the CPU backend runs the same one).
    const void* src = in[0].data();
    kernels::RunElementwise(kernels::FindConvertFn(in[0].dtype(), out.dtype()), 1, &src, 0, ItemSize(in[0].dtype()),
                            out.mutable_data(), ItemSize(out.dtype()), n, kernels::kParallelGrain);
    return OneArray(std::move(out));
  };
}

void DefineBitcastConvertType(Registry& r) {
  PrimitiveRules& rules = r.Define(kBitcastConvertType);
  rules.abstract_eval = [](InAvals in, const ParamMap& params) -> Avals {
    constexpr std::string_view op = "bitcast_convert_type";
    CheckArity(op, in, 1);
    const ShapedArray& x = *in[0];
    const DType to = params.GetDType("new_dtype");
    if (IsBool(x.dtype) || IsBool(to)) {
      ThrowOpError<TypeError>(op, "does not support bool (its only valid bit patterns are 0 and 1), got ", x.str(),
                              " -> ", dtype_name(to));
    }
    const int64_t from_size = ItemSize(x.dtype), to_size = ItemSize(to);
    Shape shape = x.shape;
    if (from_size > to_size) {
      shape.push_back(from_size / to_size);  // narrowing: a trailing dimension of the ratio
    } else if (from_size < to_size) {
      const int64_t ratio = to_size / from_size;
      if (x.ndim() == 0 || x.shape.back() != ratio) {
        ThrowOpError<ShapeError>(op, "converting ", x.str(), " to ", dtype_name(to), " needs a last dimension of ",
                                 ratio, " (the ratio of the element sizes), got shape ", ShapeToString(x.shape));
      }
      shape.pop_back();  // widening consumes the last dimension
    }
    return OneAval(ShapedArray{std::move(shape), to, false});
  };
  rules.impl = [](absl::Span<const Array> in, const ParamMap&, absl::Span<const ShapedArray> out_avals) -> Arrays {
    Array out = Array::Empty(out_avals[0]);
    const auto* src = static_cast<const char*>(in[0].data());
    auto* dst = static_cast<char*>(out.mutable_data());
    kernels::ForChunks(out.nbytes(), [&](int64_t b, int64_t e) { std::memcpy(dst + b, src + b, e - b); },
                       kernels::kParallelGrain * 4);
    return OneArray(std::move(out));
  };
}

void DefineReducePrecision(Registry& r) {
  PrimitiveRules& rules = r.Define(kReducePrecision);
  rules.abstract_eval = [](InAvals in, const ParamMap& params) -> Avals {
    constexpr std::string_view op = "reduce_precision";
    CheckArity(op, in, 1);
    CheckDTypeClass(op, in, DTypeClass::kFloating);
    const int64_t e = params.GetInt("exponent_bits"), m = params.GetInt("mantissa_bits");
    if (e < 1 || m < 0) {
      ThrowOpError<ValueError>(op, "needs exponent_bits >= 1 and mantissa_bits >= 0, got exponent_bits=", e,
                               " mantissa_bits=", m, " for ", in[0]->str());
    }
    return OneAval(*in[0]);
  };
  rules.impl = [](absl::Span<const Array> in, const ParamMap& params, absl::Span<const ShapedArray> out_avals) -> Arrays {
    Array out = Array::Empty(out_avals[0]);
    const int64_t n = out.size();
    // The kernel library's (shared with jit); parameters wider than the type change nothing.
    const kernels::ReducePrecisionBits bits{
        static_cast<int32_t>(std::min<int64_t>(params.GetInt("exponent_bits"), 64)),
        static_cast<int32_t>(std::min<int64_t>(params.GetInt("mantissa_bits"), 64))};
    const void* args[] = {in[0].data(), &bits};
    const int64_t esize = static_cast<int64_t>(ItemSize(out.dtype()));
    kernels::RunElementwise(kernels::FindReducePrecisionFn(out.dtype()), 2, args, /*scalar_operands=*/2, esize,
                            out.mutable_data(), esize, n, kernels::kParallelGrain);
    return OneArray(std::move(out));
  };
}

// ---- jvp, transpose and batching rules.

using Span = absl::Span<const Array>;
const char kNonlinear[] = "not linear: reverse mode transposes the linear ops of its jvp";

// Batching for the elementwise conversions: bind on the batched operand as it is; the
// output keeps the batch dimension where it was (bitcast only adds or drops a trailing one).
BatchRule BatchInPlace(Primitive p) {
  return [p](Span args, absl::Span<const int64_t> dims, int64_t, const ParamMap& params) {
    Array x = args[0];
    int64_t dim = dims[0];
    // A trailing batch dimension would be read as bitcast's element-size dimension.
    if (p == kBitcastConvertType && dim == x.ndim() - 1) {
      x = MoveAxis(x, dim, 0);
      dim = 0;
    }
    return BatchResult{BindOp(p, {x}, params), {dim}};
  };
}

// convert_element_type: the tangent converted alike between float types; an integer or bool
// output (or input) has a zero tangent. Transpose: the cotangent converted back to the
// operand's dtype and weak type.
void DefineConvertElementTypeRules(Registry& r) {
  PrimitiveRules& rules = r.Define(kConvertElementType);
  rules.jvp = [](Span primals, Span tangents, const ParamMap& params) {
    Array out = BindOp(kConvertElementType, primals, params)[0];
    if (!tangents[0].defined() || !HasTangentSpace(out.dtype())) return JvpResult{{std::move(out)}, {Array()}};
    Array t = BindOp(kConvertElementType, tangents, params)[0];
    return JvpResult{{std::move(out)}, {std::move(t)}};
  };
  rules.transpose = [](Span cts, absl::Span<const TransposeArg> args, const ParamMap&) {
    if (!cts[0].defined()) return Arrays{Array()};
    const ShapedArray& operand = args[0].aval;
    return Arrays{convert_element_type(cts[0], operand.dtype, operand.weak_type)};
  };
  rules.batch = BatchInPlace(kConvertElementType);
}

// bitcast_convert_type has no derivative (as in JAX), except where it is the identity; integer
// outputs, and integer inputs (always zero tangents), give zero tangents.
void DefineBitcastConvertTypeRules(Registry& r) {
  PrimitiveRules& rules = r.Define(kBitcastConvertType);
  rules.jvp = [](Span primals, Span tangents, const ParamMap& params) {
    Array out = BindOp(kBitcastConvertType, primals, params)[0];
    if (!tangents[0].defined() || !HasTangentSpace(out.dtype())) return JvpResult{{std::move(out)}, {Array()}};
    if (out.dtype() == primals[0].dtype()) return JvpResult{{std::move(out)}, {tangents[0]}};
    ThrowOpError<NotImplementedError>("bitcast_convert_type", "is not differentiable: reinterpreting the bits of ",
                                      primals[0].aval().str(), " as ", dtype_name(out.dtype()),
                                      " has no meaningful derivative");
  };
  rules.unsupported["transpose"] = kNonlinear;
  rules.batch = BatchInPlace(kBitcastConvertType);
}

// reduce_precision is treated as linear (JAX's deflinear): the tangent and the cotangent are
// rounded the same way.
void DefineReducePrecisionRules(Registry& r) {
  PrimitiveRules& rules = r.Define(kReducePrecision);
  rules.jvp = [](Span primals, Span tangents, const ParamMap& params) {
    Array out = BindOp(kReducePrecision, primals, params)[0];
    Array t = tangents[0].defined() ? BindOp(kReducePrecision, tangents, params)[0] : Array();
    return JvpResult{{std::move(out)}, {std::move(t)}};
  };
  rules.transpose = [](Span cts, absl::Span<const TransposeArg>, const ParamMap& params) {
    return Arrays{cts[0].defined() ? BindOp(kReducePrecision, cts, params)[0] : Array()};
  };
  rules.batch = BatchInPlace(kReducePrecision);
}

}  // namespace

void RegisterConvertOps(Registry& r) {
  DefineConvertElementType(r);
  DefineBitcastConvertType(r);
  DefineReducePrecision(r);
  DefineConvertElementTypeRules(r);
  DefineBitcastConvertTypeRules(r);
  DefineReducePrecisionRules(r);
}

}  // namespace internal
}  // namespace lax
}  // namespace jx
