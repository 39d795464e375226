// jnp dot / matmul / einsum / tensordot / inner / outer / kron against naive loops: einsum is
// checked against a brute-force reference that sums over every assignment of the labels.
#include <algorithm>
#include <map>
#include <random>
#include <string>

#include <gtest/gtest.h>

#include <jx/jx.h>

namespace jx::linalg_test {
namespace {

namespace jnp = jx::numpy;

Array Rand(const Shape& shape, unsigned seed, DType d = float64) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> dist(-3, 3);  // small integers: exact in every dtype
  std::vector<double> v(static_cast<size_t>(NumElements(shape)));
  for (double& x : v) x = dist(rng);
  return jnp::array(v, shape).astype(d);
}

// Brute-force einsum on explicit subscripts "ab,bc->ac" (letters only, output given).
std::vector<double> NaiveEinsum(const std::string& subs, const std::vector<Array>& ops, Shape* out_shape) {
  const size_t arrow = subs.find("->");
  std::vector<std::string> terms;
  std::string cur;
  for (char c : subs.substr(0, arrow)) {
    if (c == ',') {
      terms.push_back(cur);
      cur.clear();
    } else {
      cur.push_back(c);
    }
  }
  terms.push_back(cur);
  const std::string out = subs.substr(arrow + 2);
  std::map<char, int64_t> size;
  std::vector<std::vector<double>> data;
  for (size_t k = 0; k < ops.size(); ++k) {
    data.push_back(ops[k].to_vector<double>());
    for (size_t i = 0; i < terms[k].size(); ++i) size[terms[k][i]] = ops[k].shape()[i];
  }
  std::vector<char> labels;
  for (const auto& [c, n] : size) labels.push_back(c);
  out_shape->clear();
  for (char c : out) out_shape->push_back(size[c]);
  std::vector<double> result(static_cast<size_t>(NumElements(*out_shape)), 0.0);
  std::map<char, int64_t> idx;
  for (char c : labels) idx[c] = 0;
  while (true) {
    double prod = 1;
    for (size_t k = 0; k < ops.size(); ++k) {
      int64_t flat = 0;
      for (size_t i = 0; i < terms[k].size(); ++i) flat = flat * ops[k].shape()[i] + idx[terms[k][i]];
      prod *= data[k][static_cast<size_t>(flat)];
    }
    int64_t o = 0;
    for (char c : out) o = o * size[c] + idx[c];
    result[static_cast<size_t>(o)] += prod;
    size_t p = labels.size();
    while (p > 0) {
      --p;
      if (++idx[labels[p]] < size[labels[p]]) break;
      idx[labels[p]] = 0;
      if (p == 0) return result;
    }
    if (labels.empty()) return result;
  }
}

void ExpectEinsum(const std::string& subs, const std::vector<Array>& ops, const std::string& explicit_subs = "") {
  Shape want_shape;
  const std::vector<double> want = NaiveEinsum(explicit_subs.empty() ? subs : explicit_subs, ops, &want_shape);
  Array got = jnp::einsum(subs, ops);
  ASSERT_EQ(got.shape(), want_shape) << subs;
  EXPECT_EQ(got.to_vector<double>(), want) << subs;
}

TEST(EinsumTest, TwoOperandExpressions) {
  Array a = Rand({2, 3}, 1), b = Rand({3, 4}, 2), c = Rand({2, 3}, 3), v = Rand({3}, 4), w = Rand({4}, 5);
  Array ba = Rand({5, 2, 3}, 6), bb = Rand({5, 3, 4}, 7);
  ExpectEinsum("ij,jk->ik", {a, b});
  ExpectEinsum("ij,jk->ki", {a, b});
  ExpectEinsum("ij,jk->ijk", {a, b});
  ExpectEinsum("ij,jk->", {a, b});
  ExpectEinsum("ij,jk->j", {a, b});
  ExpectEinsum("ij,ij->ij", {a, c});
  ExpectEinsum("ij,ij->", {a, c});
  ExpectEinsum("ij,ij->i", {a, c});
  ExpectEinsum("ij,kj->ik", {a, c});
  ExpectEinsum("ij,j->i", {a, v});
  ExpectEinsum("i,j->ij", {v, w});
  ExpectEinsum("i,i->", {v, v});
  ExpectEinsum("bij,bjk->bik", {ba, bb});
  ExpectEinsum("bij,bjk->bki", {ba, bb});
  ExpectEinsum("bij,bjk->ik", {ba, bb});
  ExpectEinsum("bij,bjk->b", {ba, bb});
  ExpectEinsum("bij,jk->bik", {ba, b});
  ExpectEinsum("ij,k->ijk", {a, w});  // outer product, no shared labels
  ExpectEinsum("ijk,kj->i", {Rand({2, 3, 4}, 8), Rand({4, 3}, 9)});
}

TEST(EinsumTest, OneOperandExpressions) {
  Array m = Rand({3, 3}, 10), t = Rand({2, 3, 4}, 11);
  ExpectEinsum("ii->i", {m});
  ExpectEinsum("ii->", {m});
  ExpectEinsum("ij->ji", {m});
  ExpectEinsum("ij->", {m});
  ExpectEinsum("ij->j", {m});
  ExpectEinsum("ijk->kji", {t});
  ExpectEinsum("ijk->ik", {t});
  ExpectEinsum("ijk->ijk", {t});
  ExpectEinsum("iij->ij", {Rand({3, 3, 2}, 12)});
  ExpectEinsum("iii->i", {Rand({2, 2, 2}, 13)});
}

TEST(EinsumTest, ImplicitOutputEllipsisAndMoreOperands) {
  Array a = Rand({2, 3}, 20), b = Rand({3, 4}, 21), c = Rand({4, 5}, 22);
  ExpectEinsum("ij,jk", {a, b}, "ij,jk->ik");
  ExpectEinsum("ji", {a}, "ji->ij");
  ExpectEinsum("ii", {Rand({3, 3}, 23)}, "ii->");
  ExpectEinsum("ij,jk,kl->il", {a, b, c});
  ExpectEinsum("ij,jk,kl->", {a, b, c});
  ExpectEinsum("ij,ij,ij->i", {a, a, a});
  // Ellipsis: batch dims broadcast (size 1 against 5).
  Array x = Rand({5, 2, 3}, 24), y = Rand({1, 3, 4}, 25);
  Array e = jnp::einsum("...ij,...jk->...ik", x, y);
  EXPECT_EQ(e.shape(), (Shape{5, 2, 4}));
  EXPECT_EQ(e.to_vector<double>(), jnp::matmul(x, y).to_vector<double>());
  EXPECT_EQ(jnp::einsum("...ij,...jk", x, y).shape(), (Shape{5, 2, 4}));
  EXPECT_EQ(jnp::einsum("i...->...", Rand({2, 3, 4}, 26)).shape(), (Shape{3, 4}));
  EXPECT_EQ(jnp::einsum(" ij , jk -> ik ", a, b).shape(), (Shape{2, 4}));
  // Mixed dtypes promote: int32 x float32 -> float32.
  EXPECT_EQ(jnp::einsum("i,i->", jnp::arange(3), jnp::ones({3})).dtype(), float32);
}

TEST(EinsumTest, BadInputs) {
  Array a = Rand({2, 3}, 1);
  try {
    jnp::einsum("ij,jk->ik", a, Rand({4, 4}, 2));
    FAIL() << "expected ShapeError";
  } catch (const ShapeError& e) {
    EXPECT_NE(std::string(e.what()).find("einsum"), std::string::npos) << e.what();
  }
  EXPECT_THROW(jnp::einsum("ijk->i", a), ValueError);
  EXPECT_THROW(jnp::einsum("ij->iz", a), ValueError);
  EXPECT_THROW(jnp::einsum("ij,jk->ik", a), ValueError);
  EXPECT_THROW(jnp::einsum("i1->i", a), ValueError);
  EXPECT_EQ(jnp::einsum("ij->ji", a).shape(), (Shape{3, 2}));
}

std::vector<double> NaiveMatmul(const std::vector<double>& a, const std::vector<double>& b, int64_t n, int64_t k,
                                int64_t m) {
  std::vector<double> c(static_cast<size_t>(n * m), 0.0);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < m; ++j)
      for (int64_t p = 0; p < k; ++p)
        c[static_cast<size_t>(i * m + j)] += a[static_cast<size_t>(i * k + p)] * b[static_cast<size_t>(p * m + j)];
  return c;
}

TEST(MatmulTest, ShapesAndBroadcasting) {
  Array a = Rand({2, 3}, 30), b = Rand({3, 4}, 31);
  EXPECT_EQ(jnp::matmul(a, b).to_vector<double>(), NaiveMatmul(a.to_vector<double>(), b.to_vector<double>(), 2, 3, 4));
  // Batch broadcasting: (4, 1, 2, 3) @ (5, 3, 2) -> (4, 5, 2, 2), each pair a plain matmul.
  Array x = Rand({4, 1, 2, 3}, 32), y = Rand({5, 3, 2}, 33);
  Array z = jnp::matmul(x, y);
  ASSERT_EQ(z.shape(), (Shape{4, 5, 2, 2}));
  const std::vector<double> xv = x.to_vector<double>(), yv = y.to_vector<double>(), zv = z.to_vector<double>();
  for (int i = 0; i < 4; ++i) {
    for (int j = 0; j < 5; ++j) {
      std::vector<double> xa(xv.begin() + i * 6, xv.begin() + i * 6 + 6);
      std::vector<double> yb(yv.begin() + j * 6, yv.begin() + j * 6 + 6);
      const std::vector<double> want = NaiveMatmul(xa, yb, 2, 3, 2);
      for (int e = 0; e < 4; ++e) EXPECT_EQ(zv[static_cast<size_t>((i * 5 + j) * 4 + e)], want[static_cast<size_t>(e)]);
    }
  }
  // (2, 1, 3, 4) @ (1, 6, 4, 2): batch dims from both sides.
  EXPECT_EQ(jnp::matmul(Rand({2, 1, 3, 4}, 34), Rand({1, 6, 4, 2}, 35)).shape(), (Shape{2, 6, 3, 2}));
  // Vectors: (3,) @ (3, 4) -> (4,), (2, 3) @ (3,) -> (2,), (3,) @ (3,) -> ().
  Array v = Rand({3}, 36);
  EXPECT_EQ(jnp::matmul(v, b).shape(), Shape{4});
  EXPECT_EQ(jnp::matmul(a, v).shape(), Shape{2});
  EXPECT_EQ(jnp::matmul(v, v).shape(), Shape{});
  EXPECT_EQ(jnp::matmul(Rand({5, 2, 3}, 37), v).shape(), (Shape{5, 2}));
  EXPECT_EQ(jnp::matmul(v, Rand({5, 3, 2}, 38)).shape(), (Shape{5, 2}));
  EXPECT_EQ(jnp::matmul(jnp::ones({2, 2}, int32), jnp::ones({2, 2})).dtype(), float32);
  try {
    jnp::matmul(a, a);
    FAIL() << "expected ShapeError";
  } catch (const ShapeError& e) {
    EXPECT_NE(std::string(e.what()).find("matmul"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("f64[2,3]"), std::string::npos) << e.what();
  }
  EXPECT_THROW(jnp::matmul(Rand({2, 2, 3}, 1), Rand({3, 3, 2}, 2)), ShapeError);
  EXPECT_THROW(jnp::matmul(jnp::asarray(1.0), a), ValueError);
}

TEST(DotTest, NumPyDotAndFriends) {
  Array a = Rand({2, 3}, 40), b = Rand({3, 4}, 41), v = Rand({3}, 42), t = Rand({2, 3, 4}, 43);
  EXPECT_EQ(jnp::dot(a, b).to_vector<double>(), jnp::matmul(a, b).to_vector<double>());
  EXPECT_EQ(jnp::dot(v, v).shape(), Shape{});
  EXPECT_EQ(jnp::dot(a, v).shape(), Shape{2});
  EXPECT_EQ(jnp::dot(a, 2.0).to_vector<double>(), (a * 2.0).to_vector<double>());
  // N-d dot contracts a's last axis with b's second-to-last: (2, 3) . (2, 3, 4) -> (2, 2, 4).
  Array d = jnp::dot(a, t);
  EXPECT_EQ(d.shape(), (Shape{2, 2, 4}));
  Shape s;
  EXPECT_EQ(d.to_vector<double>(), NaiveEinsum("ij,kjl->ikl", {a, t}, &s));
  EXPECT_EQ(jnp::vdot(a, a).item<double>(), jnp::sum(a * a).item<double>());
  EXPECT_EQ(jnp::inner(v, v).item<double>(), jnp::dot(v, v).item<double>());
  EXPECT_EQ(jnp::inner(a, Rand({5, 3}, 44)).shape(), (Shape{2, 5}));
  EXPECT_EQ(jnp::outer(jnp::array({1, 2}), jnp::array({3, 4, 5})).to_vector<int>(),
            (std::vector<int>{3, 4, 5, 6, 8, 10}));
  EXPECT_EQ(jnp::tensordot(t, Rand({3, 4, 5}, 45), 2).shape(), (Shape{2, 5}));
  Array td = jnp::tensordot(t, Rand({4, 3}, 46), {{1, 2}, {1, 0}});
  EXPECT_EQ(td.shape(), Shape{2});
  EXPECT_EQ(jnp::tensordot(a, b, 0).shape(), (Shape{2, 3, 3, 4}));
  EXPECT_EQ(jnp::kron(jnp::array({1, 10}), jnp::array({1, 2, 3})).to_vector<int>(),
            (std::vector<int>{1, 2, 3, 10, 20, 30}));
  EXPECT_EQ(jnp::kron(jnp::eye(2, std::nullopt, 0, int32), jnp::array({{1, 2}, {3, 4}})).shape(), (Shape{4, 4}));
  EXPECT_THROW(jnp::dot(a, a), ShapeError);
  EXPECT_THROW(jnp::tensordot(a, b, 3), ValueError);
}

TEST(DotTest, DtypesAcrossPromotion) {
  for (DType d : {int32, float16, bfloat16, float32, float64}) {
    Array a = Rand({3, 4}, 50, d), b = Rand({4, 2}, 51, d);
    Array c = jnp::matmul(a, b);
    EXPECT_EQ(c.dtype(), d);
    EXPECT_EQ(c.to_vector<double>(), NaiveMatmul(a.to_vector<double>(), b.to_vector<double>(), 3, 4, 2)) << dtype_name(d);
  }
}

}  // namespace
}  // namespace jx::linalg_test
