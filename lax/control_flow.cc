#include "jx/lax/control_flow.h"

#include "jx/core/registry.h"

namespace jx::lax {
namespace internal {

void RegisterCond(Registry& r);
void RegisterWhile(Registry& r);
void RegisterScan(Registry& r);

void RegisterControlFlow(Registry& r) {
  RegisterCond(r);
  RegisterWhile(r);
  RegisterScan(r);
}

}  // namespace internal

namespace control_flow_internal {

void CheckSameStructure(const tree::TreeDef& a, const tree::TreeDef& b, std::string_view op, std::string_view what) {
  if (!(a == b)) throw TypeError(StrCat(op, ": ", what, " have different structures: ", tree::FirstDifference(a, b)));
}

void CheckScanOptions(const ScanOptions& options) {
  if (options.unroll < 1) throw ValueError(StrCat("scan: unroll must be at least 1, got ", options.unroll));
}

}  // namespace control_flow_internal
}  // namespace jx::lax
