#include "jx/transforms/vmap.h"

#include <algorithm>
#include <iterator>

#include "jx/core/errors.h"
#include "jx/core/str_util.h"
#include "jx/transforms/ad_util.h"

namespace jx {

std::string BatchTracer::Provenance() const {
  if (!sources_ || sources_->indices.empty()) {
    return value_.is_tracer() ? value_.impl()->Provenance() : " It is traced by " + owner_name() + ".";
  }
  std::string names;
  for (int i : sources_->indices) StrAppend(&names, names.empty() ? "" : ", ", (*sources_->labels)[i]);
  return StrCat(" It is traced by ", owner_name(), " and depends on the value of ", names,
                " (a batched value has one value per example).");
}

Array BatchInterpreter::Wrap(Array value, int64_t batch_dim, BatchSources sources) const {
  if (batch_dim == kNotMapped) return value;
  // The per-example type: the value's without the batch dimension, keeping its varying
  // manual axes (inside shard_map) and the other dimensions' shardings.
  ShapedArray aval = value.aval();
  aval.shape.erase(aval.shape.begin() + batch_dim);
  if (aval.sharded_in_type()) aval.spec.erase(aval.spec.begin() + batch_dim);
  return Array(std::make_shared<BatchTracer>(std::move(aval), *this, std::move(value), batch_dim, std::move(sources)));
}

namespace {
// The union of two sorted source lists (sharing a pointer when one covers the other).
BatchSources MergeSources(const BatchSources& a, const BatchSources& b) {
  if (!a || a == b) return b;
  if (!b) return a;
  BatchSourceSet merged{a->labels, {}};
  std::set_union(a->indices.begin(), a->indices.end(), b->indices.begin(), b->indices.end(),
                 std::back_inserter(merged.indices));
  if (merged.indices.size() == a->indices.size()) return a;
  if (merged.indices.size() == b->indices.size()) return b;
  return std::make_shared<const BatchSourceSet>(std::move(merged));
}
}  // namespace

std::pair<Array, int64_t> BatchInterpreter::Unwrap(const Array& x) const {
  if (Owns(x)) {
    const auto& t = static_cast<const BatchTracer&>(*x.impl());
    return {t.value(), t.batch_dim()};
  }
  return {x, kNotMapped};
}

Arrays BatchInterpreter::Process(Primitive p, absl::Span<const Array> inputs, const ParamMap& params) {
  // Inline for the usual arities: no heap work per traced equation.
  absl::InlinedVector<Array, 4> values;
  absl::InlinedVector<int64_t, 4> dims;
  bool any_mapped = false;
  BatchSources sources;
  for (size_t i = 0; i < inputs.size(); ++i) {
    CheckNotLeaked(inputs[i], p.name(), i);
    auto [v, d] = Unwrap(inputs[i]);
    any_mapped = any_mapped || d != kNotMapped;
    if (d != kNotMapped) sources = MergeSources(sources, static_cast<const BatchTracer&>(*inputs[i].impl()).sources());
    values.push_back(std::move(v));
    dims.push_back(d);
  }
  ResumeScope down(parent());
  if (!any_mapped) return Bind(p, values, params);
  const PrimitiveRules& rules = GlobalRegistry().Get(p);
  if (!rules.batch) {
    auto it = rules.unsupported.find("batch");
    ThrowOpError<NotImplementedError>(p.name(), "has no batching rule for vmap",
                                      it == rules.unsupported.end() ? "" : ": ",
                                      it == rules.unsupported.end() ? "" : it->second);
  }
  BatchResult r = rules.batch(values, dims, axis_size_, params);
  Arrays outs;
  for (size_t i = 0; i < r.outs.size(); ++i) outs.push_back(Wrap(std::move(r.outs[i]), r.out_dims[i], sources));
  return outs;
}

namespace {
// The size every mapped argument shares (or axis_size), checked: a ValueError names each
// argument by its label (a key path under jx::vmap), its type and the axis mapped.
int64_t MappedAxisSize(absl::Span<const Array> args, std::vector<int64_t>& axes, std::optional<int64_t> axis_size,
                       const std::vector<std::string>& labels) {
  // Distinct sizes in order of first appearance, each with its first argument and a count.
  struct Group {
    int64_t size;
    size_t first;
    int count;
  };
  std::vector<Group> groups;
  for (size_t i = 0; i < args.size(); ++i) {
    if (axes[i] == kNotMapped) continue;
    const int64_t nd = args[i].ndim();
    if (axes[i] < -nd || axes[i] >= nd) {
      throw ValueError(StrCat("vmap was requested to map ", labels[i], " along axis ", axes[i],
                              ", which implies that its rank should be at least ",
                              (axes[i] < 0 ? -axes[i] : axes[i] + 1), ", but is only ", nd, " (its type is ",
                              args[i].aval().str(), ")"));
    }
    if (axes[i] < 0) axes[i] += nd;
    const int64_t n = args[i].shape()[axes[i]];
    auto it = std::find_if(groups.begin(), groups.end(), [n](const Group& g) { return g.size == n; });
    if (it == groups.end()) {
      groups.push_back(Group{n, i, 1});
    } else {
      ++it->count;
    }
  }
  auto describe = [&](const Group& g) {
    return StrCat(g.count == 1 ? "one axis" : StrCat(g.count, " axes"), " had size ", g.size, ": ",
                  g.count == 1 ? "" : "e.g. ", "axis ", axes[g.first], " of ", labels[g.first], " of type ",
                  args[g.first].aval().str());
  };
  if (groups.size() > 1) {
    std::string msg = "vmap got inconsistent sizes for array axes to be mapped: ";
    for (size_t k = 0; k < groups.size(); ++k) StrAppend(&msg, k == 0 ? "" : "; ", describe(groups[k]));
    throw ValueError(msg);
  }
  if (groups.empty()) {
    if (!axis_size) throw ValueError("vmap must have at least one non-None value in in_axes, or an axis_size");
    return *axis_size;
  }
  if (axis_size && *axis_size != groups[0].size) {
    throw ValueError(StrCat("vmap got axis_size=", *axis_size, " but the mapped arguments have size ", groups[0].size,
                            " (", describe(groups[0]), ")"));
  }
  return groups[0].size;
}
}  // namespace

Arrays VmapCallDeferredOutAxes(const std::function<Arrays(absl::Span<const Array>)>& fn, absl::Span<const Array> args,
                const std::vector<int64_t>& in_axes, const std::function<VmapOutAxes()>& out_axes_after_call,
                std::optional<int64_t> axis_size, std::vector<std::string> arg_labels) {
  if (in_axes.size() != args.size()) {
    throw ValueError(StrCat("vmap in_axes has ", in_axes.size(), " entries but the function got ",
                            args.size(), " arguments"));
  }
  if (axis_size && *axis_size < 0) throw ValueError(StrCat("vmap axis_size must be nonnegative, got ", *axis_size));
  if (arg_labels.size() != args.size()) {
    arg_labels.clear();
    for (size_t i = 0; i < args.size(); ++i) arg_labels.push_back(StrCat("input ", i));
  }
  std::vector<int64_t> axes = in_axes;
  const int64_t size = MappedAxisSize(args, axes, axis_size, arg_labels);
  BatchInterpreter batch(size);
  auto labels = std::make_shared<const std::vector<std::string>>(std::move(arg_labels));
  Arrays inner;
  for (size_t i = 0; i < args.size(); ++i) {
    auto source = std::make_shared<const BatchSourceSet>(BatchSourceSet{labels, {static_cast<int>(i)}});
    inner.push_back(batch.Wrap(args[i], axes[i], std::move(source)));
  }
  Arrays outs;
  {
    InterpreterScope scope(&batch);
    outs = fn(inner);
  }
  const VmapOutAxes spec = out_axes_after_call();
  const std::vector<int64_t>& out_axes = spec.axes;
  if (out_axes.size() != outs.size() && out_axes.size() != 1) {
    throw ValueError(StrCat("vmap out_axes has ", out_axes.size(), " entries but the function returned ",
                            outs.size(), " outputs"));
  }
  // "output at [0].w" from the output's key paths, else the flat index.
  auto output = [&](size_t i) {
    const std::vector<std::string> paths = spec.key_paths ? spec.key_paths() : std::vector<std::string>{};
    if (paths.size() != outs.size()) return StrCat("output leaf ", i);
    return paths[i].empty() ? std::string("output") : StrCat("output at ", paths[i]);
  };
  Arrays result;
  for (size_t i = 0; i < outs.size(); ++i) {
    auto [v, d] = batch.Unwrap(outs[i]);
    int64_t out_axis = out_axes.size() == 1 ? out_axes[0] : out_axes[i];
    const int64_t nd = v.ndim() + (d == kNotMapped ? 1 : 0);
    if (out_axis == kNotMapped) {
      if (d != kNotMapped) {
        throw ValueError(StrCat("vmap has mapped output but out_axes is None for ", output(i), " of type ",
                                outs[i].aval().str(), " (it depends on a mapped argument, so it has one value per "
                                "example)"));
      }
      result.push_back(v);
      continue;
    }
    if (out_axis < 0) out_axis += nd;
    if (out_axis < 0 || out_axis >= nd) {
      throw ValueError(StrCat("vmap out_axes ", out_axes.size() == 1 ? out_axes[0] : out_axes[i],
                              " is out of bounds for ", output(i), " of rank ", nd, " (counting the mapped axis)"));
    }
    result.push_back(d == kNotMapped ? BroadcastAxis(v, size, out_axis) : MoveAxis(v, d, out_axis));
  }
  return result;
}

Arrays VmapCall(const std::function<Arrays(absl::Span<const Array>)>& fn, absl::Span<const Array> args,
                const std::vector<int64_t>& in_axes, const std::vector<int64_t>& out_axes,
                std::optional<int64_t> axis_size) {
  return VmapCallDeferredOutAxes(fn, args, in_axes, [&] { return VmapOutAxes(out_axes); }, axis_size);
}

}  // namespace jx
