// Dot and kOutput fusion (dot + elementwise epilogue) on Eigen's GEMM. General dimension
// numbers are brought to [batch, m, k] x [batch, k, n]: an operand already in that order,
// or in [batch, k, m] / [batch, n, k], is mapped in place (transposed maps); any other
// order is transposed into a scratch copy first. Output rows are cut into fixed blocks (the
// same for any thread count, so results are reproducible); each block is one GEMM call, and
// a fused epilogue runs over the block's output while it is still in cache.
#include <algorithm>
#include <cstring>
#include <vector>

#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wignored-attributes"
#include <Eigen/Core>

#include "jx/compiler/backend/cpu/cpu_kernels.h"
#include "jx/compiler/backend/cpu/tile_program.h"
#include "jx/compiler/hlo/hlo_computation.h"
#include "jx/compiler/hlo/status_macros.h"

namespace jx::cpu::internal {
namespace {

using hlo::HloInstruction;
using hlo::HloOpcode;

constexpr int64_t kRowBlock = 64;

template <typename T>
using RowMat = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

// How an operand's memory reads as a matrix: as stored, transposed, or via a copy.
enum class Layout { kAsIs, kTransposed, kCopy };

struct OperandPlan {
  int slot = -1;
  Layout layout = Layout::kAsIs;
  std::vector<int64_t> dims;  // operand dims
  std::vector<int64_t> perm;  // canonical order (kCopy transposes into it)
};

bool IsIdentity(const std::vector<int64_t>& perm) {
  for (size_t i = 0; i < perm.size(); ++i) {
    if (perm[i] != static_cast<int64_t>(i)) return false;
  }
  return true;
}

// Canonical order: batch, then `first`, then `second` (free dims ascending).
OperandPlan PlanOperand(const HloInstruction& op, const std::vector<int64_t>& batch,
                        const std::vector<int64_t>& contracting, bool contracting_last,
                        int64_t* batch_size, int64_t* free_size, int64_t* contract_size) {
  OperandPlan plan;
  plan.dims = op.shape().dimensions();
  std::vector<bool> used(plan.dims.size(), false);
  for (int64_t d : batch) used[d] = true;
  for (int64_t d : contracting) used[d] = true;
  std::vector<int64_t> free;
  for (size_t d = 0; d < plan.dims.size(); ++d) {
    if (!used[d]) free.push_back(static_cast<int64_t>(d));
  }
  *batch_size = *free_size = *contract_size = 1;
  for (int64_t d : batch) *batch_size *= plan.dims[d];
  for (int64_t d : free) *free_size *= plan.dims[d];
  for (int64_t d : contracting) *contract_size *= plan.dims[d];
  auto order = [&](bool c_last) {
    std::vector<int64_t> p = batch;
    const auto& a = c_last ? free : contracting;
    const auto& b = c_last ? contracting : free;
    p.insert(p.end(), a.begin(), a.end());
    p.insert(p.end(), b.begin(), b.end());
    return p;
  };
  plan.perm = order(contracting_last);
  if (IsIdentity(plan.perm)) {
    plan.layout = Layout::kAsIs;
  } else if (IsIdentity(order(!contracting_last))) {
    plan.layout = Layout::kTransposed;
  } else {
    plan.layout = Layout::kCopy;
  }
  return plan;
}

// dst = src transposed so that dst dim i is src dim perm[i] (row-major, odometer walk).
template <typename T>
void TransposeCopy(const T* src, const std::vector<int64_t>& dims,
                   const std::vector<int64_t>& perm, T* dst) {
  const size_t r = dims.size();
  std::vector<int64_t> src_strides(r, 1), out_dims(r), idx(r, 0), stride(r);
  for (int64_t i = static_cast<int64_t>(r) - 2; i >= 0; --i) {
    src_strides[i] = src_strides[i + 1] * dims[i + 1];
  }
  int64_t total = 1;
  for (size_t i = 0; i < r; ++i) {
    out_dims[i] = dims[perm[i]];
    stride[i] = src_strides[perm[i]];
    total *= out_dims[i];
  }
  int64_t s = 0;
  for (int64_t j = 0; j < total; ++j) {
    dst[j] = src[s];
    for (int64_t k = static_cast<int64_t>(r) - 1; k >= 0; --k) {
      s += stride[k];
      if (++idx[k] < out_dims[k]) break;
      s -= stride[k] * out_dims[k];
      idx[k] = 0;
    }
  }
}

class DotKernel : public Kernel {
 public:
  absl::Status Run(absl::Span<const void* const> operands,
                   absl::Span<void* const> results) const override {
    if (type_ == hlo::F32) return RunTyped<float>(operands, results);
    return RunTyped<double>(operands, results);
  }
  std::string_view kind() const override {
    return epilogue_ == nullptr ? "dot" : "dot+epilogue";
  }

  template <typename T>
  absl::Status RunTyped(absl::Span<const void* const> operands,
                        absl::Span<void* const> results) const {
    std::vector<T> lhs_copy, rhs_copy;
    const T* lhs = Prepare<T>(lhs_, operands, lhs_copy);
    const T* rhs = Prepare<T>(rhs_, operands, rhs_copy);
    T* out = static_cast<T*>(results[0]);
    std::vector<T> dot_temp;
    T* dot_out = out;
    if (epilogue_ != nullptr && !in_place_) {
      dot_temp.resize(B_ * M_ * N_);
      dot_out = dot_temp.data();
    }
    std::vector<const void*> inputs(operands.begin(), operands.end());
    inputs.push_back(dot_out);  // the epilogue reads the dot at slot operand_count
    const int64_t row_blocks = (M_ + kRowBlock - 1) / kRowBlock;
    const bool fuse = epilogue_ != nullptr && in_place_;
    ParallelChunks(B_ * row_blocks, 1, [&](int64_t begin, int64_t end) {
      for (int64_t item = begin; item < end; ++item) {
        const int64_t b = item / row_blocks;
        const int64_t r0 = (item % row_blocks) * kRowBlock, r1 = std::min(M_, r0 + kRowBlock);
        Gemm<T>(lhs, rhs, b, r0, r1, dot_out);
        if (fuse) {
          const int64_t lo = (b * M_ + r0) * N_, hi = (b * M_ + r1) * N_;
          const int64_t tile = epilogue_->tile_elements();
          for (int64_t s = lo; s < hi; s += tile) {
            epilogue_->Evaluate(inputs.data(), s, std::min(tile, hi - s), out + s, true);
          }
        }
      }
    });
    if (epilogue_ != nullptr && !in_place_) {
      const int64_t tile = epilogue_->tile_elements();
      const int64_t esize = epilogue_->element_size();
      uint8_t* o = static_cast<uint8_t*>(results[0]);
      ParallelChunks(out_elements_, std::max<int64_t>(1, 16384 / tile) * tile,
                     [&](int64_t begin, int64_t end) {
                       for (int64_t s = begin; s < end; s += tile) {
                         epilogue_->Evaluate(inputs.data(), s, std::min(tile, end - s),
                                             o + s * esize);
                       }
                     });
    }
    return absl::OkStatus();
  }

  template <typename T>
  const T* Prepare(const OperandPlan& p, absl::Span<const void* const> operands,
                   std::vector<T>& copy) const {
    const T* src = static_cast<const T*>(operands[p.slot]);
    if (p.layout != Layout::kCopy) return src;
    int64_t total = 1;
    for (int64_t d : p.dims) total *= d;
    copy.resize(total);
    if (total > 0) TransposeCopy(src, p.dims, p.perm, copy.data());
    return copy.data();
  }

  // out[b, r0:r1, :] = lhs[b, r0:r1, :] @ rhs[b].
  template <typename T>
  void Gemm(const T* lhs, const T* rhs, int64_t b, int64_t r0, int64_t r1, T* out) const {
    const int64_t rows = r1 - r0;
    Eigen::Map<RowMat<T>> c(out + (b * M_ + r0) * N_, rows, N_);
    if (K_ == 0) {
      c.setZero();
      return;
    }
    const T* a = lhs + b * M_ * K_;
    const T* bm = rhs + b * K_ * N_;
    auto run = [&](const auto& lhs_block) {
      if (rhs_.layout == Layout::kTransposed) {
        c.noalias() = lhs_block * Eigen::Map<const RowMat<T>>(bm, N_, K_).transpose();
      } else {
        c.noalias() = lhs_block * Eigen::Map<const RowMat<T>>(bm, K_, N_);
      }
    };
    if (lhs_.layout == Layout::kTransposed) {
      run(Eigen::Map<const RowMat<T>>(a, K_, M_).middleCols(r0, rows).transpose());
    } else {
      run(Eigen::Map<const RowMat<T>>(a + r0 * K_, rows, K_));
    }
  }

  hlo::PrimitiveType type_ = hlo::F32;
  OperandPlan lhs_, rhs_;
  int64_t B_ = 1, M_ = 1, N_ = 1, K_ = 1, out_elements_ = 0;
  std::unique_ptr<TileProgram> epilogue_;
  bool in_place_ = false;
};

}  // namespace

absl::StatusOr<std::unique_ptr<Kernel>> MakeDotKernel(const HloInstruction& instr,
                                                      int64_t tile_elements) {
  const HloInstruction* dot = &instr;
  LeafResolver leaves = OperandLeaves(&instr);
  const HloInstruction* root = nullptr;
  if (instr.opcode() == HloOpcode::kFusion) {
    const hlo::HloComputation* body = instr.fused_instructions_computation();
    if (body == nullptr) return absl::InvalidArgumentError("fusion without a fused computation");
    dot = nullptr;
    for (const HloInstruction* i : body->instructions()) {
      if (i->opcode() == HloOpcode::kDot) {
        if (dot != nullptr) return absl::UnimplementedError("more than one dot");
        dot = i;
      }
    }
    if (dot == nullptr) return absl::UnimplementedError("no dot in the fusion");
    leaves = ParameterLeaves();
    if (body->root_instruction() != dot) root = body->root_instruction();
  }
  if (dot->opcode() != HloOpcode::kDot) return absl::UnimplementedError("not a dot");
  const hlo::PrimitiveType type = dot->shape().element_type();
  if ((type != hlo::F32 && type != hlo::F64) ||
      dot->operand(0)->shape().element_type() != type ||
      dot->operand(1)->shape().element_type() != type) {
    return absl::UnimplementedError("dot type without GEMM");
  }
  auto kernel = std::make_unique<DotKernel>();
  kernel->type_ = type;
  const hlo::DotDimensionNumbers& dn = dot->dot_dimension_numbers();
  int64_t b1, b2, k1, k2;
  kernel->lhs_ = PlanOperand(*dot->operand(0), dn.lhs_batch_dims, dn.lhs_contracting_dims,
                             /*contracting_last=*/true, &b1, &kernel->M_, &k1);
  kernel->rhs_ = PlanOperand(*dot->operand(1), dn.rhs_batch_dims, dn.rhs_contracting_dims,
                             /*contracting_last=*/false, &b2, &kernel->N_, &k2);
  if (b1 != b2 || k1 != k2) return absl::InternalError("dot dimension sizes disagree");
  kernel->B_ = b1;
  kernel->K_ = k1;
  kernel->lhs_.slot = leaves(dot->operand(0));
  kernel->rhs_.slot = leaves(dot->operand(1));
  if (kernel->lhs_.slot < 0 || kernel->rhs_.slot < 0) {
    return absl::UnimplementedError("dot operand computed inside the fusion");
  }
  kernel->out_elements_ = hlo::ShapeUtil::ElementsIn(instr.shape());
  if (root != nullptr) {
    if (!root->shape().IsArray()) return absl::UnimplementedError("tuple root");
    const int dot_slot = static_cast<int>(instr.operand_count());
    LeafResolver epilogue_leaves = [dot, dot_slot](const HloInstruction* i) -> int {
      if (i == dot) return dot_slot;
      return i->opcode() == HloOpcode::kParameter ? static_cast<int>(i->parameter_number()) : -1;
    };
    HLO_ASSIGN_OR_RETURN(kernel->epilogue_,
                         TileProgram::Compile(root, epilogue_leaves, tile_elements));
    kernel->in_place_ = root->shape().element_type() == type &&
                        root->shape().dimensions() == dot->shape().dimensions() &&
                        kernel->epilogue_->InputReadInPlace(dot_slot);
  }
  return kernel;
}

}  // namespace jx::cpu::internal
