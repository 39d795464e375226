// Sharding rule of scatter, scatter_add/mul/min/max and scatter_apply (JAX's
// _scatter_sharding_rule: a gather read in reverse). The result is sharded as the operand;
// the operand's, indices' and updates' batching dims share one factor, an operand window dim
// the updates cover whole shares its updates dim's factor. Everything a device could not
// update from its own blocks needs replication: a window the updates cover in part, an
// inserted window dim, the index vector dim, and the scatter dims of indices and updates that
// are not batching dims (unbatched queries may write the same operand elements). In explicit
// mode a sharding that breaks one of these is JAX's TypeError, nothing is resharded
// implicitly. One relaxation: updates replicated over a window dim the operand shards are
// sliced locally (jnp's .at[] broadcasts a scalar so; JAX's .at[] types that broadcast by the
// operand). With an out_sharding (gather's transpose asks for the operand's sharding) the
// shardings JAX's rule rejects are taken whole and the result is laid out as asked.
//
//   scatter_add f32[16,4@y] at int32[8,1] with f32[8,4@y]     -> f32[16,4@y]
//   scatter_add f32[16,4] at int32[8@x,1] with f32[8@x,4]     -> TypeError (unbatched queries)
#include <algorithm>
#include <string>

#include "jx/core/errors.h"
#include "jx/core/out_sharding.h"
#include "jx/core/registry.h"
#include "jx/core/str_util.h"
#include "jx/lax/primitives.h"
#include "jx/lax/sharding_rules.h"
#include "jx/lax/slicing_ops.h"

namespace jx::lax::internal {

const ScatterDimensionNumbers& ScatterDnOf(const ParamMap& p);  // gather_scatter.cc

namespace {

bool Contains(const std::vector<int64_t>& v, int64_t x) { return std::find(v.begin(), v.end(), x) != v.end(); }

const std::vector<std::string>& AxesOf(const ShapedArray& a, int64_t d) {
  static const std::vector<std::string> kNone;
  return d < static_cast<int64_t>(a.spec.size()) ? a.spec[static_cast<size_t>(d)] : kNone;
}

std::string Axes(const std::vector<std::string>& axes) {
  if (axes.empty()) return "None";
  std::string s;
  for (const std::string& a : axes) StrAppend(&s, s.empty() ? "" : ", ", "'", a, "'");
  return axes.size() == 1 ? s : StrCat("(", s, ")");
}

// The updates dims that are not window dims, in order: they pair with the indices dims before
// the index vector dim.
std::vector<int64_t> UpdateScatterDims(const ScatterDimensionNumbers& dn, int64_t updates_rank) {
  std::vector<int64_t> dims;
  for (int64_t d = 0; d < updates_rank; ++d) {
    if (!Contains(dn.update_window_dims, d)) dims.push_back(d);
  }
  return dims;
}

// The operand dims the update windows cover, in order (neither inserted nor batching).
std::vector<int64_t> OperandWindowDims(const ScatterDimensionNumbers& dn, int64_t operand_rank) {
  std::vector<int64_t> dims;
  for (int64_t d = 0; d < operand_rank; ++d) {
    if (!Contains(dn.inserted_window_dims, d) && !Contains(dn.operand_batching_dims, d)) dims.push_back(d);
  }
  return dims;
}

// Why JAX's scatter rule cannot type the result from these shardings, or "" when it can
// (jax/_src/lax/slicing.py, _scatter_spec_computation's five conditions).
std::string Unresolvable(const ShapedArray& x, const ShapedArray& ind, const ShapedArray& upd,
                         const ScatterDimensionNumbers& dn) {
  const int64_t index_vector_dim = ind.ndim() - 1;
  const std::vector<int64_t> scatter_dims = UpdateScatterDims(dn, upd.ndim());
  // 1: batching dims agree wherever they are sharded.
  for (size_t k = 0; k < dn.operand_batching_dims.size(); ++k) {
    const int64_t od = dn.operand_batching_dims[k], id = dn.scatter_indices_batching_dims[k];
    const int64_t ud = scatter_dims[static_cast<size_t>(id)];
    std::vector<std::string> seen;
    for (const std::vector<std::string>* s : {&AxesOf(x, od), &AxesOf(ind, id), &AxesOf(upd, ud)}) {
      if (s->empty()) continue;
      if (!seen.empty() && *s != seen) {
        return StrCat("batching dims operand ", od, " (", Axes(AxesOf(x, od)), "), indices ", id, " (",
                      Axes(AxesOf(ind, id)), ") and updates ", ud, " (", Axes(AxesOf(upd, ud)),
                      ") are sharded differently");
      }
      seen = *s;
    }
  }
  // 2, 3: a window dim is sharded alike in operand and updates and covered whole, or whole in both.
  const std::vector<int64_t> window = OperandWindowDims(dn, x.ndim());
  for (size_t k = 0; k < dn.update_window_dims.size() && k < window.size(); ++k) {
    const int64_t ud = dn.update_window_dims[k], od = window[k];
    const auto& u = AxesOf(upd, ud);
    const auto& o = AxesOf(x, od);
    if (u.empty() && o.empty()) continue;
    // Covered whole and sharded alike; or whole in the updates (replicated values, as jnp's
    // .at[] broadcasts a scalar: each device slices its own block, no collective).
    if (upd.shape[ud] == x.shape[od] && (u == o || u.empty())) continue;
    return upd.shape[ud] == x.shape[od]
               ? StrCat("window dim ", od, " of the operand is sharded over ", Axes(o), " and updates dim ", ud,
                        " over ", Axes(u))
               : StrCat("operand dim ", od, " (size ", x.shape[od], ", ", Axes(o), ") is updated in windows of ",
                        upd.shape[ud], " (updates dim ", ud, ", ", Axes(u), "), so it must be replicated in both");
  }
  for (int64_t d : dn.inserted_window_dims) {
    if (!AxesOf(x, d).empty()) {
      return StrCat("operand dim ", d, " is indexed (an inserted window dim) and sharded over ", Axes(AxesOf(x, d)));
    }
  }
  // 4: unbatched queries may write the same operand elements.
  for (size_t j = 0; j < scatter_dims.size(); ++j) {
    if (Contains(dn.scatter_indices_batching_dims, static_cast<int64_t>(j))) continue;
    const int64_t ud = scatter_dims[j];
    if (!AxesOf(upd, ud).empty()) {
      return StrCat("updates dim ", ud, " (a scatter dim that is not a batching dim) is sharded over ",
                    Axes(AxesOf(upd, ud)));
    }
  }
  for (int64_t d = 0; d < index_vector_dim; ++d) {
    if (!Contains(dn.scatter_indices_batching_dims, d) && !AxesOf(ind, d).empty()) {
      return StrCat("indices dim ", d, " (not a batching dim) is sharded over ", Axes(AxesOf(ind, d)));
    }
  }
  // 5: the index vector.
  if (index_vector_dim >= 0 && !AxesOf(ind, index_vector_dim).empty()) {
    return StrCat("the index vector dim of the indices is sharded over ", Axes(AxesOf(ind, index_vector_dim)));
  }
  return "";
}

// JAX's rule as factors (comment at the top).
ShardingRule ScatterFactors(InAvals in, const ScatterDimensionNumbers& dn) {
  const ShapedArray& x = *in[0];
  const ShapedArray& ind = *in[1];
  const ShapedArray& upd = *in[2];
  ShardingRuleBuilder b;
  TensorFactors operand(x.ndim()), indices(ind.ndim()), updates(upd.ndim());
  auto replicated = [&](int64_t size) {
    const int f = b.AddFactor(size);
    b.NeedReplication(f);
    return DimFactors{f};
  };
  for (size_t k = 0; k < dn.operand_batching_dims.size(); ++k) {
    const int64_t od = dn.operand_batching_dims[k];
    operand[od] = indices[dn.scatter_indices_batching_dims[k]] = {b.AddFactor(x.shape[od])};
  }
  if (ind.ndim() > 0) indices[ind.ndim() - 1] = replicated(ind.shape[ind.ndim() - 1]);
  const std::vector<int64_t> scatter_dims = UpdateScatterDims(dn, upd.ndim());
  for (size_t j = 0; j < scatter_dims.size() && static_cast<int64_t>(j) < ind.ndim() - 1; ++j) {
    if (indices[j].empty()) indices[j] = replicated(ind.shape[j]);  // an unbatched query dim
    updates[scatter_dims[j]] = indices[j];
  }
  for (int64_t d : dn.inserted_window_dims) operand[d] = replicated(x.shape[d]);
  const std::vector<int64_t> window = OperandWindowDims(dn, x.ndim());
  for (size_t k = 0; k < dn.update_window_dims.size() && k < window.size(); ++k) {
    const int64_t ud = dn.update_window_dims[k], od = window[k];
    if (upd.shape[ud] == x.shape[od]) {
      operand[od] = updates[ud] = {b.AddFactor(x.shape[od])};
    } else {
      operand[od] = replicated(x.shape[od]);
      updates[ud] = replicated(upd.shape[ud]);
    }
  }
  b.AddOperand(operand).AddOperand(std::move(indices)).AddOperand(std::move(updates));
  for (size_t i = 3; i < in.size(); ++i) b.AddOperand({});
  b.AddResult(std::move(operand));
  return std::move(b).Build();
}

// With out_sharding given and shardings JAX's rule cannot resolve: every operand taken whole
// (no factors: the partitioner replicates it) and a replicated result, which the out_sharding
// lays out (JAX computes such a scatter under auto_axes).
ShardingRule WholeOperands(InAvals in, const ShapedArray& out) {
  ShardingRuleBuilder b;
  TensorFactors result;
  for (int64_t size : out.shape) {
    result.push_back({b.AddFactor(size)});
    b.NeedReplication(result.back()[0]);
  }
  for (size_t i = 0; i < in.size(); ++i) b.AddOperand({});
  b.AddResult(std::move(result));
  return std::move(b).Build();
}

ShardingRuleFn ScatterRule(Primitive prim) {
  return [prim](InAvals in, const ParamMap& params, absl::Span<const ShapedArray> out) {
    const ScatterDimensionNumbers& dn = ScatterDnOf(params);
    const std::string why = Unresolvable(*in[0], *in[1], *in[2], dn);
    if (why.empty()) return ScatterFactors(in, dn);
    if (OutShardingOf(params) != nullptr) return WholeOperands(in, out[0]);
    ThrowOpError<TypeError>(prim.name(), "the scatter's out sharding could not be resolved unambiguously (or would "
                            "require collectives on inputs): ", why, ". Got operand=", in[0]->str(), ", indices=",
                            in[1]->str(), ", updates=", in[2]->str(), ". Reshard the operands first (jx::reshard), "
                            "or give the scatter an out_sharding");
  };
}

}  // namespace

void RegisterScatterSharding(Registry& r) {
  for (Primitive p : {kScatter, kScatterAdd, kScatterMul, kScatterMin, kScatterMax}) {
    r.Define(p).sharding_rule = ScatterRule(p);
  }
}

}  // namespace jx::lax::internal
