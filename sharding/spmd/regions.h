// The regions (sub-jaxprs) of the equations SPMD propagation and the partitioner see into:
// scan, while and cond bodies, and the calls that lower inline (an inner jit, checkpoint,
// custom_jvp_call, custom_vjp_call). A region's boundary says which of the equation's
// operands feed each body input and which result each body output becomes, as Shardy's
// data-flow edges do for while/case regions: a value and the body value it feeds share one
// sharding, a scan's xs and ys with their leading (scanned) dim unsharded, and a loop's carry
// is one sharding on the way in, through the body and on the way out.
//
//   std::optional<Regions> r = RegionsOf(eqn);   // nullopt: not a region-holding primitive
//   r->regions[0].body;                          // the scan body
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "jx/core/jaxpr.h"
#include "jx/core/sharding_rule.h"

namespace jx::spmd {

struct Region {
  ClosedJaxpr body;
  // Per body invar: the equation operand feeding it (-1: none), and whether the operand is
  // the stacked form of it (a scan's xs: one more, leading, dim).
  std::vector<int> invar_operand;
  std::vector<bool> invar_stacked;
  // Per body outvar: the equation result it becomes (-1: none, a while's predicate), and
  // whether the result stacks it (a scan's ys).
  std::vector<int> outvar_result;
  std::vector<bool> outvar_stacked;
  // Loop-carried pairs (body outvar, body invar): the next iteration reads the outvar as the
  // invar, so the two must agree.
  std::vector<std::pair<int, int>> carried;
};

struct Regions {
  enum class Kind { kScan, kWhile, kCond, kCall };
  Kind kind;
  // scan: the body; while: the cond then the body; cond: the branches; a call: its jaxpr.
  std::vector<Region> regions;
};

// The regions of eqn, or nullopt when its primitive holds none the SPMD layer sees into.
std::optional<Regions> RegionsOf(const Eqn& eqn);

// A per-device sharding with a new unsharded leading dim (a scan's xs or ys from the body's
// slice), and the reverse: the slice's sharding of a stacked value (its leading dim dropped,
// whatever it was).
DimShardings StackedSharding(const DimShardings& s);
DimShardings SliceSharding(const DimShardings& s);

}  // namespace jx::spmd
