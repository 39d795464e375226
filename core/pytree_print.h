// Printing a pytree with its values, as Python's print(tree) does in JAX: containers in
// Python's syntax, leaves as their repr().
//
//   std::map<std::string, Array> params{{"b", jnp::zeros({2})}, {"w", Array(1.0f)}};
//   jx::tree::str(params);
//   // {'b': Array([0., 0.], dtype=float32), 'w': Array(1., dtype=float32, weak_type=True)}
#pragma once

#include <string>

#include "absl/types/span.h"
#include "jx/core/array.h"
#include "jx/core/pytree.h"

namespace jx::tree {

// def printed with leaves[i] (repr) in place of its i-th leaf; throws ValueError when the
// counts differ.
std::string ToString(const TreeDef& def, absl::Span<const Array> leaves);

template <typename T>
std::string str(const T& tree) {
  auto [leaves, def] = flatten(tree);
  return ToString(def, leaves);
}

}  // namespace jx::tree
