#include "jx/sharding/spmd/partial_reductions.h"

#include <cstdint>

#include "jx/core/errors.h"
#include "jx/core/interpreter.h"
#include "jx/lax/lax.h"
#include "jx/lax/numpy/creation.h"
#include "jx/lax/primitives.h"
#include "jx/sharding/collectives.h"

namespace jx::spmd {
namespace {

// argmax/argmin over a sharded dimension: this block's extreme value and its index in the
// whole dimension, gathered from every block (stacked on a new major dim, in block order),
// then the first block holding the extreme gives the index.
Array CombineArgReduce(const Eqn& e, const Array& operand, const Array& partial, const AxisNames& axes) {
  const int64_t dim = e.params.GetInts("axes")[0];
  const DType index_dtype = e.params.GetDType("index_dtype");
  const bool is_max = e.primitive == lax::kArgmax;
  const Array extreme = is_max ? lax::reduce_max(operand, {dim}) : lax::reduce_min(operand, {dim});
  // Blocks are laid out row-major over the axes, major first: block b starts at b * size.
  const Array block = lax::convert_element_type(lax::axis_index(axes), index_dtype);
  const Array block_size = lax::convert_element_type(Array(operand.shape()[dim]), index_dtype);
  const Array global = lax::add(partial, lax::mul(block, block_size));
  const Array values = lax::all_gather(extreme, axes, 0, /*tiled=*/false);
  const Array indices = lax::all_gather(global, axes, 0, /*tiled=*/false);
  const Array winner = is_max ? lax::argmax(values, 0, DType::kInt32) : lax::argmin(values, 0, DType::kInt32);
  const Shape& stacked = indices.shape();
  std::vector<int64_t> rest(stacked.size() - 1);
  for (size_t d = 0; d < rest.size(); ++d) rest[d] = static_cast<int64_t>(d) + 1;
  const Array pick =
      lax::eq(lax::broadcasted_iota(DType::kInt32, stacked, 0), lax::broadcast_in_dim(winner, stacked, rest));
  return lax::reduce_sum(lax::select(pick, indices, numpy::zeros_like(indices)), {0});
}

}  // namespace

bool CombinesPartialReductions(Primitive p) {
  return p == lax::kReduceProd || p == lax::kReduceAnd || p == lax::kReduceOr || p == lax::kArgmax ||
         p == lax::kArgmin;
}

Array CombinePartialReduction(const Eqn& e, const Array& operand, const Array& partial,
                              const std::vector<std::string>& axes) {
  if (!CombinesPartialReductions(e.primitive)) {
    ThrowOpError<InternalError>(e.primitive.name(), "has no combiner for partial results over sharded reduced dims");
  }
  const AxisNames names(axes);
  if (e.primitive == lax::kArgmax || e.primitive == lax::kArgmin) return CombineArgReduce(e, operand, partial, names);
  // prod, and, or: associative and commutative, so the blocks' results reduce in any order.
  ParamMap params = e.params;
  params.Set("axes", std::vector<int64_t>{0});
  return Bind1(e.primitive, {lax::all_gather(partial, names, 0, /*tiled=*/false)}, params);
}

}  // namespace jx::spmd
