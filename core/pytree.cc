#include "jx/core/pytree.h"

#include <cxxabi.h>

#include <algorithm>
#include <cstdlib>
#include <sstream>

#include "jx/core/errors.h"

namespace jx {
namespace tree_internal {

std::string StreamToString(const void* value, void (*write)(std::ostream&, const void*)) {
  std::ostringstream os;
  write(os, value);
  return os.str();
}

namespace {

// Drops default template arguments (", std::allocator<...>", ", std::less<...>") and spells
// std::string as such, so container types read as they are written.
std::string TidyTemplateArgs(std::string name) {
  const std::string kString = "std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> >";
  for (size_t p; (p = name.find(kString)) != std::string::npos;) name.replace(p, kString.size(), "std::string");
  for (std::string_view prefix : {", std::allocator<", ", std::less<"}) {
    for (size_t p; (p = name.find(prefix)) != std::string::npos;) {
      size_t end = p + prefix.size();
      for (int depth = 1; end < name.size() && depth > 0; ++end) {
        if (name[end] == '<') ++depth;
        if (name[end] == '>') --depth;
      }
      name.erase(p, end - p);
    }
  }
  for (size_t p; (p = name.find(" >")) != std::string::npos;) name.erase(p, 1);
  return name;
}

}  // namespace

std::string ShortTypeName(const std::type_info& type) {
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> demangled(
      abi::__cxa_demangle(type.name(), nullptr, nullptr, &status), std::free);
  std::string name = TidyTemplateArgs((status == 0 && demangled) ? demangled.get() : type.name());
  // Keep what follows the last "::" outside template arguments and "(anonymous namespace)".
  int depth = 0;
  size_t start = 0;
  for (size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    if (c == '<' || c == '(') {
      ++depth;
    } else if (c == '>' || c == ')') {
      --depth;
    } else if (depth == 0 && c == ':' && i + 1 < name.size() && name[i + 1] == ':') {
      start = i + 2;
      ++i;
    }
  }
  return name.substr(start);
}

std::string FormatPath(const PathFrame* innermost) {
  std::vector<const PathFrame*> frames;
  for (const PathFrame* f = innermost; f != nullptr; f = f->parent) frames.push_back(f);
  std::string out;
  for (auto it = frames.rbegin(); it != frames.rend(); ++it) {
    const PathFrame& f = **it;
    switch (f.kind) {
      case PathFrame::kIndex: StrAppend(&out, "[", f.index, "]"); break;
      case PathFrame::kKey: StrAppend(&out, "['", f.name, "']"); break;
      case PathFrame::kField: StrAppend(&out, ".", f.name); break;
    }
  }
  return out;
}

std::string DescribeKeys(const std::vector<std::string_view>& keys) {
  std::string out = "[";
  for (size_t i = 0; i < keys.size(); ++i) StrAppend(&out, i ? ", '" : "'", keys[i], "'");
  return out + "]";
}

namespace {

constexpr size_t kMaxShown = 200;  // characters of a structure quoted in an error

std::string WhereString(const std::string& path) { return path.empty() ? "the root" : path; }

// "list [*, *]", "struct Layer(w=*, b=*)", "leaf *", "None", ...
std::string NodeDescription(const tree::TreeDef& def, size_t node) {
  std::string_view kind;
  switch (def.nodes()[node].kind) {
    case tree::NodeKind::kLeaf: kind = "a leaf "; break;
    case tree::NodeKind::kNone: kind = ""; break;
    case tree::NodeKind::kTuple: kind = "a tuple "; break;
    case tree::NodeKind::kList: kind = "a list "; break;
    case tree::NodeKind::kDict: kind = "a dict "; break;
    case tree::NodeKind::kStruct: kind = "a struct "; break;
    case tree::NodeKind::kStatic: kind = "a "; break;
  }
  return StrCat(kind, def.SubtreeString(node, kMaxShown));
}

}  // namespace

void ThrowUnflattenMismatch(const Reader& r, const PathFrame* path, std::string_view expected) {
  throw ValueError(StrCat("tree::unflatten<", ShortTypeName(r.root_type), ">: structure mismatch at ",
                          WhereString(FormatPath(path)), ": the TreeDef has ",
                          NodeDescription(r.def, r.node), " where the type expects ", expected,
                          " (TreeDef: PyTreeDef(", r.def.SubtreeString(0, kMaxShown), "))"));
}

void ThrowLeafCountMismatch(const tree::TreeDef& def, size_t got, const std::type_info& type) {
  throw ValueError(StrCat("tree::unflatten<", ShortTypeName(type), ">: PyTreeDef(",
                          def.SubtreeString(0, kMaxShown), ") expects ", def.num_leaves(),
                          " leaves, got ", got));
}

void ThrowMapMismatch(const PathFrame* path, std::string_view detail) {
  throw ValueError(StrCat("tree::map: tree structures differ at ", WhereString(FormatPath(path)),
                          ": ", detail));
}

}  // namespace tree_internal

namespace tree {
namespace {

using Node = TreeDef::Node;

constexpr size_t kMaxShownForDiff = 120;  // characters of each side quoted in a difference

void Mix(size_t& h, size_t v) { h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2); }

// Compares one node of a with one node of b, children excluded.
bool SameNode(const TreeDef& a, size_t i, const TreeDef& b, size_t j) {
  const Node& x = a.nodes()[i];
  const Node& y = b.nodes()[j];
  // num_leaves is not compared: equal headers at every position imply it, and
  // FirstDifference wants to descend to the node that actually differs.
  if (x.kind != y.kind || x.num_children != y.num_children) return false;
  switch (x.kind) {
    case NodeKind::kStruct:
      return x.struct_info == y.struct_info || *x.struct_info->type == *y.struct_info->type;
    case NodeKind::kDict:
      for (size_t k = 0; k < x.num_children; ++k) {
        if (a.DictKey(i, k) != b.DictKey(j, k)) return false;
      }
      return true;
    case NodeKind::kStatic:
      return a.StaticAt(i).Equals(b.StaticAt(j));
    default:
      return true;
  }
}

// Preorder positions of a node's children.
std::vector<size_t> ChildPositions(const TreeDef& def, size_t node) {
  std::vector<size_t> out;
  size_t pos = node + 1;
  for (uint32_t k = 0; k < def.nodes()[node].num_children; ++k) {
    out.push_back(pos);
    pos += def.nodes()[pos].num_nodes;
  }
  return out;
}

// The key path step from a container to its child number `ordinal`.
void AppendEntry(const TreeDef& def, size_t node, size_t ordinal, std::string* out) {
  const Node& n = def.nodes()[node];
  switch (n.kind) {
    case NodeKind::kDict: StrAppend(out, "['", def.DictKey(node, ordinal), "']"); break;
    case NodeKind::kStruct: StrAppend(out, ".", n.struct_info->fields[ordinal]); break;
    default: StrAppend(out, "[", ordinal, "]"); break;
  }
}

}  // namespace

TreeDef::TreeDef() : nodes_(1) {}

TreeDef TreeDef::Sequence(NodeKind kind, absl::Span<const TreeDef> children) {
  TreeDef out;
  Node& root = out.nodes_[0];
  root.kind = kind;
  root.num_children = static_cast<uint32_t>(children.size());
  root.num_leaves = 0;
  for (const TreeDef& c : children) {
    out.nodes_[0].num_leaves += c.nodes_[0].num_leaves;
    out.AppendSubtree(c, 0);
  }
  out.nodes_[0].num_nodes = static_cast<uint32_t>(out.nodes_.size());
  return out;
}

TreeDef TreeDef::Tuple(absl::Span<const TreeDef> children) { return Sequence(NodeKind::kTuple, children); }
TreeDef TreeDef::List(absl::Span<const TreeDef> children) { return Sequence(NodeKind::kList, children); }

void TreeDef::AppendSubtree(const TreeDef& src, size_t root) {
  const size_t end = root + src.nodes_[root].num_nodes;
  for (size_t i = root; i < end; ++i) {
    Node n = src.nodes_[i];
    if (n.kind == NodeKind::kDict) {
      const uint32_t first = n.aux;
      n.aux = static_cast<uint32_t>(keys_.size());
      keys_.insert(keys_.end(), src.keys_.begin() + first, src.keys_.begin() + first + n.num_children);
    } else if (n.kind == NodeKind::kStatic) {
      statics_.push_back(src.statics_[n.aux]);
      n.aux = static_cast<uint32_t>(statics_.size() - 1);
    }
    nodes_.push_back(n);
  }
}

std::vector<TreeDef> TreeDef::Children() const {
  std::vector<TreeDef> out;
  for (size_t pos : ChildPositions(*this, 0)) {
    TreeDef& c = out.emplace_back();
    c.nodes_.clear();
    c.AppendSubtree(*this, pos);
  }
  return out;
}

size_t TreeDef::Hash() const {
  size_t h = nodes_.size();
  for (size_t i = 0; i < nodes_.size(); ++i) {
    const Node& n = nodes_[i];
    Mix(h, static_cast<size_t>(n.kind));
    Mix(h, n.num_children);
    switch (n.kind) {
      case NodeKind::kStruct: Mix(h, n.struct_info->type->hash_code()); break;
      case NodeKind::kDict:
        for (size_t k = 0; k < n.num_children; ++k) Mix(h, std::hash<std::string_view>()(DictKey(i, k)));
        break;
      case NodeKind::kStatic:
        Mix(h, StaticAt(i).type().hash_code());
        Mix(h, StaticAt(i).Hash());
        break;
      default: break;
    }
  }
  return h;
}

bool operator==(const TreeDef& a, const TreeDef& b) {
  if (a.nodes_.size() != b.nodes_.size()) return false;
  // Equal headers at every preorder position imply equal shapes (num_children matches).
  for (size_t i = 0; i < a.nodes_.size(); ++i) {
    if (!SameNode(a, i, b, i)) return false;
  }
  return true;
}

std::string TreeDef::SubtreeString(size_t root, size_t max_chars) const {
  // Iterative preorder print; a frame is an open container and its next child.
  struct Frame {
    size_t node;
    uint32_t next;
    size_t child_pos;
  };
  std::vector<Frame> stack;
  std::string out;
  auto enter = [&](size_t i) {
    const Node& n = nodes_[i];
    switch (n.kind) {
      case NodeKind::kLeaf: out += "*"; return;
      case NodeKind::kNone: out += "None"; return;
      case NodeKind::kStatic: StrAppend(&out, "Static(", statics_[n.aux]->ToString(), ")"); return;
      case NodeKind::kTuple: out += "("; break;
      case NodeKind::kList: out += "["; break;
      case NodeKind::kDict: out += "{"; break;
      case NodeKind::kStruct: StrAppend(&out, n.struct_info->name, "("); break;
    }
    stack.push_back({i, 0, i + 1});
  };
  enter(root);
  while (!stack.empty() && out.size() <= max_chars) {
    Frame& f = stack.back();
    const Node& n = nodes_[f.node];
    if (f.next == n.num_children) {
      switch (n.kind) {
        case NodeKind::kTuple: out += n.num_children == 1 ? ",)" : ")"; break;
        case NodeKind::kList: out += "]"; break;
        case NodeKind::kDict: out += "}"; break;
        default: out += ")"; break;
      }
      stack.pop_back();
      continue;
    }
    if (f.next > 0) out += ", ";
    if (n.kind == NodeKind::kDict) StrAppend(&out, "'", DictKey(f.node, f.next), "': ");
    if (n.kind == NodeKind::kStruct) StrAppend(&out, n.struct_info->fields[f.next], "=");
    const size_t child = f.child_pos;
    f.child_pos += nodes_[child].num_nodes;
    ++f.next;
    enter(child);  // may grow the stack; f is not used after this
  }
  if (out.size() > max_chars) {
    out.resize(max_chars);
    out += "...";
  }
  return out;
}

std::string TreeDef::ToString() const { return StrCat("PyTreeDef(", SubtreeString(0), ")"); }

std::ostream& operator<<(std::ostream& os, const TreeDef& def) { return os << def.ToString(); }

std::string TreeDef::KeyPath(size_t leaf_index) const {
  if (leaf_index >= num_leaves()) {
    throw IndexError(StrCat("TreeDef::KeyPath: leaf index ", leaf_index, " out of range for ",
                            num_leaves(), " leaves"));
  }
  std::string out;
  size_t node = 0, remaining = leaf_index;
  while (nodes_[node].kind != NodeKind::kLeaf) {
    size_t pos = node + 1;
    for (uint32_t k = 0;; ++k) {
      if (remaining < nodes_[pos].num_leaves) {
        AppendEntry(*this, node, k, &out);
        break;
      }
      remaining -= nodes_[pos].num_leaves;
      pos += nodes_[pos].num_nodes;
    }
    node = pos;
  }
  return out;
}

std::vector<std::string> TreeDef::KeyPaths() const {
  std::vector<std::string> out;
  out.reserve(num_leaves());
  if (IsLeaf()) return {""};
  struct Frame {
    size_t node;
    uint32_t next;
    size_t child_pos;
    size_t path_len;  // length of this container's own path
  };
  std::vector<Frame> stack{{0, 0, 1, 0}};
  std::string path;
  while (!stack.empty()) {
    Frame& f = stack.back();
    const Node& n = nodes_[f.node];
    if (f.next == n.num_children) {
      stack.pop_back();
      continue;
    }
    const size_t child = f.child_pos;
    path.resize(f.path_len);
    AppendEntry(*this, f.node, f.next, &path);
    f.child_pos += nodes_[child].num_nodes;
    ++f.next;
    const Node& c = nodes_[child];
    if (c.kind == NodeKind::kLeaf) {
      out.push_back(path);
    } else if (c.num_leaves > 0) {
      stack.push_back({child, 0, child + 1, path.size()});
    }
  }
  return out;
}

std::string FirstDifference(const TreeDef& a, const TreeDef& b) {
  struct Item {
    size_t i, j;
    std::string path;
  };
  std::vector<Item> stack{{0, 0, ""}};
  while (!stack.empty()) {
    Item item = std::move(stack.back());
    stack.pop_back();
    if (!SameNode(a, item.i, b, item.j)) {
      return StrCat(item.path.empty() ? "(root)" : item.path, ": ",
                    a.SubtreeString(item.i, kMaxShownForDiff), " vs ",
                    b.SubtreeString(item.j, kMaxShownForDiff));
    }
    const std::vector<size_t> ca = ChildPositions(a, item.i), cb = ChildPositions(b, item.j);
    for (size_t k = ca.size(); k-- > 0;) {
      std::string path = item.path;
      AppendEntry(a, item.i, k, &path);
      stack.push_back({ca[k], cb[k], std::move(path)});
    }
  }
  return "";
}

}  // namespace tree
}  // namespace jx
