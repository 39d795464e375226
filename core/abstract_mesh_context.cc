#include "jx/core/abstract_mesh_context.h"

namespace jx {
namespace {

thread_local const MeshAxisSizes* current = nullptr;

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

}  // namespace jx
