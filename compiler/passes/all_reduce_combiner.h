// AllReduceCombiner (XLA's pass of the same name): independent all-reduces of one computation
// that reduce with the same op over the same partitions become one all-reduce of several
// operands,
//
//   a' = all-reduce(a), b' = all-reduce(b)   ->   t = all-reduce(a, b)   (a tuple result)
//                                                a' = get-tuple-element(t), index=0, ...
//
// so the step pays one collective's latency for all of them (the ICI model times the combined
// bytes as one collective). JAX binds psum of a pytree as one psum of several operands and
// lowers it to one all-reduce per leaf; this pass makes them one, as XLA does. Two
// all-reduces combine when neither depends on the other (through any chain of
// instructions), their reducers are the same commutative op over the same element type, and
// their groups, use_global_device_ids and channel kind agree. A combined all-reduce takes at
// most combine_threshold_bytes of operands and combine_threshold_count of them (XLA's
// thresholds; 30 MiB is XLA's default byte threshold).
//
//   AllReduceCombiner pass;                 // or AllReduceCombiner(/*bytes=*/1 << 20, /*count=*/8)
//   HLO_ASSIGN_OR_RETURN(bool changed, pass.Run(module));
#pragma once

#include <cstdint>
#include <string_view>

#include "jx/compiler/hlo/hlo_computation.h"
#include "jx/compiler/hlo/hlo_pass.h"

namespace jx::hlo {

class AllReduceCombiner : public HloPass {
 public:
  static constexpr int64_t kDefaultThresholdBytes = int64_t{30} << 20;
  static constexpr int64_t kDefaultThresholdCount = 256;

  explicit AllReduceCombiner(int64_t combine_threshold_bytes = kDefaultThresholdBytes,
                             int64_t combine_threshold_count = kDefaultThresholdCount)
      : threshold_bytes_(combine_threshold_bytes), threshold_count_(combine_threshold_count) {}
  std::string_view name() const override { return "all-reduce-combiner"; }
  absl::StatusOr<bool> Run(HloModule* module) override;

 private:
  absl::StatusOr<bool> RunOnComputation(HloComputation* computation) const;

  int64_t threshold_bytes_;
  int64_t threshold_count_;
};

}  // namespace jx::hlo
