// Internal to the CPU backend: the collective kernels and the thread's collective context.
// CpuExecutable::Run binds RunOptions::collectives to the thread that runs the kernels
// (ScopedCollectiveContext), so a nested computation (a while body) sees it too.
#pragma once

#include <memory>

#include "absl/status/statusor.h"
#include "jx/compiler/backend/cpu/collective_context.h"
#include "jx/compiler/backend/cpu/cpu_kernels.h"

namespace jx::cpu::internal {

// all-reduce / reduce-scatter need a reducer of one binary op (add, multiply, maximum,
// minimum, and, or, xor); all-gather / all-to-all / collective-permute move any array.
absl::StatusOr<std::unique_ptr<Kernel>> MakeCollectiveKernel(const hlo::HloInstruction& instr);

class ScopedCollectiveContext {
 public:
  explicit ScopedCollectiveContext(CollectiveContext* context);
  ~ScopedCollectiveContext();
  ScopedCollectiveContext(const ScopedCollectiveContext&) = delete;
  ScopedCollectiveContext& operator=(const ScopedCollectiveContext&) = delete;

 private:
  CollectiveContext* previous_;
};

}  // namespace jx::cpu::internal
