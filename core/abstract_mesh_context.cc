#include "jx/core/abstract_mesh_context.h"

#include <atomic>

#include "jx/core/array.h"
#include "jx/core/sharding.h"

namespace jx {
namespace {

thread_local const MeshAxisSizes* current = nullptr;
std::atomic<MeshAxesOfShardingFn> mesh_axes_of_sharding{nullptr};

}  // namespace

ScopedContextMeshAxes::ScopedContextMeshAxes(MeshAxisSizes axes) : axes_(std::move(axes)), previous_(current) {
  current = &axes_;
}

ScopedContextMeshAxes::~ScopedContextMeshAxes() { current = previous_; }

const MeshAxisSizes* ContextMeshAxes() { return current; }

std::optional<int64_t> ContextMeshAxisSize(std::string_view axis) {
  if (current == nullptr) return std::nullopt;
  for (const auto& [name, size] : *current) {
    if (name == axis) return size;
  }
  return std::nullopt;
}

void SetMeshAxesOfSharding(MeshAxesOfShardingFn fn) { mesh_axes_of_sharding.store(fn); }

std::optional<MeshAxisSizes> MeshAxesOfArguments(absl::Span<const Array> args) {
  const MeshAxesOfShardingFn fn = mesh_axes_of_sharding.load();
  if (fn == nullptr) return std::nullopt;
  for (const Array& x : args) {
    if (!x.defined() || !x.is_concrete()) continue;
    const ConcreteArray* c = x.impl()->ConcreteValue();
    if (c == nullptr || !c->is_sharded()) continue;
    if (std::optional<MeshAxisSizes> axes = fn(*c->sharded()->sharding)) return axes;
  }
  return std::nullopt;
}

}  // namespace jx
