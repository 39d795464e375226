// Unary elementwise primitives: abstract eval, CPU kernels (Eigen packet math over TBB
// chunks), registration.
#include "jx/lax/unary_ops.h"

#include "jx/lax/kernels/dispatch.h"
#include "jx/lax/op_util.h"
#include "jx/lax/primitives.h"

namespace jx::lax {

using internal::BindOp1;

Array neg(const Array& x) { return BindOp1(kNeg, {x}); }
Array exp(const Array& x) { return BindOp1(kExp, {x}); }
Array sin(const Array& x) { return BindOp1(kSin, {x}); }
Array tanh(const Array& x) { return BindOp1(kTanh, {x}); }

namespace internal {
namespace {

// Registers an elementwise unary primitive whose output has the input's aval. expr maps an
// Eigen array expression; it is instantiated for every dtype in `accepted`.
template <DTypeClass kAccepted, typename Expr>
void DefineSameTypeUnary(Registry& r, Primitive p, Expr expr) {
  constexpr DTypeClass accepted = kAccepted;
  PrimitiveRules& rules = r.Define(p);
  rules.abstract_eval = [p, accepted](InAvals in, const ParamMap&) -> Avals {
    CheckArity(p.name(), in, 1);
    CheckDTypeClass(p.name(), in, accepted);
    return {*in[0]};
  };
  rules.impl = [expr](absl::Span<const Array> in, const ParamMap&,
                                absl::Span<const ShapedArray> out_avals) -> Arrays {
    Array out = Array::Empty(out_avals[0]);
    kernels::DispatchDType(in[0].dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      if constexpr (InClass(kernels::KernelDType<T>(), kAccepted)) {
        kernels::UnaryMap(kernels::Data<T>(in[0]), kernels::MutableData<T>(out), out.size(), expr);
      }
    });
    return {out};
  };
}

}  // namespace

void RegisterUnaryOps(Registry& r) {
  DefineSameTypeUnary<DTypeClass::kNumeric>(r, kNeg, [](const auto& x) { return -x; });
  DefineSameTypeUnary<DTypeClass::kFloating>(r, kExp, [](const auto& x) { return x.exp(); });
  DefineSameTypeUnary<DTypeClass::kFloating>(r, kSin, [](const auto& x) { return x.sin(); });
  DefineSameTypeUnary<DTypeClass::kFloating>(r, kTanh, [](const auto& x) { return x.tanh(); });
}

}  // namespace internal
}  // namespace jx::lax
