// Meshes: JAX's printing, positions, AxisGroups (the replica groups collectives use), and
// make_mesh laying logical axes on whole torus axes of a simulated pod.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

#include "jx/devices/tpu/tpu_chip.h"
#include "jx/jx.h"

namespace jx::mesh_test {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

const std::vector<int64_t>& Coords(const Device* d) { return static_cast<const tpu::TpuChip*>(d)->coords(); }

template <typename F>
std::string ErrorOf(F f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "<no error>";
}

TEST(MeshTest, PrintsAsJax) {
  tpu::Pod pod = tpu::make_pod("v5e", {4, 2});
  Mesh mesh(pod.devices(), {4, 2}, {"x", "y"});
  EXPECT_EQ(mesh.ToString(), "Mesh('x': 4, 'y': 2, axis_types=(Explicit, Explicit))");
  std::ostringstream os;
  os << mesh;
  EXPECT_EQ(os.str(), mesh.ToString());
  Mesh line(pod.devices(), {8}, {"i"}, {AxisType::kAuto});
  EXPECT_EQ(line.ToString(), "Mesh('i': 8, axis_types=(Auto,))");
  EXPECT_EQ(line.axis_types(), std::vector<AxisType>{AxisType::kAuto});
  EXPECT_EQ(mesh.axis_types(), (std::vector<AxisType>{AxisType::kExplicit, AxisType::kExplicit}));
  EXPECT_EQ(AbstractMesh({16, 16}, {"data", "model"}).ToString(),
            "AbstractMesh('data': 16, 'model': 16, axis_types=(Explicit, Explicit))");
  EXPECT_EQ(Mesh().ToString(), "Mesh()");
  EXPECT_THAT(mesh.shape(), ElementsAre(std::pair<std::string, int64_t>{"x", 4}, std::pair<std::string, int64_t>{"y", 2}));
  EXPECT_EQ(mesh.size(), 8);
  EXPECT_EQ(mesh.axis_size("y"), 2);
}

TEST(MeshTest, AbstractMeshPlansWithoutDevices) {
  AbstractMesh plan({16, 16}, {"data", "model"});
  EXPECT_EQ(plan.size(), 256);
  EXPECT_EQ(plan.axis_position("model"), 1);
  EXPECT_TRUE(plan.has_axis("data"));
  EXPECT_FALSE(plan.has_axis("z"));
  EXPECT_EQ(ErrorOf([&] { plan.axis_position("z"); }), "unknown mesh axis 'z': the mesh has axes ('data', 'model')");
  EXPECT_THAT(ErrorOf([] { AbstractMesh({2, 2}, {"x", "x"}); }), HasSubstr("'x' appears twice in ('x', 'x')"));
  EXPECT_THAT(ErrorOf([] { AbstractMesh({2, 0}, {"x", "y"}); }), HasSubstr("axis 'y' has size 0"));
  EXPECT_THAT(ErrorOf([] { AbstractMesh({2, 2}, {"x"}); }), HasSubstr("2 axis sizes (2, 2), 1 axis names ('x',)"));
}

TEST(MeshTest, PositionsRoundTrip) {
  tpu::Pod pod = tpu::make_pod("v5e", {4, 2});
  Mesh mesh(pod.devices(), {2, 4}, {"a", "b"});
  for (int64_t a = 0; a < 2; ++a) {
    for (int64_t b = 0; b < 4; ++b) {
      const Device* d = mesh.device_at({a, b});
      EXPECT_EQ(d, pod.devices()[a * 4 + b]);
      EXPECT_THAT(mesh.position_of(d), ElementsAre(a, b));
    }
  }
  EXPECT_THAT(ErrorOf([&] { mesh.device_at({2, 0}); }), HasSubstr("index 2 is out of range for axis 'a' of size 2"));
  tpu::Pod other = tpu::make_pod("v5e", {1, 1});
  EXPECT_THAT(ErrorOf([&] { mesh.position_of(other.devices()[0]); }), HasSubstr("is not a device of Mesh('a': 2"));
}

TEST(MeshTest, ConstructorChecksItsDevices) {
  tpu::Pod pod = tpu::make_pod("v5e", {4, 2});
  std::vector<const Device*> ds = pod.devices();
  EXPECT_THAT(ErrorOf([&] { Mesh(ds, {4, 4}, {"x", "y"}); }), HasSubstr("a mesh of shape (4, 4) needs 16 devices, got 8"));
  ds[1] = ds[0];
  EXPECT_THAT(ErrorOf([&] { Mesh(ds, {4, 2}, {"x", "y"}); }), HasSubstr("appears twice (positions 0 and 1)"));
}

TEST(MeshTest, EqualityAndHash) {
  tpu::Pod pod = tpu::make_pod("v5e", {4, 2});
  Mesh a(pod.devices(), {4, 2}, {"x", "y"});
  Mesh b(pod.devices(), {4, 2}, {"x", "y"});
  Mesh c(pod.devices(), {4, 2}, {"x", "z"});
  Mesh d(pod.devices(), {2, 4}, {"x", "y"});
  EXPECT_TRUE(a == b);
  EXPECT_EQ(a.Hash(), b.Hash());
  EXPECT_FALSE(a == c);
  EXPECT_FALSE(a == d);
}

// AxisGroups: one group per position of the other axes (row-major), each listing the flat
// indices of its devices row-major over the named axes in the order given.
TEST(AxisGroupsTest, TwoAxes) {
  tpu::Pod pod = tpu::make_pod("v5e", {4, 2});
  Mesh mesh(pod.devices(), {4, 2}, {"x", "y"});
  using G = std::vector<std::vector<int64_t>>;
  EXPECT_EQ(mesh.AxisGroups({"x"}), (G{{0, 2, 4, 6}, {1, 3, 5, 7}}));
  EXPECT_EQ(mesh.AxisGroups({"y"}), (G{{0, 1}, {2, 3}, {4, 5}, {6, 7}}));
  EXPECT_EQ(mesh.AxisGroups({"x", "y"}), (G{{0, 1, 2, 3, 4, 5, 6, 7}}));
  EXPECT_EQ(mesh.AxisGroups({"y", "x"}), (G{{0, 2, 4, 6, 1, 3, 5, 7}}));
  EXPECT_EQ(mesh.AxisGroups({}), (G{{0}, {1}, {2}, {3}, {4}, {5}, {6}, {7}}));
  // The same groups without devices, for planning.
  EXPECT_EQ(AbstractMesh({4, 2}, {"x", "y"}).AxisGroups({"x"}), mesh.AxisGroups({"x"}));
  EXPECT_EQ(ErrorOf([&] { mesh.AxisGroups({"z"}); }), "unknown mesh axis 'z': the mesh has axes ('x', 'y')");
  EXPECT_THAT(ErrorOf([&] { mesh.AxisGroups({"x", "x"}); }), HasSubstr("axis 'x' is named twice"));
}

TEST(AxisGroupsTest, ThreeAxesAgainstTheDefinition) {
  tpu::Pod pod = tpu::make_pod("v4", {2, 3, 4});
  Mesh mesh(pod.devices(), {2, 3, 4}, {"a", "b", "c"});
  auto flat = [](int64_t a, int64_t b, int64_t c) { return a * 12 + b * 4 + c; };
  // Over (c, a): groups by b; within a group c major, a minor.
  std::vector<std::vector<int64_t>> expected;
  for (int64_t b = 0; b < 3; ++b) {
    std::vector<int64_t> group;
    for (int64_t c = 0; c < 4; ++c) {
      for (int64_t a = 0; a < 2; ++a) group.push_back(flat(a, b, c));
    }
    expected.push_back(group);
  }
  EXPECT_EQ(mesh.AxisGroups({"c", "a"}), expected);
  // Over b: groups ordered by (a, c).
  expected.clear();
  for (int64_t a = 0; a < 2; ++a) {
    for (int64_t c = 0; c < 4; ++c) expected.push_back({flat(a, 0, c), flat(a, 1, c), flat(a, 2, c)});
  }
  EXPECT_EQ(mesh.AxisGroups({"b"}), expected);
  // Every device is in exactly one group of any axis set.
  for (const auto& axes : std::vector<std::vector<std::string>>{{"a"}, {"b", "c"}, {"a", "b", "c"}, {"c"}}) {
    std::vector<int> seen(24, 0);
    for (const auto& group : mesh.AxisGroups(axes)) {
      for (int64_t i : group) ++seen[i];
    }
    EXPECT_EQ(std::count(seen.begin(), seen.end(), 1), 24);
  }
}

TEST(MakeMeshTest, PodShapedMeshKeepsThePodOrder) {
  tpu::Pod pod = tpu::make_pod("v5e", {4, 2});
  Mesh mesh = make_mesh({4, 2}, {"x", "y"}, pod.devices());
  EXPECT_EQ(mesh.devices(), pod.devices());
  EXPECT_EQ(mesh.ToString(), "Mesh('x': 4, 'y': 2, axis_types=(Explicit, Explicit))");
}

TEST(MakeMeshTest, TransposedMeshPutsTheAxisOfFourOnTorusAxisZero) {
  tpu::Pod pod = tpu::make_pod("v5e", {4, 2});
  Mesh mesh = make_mesh({2, 4}, {"a", "b"}, pod.devices());
  for (int64_t a = 0; a < 2; ++a) {
    for (int64_t b = 0; b < 4; ++b) EXPECT_THAT(Coords(mesh.device_at({a, b})), ElementsAre(b, a));
  }
  // Each group over b is a ring along torus axis 0 (x = 0..3 at fixed y).
  for (const auto& group : mesh.AxisGroups({"b"})) {
    for (size_t k = 0; k < group.size(); ++k) {
      EXPECT_EQ(Coords(mesh.devices()[group[k]])[0], static_cast<int64_t>(k));
      EXPECT_EQ(Coords(mesh.devices()[group[k]])[1], Coords(mesh.devices()[group[0]])[1]);
    }
  }
}

TEST(MakeMeshTest, ThreeDimensionalTorus) {
  tpu::Pod pod = tpu::make_pod("v4", {4, 4, 4});
  EXPECT_EQ(make_mesh({4, 4, 4}, {"x", "y", "z"}, pod.devices()).devices(), pod.devices());
  EXPECT_EQ(make_mesh({64}, {"i"}, pod.devices()).devices(), pod.devices());
  // A logical axis of 16 spans torus axes 1 and 2 (1 major).
  Mesh wide = make_mesh({4, 16}, {"data", "model"}, pod.devices());
  for (int64_t i = 0; i < 4; ++i) {
    for (int64_t j = 0; j < 16; ++j) EXPECT_THAT(Coords(wide.device_at({i, j})), ElementsAre(i, j / 4, j % 4));
  }
  // ... and of 16 first, over torus axes 0 and 1.
  Mesh tall = make_mesh({16, 4}, {"data", "model"}, pod.devices());
  for (int64_t i = 0; i < 16; ++i) {
    for (int64_t j = 0; j < 4; ++j) EXPECT_THAT(Coords(tall.device_at({i, j})), ElementsAre(i / 4, i % 4, j));
  }
  // Size-1 logical axes take no torus axis.
  Mesh with_one = make_mesh({1, 4, 16}, {"p", "data", "model"}, pod.devices());
  EXPECT_THAT(Coords(with_one.device_at({0, 3, 5})), ElementsAre(3, 1, 1));
}

TEST(MakeMeshTest, WithoutALayoutTheOrderIsKept) {
  tpu::Pod pod = tpu::make_pod("v4", {4, 4, 4});
  // 8 is not a product of whole axes of (4, 4, 4).
  EXPECT_EQ(make_mesh({8, 8}, {"x", "y"}, pod.devices()).devices(), pod.devices());
  tpu::Pod small = tpu::make_pod("v5e", {4, 2});
  EXPECT_EQ(make_mesh({2, 2, 2}, {"a", "b", "c"}, small.devices()).devices(), small.devices());
  // Part of a pod is not laid out either.
  const std::vector<const Device*> all = small.devices();
  std::vector<const Device*> half(all.begin(), all.begin() + 4);
  EXPECT_EQ(make_mesh({2, 2}, {"a", "b"}, half).devices(), half);
}

int Core(const Device* d) { return static_cast<const tpu::TpuChip*>(d)->core_on_chip(); }

// A v3-8 (2x2 chips, a device per TensorCore) as JAX's create_device_mesh orders it: the tray's
// 8 devices in its ring order (0, 1, 2, 3, 6, 7, 4, 5) of jax.devices(), which lists chips x
// fastest: the 'model' pairs are the two cores of a chip, 'data' goes round the 2x2 chips.
TEST(MakeMeshTest, AV3EightGoesRoundItsTray) {
  tpu::Pod pod = tpu::make_pod("v3", {2, 2});
  Mesh mesh = make_mesh({4, 2}, {"data", "model"}, pod.devices());
  const std::vector<std::vector<int64_t>> ring = {{0, 0}, {1, 0}, {1, 1}, {0, 1}};
  for (int64_t i = 0; i < 4; ++i) {
    for (int64_t j = 0; j < 2; ++j) {
      EXPECT_EQ(Coords(mesh.device_at({i, j})), ring[static_cast<size_t>(i)]);
      EXPECT_EQ(Core(mesh.device_at({i, j})), j);
    }
  }
  // One axis of 8: the same ring.
  EXPECT_EQ(make_mesh({8}, {"i"}, pod.devices()).devices(), mesh.devices());
}

// A v3-32 (4x4 chips): a last mesh axis of 8 is one tray (a host's 2x2 chips) in ring order;
// other shapes take jax.devices()'s order, tray after tray.
TEST(MakeMeshTest, AV3ThirtyTwoRowsOfEightAreTrays) {
  tpu::Pod pod = tpu::make_pod("v3", {4, 4});
  Mesh trays = make_mesh({4, 8}, {"data", "model"}, pod.devices());
  const std::vector<std::vector<int64_t>> hosts = {{0, 0}, {2, 0}, {0, 2}, {2, 2}};  // x fastest
  const std::vector<std::vector<int64_t>> ring = {{0, 0}, {1, 0}, {1, 1}, {0, 1}};
  for (int64_t i = 0; i < 4; ++i) {
    for (int64_t j = 0; j < 8; ++j) {
      const std::vector<int64_t>& host = hosts[static_cast<size_t>(i)];
      const std::vector<int64_t>& chip = ring[static_cast<size_t>(j / 2)];
      EXPECT_THAT(Coords(trays.device_at({i, j})), ElementsAre(host[0] + chip[0], host[1] + chip[1]));
      EXPECT_EQ(Core(trays.device_at({i, j})), j % 2);
    }
  }
  Mesh listed = make_mesh({16, 2}, {"data", "model"}, pod.devices());
  EXPECT_THAT(Coords(listed.device_at({1, 1})), ElementsAre(1, 0));  // the tray's second chip
  EXPECT_EQ(Core(listed.device_at({1, 1})), 1);
  EXPECT_THAT(Coords(listed.device_at({4, 0})), ElementsAre(2, 0));  // the second tray
}

// A v7 slice as create_device_mesh lays out TPU7x (mesh_utils' physical mesh x, y, z, core):
// the last logical axis first, on as many physical axes as multiply to its size, subsets with
// the core axis ahead of the others (the on-chip link), then x, y, z. On 2x2x1 chips the
// physical mesh is (2, 2, 1, 2).
TEST(MakeMeshTest, AV7MeshPutsItsLastAxisOnTheCoresFirst) {
  tpu::Pod pod = tpu::make_pod("v7", {2, 2, 1});
  // 'model' 2: no subset of 4, 3 or 2 axes makes 2 without a size-1 axis: z x core, so the
  // cores of a chip; 'data' 4 takes x and y (x major).
  Mesh pairs = make_mesh({4, 2}, {"data", "model"}, pod.devices());
  for (int64_t i = 0; i < 4; ++i) {
    for (int64_t j = 0; j < 2; ++j) {
      EXPECT_THAT(Coords(pairs.device_at({i, j})), ElementsAre(i / 2, i % 2, 0));
      EXPECT_EQ(Core(pairs.device_at({i, j})), j);
    }
  }
  // 'model' 4: x, z and the core (x major), ahead of x and y (no core); 'data' 2 is then y.
  Mesh wide = make_mesh({2, 4}, {"data", "model"}, pod.devices());
  for (int64_t i = 0; i < 2; ++i) {
    for (int64_t j = 0; j < 4; ++j) {
      EXPECT_THAT(Coords(wide.device_at({i, j})), ElementsAre(j / 2, i, 0));
      EXPECT_EQ(Core(wide.device_at({i, j})), j % 2);
    }
  }
  // One axis over all four: the pod's order.
  EXPECT_EQ(make_mesh({8}, {"i"}, pod.devices()).devices(), pod.devices());
}

// A v7 cube (4, 4, 4, 2): 'model' 8 is x and the core (a ring of 4 chips, each chip's pair);
// 'data' 16 the y-z plane.
TEST(MakeMeshTest, AV7CubeGivesTheModelAxisTheCoresAndARing) {
  tpu::Pod pod = tpu::make_pod("v7", {4, 4, 4});
  Mesh mesh = make_mesh({16, 8}, {"data", "model"}, pod.devices());
  for (int64_t i = 0; i < 16; ++i) {
    for (int64_t j = 0; j < 8; ++j) {
      EXPECT_THAT(Coords(mesh.device_at({i, j})), ElementsAre(j / 2, i / 4, i % 4));
      EXPECT_EQ(Core(mesh.device_at({i, j})), j % 2);
    }
  }
}

TEST(MakeMeshTest, DefaultDevicesAreTheFirstPods) {
  tpu::make_pod("v5e", {4, 2});  // at least one pod exists
  const std::vector<const Device*> first = jx::devices("tpu")[0]->client().devices();
  Mesh mesh = make_mesh({static_cast<int64_t>(first.size())}, {"i"});
  EXPECT_EQ(mesh.devices(), first);  // one axis over the whole torus: the pod's order
}

TEST(MakeMeshTest, CountMismatchIsAValueError) {
  tpu::Pod pod = tpu::make_pod("v5e", {4, 2});
  try {
    make_mesh({4, 4}, {"x", "y"}, pod.devices());
    FAIL() << "expected ValueError";
  } catch (const ValueError& e) {
    EXPECT_THAT(std::string(e.what()), HasSubstr("the axis shapes (4, 4) make a mesh of 16 devices, but 8 devices"));
  }
}

}  // namespace
}  // namespace jx::mesh_test
