#include "jx/transforms/jaxpr_cache.h"

#include "jx/core/caches.h"

namespace jx {

JaxprCacheBase::JaxprCacheBase(std::string name, size_t capacity) : name_(std::move(name)), capacity_(capacity) {
  caches_internal::RegisterCache([this] { Clear(); });
}

void JaxprCacheBase::Clear() {
  std::list<Entry> dropped;  // freed outside the lock: a value's teardown may use a cache
  std::lock_guard<std::mutex> lock(mutex_);
  index_.clear();
  dropped.swap(order_);
}

JaxprCacheKey& JaxprCacheKey::AddMask(const std::vector<bool>& mask) {
  words_.push_back(static_cast<int64_t>(mask.size()));
  for (bool b : mask) words_.push_back(b ? 1 : 0);
  return *this;
}

JaxprCacheKey& JaxprCacheKey::AddAval(const ShapedArray& aval) {
  words_.push_back(static_cast<int64_t>(aval.dtype) * 2 + (aval.weak_type ? 1 : 0));
  words_.push_back(aval.ndim());
  words_.insert(words_.end(), aval.shape.begin(), aval.shape.end());
  return *this;
}

JaxprCacheKey& JaxprCacheKey::AddAvals(absl::Span<const Array> xs) {
  words_.push_back(static_cast<int64_t>(xs.size()));
  for (const Array& x : xs) AddAval(x.aval());
  return *this;
}

JaxprCacheStats JaxprCacheBase::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return JaxprCacheStats{hits_.load(), misses_.load(), order_.size()};
}

std::shared_ptr<const void> JaxprCacheBase::Find(const Jaxpr* jaxpr, const JaxprCacheKey& key) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = index_.find(KeyView{jaxpr, key.words()});
  if (it == index_.end()) return nullptr;
  // A dead owner means the address now belongs to another jaxpr: not a hit.
  if (it->second->owner.expired()) return nullptr;
  order_.splice(order_.begin(), order_, it->second);
  hits_.fetch_add(1, std::memory_order_relaxed);
  return it->second->value;
}

std::shared_ptr<const void> JaxprCacheBase::Insert(const std::shared_ptr<const Jaxpr>& jaxpr, const JaxprCacheKey& key,
                                                   std::shared_ptr<const void> value) {
  std::lock_guard<std::mutex> lock(mutex_);
  EraseDead();  // also any dead entry at this jaxpr's (reused) address
  if (auto it = index_.find(KeyView{jaxpr.get(), key.words()}); it != index_.end()) {
    return it->second->value;  // a racing miss stored it first
  }
  Key k{jaxpr.get(), std::vector<int64_t>(key.words().begin(), key.words().end())};
  order_.push_front(Entry{k, jaxpr, std::move(value)});
  index_.emplace(std::move(k), order_.begin());
  if (order_.size() > capacity_) {
    index_.erase(order_.back().key);
    order_.pop_back();
  }
  return order_.front().value;
}

// Entries whose jaxpr died hold derived programs nothing can ask for again; a miss already
// costs a trace, so walking every entry here is cheap by comparison.
void JaxprCacheBase::EraseDead() {
  for (auto it = order_.begin(); it != order_.end();) {
    if (it->owner.expired()) {
      index_.erase(it->key);
      it = order_.erase(it);
    } else {
      ++it;
    }
  }
}

}  // namespace jx
