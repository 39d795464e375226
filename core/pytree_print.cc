#include "jx/core/pytree_print.h"

#include <vector>

#include "jx/core/errors.h"
#include "jx/core/pytree_internal.h"
#include "jx/core/str_util.h"

namespace jx::tree {

std::string ToString(const TreeDef& def, absl::Span<const Array> leaves) {
  if (leaves.size() != def.num_leaves()) {
    throw ValueError(StrCat("tree::str: the structure ", def.ToString(), " has ", def.num_leaves(), " leaves, got ",
                            leaves.size(), " values"));
  }
  const absl::Span<const TreeDef::Node> nodes = def.nodes();
  std::string out;
  size_t next_leaf = 0;
  // Preorder walk: returns the node after the subtree at i.
  auto print = [&](auto& self, size_t i) -> size_t {
    const TreeDef::Node& n = nodes[i];
    switch (n.kind) {
      case NodeKind::kLeaf: out += leaves[next_leaf++].repr(); return i + 1;
      case NodeKind::kNone: out += "None"; return i + 1;
      case NodeKind::kStatic: out += def.StaticAt(i).ToString(); return i + 1;
      case NodeKind::kTuple: out += "("; break;
      case NodeKind::kList: out += "["; break;
      case NodeKind::kDict: out += "{"; break;
      case NodeKind::kStruct: StrAppend(&out, n.struct_info->name, "("); break;
    }
    size_t child = i + 1;
    for (uint32_t k = 0; k < n.num_children; ++k) {
      if (k > 0) out += ", ";
      if (n.kind == NodeKind::kDict) StrAppend(&out, "'", def.DictKey(i, k), "': ");
      if (n.kind == NodeKind::kStruct) StrAppend(&out, n.struct_info->fields[k], "=");
      child = self(self, child);
    }
    switch (n.kind) {
      case NodeKind::kTuple: out += n.num_children == 1 ? ",)" : ")"; break;
      case NodeKind::kList: out += "]"; break;
      case NodeKind::kDict: out += "}"; break;
      default: out += ")"; break;
    }
    return child;
  };
  print(print, 0);
  return out;
}

}  // namespace jx::tree
