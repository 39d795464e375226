// jx::none: Python's None where JAX's APIs take it: an unmapped argument in vmap's in_axes,
// a dimension a PartitionSpec leaves whole (jx::P("x", jx::none)).
#pragma once

namespace jx {

struct NoneType {
  friend bool operator==(NoneType, NoneType) { return true; }
};
inline constexpr NoneType none{};

}  // namespace jx
