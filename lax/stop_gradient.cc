#include "jx/lax/stop_gradient.h"

#include "jx/core/registry.h"
#include "jx/lax/op_util.h"
#include "jx/lax/registration.h"

namespace jx::lax {

Array stop_gradient(const Array& x) { return internal::BindOp1(kStopGradient, {x}); }

namespace internal {

void RegisterStopGradient(Registry& r) {
  PrimitiveRules& rules = r.Define(kStopGradient);
  rules.abstract_eval = [](InAvals in, const ParamMap&) { return Avals{*in[0]}; };
  rules.impl = [](absl::Span<const Array> in, const ParamMap&, absl::Span<const ShapedArray>) {
    return Arrays{in[0]};
  };
  // The tangent is a symbolic zero, so nothing downstream of y is differentiated through it.
  rules.jvp = [](absl::Span<const Array> primals, absl::Span<const Array>, const ParamMap&) {
    return JvpResult{{stop_gradient(primals[0])}, {Array()}};
  };
  rules.unsupported["transpose"] = "not linear: its jvp is zero, so no linear equation reaches it";
  rules.batch = [](absl::Span<const Array> args, absl::Span<const int64_t> dims, int64_t, const ParamMap&) {
    return BatchResult{{stop_gradient(args[0])}, {dims[0]}};
  };
}

}  // namespace internal
}  // namespace jx::lax
