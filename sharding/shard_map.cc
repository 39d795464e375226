// The shard_map transform: checks the specs against the mesh and the arguments, traces f
// on per-device types with the manual axes bound, checks out_specs' replication
// (check_vma) and binds one `shard_map` equation.
#include "jx/sharding/shard_map.h"

#include <algorithm>
#include <mutex>

#include "absl/hash/hash.h"
#include "absl/strings/str_join.h"
#include "jx/core/errors.h"
#include "jx/core/interpreter.h"
#include "jx/core/str_util.h"
#include "jx/core/vma.h"
#include "jx/sharding/collectives_lowering.h"
#include "jx/sharding/manual_context.h"
#include "jx/sharding/shard_map_internal.h"

namespace jx {
namespace shard_map_internal {
namespace {

Param NamesParam(const std::vector<std::string>& names) { return AxisNamesTuple(names); }


bool Contains(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

// JAX's short spec form, P('x', None).
std::string SpecStr(const PartitionSpec& spec) {
  std::string s = spec.ToString();
  const std::string prefix = "PartitionSpec";
  return s.rfind(prefix, 0) == 0 ? "P" + s.substr(prefix.size()) : s;
}

std::string AxisNamesTuple(const Mesh& mesh) {
  std::vector<std::string> q;
  for (const std::string& n : mesh.axis_names()) q.push_back(StrCat("'", n, "'"));
  return StrCat("(", absl::StrJoin(q, ", "), mesh.axis_names().size() == 1 ? ",)" : ")");
}

std::string MeshShapeTuple(const Mesh& mesh) {
  return StrCat("(", absl::StrJoin(mesh.axis_sizes(), ", "), mesh.axis_sizes().size() == 1 ? ",)" : ")");
}

// The manual axes in mesh order.
std::vector<std::string> OrderedByMesh(const Mesh& mesh, const std::vector<std::string>& names) {
  std::vector<std::string> out;
  for (const std::string& n : mesh.axis_names()) {
    if (Contains(names, n)) out.push_back(n);
  }
  return out;
}

// JAX's standard_insert_pvary: the operands of an ordinary primitive are made to vary over
// the same manual axes, pvary bound on those that vary over fewer (Bind's operand hook while
// a body is traced with check_vma, so the rules of transformations inside get it too).
bool InsertPvary(Primitive p, absl::Span<const Array> inputs, Arrays* joined) {
  if (lax::IsCollective(p)) return false;
  const ManualContext* ctx = CurrentManualContext();
  if (ctx == nullptr || !ctx->check_vma) return false;
  std::vector<std::string> all;
  bool differ = false;
  for (const Array& x : inputs) {
    if (!x.defined()) return false;
    if (x.aval().vma != inputs[0].aval().vma) differ = true;
    all.insert(all.end(), x.aval().vma.begin(), x.aval().vma.end());
  }
  if (!differ) return false;
  std::sort(all.begin(), all.end());
  all.erase(std::unique(all.begin(), all.end()), all.end());
  joined->assign(inputs.begin(), inputs.end());
  for (Array& x : *joined) {
    if (x.aval().vma == all) continue;
    // A C++ scalar or other 0-d constant stays a literal: it is the same on every device.
    if (x.is_concrete() && x.ndim() == 0) continue;
    std::vector<std::string> missing;
    for (const std::string& a : all) {
      if (!Contains(x.aval().vma, a)) missing.push_back(a);
    }
    x = Bind1(lax::kPvary, {x}, ParamMap{{"axes", NamesParam(missing)}, {"mesh", Param(ctx->mesh)}});
  }
  return true;
}

// Installs InsertPvary for a scope (restoring the previous hook).
class PvaryHookScope {
 public:
  explicit PvaryHookScope(bool on) : saved_(SetOperandVmaHook(on ? InsertPvary : nullptr)) {}
  ~PvaryHookScope() { SetOperandVmaHook(saved_); }
  PvaryHookScope(const PvaryHookScope&) = delete;
  PvaryHookScope& operator=(const PvaryHookScope&) = delete;

 private:
  OperandVmaHook saved_;
};

void CheckSpecAxes(const PartitionSpec& spec, const Mesh& mesh, const std::vector<std::string>& manual,
                   std::string_view what, size_t index) {
  std::vector<std::string> seen;
  for (const std::string& a : spec.axes()) {
    if (!Contains(mesh.axis_names(), a)) {
      throw ValueError(StrCat("shard_map: ", what, "[", index, "] is ", SpecStr(spec), ", which names axis '", a,
                              "' that the mesh lacks: the mesh has axes ", AxisNamesTuple(mesh)));
    }
    if (!Contains(manual, a)) {
      throw ValueError(StrCat("shard_map: ", what, "[", index, "] is ", SpecStr(spec), ", which names axis '", a,
                              "', not one of the manual axes ", AxisNamesTuple(mesh), " given in axis_names"));
    }
    if (Contains(seen, a)) {
      throw ValueError(StrCat("shard_map: ", what, "[", index, "] is ", SpecStr(spec), ", which names axis '", a,
                              "' twice"));
    }
    seen.push_back(a);
  }
}

}  // namespace

bool MeshParam::Equals(const ParamObject& other) const {
  const auto* o = dynamic_cast<const MeshParam*>(&other);
  return o != nullptr && o->mesh_ == mesh_;
}

size_t SpecsParam::Hash() const {
  size_t h = specs_.size();
  for (const PartitionSpec& s : specs_) h = absl::HashOf(h, s.ToString());
  return h;
}

bool SpecsParam::Equals(const ParamObject& other) const {
  const auto* o = dynamic_cast<const SpecsParam*>(&other);
  return o != nullptr && o->specs_ == specs_;
}

std::string SpecsParam::ToString() const {
  std::vector<std::string> parts;
  for (const PartitionSpec& s : specs_) parts.push_back(SpecStr(s));
  return StrCat("(", absl::StrJoin(parts, ", "), specs_.size() == 1 ? ",)" : ")");
}

ParamMap ShardMapParams::ToParamMap() const {
  return ParamMap{{"check_vma", check_vma},
                  {"in_specs", Param(std::make_shared<const SpecsParam>(in_specs))},
                  {"jaxpr", JaxprParamOf(jaxpr)},
                  {"manual_axes", NamesParam(manual_axes)},
                  {"mesh", Param(std::make_shared<const MeshParam>(mesh))},
                  {"out_specs", Param(std::make_shared<const SpecsParam>(out_specs))}};
}

ShardMapParams ShardMapParams::From(const ParamMap& params) {
  ShardMapParams p;
  p.mesh = dynamic_cast<const MeshParam&>(*params.GetObject("mesh")).mesh();
  p.in_specs = dynamic_cast<const SpecsParam&>(*params.GetObject("in_specs")).specs();
  p.out_specs = dynamic_cast<const SpecsParam&>(*params.GetObject("out_specs")).specs();
  p.manual_axes = AxisNamesOf(params.Get("manual_axes"));
  p.check_vma = params.GetBool("check_vma");
  p.jaxpr = GetJaxpr(params, "jaxpr");
  return p;
}

std::shared_ptr<const CollectiveMesh> ShardMapParams::collective_mesh() const {
  return std::make_shared<const CollectiveMesh>(mesh.axis_names(), mesh.axis_sizes(), manual_axes);
}

ShapedArray LocalAval(const ShapedArray& global, const PartitionSpec& spec, const Mesh& mesh, bool check_vma) {
  ShapedArray local{global.shape, global.dtype, global.weak_type};
  for (int64_t d = 0; d < spec.size(); ++d) {
    int64_t pieces = 1;
    for (const std::string& a : spec[d].axes()) pieces *= mesh.axis_size(a);
    local.shape[static_cast<size_t>(d)] /= pieces;
  }
  if (check_vma) {
    local.vma = spec.axes();
    std::sort(local.vma.begin(), local.vma.end());
  }
  return local;
}

ShapedArray GlobalAval(const ShapedArray& local, const PartitionSpec& spec, const Mesh& mesh) {
  ShapedArray global{local.shape, local.dtype, local.weak_type};
  for (int64_t d = 0; d < spec.size() && d < local.ndim(); ++d) {
    for (const std::string& a : spec[d].axes()) global.shape[static_cast<size_t>(d)] *= mesh.axis_size(a);
  }
  return global;
}

Hoisted TraceBody(const ArraysFn& fn, absl::Span<const ShapedArray> local_avals, const ShardMapParams& like,
                  const std::string& name) {
  auto mesh = like.collective_mesh();
  const bool check_vma = like.check_vma;
  return TraceHoisted(
      [&](absl::Span<const Array> args) {
        ManualContextScope context(ManualContext{mesh, check_vma});
        PvaryHookScope pvary(check_vma);
        return fn(args);
      },
      local_avals, name);
}

Arrays BindShardMap(const Hoisted& body, ShardMapParams params, absl::Span<const Array> args) {
  params.jaxpr = body.jaxpr;
  if (body.consts.empty()) return Bind(kShardMap, args, params.ToParamMap());
  // Values the body closed over enter replicated.
  params.in_specs.insert(params.in_specs.begin(), body.consts.size(), PartitionSpec());
  return Bind(kShardMap, Cat({body.consts, args}), params.ToParamMap());
}

std::vector<PartitionSpec> LeafSpecs(const std::vector<SpecEntry>& specs, const std::vector<tree::TreeDef>& defs,
                                     std::string_view what) {
  auto expand = [&](const SpecEntry& entry, const tree::TreeDef& def, std::vector<PartitionSpec>& out) {
    if (const auto* spec = std::get_if<PartitionSpec>(&entry)) {
      out.insert(out.end(), def.num_leaves(), *spec);
      return;
    }
    for (const std::string& path : def.KeyPaths()) out.push_back(std::get<specs_by_path>(entry).SpecOf(path, what));
  };
  std::vector<PartitionSpec> out;
  if (specs.size() == 1 && defs.size() != 1) {
    expand(specs[0], tree::TreeDef::Tuple(defs), out);
    return out;
  }
  if (specs.size() != defs.size()) {
    throw ValueError(StrCat("shard_map: ", what, " has ", specs.size(), " entries but the function ",
                            what == "in_specs" ? "takes " : "returns ", defs.size(),
                            what == "in_specs" ? " arguments" : " outputs"));
  }
  for (size_t i = 0; i < defs.size(); ++i) expand(specs[i], defs[i], out);
  return out;
}

namespace {

// shard_map's abstract evaluation: global result types from the body's local ones.
Avals ShardMapAbstractEval(InAvals in, const ParamMap& params) {
  const ShardMapParams p = ShardMapParams::From(params);
  const std::vector<ShapedArray> body_in = p.jaxpr.jaxpr->in_avals();
  if (in.size() != body_in.size() || in.size() != p.in_specs.size()) {
    ThrowOpError<TypeError>("shard_map", "takes ", body_in.size(), " operands, got ", in.size());
  }
  for (size_t i = 0; i < in.size(); ++i) {
    const ShapedArray local = LocalAval(*in[i], p.in_specs[i], p.mesh, false);
    if (local.shape != body_in[i].shape || local.dtype != body_in[i].dtype) {
      ThrowOpError<TypeError>("shard_map", "operand ", i, " of type ", in[i]->str(), " split by ",
                              SpecStr(p.in_specs[i]), " is ", local.str(), " per device, but the body takes ",
                              body_in[i].str());
    }
  }
  Avals out;
  const std::vector<ShapedArray> body_out = p.jaxpr.jaxpr->out_avals();
  for (size_t k = 0; k < body_out.size(); ++k) out.push_back(GlobalAval(body_out[k], p.out_specs[k], p.mesh));
  return out;
}

}  // namespace
}  // namespace shard_map_internal

using namespace shard_map_internal;

void RegisterShardMap() {
  static std::once_flag once;
  std::call_once(once, [] {
    Registry& r = GlobalRegistry();
    RegisterCollectives(r);
    PrimitiveRules& rules = r.Define(kShardMap);
    rules.abstract_eval = ShardMapAbstractEval;
    rules.impl = ShardMapImpl;
    rules.lower = LowerShardMap;
    rules.runs_on_mesh = true;
    SetShardMapTransformRules(rules);
  });
}

Arrays ShardMapCall(const ArraysFn& f, const Mesh& mesh, const std::vector<PartitionSpec>& leaf_in_specs,
                    const std::function<std::vector<PartitionSpec>(size_t num_outputs)>& out_leaf_specs,
                    const ShardMapOptions& options, absl::Span<const Array> args) {
  RegisterShardMap();
  if (mesh.empty()) throw ValueError("shard_map: the mesh is empty");
  ShardMapParams params;
  params.mesh = mesh;
  params.check_vma = options.check_vma;
  for (const std::string& a : options.axis_names) {
    if (!Contains(mesh.axis_names(), a)) {
      throw ValueError(StrCat("shard_map: axis_names names '", a, "', which the mesh lacks: the mesh has axes ",
                              AxisNamesTuple(mesh)));
    }
  }
  params.manual_axes = options.axis_names.empty() ? mesh.axis_names() : OrderedByMesh(mesh, options.axis_names);
  params.in_specs = leaf_in_specs;
  if (leaf_in_specs.size() != args.size()) {
    throw ValueError(StrCat("shard_map: ", leaf_in_specs.size(), " in_specs for ", args.size(), " array arguments"));
  }

  // Every argument's spec must fit its rank and divide its shape (JAX's messages).
  std::vector<ShapedArray> local;
  std::vector<std::string> divisibility;
  for (size_t i = 0; i < args.size(); ++i) {
    const PartitionSpec& spec = leaf_in_specs[i];
    const ShapedArray& aval = args[i].aval();
    CheckSpecAxes(spec, mesh, params.manual_axes, "in_specs", i);
    if (spec.size() > aval.ndim()) {
      throw ValueError(StrCat("shard_map applied to the function '", options.name, "' was given an in_specs entry ",
                              SpecStr(spec), " for args[", i, "] of rank ", aval.ndim(), " (", aval.long_str(),
                              "): a spec may name at most as many dimensions as the array has"));
    }
    for (int64_t d = 0; d < spec.size(); ++d) {
      int64_t pieces = 1;
      for (const std::string& a : spec[d].axes()) pieces *= mesh.axis_size(a);
      const int64_t size = aval.shape[static_cast<size_t>(d)];
      if (size % pieces != 0) {
        const std::vector<std::string>& axes = spec[d].axes();
        std::string axes_str = axes.size() == 1 ? StrCat("mesh axis '", axes[0], "'")
                                                : StrCat("mesh axes ('", absl::StrJoin(axes, "', '"), "')");
        divisibility.push_back(StrCat("* args[", i, "] of shape ", aval.long_str(), " corresponds to in_specs[", i,
                                      "] of value ", SpecStr(spec), ", which maps array axis ", d, " (of size ", size,
                                      ") to ", axes_str, " (of total size ", pieces, "), but ", pieces,
                                      " does not evenly divide ", size));
      }
    }
    local.push_back(LocalAval(aval, spec, mesh, options.check_vma));
  }
  if (!divisibility.empty()) {
    throw ValueError(StrCat(
        "shard_map applied to the function '", options.name,
        "' was given argument arrays with axis sizes that are not evenly divisible by the corresponding mesh axis "
        "sizes:\n\nThe mesh given has shape ",
        MeshShapeTuple(mesh), " with corresponding axis names ", AxisNamesTuple(mesh), ".\n\n",
        absl::StrJoin(divisibility, "\n\n"),
        "\n\nArray arguments' axis sizes must be evenly divisible by the mesh axis or axes indicated by the "
        "corresponding elements of the argument's in_specs entry. Consider checking that in_specs are correct, and "
        "if so consider changing the mesh axis sizes or else padding the input and adapting '",
        options.name, "' appropriately."));
  }

  Hoisted body = TraceBody(f, local, params, StrCat("shard_map(", options.name, ")"));
  const std::vector<ShapedArray> outs = body.jaxpr.jaxpr->out_avals();
  params.out_specs = out_leaf_specs(outs.size());
  if (params.out_specs.size() != outs.size()) {
    throw ValueError(StrCat("shard_map: out_specs gives ", params.out_specs.size(), " specs for ", outs.size(),
                            " outputs"));
  }
  std::vector<std::string> replication;
  for (size_t k = 0; k < outs.size(); ++k) {
    const PartitionSpec& spec = params.out_specs[k];
    CheckSpecAxes(spec, mesh, params.manual_axes, "out_specs", k);
    if (spec.size() > outs[k].ndim()) {
      throw ValueError(StrCat("shard_map applied to the function '", options.name, "' was given out_specs[", k,
                              "] of value ", SpecStr(spec), " for an output of rank ", outs[k].ndim(), " (",
                              outs[k].str(), " per device)"));
    }
    if (!options.check_vma) continue;
    // JAX's _check_reps: the output may vary only over the axes its out_spec names.
    const std::vector<std::string> named = spec.axes();
    std::vector<std::string> unmentioned, extra;
    for (const std::string& a : params.manual_axes) {
      if (!Contains(named, a)) unmentioned.push_back(a);
    }
    for (const std::string& a : outs[k].vma) {
      if (!Contains(named, a)) extra.push_back(a);
    }
    if (extra.empty()) continue;
    extra = OrderedByMesh(mesh, extra);
    std::string quoted = absl::StrJoin(extra, "', '");
    if (unmentioned.size() > 1) {
      std::vector<std::string> need = OrderedByMesh(mesh, named);
      std::vector<std::string> got = OrderedByMesh(mesh, outs[k].vma);
      replication.push_back(StrCat("* out_specs[", k, "] is ", SpecStr(spec),
                                   " which implies that the corresponding output value is only varying across mesh "
                                   "axes {",
                                   absl::StrJoin(need, ","), "} and not {", absl::StrJoin(extra, ","),
                                   "}, but it was inferred to be possibly varying over {", absl::StrJoin(got, ","),
                                   "}"));
    } else {
      replication.push_back(StrCat("* out_specs[", k, "] is ", SpecStr(spec),
                                   " which implies that the corresponding output value is replicated across mesh "
                                   "axis '",
                                   quoted, "', but could not infer replication over any axes"));
    }
  }
  if (!replication.empty()) {
    if (replication.size() == 1) replication[0] = replication[0].substr(2);
    throw ValueError(StrCat(
        "shard_map applied to the function '", options.name,
        "' was given out_specs which require replication which can't be statically inferred given the mesh:\n\n"
        "The mesh given has shape ",
        MeshShapeTuple(mesh), " with corresponding axis names ", AxisNamesTuple(mesh), ".\n\n",
        absl::StrJoin(replication, "\n\n"),
        "\n\nCheck if these output values are meant to be replicated over those mesh axes. If not, consider "
        "revising the corresponding out_specs entries (name the axes the output varies over), or reduce over them "
        "in the function with lax::psum or lax::pmean. If so, consider disabling the check by passing the "
        "check_vma=false option to `jx::shard_map`."));
  }
  return BindShardMap(body, params, args);
}

PartitionSpec specs_by_path::SpecOf(const std::string& path, std::string_view what) const {
  if (fn_) return fn_(path);
  const std::pair<std::string, PartitionSpec>* best = nullptr;
  for (const auto& entry : entries_) {
    const bool covers = path.compare(0, entry.first.size(), entry.first) == 0 &&
                        (path.size() == entry.first.size() || path[entry.first.size()] == '.' ||
                         path[entry.first.size()] == '[');
    if (covers && (best == nullptr || entry.first.size() > best->first.size())) best = &entry;
  }
  if (best == nullptr) {
    std::vector<std::string> paths;
    for (const auto& entry : entries_) paths.push_back(StrCat("'", entry.first, "'"));
    throw ValueError(StrCat("shard_map: ", what, " gives no spec for the leaf at '", path, "' (its specs_by_path has ",
                            paths.empty() ? "no entries" : absl::StrJoin(paths, ", "),
                            "); add an entry for it or for a prefix of its path"));
  }
  return best->second;
}

}  // namespace jx
