// A cache of what is derived from a jaxpr (its jvp, partial evaluation, transpose or batched
// form, its executable), keyed on the jaxpr's identity plus the derivation's parameters:
// JAX's weakref_lru_cache on jvp_jaxpr, partial_eval_jaxpr_nounits and batch_jaxpr. The key
// holds the jaxpr weakly, so an entry dies with its jaxpr (dead entries are swept on every
// insert), and past `capacity` the least recently used entry is evicted, so the cache never
// grows without bound. A cache lives for the process (built on first use, never destroyed):
// it registers itself with jx::clear_caches() when built.
//
//   JaxprCache<Hoisted> cache("jvp", 1024);
//   JaxprCacheKey key;
//   key.AddMask(nonzero).AddAvals(avals);
//   std::shared_ptr<const Hoisted> jvp = cache.Get(j.jaxpr, key, [&] { return TraceJvp(...); });
//
// Values computed under an outer transformation must not close over its tracers: a maker
// says so by returning a value that Get's `keep` rejects, and that value is returned for the
// one call without being stored.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/inlined_vector.h"
#include "absl/hash/hash.h"
#include "absl/types/span.h"
#include "jx/core/jaxpr.h"
#include "jx/core/trace_context.h"

namespace jx {

// The derivation's parameters, flattened into integers (masks, axes, avals with weak types).
class JaxprCacheKey {
 public:
  JaxprCacheKey& Add(int64_t v) {
    words_.push_back(v);
    return *this;
  }
  JaxprCacheKey& AddMask(const std::vector<bool>& mask);
  JaxprCacheKey& AddAval(const ShapedArray& aval);
  JaxprCacheKey& AddAvals(absl::Span<const Array> xs);  // of the arrays
  // The current TraceContext, for derivations that trace new equations (their dots read
  // default_matmul_precision).
  JaxprCacheKey& AddTraceContext() { return Add(CurrentTraceContext().default_matmul_precision); }
  absl::Span<const int64_t> words() const { return words_; }

 private:
  // Inline: a key is built on every call of a transformation rule, and most fit.
  absl::InlinedVector<int64_t, 24> words_;
};

struct JaxprCacheStats {
  int64_t hits = 0;
  int64_t misses = 0;  // derivations run (each a trace, transformation or compile)
  size_t entries = 0;  // live now
};

// The type-independent part: the index, the LRU order and the sweeping.
class JaxprCacheBase {
 public:
  JaxprCacheBase(std::string name, size_t capacity);
  JaxprCacheStats stats() const;
  // Drops every entry (jx::clear_caches()); hit and miss counts stay.
  void Clear();
  const std::string& name() const { return name_; }

 protected:
  std::shared_ptr<const void> Find(const Jaxpr* jaxpr, const JaxprCacheKey& key);
  // Stores value unless an entry was inserted meanwhile (a racing miss); returns the stored one.
  std::shared_ptr<const void> Insert(const std::shared_ptr<const Jaxpr>& jaxpr, const JaxprCacheKey& key,
                                     std::shared_ptr<const void> value);
  void CountMiss() { misses_.fetch_add(1, std::memory_order_relaxed); }

 private:
  struct Key {
    const Jaxpr* jaxpr;
    std::vector<int64_t> words;
  };
  // Looked up without copying the words (the hit path allocates nothing).
  struct KeyView {
    const Jaxpr* jaxpr;
    absl::Span<const int64_t> words;
  };
  struct KeyHash {
    using is_transparent = void;
    size_t operator()(const KeyView& k) const { return absl::HashOf(k.jaxpr, k.words); }
    size_t operator()(const Key& k) const { return (*this)(KeyView{k.jaxpr, k.words}); }
  };
  struct KeyEq {
    using is_transparent = void;
    static KeyView View(const Key& k) { return KeyView{k.jaxpr, k.words}; }
    static KeyView View(const KeyView& k) { return k; }
    template <typename A, typename B>
    bool operator()(const A& a, const B& b) const {
      const KeyView x = View(a), y = View(b);
      return x.jaxpr == y.jaxpr && x.words == y.words;
    }
  };
  struct Entry {
    Key key;
    std::weak_ptr<const Jaxpr> owner;  // the address in key is this jaxpr's while it lives
    std::shared_ptr<const void> value;
  };
  void EraseDead();

  std::string name_;
  size_t capacity_;
  mutable std::mutex mutex_;
  std::list<Entry> order_;  // most recently used first
  absl::flat_hash_map<Key, std::list<Entry>::iterator, KeyHash, KeyEq> index_;
  std::atomic<int64_t> hits_{0}, misses_{0};
};

template <typename V>
class JaxprCache final : public JaxprCacheBase {
 public:
  using JaxprCacheBase::JaxprCacheBase;

  // The value for (jaxpr, key), made by `make` (returning std::shared_ptr<const V>) on a
  // miss and stored if `keep` accepts it. make runs without the lock held: it may trace, and
  // tracing may use this cache again. A template, not a std::function: a hit must not
  // allocate, and the rules' makers capture too much for std::function's inline buffer.
  template <typename Make>
  std::shared_ptr<const V> Get(const std::shared_ptr<const Jaxpr>& jaxpr, const JaxprCacheKey& key, Make&& make,
                               bool (*keep)(const V&) = nullptr) {
    if (std::shared_ptr<const void> hit = Find(jaxpr.get(), key)) return std::static_pointer_cast<const V>(hit);
    CountMiss();
    std::shared_ptr<const V> made = make();
    if (keep != nullptr && !keep(*made)) return made;
    return std::static_pointer_cast<const V>(Insert(jaxpr, key, made));
  }
};

}  // namespace jx
