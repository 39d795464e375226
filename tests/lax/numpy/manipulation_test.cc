// jnp shape manipulation, joining/splitting, padding, indexing and sorting: values against
// NumPy's documented results, and bad input.
#include <cmath>
#include <limits>
#include <string>

#include <gtest/gtest.h>

#include <jx/jx.h>

namespace jx::manipulation_test {
namespace {

namespace jnp = jx::numpy;

std::vector<int> V(const Array& a) { return a.to_vector<int>(); }

TEST(ManipulationTest, ReshapeTransposeAxes) {
  Array x = jnp::arange(24).reshape({2, 3, 4});
  EXPECT_EQ(jnp::reshape(x, {4, -1}).shape(), (Shape{4, 6}));
  EXPECT_EQ(jnp::ravel(x).shape(), Shape{24});
  EXPECT_EQ(jnp::transpose(x).shape(), (Shape{4, 3, 2}));
  EXPECT_EQ(jnp::transpose(x, std::vector<int64_t>{1, 0, 2}).shape(), (Shape{3, 2, 4}));
  Array m = jnp::arange(6).reshape({2, 3});
  EXPECT_EQ(V(jnp::transpose(m)), (std::vector<int>{0, 3, 1, 4, 2, 5}));
  EXPECT_EQ(V(jnp::matrix_transpose(m)), (std::vector<int>{0, 3, 1, 4, 2, 5}));
  EXPECT_EQ(jnp::swapaxes(x, 0, 2).shape(), (Shape{4, 3, 2}));
  EXPECT_EQ(jnp::moveaxis(x, 0, -1).shape(), (Shape{3, 4, 2}));
  EXPECT_EQ(jnp::moveaxis(x, -1, 0).shape(), (Shape{4, 2, 3}));
  EXPECT_EQ(jnp::moveaxis(x, {0, 1}, {-1, -2}).shape(), (Shape{4, 3, 2}));
  // moveaxis(x, 0, -1)[i, j, k] == x[k, i, j]
  Array mv = jnp::moveaxis(x, 0, -1);
  EXPECT_EQ(V(mv)[static_cast<size_t>(1 * 8 + 2 * 2 + 1)], V(x)[static_cast<size_t>(1 * 12 + 1 * 4 + 2)]);
  EXPECT_EQ(jnp::expand_dims(m, 0).shape(), (Shape{1, 2, 3}));
  EXPECT_EQ(jnp::expand_dims(m, {0, -1}).shape(), (Shape{1, 2, 3, 1}));
  EXPECT_EQ(jnp::squeeze(jnp::zeros({1, 3, 1})).shape(), Shape{3});
  EXPECT_EQ(jnp::squeeze(jnp::zeros({1, 3, 1}), 2).shape(), (Shape{1, 3}));
  EXPECT_EQ(jnp::atleast_2d(jnp::arange(3)).shape(), (Shape{1, 3}));
  EXPECT_EQ(jnp::atleast_3d(jnp::arange(3)).shape(), (Shape{1, 3, 1}));
  EXPECT_EQ(jnp::atleast_1d(jnp::asarray(1)).shape(), Shape{1});
  auto bs = jnp::broadcast_arrays({jnp::zeros({3, 1}), jnp::zeros({4})});
  EXPECT_EQ(bs[0].shape(), (Shape{3, 4}));
  EXPECT_EQ(bs[1].shape(), (Shape{3, 4}));
}

TEST(ManipulationTest, JoinAndSplit) {
  Array a = jnp::array({{1, 2}, {3, 4}});
  Array b = jnp::array({{5.f, 6.f}});
  Array c = jnp::concatenate({a, b});
  EXPECT_EQ(c.dtype(), float32);  // promoted
  EXPECT_EQ(c.to_vector<float>(), (std::vector<float>{1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(V(jnp::concatenate({a, a}, 1)), (std::vector<int>{1, 2, 1, 2, 3, 4, 3, 4}));
  EXPECT_EQ(jnp::concatenate({a, b}, std::nullopt).shape(), Shape{6});
  EXPECT_EQ(V(jnp::stack({jnp::arange(2), jnp::arange(2)}, 1)), (std::vector<int>{0, 0, 1, 1}));
  EXPECT_EQ(jnp::stack({a, a}).shape(), (Shape{2, 2, 2}));
  EXPECT_EQ(jnp::stack({a, a}, -1).shape(), (Shape{2, 2, 2}));
  EXPECT_EQ(jnp::vstack({jnp::arange(2), jnp::arange(2)}).shape(), (Shape{2, 2}));
  EXPECT_EQ(jnp::hstack({jnp::arange(2), jnp::arange(3)}).shape(), Shape{5});
  EXPECT_EQ(jnp::dstack({a, a}).shape(), (Shape{2, 2, 2}));
  EXPECT_EQ(V(jnp::column_stack({jnp::arange(2), jnp::arange(2)})), (std::vector<int>{0, 0, 1, 1}));
  Array x = jnp::arange(12).reshape({2, 6});
  auto parts = jnp::split(x, 3, 1);
  ASSERT_EQ(parts.size(), 3u);
  EXPECT_EQ(V(parts[1]), (std::vector<int>{2, 3, 8, 9}));
  auto at = jnp::split(jnp::arange(6), std::vector<int64_t>{2, 5});
  ASSERT_EQ(at.size(), 3u);
  EXPECT_EQ(V(at[0]), (std::vector<int>{0, 1}));
  EXPECT_EQ(V(at[1]), (std::vector<int>{2, 3, 4}));
  EXPECT_EQ(V(at[2]), (std::vector<int>{5}));
  auto un = jnp::array_split(jnp::arange(7), 3);
  EXPECT_EQ(V(un[0]), (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(V(un[2]), (std::vector<int>{5, 6}));
  EXPECT_EQ(V(jnp::tile(jnp::arange(3), {2})), (std::vector<int>{0, 1, 2, 0, 1, 2}));
  EXPECT_EQ(V(jnp::tile(a, {2, 1})), (std::vector<int>{1, 2, 3, 4, 1, 2, 3, 4}));
  EXPECT_EQ(jnp::tile(jnp::arange(2), {2, 2}).shape(), (Shape{2, 4}));
  EXPECT_EQ(V(jnp::repeat(jnp::arange(3), 2)), (std::vector<int>{0, 0, 1, 1, 2, 2}));
  EXPECT_EQ(V(jnp::repeat(a, 2, 0)), (std::vector<int>{1, 2, 1, 2, 3, 4, 3, 4}));
  EXPECT_EQ(V(jnp::repeat(a, 2, 1)), (std::vector<int>{1, 1, 2, 2, 3, 3, 4, 4}));
  EXPECT_EQ(V(jnp::repeat(jnp::arange(3), std::vector<int64_t>{1, 0, 2})), (std::vector<int>{0, 2, 2}));
}

TEST(ManipulationTest, PadModes) {
  Array x = jnp::array({1, 2, 3});
  // NumPy's documented results for np.pad([1, 2, 3], (2, 3), mode).
  EXPECT_EQ(V(jnp::pad(x, {2, 3})), (std::vector<int>{0, 0, 1, 2, 3, 0, 0, 0}));
  EXPECT_EQ(V(jnp::pad(x, {2, 3}, "constant", 9)), (std::vector<int>{9, 9, 1, 2, 3, 9, 9, 9}));
  EXPECT_EQ(V(jnp::pad(x, {2, 3}, "edge")), (std::vector<int>{1, 1, 1, 2, 3, 3, 3, 3}));
  EXPECT_EQ(V(jnp::pad(x, {2, 3}, "wrap")), (std::vector<int>{2, 3, 1, 2, 3, 1, 2, 3}));
  EXPECT_EQ(V(jnp::pad(x, {2, 3}, "reflect")), (std::vector<int>{3, 2, 1, 2, 3, 2, 1, 2}));
  EXPECT_EQ(V(jnp::pad(x, {2, 3}, "symmetric")), (std::vector<int>{2, 1, 1, 2, 3, 3, 2, 1}));
  // Pads longer than the axis repeat the pattern.
  EXPECT_EQ(V(jnp::pad(x, {5, 0}, "reflect")), (std::vector<int>{2, 1, 2, 3, 2, 1, 2, 3}));
  EXPECT_EQ(V(jnp::pad(x, {4, 0}, "wrap")), (std::vector<int>{3, 1, 2, 3, 1, 2, 3}));
  Array m = jnp::array({{1, 2}, {3, 4}});
  EXPECT_EQ(V(jnp::pad(m, {{1, 0}, {0, 1}})), (std::vector<int>{0, 0, 0, 1, 2, 0, 3, 4, 0}));
  EXPECT_EQ(jnp::pad(m, 1).shape(), (Shape{4, 4}));
  EXPECT_EQ(jnp::pad(jnp::array({1.5}), 1, "constant", 0.25).to_vector<double>(), (std::vector<double>{0.25, 1.5, 0.25}));
  EXPECT_THROW(jnp::pad(x, {-1, 0}), ValueError);
  EXPECT_THROW(jnp::pad(x, 1, "median"), NotImplementedError);
}

TEST(ManipulationTest, FlipRollRot) {
  Array m = jnp::arange(6).reshape({2, 3});
  EXPECT_EQ(V(jnp::flip(m)), (std::vector<int>{5, 4, 3, 2, 1, 0}));
  EXPECT_EQ(V(jnp::flip(m, 1)), (std::vector<int>{2, 1, 0, 5, 4, 3}));
  EXPECT_EQ(V(jnp::fliplr(m)), V(jnp::flip(m, 1)));
  EXPECT_EQ(V(jnp::flipud(m)), (std::vector<int>{3, 4, 5, 0, 1, 2}));
  EXPECT_EQ(V(jnp::roll(jnp::arange(5), 2)), (std::vector<int>{3, 4, 0, 1, 2}));
  EXPECT_EQ(V(jnp::roll(jnp::arange(5), -1)), (std::vector<int>{1, 2, 3, 4, 0}));
  EXPECT_EQ(V(jnp::roll(m, 1)), (std::vector<int>{5, 0, 1, 2, 3, 4}));
  EXPECT_EQ(V(jnp::roll(m, 1, 1)), (std::vector<int>{2, 0, 1, 5, 3, 4}));
  // np.rot90([[0, 1, 2], [3, 4, 5]]) == [[2, 5], [1, 4], [0, 3]]
  EXPECT_EQ(V(jnp::rot90(m)), (std::vector<int>{2, 5, 1, 4, 0, 3}));
  EXPECT_EQ(V(jnp::rot90(m, 2)), V(jnp::flip(m)));
  EXPECT_EQ(V(jnp::rot90(m, 3)), (std::vector<int>{3, 0, 4, 1, 5, 2}));
}

TEST(ManipulationTest, TakeAndTakeAlongAxis) {
  Array m = jnp::arange(12).reshape({3, 4});
  EXPECT_EQ(V(jnp::take(m, jnp::array({2, 0}), 1)), (std::vector<int>{2, 0, 6, 4, 10, 8}));
  EXPECT_EQ(V(jnp::take(m, jnp::array({-1}), 0)), (std::vector<int>{8, 9, 10, 11}));
  EXPECT_EQ(V(jnp::take(m, jnp::array({5, 11}))), (std::vector<int>{5, 11}));  // flattened
  EXPECT_EQ(jnp::take(m, jnp::array({{0, 1}, {1, 2}}), 1).shape(), (Shape{3, 2, 2}));
  EXPECT_EQ(jnp::take(m, 1, 0).shape(), Shape{4});
  // Out of range: "fill" (JAX's default) gives the minimum for signed ints / NaN for floats.
  EXPECT_EQ(V(jnp::take(jnp::arange(3), jnp::array({5}))), (std::vector<int>{std::numeric_limits<int>::min()}));
  EXPECT_TRUE(std::isnan(jnp::take(jnp::array({1.f, 2.f}), jnp::array({7})).to_vector<float>()[0]));
  EXPECT_EQ(V(jnp::take(jnp::arange(3), jnp::array({5}), std::nullopt, "clip")), (std::vector<int>{2}));
  EXPECT_EQ(V(jnp::take(jnp::arange(3), jnp::array({4, -4}), std::nullopt, "wrap")), (std::vector<int>{1, 2}));
  Array x = jnp::array({{10, 30, 20}, {60, 40, 50}});
  Array idx = jnp::argsort(x, 1);
  EXPECT_EQ(V(idx), (std::vector<int>{0, 2, 1, 1, 2, 0}));
  EXPECT_EQ(V(jnp::take_along_axis(x, idx, 1)), (std::vector<int>{10, 20, 30, 40, 50, 60}));
  EXPECT_EQ(V(jnp::take_along_axis(x, jnp::array({{1}, {0}}), 1)), (std::vector<int>{30, 60}));
  EXPECT_EQ(V(jnp::take_along_axis(x, jnp::array({{1, 0, 1}}), 0)), (std::vector<int>{60, 30, 50}));
  EXPECT_THROW(jnp::take(m, jnp::array({0.5f})), TypeError);
  EXPECT_THROW(jnp::take_along_axis(x, jnp::array({1}), 1), ShapeError);
}

TEST(ManipulationTest, TrianglesAndDiagonals) {
  Array m = jnp::arange(1, 10).reshape({3, 3});
  EXPECT_EQ(V(jnp::tril(m)), (std::vector<int>{1, 0, 0, 4, 5, 0, 7, 8, 9}));
  EXPECT_EQ(V(jnp::triu(m)), (std::vector<int>{1, 2, 3, 0, 5, 6, 0, 0, 9}));
  EXPECT_EQ(V(jnp::triu(m, 1)), (std::vector<int>{0, 2, 3, 0, 0, 6, 0, 0, 0}));
  EXPECT_EQ(V(jnp::tril(m, -1)), (std::vector<int>{0, 0, 0, 4, 0, 0, 7, 8, 0}));
  EXPECT_EQ(V(jnp::diagonal(m)), (std::vector<int>{1, 5, 9}));
  EXPECT_EQ(V(jnp::diagonal(m, 1)), (std::vector<int>{2, 6}));
  EXPECT_EQ(V(jnp::diagonal(m, -2)), (std::vector<int>{7}));
  EXPECT_EQ(jnp::diagonal(m, 5).shape(), Shape{0});
  Array r = jnp::arange(12).reshape({3, 4});
  EXPECT_EQ(V(jnp::diagonal(r, 1)), (std::vector<int>{1, 6, 11}));
  Array b = jnp::arange(8).reshape({2, 2, 2});
  EXPECT_EQ(V(jnp::diagonal(b, 0, 1, 2)), (std::vector<int>{0, 3, 4, 7}));
  EXPECT_EQ(V(jnp::diag(jnp::array({1, 2}))), (std::vector<int>{1, 0, 0, 2}));
  EXPECT_EQ(V(jnp::diag(jnp::array({1, 2}), 1)), (std::vector<int>{0, 1, 0, 0, 0, 2, 0, 0, 0}));
  EXPECT_EQ(V(jnp::diag(jnp::array({1, 2}), -1)), (std::vector<int>{0, 0, 0, 1, 0, 0, 0, 2, 0}));
  EXPECT_EQ(V(jnp::diag(m)), (std::vector<int>{1, 5, 9}));
  EXPECT_EQ(jnp::trace(m).item<int>(), 15);
  EXPECT_THROW(jnp::diagonal(jnp::arange(3)), ValueError);
}

TEST(ManipulationTest, SortArgsortMeshgrid) {
  Array x = jnp::array({3.f, NAN, 1.f, 2.f});
  const std::vector<float> s = jnp::sort(x).to_vector<float>();
  EXPECT_EQ(s[0], 1.f);
  EXPECT_EQ(s[2], 3.f);
  EXPECT_TRUE(std::isnan(s[3]));  // NaN last
  EXPECT_EQ(V(jnp::argsort(jnp::array({2, 1, 2, 0}))), (std::vector<int>{3, 1, 0, 2}));  // stable
  Array m = jnp::array({{3, 1}, {0, 2}});
  EXPECT_EQ(V(jnp::sort(m, 0)), (std::vector<int>{0, 1, 3, 2}));
  EXPECT_EQ(V(jnp::sort(m, std::nullopt)), (std::vector<int>{0, 1, 2, 3}));
  auto g = jnp::meshgrid({jnp::arange(3), jnp::arange(2)});
  EXPECT_EQ(g[0].shape(), (Shape{2, 3}));
  EXPECT_EQ(V(g[0]), (std::vector<int>{0, 1, 2, 0, 1, 2}));
  EXPECT_EQ(V(g[1]), (std::vector<int>{0, 0, 0, 1, 1, 1}));
  auto ij = jnp::meshgrid({jnp::arange(3), jnp::arange(2)}, "ij");
  EXPECT_EQ(ij[0].shape(), (Shape{3, 2}));
}

TEST(ManipulationTest, BadInputs) {
  try {
    jnp::squeeze(jnp::zeros({2, 3}), 0);
    FAIL() << "expected ValueError";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("squeeze"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("f32[2,3]"), std::string::npos) << e.what();
  }
  try {
    jnp::split(jnp::zeros({5}), 2);
    FAIL() << "expected ValueError";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("split"), std::string::npos) << e.what();
  }
  EXPECT_THROW(jnp::stack({jnp::zeros({2}), jnp::zeros({3})}), ShapeError);
  EXPECT_THROW(jnp::reshape(jnp::zeros({6}), {4, -1}), ShapeError);
  EXPECT_THROW(jnp::moveaxis(jnp::zeros({2}), 3, 0), ShapeError);
  EXPECT_THROW(jnp::concatenate({}), ValueError);
  EXPECT_THROW(jnp::transpose(jnp::zeros({2, 3}), std::vector<int64_t>{0}), ValueError);
  EXPECT_EQ(jnp::squeeze(jnp::zeros({1, 3})).shape(), Shape{3});
}

}  // namespace
}  // namespace jx::manipulation_test
