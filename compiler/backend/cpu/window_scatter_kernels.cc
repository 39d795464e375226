// Native reduce-window and scatter with a simple binary reducer/combiner, folding in the
// evaluator's order (so the bits match):
//   reduce-window  general windows (strides, padding, base and window dilation). Each
//                  dim's valid base positions per output coordinate are listed once at the
//                  first run's shape; an output folds the row-major product of its dims'
//                  lists. Outputs are spread over cores. Running scans (hlo::AsScanWindow,
//                  O(n) per line) are left to the scan kernel / evaluator: a window walk
//                  would be O(n^2).
//   scatter        one operand, indices and updates; combiner op(old, update) or the
//                  update itself (overwrite). Updates apply sequentially in row-major
//                  order (later duplicates win / accumulate in order); each update's start
//                  index is read once per scatter position, not per window element.
#include <algorithm>
#include <cstring>
#include <limits>
#include <vector>

#include "jx/compiler/backend/cpu/cpu_kernels.h"
#include "jx/compiler/backend/cpu/scalar_semantics.h"
#include "jx/compiler/hlo/hlo_computation.h"

namespace jx::cpu::internal {
namespace {

using hlo::HloInstruction;
using hlo::HloOpcode;

constexpr int64_t kMinChunkWork = 65536;

std::vector<int64_t> RowMajorStrides(const std::vector<int64_t>& dims) {
  std::vector<int64_t> s(dims.size(), 1);
  for (int64_t d = static_cast<int64_t>(dims.size()) - 2; d >= 0; --d) s[d] = s[d + 1] * dims[d + 1];
  return s;
}

// Per dim: for output coordinate o, the element offsets (base position * stride) of the
// window elements that land on real base elements, in window order.
struct DimLists {
  std::vector<int64_t> begin;  // out_dim + 1 entries into offsets
  std::vector<int64_t> offsets;
};

template <typename E, HloOpcode kOp>
class ReduceWindowKernel : public Kernel {
 public:
  using C = typename E::Compute;

  absl::Status Run(absl::Span<const void* const> operands,
                   absl::Span<void* const> results) const override {
    const void* x = operands[0];
    const C init = E::Load(operands[1], 0);
    void* out = results[0];
    const int64_t rank = static_cast<int64_t>(out_dims_.size());
    const int64_t grain = std::max<int64_t>(1, kMinChunkWork / std::max<int64_t>(window_, 1));
    ParallelChunks(outputs_, grain, [&](int64_t begin, int64_t end) {
      std::vector<int64_t> o(rank), k(rank), off(rank + 1);
      int64_t rest = begin;
      for (int64_t d = rank - 1; d >= 0; --d) {
        o[d] = rest % out_dims_[d];
        rest /= out_dims_[d];
      }
      for (int64_t lin = begin; lin < end; ++lin) {
        C acc = init;
        bool empty = false;
        for (int64_t d = 0; d < rank; ++d) {
          if (lists_[d].begin[o[d]] == lists_[d].begin[o[d] + 1]) empty = true;
          k[d] = lists_[d].begin[o[d]];
        }
        if (!empty) {
          // Row-major walk over the dims' lists; off[d] = offset of dims < d.
          off[0] = 0;
          for (int64_t d = 0; d < rank; ++d) off[d + 1] = off[d] + lists_[d].offsets[k[d]];
          while (true) {
            acc = Step<E, kOp>(acc, E::Load(x, off[rank]));
            int64_t d = rank - 1;
            while (d >= 0 && ++k[d] == lists_[d].begin[o[d] + 1]) {
              k[d] = lists_[d].begin[o[d]];
              --d;
            }
            if (d < 0) break;
            for (int64_t e = d; e < rank; ++e) off[e + 1] = off[e] + lists_[e].offsets[k[e]];
          }
        }
        E::Store(out, lin, acc);
        for (int64_t d = rank - 1; d >= 0 && ++o[d] == out_dims_[d]; --d) o[d] = 0;
      }
    });
    return absl::OkStatus();
  }
  std::string_view kind() const override { return "reduce-window"; }

  std::vector<int64_t> out_dims_;
  std::vector<DimLists> lists_;
  int64_t outputs_ = 0, window_ = 1;
};

template <typename E, HloOpcode kOp, bool kOverwrite>
class ScatterKernel : public Kernel {
 public:
  using C = typename E::Compute;

  absl::Status Run(absl::Span<const void* const> operands,
                   absl::Span<void* const> results) const override {
    using S = typename E::Storage;
    S* out = static_cast<S*>(results[0]);
    if (out != operands[0] && operand_elements_ > 0) {
      std::memcpy(out, operands[0], operand_elements_ * sizeof(S));
    }
    const void* indices = operands[1];
    const void* updates = operands[2];
    if (update_elements_ == 0) return absl::OkStatus();
    const int64_t urank = static_cast<int64_t>(update_dims_.size());
    const int64_t rank = static_cast<int64_t>(operand_dims_.size());
    std::vector<int64_t> u(urank, 0), start(rank);
    int64_t prev_batch = -1, base = 0;
    bool in_bounds = false;
    for (int64_t lin = 0; lin < update_elements_; ++lin) {
      int64_t batch = 0, window = 0;
      for (int64_t d = 0; d < urank; ++d) {
        batch += u[d] * index_stride_[d];
        window += u[d] * window_stride_[d];
      }
      if (batch != prev_batch) {
        prev_batch = batch;
        std::fill(start.begin(), start.end(), 0);
        for (size_t k = 0; k < scatter_to_operand_.size(); ++k) {
          start[scatter_to_operand_[k]] = read_index_(indices, batch + k * vector_stride_);
        }
        in_bounds = true;
        base = 0;
        for (int64_t d = 0; d < rank; ++d) {
          if (start[d] < 0 || start[d] > operand_dims_[d] - window_size_[d]) in_bounds = false;
          base += start[d] * operand_strides_[d];
        }
      }
      if (in_bounds) {
        const int64_t dst = base + window;
        if constexpr (kOverwrite) {
          out[dst] = static_cast<const S*>(updates)[lin];
        } else {
          E::Store(out, dst, Step<E, kOp>(E::Load(out, dst), E::Load(updates, lin)));
        }
      }
      for (int64_t d = urank - 1; d >= 0 && ++u[d] == update_dims_[d]; --d) u[d] = 0;
    }
    return absl::OkStatus();
  }
  std::string_view kind() const override { return "scatter"; }

  using ReadIndexFn = int64_t (*)(const void* indices, int64_t i);
  ReadIndexFn read_index_ = nullptr;
  std::vector<int64_t> operand_dims_, operand_strides_, window_size_, update_dims_;
  // Per update dim: its contribution to the index vector's position (batch dims) and to
  // the destination offset (window dims); zero for the other role.
  std::vector<int64_t> index_stride_, window_stride_;
  std::vector<int64_t> scatter_to_operand_;
  int64_t vector_stride_ = 0, operand_elements_ = 0, update_elements_ = 0;
};

// Index values as the evaluator reads them (unsigned values above int64 max saturate).
template <typename E>
int64_t ReadIndex(const void* indices, int64_t i) {
  const auto v = static_cast<const typename E::Storage*>(indices)[i];
  if constexpr (std::is_unsigned_v<typename E::Storage>) {
    return v > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())
               ? std::numeric_limits<int64_t>::max()
               : static_cast<int64_t>(v);
  } else {
    return static_cast<int64_t>(v);
  }
}

}  // namespace

absl::StatusOr<std::unique_ptr<Kernel>> MakeReduceWindowKernel(const HloInstruction& instr) {
  if (instr.opcode() != HloOpcode::kReduceWindow || instr.operand_count() != 2 ||
      !instr.shape().IsArray() || !instr.operand(0)->shape().IsArray()) {
    return absl::UnimplementedError("not a single-input reduce-window");
  }
  const hlo::Shape& in = instr.operand(0)->shape();
  const hlo::Window& w = instr.window();
  if (hlo::AsScanWindow(w, in.dimensions())) {
    return absl::UnimplementedError("running scan: left to the scan kernel");
  }
  const std::optional<HloOpcode> op = SimpleBinaryReducer(*instr.to_apply());
  const hlo::PrimitiveType type = instr.shape().element_type();
  if (!op || in.element_type() != type ||
      static_cast<int64_t>(w.size()) != in.rank()) {
    return absl::UnimplementedError("reducer is not a simple binary op");
  }
  const std::vector<int64_t> strides = RowMajorStrides(in.dimensions());
  std::vector<DimLists> lists(w.size());
  int64_t window = 1;
  for (size_t d = 0; d < w.size(); ++d) {
    const hlo::WindowDim& wd = w[d];
    if (wd.stride < 1 || wd.lhs_dilation < 1 || wd.rhs_dilation < 1 || wd.size < 0) {
      return absl::UnimplementedError("bad window");
    }
    window *= std::max<int64_t>(wd.size, 1);
    const int64_t out_d = instr.shape().dimensions(d);
    DimLists& l = lists[d];
    for (int64_t o = 0; o < out_d; ++o) {
      l.begin.push_back(static_cast<int64_t>(l.offsets.size()));
      for (int64_t k = 0; k < wd.size; ++k) {
        const int64_t pos = o * wd.stride + k * wd.rhs_dilation - wd.pad_low;
        if (pos < 0 || pos % wd.lhs_dilation != 0) continue;
        const int64_t b = pos / wd.lhs_dilation;
        if (b >= in.dimensions(d)) continue;
        l.offsets.push_back(b * strides[d]);
      }
    }
    l.begin.push_back(static_cast<int64_t>(l.offsets.size()));
  }
  std::unique_ptr<Kernel> kernel;
  VisitType(type, [&](auto e) {
    using E = decltype(e);
    VisitReducer<E>(*op, [&](auto kop) {
      auto k = std::make_unique<ReduceWindowKernel<E, decltype(kop)::value>>();
      k->out_dims_ = instr.shape().dimensions();
      k->lists_ = std::move(lists);
      k->outputs_ = hlo::ShapeUtil::ElementsIn(instr.shape());
      k->window_ = window;
      kernel = std::move(k);
    });
  });
  if (kernel == nullptr) return absl::UnimplementedError("reducer op not defined on the type");
  return kernel;
}

absl::StatusOr<std::unique_ptr<Kernel>> MakeScatterKernel(const HloInstruction& instr) {
  if (instr.opcode() != HloOpcode::kScatter || instr.operand_count() != 3 ||
      !instr.shape().IsArray()) {
    return absl::UnimplementedError("not a single-operand scatter");
  }
  for (const HloInstruction* op : instr.operands()) {
    if (!op->shape().IsArray()) return absl::UnimplementedError("tuple operand");
  }
  const hlo::Shape& operand = instr.operand(0)->shape();
  const hlo::Shape& indices = instr.operand(1)->shape();
  const hlo::Shape& updates = instr.operand(2)->shape();
  const hlo::PrimitiveType type = operand.element_type();
  if (updates.element_type() != type || hlo::IsFloatingPointType(indices.element_type()) ||
      indices.element_type() == hlo::PRED) {
    return absl::UnimplementedError("operand/update or index types");
  }
  const hlo::HloComputation& combiner = *instr.to_apply();
  const HloInstruction* root = combiner.root_instruction();
  const bool overwrite = combiner.num_parameters() == 2 &&
                         root->opcode() == HloOpcode::kParameter &&
                         root->parameter_number() == 1;
  const std::optional<HloOpcode> op = SimpleBinaryReducer(combiner);
  if (!overwrite && !op) return absl::UnimplementedError("combiner");

  const hlo::ScatterDimensionNumbers& dn = instr.scatter_dimension_numbers();
  const int64_t rank = operand.rank();
  const int64_t irank = indices.rank();
  if (dn.index_vector_dim < 0 || dn.index_vector_dim > irank) {
    return absl::UnimplementedError("index_vector_dim");
  }
  std::vector<int64_t> window_operand_dims;
  for (int64_t d = 0; d < rank; ++d) {
    if (std::find(dn.inserted_window_dims.begin(), dn.inserted_window_dims.end(), d) ==
        dn.inserted_window_dims.end()) {
      window_operand_dims.push_back(d);
    }
  }
  std::vector<int64_t> update_window_dims = dn.update_window_dims;
  std::sort(update_window_dims.begin(), update_window_dims.end());
  const int64_t vector_size =
      dn.index_vector_dim == irank ? 1 : indices.dimensions(dn.index_vector_dim);
  if (update_window_dims.size() != window_operand_dims.size() ||
      static_cast<int64_t>(dn.scatter_dims_to_operand_dims.size()) != vector_size) {
    return absl::UnimplementedError("inconsistent dimension numbers");
  }
  for (int64_t d : dn.scatter_dims_to_operand_dims) {
    if (d < 0 || d >= rank) return absl::UnimplementedError("scatter_dims_to_operand_dims");
  }
  const std::vector<int64_t> op_strides = RowMajorStrides(operand.dimensions());
  const std::vector<int64_t> idx_strides = RowMajorStrides(indices.dimensions());
  std::vector<int64_t> window_size(rank, 1);
  std::vector<int64_t> index_stride(updates.rank(), 0), window_stride(updates.rank(), 0);
  for (size_t j = 0; j < window_operand_dims.size(); ++j) {
    window_size[window_operand_dims[j]] = updates.dimensions(update_window_dims[j]);
    window_stride[update_window_dims[j]] = op_strides[window_operand_dims[j]];
  }
  // Batch (scatter) update dims, in order, map to the index dims other than the vector dim.
  int64_t next_index_dim = 0;
  for (int64_t d = 0; d < updates.rank(); ++d) {
    if (std::find(update_window_dims.begin(), update_window_dims.end(), d) !=
        update_window_dims.end()) {
      continue;
    }
    if (next_index_dim == dn.index_vector_dim) ++next_index_dim;
    if (next_index_dim >= irank) return absl::UnimplementedError("update batch dims");
    index_stride[d] = idx_strides[next_index_dim++];
  }
  std::unique_ptr<Kernel> kernel;
  auto fill = [&](auto* k) {
    k->operand_dims_ = operand.dimensions();
    k->operand_strides_ = op_strides;
    k->window_size_ = window_size;
    k->update_dims_ = updates.dimensions();
    k->index_stride_ = index_stride;
    k->window_stride_ = window_stride;
    k->scatter_to_operand_ = dn.scatter_dims_to_operand_dims;
    k->vector_stride_ = dn.index_vector_dim == irank ? 0 : idx_strides[dn.index_vector_dim];
    k->operand_elements_ = hlo::ShapeUtil::ElementsIn(operand);
    k->update_elements_ = hlo::ShapeUtil::ElementsIn(updates);
    VisitType(indices.element_type(), [&](auto ei) {
      using EI = decltype(ei);
      if constexpr (!EI::kIsFloat) k->read_index_ = &ReadIndex<EI>;
    });
  };
  VisitType(type, [&](auto e) {
    using E = decltype(e);
    if (overwrite) {
      auto k = std::make_unique<ScatterKernel<E, HloOpcode::kAdd, true>>();
      fill(k.get());
      kernel = std::move(k);
      return;
    }
    VisitReducer<E>(*op, [&](auto kop) {
      auto k = std::make_unique<ScatterKernel<E, decltype(kop)::value, false>>();
      fill(k.get());
      kernel = std::move(k);
    });
  });
  if (kernel == nullptr) return absl::UnimplementedError("combiner op not defined on the type");
  return kernel;
}

}  // namespace jx::cpu::internal
