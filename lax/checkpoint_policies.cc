// The policies read equations' params, dot_general's dimension numbers among them: they live
// above transforms (which only applies a policy) next to the primitives they look at.
#include "jx/lax/checkpoint_policies.h"

#include <algorithm>

#include "absl/strings/str_join.h"
#include "jx/lax/dot_general.h"
#include "jx/lax/primitives.h"

namespace jx::policies {
namespace {

bool Contains(const std::vector<std::string>& names, const std::string& name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

std::string Quoted(const std::vector<std::string>& names) {
  return StrCat("(", absl::StrJoin(names, ", ", [](std::string* out, const std::string& n) { out->append("'" + n + "'"); }),
                ")");
}

}  // namespace

const CheckpointPolicy everything_saveable{"everything_saveable",
                                           [](Primitive, absl::Span<const ShapedArray>, const ParamMap&) { return true; }};
const CheckpointPolicy nothing_saveable{"nothing_saveable",
                                        [](Primitive, absl::Span<const ShapedArray>, const ParamMap&) { return false; }};
const CheckpointPolicy dots_saveable{"dots_saveable", [](Primitive p, absl::Span<const ShapedArray>, const ParamMap&) {
                                       return p == lax::kDotGeneral;
                                     }};
const CheckpointPolicy checkpoint_dots{"checkpoint_dots", dots_saveable.saveable};
const CheckpointPolicy dots_with_no_batch_dims_saveable{
    "dots_with_no_batch_dims_saveable", [](Primitive p, absl::Span<const ShapedArray>, const ParamMap& params) {
      return p == lax::kDotGeneral && lax::internal::GetDotDimensionNumbers(params).lhs_batch_dims.empty();
    }};

CheckpointPolicy save_only_these_names(std::vector<std::string> names) {
  std::string label = StrCat("save_only_these_names", Quoted(names));
  return {std::move(label), [names = std::move(names)](Primitive p, absl::Span<const ShapedArray>, const ParamMap& params) {
            const std::string* name = CheckpointNameOf(p, params);
            return name != nullptr && Contains(names, *name);
          }};
}

CheckpointPolicy save_any_names_but_these(std::vector<std::string> names) {
  std::string label = StrCat("save_any_names_but_these", Quoted(names));
  return {std::move(label), [names = std::move(names)](Primitive p, absl::Span<const ShapedArray>, const ParamMap& params) {
            const std::string* name = CheckpointNameOf(p, params);
            return name != nullptr && !Contains(names, *name);
          }};
}

}  // namespace jx::policies
