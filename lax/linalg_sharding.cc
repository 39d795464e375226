// Sharding rule of lax.linalg's primitives (JAX's linalg_sharding_rule): the leading (batch)
// dims of every operand and result share one factor each, so a batch of matrices sharded over
// a mesh axis is decomposed device by device; the matrix dims (the last two of each operand,
// and the results' own trailing dims) need replication. In explicit mode a sharded matrix dim,
// or operands whose batch dims are sharded differently, is JAX's TypeError.
//
//   cholesky f32[8@x,4,4]                        -> f32[8@x,4,4]
//   cholesky f32[8,4@y,4]                        -> TypeError: unsharded on non-batch dimensions
//   triangular_solve f32[8@x,4,4], f32[8@y,4,2]  -> TypeError: the same batch sharding
#include <string>

#include "jx/core/errors.h"
#include "jx/core/out_sharding.h"
#include "jx/core/registry.h"
#include "jx/core/sharding_rule_required.h"
#include "jx/core/str_util.h"
#include "jx/lax/linalg.h"
#include "jx/lax/sharding_rules.h"

namespace jx::lax::internal {
namespace {

// Every linalg operand holds a batch of matrices: its last two dims are the matrix.
constexpr int64_t kMatrixRank = 2;

// JAX's PartitionSpec text of an operand's type: P(None, 'y', None).
std::string SpecText(const ShapedArray& a) {
  DimShardings spec = a.spec;
  spec.resize(static_cast<size_t>(a.ndim()));
  return OutShardingParam(std::move(spec)).ToString();
}

DimShardings BatchSpec(const ShapedArray& a, int64_t batch_rank) {
  DimShardings s(static_cast<size_t>(batch_rank));
  for (int64_t d = 0; d < batch_rank && d < static_cast<int64_t>(a.spec.size()); ++d) s[d] = a.spec[d];
  return s;
}

ShardingRule LinalgRule(std::string_view op, InAvals in, absl::Span<const ShapedArray> out) {
  const int64_t batch_rank = in[0]->ndim() - kMatrixRank;
  for (size_t i = 0; i < in.size(); ++i) {
    for (int64_t d = batch_rank; d < static_cast<int64_t>(in[i]->spec.size()); ++d) {
      if (in[i]->spec[d].empty()) continue;
      ThrowOpError<TypeError>(op, "Input ", i, " to ", op, " must be unsharded on non-batch dimensions, but got ",
                              SpecText(*in[i]), " (", in[i]->str(), "). Reshard it first (jx::reshard)");
    }
    if (BatchSpec(*in[i], batch_rank) != BatchSpec(*in[0], batch_rank)) {
      std::string inputs;
      for (const ShapedArray* a : in) StrAppend(&inputs, inputs.empty() ? "" : ", ", a->str());
      ThrowOpError<TypeError>(op, "All inputs to ", op, " must have the same batch sharding, but got ", inputs);
    }
  }
  ShardingRuleBuilder b;
  TensorFactors batch;
  for (int64_t d = 0; d < batch_rank; ++d) batch.push_back({b.AddFactor(in[0]->shape[d])});
  auto with_core = [&](const ShapedArray& a) {
    TensorFactors t = batch;
    for (int64_t d = batch_rank; d < a.ndim(); ++d) {
      t.push_back({b.AddFactor(a.shape[d])});
      b.NeedReplication(t.back()[0]);
    }
    return t;
  };
  for (const ShapedArray* a : in) b.AddOperand(with_core(*a));
  for (const ShapedArray& a : out) b.AddResult(with_core(a));
  return std::move(b).Build();
}

}  // namespace

void RegisterLinalgSharding(Registry& r) {
  for (Primitive p : {linalg::kCholesky, linalg::kTriangularSolve, linalg::kLu, linalg::kQr, linalg::kEigh,
                      linalg::kSvd}) {
    r.Define(p).sharding_rule = [p](InAvals in, const ParamMap&, absl::Span<const ShapedArray> out) {
      return LinalgRule(p.name(), in, out);
    };
    RequireShardingRule(p);
  }
}

}  // namespace jx::lax::internal
