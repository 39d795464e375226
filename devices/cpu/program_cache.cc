#include "jx/devices/cpu/program_cache.h"

#include "jx/core/caches.h"
#include "jx/core/str_util.h"
#include "jx/devices/cpu/cpu_compiler.h"

namespace jx::cpu_device {

std::string ProgramCacheKey(const hlo::HloFingerprint& program, const std::vector<ShapedArray>& out_avals,
                            const std::vector<bool>& donated, const Device& device) {
  std::string key = StrCat("hlo:", program.ToString());
  key += "\nweak:";
  for (const ShapedArray& a : out_avals) key += a.weak_type ? '1' : '0';
  key += "\ndonated:";
  for (bool d : donated) key += d ? '1' : '0';
  StrAppend(&key, "\ndevice:", device.platform(), ":", device.id());
  if (!EvaluatorFallbackAllowed()) key += "\nno-fallback";
  return key;
}

ProgramCache& ProgramCache::Global() {
  static auto* cache = [] {
    auto* global = new ProgramCache(1024);  // never destroyed: programs outlive static teardown
    caches_internal::RegisterCache([global] { global->Clear(); });
    return global;
  }();
  return *cache;
}

std::shared_ptr<const Executable> ProgramCache::Find(const std::string& key) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = index_.find(key);
  if (it == index_.end()) return nullptr;
  order_.splice(order_.begin(), order_, it->second);
  return it->second->second;
}

void ProgramCache::Insert(const std::string& key, std::shared_ptr<const Executable> exe) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (index_.contains(key)) return;
  order_.emplace_front(key, std::move(exe));
  index_[key] = order_.begin();
  if (order_.size() > capacity_) {
    index_.erase(order_.back().first);
    order_.pop_back();
  }
}

void ProgramCache::Clear() {
  std::list<Entry> dropped;  // programs freed outside the lock
  std::lock_guard<std::mutex> lock(mutex_);
  index_.clear();
  dropped.swap(order_);
}

size_t ProgramCache::size() {
  std::lock_guard<std::mutex> lock(mutex_);
  return order_.size();
}

}  // namespace jx::cpu_device
