#include "jx/core/sharding_rule_required.h"

#include <mutex>

#include "absl/container/flat_hash_set.h"

namespace jx {
namespace {

struct Required {
  std::mutex mu;
  absl::flat_hash_set<uint32_t> ids;
};

Required& Get() {
  static auto* r = new Required();
  return *r;
}

}  // namespace

void RequireShardingRule(Primitive p) {
  Required& r = Get();
  std::lock_guard<std::mutex> lock(r.mu);
  r.ids.insert(p.id());
}

bool RequiresShardingRule(Primitive p) {
  Required& r = Get();
  std::lock_guard<std::mutex> lock(r.mu);
  return r.ids.contains(p.id());
}

}  // namespace jx
