// The manual axes in scope while a shard_map body is traced (JAX's axis environment): the
// collectives' user API reads them to check axis names and to record the mesh in their
// parameters. Thread-local; scopes nest (the innermost shard_map wins).
#pragma once

#include <memory>

#include "jx/sharding/collectives.h"

namespace jx::shard_map_internal {

struct ManualContext {
  std::shared_ptr<const CollectiveMesh> mesh;
  bool check_vma = true;
};

// The innermost shard_map body being traced, or nullptr outside every shard_map.
const ManualContext* CurrentManualContext();

class ManualContextScope {
 public:
  explicit ManualContextScope(ManualContext context);
  ~ManualContextScope();
  ManualContextScope(const ManualContextScope&) = delete;
  ManualContextScope& operator=(const ManualContextScope&) = delete;

 private:
  ManualContext context_;
  const ManualContext* saved_;
};

}  // namespace jx::shard_map_internal
