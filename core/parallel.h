// One process-wide TBB pool for all parallel work (eager kernels, GEMM, compiled programs).
// A single pool matters on small machines: two pools fighting over two cores run slower than
// one thread.
//
//   jx::ParallelFor(n, /*min_grain=*/1 << 14, [&](int64_t begin, int64_t end) { ... });
#pragma once

#include <cstdint>

#include "absl/functional/function_ref.h"

namespace jx {

// Number of threads in the pool (JX_NUM_THREADS overrides the hardware count).
int NumThreads();

// Calls fn on disjoint [begin, end) chunks covering [0, n). Runs inline when n is below
// 2 * min_grain or the pool has one thread, so small work pays no scheduling cost.
void ParallelFor(int64_t n, int64_t min_grain, absl::FunctionRef<void(int64_t, int64_t)> fn);

// Runs fn inside the pool's arena (for code that calls TBB or Eigen's thread pool itself).
void RunInPool(absl::FunctionRef<void()> fn);

}  // namespace jx
