// The scan kernel: a reduce-window whose window covers a whole axis with n-1 padding on one
// side (hlo::AsScanWindow) is a running prefix or suffix scan along that axis. Each line is
// folded once, in the evaluator's order (so the results are its bits), instead of each
// output reducing its own window (O(n^2)) on the slow path.
#include <algorithm>
#include <cstring>
#include <vector>

#include "jx/compiler/backend/cpu/cpu_kernels.h"
#include "jx/compiler/backend/cpu/tile_ops.h"
#include "jx/compiler/hlo/hlo_computation.h"
#include "jx/compiler/hlo/shape.h"

namespace jx::cpu::internal {
namespace {

using hlo::HloInstruction;
using hlo::HloOpcode;

// Lines per work item when lines are strided (inner > 1): their accumulators stay in L1
// and a step of the item is one vectorized pass over contiguous elements.
constexpr int64_t kLaneBlock = 512;
// Work below this many elements per chunk is not worth a task.
constexpr int64_t kMinChunkElements = 16384;

class ScanKernel : public Kernel {
 public:
  absl::Status Run(absl::Span<const void* const> operands,
                   absl::Span<void* const> results) const override {
    if (outer_ * len_ * inner_ == 0) return absl::OkStatus();
    const uint8_t* x = static_cast<const uint8_t*>(operands[0]);
    const void* init = operands[1];
    uint8_t* out = static_cast<uint8_t*>(results[0]);
    // Line (o, i) starts at element (o * len + first) * inner + i and steps by +-inner.
    const int64_t first = reverse_ ? len_ - 1 : 0;
    const int64_t step = reverse_ ? -inner_ : inner_;
    const int64_t blocks = (inner_ + kLaneBlock - 1) / kLaneBlock;
    const int64_t item_elements = len_ * std::min(inner_, kLaneBlock);
    const int64_t grain = std::max<int64_t>(1, kMinChunkElements / item_elements);
    ParallelChunks(outer_ * blocks, grain, [&](int64_t begin, int64_t end) {
      alignas(64) uint8_t acc[kLaneBlock * 8];
      for (int64_t item = begin; item < end; ++item) {
        const int64_t o = item / blocks, i0 = (item % blocks) * kLaneBlock;
        const int64_t lanes = std::min(kLaneBlock, inner_ - i0);
        for (int64_t j = 0; j < lanes; ++j) std::memcpy(acc + j * esize_, init, esize_);
        const int64_t start = ((o * len_ + first) * inner_ + i0) * esize_;
        scan_(x + start, out + start, len_, step, lanes, acc);
      }
    });
    return absl::OkStatus();
  }
  std::string_view kind() const override { return "scan"; }

  ScanStepsFn scan_ = nullptr;
  int64_t esize_ = 0, outer_ = 0, len_ = 0, inner_ = 0;
  bool reverse_ = false;
};

}  // namespace

absl::StatusOr<std::unique_ptr<Kernel>> MakeScanKernel(const HloInstruction& instr) {
  if (instr.opcode() != HloOpcode::kReduceWindow || instr.operand_count() != 2 ||
      !instr.shape().IsArray()) {
    return absl::UnimplementedError("not a single-output reduce-window");
  }
  const hlo::Shape& in = instr.operand(0)->shape();
  const std::optional<hlo::ScanWindow> scan = hlo::AsScanWindow(instr.window(), in.dimensions());
  if (!scan) return absl::UnimplementedError("window is not a running scan");
  const hlo::PrimitiveType type = instr.shape().element_type();
  if (in.element_type() != type || instr.operand(1)->shape().element_type() != type ||
      instr.shape().dimensions() != in.dimensions()) {
    return absl::UnimplementedError("mixed types");
  }
  auto kernel = std::make_unique<ScanKernel>();
  kernel->scan_ = FindScanSteps(ReducerOp(*instr.to_apply()), type);
  if (kernel->scan_ == nullptr) return absl::UnimplementedError("reducer without a native scan");
  kernel->esize_ = hlo::ByteSizeOfPrimitiveType(type);
  kernel->reverse_ = scan->reverse;
  kernel->len_ = in.dimensions(scan->axis);
  kernel->inner_ = 1;
  for (int64_t d = scan->axis + 1; d < in.rank(); ++d) kernel->inner_ *= in.dimensions(d);
  kernel->outer_ = 1;
  for (int64_t d = 0; d < scan->axis; ++d) kernel->outer_ *= in.dimensions(d);
  return kernel;
}

}  // namespace jx::cpu::internal
