#include "jx/core/parallel.h"

#include <algorithm>
#include <cstdlib>
#include <thread>

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>

namespace jx {
namespace {

int ThreadsFromEnvironment() {
  if (const char* env = std::getenv("JX_NUM_THREADS")) {
    const int n = std::atoi(env);
    if (n > 0) return n;
  }
  return std::max(1u, std::thread::hardware_concurrency());
}

tbb::task_arena& Arena() {
  static auto* arena = new tbb::task_arena(ThreadsFromEnvironment());
  return *arena;
}

}  // namespace

int NumThreads() {
  static const int n = ThreadsFromEnvironment();
  return n;
}

void ParallelFor(int64_t n, int64_t min_grain, absl::FunctionRef<void(int64_t, int64_t)> fn) {
  if (n <= 0) return;
  min_grain = std::max<int64_t>(min_grain, 1);
  const int threads = NumThreads();
  if (threads == 1 || n < 2 * min_grain) {
    fn(0, n);
    return;
  }
  // A few chunks per thread balances load without paying for many tasks.
  const int64_t chunks = std::min<int64_t>(n / min_grain, int64_t{threads} * 4);
  const int64_t chunk = (n + chunks - 1) / chunks;
  Arena().execute([&] {
    tbb::parallel_for(tbb::blocked_range<int64_t>(0, chunks, 1),
                      [&](const tbb::blocked_range<int64_t>& r) {
                        for (int64_t c = r.begin(); c < r.end(); ++c) {
                          const int64_t begin = c * chunk;
                          const int64_t end = std::min(n, begin + chunk);
                          if (begin < end) fn(begin, end);
                        }
                      },
                      tbb::simple_partitioner());
  });
}

void RunInPool(absl::FunctionRef<void()> fn) {
  Arena().execute([&] { fn(); });
}

}  // namespace jx
