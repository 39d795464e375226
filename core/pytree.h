// Pytrees: nested C++ values whose leaves are jx::Arrays, as in JAX's jax.tree_util. A tree
// flattens to its leaves (in a fixed order) plus a TreeDef describing the structure; every
// transformation flattens its arguments and results this way, and a TreeDef (including the
// Static values it holds) is part of jit's cache key.
//
// Leaves are jx::Array. Nodes (printed form, key path of a child):
//   std::vector<T>                          list   [*, *]          [i]
//   std::array<T, N>, std::tuple, std::pair tuple  (*, *)          [i]
//   std::map<std::string, T>                dict   {'a': *}        ['a']  (leaves in key order)
//   BOOST_HANA_DEFINE_STRUCT / _ADAPT_STRUCT struct Name(w=*, b=*)  .w     (declaration order)
//   std::optional<T>                        nullopt is None (no leaves); a value is transparent
//   jx::Static<T>                           Static(v): no leaves; the value is compared with
//                                           ==, hashed and printed as part of the structure
// Structures compare by node kind, so a std::array and a std::tuple of equal arity agree.
// Other leaf types (C++ scalars, strings, ...) are a compile-time error: convert them to an
// Array, or wrap them in Static<T> to make them part of the structure.
//
//   struct Layer { BOOST_HANA_DEFINE_STRUCT(Layer, (jx::Array, w), (jx::Array, b)); };
//   struct Params { BOOST_HANA_DEFINE_STRUCT(Params, (std::vector<Layer>, layers),
//                                            (jx::Static<std::string>, act)); };
//   auto [leaves, def] = jx::tree::flatten(params);   // w0, b0, w1, b1, ...
//   def.ToString();  // PyTreeDef(Params(layers=[Layer(w=*, b=*), ...], act=Static('relu')))
//   def.KeyPath(2);  // ".layers[1].w"
//   Params same = jx::tree::unflatten<Params>(def, leaves);
//   Params half = jx::tree::map([](const jx::Array& x) { return x * 0.5; }, params);
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <iosfwd>
#include <memory>
#include <string>
#include <string_view>
#include <type_traits>
#include <typeinfo>
#include <utility>
#include <vector>

#include <boost/hana/adapt_struct.hpp>
#include <boost/hana/define_struct.hpp>

#include "absl/types/span.h"
#include "jx/core/array.h"
#include "jx/core/pytree_internal.h"
#include "jx/core/str_util.h"

namespace jx {

// A non-array value inside a pytree (an activation name, a layer count, a config struct).
// It has no leaves; its value is part of the TreeDef, so trees differing only in a Static
// value have different structures (and jit retraces).
template <typename T>
struct Static {
  T value;
  friend bool operator==(const Static&, const Static&) = default;
};
template <typename T>
Static(T) -> Static<T>;
Static(const char*) -> Static<std::string>;

namespace tree_internal {
class TreeDefBuilder;
}  // namespace tree_internal

namespace tree {

enum class NodeKind : uint8_t { kLeaf, kNone, kTuple, kList, kDict, kStruct, kStatic };

// The structure of a pytree: nodes in preorder, with dict keys, struct types and Static
// values. Value type; compares and hashes by structure (a jit cache key component).
class TreeDef {
 public:
  struct Node {
    NodeKind kind = NodeKind::kLeaf;
    uint32_t num_children = 0;
    uint32_t num_leaves = 1;  // in this subtree
    uint32_t num_nodes = 1;   // this subtree's size, this node included
    uint32_t aux = 0;         // kDict: first key in keys_; kStatic: index in statics_
    const tree_internal::StructInfo* struct_info = nullptr;  // kStruct
  };

  TreeDef();  // a single leaf: PyTreeDef(*)
  static TreeDef Leaf() { return TreeDef(); }
  static TreeDef Tuple(absl::Span<const TreeDef> children);
  static TreeDef List(absl::Span<const TreeDef> children);

  size_t num_leaves() const { return nodes_[0].num_leaves; }
  size_t num_nodes() const { return nodes_.size(); }
  NodeKind kind() const { return nodes_[0].kind; }
  bool IsLeaf() const { return kind() == NodeKind::kLeaf; }
  size_t num_children() const { return nodes_[0].num_children; }
  // The root's children as standalone TreeDefs (a present optional adds no level).
  std::vector<TreeDef> Children() const;

  size_t Hash() const;
  // JAX's form: PyTreeDef((*, [*, *], {'a': *, 'b': *})), structs as Name(w=*, b=*).
  std::string ToString() const;
  // JAX-style key path of a leaf relative to the root: "" (root leaf), "[0]", "['w']",
  // ".layers[2].w". Throws IndexError when leaf_index >= num_leaves().
  std::string KeyPath(size_t leaf_index) const;
  std::vector<std::string> KeyPaths() const;

  // Low-level access for code walking the structure (prefix trees, diagnostics).
  absl::Span<const Node> nodes() const { return nodes_; }
  std::string_view DictKey(size_t node, size_t child) const { return keys_[nodes_[node].aux + child]; }
  const tree_internal::StaticValue& StaticAt(size_t node) const { return *statics_[nodes_[node].aux]; }
  // The subtree at a node printed without "PyTreeDef(...)", cut at max_chars (with "...").
  std::string SubtreeString(size_t node, size_t max_chars = std::string::npos) const;

  friend bool operator==(const TreeDef& a, const TreeDef& b);
  template <typename H>
  friend H AbslHashValue(H h, const TreeDef& d) {
    return H::combine(std::move(h), d.Hash());
  }

 private:
  friend class tree_internal::TreeDefBuilder;
  static TreeDef Sequence(NodeKind kind, absl::Span<const TreeDef> children);
  // Copies the subtree rooted at src's node `root` onto the end of this def.
  void AppendSubtree(const TreeDef& src, size_t root);

  std::vector<Node> nodes_;
  std::vector<std::string> keys_;
  std::vector<std::shared_ptr<const tree_internal::StaticValue>> statics_;
};

std::ostream& operator<<(std::ostream& os, const TreeDef& def);

// Where two structures first differ, in preorder: ".layers: [*, *] vs [*, *, *]"; "" when
// equal. For error messages and jit's cache-miss explanations.
std::string FirstDifference(const TreeDef& a, const TreeDef& b);

// True for every supported pytree type, Array included.
template <typename T>
inline constexpr bool IsPytree = tree_internal::kIsPytree<T>;
}  // namespace tree

template <typename T>
concept Pytree = tree::IsPytree<T>;

namespace tree_internal {

// Appends nodes in preorder; End() fills a container's subtree sizes once its children
// are in.
class TreeDefBuilder {
 public:
  struct Open { size_t node, leaves; };
  explicit TreeDefBuilder(std::vector<Array>* leaves) : leaves_(leaves) { def_.nodes_.clear(); }

  void Leaf(const Array& x) {
    if (leaves_ != nullptr) leaves_->push_back(x);
    def_.nodes_.emplace_back();
    ++num_leaves_;
  }
  void Empty(tree::NodeKind kind, uint32_t aux = 0) {
    tree::TreeDef::Node& n = def_.nodes_.emplace_back();
    n.kind = kind;
    n.num_leaves = 0;
    n.aux = aux;
  }
  template <typename T>
  void AddStatic(const T& v) {
    Empty(tree::NodeKind::kStatic, static_cast<uint32_t>(def_.statics_.size()));
    def_.statics_.push_back(std::make_shared<StaticValueOf<T>>(v));
  }
  Open Begin(tree::NodeKind kind, size_t num_children, const StructInfo* info = nullptr) {
    tree::TreeDef::Node& n = def_.nodes_.emplace_back();
    n.kind = kind;
    n.num_children = static_cast<uint32_t>(num_children);
    n.aux = static_cast<uint32_t>(def_.keys_.size());
    n.struct_info = info;
    return {def_.nodes_.size() - 1, num_leaves_};
  }
  void AddKey(const std::string& key) { def_.keys_.push_back(key); }
  void End(Open open) {
    tree::TreeDef::Node& n = def_.nodes_[open.node];
    n.num_nodes = static_cast<uint32_t>(def_.nodes_.size() - open.node);
    n.num_leaves = static_cast<uint32_t>(num_leaves_ - open.leaves);
  }
  tree::TreeDef Finish() && { return std::move(def_); }

 private:
  tree::TreeDef def_;
  std::vector<Array>* leaves_;
  size_t num_leaves_ = 0;
};

template <typename T>
void FlattenInto(const T& x, TreeDefBuilder& b) {
  constexpr Category kCat = kCategoryOf<T>;
  if constexpr (kCat == Category::kArray) {
    b.Leaf(x);
  } else if constexpr (kCat == Category::kVector || kCat == Category::kStdArray) {
    auto open = b.Begin(kCat == Category::kVector ? tree::NodeKind::kList : tree::NodeKind::kTuple, x.size());
    for (const auto& e : x) FlattenInto(e, b);
    b.End(open);
  } else if constexpr (kCat == Category::kTupleLike) {
    auto open = b.Begin(tree::NodeKind::kTuple, std::tuple_size_v<T>);
    std::apply([&](const auto&... e) { (FlattenInto(e, b), ...); }, x);
    b.End(open);
  } else if constexpr (kCat == Category::kDict) {
    auto open = b.Begin(tree::NodeKind::kDict, x.size());
    for (const auto& [k, v] : x) b.AddKey(k);  // keys first: children may add their own
    for (const auto& [k, v] : x) FlattenInto(v, b);
    b.End(open);
  } else if constexpr (kCat == Category::kOptional) {
    if (x.has_value()) {
      FlattenInto(*x, b);
    } else {
      b.Empty(tree::NodeKind::kNone);
    }
  } else if constexpr (kCat == Category::kStatic) {
    b.AddStatic(x.value);
  } else if constexpr (kCat == Category::kStruct) {
    const StructInfo& info = GetStructInfo<T>();
    auto open = b.Begin(tree::NodeKind::kStruct, info.fields.size(), &info);
    boost::hana::for_each(boost::hana::accessors<T>(),
                          [&](auto pair) { FlattenInto(boost::hana::second(pair)(x), b); });
    b.End(open);
  } else {
    ReportNotPytree<T>();
  }
}

template <typename T>
void CollectLeaves(const T& x, std::vector<Array>& out) {
  constexpr Category kCat = kCategoryOf<T>;
  if constexpr (kCat == Category::kArray) {
    out.push_back(x);
  } else if constexpr (kCat == Category::kVector || kCat == Category::kStdArray) {
    for (const auto& e : x) CollectLeaves(e, out);
  } else if constexpr (kCat == Category::kTupleLike) {
    std::apply([&](const auto&... e) { (CollectLeaves(e, out), ...); }, x);
  } else if constexpr (kCat == Category::kDict) {
    for (const auto& [k, v] : x) CollectLeaves(v, out);
  } else if constexpr (kCat == Category::kOptional) {
    if (x.has_value()) CollectLeaves(*x, out);
  } else if constexpr (kCat == Category::kStruct) {
    boost::hana::for_each(boost::hana::accessors<T>(),
                          [&](auto pair) { CollectLeaves(boost::hana::second(pair)(x), out); });
  } else if constexpr (kCat != Category::kStatic) {
    ReportNotPytree<T>();
  }
}

// Unflatten state: the def's nodes and the leaves are consumed in preorder.
struct Reader {
  const tree::TreeDef& def;
  absl::Span<const Array> leaves;
  const std::type_info& root_type;
  size_t node = 0;
  size_t leaf = 0;
  const tree::TreeDef::Node& Current() const { return def.nodes()[node]; }
};
[[noreturn]] void ThrowUnflattenMismatch(const Reader& r, const PathFrame* path, std::string_view expected);
[[noreturn]] void ThrowLeafCountMismatch(const tree::TreeDef& def, size_t got, const std::type_info& type);

template <typename T>
T Build(Reader& r, const PathFrame* path);

template <typename T, size_t I>
std::tuple_element_t<I, T> BuildElement(Reader& r, const PathFrame* path) {
  PathFrame f{path, PathFrame::kIndex, I};
  return Build<std::tuple_element_t<I, T>>(r, &f);
}

template <typename T>
T Build(Reader& r, const PathFrame* path) {
  constexpr Category kCat = kCategoryOf<T>;
  const tree::TreeDef::Node& n = r.Current();
  using tree::NodeKind;
  if constexpr (kCat == Category::kArray) {
    if (n.kind != NodeKind::kLeaf) ThrowUnflattenMismatch(r, path, "a leaf (jx::Array)");
    ++r.node;
    return r.leaves[r.leaf++];
  } else if constexpr (kCat == Category::kVector) {
    if (n.kind != NodeKind::kList) ThrowUnflattenMismatch(r, path, "a list (std::vector)");
    const size_t k = n.num_children;
    ++r.node;
    T out;
    out.reserve(k);
    for (size_t i = 0; i < k; ++i) {
      PathFrame f{path, PathFrame::kIndex, i};
      out.push_back(Build<typename NodeTraits<T>::Elem>(r, &f));
    }
    return out;
  } else if constexpr (kCat == Category::kStdArray) {
    if (n.kind != NodeKind::kTuple || n.num_children != std::tuple_size_v<T>) {
      ThrowUnflattenMismatch(r, path, StrCat("a tuple of ", std::tuple_size_v<T>, " (std::array)"));
    }
    ++r.node;
    T out;
    for (size_t i = 0; i < out.size(); ++i) {
      PathFrame f{path, PathFrame::kIndex, i};
      out[i] = Build<typename NodeTraits<T>::Elem>(r, &f);
    }
    return out;
  } else if constexpr (kCat == Category::kTupleLike) {
    if (n.kind != NodeKind::kTuple || n.num_children != std::tuple_size_v<T>) {
      ThrowUnflattenMismatch(r, path, StrCat("a tuple of ", std::tuple_size_v<T>, " (std::tuple/std::pair)"));
    }
    ++r.node;
    // Braced initialization evaluates left to right, matching leaf order.
    return [&]<size_t... I>(std::index_sequence<I...>) {
      return T{BuildElement<T, I>(r, path)...};
    }(std::make_index_sequence<std::tuple_size_v<T>>());
  } else if constexpr (kCat == Category::kDict) {
    if (n.kind != NodeKind::kDict) ThrowUnflattenMismatch(r, path, "a dict (std::map)");
    const size_t node = r.node, k = n.num_children;
    ++r.node;
    T out;
    for (size_t i = 0; i < k; ++i) {
      std::string_view key = r.def.DictKey(node, i);
      PathFrame f{path, PathFrame::kKey, i, key};
      out.emplace_hint(out.end(), std::string(key), Build<typename NodeTraits<T>::Elem>(r, &f));
    }
    return out;
  } else if constexpr (kCat == Category::kOptional) {
    if (n.kind == NodeKind::kNone) {
      ++r.node;
      return T(std::nullopt);
    }
    return T(Build<typename NodeTraits<T>::Elem>(r, path));
  } else if constexpr (kCat == Category::kStatic) {
    using V = decltype(T::value);
    if (n.kind != NodeKind::kStatic || r.def.StaticAt(r.node).type() != typeid(V)) {
      ThrowUnflattenMismatch(r, path, StrCat("a Static<", ShortTypeName(typeid(V)), ">"));
    }
    const auto& value = static_cast<const StaticValueOf<V>&>(r.def.StaticAt(r.node)).value();
    ++r.node;
    return T{value};
  } else if constexpr (kCat == Category::kStruct) {
    static_assert(std::is_default_constructible_v<T>,
                  "jx::tree: pytree structs must be default-constructible to be rebuilt");
    const StructInfo& info = GetStructInfo<T>();
    if (n.kind != NodeKind::kStruct || *n.struct_info->type != typeid(T)) {
      ThrowUnflattenMismatch(r, path, StrCat("a struct ", info.name));
    }
    ++r.node;
    T out{};
    size_t i = 0;
    boost::hana::for_each(boost::hana::accessors<T>(), [&](auto pair) {
      auto& field = boost::hana::second(pair)(out);
      PathFrame f{path, PathFrame::kField, i, info.fields[i]};
      field = Build<std::remove_cvref_t<decltype(field)>>(r, &f);
      ++i;
    });
    return out;
  } else {
    ReportNotPytree<T>();
  }
}

}  // namespace tree_internal

namespace tree {

// Leaves in order and the structure.
template <typename T>
std::pair<std::vector<Array>, TreeDef> flatten(const T& x) {
  std::vector<Array> out;
  tree_internal::TreeDefBuilder b(&out);
  tree_internal::FlattenInto(x, b);
  return {std::move(out), std::move(b).Finish()};
}

template <typename T>
std::vector<Array> leaves(const T& x) {
  std::vector<Array> out;
  tree_internal::CollectLeaves(x, out);
  return out;
}

template <typename T>
TreeDef structure(const T& x) {
  tree_internal::TreeDefBuilder b(nullptr);
  tree_internal::FlattenInto(x, b);
  return std::move(b).Finish();
}

// Rebuilds a T from a structure and leaves. Throws ValueError when the leaf count differs
// from def.num_leaves() or def does not describe a T (naming the path and both sides).
template <typename T>
T unflatten(const TreeDef& def, absl::Span<const Array> leaves) {
  if (leaves.size() != def.num_leaves()) tree_internal::ThrowLeafCountMismatch(def, leaves.size(), typeid(T));
  tree_internal::Reader r{def, leaves, typeid(T)};
  return tree_internal::Build<T>(r, nullptr);
}

// f(leaf) -> Array over every leaf; map(f, a, b, ...) calls f(leaf_a, leaf_b, ...) and throws
// ValueError naming the path where the trees' structures differ.
template <typename F, typename T, typename... Rest>
  requires(std::is_same_v<T, Rest> && ...)
T map(F&& f, const T& x, const Rest&... rest) {
  return tree_internal::MapImpl(f, nullptr, x, rest...);
}

}  // namespace tree
}  // namespace jx

template <>
struct std::hash<jx::tree::TreeDef> {
  size_t operator()(const jx::tree::TreeDef& d) const { return d.Hash(); }
};
