// NumPy/JAX indexing (x[...], x.index(...)) and index updates (x.at(...)), each case from a JAX
// doc page with its documented output:
//   [NI] https://docs.jax.dev/en/latest/jax.numpy.html (NumPy indexing, jnp.newaxis)
//   [SB] https://docs.jax.dev/en/latest/notebooks/Common_Gotchas_in_JAX.html (sharp bits:
//        "Out-of-bounds indexing", "In-place updates")
//   [AT] https://docs.jax.dev/en/latest/_autosummary/jax.numpy.ndarray.at.html
//   [NC] https://docs.jax.dev/en/latest/errors.html#jax.errors.NonConcreteBooleanIndexError
// The NumPy semantics (adjacent advanced indices, boolean masks) are NumPy's "Indexing on
// ndarrays" page, which JAX follows.
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <jx/jx.h>

namespace jx {
namespace {

namespace jnp = jx::numpy;
using F = std::vector<float>;
using I = std::vector<int32_t>;

Array Arange(int64_t n) { return jnp::arange(n); }                  // int32
Array ArangeF(int64_t n) { return jnp::arange(n).astype(float32); }  // float32

// ---- reading ----

TEST(IndexingTest, OutOfBoundsReadsClampAsJax) {
  // [SB] "for retrieval operations out-of-bound indices are clamped":
  //   jnp.arange(10)[11]  ->  Array(9, dtype=int32)
  EXPECT_EQ(Arange(10)[11].item<int32_t>(), 9);
  EXPECT_EQ(Arange(10)[11].ndim(), 0);
  EXPECT_EQ(Arange(10)[-1].item<int32_t>(), 9);
  EXPECT_EQ(Arange(10)[-10].item<int32_t>(), 0);
  EXPECT_EQ(Arange(10)[-11].item<int32_t>(), 0);  // normalized once (-1), then clamped
  // Indexing a 0-d array or a size-0 axis is still an error.
  EXPECT_THROW((void)Arange(10)[3][0], IndexError);
  EXPECT_THROW((void)jnp::zeros({0})[0], IndexError);
}

TEST(IndexingTest, SlicesWithStepsAsPython) {
  const Array x = Arange(10);
  EXPECT_EQ(x[jx::slice(1, 8, 2)].to_vector<int32_t>(), (I{1, 3, 5, 7}));          // x[1:8:2]
  EXPECT_EQ(x[jx::slice({}, {}, -1)].to_vector<int32_t>(), (I{9, 8, 7, 6, 5, 4, 3, 2, 1, 0}));  // x[::-1]
  EXPECT_EQ(x[jx::slice(8, 1, -3)].to_vector<int32_t>(), (I{8, 5, 2}));            // x[8:1:-3]
  EXPECT_EQ(x[jx::slice(-3)].to_vector<int32_t>(), (I{7, 8, 9}));                  // x[-3:]
  EXPECT_EQ(x[jx::slice({}, 100)].size(), 10);                                     // x[:100]
  EXPECT_EQ(x[jx::slice(5, 2)].size(), 0);                                         // x[5:2]
  EXPECT_THROW((void)x[jx::slice(0, 5, 0)], ValueError);
}

TEST(IndexingTest, SeveralIndicesNewaxisAndEllipsis) {
  const Array x = Arange(12).reshape({3, 4});
  EXPECT_EQ((x[{jx::slice(1, 3), 0}].to_vector<int32_t>()), (I{4, 8}));  // x[1:3, 0]
  EXPECT_EQ((x[{-1, -1}].item<int32_t>()), 11);                          // x[-1, -1]
  EXPECT_EQ((x[{jx::ellipsis, jx::newaxis}].shape()), (Shape{3, 4, 1}));  // x[..., None]
  EXPECT_EQ((x[{jx::newaxis, 1}].shape()), (Shape{1, 4}));                // x[None, 1]
  EXPECT_EQ((x[{jx::ellipsis, 2}].to_vector<int32_t>()), (I{2, 6, 10}));  // x[..., 2]
  EXPECT_EQ((x[{1, jx::ellipsis}].to_vector<int32_t>()), (I{4, 5, 6, 7}));
  EXPECT_EQ((x[{jx::slice({}, {}, 2), jx::slice({}, {}, -2)}].to_vector<int32_t>()), (I{3, 1, 11, 9}));
  EXPECT_EQ(x.index({jx::slice(), 1}).to_vector<int32_t>(), (I{1, 5, 9}));
  EXPECT_THROW((void)(x[{0, 0, 0}]), IndexError);                         // too many indices
  EXPECT_THROW((void)(x[{jx::ellipsis, 0, jx::ellipsis}]), IndexError);  // two ellipses
}

TEST(IndexingTest, IntegerArrayIndicesGather) {
  const Array x = Arange(12).reshape({3, 4});
  const Array rows = jnp::array({2, 0, -1});
  EXPECT_EQ(x[rows].shape(), (Shape{3, 4}));
  EXPECT_EQ(x[rows].to_vector<int32_t>(), (I{8, 9, 10, 11, 0, 1, 2, 3, 8, 9, 10, 11}));
  // Paired indices pick elements: x[[0, 2], [1, 3]] -> [1, 11].
  EXPECT_EQ((x[{jnp::array({0, 2}), jnp::array({1, 3})}].to_vector<int32_t>()), (I{1, 11}));
  // x[:, [3, 0]]: columns.
  EXPECT_EQ((x[{jx::slice(), jnp::array({3, 0})}].to_vector<int32_t>()), (I{3, 0, 7, 4, 11, 8}));
  // Broadcast index arrays: x[[[0], [2]], [1, 2]] has shape (2, 2).
  const Array r = jnp::array({0, 2}).reshape({2, 1});
  EXPECT_EQ((x[{r, jnp::array({1, 2})}].to_vector<int32_t>()), (I{1, 2, 9, 10}));
  // Out-of-bounds gathers clamp too.
  EXPECT_EQ(x[jnp::array({5})].to_vector<int32_t>(), (I{8, 9, 10, 11}));

  // NumPy's placement: adjacent advanced indices stay in place; separated ones go first.
  const Array y = Arange(24).reshape({2, 3, 4});
  const Array k = jnp::array({0, 1});
  EXPECT_EQ((y[{jx::slice(), k, k}].shape()), (Shape{2, 2}));  // y[:, [0,1], [0,1]]
  EXPECT_EQ((y[{jx::slice(), k, k}].to_vector<int32_t>()), (I{0, 5, 12, 17}));
  EXPECT_EQ((y[{0, jx::slice(), k}].shape()), (Shape{2, 3}));  // y[0, :, [0,1]]: (2, 3)
  EXPECT_EQ((y[{0, jx::slice(), k}].to_vector<int32_t>()), (I{0, 4, 8, 1, 5, 9}));
  EXPECT_EQ((y[{k, jx::newaxis, k}].shape()), (Shape{2, 1, 4}));  // separated by None
  EXPECT_THROW((void)x[jnp::array({0.5f})], TypeError);
}

TEST(IndexingTest, BooleanMasksOnConcreteArraysAndJaxsErrorUnderJit) {
  const Array x = Arange(6).reshape({2, 3});
  EXPECT_EQ(x[x > 2].to_vector<int32_t>(), (I{3, 4, 5}));  // x[x > 2]
  EXPECT_EQ(x[jnp::array({true, false})].to_vector<int32_t>(), (I{0, 1, 2}));
  EXPECT_EQ((x[{jx::slice(), jnp::array({true, false, true})}].to_vector<int32_t>()), (I{0, 2, 3, 5}));
  EXPECT_THROW((void)x[jnp::array({true, false, true})], IndexError);  // mask (3,) vs axis of 2
  // [NC]: under jit the mask's values are unknown, so the result shape is: JAX raises
  // NonConcreteBooleanIndexError ("Array boolean indices must be concrete").
  auto f = jit([](const Array& a) { return a[a > 2]; });
  try {
    (void)f(x);
    ADD_FAILURE() << "expected NonConcreteBooleanIndexError";
  } catch (const lax::NonConcreteBooleanIndexError& e) {
    EXPECT_NE(std::string(e.what()).find("Array boolean indices must be concrete"), std::string::npos) << e.what();
  }
  // The jit-compatible form [NC] suggests: jnp.where.
  auto g = jit([](const Array& a) { return jnp::where(a > 2, a, 0).sum(); });
  EXPECT_EQ(g(x).item<int32_t>(), 12);
}

TEST(IndexingTest, TracedIndicesUnderJitVmapAndGrad) {
  const Array x = ArangeF(5) * 10.0;
  auto take = jit([](const Array& a, const Array& i) { return a[i]; });
  EXPECT_EQ(take(x, Array::Scalar(-1, int32)).item<float>(), 40);
  EXPECT_EQ(take(x, Array::Scalar(20, int32)).item<float>(), 40);  // clamped
  EXPECT_EQ(take(x, Array::Scalar(2, int32)).item<float>(), 20);
  // vmap over the index: one gather.
  EXPECT_EQ(vmap(take, in_axes{none, 0})(x, jnp::array({3, 0, -2})).to_vector<float>(), (F{30, 0, 30}));
  // grad of a gather with a repeated index adds the cotangents.
  auto loss = [](const Array& a) { return a[jnp::array({1, 1, 4})].sum(); };
  EXPECT_EQ(grad(loss)(x).to_vector<float>(), (F{0, 2, 0, 0, 1}));
  auto row = [](const Array& a) { return (a[{jx::slice(1, {}, 2)}] * a[-1]).sum(); };
  // d/da of (a1 + a3) * a4: [0, a4, 0, a4, a1 + a3]
  EXPECT_EQ(grad(row)(x).to_vector<float>(), (F{0, 40, 0, 40, 40}));
}

// ---- updating ----

TEST(IndexUpdateTest, JaxDocExamples) {
  // [AT]:
  //   x = jnp.arange(5.0)
  //   x.at[2].add(10)                  -> [ 0.,  1., 12.,  3.,  4.]
  //   x.at[10].add(10)                 -> [0., 1., 2., 3., 4.]  (out-of-bounds indices are ignored)
  //   x.at[20].add(10, mode='clip')    -> [ 0.,  1.,  2.,  3., 14.]
  //   x.at[2].get()                    -> 2.
  //   x.at[20].get()                   -> 4.   (out-of-bounds indices clipped)
  //   x.at[20].get(mode='fill')        -> nan
  //   x.at[20].get(mode='fill', fill_value=-1)  -> -1.
  const Array x = ArangeF(5);
  EXPECT_EQ(x.at(2).add(10).to_vector<float>(), (F{0, 1, 12, 3, 4}));
  EXPECT_EQ(x.at(10).add(10).to_vector<float>(), (F{0, 1, 2, 3, 4}));
  EXPECT_EQ(x.at(20).add(10, "clip").to_vector<float>(), (F{0, 1, 2, 3, 14}));
  EXPECT_EQ(x.at(2).get().item<float>(), 2);
  EXPECT_EQ(x.at(20).get().item<float>(), 4);
  EXPECT_TRUE(std::isnan(x.at(20).get("fill").item<float>()));
  EXPECT_EQ(x.at(20).get("fill", -1).item<float>(), -1);
  EXPECT_THROW((void)x.at(1).set(0, "wrap"), ValueError);
  // x is unchanged: the updates are functional.
  EXPECT_EQ(x.to_vector<float>(), (F{0, 1, 2, 3, 4}));
}

TEST(IndexUpdateTest, SharpBitsInPlaceUpdates) {
  // [SB] "In-place updates":
  //   jax_array = jnp.zeros((3,3), dtype=jnp.float32)
  //   new_jax_array = jax_array.at[1, :].set(1.0)
  //   -> [[0. 0. 0.] [1. 1. 1.] [0. 0. 0.]]
  //   new_add_array = jax_array.at[::2, 1:].add(7.)
  //   -> [[0. 7. 7.] [0. 0. 0.] [0. 7. 7.]]
  const Array a = jnp::zeros({3, 3});
  EXPECT_EQ((a.at({1, jx::slice()}).set(1.0).to_vector<float>()), (F{0, 0, 0, 1, 1, 1, 0, 0, 0}));
  EXPECT_EQ((a.at({jx::slice({}, {}, 2), jx::slice(1)}).add(7.).to_vector<float>()),
            (F{0, 7, 7, 0, 0, 0, 0, 7, 7}));
  // Values broadcast to the indexed shape and are cast to x's dtype.
  EXPECT_EQ((Arange(4).at(jx::slice(1, 3)).set(jnp::array({7.9f, 8.2f})).to_vector<int32_t>()), (I{0, 7, 8, 3}));
  EXPECT_THROW((void)a.at(0).set(jnp::ones({2})), ShapeError);
}

TEST(IndexUpdateTest, RepeatedIndicesAllApply) {
  // [AT]: "if multiple indices refer to the same location, all updates will be applied".
  const Array idx = jnp::array({0, 0, 2});
  EXPECT_EQ(jnp::zeros({3}).at(idx).add(1.0).to_vector<float>(), (F{2, 0, 1}));
  EXPECT_EQ(jnp::full({3}, 2.0).at(idx).multiply(3.0).to_vector<float>(), (F{18, 2, 6}));
  const Array v = jnp::array({5.f, -1.f, 9.f});
  EXPECT_EQ(jnp::zeros({3}).at(idx).min(v).to_vector<float>(), (F{-1, 0, 0}));
  EXPECT_EQ(jnp::zeros({3}).at(idx).max(v).to_vector<float>(), (F{5, 0, 9}));
  EXPECT_EQ(jnp::zeros({3}).at(jnp::array({1, 5, -1})).set(v).to_vector<float>(), (F{0, 5, 9}));  // 5 dropped
  EXPECT_EQ(jnp::zeros({3}).at(jnp::array({1, 5})).set(7.0, "clip").to_vector<float>(), (F{0, 7, 7}));
  // Integer arrays with slices: one scatter into x (slices are its windows).
  const Array z = jnp::zeros({3, 4});
  EXPECT_EQ((z.at({jx::slice(1, 3), jnp::array({0, 3})}).set(1.0).to_vector<float>()),
            (F{0, 0, 0, 0, 1, 0, 0, 1, 1, 0, 0, 1}));
  EXPECT_EQ((z.at({jnp::array({2, 2}), jx::slice(1)}).add(jnp::array({1.f, 2.f, 3.f})).to_vector<float>()),
            (F{0, 0, 0, 0, 0, 0, 0, 0, 0, 2, 4, 6}));
  // Separated advanced indices: the values' leading dim is the broadcast index dim.
  const Array w = jnp::zeros({2, 3, 2});
  const Array vals = jnp::array({{1.f, 2.f, 3.f}, {4.f, 5.f, 6.f}});  // (2 index points, 3 rows)
  EXPECT_EQ((w.at({1, jx::slice(), jnp::array({1, 0})}).set(vals).to_vector<float>()),
            (F{0, 0, 0, 0, 0, 0, 4, 1, 5, 2, 6, 3}));
  // Strided and negative-step slices scatter too.
  EXPECT_EQ(ArangeF(5).at(jx::slice({}, {}, -2)).set(jnp::array({1.f, 2.f, 3.f})).to_vector<float>(),
            (F{3, 1, 2, 3, 1}));
  // Boolean masks on concrete arrays: x.at[x < 2].set(0).
  const Array y = ArangeF(4);
  EXPECT_EQ(y.at(y < 2.0).set(9.0).to_vector<float>(), (F{9, 9, 2, 3}));
}

TEST(IndexUpdateTest, TracedIndexUnderJitDropsOutOfBoundsUpdates) {
  auto f = jit([](const Array& x, const Array& i, const Array& v) { return x.at(i).set(v); });
  const Array x = jnp::zeros({4});
  EXPECT_EQ(f(x, Array::Scalar(-1, int32), Array(5.0)).to_vector<float>(), (F{0, 0, 0, 5}));
  EXPECT_EQ(f(x, Array::Scalar(4, int32), Array(5.0)).to_vector<float>(), (F{0, 0, 0, 0}));
  EXPECT_EQ(f(x, Array::Scalar(-5, int32), Array(5.0)).to_vector<float>(), (F{0, 0, 0, 0}));
  auto g = jit([](const Array& x, const Array& i) { return x.at({i, jx::slice(1)}).add(1.0, "clip"); });
  EXPECT_EQ(g(jnp::zeros({2, 3}), Array::Scalar(7, int32)).to_vector<float>(), (F{0, 0, 0, 0, 1, 1}));
}

TEST(IndexUpdateTest, DerivativesAndBatching) {
  // d/dv sum(w * x.at[1].set(v)) = w[1]; d/dx is w with x[1]'s entry zeroed.
  const Array x = ArangeF(3), w = jnp::array({2.f, 3.f, 4.f});
  auto f = [&](const Array& a, const Array& v) { return (w * a.at(1).set(v)).sum(); };
  EXPECT_EQ(grad(f, argnums{1})(x, Array(5.f)).item<float>(), 3);
  EXPECT_EQ(grad(f, argnums{0})(x, Array(5.f)).to_vector<float>(), (F{2, 0, 4}));
  // Through a scatter (array index) with add: each update gets its window's cotangent.
  auto h = [&](const Array& v) { return (w * x.at(jnp::array({2, 2, 0})).add(v)).sum(); };
  EXPECT_EQ(grad(h)(jnp::ones({3})).to_vector<float>(), (F{4, 4, 2}));
  // max with a tie: the tangent is the mean of the tied values' tangents (JAX's rule).
  auto m = [](const Array& a, const Array& v) { return a.at(jnp::array({0, 0})).max(v); };
  auto [out, tan] = jvp(m, std::tuple{jnp::array({1.f, 5.f}), jnp::array({3.f, 3.f})},
                        std::tuple{jnp::zeros({2}), jnp::array({1.f, 3.f})});
  EXPECT_EQ(out.to_vector<float>(), (F{3, 5}));
  EXPECT_EQ(tan.to_vector<float>(), (F{2, 0}));
  // multiply through the basic (dynamic_update_slice) path is differentiable in the values.
  auto mul = [&](const Array& v) { return x.at(2).multiply(v).sum(); };
  EXPECT_EQ(grad(mul)(Array(3.f)).item<float>(), 2);
  // vmap: one row updated per batch element.
  auto set_row = [](const Array& a, const Array& i) { return a.at(i).set(1.0); };
  const Array xs = vmap(set_row, in_axes{none, 0})(jnp::zeros({3}), jnp::array({0, 2}));
  EXPECT_EQ(xs.to_vector<float>(), (F{1, 0, 0, 0, 0, 1}));
}

TEST(IndexUpdateTest, BasicUpdatesLowerToDynamicUpdateSliceAndRunInPlace) {
  // [AT]: "inside a jit() compiled function, expressions like x = x.at[idx].set(y) are
  // guaranteed to be applied in-place". A donated x's memory holds the result.
  auto step = jit([](const Array& x, const Array& i, const Array& v) { return x.at(i).set(v); }, donate_argnums{0});
  Array x = jnp::zeros({1024});
  const std::string hlo = step.lower(x, Array::Scalar(3, int32), Array(1.f)).as_text();
  EXPECT_NE(hlo.find("dynamic-update-slice"), std::string::npos) << hlo;
  EXPECT_EQ(hlo.find("scatter"), std::string::npos) << hlo;
  const void* memory = x.data();
  const Array y = step(x, Array::Scalar(3, int32), Array(1.f));
  EXPECT_TRUE(x.is_deleted());
  EXPECT_EQ(y.data(), memory);
  EXPECT_EQ(y[3].item<float>(), 1);
  EXPECT_EQ(y.sum().item<float>(), 1);
  EXPECT_EQ(step.lower(y, Array::Scalar(3, int32), Array(1.f)).compile().memory_analysis().alias_size_in_bytes,
            1024 * 4);
  // Array indices lower to a scatter.
  auto scatter = jit([](const Array& a) { return a.at(jnp::array({1, 3})).add(1.0); });
  EXPECT_NE(scatter.lower(jnp::zeros({4})).as_text().find("scatter"), std::string::npos);
}

}  // namespace
}  // namespace jx
