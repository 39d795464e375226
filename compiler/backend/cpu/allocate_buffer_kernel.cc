// The AllocateBuffer custom-call (compiler/hlo/allocate_buffer.h): buffer assignment gives it
// its result buffer, and running it does nothing (its contents are unspecified: whoever reads
// them wrote them first).
#include "jx/compiler/backend/cpu/cpu_kernels.h"
#include "jx/compiler/hlo/allocate_buffer.h"

namespace jx::cpu::internal {
namespace {

class AllocateBufferKernel : public Kernel {
 public:
  absl::Status Run(absl::Span<const void* const>, absl::Span<void* const>) const override {
    return absl::OkStatus();
  }
  std::string_view kind() const override { return "allocate-buffer"; }
};

}  // namespace

absl::StatusOr<std::unique_ptr<Kernel>> MakeAllocateBufferKernel(const hlo::HloInstruction& instr) {
  if (!hlo::IsAllocateBuffer(instr)) return absl::UnimplementedError("not an AllocateBuffer custom-call");
  if (instr.operand_count() != 0 || !instr.shape().IsArray()) {
    return absl::InvalidArgumentError("AllocateBuffer custom-call: takes no operands and gives an array");
  }
  return std::unique_ptr<Kernel>(new AllocateBufferKernel());
}

}  // namespace jx::cpu::internal
