#include "jx/core/caches.h"

#include <atomic>
#include <mutex>
#include <utility>
#include <vector>

namespace jx {
namespace {

struct Registry {
  std::mutex mutex;
  std::vector<std::function<void()>> clears;
  std::atomic<uint64_t> epoch{0};
};

Registry& Caches() {
  static auto* registry = new Registry;  // never destroyed: caches outlive static teardown
  return *registry;
}

}  // namespace

void clear_caches() {
  Registry& r = Caches();
  r.epoch.fetch_add(1, std::memory_order_acq_rel);
  // Copied out: a cache's clear frees programs, whose teardown may build (and register) a cache.
  std::vector<std::function<void()>> clears;
  {
    std::lock_guard<std::mutex> lock(r.mutex);
    clears = r.clears;
  }
  for (const std::function<void()>& clear : clears) clear();
}

namespace caches_internal {

void RegisterCache(std::function<void()> clear) {
  Registry& r = Caches();
  std::lock_guard<std::mutex> lock(r.mutex);
  r.clears.push_back(std::move(clear));
}

uint64_t CacheEpoch() { return Caches().epoch.load(std::memory_order_acquire); }

}  // namespace caches_internal
}  // namespace jx
