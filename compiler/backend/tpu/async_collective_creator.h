// AsyncCollectiveCreator ("async-collective-creator", XLA's pass of that name): turns every
// collective (all-reduce, all-gather, reduce-scatter, all-to-all, collective-permute) of the
// computations that run code (entry, while/conditional/call bodies; not fusions) into its
// asynchronous pair, the start right where the collective was and the done right after it:
//
//   %all-reduce.1 = f32[8] all-reduce(%x), replica_groups=..., to_apply=%sum
// becomes
//   %all-reduce-start.2 = f32[8] all-reduce-start(%x), replica_groups=..., to_apply=%sum
//   %all-reduce-done.3 = f32[8] all-reduce-done(%all-reduce-start.2)
//
// The pair alone overlaps nothing: the latency-hiding scheduler (compiler/passes/
// latency_hiding_scheduler.h) moves the start early and the done late.
//
//   hlo::HloPassPipeline pipeline("tpu");
//   pipeline.AddPass<tpu::AsyncCollectiveCreator>();
#pragma once

#include <string_view>

#include "jx/compiler/hlo/hlo_pass.h"

namespace jx::tpu {

class AsyncCollectiveCreator : public hlo::HloPass {
 public:
  std::string_view name() const override { return "async-collective-creator"; }
  absl::StatusOr<bool> Run(hlo::HloModule* module) override;
};

}  // namespace jx::tpu
