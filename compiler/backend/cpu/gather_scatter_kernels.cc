// Native gather and scatter: thin adapters from the HLO instruction to the kernel library's
// gather/scatter (lax/kernels/gather_scatter.h), which eager lax::gather / scatter /
// scatter_add run too, so jit and eager agree bit for bit. XLA's out-of-bounds rules: a
// gather clamps each start index so its slice is inside the operand, a scatter drops a
// window that would leave it. The instruction's shapes and dimension numbers are read once
// at compile time. A gather whose rows a select then replaces by a fill value where its mask
// is false (FILL_OR_DROP, fused by masked_gather_fusion.h) fills those rows itself. A scatter
// with any other elementwise update computation (scatter_apply) runs in rounds of distinct
// destinations, its computation as a tile program.
#include <algorithm>
#include <cstring>

#include "absl/container/flat_hash_map.h"
#include <memory>
#include <limits>
#include <type_traits>
#include <optional>
#include <string>
#include <vector>

#include "jx/compiler/backend/cpu/cpu_kernels.h"
#include "jx/compiler/backend/cpu/masked_gather_fusion.h"
#include "jx/compiler/backend/cpu/tile_program.h"
#include "jx/compiler/backend/cpu/scalar_semantics.h"
#include "jx/compiler/backend/cpu/vector_computation.h"
#include "jx/compiler/hlo/hlo_builder.h"
#include "jx/compiler/hlo/hlo_module.h"
#include "jx/compiler/hlo/hlo_computation.h"
#include "jx/compiler/hlo/status_macros.h"
#include "jx/core/errors.h"
#include "jx/lax/kernels/copy_kernels.h"
#include "jx/lax/kernels/gather_scatter.h"

namespace jx::cpu::internal {
namespace {

using hlo::HloInstruction;
using hlo::HloOpcode;
using lax::kernels::ScatterCombiner;

// Runs a kernel-library call, turning an exception into a Status.
template <typename Fn>
absl::Status Guarded(std::string_view op, Fn&& fn) {
  try {
    fn();
  } catch (const std::exception& e) {
    return absl::InternalError(std::string(op) + ": " + e.what());
  }
  return absl::OkStatus();
}

// Where the index vector lies. The kernel library reads it from the last dim (or as one
// implicit component); an index vector dim elsewhere is moved last at run time, as int64.
struct IndexPlan {
  bool implicit = false;
  int64_t moved_dim = -1;  // >= 0: the vector dim to move last
  std::vector<int64_t> shape;  // the shape the kernel library sees
  hlo::PrimitiveType type = hlo::S32;
};

IndexPlan PlanIndices(const hlo::Shape& indices, int64_t index_vector_dim) {
  IndexPlan p;
  p.type = indices.element_type();
  p.shape = hlo::SpanToVector(indices.dimensions());
  if (index_vector_dim == indices.rank()) {
    p.implicit = true;
  } else if (index_vector_dim != indices.rank() - 1) {
    p.moved_dim = index_vector_dim;
    p.shape.erase(p.shape.begin() + index_vector_dim);
    p.shape.push_back(indices.dimensions(index_vector_dim));
  }
  return p;
}

// The indices with the vector dim moved last, as int64 (uint64 past int64's range saturates).
std::vector<int64_t> MoveIndexVectorLast(const IndexPlan& p, const void* data) {
  const int64_t rank = static_cast<int64_t>(p.shape.size());
  const int64_t n = p.shape.back();
  int64_t total = 1;
  for (int64_t d : p.shape) total *= d;
  // Source strides of the kernel-order dims: batch dims in order, then the vector dim.
  std::vector<int64_t> src_dims = p.shape;
  src_dims.pop_back();
  src_dims.insert(src_dims.begin() + p.moved_dim, n);
  std::vector<int64_t> src_strides(src_dims.size(), 1);
  for (size_t d = src_dims.size(); d-- > 1;) src_strides[d - 1] = src_strides[d] * src_dims[d];
  std::vector<int64_t> strides;  // per kernel-order dim
  for (int64_t d = 0; d < static_cast<int64_t>(src_dims.size()); ++d) {
    if (d != p.moved_dim) strides.push_back(src_strides[d]);
  }
  strides.push_back(src_strides[p.moved_dim]);
  std::vector<int64_t> out(total);
  VisitType(p.type, [&](auto e) {
    using S = typename decltype(e)::Storage;
    const S* in = static_cast<const S*>(data);
    std::vector<int64_t> idx(rank, 0);
    int64_t off = 0;
    for (int64_t i = 0; i < total; ++i) {
      const S v = in[off];
      if constexpr (std::is_unsigned_v<S> && sizeof(S) == 8) {
        out[i] = v > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())
                     ? std::numeric_limits<int64_t>::max()
                     : static_cast<int64_t>(v);
      } else {
        out[i] = static_cast<int64_t>(v);
      }
      for (int64_t d = rank - 1; d >= 0; --d) {
        off += strides[d];
        if (++idx[d] < p.shape[d]) break;
        off -= strides[d] * p.shape[d];
        idx[d] = 0;
      }
    }
  });
  return out;
}

// Runs fn(IndexArray) on the instruction's indices as the kernel library reads them.
template <typename Fn>
void WithIndices(const IndexPlan& p, DType dtype, const void* data, Fn&& fn) {
  if (p.moved_dim < 0) {
    fn(lax::kernels::IndexArray{dtype, data, p.shape});
    return;
  }
  const std::vector<int64_t> moved = MoveIndexVectorLast(p, data);
  fn(lax::kernels::IndexArray{DType::kInt64, moved.data(), p.shape});
}

bool IsIndexType(hlo::PrimitiveType t) {
  return hlo::IsIntegralType(t);
}

class GatherKernel : public Kernel {
 public:
  absl::Status Run(absl::Span<const void* const> operands,
                   absl::Span<void* const> results) const override {
    return Guarded("gather", [&] {
      WithIndices(indices_, index_dtype_, operands[1], [&](const lax::kernels::IndexArray& idx) {
        lax::kernels::Gather(elem_size_, operands[0], operand_shape_, idx, dims_, slice_sizes_,
                             /*fill_value=*/nullptr, results[0], out_shape_);
      });
    });
  }
  std::string_view kind() const override { return "gather"; }

  int64_t elem_size_ = 0;
  DType index_dtype_ = DType::kInt32;
  IndexPlan indices_;
  std::vector<int64_t> operand_shape_, slice_sizes_, out_shape_;
  lax::kernels::GatherDims dims_;
};

// A fusion select(broadcast(mask), gather, fill) (masked_gather_fusion.h): the mask (pred,
// over the gather's batch positions: small) is computed first by a tile program, the gather
// writes every slice, and the fill value then overwrites the elements whose mask is false,
// usually none. One pass over the gathered data instead of two.
class MaskedGatherKernel : public Kernel {
 public:
  absl::Status Run(absl::Span<const void* const> operands,
                   absl::Span<void* const> results) const override {
    const uint8_t* mask = nullptr;
    std::vector<uint8_t> computed;
    if (mask_parameter_ >= 0) {
      mask = static_cast<const uint8_t*>(operands[mask_parameter_]);
    } else {
      computed.resize(static_cast<size_t>(mask_elements_));
      const int64_t tile = mask_program_->tile_elements();
      for (int64_t start = 0; start < mask_elements_; start += tile) {
        mask_program_->Evaluate(operands.data(), start, std::min(tile, mask_elements_ - start),
                                computed.data() + start);
      }
      mask = computed.data();
    }
    const void* gather_operands[] = {operands[gather_operand_], operands[gather_indices_]};
    HLO_RETURN_IF_ERROR(gather_->Run(gather_operands, results));
    if (std::find(mask, mask + mask_elements_, 0) == mask + mask_elements_) return absl::OkStatus();
    uint8_t* out = static_cast<uint8_t*>(results[0]);
    auto fill = [&](int64_t element) {
      std::memcpy(out + element * esize_, fill_.data(), static_cast<size_t>(esize_));
    };
    if (mask_is_prefix_) {
      // Mask element m covers the run [m * inner, (m + 1) * inner) of the result.
      const int64_t inner = mask_elements_ == 0 ? 0 : out_elements_ / mask_elements_;
      for (int64_t m = 0; m < mask_elements_; ++m) {
        if (mask[m] == 0) for (int64_t e = m * inner; e < (m + 1) * inner; ++e) fill(e);
      }
      return absl::OkStatus();
    }
    // Any broadcast: walk the result with an odometer, tracking the mask position.
    std::vector<int64_t> index(out_dims_.size(), 0);
    int64_t m = 0;
    for (int64_t e = 0; e < out_elements_; ++e) {
      if (mask[m] == 0) fill(e);
      for (int64_t d = static_cast<int64_t>(out_dims_.size()) - 1; d >= 0; --d) {
        if (++index[d] < out_dims_[d]) {
          m += mask_stride_[d];
          break;
        }
        m -= (out_dims_[d] - 1) * mask_stride_[d];
        index[d] = 0;
      }
    }
    return absl::OkStatus();
  }
  std::string_view kind() const override { return "gather"; }

  std::unique_ptr<Kernel> gather_;
  int64_t gather_operand_ = 0, gather_indices_ = 0;
  int64_t mask_parameter_ = -1;  // the mask is this fusion parameter, else mask_program_
  std::unique_ptr<TileProgram> mask_program_;
  int64_t mask_elements_ = 0, out_elements_ = 0, esize_ = 0;
  bool mask_is_prefix_ = false;
  std::vector<int64_t> out_dims_, mask_stride_;  // mask_stride_: per result dim (0: broadcast)
  std::vector<uint8_t> fill_;
};

class ScatterKernel : public Kernel {
 public:
  absl::Status Run(absl::Span<const void* const> operands,
                   absl::Span<void* const> results) const override {
    if (results[0] != operands[0]) {
      lax::kernels::ParallelMemcpy(results[0], operands[0], operand_bytes_);
    }
    return Guarded("scatter", [&] {
      WithIndices(indices_, index_dtype_, operands[1], [&](const lax::kernels::IndexArray& idx) {
        lax::kernels::Scatter(dtype_, combiner_, results[0], operand_shape_, idx, operands[2],
                              updates_shape_, dims_, /*clamp=*/false);
      });
    });
  }
  std::string_view kind() const override { return "scatter"; }

  DType dtype_ = DType::kFloat32, index_dtype_ = DType::kInt32;
  ScatterCombiner combiner_ = ScatterCombiner::kOverwrite;
  int64_t operand_bytes_ = 0;
  IndexPlan indices_;
  std::vector<int64_t> operand_shape_, updates_shape_;
  lax::kernels::ScatterDims dims_;
};

// The kernel library's combiner for a scatter's to_apply: the update itself, or one binary op
// of (old, update). Pred or/and are add/mul in the library's bool semantics.
std::optional<ScatterCombiner> CombinerOf(const hlo::HloComputation& c, hlo::PrimitiveType type) {
  const HloInstruction* root = c.root_instruction();
  if (c.num_parameters() == 2 && root->opcode() == HloOpcode::kParameter &&
      root->parameter_number() == 1) {
    return ScatterCombiner::kOverwrite;
  }
  const std::optional<HloOpcode> op = SimpleBinaryReducer(c);
  if (!op) return std::nullopt;
  switch (*op) {
    case HloOpcode::kAdd: return ScatterCombiner::kAdd;
    case HloOpcode::kMultiply: return ScatterCombiner::kMul;
    case HloOpcode::kMaximum: return ScatterCombiner::kMax;
    case HloOpcode::kMinimum: return ScatterCombiner::kMin;
    case HloOpcode::kOr:
      if (type == hlo::PRED) return ScatterCombiner::kAdd;
      return std::nullopt;
    case HloOpcode::kAnd:
      if (type == hlo::PRED) return ScatterCombiner::kMul;
      return std::nullopt;
    default: return std::nullopt;
  }
}


// A scatter whose update computation the library has no combiner for (JAX's scatter_apply,
// whose computation is (x, _) -> fn(x), or any elementwise computation of (old, update)):
// eager scatter_apply's algorithm (lax/scatter_apply.cc) on the same bits. The kernel
// library lists each update element's flat destination (-1 where XLA drops the window); the
// updates then apply in rounds, round r taking
// every destination's r-th update in update order, so a round's destinations are distinct:
// their old values and updates are packed, the computation runs over them as one tile
// program (its vector form, compiled once), and the results are written back. O(updates).
class ScatterApplyKernel : public Kernel {
 public:
  absl::Status Run(absl::Span<const void* const> operands,
                   absl::Span<void* const> results) const override {
    if (results[0] != operands[0]) {
      lax::kernels::ParallelMemcpy(results[0], operands[0], operand_elements_ * esize_);
    }
    if (operand_elements_ == 0 || update_elements_ == 0) return absl::OkStatus();
    return Guarded("scatter", [&] {
      std::vector<int64_t> dest(static_cast<size_t>(update_elements_));
      WithIndices(indices_, index_dtype_, operands[1], [&](const lax::kernels::IndexArray& idx) {
        lax::kernels::ScatterDestinations(operand_shape_, idx, updates_shape_, dims_, /*clamp=*/false, dest.data());
      });
      std::vector<std::vector<int64_t>> rounds;  // update elements, by rank at their destination
      absl::flat_hash_map<int64_t, size_t> seen;
      for (int64_t e = 0; e < update_elements_; ++e) {
        if (dest[static_cast<size_t>(e)] < 0) continue;
        const size_t r = seen[dest[static_cast<size_t>(e)]]++;
        if (r == rounds.size()) rounds.emplace_back();
        rounds[r].push_back(e);
      }
      const size_t widest = rounds.empty() ? 0 : rounds[0].size();  // each destination's first update
      std::vector<uint8_t> old(widest * esize_), upd(widest * esize_), fresh(widest * esize_);
      auto* out = static_cast<uint8_t*>(results[0]);
      const auto* updates = static_cast<const uint8_t*>(operands[2]);
      const size_t es = static_cast<size_t>(esize_);
      for (const std::vector<int64_t>& ids : rounds) {
        const int64_t c = static_cast<int64_t>(ids.size());
        for (size_t k = 0; k < ids.size(); ++k) {
          std::memcpy(old.data() + k * es, out + static_cast<size_t>(dest[static_cast<size_t>(ids[k])]) * es, es);
          std::memcpy(upd.data() + k * es, updates + static_cast<size_t>(ids[k]) * es, es);
        }
        const void* inputs[2] = {old.data(), upd.data()};
        for (int64_t start = 0; start < c; start += program_->tile_elements()) {
          const int64_t len = std::min(program_->tile_elements(), c - start);
          program_->Evaluate(inputs, start, len, fresh.data() + static_cast<size_t>(start) * es);
        }
        for (size_t k = 0; k < ids.size(); ++k) {
          std::memcpy(out + static_cast<size_t>(dest[static_cast<size_t>(ids[k])]) * es, fresh.data() + k * es, es);
        }
      }
    });
  }
  std::string_view kind() const override { return "scatter-apply"; }

  int64_t esize_ = 0, operand_elements_ = 0, update_elements_ = 0;
  DType index_dtype_ = DType::kInt32;
  IndexPlan indices_;
  std::vector<int64_t> operand_shape_, updates_shape_;
  lax::kernels::ScatterDims dims_;
  std::unique_ptr<hlo::HloModule> vector_module_;  // owns the program's instructions
  std::unique_ptr<TileProgram> program_;
};

constexpr int64_t kScatterApplyTileElements = 2048;

absl::StatusOr<std::unique_ptr<Kernel>> MakeScatterApplyKernel(const HloInstruction& instr, const IndexPlan& plan,
                                                               DType index_dtype) {
  const hlo::HloComputation& computation = *instr.to_apply();
  if (computation.num_parameters() != 2 || !IsVectorizable(computation) ||
      !computation.root_instruction()->shape().IsArray()) {
    return absl::UnimplementedError("update computation is not elementwise code of (old, update)");
  }
  const hlo::Shape& operand = instr.operand(0)->shape();
  const hlo::Shape& updates = instr.operand(2)->shape();
  const hlo::PrimitiveType type = operand.element_type();
  const hlo::ScatterDimensionNumbers& dn = instr.scatter_dimension_numbers();
  auto kernel = std::make_unique<ScatterApplyKernel>();
  kernel->esize_ = hlo::ByteSizeOfPrimitiveType(type);
  kernel->operand_elements_ = hlo::ShapeUtil::ElementsIn(operand);
  kernel->update_elements_ = hlo::ShapeUtil::ElementsIn(updates);
  kernel->index_dtype_ = index_dtype;
  kernel->indices_ = plan;
  kernel->operand_shape_ = hlo::SpanToVector(operand.dimensions());
  kernel->updates_shape_ = hlo::SpanToVector(updates.dimensions());
  kernel->dims_.update_window_dims = dn.update_window_dims;
  kernel->dims_.inserted_window_dims = dn.inserted_window_dims;
  kernel->dims_.scatter_dims_to_operand_dims = dn.scatter_dims_to_operand_dims;
  kernel->dims_.implicit_index_vector = plan.implicit;
  // The computation over vectors as long as the widest round (every update element).
  const int64_t length = std::max<int64_t>(kernel->update_elements_, 1);
  kernel->vector_module_ = std::make_unique<hlo::HloModule>("scatter_apply");
  hlo::HloBuilder b(kernel->vector_module_.get(), "update_vectors");
  const hlo::Shape vec = hlo::ShapeUtil::MakeShape(type, {length});
  HLO_ASSIGN_OR_RETURN(HloInstruction * old_values, b.Parameter(0, vec, "old"));
  HLO_ASSIGN_OR_RETURN(HloInstruction * update_values, b.Parameter(1, vec, "update"));
  HLO_ASSIGN_OR_RETURN(std::vector<HloInstruction*> root,
                       ApplyToVectors(b, computation, {old_values}, {update_values}, length));
  if (root.size() != 1 || root[0]->shape().element_type() != type) {
    return absl::UnimplementedError("update computation does not return one value of the operand's type");
  }
  HLO_ASSIGN_OR_RETURN(hlo::HloComputation * built, b.Build(root[0]));
  HLO_ASSIGN_OR_RETURN(kernel->program_,
                       TileProgram::Compile(built->root_instruction(), ParameterLeaves(), kScatterApplyTileElements));
  return kernel;
}

}  // namespace

absl::StatusOr<std::unique_ptr<Kernel>> MakeGatherKernel(const HloInstruction& instr) {
  if (instr.opcode() != HloOpcode::kGather || instr.operand_count() != 2 ||
      !instr.shape().IsArray() || !instr.operand(0)->shape().IsArray() ||
      !instr.operand(1)->shape().IsArray()) {
    return absl::UnimplementedError("not an array gather");
  }
  const hlo::Shape& operand = instr.operand(0)->shape();
  const hlo::Shape& indices = instr.operand(1)->shape();
  const hlo::GatherDimensionNumbers& dn = instr.gather_dimension_numbers();
  const std::optional<DType> index_dtype = KernelDTypeOf(indices.element_type());
  if (!IsIndexType(indices.element_type()) || !index_dtype) {
    return absl::UnimplementedError("indices are not integers");
  }
  if (dn.index_vector_dim < 0 || dn.index_vector_dim > indices.rank()) {
    return absl::UnimplementedError("index_vector_dim out of range");
  }
  const IndexPlan plan = PlanIndices(indices, dn.index_vector_dim);
  const int64_t vector_size = plan.implicit ? 1 : plan.shape.back();
  if (static_cast<int64_t>(dn.start_index_map.size()) != vector_size ||
      static_cast<int64_t>(instr.gather_slice_sizes().size()) != operand.rank() ||
      operand.element_type() != instr.shape().element_type()) {
    return absl::UnimplementedError("inconsistent gather");
  }
  auto kernel = std::make_unique<GatherKernel>();
  kernel->elem_size_ = hlo::ByteSizeOfPrimitiveType(operand.element_type());
  kernel->index_dtype_ = *index_dtype;
  kernel->operand_shape_ = hlo::SpanToVector(operand.dimensions());
  kernel->indices_ = plan;
  kernel->slice_sizes_ = instr.gather_slice_sizes();
  kernel->out_shape_ = hlo::SpanToVector(instr.shape().dimensions());
  kernel->dims_.offset_dims = dn.offset_dims;
  kernel->dims_.collapsed_slice_dims = dn.collapsed_slice_dims;
  kernel->dims_.start_index_map = dn.start_index_map;
  kernel->dims_.implicit_index_vector = plan.implicit;
  return kernel;
}

absl::StatusOr<std::unique_ptr<Kernel>> MakeMaskedGatherKernel(const HloInstruction& instr,
                                                                int64_t tile_elements) {
  const std::optional<MaskedGather> m = AsMaskedGather(instr);
  if (!m) return absl::UnimplementedError("not a select of a gather and a fill value");
  auto kernel = std::make_unique<MaskedGatherKernel>();
  HLO_ASSIGN_OR_RETURN(kernel->gather_, MakeGatherKernel(*m->gather));
  kernel->gather_operand_ = m->gather->operand(0)->parameter_number();
  kernel->gather_indices_ = m->gather->operand(1)->parameter_number();
  if (m->mask->opcode() == HloOpcode::kParameter) {
    kernel->mask_parameter_ = m->mask->parameter_number();
  } else {
    HLO_ASSIGN_OR_RETURN(kernel->mask_program_, TileProgram::Compile(m->mask, ParameterLeaves(), tile_elements));
  }
  const hlo::Shape& out = instr.shape();
  const HloInstruction* broadcast = instr.fused_instructions_computation()->root_instruction()->operand(0);
  kernel->out_dims_ = hlo::SpanToVector(out.dimensions());
  kernel->out_elements_ = hlo::ShapeUtil::ElementsIn(out);
  kernel->mask_elements_ = hlo::ShapeUtil::ElementsIn(m->mask->shape());
  kernel->esize_ = hlo::ByteSizeOfPrimitiveType(out.element_type());
  absl::Span<const int64_t> bdims = broadcast->dimensions();
  kernel->mask_is_prefix_ = true;
  for (size_t j = 0; j < bdims.size(); ++j) kernel->mask_is_prefix_ &= bdims[j] == static_cast<int64_t>(j);
  kernel->mask_stride_.assign(out.rank(), 0);
  int64_t stride = 1;
  for (int64_t j = static_cast<int64_t>(bdims.size()) - 1; j >= 0; --j) {
    kernel->mask_stride_[bdims[j]] = stride;
    stride *= m->mask->shape().dimensions(j);
  }
  const HloInstruction* fill = m->fill->opcode() == HloOpcode::kBroadcast ? m->fill->operand(0) : m->fill;
  const absl::Span<const uint8_t> bytes = fill->literal().untyped_data();
  kernel->fill_.assign(bytes.begin(), bytes.end());
  if (static_cast<int64_t>(kernel->fill_.size()) != kernel->esize_) {
    return absl::UnimplementedError("fill value of another element type");
  }
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
  const std::optional<DType> dtype = KernelDTypeOf(type);
  const std::optional<DType> index_dtype = KernelDTypeOf(indices.element_type());
  if (!dtype || updates.element_type() != type || !IsIndexType(indices.element_type()) ||
      !index_dtype) {
    return absl::UnimplementedError("operand/update or index types");
  }
  const hlo::ScatterDimensionNumbers& dn = instr.scatter_dimension_numbers();
  if (dn.index_vector_dim < 0 || dn.index_vector_dim > indices.rank()) {
    return absl::UnimplementedError("index_vector_dim out of range");
  }
  const IndexPlan plan = PlanIndices(indices, dn.index_vector_dim);
  const int64_t vector_size = plan.implicit ? 1 : plan.shape.back();
  if (static_cast<int64_t>(dn.scatter_dims_to_operand_dims.size()) != vector_size ||
      dn.update_window_dims.size() + dn.inserted_window_dims.size() !=
          static_cast<size_t>(operand.rank())) {
    return absl::UnimplementedError("inconsistent dimension numbers");
  }
  const std::optional<ScatterCombiner> combiner = CombinerOf(*instr.to_apply(), type);
  if (!combiner) return MakeScatterApplyKernel(instr, plan, *index_dtype);
  auto kernel = std::make_unique<ScatterKernel>();
  kernel->dtype_ = *dtype;
  kernel->index_dtype_ = *index_dtype;
  kernel->combiner_ = *combiner;
  kernel->operand_bytes_ = hlo::ShapeUtil::ElementsIn(operand) * hlo::ByteSizeOfPrimitiveType(type);
  kernel->operand_shape_ = hlo::SpanToVector(operand.dimensions());
  kernel->indices_ = plan;
  kernel->updates_shape_ = hlo::SpanToVector(updates.dimensions());
  kernel->dims_.update_window_dims = dn.update_window_dims;
  kernel->dims_.inserted_window_dims = dn.inserted_window_dims;
  kernel->dims_.scatter_dims_to_operand_dims = dn.scatter_dims_to_operand_dims;
  kernel->dims_.implicit_index_vector = plan.implicit;
  return kernel;
}

}  // namespace jx::cpu::internal
