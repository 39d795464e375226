// Gather and scatter for the reference evaluator, with XLA's full dimension numbers.
// Gather clamps each start index so the slice fits in the operand; scatter skips an update
// window that does not fit entirely (as XLA's CPU and GPU backends do).
#include <algorithm>

#include "jx/compiler/hlo/hlo_evaluator_internal.h"
#include "jx/compiler/hlo/status_macros.h"

namespace jx::hlo::eval_internal {
namespace {

bool Contains(absl::Span<const int64_t> v, int64_t x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

// Reads the index vector for one batch position. `batch` holds the indices array's
// coordinates except index_vector_dim (in order); component k of the vector is at
// index_vector_dim = k (or the implicit trailing dimension when ivd == rank).
class IndexVectorReader {
 public:
  IndexVectorReader(const Literal& indices, int64_t index_vector_dim)
      : indices_(indices),
        ivd_(index_vector_dim),
        strides_(RowMajorStrides(indices.shape().dimensions())) {}

  int64_t size() const {
    return ivd_ == indices_.shape().rank() ? 1 : indices_.shape().dimensions(ivd_);
  }
  int64_t Read(absl::Span<const int64_t> batch, int64_t k) const {
    int64_t linear = 0;
    size_t b = 0;
    for (int64_t d = 0; d < indices_.shape().rank(); ++d) {
      const int64_t coord = d == ivd_ ? k : batch[b++];
      linear += coord * strides_[d];
    }
    return IndexValue(indices_, linear);
  }

 private:
  const Literal& indices_;
  int64_t ivd_;
  std::vector<int64_t> strides_;
};

}  // namespace

absl::StatusOr<Literal> EvalGather(const HloInstruction& instr, Operands ops) {
  const Literal &operand = *ops[0], &indices = *ops[1];
  const GatherDimensionNumbers& dn = instr.gather_dimension_numbers();
  const std::vector<int64_t>& slice_sizes = instr.gather_slice_sizes();
  const Shape& out_shape = instr.shape();
  const int64_t rank = operand.shape().rank();
  if (static_cast<int64_t>(slice_sizes.size()) != rank) {
    return Invalid("slice_sizes has ", slice_sizes.size(), " entries for a rank-", rank,
                   " operand");
  }
  if (dn.index_vector_dim < 0 || dn.index_vector_dim > indices.shape().rank()) {
    return Invalid("index_vector_dim=", dn.index_vector_dim, " out of range");
  }
  // Operand dims that keep a window dimension in the output, in order.
  std::vector<int64_t> window_operand_dims;
  for (int64_t d = 0; d < rank; ++d) {
    if (!Contains(dn.collapsed_slice_dims, d)) window_operand_dims.push_back(d);
  }
  std::vector<int64_t> offset_dims = dn.offset_dims;
  std::sort(offset_dims.begin(), offset_dims.end());
  if (offset_dims.size() != window_operand_dims.size()) {
    return Invalid("offset_dims has ", offset_dims.size(), " entries, expected ",
                   window_operand_dims.size());
  }
  std::vector<int64_t> batch_out_dims;
  for (int64_t d = 0; d < out_shape.rank(); ++d) {
    if (!Contains(offset_dims, d)) batch_out_dims.push_back(d);
  }
  IndexVectorReader reader(indices, dn.index_vector_dim);
  if (reader.size() != static_cast<int64_t>(dn.start_index_map.size())) {
    return Invalid("index vectors have ", reader.size(), " components but start_index_map=",
                   IntListToString(dn.start_index_map));
  }
  const std::vector<int64_t> in_strides = RowMajorStrides(operand.shape().dimensions());
  Literal out(out_shape);
  if (out.element_count() == 0) return out;
  std::vector<int64_t> idx(out_shape.rank(), 0), batch(batch_out_dims.size()), start(rank);
  int64_t o = 0;
  do {
    for (size_t b = 0; b < batch_out_dims.size(); ++b) batch[b] = idx[batch_out_dims[b]];
    std::fill(start.begin(), start.end(), 0);
    for (size_t k = 0; k < dn.start_index_map.size(); ++k) {
      const int64_t d = dn.start_index_map[k];
      start[d] = reader.Read(batch, static_cast<int64_t>(k));
    }
    int64_t src = 0;
    for (int64_t d = 0; d < rank; ++d) {
      const int64_t dim = operand.shape().dimensions(d);
      int64_t pos = std::clamp<int64_t>(start[d], 0, std::max<int64_t>(dim - slice_sizes[d], 0));
      auto w = std::find(window_operand_dims.begin(), window_operand_dims.end(), d);
      if (w != window_operand_dims.end()) pos += idx[offset_dims[w - window_operand_dims.begin()]];
      src += pos * in_strides[d];
    }
    CopyElement(operand, src, out, o++);
  } while (NextIndex(out_shape.dimensions(), idx));
  return out;
}

absl::StatusOr<Literal> EvalScatter(const HloInstruction& instr, Operands ops,
                                    HloEvaluator& evaluator) {
  if (ops.size() < 3 || ops.size() % 2 == 0) {
    return Invalid("expects N operands, indices and N updates, got ", ops.size(), " operands");
  }
  const int64_t n = (static_cast<int64_t>(ops.size()) - 1) / 2;
  const Literal& indices = *ops[n];
  const Shape& operand_shape = ops[0]->shape();
  const Shape& update_shape = ops[n + 1]->shape();
  const ScatterDimensionNumbers& dn = instr.scatter_dimension_numbers();
  const int64_t rank = operand_shape.rank();
  if (dn.index_vector_dim < 0 || dn.index_vector_dim > indices.shape().rank()) {
    return Invalid("index_vector_dim=", dn.index_vector_dim, " out of range");
  }
  std::vector<int64_t> window_operand_dims;
  for (int64_t d = 0; d < rank; ++d) {
    if (!Contains(dn.inserted_window_dims, d)) window_operand_dims.push_back(d);
  }
  std::vector<int64_t> update_window_dims = dn.update_window_dims;
  std::sort(update_window_dims.begin(), update_window_dims.end());
  if (update_window_dims.size() != window_operand_dims.size()) {
    return Invalid("update_window_dims has ", update_window_dims.size(),
                   " entries, expected ", window_operand_dims.size());
  }
  std::vector<int64_t> scatter_update_dims;
  for (int64_t d = 0; d < update_shape.rank(); ++d) {
    if (!Contains(update_window_dims, d)) scatter_update_dims.push_back(d);
  }
  IndexVectorReader reader(indices, dn.index_vector_dim);
  if (reader.size() != static_cast<int64_t>(dn.scatter_dims_to_operand_dims.size())) {
    return Invalid("index vectors have ", reader.size(),
                   " components but scatter_dims_to_operand_dims=",
                   IntListToString(dn.scatter_dims_to_operand_dims));
  }
  // Window extent per operand dim (1 for inserted dims).
  std::vector<int64_t> window_size(rank, 1);
  for (size_t j = 0; j < window_operand_dims.size(); ++j) {
    window_size[window_operand_dims[j]] = update_shape.dimensions(update_window_dims[j]);
  }

  std::vector<Literal> results;
  for (int64_t k = 0; k < n; ++k) results.push_back(*ops[k]);
  ScalarCaller combine(evaluator, instr.to_apply());
  HLO_RETURN_IF_ERROR(combine.status());
  if (combine.num_params() != 2 * n) {
    return Invalid("to_apply must take ", 2 * n, " scalars");
  }
  const std::vector<int64_t> out_strides = RowMajorStrides(operand_shape.dimensions());
  if (ShapeUtil::ElementsIn(update_shape) > 0) {
    std::vector<int64_t> u(update_shape.rank(), 0), batch(scatter_update_dims.size()),
        start(rank);
    int64_t u_linear = 0;
    do {
      for (size_t b = 0; b < scatter_update_dims.size(); ++b) batch[b] = u[scatter_update_dims[b]];
      std::fill(start.begin(), start.end(), 0);
      for (size_t k = 0; k < dn.scatter_dims_to_operand_dims.size(); ++k) {
        start[dn.scatter_dims_to_operand_dims[k]] = reader.Read(batch, static_cast<int64_t>(k));
      }
      bool in_bounds = true;
      int64_t dst = 0;
      for (int64_t d = 0; d < rank && in_bounds; ++d) {
        if (start[d] < 0 || start[d] > operand_shape.dimensions(d) - window_size[d]) {
          in_bounds = false;
          break;
        }
        int64_t pos = start[d];
        auto w = std::find(window_operand_dims.begin(), window_operand_dims.end(), d);
        if (w != window_operand_dims.end()) {
          pos += u[update_window_dims[w - window_operand_dims.begin()]];
        }
        dst += pos * out_strides[d];
      }
      if (in_bounds) {
        for (int64_t k = 0; k < n; ++k) {
          combine.SetArg(k, results[k], dst);
          combine.SetArg(n + k, *ops[n + 1 + k], u_linear);
        }
        HLO_RETURN_IF_ERROR(combine.Call());
        for (int64_t k = 0; k < n; ++k) CopyElement(combine.Result(k), 0, results[k], dst);
      }
      ++u_linear;
    } while (NextIndex(update_shape.dimensions(), u));
  }
  if (n == 1) return LiteralWithBytes(instr.shape(), results[0].untyped_data());
  return Literal::CreateTuple(std::move(results));
}

}  // namespace jx::hlo::eval_internal
