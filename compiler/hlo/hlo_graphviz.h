// Graphviz DOT of an HLO module, for JX_DUMP_TO dumps and debugging: the entry computation as
// a digraph with one node per instruction (label: name, opcode, shape; parameters and
// constants as ellipses, the root outlined) and an edge from each operand to its user. A
// fusion is drawn as a filled `subgraph cluster_<name>` box (label "fusion kind=kLoop" and
// the instruction's name) holding its fused computation's nodes: the fusion's operands point
// at the fused parameters and the fused root points at the fusion's users. while, call and
// conditional stay nodes, with each computation they call drawn beside them as a dashed
// cluster (the caller points at its parameters, its root points back). Reducers (to_apply of
// reduce, sort, map, ...) are named in the label, not drawn. Render with `dot -Tsvg`.
//
//   std::ofstream("module.dot") << HloModuleToDot(*module);
#pragma once

#include <string>

#include "jx/compiler/hlo/hlo_module.h"

namespace jx::hlo {

std::string HloModuleToDot(const HloModule& module);

}  // namespace jx::hlo
