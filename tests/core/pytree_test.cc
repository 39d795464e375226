#include "jx/core/pytree.h"

#include <gtest/gtest.h>

#include <array>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <unordered_set>
#include <utility>
#include <vector>

#include "jx/core/errors.h"

namespace jx::pytree_test {
namespace {

using tree::TreeDef;

struct Layer {
  BOOST_HANA_DEFINE_STRUCT(Layer, (Array, w), (Array, b));
};
struct Params {
  BOOST_HANA_DEFINE_STRUCT(Params, (std::vector<Layer>, layers), (Static<std::string>, act));
};
struct Adapted {
  Array x;
  std::optional<Array> y;
};
struct Config {  // a non-array value with ==, <<, and std::hash below
  int depth;
  friend bool operator==(const Config&, const Config&) = default;
  friend std::ostream& operator<<(std::ostream& os, const Config& c) { return os << "Config(" << c.depth << ")"; }
};
struct Opaque {  // ==, but neither printable nor hashable
  int v;
  friend bool operator==(const Opaque&, const Opaque&) = default;
};

}  // namespace
}  // namespace jx::pytree_test

BOOST_HANA_ADAPT_STRUCT(jx::pytree_test::Adapted, x, y);

template <>
struct std::hash<jx::pytree_test::Config> {
  size_t operator()(const jx::pytree_test::Config& c) const { return std::hash<int>()(c.depth); }
};

namespace jx::pytree_test {
namespace {

Array S(double v) { return Array::Scalar(v, float32); }

std::vector<double> Values(const std::vector<Array>& xs) {
  std::vector<double> out;
  for (const Array& x : xs) out.push_back(x.item<double>());
  return out;
}

Params MakeParams(int n) {
  Params p;
  for (int i = 0; i < n; ++i) p.layers.push_back({S(10 * i + 1), S(10 * i + 2)});
  p.act = {"relu"};
  return p;
}

static_assert(tree::IsPytree<Array>);
static_assert(tree::IsPytree<std::vector<Array>>);
static_assert(tree::IsPytree<const std::tuple<Array, std::pair<Array, Array>>&>);
static_assert(tree::IsPytree<std::map<std::string, std::optional<Array>>>);
static_assert(tree::IsPytree<std::array<Layer, 3>>);
static_assert(tree::IsPytree<Params>);
static_assert(tree::IsPytree<Adapted>);
static_assert(tree::IsPytree<Static<int>>);
static_assert(Pytree<std::tuple<>>);
static_assert(!tree::IsPytree<double>);
static_assert(!tree::IsPytree<std::vector<float>>);
static_assert(!tree::IsPytree<std::map<int, Array>>);
static_assert(!tree::IsPytree<std::tuple<Array, int>>);
static_assert(!tree::IsPytree<Config>);

TEST(PytreeTest, LeafAlone) {
  auto [leaves, def] = tree::flatten(S(3));
  EXPECT_EQ(Values(leaves), std::vector<double>{3});
  EXPECT_TRUE(def.IsLeaf());
  EXPECT_EQ(def.num_leaves(), 1u);
  EXPECT_EQ(def.ToString(), "PyTreeDef(*)");
  EXPECT_EQ(def.KeyPath(0), "");
  EXPECT_EQ(def, TreeDef::Leaf());
  EXPECT_EQ(tree::unflatten<Array>(def, leaves).item<double>(), 3);
}

TEST(PytreeTest, MixedContainersRoundTrip) {
  using T = std::tuple<Array, std::vector<Array>, std::map<std::string, Array>>;
  T x{S(1), {S(2), S(3)}, {{"b", S(5)}, {"a", S(4)}}};
  auto [leaves, def] = tree::flatten(x);
  // Dict leaves come in key order, like JAX dicts.
  EXPECT_EQ(Values(leaves), (std::vector<double>{1, 2, 3, 4, 5}));
  EXPECT_EQ(def.ToString(), "PyTreeDef((*, [*, *], {'a': *, 'b': *}))");
  EXPECT_EQ(def.kind(), tree::NodeKind::kTuple);
  EXPECT_EQ(def.num_children(), 3u);
  EXPECT_EQ(def.KeyPaths(), (std::vector<std::string>{"[0]", "[1][0]", "[1][1]", "[2]['a']", "[2]['b']"}));
  T y = tree::unflatten<T>(def, leaves);
  EXPECT_EQ(Values(tree::leaves(y)), Values(leaves));
  EXPECT_EQ(std::get<2>(y).at("b").item<double>(), 5);
  EXPECT_EQ(tree::structure(y), def);
}

TEST(PytreeTest, TuplesPairsAndStdArrays) {
  std::pair<Array, std::tuple<Array>> p{S(1), {S(2)}};
  EXPECT_EQ(tree::structure(p).ToString(), "PyTreeDef((*, (*,)))");
  std::array<Array, 3> a{S(1), S(2), S(3)};
  auto [leaves, def] = tree::flatten(a);
  EXPECT_EQ(def.ToString(), "PyTreeDef((*, *, *))");
  auto b = tree::unflatten<std::array<Array, 3>>(def, leaves);
  EXPECT_EQ(b[2].item<double>(), 3);
  // Fixed-size sequences are tuples: a std::array and a std::tuple of the same arity agree.
  EXPECT_EQ(tree::structure(std::tuple<Array, Array, Array>{S(0), S(0), S(0)}), def);
  auto t = tree::unflatten<std::tuple<Array, Array, Array>>(def, leaves);
  EXPECT_EQ(std::get<1>(t).item<double>(), 2);
  EXPECT_EQ(tree::structure(std::tuple<>{}).ToString(), "PyTreeDef(())");
  EXPECT_EQ(tree::structure(std::vector<Array>{}).ToString(), "PyTreeDef([])");
  EXPECT_EQ(tree::structure(std::vector<Array>{}).num_leaves(), 0u);
}

TEST(PytreeTest, OptionalIsNoneOrTransparent) {
  std::vector<std::optional<Array>> x{S(1), std::nullopt, S(3)};
  auto [leaves, def] = tree::flatten(x);
  EXPECT_EQ(Values(leaves), (std::vector<double>{1, 3}));
  EXPECT_EQ(def.ToString(), "PyTreeDef([*, None, *])");
  EXPECT_EQ(def.KeyPaths(), (std::vector<std::string>{"[0]", "[2]"}));
  auto y = tree::unflatten<std::vector<std::optional<Array>>>(def, leaves);
  ASSERT_EQ(y.size(), 3u);
  EXPECT_FALSE(y[1].has_value());
  EXPECT_EQ(y[2]->item<double>(), 3);
  // A present optional has the structure of its value.
  EXPECT_EQ(tree::structure(std::optional<Array>(S(1))), TreeDef::Leaf());
}

TEST(PytreeTest, StructsWithVectorsOfStructs) {
  Params p = MakeParams(3);
  auto [leaves, def] = tree::flatten(p);
  EXPECT_EQ(Values(leaves), (std::vector<double>{1, 2, 11, 12, 21, 22}));
  EXPECT_EQ(def.ToString(),
            "PyTreeDef(Params(layers=[Layer(w=*, b=*), Layer(w=*, b=*), Layer(w=*, b=*)], "
            "act=Static('relu')))");
  EXPECT_EQ(def.KeyPath(4), ".layers[2].w");
  EXPECT_EQ(def.KeyPath(1), ".layers[0].b");
  EXPECT_EQ(def.KeyPaths().back(), ".layers[2].b");
  EXPECT_THROW(def.KeyPath(6), IndexError);
  Params q = tree::unflatten<Params>(def, leaves);
  ASSERT_EQ(q.layers.size(), 3u);
  EXPECT_EQ(q.layers[2].w.item<double>(), 21);
  EXPECT_EQ(q.act.value, "relu");
  EXPECT_EQ(tree::structure(q), def);

  std::vector<TreeDef> children = def.Children();
  ASSERT_EQ(children.size(), 2u);
  EXPECT_EQ(children[0].ToString(), "PyTreeDef([Layer(w=*, b=*), Layer(w=*, b=*), Layer(w=*, b=*)])");
  EXPECT_EQ(children[1].ToString(), "PyTreeDef(Static('relu'))");
  EXPECT_EQ(children[1].num_leaves(), 0u);
}

TEST(PytreeTest, AdaptedStruct) {
  Adapted a{S(1), std::nullopt};
  auto [leaves, def] = tree::flatten(a);
  EXPECT_EQ(def.ToString(), "PyTreeDef(Adapted(x=*, y=None))");
  Adapted b = tree::unflatten<Adapted>(def, leaves);
  EXPECT_EQ(b.x.item<double>(), 1);
  EXPECT_FALSE(b.y.has_value());
  a.y = S(2);
  EXPECT_EQ(tree::structure(a).ToString(), "PyTreeDef(Adapted(x=*, y=*))");
  EXPECT_EQ(tree::structure(a).KeyPath(1), ".y");
  EXPECT_NE(tree::structure(a), def);
}

TEST(PytreeTest, StaticValuesAreStructure) {
  using T = std::tuple<Array, Static<int>>;
  TreeDef d1 = tree::structure(T{S(1), {1}});
  TreeDef d1b = tree::structure(T{S(7), {1}});
  TreeDef d2 = tree::structure(T{S(1), {2}});
  EXPECT_EQ(d1, d1b);
  EXPECT_EQ(d1.Hash(), d1b.Hash());
  EXPECT_NE(d1, d2);
  EXPECT_NE(d1.Hash(), d2.Hash());  // std::hash<int> differs for 1 and 2
  EXPECT_EQ(d1.ToString(), "PyTreeDef((*, Static(1)))");
  EXPECT_EQ(FirstDifference(d1, d2), "[1]: Static(1) vs Static(2)");
  EXPECT_EQ(FirstDifference(d1, d1b), "");
  T back = tree::unflatten<T>(d2, std::vector<Array>{S(5)});
  EXPECT_EQ(std::get<1>(back).value, 2);

  // Printing falls back to "<static>"; hashing to the type when no hash exists.
  auto cfg = tree::structure(std::pair<Static<Config>, Static<Opaque>>{{Config{3}}, {Opaque{1}}});
  EXPECT_EQ(cfg.ToString(), "PyTreeDef((Static(Config(3)), Static(<static>)))");
  EXPECT_NE(cfg, tree::structure(std::pair<Static<Config>, Static<Opaque>>{{Config{3}}, {Opaque{2}}}));
  EXPECT_EQ(tree::structure(Static{true}).ToString(), "PyTreeDef(Static(True))");
  // A Static of another type is a different structure even when printed the same.
  EXPECT_NE(tree::structure(Static<int>{1}), tree::structure(Static<long>{1}));
  // A vector<int> static is hashed through absl::Hash.
  auto v1 = tree::structure(Static<std::vector<int>>{{1, 2}});
  EXPECT_EQ(v1, tree::structure(Static<std::vector<int>>{{1, 2}}));
  EXPECT_EQ(v1.Hash(), tree::structure(Static<std::vector<int>>{{1, 2}}).Hash());
  EXPECT_NE(v1, tree::structure(Static<std::vector<int>>{{1, 3}}));
}

TEST(PytreeTest, EqualityAndHashFollowStructure) {
  std::unordered_set<TreeDef> seen;
  seen.insert(tree::structure(MakeParams(2)));
  seen.insert(tree::structure(MakeParams(2)));
  seen.insert(tree::structure(MakeParams(3)));
  seen.insert(tree::structure(std::vector<Array>{S(1), S(2)}));
  seen.insert(tree::structure(std::tuple<Array, Array>{S(1), S(2)}));
  seen.insert(tree::structure(std::map<std::string, Array>{{"a", S(1)}, {"b", S(2)}}));
  seen.insert(tree::structure(std::map<std::string, Array>{{"a", S(1)}, {"c", S(2)}}));
  EXPECT_EQ(seen.size(), 6u);
  Params p = MakeParams(2);
  Params q = MakeParams(2);
  q.act.value = "tanh";
  EXPECT_NE(tree::structure(p), tree::structure(q));
  EXPECT_EQ(FirstDifference(tree::structure(p), tree::structure(q)), ".act: Static('relu') vs Static('tanh')");
  EXPECT_EQ(FirstDifference(tree::structure(MakeParams(2)), tree::structure(MakeParams(3))),
            ".layers: [Layer(w=*, b=*), Layer(w=*, b=*)] vs [Layer(w=*, b=*), Layer(w=*, b=*), Layer(w=*, b=*)]");
}

TEST(PytreeTest, BuiltTreeDefs) {
  TreeDef params = tree::structure(MakeParams(1));
  TreeDef args = TreeDef::Tuple({params, TreeDef::Leaf()});
  EXPECT_EQ(args.ToString(), "PyTreeDef((Params(layers=[Layer(w=*, b=*)], act=Static('relu')), *))");
  EXPECT_EQ(args.num_leaves(), 3u);
  EXPECT_EQ(args.KeyPath(1), "[0].layers[0].b");
  EXPECT_EQ(args, tree::structure(std::tuple<Params, Array>{MakeParams(1), S(0)}));
  EXPECT_EQ(args.Children()[0], params);
  EXPECT_EQ(TreeDef::List({TreeDef::Leaf(), TreeDef::Leaf()}), tree::structure(std::vector<Array>{S(1), S(2)}));
  TreeDef dict = tree::structure(std::map<std::string, Array>{{"k", S(1)}});
  TreeDef nested = TreeDef::List({dict, dict});
  EXPECT_EQ(nested.ToString(), "PyTreeDef([{'k': *}, {'k': *}])");
  EXPECT_EQ(nested.KeyPaths(), (std::vector<std::string>{"[0]['k']", "[1]['k']"}));
}

TEST(PytreeTest, UnflattenLeafCountError) {
  TreeDef def = tree::structure(std::vector<Array>{S(1), S(2), S(3)});
  try {
    tree::unflatten<std::vector<Array>>(def, std::vector<Array>{S(1), S(2)});
    FAIL() << "expected ValueError";
  } catch (const ValueError& e) {
    EXPECT_EQ(std::string(e.what()), "tree::unflatten<vector<jx::Array>>: "
                                     "PyTreeDef([*, *, *]) expects 3 leaves, got 2");
  }
}

TEST(PytreeTest, UnflattenStructureErrorsNamePath) {
  Params p = MakeParams(2);
  auto [leaves, def] = tree::flatten(p);
  try {
    tree::unflatten<std::tuple<std::vector<Layer>, Static<std::string>>>(def, leaves);
    FAIL() << "expected ValueError";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("structure mismatch at the root: the TreeDef has a struct "
                                         "Params(layers=[Layer(w=*, b=*), Layer(w=*, b=*)], "
                                         "act=Static('relu')) where the type expects a tuple of 2"),
              std::string::npos)
        << e.what();
  }
  auto dict = std::map<std::string, std::vector<Array>>{{"a", {S(1)}}, {"b", {S(2), S(3)}}};
  auto [dleaves, ddef] = tree::flatten(dict);
  try {
    tree::unflatten<std::map<std::string, std::vector<std::pair<Array, Array>>>>(ddef, dleaves);
    FAIL() << "expected ValueError";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("at ['a'][0]: the TreeDef has a leaf * where the type "
                                         "expects a tuple of 2 (std::tuple/std::pair)"),
              std::string::npos)
        << e.what();
  }
  // Static of a different type.
  auto sdef = tree::structure(std::tuple<Static<int>>{{1}});
  try {
    tree::unflatten<std::tuple<Static<std::map<std::string, int>>>>(sdef, {});
    FAIL() << "expected ValueError";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("at [0]: the TreeDef has a Static(1) where the type expects a "
                                         "Static<map<std::string, int>>"),
              std::string::npos)
        << e.what();
  }
  // A different struct type with the same shape.
  EXPECT_THROW(tree::unflatten<Adapted>(tree::structure(Layer{S(1), S(2)}), std::vector<Array>{S(1), S(2)}),
               ValueError);
}

TEST(PytreeTest, MapOneTree) {
  Params p = MakeParams(2);
  int calls = 0;
  Params q = tree::map([&](const Array& x) { ++calls; return S(x.item<double>() * 2); }, p);
  EXPECT_EQ(calls, 4);
  EXPECT_EQ(Values(tree::leaves(q)), (std::vector<double>{2, 4, 22, 24}));
  EXPECT_EQ(q.act.value, "relu");
  EXPECT_EQ(tree::structure(q), tree::structure(p));
  using T = std::tuple<std::optional<Array>, std::array<Array, 2>, std::map<std::string, Array>>;
  T x{std::nullopt, {S(1), S(2)}, {{"z", S(3)}}};
  T y = tree::map([](const Array& a) { return S(-a.item<double>()); }, x);
  EXPECT_EQ(Values(tree::leaves(y)), (std::vector<double>{-1, -2, -3}));
  EXPECT_FALSE(std::get<0>(y).has_value());
}

TEST(PytreeTest, MapTwoTrees) {
  Params a = MakeParams(2), b = MakeParams(2);
  auto add_values = [](const Array& x, const Array& y) { return S(x.item<double>() + y.item<double>()); };
  Params sum = tree::map(add_values, a, b);
  EXPECT_EQ(Values(tree::leaves(sum)), (std::vector<double>{2, 4, 22, 24}));

  auto expect_error = [](auto fn, const std::string& message) {
    try {
      fn();
      ADD_FAILURE() << "expected ValueError: " << message;
    } catch (const ValueError& e) {
      EXPECT_EQ(std::string(e.what()), message);
    }
  };
  auto add = [](const Array& x, const Array& y) { return x; };
  expect_error([&] { tree::map(add, MakeParams(2), MakeParams(3)); },
               "tree::map: tree structures differ at .layers: list of length 2 vs 3");
  Params c = MakeParams(2);
  c.act.value = "gelu";
  expect_error([&] { tree::map(add, a, c); },
               "tree::map: tree structures differ at .act: Static('relu') vs Static('gelu')");
  using D = std::map<std::string, std::optional<Array>>;
  expect_error([&] { tree::map(add, D{{"a", S(1)}}, D{{"b", S(1)}}); },
               "tree::map: tree structures differ at the root: dict keys ['a'] vs ['b']");
  expect_error([&] { tree::map(add, D{{"a", S(1)}}, D{{"a", std::nullopt}}); },
               "tree::map: tree structures differ at ['a']: a value vs None");
}

}  // namespace
}  // namespace jx::pytree_test
