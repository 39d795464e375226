#include "jx/transforms/api.h"

#include <algorithm>

namespace jx::api_internal {

std::vector<FlatArg> Substitute(const std::vector<FlatArg>& flat, absl::Span<const int> selected,
                                absl::Span<const Array> leaves) {
  std::vector<FlatArg> out = flat;
  size_t k = 0;
  for (int i : selected) {
    for (Array& l : out[static_cast<size_t>(i)].leaves) l = leaves[k++];
  }
  return out;
}

void CheckArgnums(absl::Span<const int> selected, size_t num_args) {
  for (int i : selected) {
    if (i < 0 || static_cast<size_t>(i) >= num_args) {
      throw ValueError(StrCat("grad: argnums entry ", i, " is out of range for a function called with ", num_args,
                              " positional arguments"));
    }
  }
}

std::vector<Array> DiffLeaves(const std::vector<FlatArg>& flat, absl::Span<const int> selected,
                              std::string_view transform) {
  std::vector<Array> out;
  for (int i : selected) {
    const FlatArg& a = flat[static_cast<size_t>(i)];
    for (size_t k = 0; k < a.leaves.size(); ++k) {
      if (!IsFloating(a.leaves[k].dtype())) {
        throw TypeError(StrCat(transform, " requires real-valued inputs (a floating-point dtype), but argument ", i,
                               a.def.IsLeaf() ? "" : StrCat(" at ", a.def.KeyPath(k)), " has type ",
                               a.leaves[k].aval().str(),
                               ". For integer inputs use vjp, or convert the input to a float dtype."));
      }
      out.push_back(a.leaves[k]);
    }
  }
  return out;
}

void CheckScalarOutput(const Array& out, std::string_view transform) {
  if (out.ndim() != 0 || !IsFloating(out.dtype())) {
    throw TypeError(StrCat(transform, " requires a real-valued scalar output (a 0-d floating-point Array), got ",
                           out.aval().str(), ". For vector outputs use vjp or jacrev."));
  }
}

namespace {
// A cotangent typed as its primal: weakly typed for a weak primal (a C++ scalar argument), as
// JAX's grad(f)(2.0) gives a weak float32.
Array WeakLike(const Array& primal, const Array& ct) {
  if (!primal.weak_type() || !ct.defined() || ct.weak_type() || ct.dtype() != primal.dtype()) return ct;
  static const Primitive kConvert = Primitive::Intern("convert_element_type");
  return Bind1(kConvert, {ct}, ParamMap{{"new_dtype", ct.dtype()}, {"sharding", ParamNone{}}, {"weak_type", true}});
}
}  // namespace

std::vector<std::vector<Array>> SplitPerArg(const std::vector<FlatArg>& flat, absl::Span<const int> selected,
                                            const Arrays& cts) {
  std::vector<std::vector<Array>> out;
  size_t k = 0;
  for (int i : selected) {
    const std::vector<Array>& primals = flat[static_cast<size_t>(i)].leaves;
    std::vector<Array>& arg_cts = out.emplace_back();
    for (const Array& primal : primals) arg_cts.push_back(WeakLike(primal, cts[k++]));
  }
  return out;
}

namespace {
// True if `prefix` is `path` or a key-path prefix of it (followed by "." or "[").
bool IsPathPrefix(std::string_view prefix, std::string_view path) {
  if (prefix.size() > path.size() || path.substr(0, prefix.size()) != prefix) return false;
  return prefix.size() == path.size() || prefix.empty() || path[prefix.size()] == '.' || path[prefix.size()] == '[';
}


// The axis an entry gives the leaf at `path` of the subtree it covers; `what` names the
// subtree in errors ("in_axes for argument 1", "out_axes for output 0").
int64_t EntryAxis(const AxisSpec& entry, const std::string& path, std::string_view what) {
  if (const auto* axis = std::get_if<std::optional<int64_t>>(&entry)) return *axis ? **axis : kNotMapped;
  const std::pair<std::string, std::optional<int64_t>>* best = nullptr;
  for (const auto& e : std::get<axes_by_path>(entry).entries) {
    if (IsPathPrefix(e.first, path) && (best == nullptr || e.first.size() > best->first.size())) best = &e;
  }
  if (best == nullptr) {
    throw ValueError(StrCat("vmap ", what, " has no entry covering its leaf at ", path.empty() ? "the root" : path,
                            " (axes_by_path keys are key paths such as \".w\" or \".layers[0]\")"));
  }
  return best->second ? *best->second : kNotMapped;
}
}  // namespace

int64_t LeafAxis(const AxisSpec& entry, const FlatArg& flat, size_t arg, size_t leaf) {
  return EntryAxis(entry, flat.def.KeyPath(leaf), StrCat("in_axes for argument ", arg));
}

std::vector<int64_t> ResolveOutAxes(const std::vector<AxisSpec>& outs, const tree::TreeDef& out_def) {
  std::vector<int64_t> axes;
  if (outs.size() == 1) {
    for (size_t j = 0; j < out_def.num_leaves(); ++j) axes.push_back(EntryAxis(outs[0], out_def.KeyPath(j), "out_axes"));
    return axes;
  }
  if (out_def.IsLeaf() || outs.size() != out_def.num_children()) {
    throw ValueError(StrCat("vmap out_axes must be a prefix of the output pytree: it has ", outs.size(),
                            " entries but the output ", out_def.ToString(), " has ",
                            out_def.IsLeaf() ? 0 : out_def.num_children(), " children"));
  }
  const std::vector<tree::TreeDef> children = out_def.Children();
  for (size_t i = 0; i < children.size(); ++i) {
    for (size_t j = 0; j < children[i].num_leaves(); ++j) {
      axes.push_back(EntryAxis(outs[i], children[i].KeyPath(j), StrCat("out_axes for output ", i)));
    }
  }
  return axes;
}

void CheckSlotType(const std::type_info& slot, const std::type_info& arg, absl::Span<const int> indices, size_t k,
                   std::string_view transform) {
  if (slot == arg) return;
  std::string spelling;
  for (int i : indices) spelling += StrCat(spelling.empty() ? "" : ", ", i);
  throw TypeError(StrCat(transform, ": argnums selects argument ", indices[k], " in position ", k,
                         ", and the arguments have different C++ types, so the result's type is not known at "
                         "compile time (runtime argnums over arguments of different types must be 0, 1, ... in "
                         "order). Give the indices at compile time: jx::", transform.substr(0, transform.find('(')),
                         "<", spelling, ">(f)"));
}

std::vector<std::string> ArgLabels(const std::vector<FlatArg>& flat) {
  std::vector<std::string> labels;
  for (size_t i = 0; i < flat.size(); ++i) {
    for (size_t j = 0; j < flat[i].leaves.size(); ++j) {
      const std::string path = flat[i].def.KeyPath(j);
      labels.push_back(path.empty() ? StrCat("argument ", i) : StrCat("argument ", i, " at ", path));
    }
  }
  return labels;
}

}  // namespace jx::api_internal
