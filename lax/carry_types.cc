#include "jx/lax/carry_types.h"

#include <string>

#include "jx/core/dtype.h"
#include "jx/core/errors.h"
#include "jx/core/str_util.h"
#include "jx/lax/convert_ops.h"
#include "jx/transforms/jaxpr_util.h"

namespace jx::lax::internal {

// So `scan(f, 0, xs)` with a float body carries float32, as in JAX.
bool PromoteWeakCarry(std::vector<Array>& carry, const std::vector<ShapedArray>& out) {
  if (out.size() < carry.size()) return false;
  bool changed = false;
  for (size_t k = 0; k < carry.size(); ++k) {
    const ShapedArray& in = carry[k].aval();
    if (!in.weak_type || in.shape != out[k].shape || in.dtype == out[k].dtype) continue;
    const TypeAndWeak t = PromoteWeak({in.dtype, true}, {out[k].dtype, out[k].weak_type});
    carry[k] = convert_element_type(carry[k], t.dtype, /*weak_type=*/false);
    changed = true;
  }
  return changed;
}

void CheckCarryTypes(std::string_view name, const std::vector<ShapedArray>& in, const std::vector<ShapedArray>& out) {
  if (out.size() < in.size()) {
    throw TypeError(StrCat(name, " function returns ", out.size(), " outputs but the carry has ", in.size(),
                           " leaves"));
  }
  std::string differences;
  for (size_t k = 0; k < in.size(); ++k) {
    if (SameShapeDType(in[k], out[k])) continue;
    const char* what = in[k].shape != out[k].shape ? (in[k].dtype != out[k].dtype ? "the shapes and dtypes" : "the shapes")
                                                   : "the dtypes";
    StrAppend(&differences, "  * the input carry component ", k, " has type ", in[k].str(),
              " but the corresponding output carry component has type ", out[k].str(), ", so ", what,
              " do not match\n");
  }
  if (differences.empty()) return;
  throw TypeError(StrCat(name, " function carry input and carry output must have equal types (e.g. shapes and dtypes "
                         "of arrays), but they differ:\n\n", differences,
                         "\nRevise the function so that all output types (e.g. shapes and dtypes) match the "
                         "corresponding input types."));
}

}  // namespace jx::lax::internal
