// Loop and reduce kernels (kLoop and kInput fusions, lone elementwise ops and reduces).
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string_view>
#include <cstring>
#include <functional>
#include <optional>
#include <vector>

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include "jx/compiler/backend/cpu/cpu_kernels.h"
#include "jx/compiler/backend/cpu/scalar_semantics.h"
#include "jx/compiler/backend/cpu/tile_ops.h"
#include "jx/compiler/backend/cpu/tile_program.h"
#include "jx/compiler/hlo/hlo_computation.h"
#include "jx/compiler/hlo/status_macros.h"
#include "jx/compiler/hlo/str_util.h"
#include "jx/lax/kernels/elementwise.h"

namespace jx::cpu::internal {

using hlo::FusionKind;
using hlo::HloInstruction;
using hlo::HloOpcode;
namespace kernels = ::jx::lax::kernels;

void ParallelChunks(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn) {
  if (n <= 0) return;
  grain = std::max<int64_t>(grain, 1);
  const int64_t chunks = (n + grain - 1) / grain;
  if (chunks == 1) {
    fn(0, n);
    return;
  }
  tbb::parallel_for(
      tbb::blocked_range<int64_t>(0, chunks, 1),
      [&](const tbb::blocked_range<int64_t>& r) {
        for (int64_t c = r.begin(); c < r.end(); ++c) fn(c * grain, std::min(n, (c + 1) * grain));
      },
      tbb::simple_partitioner());
}

namespace {

// Work below this many elements per chunk is not worth a task.
constexpr int64_t kMinChunkElements = 16384;

int64_t ElementsIn(const hlo::Shape& s) { return hlo::ShapeUtil::ElementsIn(s); }

class LoopKernel : public Kernel {
 public:
  explicit LoopKernel(std::unique_ptr<TileProgram> program, int64_t elements)
      : program_(std::move(program)), elements_(elements) {}

  absl::Status Run(absl::Span<const void* const> operands,
                   absl::Span<void* const> results) const override {
    const int64_t tile = program_->tile_elements();
    const int64_t esize = program_->element_size();
    uint8_t* out = static_cast<uint8_t*>(results[0]);
    const void* const* inputs = operands.data();
    const int64_t grain = std::max<int64_t>(1, kMinChunkElements / tile) * tile;
    ParallelChunks(elements_, grain, [&](int64_t begin, int64_t end) {
      for (int64_t s = begin; s < end; s += tile) {
        const int64_t n = std::min(tile, end - s);
        program_->Evaluate(inputs, s, n, out + s * esize);
      }
    });
    return absl::OkStatus();
  }
  std::string_view kind() const override { return "loop"; }

 private:
  std::unique_ptr<TileProgram> program_;
  int64_t elements_;
};

// A loop fusion that is one library op over whole operands (FindLibraryLoop): eager's call,
// so that jit(f) for a lone op costs eager's time plus dispatch (no strips, no tile copies).
class LibraryLoopKernel : public Kernel {
 public:
  LibraryLoopKernel(LibraryLoop loop, std::vector<int> slots, int64_t elements, int64_t esize)
      : loop_(loop), slots_(std::move(slots)), elements_(elements), esize_(esize) {}

  absl::Status Run(absl::Span<const void* const> operands,
                   absl::Span<void* const> results) const override {
    const void* in[2] = {nullptr, nullptr};
    for (int k = 0; k < loop_.arity; ++k) in[k] = operands[slots_[k]];
    kernels::RunElementwise(loop_.fn, loop_.arity, in, /*scalar_operands=*/0, esize_, results[0], esize_,
                            elements_, loop_.grain);
    return absl::OkStatus();
  }
  std::string_view kind() const override { return "library-loop"; }

 private:
  LibraryLoop loop_;
  std::vector<int> slots_;  // operand slot of each of the op's operands
  int64_t elements_, esize_;
};

// The library loop of instr (a lone op, or a fusion whose root is one op of parameters), or
// nullptr.
std::unique_ptr<Kernel> MakeLibraryLoopKernel(const HloInstruction& instr) {
  const bool fused = instr.opcode() == HloOpcode::kFusion;
  const HloInstruction* op = fused ? instr.fused_instructions_computation()->root_instruction() : &instr;
  const LibraryLoop loop = FindLibraryLoop(*op);
  if (loop.fn == nullptr) return nullptr;
  const LeafResolver leaves = fused ? ParameterLeaves() : OperandLeaves(&instr);
  std::vector<int> slots;
  for (const HloInstruction* operand : op->operands()) {
    const int slot = leaves(operand);
    if (slot < 0) return nullptr;
    slots.push_back(slot);
  }
  return std::make_unique<LibraryLoopKernel>(
      loop, std::move(slots), ElementsIn(op->shape()), hlo::ByteSizeOfPrimitiveType(op->shape().element_type()));
}

}  // namespace

namespace {

class ReduceKernel : public Kernel {
 public:
  absl::Status Run(absl::Span<const void* const> operands,
                   absl::Span<void* const> results) const override {
    const int64_t esize = program_->element_size();
    const int64_t tile = program_->tile_elements();
    uint8_t* out = static_cast<uint8_t*>(results[0]);
    const uint8_t* init = init_constant_ != nullptr
                              ? init_constant_
                              : static_cast<const uint8_t*>(operands[init_slot_]);
    const void* const* inputs = operands.data();
    if (outputs_ == 0) return absl::OkStatus();
    if (reduced_ == 0) {
      for (int64_t o = 0; o < outputs_; ++o) std::memcpy(out + o * esize, init, esize);
      return absl::OkStatus();
    }
    if (reduced_ <= tile) {
      // Several whole rows per tile; each row folded on its own.
      const int64_t rows_per_tile = tile / reduced_;
      const int64_t grain = std::max<int64_t>(1, kMinChunkElements / (rows_per_tile * reduced_)) *
                            rows_per_tile;
      ParallelChunks(outputs_, grain, [&](int64_t begin, int64_t end) {
        std::vector<uint8_t> buf(tile * esize);
        for (int64_t o0 = begin; o0 < end; o0 += rows_per_tile) {
          const int64_t o1 = std::min(end, o0 + rows_per_tile);
          program_->Evaluate(inputs, o0 * reduced_, (o1 - o0) * reduced_, buf.data());
          for (int64_t o = o0; o < o1; ++o) {
            uint8_t* acc = out + o * esize;
            std::memcpy(acc, init, esize);
            reduce_(buf.data() + (o - o0) * reduced_ * esize, reduced_, acc);
          }
        }
      });
      return absl::OkStatus();
    }
    // Long rows: fixed blocks of each row are folded in parallel (each from its first
    // element), then the partials are folded in order onto the init value.
    const int64_t block = 8 * tile;
    const int64_t blocks = (reduced_ + block - 1) / block;
    std::vector<uint8_t> partial(outputs_ * blocks * esize);
    ParallelChunks(outputs_ * blocks, 1, [&](int64_t begin, int64_t end) {
      std::vector<uint8_t> buf(tile * esize);
      for (int64_t item = begin; item < end; ++item) {
        const int64_t o = item / blocks, b = item % blocks;
        const int64_t lo = b * block, hi = std::min(reduced_, lo + block);
        uint8_t* acc = partial.data() + item * esize;
        for (int64_t s = lo; s < hi; s += tile) {
          const int64_t n = std::min(tile, hi - s);
          program_->Evaluate(inputs, o * reduced_ + s, n, buf.data());
          if (s == lo) {
            std::memcpy(acc, buf.data(), esize);
            reduce_(buf.data() + esize, n - 1, acc);
          } else {
            reduce_(buf.data(), n, acc);
          }
        }
      }
    });
    for (int64_t o = 0; o < outputs_; ++o) {
      uint8_t* acc = out + o * esize;
      std::memcpy(acc, init, esize);
      for (int64_t b = 0; b < blocks; ++b) reduce_(partial.data() + (o * blocks + b) * esize, 1, acc);
    }
    return absl::OkStatus();
  }
  std::string_view kind() const override { return "reduce"; }

  std::unique_ptr<TileProgram> program_;
  ReduceSpanFn reduce_ = nullptr;
  int init_slot_ = -1;
  const uint8_t* init_constant_ = nullptr;
  int64_t outputs_ = 0, reduced_ = 0;
};

}  // namespace

absl::StatusOr<std::unique_ptr<Kernel>> MakeLoopKernel(const HloInstruction& instr,
                                                       int64_t tile_elements) {
  if (!instr.shape().IsArray()) return absl::UnimplementedError("tuple-shaped result");
  for (const HloInstruction* op : instr.operands()) {
    if (!op->shape().IsArray()) return absl::UnimplementedError("tuple operand");
  }
  if (std::unique_ptr<Kernel> library = MakeLibraryLoopKernel(instr)) return library;
  std::unique_ptr<TileProgram> program;
  if (instr.opcode() == HloOpcode::kFusion) {
    const HloInstruction* root = instr.fused_instructions_computation()->root_instruction();
    HLO_ASSIGN_OR_RETURN(program, TileProgram::Compile(root, ParameterLeaves(), tile_elements));
  } else {
    HLO_ASSIGN_OR_RETURN(program,
                         TileProgram::Compile(&instr, OperandLeaves(&instr), tile_elements));
  }
  return std::make_unique<LoopKernel>(std::move(program), ElementsIn(instr.shape()));
}

absl::StatusOr<std::unique_ptr<Kernel>> MakeReduceKernel(const HloInstruction& instr,
                                                         int64_t tile_elements) {
  const HloInstruction* reduce = &instr;
  LeafResolver leaves = OperandLeaves(&instr);
  if (instr.opcode() == HloOpcode::kFusion) {
    reduce = instr.fused_instructions_computation()->root_instruction();
    leaves = ParameterLeaves();
  }
  if (reduce->opcode() != HloOpcode::kReduce || reduce->operand_count() != 2 ||
      !reduce->shape().IsArray()) {
    return absl::UnimplementedError("not a single-output reduce");
  }
  for (const HloInstruction* op : instr.operands()) {
    if (!op->shape().IsArray()) return absl::UnimplementedError("tuple operand");
  }
  const hlo::PrimitiveType type = reduce->shape().element_type();
  auto kernel = std::make_unique<ReduceKernel>();
  const std::optional<HloOpcode> op = SimpleBinaryReducer(*reduce->to_apply());
  kernel->reduce_ = op ? FindReduceSpan(*op, type) : nullptr;
  if (kernel->reduce_ == nullptr || reduce->operand(0)->shape().element_type() != type) {
    return absl::UnimplementedError("reducer or type without a native reduction");
  }
  const HloInstruction* init = reduce->operand(1);
  if (const int slot = leaves(init); slot >= 0) {
    kernel->init_slot_ = slot;
  } else if (init->opcode() == HloOpcode::kConstant) {
    kernel->init_constant_ = init->literal().untyped_data().data();
  } else {
    return absl::UnimplementedError("computed init value");
  }
  // Read the operand in [kept..., reduced...] order, so each output's elements are a
  // contiguous range of the program's positions.
  absl::Span<const int64_t> in_dims = reduce->operand(0)->shape().dimensions();
  std::vector<int64_t> order;
  std::vector<bool> reduced(in_dims.size(), false);
  for (int64_t d : reduce->dimensions()) reduced[d] = true;
  for (size_t d = 0; d < in_dims.size(); ++d) {
    if (!reduced[d]) order.push_back(static_cast<int64_t>(d));
  }
  std::vector<int64_t> rdims(reduce->dimensions().begin(), reduce->dimensions().end());
  std::sort(rdims.begin(), rdims.end());
  order.insert(order.end(), rdims.begin(), rdims.end());
  IndexMap map;
  map.x.resize(in_dims.size());
  kernel->outputs_ = 1;
  kernel->reduced_ = 1;
  for (size_t k = 0; k < order.size(); ++k) {
    map.q_dims.push_back(in_dims[order[k]]);
    map.x[order[k]] = {static_cast<int64_t>(k), 1, 0};
    (reduced[order[k]] ? kernel->reduced_ : kernel->outputs_) *= in_dims[order[k]];
  }
  HLO_ASSIGN_OR_RETURN(kernel->program_,
                       TileProgram::Compile(reduce->operand(0), leaves, tile_elements, &map));
  return kernel;
}

}  // namespace jx::cpu::internal
