// shard_map's transformation rules (JAX's shard_map jvp / partial_eval / transpose / batch
// rules): each binds one shard_map equation over the transformed body, traced per device
// with the manual axes bound, and with the specs of the new operands and results.
#include <optional>

#include "jx/core/errors.h"
#include "jx/core/interpreter.h"
#include "jx/lax/binary_ops.h"
#include "jx/lax/convert_ops.h"
#include "jx/sharding/collectives.h"
#include "jx/sharding/shard_map.h"
#include "jx/sharding/shard_map_internal.h"
#include "jx/transforms/ad_util.h"
#include "jx/transforms/jvp.h"
#include "jx/transforms/vmap.h"

namespace jx::shard_map_internal {
namespace {

template <typename T>
std::vector<T> Select(const std::vector<T>& v, const std::vector<bool>& mask, bool want = true) {
  std::vector<T> out;
  for (size_t i = 0; i < v.size(); ++i) {
    if (mask[i] == want) out.push_back(v[i]);
  }
  return out;
}

template <typename T>
std::vector<T> Concat(std::vector<T> a, const std::vector<T>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

ShapedArray Invariant(ShapedArray aval) {
  aval.vma.clear();
  return aval;
}

// The manual axes a spec leaves out (the value is replicated over them).
std::vector<std::string> Unmentioned(const ShardMapParams& p, const PartitionSpec& spec) {
  std::vector<std::string> named = spec.axes(), out;
  for (const std::string& a : p.manual_axes) {
    if (std::find(named.begin(), named.end(), a) == named.end()) out.push_back(a);
  }
  return out;
}

Param NamesParam(const std::vector<std::string>& names) { return AxisNamesTuple(names); }

JvpResult ShardMapJvp(absl::Span<const Array> primals, absl::Span<const Array> tangents, const ParamMap& params) {
  const ShardMapParams p = ShardMapParams::From(params);
  const std::vector<ShapedArray> body_in = p.jaxpr.jaxpr->in_avals();
  const std::vector<ShapedArray> body_out = p.jaxpr.jaxpr->out_avals();
  std::vector<bool> nonzero(tangents.size());
  Arrays args(primals.begin(), primals.end());
  std::vector<ShapedArray> local = body_in;
  for (size_t i = 0; i < tangents.size(); ++i) {
    nonzero[i] = tangents[i].defined();
    if (!nonzero[i]) continue;
    args.push_back(tangents[i]);
    local.push_back(body_in[i]);
  }
  std::vector<bool> float_out(body_out.size());
  for (size_t k = 0; k < body_out.size(); ++k) float_out[k] = HasTangentSpace(body_out[k].dtype);
  const Hoisted body = TraceBody(
      [&](absl::Span<const Array> a) {
        Arrays ts(primals.size());
        for (size_t i = 0, n = 0; i < primals.size(); ++i) {
          if (nonzero[i]) ts[i] = a[primals.size() + n++];
        }
        auto [po, to] = JvpCall(AsFn(p.jaxpr), a.subspan(0, primals.size()), ts);
        Arrays outs = po;
        for (size_t k = 0; k < body_out.size(); ++k) {
          if (float_out[k]) outs.push_back(to[k].defined() ? to[k] : Zeros(Invariant(body_out[k])));
        }
        return outs;
      },
      local, p, "jvp(shard_map)");
  ShardMapParams q = p;
  q.in_specs = Concat(p.in_specs, Select(p.in_specs, nonzero));
  q.out_specs = Concat(p.out_specs, Select(p.out_specs, float_out));
  Arrays outs = BindShardMap(body, q, args);
  JvpResult r;
  const size_t n_out = body_out.size();
  r.primals_out.assign(outs.begin(), outs.begin() + static_cast<ptrdiff_t>(n_out));
  r.tangents_out.resize(n_out);
  for (size_t k = 0, f = n_out; k < n_out; ++k) {
    if (float_out[k]) r.tangents_out[k] = outs[f++];
  }
  return r;
}

// Under linearize: the known outputs come from a shard_map of the body's known part now;
// the whole equation is staged for the unknown ones (its known operands are residuals, and
// its transpose evaluates their forward part again per device).
std::optional<PartialEvalSplit> ShardMapPartialEval(absl::Span<const Array> in, const std::vector<bool>& unknown,
                                                    const ParamMap& params) {
  const ShardMapParams p = ShardMapParams::From(params);
  PartialEvalResult pe = PartialEvalJaxpr(p.jaxpr, unknown, {});
  const std::vector<bool>& out_unknown = pe.out_unknown;
  PartialEvalSplit split;
  split.known_outs.resize(out_unknown.size());
  const size_t n_known = static_cast<size_t>(std::count(out_unknown.begin(), out_unknown.end(), false));
  if (n_known > 0) {
    auto pruned = std::make_shared<Jaxpr>(*pe.known.jaxpr.jaxpr);
    pruned->outvars.resize(n_known);
    ShardMapParams q = p;
    q.in_specs = Select(p.in_specs, unknown, false);
    q.out_specs = Select(p.out_specs, out_unknown, false);
    Arrays known_in;
    for (size_t i = 0; i < in.size(); ++i) {
      if (!unknown[i]) known_in.push_back(in[i]);
    }
    Arrays known = BindShardMap(Hoisted{ClosedJaxpr{std::move(pruned), {}}, pe.known.consts}, q, known_in);
    for (size_t k = 0, n = 0; k < out_unknown.size(); ++k) {
      if (!out_unknown[k]) split.known_outs[k] = known[n++];
    }
  }
  split.staged = kShardMap;
  split.staged_inputs.assign(in.begin(), in.end());
  split.staged_params = params;
  for (size_t k = 0; k < out_unknown.size(); ++k) {
    if (out_unknown[k]) split.unknown_from.push_back(k);
  }
  return split;
}

Arrays ShardMapTranspose(absl::Span<const Array> cts_out, absl::Span<const TransposeArg> args,
                         const ParamMap& params) {
  const ShardMapParams p = ShardMapParams::From(params);
  const std::vector<ShapedArray> body_in = p.jaxpr.jaxpr->in_avals();
  const std::vector<ShapedArray> body_out = p.jaxpr.jaxpr->out_avals();
  std::vector<bool> linear, ct_defined;
  Arrays known, cts;
  std::vector<ShapedArray> local;
  for (size_t i = 0; i < args.size(); ++i) {
    linear.push_back(args[i].is_linear());
    if (!linear.back()) {
      known.push_back(args[i].value);
      local.push_back(body_in[i]);
    }
  }
  for (size_t k = 0; k < cts_out.size(); ++k) {
    ct_defined.push_back(cts_out[k].defined());
    if (!ct_defined.back()) continue;
    cts.push_back(cts_out[k]);
    local.push_back(LocalAval(cts_out[k].aval(), p.out_specs[k], p.mesh, p.check_vma));
  }
  auto mesh = p.collective_mesh();
  const Hoisted body = TraceBody(
      [&](absl::Span<const Array> a) {
        Arrays all_cts;
        for (size_t k = 0, n = 0; k < ct_defined.size(); ++k) {
          Array ct = ct_defined[k] ? a[known.size() + n++] : Zeros(Invariant(body_out[k]));
          if (p.check_vma && ct_defined[k]) {
            // An output invariant over axes its spec names was tiled into copies: its
            // cotangent is the sum of the copies' cotangents (leaving it typed as the output).
            std::vector<std::string> tiled;
            for (const std::string& ax : p.out_specs[k].axes()) {
              if (std::find(body_out[k].vma.begin(), body_out[k].vma.end(), ax) == body_out[k].vma.end()) {
                tiled.push_back(ax);
              }
            }
            if (!tiled.empty()) {
              ct = Bind1(lax::kPsum, {ct}, ParamMap{{"axes", NamesParam(tiled)}, {"mesh", Param(mesh)}});
            }
          }
          // Without vma types (JAX's check_vma=False transpose): an output replicated over
          // axes its spec leaves out was counted once per device there.
          const std::vector<std::string> rep = Unmentioned(p, p.out_specs[k]);
          if (!p.check_vma && ct_defined[k] && !rep.empty()) {
            int64_t copies = 1;
            for (const std::string& ax : rep) copies *= p.mesh.axis_size(ax);
            ct = lax::div(ct, lax::convert_element_type(Array(static_cast<double>(copies)), ct.dtype(), true));
          }
          all_cts.push_back(ct);
        }
        Arrays in_cts = TransposeJaxpr(p.jaxpr, linear, a.subspan(0, known.size()), all_cts);
        if (!p.check_vma) {
          // ... and an input replicated over such axes gets the sum of every device's cotangent.
          for (size_t i = 0, n = 0; i < linear.size(); ++i) {
            if (!linear[i]) continue;
            const std::vector<std::string> rep = Unmentioned(p, p.in_specs[i]);
            if (!rep.empty()) {
              in_cts[n] = Bind1(lax::kPsumUntyped, {in_cts[n]}, ParamMap{{"axes", NamesParam(rep)}, {"mesh", Param(mesh)}});
            }
            ++n;
          }
        }
        return in_cts;
      },
      local, p, "transpose(shard_map)");
  ShardMapParams q = p;
  q.in_specs = Concat(Select(p.in_specs, linear, false), Select(p.out_specs, ct_defined));
  q.out_specs = Select(p.in_specs, linear);
  Arrays outs = BindShardMap(body, q, Cat({known, cts}));
  Arrays result(args.size());
  for (size_t i = 0, n = 0; i < args.size(); ++i) {
    if (linear[i]) result[i] = outs[n++];
  }
  return result;
}

PartitionSpec Prepend(const PartitionSpec& spec) {
  std::vector<DimSpec> dims{DimSpec()};
  dims.insert(dims.end(), spec.dims().begin(), spec.dims().end());
  return PartitionSpec(std::move(dims));
}

// vmap of shard_map: the batch dimension leads every batched operand and result, unsplit.
BatchResult ShardMapBatch(absl::Span<const Array> args, absl::Span<const int64_t> dims, int64_t size,
                          const ParamMap& params) {
  const ShardMapParams p = ShardMapParams::From(params);
  std::vector<ShapedArray> local = p.jaxpr.jaxpr->in_avals();
  Arrays moved;
  std::vector<int64_t> in_axes;
  ShardMapParams q = p;
  for (size_t i = 0; i < args.size(); ++i) {
    if (dims[i] == kNotMapped) {
      moved.push_back(args[i]);
      in_axes.push_back(kNotMapped);
      continue;
    }
    moved.push_back(MoveAxis(args[i], dims[i], 0));
    in_axes.push_back(0);
    local[i].shape.insert(local[i].shape.begin(), size);
    q.in_specs[i] = Prepend(p.in_specs[i]);
  }
  for (PartitionSpec& s : q.out_specs) s = Prepend(s);
  const Hoisted body = TraceBody(
      [&](absl::Span<const Array> a) { return VmapCall(AsFn(p.jaxpr), a, in_axes, {0}, size); }, local, p,
      "vmap(shard_map)");
  Arrays outs = BindShardMap(body, q, moved);
  return BatchResult{outs, std::vector<int64_t>(outs.size(), 0)};
}

}  // namespace

void SetShardMapTransformRules(PrimitiveRules& rules) {
  rules.jvp = ShardMapJvp;
  rules.partial_eval = ShardMapPartialEval;
  rules.transpose = ShardMapTranspose;
  rules.batch = ShardMapBatch;
}

}  // namespace jx::shard_map_internal
