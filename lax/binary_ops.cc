// Binary elementwise primitives: abstract eval, CPU kernels, registration.
#include "jx/lax/binary_ops.h"

#include "jx/lax/kernels/dispatch.h"
#include "jx/lax/op_util.h"
#include "jx/lax/primitives.h"

namespace jx::lax {

using internal::BindOp1;

Array add(const Array& x, const Array& y) { return BindOp1(kAdd, {x, y}); }
Array mul(const Array& x, const Array& y) { return BindOp1(kMul, {x, y}); }

namespace internal {
namespace {

template <DTypeClass kAccepted, typename Expr>
void DefineSameTypeBinary(Registry& r, Primitive p, Expr expr) {
  PrimitiveRules& rules = r.Define(p);
  rules.abstract_eval = [p](InAvals in, const ParamMap&) -> Avals {
    CheckArity(p.name(), in, 2);
    CheckSameShapes(p.name(), in);
    CheckSameDTypes(p.name(), in);
    CheckDTypeClass(p.name(), in, kAccepted);
    return {ElementwiseResult(in, in[0]->dtype)};
  };
  rules.impl = [expr](absl::Span<const Array> in, const ParamMap&,
                      absl::Span<const ShapedArray> out_avals) -> Arrays {
    Array out = Array::Empty(out_avals[0]);
    kernels::DispatchDType(in[0].dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      if constexpr (InClass(kernels::KernelDType<T>(), kAccepted)) {
        kernels::BinaryMap(kernels::Data<T>(in[0]), kernels::Data<T>(in[1]), kernels::MutableData<T>(out),
                           out.size(), expr);
      }
    });
    return {out};
  };
}

}  // namespace

void RegisterBinaryOps(Registry& r) {
  DefineSameTypeBinary<DTypeClass::kNumeric>(r, kAdd, [](const auto& a, const auto& b) { return a + b; });
  DefineSameTypeBinary<DTypeClass::kNumeric>(r, kMul, [](const auto& a, const auto& b) { return a * b; });
}

}  // namespace internal
}  // namespace jx::lax
