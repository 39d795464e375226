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

#include "tests/scoped_env.h"

namespace jx::indexing_test {
namespace {

namespace jnp = jx::numpy;
using F = std::vector<float>;
using I = std::vector<int32_t>;

Array Arange(int64_t n) { return jnp::arange(n); }                  // int32
// Whether x[i] compiles for an i of type T.
template <typename T>
concept IndexableBy = requires(const Array& a, T i) { a[i]; };
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

TEST(IndexUpdateTest, ScatterUpdatesRunInPlaceUnderJit) {
  // [AT]: "inside a jit() compiled function, expressions like x = x.at[idx].set(y) are
  // guaranteed to be applied in-place": array indices lower to a scatter, which writes into a
  // donated x's memory and into a dead intermediate's buffer (no copy of the operand).
  const Array idx = jnp::array({1, 3, 4096});  // 4096 is out of bounds: dropped (mode='drop')
  auto step = jit([](const Array& x, const Array& i) { return x.at(i).add(1.0); }, donate_argnums{0});
  Array x = jnp::zeros({1024});
  EXPECT_NE(step.lower(x, idx).as_text().find("scatter"), std::string::npos);
  const void* memory = x.data();
  const Array y = step(x, idx);
  EXPECT_TRUE(x.is_deleted());
  EXPECT_EQ(y.data(), memory);
  EXPECT_EQ(y.sum().item<float>(), 2);
  EXPECT_EQ(y[3].item<float>(), 1);
  const MemoryAnalysis donated = step.lower(y, idx).compile().memory_analysis();
  EXPECT_EQ(donated.alias_size_in_bytes, 1024 * 4);
  EXPECT_LT(donated.temp_size_in_bytes, 1024 * 4);  // the normalized indices only
  // A dead intermediate: 2 * x is written into the output buffer and scattered in place, so
  // the program needs no temp buffer of x's size for it.
  auto fresh = jit([](const Array& a, const Array& i) { return (a * 2.0).at(i).set(5.0); });
  const Array a = jnp::ones({1024});
  EXPECT_LT(fresh.lower(a, idx).compile().memory_analysis().temp_size_in_bytes, 1024 * 4);
  const Array z = fresh(a, idx);
  EXPECT_EQ(z[1].item<float>(), 5);
  EXPECT_EQ(z[2].item<float>(), 2);
  EXPECT_EQ(z.sum().item<float>(), 2 * 1022 + 10);
  // An operand still read after the scatter keeps its buffer: the scatter writes a copy.
  auto kept = jit([](const Array& b, const Array& i) {
    const Array t = b * 2.0;
    return std::pair{t.at(i).set(5.0), t.sum()};
  });
  auto [u, total] = kept(a, idx);
  EXPECT_EQ(total.item<float>(), 2048);
  EXPECT_EQ(u.sum().item<float>(), 2 * 1022 + 10);
}

TEST(IndexUpdateTest, DivideAndPowerAsJax) {
  // [AT] lists x.at[idx].divide(y) ("x[idx] /= y") and .power(y) ("x[idx] **= y"); JAX
  // defines them as x / ones_like(x).at[idx].multiply(y) and x ** ones_like(x).at[idx].multiply(y):
  //   jnp.arange(5.0).at[2].divide(4)    ->  Array([0. , 1. , 0.5, 3. , 4. ], dtype=float32)
  //   jnp.arange(5.0).at[2].power(3)     ->  Array([0., 1., 8., 3., 4.], dtype=float32)
  //   jnp.arange(5).at[1].divide(2)      ->  Array([0. , 0.5, 2. , 3. , 4. ], dtype=float32)
  //   jnp.arange(5).at[2].power(3)       ->  Array([0, 1, 8, 3, 4], dtype=int32)
  const Array x = ArangeF(5);
  EXPECT_EQ(x.at(2).divide(4).to_vector<float>(), (F{0, 1, 0.5, 3, 4}));
  EXPECT_EQ(x.at(2).power(3).to_vector<float>(), (F{0, 1, 8, 3, 4}));
  const Array xi = Arange(5);
  const Array q = xi.at(1).divide(2);
  EXPECT_EQ(q.dtype(), float32);  // true division, as jnp.divide
  EXPECT_EQ(q.to_vector<float>(), (F{0, 0.5, 2, 3, 4}));
  const Array p = xi.at(2).power(3);
  EXPECT_EQ(p.dtype(), int32);
  EXPECT_EQ(p.to_vector<int32_t>(), (I{0, 1, 8, 3, 4}));
  // Repeated indices multiply their divisors (JAX's scatter_mul of ones); modes as .add's.
  EXPECT_EQ(jnp::full({3}, 8.0).at(jnp::array({0, 0, 2})).divide(2.0).to_vector<float>(), (F{2, 8, 4}));
  EXPECT_EQ(x.at(10).divide(2.0).to_vector<float>(), (F{0, 1, 2, 3, 4}));          // dropped
  EXPECT_EQ(x.at(10).divide(2.0, "clip").to_vector<float>(), (F{0, 1, 2, 3, 2}));  // clamped
  EXPECT_EQ(x.at(jnp::array({1, 3})).power(2.0).to_vector<float>(), (F{0, 1, 2, 9, 4}));
  // The values' gradient goes through scatter_mul, which needs unique_indices (JAX's rule).
  auto loss = [&](const Array& v, bool unique) {
    return x.at(jnp::array({2, 4})).divide(v, {.unique_indices = unique}).sum();
  };
  const Array g = grad([&](const Array& v) { return loss(v, true); })(jnp::array({2.f, 4.f}));
  EXPECT_EQ(g.to_vector<float>(), (F{-0.5, -0.25}));  // d(x/v)/dv = -x/v^2
  EXPECT_THROW(grad([&](const Array& v) { return loss(v, false); })(jnp::array({2.f, 4.f})), NotImplementedError);
  // Under jit the same numbers.
  EXPECT_EQ(jit([](const Array& a) { return a.at(jnp::array({1, 3})).divide(2.0); })(x).to_vector<float>(),
            (F{0, 0.5, 2, 1.5, 4}));
}

TEST(IndexUpdateTest, ApplyMapsAScalarFunctionOncePerIndex) {
  // [AT]: x.at[idx].apply(ufunc) is "Pure equivalent of func.at(x, idx) for a unary ufunc func"
  // (NumPy's ufunc.at applies func once per time an index names an element):
  //   jnp.arange(5.0).at[1:3].apply(jnp.square)               ->  [0., 1., 4., 3., 4.]
  //   jnp.arange(5.0).at[jnp.array([0, 2, 2])].apply(lambda e: e + 10)  ->  [10., 1., 22., 3., 4.]
  const Array x = ArangeF(5);
  auto square = [](const Array& e) { return jnp::square(e); };
  auto plus10 = [](const Array& e) { return e + 10.0; };
  EXPECT_EQ(x.at(jx::slice(1, 3)).apply(square).to_vector<float>(), (F{0, 1, 4, 3, 4}));
  EXPECT_FLOAT_EQ(x.at(1).apply(jnp::sin)[1].item<float>(), std::sin(1.0f));  // x.at[1].apply(jnp.sin)
  EXPECT_EQ(x.at(jnp::array({0, 2, 2})).apply(plus10).to_vector<float>(), (F{10, 1, 22, 3, 4}));
  // Promised unique: one pass over the named elements.
  EXPECT_EQ(x.at(jnp::array({0, 2})).apply(plus10, {.unique_indices = true}).to_vector<float>(), (F{10, 1, 12, 3, 4}));
  // Out-of-bounds indices are dropped, or clamped with mode='clip'.
  EXPECT_EQ(x.at(jnp::array({1, 9})).apply(plus10).to_vector<float>(), (F{0, 11, 2, 3, 4}));
  EXPECT_EQ(x.at(jnp::array({1, 9})).apply(plus10, "clip").to_vector<float>(), (F{0, 11, 2, 3, 14}));
  // Under jit (one scatter, run natively) and under vmap.
  auto f = [&](const Array& a) { return a.at(jnp::array({0, 2, 2})).apply(plus10); };
  EXPECT_EQ(jit(f)(x).to_vector<float>(), (F{10, 1, 22, 3, 4}));
  EXPECT_EQ(vmap(f)(jnp::stack({x, x})).to_vector<float>(), (F{10, 1, 22, 3, 4, 10, 1, 22, 3, 4}));
  // fn must map a scalar to a scalar of x's dtype (a weak result is cast).
  EXPECT_EQ(Arange(3).at(1).apply([](const Array& e) { return e * 3; }).to_vector<int32_t>(), (I{0, 3, 2}));
  EXPECT_THROW((void)x.at(1).apply([](const Array& e) { return jnp::stack({e, e}); }), ShapeError);
  EXPECT_THROW((void)x.at(1).apply([](const Array& e) { return e.astype(int32); }), TypeError);
}

// JAX's scatter_apply: x.at[idx].apply(f) is ONE scatter equation whose update_jaxpr is
// (x, _) -> f(x), over zero updates of the indexed shape
// (https://docs.jax.dev/en/latest/_autosummary/jax.lax.scatter_apply.html); f runs once per
// update, in update order, eagerly and under jit (natively: no evaluator fallback) in
// O(updates); its jvp raises JAX's NotImplementedError, whatever the index.
TEST(IndexUpdateTest, ApplyIsOneScatterApplyingFnPerUpdate) {
  const Array x = ArangeF(5);
  auto plus10 = [](const Array& e) { return e + 10.0; };
  auto apply = [&](const Array& v) { return v.at(jnp::array({0, 2, 2})).apply(plus10); };
  const std::string text = make_jaxpr(apply)(x).ToString();
  EXPECT_EQ(text,
            "{ lambda a:i32[3]; b:f32[5]. let\n"
            "    c:bool[3] = lt a 0:i32[]\n"
            "    d:i32[3] = add a 5:i32[]\n"
            "    e:i32[3] = select_n c a d\n"
            "    f:f32[3] = broadcast_in_dim[broadcast_dimensions=() shape=(3,) sharding=None] 0.0:f32[]\n"
            "    g:i32[3,1] = reshape[dimensions=None new_sizes=(3, 1) sharding=None] e\n"
            "    h:f32[5] = scatter[\n"
            "      dimension_numbers=ScatterDimensionNumbers(update_window_dims=(), inserted_window_dims=(0,), "
            "scatter_dims_to_operand_dims=(0,), operand_batching_dims=(), scatter_indices_batching_dims=())\n"
            "      indices_are_sorted=False\n"
            "      mode=GatherScatterMode.FILL_OR_DROP\n"
            "      unique_indices=False\n"
            "      update_consts=()\n"
            "      update_jaxpr={ lambda ; i:f32[] j:f32[]. let\n"
            "          k:f32[] = add i 10.0:f32[]\n"
            "        in (k,) }\n"
            "    ] b g f\n"
            "  in (h,) }");
  // Many repeats: 1000 updates into 10 elements (element i named 100 times, f = 0.5 e + 1),
  // jit without the evaluator fallback equals eager and a host loop.
  const int64_t n = 10, updates = 1000;
  std::vector<int32_t> idx(updates);
  for (int64_t k = 0; k < updates; ++k) idx[static_cast<size_t>(k)] = static_cast<int32_t>((k * 7) % n);
  const Array where = Array::FromData(idx.data(), {updates}, int32);
  auto halve = [&](const Array& v) { return v.at(where).apply([](const Array& e) { return e * 0.5f + 1.0f; }); };
  std::vector<float> want = ArangeF(n).to_vector<float>();
  for (int32_t i : idx) want[static_cast<size_t>(i)] = want[static_cast<size_t>(i)] * 0.5f + 1.0f;
  EXPECT_EQ(halve(ArangeF(n)).to_vector<float>(), want);
  {
    jx::testing::ScopedEnv forbid("JX_CPU_FALLBACK", "error");
    EXPECT_EQ(jit(halve)(ArangeF(n)).to_vector<float>(), want);
  }
  // Windows (a row index into a matrix) and dropped out-of-bounds rows.
  const Array m = ArangeF(6).reshape({3, 2});
  auto rows = [](const Array& v) { return v.at(jnp::array({2, 0, 2, 7})).apply([](const Array& e) { return e * 2.0f; }); };
  const F want_rows = {0, 2, 2, 3, 16, 20};
  EXPECT_EQ(rows(m).to_vector<float>(), want_rows);
  {
    jx::testing::ScopedEnv forbid("JX_CPU_FALLBACK", "error");
    EXPECT_EQ(jit(rows)(m).to_vector<float>(), want_rows);
  }
  // JAX's _scatter_jvp: "scatter_apply JVP not implemented", for repeated and unique indices.
  for (const Array& i : {jnp::array({0, 2, 2}), jnp::array({1})}) {
    try {
      (void)grad([&](const Array& v) { return jnp::sum(v.at(i).apply(jnp::sin)); })(x);
      FAIL() << "expected NotImplementedError";
    } catch (const NotImplementedError& e) {
      EXPECT_NE(std::string(e.what()).find("scatter_apply JVP not implemented"), std::string::npos) << e.what();
    }
  }
  // f may not close over a traced value (JAX's _reduction_jaxpr raises the same).
  EXPECT_THROW((void)jit([&](const Array& v) { return x.at(1).apply([&](const Array& e) { return e * v; }); })(Array(2.0f)),
               NotImplementedError);
}

TEST(IndexingTest, ZeroDimensionalBooleanIndexAddsAnAxis) {
  // NumPy's scalar boolean index, which JAX implements (jax-ml/jax#19722, #21305):
  //   np.arange(4)[True].shape      ->  (1, 4)
  //   np.arange(4)[False].shape     ->  (0, 4)
  //   np.arange(4)[:, True].shape   ->  (4, 1)
  //   x.at[True].set(1) sets every element; x.at[False].set(1) none.
  const Array x = Arange(4);
  EXPECT_EQ(x[true].shape(), (Shape{1, 4}));
  EXPECT_EQ(x[true].to_vector<int32_t>(), (I{0, 1, 2, 3}));
  EXPECT_EQ(x[false].shape(), (Shape{0, 4}));
  EXPECT_EQ(x[jnp::array(false)].shape(), (Shape{0, 4}));
  EXPECT_EQ(x[jnp::array(true)].shape(), (Shape{1, 4}));
  EXPECT_EQ((x[{jx::slice(), true}].shape()), (Shape{4, 1}));
  EXPECT_EQ((x[{true, false}].shape()), (Shape{0, 4}));  // one axis for all of them, as NumPy
  EXPECT_EQ((x[{true, 2}].to_vector<int32_t>()), (I{2}));
  EXPECT_EQ(x.at(true).set(7).to_vector<int32_t>(), (I{7, 7, 7, 7}));
  EXPECT_EQ(x.at(false).set(7).to_vector<int32_t>(), (I{0, 1, 2, 3}));
  EXPECT_EQ((x.at({true, 1}).add(10).to_vector<int32_t>()), (I{0, 11, 2, 3}));
  // Under jit a constant boolean works; a traced one cannot decide the shape.
  EXPECT_EQ(jit([](const Array& a) { return a[true]; })(x).shape(), (Shape{1, 4}));
  EXPECT_THROW(jit([](const Array& a, const Array& b) { return a[b]; })(x, jnp::array(true)),
               lax::NonConcreteBooleanIndexError);
  // Only a bool is a boolean index: x[1.5] or x[pointer] does not compile (never x[true]).
  static_assert(IndexableBy<bool> && IndexableBy<int>);
  static_assert(!IndexableBy<double> && !IndexableBy<const int*>);
  // With integer-array indices it is an advanced index of shape (1,) or (0,) that broadcasts
  // with them (NumPy: np.arange(4)[True, [0, 2]] -> [0, 2]; a[[0, 2], True].shape -> (2, 4)).
  EXPECT_EQ((x[{true, jnp::array({0, 2})}].to_vector<int32_t>()), (I{0, 2}));
  EXPECT_EQ((x[{false, jnp::array({1})}].shape()), (Shape{0}));
  const Array y = Arange(12).reshape({3, 4});
  EXPECT_EQ((y[{jnp::array({0, 2}), true}].shape()), (Shape{2, 4}));
  EXPECT_EQ((y[{jnp::array({0, 2}), true}].to_vector<int32_t>()), (I{0, 1, 2, 3, 8, 9, 10, 11}));
  EXPECT_EQ((y[{jx::ellipsis, true, jnp::array({3})}].to_vector<int32_t>()), (I{3, 7, 11}));
  EXPECT_EQ((x.at({true, jnp::array({0, 2})}).set(9).to_vector<int32_t>()), (I{9, 1, 9, 3}));
  EXPECT_EQ((x.at({false, jnp::array({1})}).set(9).to_vector<int32_t>()), (I{0, 1, 2, 3}));
}

}  // namespace
}  // namespace jx::indexing_test
