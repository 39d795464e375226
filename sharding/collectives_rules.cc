// The collectives' rules: abstract evaluation (local shapes and varying manual axes, as
// JAX's parallel.py types them), jvp, transpose (psum <-> pvary, all_gather <->
// reduce_scatter, all_to_all <-> all_to_all with the axes swapped, ppermute <-> the inverse
// permutation) and batching (vmap inside a shard_map body).
#include <algorithm>
#include <mutex>
#include <set>

#include "jx/core/errors.h"
#include "jx/core/interpreter.h"
#include "jx/core/str_util.h"
#include "jx/core/vma.h"
#include "jx/lax/binary_ops.h"
#include "jx/lax/convert_ops.h"
#include "jx/sharding/collective_eval.h"
#include "jx/sharding/collectives.h"
#include "jx/sharding/collectives_lowering.h"
#include "jx/transforms/ad_util.h"

namespace jx {
namespace {

using lax::kAllGather;
using lax::kAllToAll;
using lax::kAxisIndex;
using lax::kPmax;
using lax::kPmin;
using lax::kPpermute;
using lax::kPsum;
using lax::kPsumUntyped;
using lax::kPvary;
using lax::kReduceScatter;

// The collective's axes, checked against the mesh it records: every one a manual axis.
std::vector<std::string> CheckedAxes(Primitive p, const ParamMap& params) {
  const CollectiveMesh& mesh = CollectiveMeshOf(params);
  std::vector<std::string> axes = CollectiveAxes(params);
  for (const std::string& a : axes) {
    if (!mesh.is_manual(a)) {
      ThrowOpError<ValueError>(p.name(), "unbound axis name '", a, "': the shard_map's manual axes are ",
                               mesh.ManualString(), " (mesh ", mesh.MeshString(), ")");
    }
  }
  return axes;
}

int64_t GroupSize(const ParamMap& params, const std::vector<std::string>& axes) {
  int64_t n = 1;
  for (const std::string& a : axes) n *= CollectiveMeshOf(params).axis_size(a);
  return n;
}

std::vector<std::string> VmaUnion(std::vector<std::string> vma, const std::vector<std::string>& axes) {
  vma.insert(vma.end(), axes.begin(), axes.end());
  std::sort(vma.begin(), vma.end());
  vma.erase(std::unique(vma.begin(), vma.end()), vma.end());
  return vma;
}

std::vector<std::string> VmaMinus(const std::vector<std::string>& vma, const std::vector<std::string>& axes) {
  std::vector<std::string> out;
  for (const std::string& a : vma) {
    if (std::find(axes.begin(), axes.end(), a) == axes.end()) out.push_back(a);
  }
  return out;
}

// ---- abstract evaluation ----

// psum/pmax/pmin of one or several operands: each result has its operand's shape and no
// longer varies over the axes.
AbstractEvalRule ReductionAbstractEval(Primitive p) {
  return [p](InAvals in, const ParamMap& params) -> Avals {
    const std::vector<std::string> axes = CheckedAxes(p, params);
    JX_CHECK_OP(!in.empty(), ValueError, p.name(), "needs at least one operand");
    Avals out;
    for (const ShapedArray* a : in) {
      out.push_back(*a);
      out.back().vma = VmaMinus(a->vma, axes);
    }
    return out;
  };
}

// pvary of one or several operands: each result varies over the axes too.
Avals PvaryAbstractEval(InAvals in, const ParamMap& params) {
  const std::vector<std::string> axes = CheckedAxes(kPvary, params);
  JX_CHECK_OP(!in.empty(), ValueError, "pvary", "needs at least one operand");
  Avals out;
  for (const ShapedArray* a : in) {
    out.push_back(*a);
    out.back().vma = VmaUnion(a->vma, axes);
  }
  return out;
}

Avals AllGatherAbstractEval(InAvals in, const ParamMap& params) {
  const std::vector<std::string> axes = CheckedAxes(kAllGather, params);
  const int64_t n = GroupSize(params, axes);
  const int64_t dim = params.GetInt("all_gather_dimension");
  const bool tiled = params.GetBool("tiled");
  ShapedArray out = *in[0];
  const int64_t rank = out.ndim() + (tiled ? 0 : 1);
  JX_CHECK_OP(dim >= 0 && dim < std::max<int64_t>(rank, 1), ShapeError, "all_gather", "all_gather_dimension ", dim,
              " out of range for ", in[0]->str(), tiled ? " (tiled)" : "");
  JX_CHECK_OP(!tiled || out.ndim() > 0, ShapeError, "all_gather", "tiled=True needs an operand of rank >= 1, got ",
              in[0]->str());
  if (tiled) {
    out.shape[static_cast<size_t>(dim)] *= n;
  } else {
    out.shape.insert(out.shape.begin() + dim, n);
  }
  out.vma = VmaUnion(out.vma, axes);
  return {out};
}

Avals ReduceScatterAbstractEval(InAvals in, const ParamMap& params) {
  const std::vector<std::string> axes = CheckedAxes(kReduceScatter, params);
  const int64_t n = GroupSize(params, axes);
  const int64_t dim = params.GetInt("scatter_dimension");
  const bool tiled = params.GetBool("tiled");
  ShapedArray out = *in[0];
  JX_CHECK_OP(dim >= 0 && dim < out.ndim(), ShapeError, "psum_scatter", "scatter_dimension ", dim,
              " out of range for ", in[0]->str());
  const int64_t size = out.shape[static_cast<size_t>(dim)];
  if (tiled) {
    JX_CHECK_OP(size % n == 0, ShapeError, "psum_scatter", "scatter_dimension ", dim, " of ", in[0]->str(),
                " (size ", size, ") must be divisible by the axis size ", n);
    out.shape[static_cast<size_t>(dim)] = size / n;
  } else {
    JX_CHECK_OP(size == n, ShapeError, "psum_scatter", "with tiled=False, scatter_dimension ", dim, " of ",
                in[0]->str(), " (size ", size, ") must equal the axis size ", n);
    out.shape.erase(out.shape.begin() + dim);
  }
  out.vma = VmaUnion(out.vma, axes);
  return {out};
}

Avals AllToAllAbstractEval(InAvals in, const ParamMap& params) {
  const std::vector<std::string> axes = CheckedAxes(kAllToAll, params);
  const int64_t n = GroupSize(params, axes);
  const int64_t split = params.GetInt("split_axis");
  const int64_t concat = params.GetInt("concat_axis");
  ShapedArray out = *in[0];
  JX_CHECK_OP(split >= 0 && split < out.ndim() && concat >= 0 && concat < out.ndim(), ShapeError, "all_to_all",
              "split_axis ", split, " or concat_axis ", concat, " out of range for ", in[0]->str());
  const int64_t size = out.shape[static_cast<size_t>(split)];
  JX_CHECK_OP(size % n == 0, ShapeError, "all_to_all", "split_axis ", split, " of ", in[0]->str(), " (size ", size,
              ") must be divisible by the axis size ", n);
  out.shape[static_cast<size_t>(split)] /= n;
  out.shape[static_cast<size_t>(concat)] *= n;
  out.vma = VmaUnion(out.vma, axes);
  return {out};
}

Avals PpermuteAbstractEval(InAvals in, const ParamMap& params) {
  const std::vector<std::string> axes = CheckedAxes(kPpermute, params);
  const int64_t n = GroupSize(params, axes);
  std::set<int64_t> sources, destinations;
  for (const auto& [src, dst] : PermOf(params)) {
    JX_CHECK_OP(src >= 0 && src < n && dst >= 0 && dst < n, ValueError, "ppermute", "perm pair (", src, ", ", dst,
                ") is out of range for an axis of size ", n);
    JX_CHECK_OP(sources.insert(src).second, ValueError, "ppermute", "perm has source ", src, " twice");
    JX_CHECK_OP(destinations.insert(dst).second, ValueError, "ppermute", "perm has destination ", dst, " twice");
  }
  ShapedArray out = *in[0];
  out.vma = VmaUnion(out.vma, axes);
  return {out};
}

Avals AxisIndexAbstractEval(InAvals, const ParamMap& params) {
  ShapedArray out{{}, DType::kInt32};
  out.vma = VmaUnion({}, CheckedAxes(kAxisIndex, params));
  return {out};
}

// ---- jvp ----

// Binds p on the defined entries of xs (one collective of all of them); undefined entries
// stay undefined (symbolic zeros: nothing to communicate).
Arrays BindDefined(Primitive p, absl::Span<const Array> xs, const ParamMap& params) {
  Arrays defined;
  for (const Array& x : xs) {
    if (x.defined()) defined.push_back(x);
  }
  Arrays out(xs.size());
  if (defined.empty()) return out;
  Arrays results = Bind(p, defined, params);
  for (size_t i = 0, k = 0; i < xs.size(); ++i) {
    if (xs[i].defined()) out[i] = std::move(results[k++]);
  }
  return out;
}

// Linear collectives: the tangents go through the same collective (one of all the defined
// tangents for the variadic ones).
JvpRule LinearJvp(Primitive p) {
  return [p](absl::Span<const Array> primals, absl::Span<const Array> tangents, const ParamMap& params) {
    JvpResult r;
    r.primals_out = Bind(p, primals, params);
    r.tangents_out = BindDefined(p, tangents, params);
    return r;
  };
}

// pmax/pmin: the tangent of the devices attaining the extremum, averaged over ties (as
// reduce_max's jvp averages over tied elements). The operands' numerators (linear in the
// tangents) are summed in one psum, their tie counts (primal values) in another.
JvpRule ExtremumJvp(Primitive p) {
  return [p](absl::Span<const Array> primals, absl::Span<const Array> tangents, const ParamMap& params) {
    JvpResult r;
    r.primals_out = Bind(p, primals, params);
    r.tangents_out.resize(primals.size());
    Arrays numerators, ties;
    std::vector<size_t> which;
    for (size_t i = 0; i < primals.size(); ++i) {
      if (!tangents[i].defined()) continue;
      const Array mask = lax::convert_element_type(lax::eq(primals[i], r.primals_out[i]), tangents[i].dtype());
      numerators.push_back(lax::mul(tangents[i], mask));
      ties.push_back(mask);
      which.push_back(i);
    }
    if (which.empty()) return r;
    const Arrays num = Bind(kPsum, numerators, params);
    const Arrays den = Bind(kPsum, ties, params);
    for (size_t k = 0; k < which.size(); ++k) r.tangents_out[which[k]] = lax::div(num[k], den[k]);
    return r;
  };
}

// ---- transpose ----

ParamMap WithAxesKey(const ParamMap& params, std::string_view key) {
  return ParamMap{{key, AxisNamesTuple(CollectiveAxes(params))}, {"mesh", params.Get("mesh")}};
}

// psum_invariant -> pvary and pvary -> psum_invariant (JAX's pair of transposes): one
// collective of all the defined cotangents.
TransposeRule SwapTranspose(Primitive to) {
  return [to](absl::Span<const Array> cts, absl::Span<const TransposeArg>, const ParamMap& params) -> Arrays {
    return BindDefined(to, cts, WithAxesKey(params, "axes"));
  };
}

Arrays AllGatherTranspose(absl::Span<const Array> cts, absl::Span<const TransposeArg>, const ParamMap& params) {
  if (!cts[0].defined()) return {Array()};
  return {Bind1(kReduceScatter, {cts[0]},
                ParamMap{{"axis_name", params.Get("axis_name")},
                         {"axis_size", params.Get("axis_size")},
                         {"mesh", params.Get("mesh")},
                         {"scatter_dimension", params.Get("all_gather_dimension")},
                         {"tiled", params.Get("tiled")}})};
}

Arrays ReduceScatterTranspose(absl::Span<const Array> cts, absl::Span<const TransposeArg>, const ParamMap& params) {
  if (!cts[0].defined()) return {Array()};
  return {Bind1(kAllGather, {cts[0]},
                ParamMap{{"all_gather_dimension", params.Get("scatter_dimension")},
                         {"axis_name", params.Get("axis_name")},
                         {"axis_size", params.Get("axis_size")},
                         {"mesh", params.Get("mesh")},
                         {"tiled", params.Get("tiled")}})};
}

Arrays AllToAllTranspose(absl::Span<const Array> cts, absl::Span<const TransposeArg>, const ParamMap& params) {
  if (!cts[0].defined()) return {Array()};
  ParamMap swapped = params;
  swapped.Set("split_axis", params.Get("concat_axis"));
  swapped.Set("concat_axis", params.Get("split_axis"));
  return {Bind1(kAllToAll, {cts[0]}, swapped)};
}

Arrays PpermuteTranspose(absl::Span<const Array> cts, absl::Span<const TransposeArg>, const ParamMap& params) {
  if (!cts[0].defined()) return {Array()};
  ParamList inverse;
  for (const auto& [src, dst] : PermOf(params)) inverse.emplace_back(std::vector<int64_t>{dst, src});
  ParamMap p = params;
  p.Set("perm", Param(std::move(inverse)));
  return {Bind1(kPpermute, {cts[0]}, p)};
}

// ---- batching (vmap inside the body) ----

// Collectives that act elementwise across devices: each operand's batch dimension stays
// where it is.
BatchResult ElementwiseBatch(Primitive p, absl::Span<const Array> args, absl::Span<const int64_t> dims,
                             const ParamMap& params) {
  return BatchResult{Bind(p, args, params), std::vector<int64_t>(dims.begin(), dims.end())};
}

// Collectives with a dimension parameter: the batch dimension moves to the front and the
// dimensions shift past it.
BatchRule ShiftedBatch(Primitive p, std::vector<std::string> dim_params) {
  return [p, dim_params](absl::Span<const Array> args, absl::Span<const int64_t> dims, int64_t,
                         const ParamMap& params) {
    const Array x = MoveAxis(args[0], dims[0], 0);
    ParamMap shifted = params;
    for (const std::string& name : dim_params) shifted.Set(name, params.GetInt(name) + 1);
    return BatchResult{Bind(p, {x}, shifted), {0}};
  };
}

void Define(Registry& r, Primitive p, AbstractEvalRule eval) {
  PrimitiveRules& rules = r.Define(p);
  rules.abstract_eval = std::move(eval);
  MarkComputesVma(p);
  rules.unsupported["impl"] = StrCat(
      p.name(), " runs across the devices of a shard_map: shard_map's evaluation runs it over every "
      "device's value (collective_eval), and jit lowers it to an HLO collective");
}

}  // namespace

void RegisterCollectives(Registry& r) {
  static std::once_flag once;
  std::call_once(once, [&r] {
    RegisterCollectiveLowering(r);
    for (Primitive p : {kPsum, kPsumUntyped, kPmax, kPmin}) {
      Define(r, p, ReductionAbstractEval(p));
      r.Define(p).batch = [p](absl::Span<const Array> a, absl::Span<const int64_t> d, int64_t, const ParamMap& ps) {
        return ElementwiseBatch(p, a, d, ps);
      };
    }
    r.Define(kPsum).jvp = LinearJvp(kPsum);
    r.Define(kPsum).transpose = SwapTranspose(kPvary);
    r.Define(kPsumUntyped).jvp = LinearJvp(kPsumUntyped);
    r.Define(kPsumUntyped).transpose = SwapTranspose(kPsumUntyped);
    // The same all-reduce as psum_invariant once lowered.
    r.Define(kPsumUntyped).lower = r.Define(kPsum).lower;
    for (Primitive p : {kPmax, kPmin}) {
      r.Define(p).jvp = ExtremumJvp(p);
      r.Define(p).unsupported["transpose"] = StrCat(p.name(), " is not linear");
    }

    Define(r, kPvary, PvaryAbstractEval);
    r.Define(kPvary).jvp = LinearJvp(kPvary);
    r.Define(kPvary).transpose = SwapTranspose(kPsum);
    r.Define(kPvary).batch = [](absl::Span<const Array> a, absl::Span<const int64_t> d, int64_t, const ParamMap& ps) {
      return ElementwiseBatch(kPvary, a, d, ps);
    };

    Define(r, kAllGather, AllGatherAbstractEval);
    r.Define(kAllGather).jvp = LinearJvp(kAllGather);
    r.Define(kAllGather).transpose = AllGatherTranspose;
    r.Define(kAllGather).batch = ShiftedBatch(kAllGather, {"all_gather_dimension"});

    Define(r, kReduceScatter, ReduceScatterAbstractEval);
    r.Define(kReduceScatter).jvp = LinearJvp(kReduceScatter);
    r.Define(kReduceScatter).transpose = ReduceScatterTranspose;
    r.Define(kReduceScatter).batch = ShiftedBatch(kReduceScatter, {"scatter_dimension"});

    Define(r, kAllToAll, AllToAllAbstractEval);
    r.Define(kAllToAll).jvp = LinearJvp(kAllToAll);
    r.Define(kAllToAll).transpose = AllToAllTranspose;
    r.Define(kAllToAll).batch = ShiftedBatch(kAllToAll, {"split_axis", "concat_axis"});

    Define(r, kPpermute, PpermuteAbstractEval);
    r.Define(kPpermute).jvp = LinearJvp(kPpermute);
    r.Define(kPpermute).transpose = PpermuteTranspose;
    r.Define(kPpermute).batch = [](absl::Span<const Array> a, absl::Span<const int64_t> d, int64_t,
                                   const ParamMap& ps) { return ElementwiseBatch(kPpermute, a, d, ps); };

    Define(r, kAxisIndex, AxisIndexAbstractEval);
    r.Define(kAxisIndex).jvp = [](absl::Span<const Array>, absl::Span<const Array>, const ParamMap& params) {
      // An integer with no inputs: no tangent.
      return JvpResult{Bind(kAxisIndex, {}, params), Arrays(1)};
    };
    r.Define(kAxisIndex).unsupported["transpose"] = "axis_index has no inputs";
    r.Define(kAxisIndex).unsupported["batch"] = "axis_index has no inputs to batch";
  });
}

}  // namespace jx
