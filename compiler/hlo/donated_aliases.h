// Which donated argument each output of an entry computation should take: JAX's pairing of
// donate_argnums with outputs (what jit writes into XLA's input_output_alias): output leaf k
// takes the first donated argument leaf, in argument order, that no earlier output took and
// whose array shape (element type and dimensions) is its own. Leaves are the arrays of the
// root's and the parameters' shapes, depth first (the order buffer assignment numbers them).
// A pairing is a wish: the scheduler orders the argument's other readers before the output's
// producer where it can, and buffer assignment takes it when the argument is then dead.
//
//   std::vector<hlo::DonatedAlias> pairs = hlo::PairDonatedArguments(*entry, donated);
//   for (auto [output_leaf, argument_leaf] : pairs) ...
#pragma once

#include <cstdint>
#include <vector>

#include "absl/types/span.h"
#include "jx/compiler/hlo/hlo_computation.h"

namespace jx::hlo {

struct DonatedAlias {
  int64_t output_leaf;
  int64_t argument_leaf;
};

// donated holds one flag per argument leaf (empty: nothing is donated). Pairs come in output
// leaf order.
std::vector<DonatedAlias> PairDonatedArguments(const HloComputation& computation, const std::vector<bool>& donated);

// The array leaves of shape, depth first (a non-tuple shape is its own one leaf).
std::vector<Shape> ArrayLeaves(const Shape& shape);

}  // namespace jx::hlo
