// JAX's checkpoint policies (jax.checkpoint_policies), for jx::checkpoint(f, policy): which
// values of the checkpointed function the backward pass reads instead of recomputing.
//
//   jx::checkpoint(f, jx::policies::dots_saveable);              // jax.checkpoint_policies.dots_saveable
//   jx::checkpoint(f, jx::policies::save_only_these_names("h"));  // ...save_only_these_names('h')
//   ... jx::checkpoint_name(x, "h") ...                           // jax.ad_checkpoint.checkpoint_name
#pragma once

#include <string>
#include <vector>

#include "jx/transforms/checkpoint.h"

namespace jx {
namespace policies {

// Save everything: no recomputation (as no checkpoint).
extern const CheckpointPolicy everything_saveable;
// Save nothing: recompute everything (jx::checkpoint's default).
extern const CheckpointPolicy nothing_saveable;
// Save the outputs of dot_general (matmuls); recompute the rest.
extern const CheckpointPolicy dots_saveable;
extern const CheckpointPolicy checkpoint_dots;  // JAX's alias of dots_saveable
// Save the outputs of dot_generals without batch dimensions.
extern const CheckpointPolicy dots_with_no_batch_dims_saveable;
// Save the values named (checkpoint_name) with one of names; recompute the rest.
CheckpointPolicy save_only_these_names(std::vector<std::string> names);
// Save every named value except those named with one of names.
CheckpointPolicy save_any_names_but_these(std::vector<std::string> names);

template <typename... S>
CheckpointPolicy save_only_these_names(const std::string& first, const S&... rest) {
  return save_only_these_names(std::vector<std::string>{first, std::string(rest)...});
}
template <typename... S>
CheckpointPolicy save_any_names_but_these(const std::string& first, const S&... rest) {
  return save_any_names_but_these(std::vector<std::string>{first, std::string(rest)...});
}

}  // namespace policies

namespace lax {
using jx::checkpoint_name;
}  // namespace lax

}  // namespace jx
