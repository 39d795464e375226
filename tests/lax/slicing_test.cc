// Focused tests of the slicing family and the Array indexing members: hand-checked values,
// XLA's clamping and JAX's index normalization, gather/scatter modes and fill values, the
// printed params, determinism of scatter_add, and bad inputs.
#include <cmath>
#include <limits>
#include <random>

#include <gtest/gtest.h>

#include <jx/core/interpreter.h>
#include <jx/jx.h>

namespace jx::slicing_test {
namespace {

using lax::GatherDimensionNumbers;
using lax::GatherScatterMode;
using lax::ScatterDimensionNumbers;

Array Iota(const Shape& shape, DType dtype = float32) {
  Array out = Array::Empty(shape, dtype);
  for (int64_t i = 0; i < out.size(); ++i) StoreFromDouble(dtype, out.mutable_data(), i, static_cast<double>(i));
  return out;
}

template <typename T>
Array Vec(std::vector<T> v, Shape shape = {}) {
  if (shape.empty()) shape = {static_cast<int64_t>(v.size())};
  return Array::FromData(v.data(), shape, DTypeOf<T>());
}
Array Bools(std::vector<int> v) {
  Array out = Array::Empty(Shape{static_cast<int64_t>(v.size())}, bool_);
  for (size_t i = 0; i < v.size(); ++i) StoreFromDouble(bool_, out.mutable_data(), static_cast<int64_t>(i), v[i]);
  return out;
}

Array I32(std::vector<int32_t> v, Shape shape) { return Vec(std::move(v), std::move(shape)); }

// Records the primitives bound (name and printed params), evaluating them eagerly.
class RecordingInterpreter : public Interpreter {
 public:
  Arrays Process(Primitive p, absl::Span<const Array> inputs, const ParamMap& params) override {
    log.push_back(StrCat(p.name(), "[", params.ToString(), "]"));
    return EvalPrimitive(p, inputs, params);
  }
  std::string name() const override { return "record"; }
  std::vector<std::string> log;
};

template <typename F>
std::vector<std::string> Record(F&& f) {
  RecordingInterpreter rec;
  {
    InterpreterScope scope(&rec);
    f();
  }
  return rec.log;
}

template <typename E, typename F>
void ExpectOpError(F&& f, const std::string& op, const std::vector<std::string>& needles) {
  try {
    f();
    ADD_FAILURE() << "expected an error from " << op;
  } catch (const E& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("[" + op + "]"), std::string::npos) << msg;
    for (const std::string& n : needles) EXPECT_NE(msg.find(n), std::string::npos) << "missing '" << n << "' in: " << msg;
  } catch (const std::exception& e) {
    ADD_FAILURE() << "wrong exception type from " << op << ": " << e.what();
  }
}

// ---------------------------------------------------------------------------------------
// slice, dynamic_slice, dynamic_update_slice

TEST(SliceTest, ValuesAndParams) {
  Array x = Iota({3, 4});
  Array y = lax::slice(x, {1, 1}, {3, 4}, {1, 2});
  EXPECT_EQ(y.shape(), (Shape{2, 2}));
  EXPECT_EQ(y.to_vector<float>(), (std::vector<float>{5, 7, 9, 11}));
  EXPECT_EQ(lax::slice(x, {0, 0}, {3, 4}).impl(), x.impl());  // full slice: the operand itself
  auto log = Record([&] { lax::slice(x, {1, 0}, {2, 4}); });
  ASSERT_EQ(log.size(), 1u);
  EXPECT_EQ(log[0], "slice[limit_indices=(2, 4) start_indices=(1, 0) strides=None]");
  log = Record([&] { lax::slice(x, {0, 0}, {3, 4}, {2, 3}); });
  EXPECT_EQ(log[0], "slice[limit_indices=(3, 4) start_indices=(0, 0) strides=(2, 3)]");
}

TEST(SliceTest, BadInputs) {
  Array x = Iota({3, 4});
  ExpectOpError<ShapeError>([&] { lax::slice(x, {0}, {3}); }, "slice", {"f32[3,4]", "(0,)"});
  ExpectOpError<ShapeError>([&] { lax::slice(x, {0, 0}, {4, 4}); }, "slice", {"f32[3,4]", "(4, 4)"});
  ExpectOpError<ShapeError>([&] { lax::slice(x, {-1, 0}, {3, 4}); }, "slice", {"f32[3,4]"});
  ExpectOpError<ShapeError>([&] { lax::slice(x, {2, 0}, {1, 4}); }, "slice", {"f32[3,4]"});
  ExpectOpError<ShapeError>([&] { lax::slice(x, {0, 0}, {3, 4}, {1, 0}); }, "slice", {"strides", "f32[3,4]"});
  EXPECT_EQ(lax::slice(x, {0, 0}, {1, 1}).size(), 1);
}

TEST(DynamicSliceTest, ClampsAndWrapsNegative) {
  Array x = Iota({5});
  EXPECT_EQ(lax::dynamic_slice(x, {2}, {3}).to_vector<float>(), (std::vector<float>{2, 3, 4}));
  EXPECT_EQ(lax::dynamic_slice(x, {4}, {3}).to_vector<float>(), (std::vector<float>{2, 3, 4}));   // clamped
  EXPECT_EQ(lax::dynamic_slice(x, {-1}, {1}).to_vector<float>(), (std::vector<float>{4}));        // wraps
  EXPECT_EQ(lax::dynamic_slice(x, {-9}, {2}).to_vector<float>(), (std::vector<float>{0, 1}));     // wraps, clamps
  EXPECT_EQ(lax::dynamic_slice(x, {Array::Scalar(3, uint8)}, {2}).to_vector<float>(), (std::vector<float>{3, 4}));
  Array m = Iota({3, 4});
  // A C++ int (weak int32) next to an int64 index takes int64.
  auto log = Record([&] {
    Array y = lax::dynamic_slice(m, {Array::Scalar(1, int64), 2}, {2, 2});
    EXPECT_EQ(y.to_vector<float>(), (std::vector<float>{6, 7, 10, 11}));
  });
  ASSERT_EQ(log.size(), 1u);
  EXPECT_EQ(log[0], "dynamic_slice[slice_sizes=(2, 2)]");
}

TEST(DynamicSliceTest, BadInputs) {
  Array x = Iota({3, 4});
  ExpectOpError<ShapeError>([&] { lax::dynamic_slice(x, {1}, {2, 2}); }, "dynamic_slice", {"f32[3,4]"});
  ExpectOpError<TypeError>([&] { lax::dynamic_slice(x, {Array::Scalar(1, float32), 0}, {2, 2}); }, "dynamic_slice",
                           {"f32[]", "f32[3,4]"});
  ExpectOpError<TypeError>([&] { lax::dynamic_slice(x, {Array::Scalar(1, int64), Array::Scalar(1, int8)}, {2, 2}); },
                           "dynamic_slice", {"i64[]", "i8[]"});
  ExpectOpError<ShapeError>([&] { lax::dynamic_slice(x, {I32({1}, {1}), 0}, {2, 2}); }, "dynamic_slice", {"i32[1]"});
  ExpectOpError<ShapeError>([&] { lax::dynamic_slice(x, {0, 0}, {4, 2}); }, "dynamic_slice", {"f32[3,4]", "(4, 2)"});
  ExpectOpError<ShapeError>([&] { lax::dynamic_slice(x, {0, 0}, {2}); }, "dynamic_slice", {"f32[3,4]", "(2,)"});
  EXPECT_EQ(lax::dynamic_slice(x, {0, 0}, {2, 2}).shape(), (Shape{2, 2}));
}

TEST(DynamicUpdateSliceTest, Values) {
  Array x = Iota({5});
  Array u = Vec<float>({10, 20});
  EXPECT_EQ(lax::dynamic_update_slice(x, u, {1}).to_vector<float>(), (std::vector<float>{0, 10, 20, 3, 4}));
  EXPECT_EQ(lax::dynamic_update_slice(x, u, {4}).to_vector<float>(), (std::vector<float>{0, 1, 2, 10, 20}));
  EXPECT_EQ(lax::dynamic_update_slice(x, u, {-2}).to_vector<float>(), (std::vector<float>{0, 1, 2, 10, 20}));
  EXPECT_EQ(x.to_vector<float>(), (std::vector<float>{0, 1, 2, 3, 4}));  // operand unchanged
  Array m = Iota({3, 3}, int32);
  Array mu = lax::dynamic_update_slice(m, Vec<int32_t>({7, 8}, {2, 1}), {1, 2});
  EXPECT_EQ(mu.to_vector<int>(), (std::vector<int>{0, 1, 2, 3, 4, 7, 6, 7, 8}));
}

TEST(DynamicUpdateSliceTest, BadInputs) {
  Array x = Iota({5});
  ExpectOpError<TypeError>([&] { lax::dynamic_update_slice(x, Iota({2}, float64), {0}); }, "dynamic_update_slice",
                           {"f32[5]", "f64[2]"});
  ExpectOpError<ShapeError>([&] { lax::dynamic_update_slice(x, Iota({1, 2}), {0}); }, "dynamic_update_slice",
                            {"f32[5]", "f32[1,2]"});
  ExpectOpError<ShapeError>([&] { lax::dynamic_update_slice(x, Iota({6}), {0}); }, "dynamic_update_slice",
                            {"f32[5]", "f32[6]"});
  ExpectOpError<ShapeError>([&] { lax::dynamic_update_slice(x, Iota({2}), {0, 0}); }, "dynamic_update_slice",
                            {"f32[5]"});
  EXPECT_EQ(lax::dynamic_update_slice(x, Iota({2}), {0}).size(), 5);
}

// ---------------------------------------------------------------------------------------
// concatenate, pad

TEST(ConcatenateTest, ValuesAndErrors) {
  Array a = Iota({2, 2}, int32), b = Iota({2, 1}, int32);
  EXPECT_EQ(lax::concatenate({a, b}, 1).to_vector<int>(), (std::vector<int>{0, 1, 0, 2, 3, 1}));
  EXPECT_EQ(lax::concatenate({a, a}, 0).shape(), (Shape{4, 2}));
  EXPECT_EQ(lax::concatenate({a}, 0).impl(), a.impl());
  auto log = Record([&] { lax::concatenate({a, b}, 1); });
  EXPECT_EQ(log[0], "concatenate[dimension=1]");
  ExpectOpError<ShapeError>([&] { lax::concatenate({a, b}, 0); }, "concatenate", {"i32[2,2]", "i32[2,1]"});
  ExpectOpError<TypeError>([&] { lax::concatenate({a, Iota({2, 1})}, 1); }, "concatenate", {"i32[2,2]", "f32[2,1]"});
  ExpectOpError<ShapeError>([&] { lax::concatenate({a, a}, 2); }, "concatenate", {"i32[2,2]"});
  ExpectOpError<ShapeError>([&] { lax::concatenate({a, Iota({4}, int32)}, 0); }, "concatenate", {"i32[2,2]", "i32[4]"});
  ExpectOpError<ValueError>([&] { lax::concatenate({}, 0); }, "concatenate", {});
  EXPECT_EQ(lax::concatenate({a, b}, 1).size(), 6);
}

TEST(PadTest, ValuesAndErrors) {
  Array x = Vec<float>({1, 2, 3});
  EXPECT_EQ(lax::pad(x, 0.0, {{1, 2, 1}}).to_vector<float>(), (std::vector<float>{0, 1, 0, 2, 0, 3, 0, 0}));
  EXPECT_EQ(lax::pad(x, 9.0, {{-1, 0, 1}}).to_vector<float>(), (std::vector<float>{9, 2, 9, 3}));
  EXPECT_EQ(lax::pad(x, 0.0, {{-2, -1, 0}}).size(), 0);
  // A C++ scalar padding value takes the operand's dtype.
  Array y = lax::pad(Iota({2}, int64), 7, {{0, 1, 0}});
  EXPECT_EQ(y.dtype(), int64);
  EXPECT_EQ(y.to_vector<int64_t>(), (std::vector<int64_t>{0, 1, 7}));
  auto log = Record([&] { lax::pad(Iota({2, 2}), 0.0, {{1, 0, 0}, {0, -1, 2}}); });
  EXPECT_EQ(log[0], "pad[padding_config=((1, 0, 0), (0, -1, 2))]");
  ExpectOpError<TypeError>([&] { lax::pad(x, Array::Scalar(0, float64), {{1, 1, 0}}); }, "pad", {"f32[3]", "f64[]"});
  ExpectOpError<ShapeError>([&] { lax::pad(x, Vec<float>({0, 0}), {{1, 1, 0}}); }, "pad", {"f32[3]", "f32[2]"});
  ExpectOpError<ShapeError>([&] { lax::pad(x, 0.0, {{1, 1, -1}}); }, "pad", {"f32[3]", "interior"});
  ExpectOpError<ShapeError>([&] { lax::pad(x, 0.0, {{-3, -3, 0}}); }, "pad", {"f32[3]"});
  ExpectOpError<ShapeError>([&] { lax::pad(x, 0.0, {{1, 1, 0}, {0, 0, 0}}); }, "pad", {"f32[3]"});
  EXPECT_EQ(lax::pad(x, 0.0, {{1, 1, 0}}).size(), 5);
}

// Without interior padding the kernel writes the padding value only around the operand's box
// (or over the whole output where the border is many short runs): every element is checked
// against the definition, with a padding value no fresh buffer holds by chance.
TEST(PadTest, BordersAroundTheOperandBox) {
  auto reference = [](const Array& x, float value, const std::vector<std::pair<int64_t, int64_t>>& lo_hi) {
    const Shape& in = x.shape();
    Shape out;
    for (size_t d = 0; d < in.size(); ++d) out.push_back(in[d] + lo_hi[d].first + lo_hi[d].second);
    std::vector<float> xs = x.to_vector<float>(), result;
    std::vector<int64_t> index(out.size(), 0);
    int64_t total = 1;
    for (int64_t n : out) total *= n;
    for (int64_t flat = 0; flat < total; ++flat) {
      int64_t rem = flat, src = 0;
      bool inside = true;
      for (int64_t d = static_cast<int64_t>(out.size()) - 1, stride = 1; d >= 0; --d) {
        index[d] = rem % out[d];
        rem /= out[d];
        const int64_t k = index[d] - lo_hi[d].first;
        inside = inside && k >= 0 && k < in[d];
        src += k * stride;
        stride *= in[d];
      }
      result.push_back(inside ? xs[src] : value);
    }
    return result;
  };
  const std::vector<std::pair<Shape, std::vector<std::pair<int64_t, int64_t>>>> cases = {
      {{64, 32}, {{1, -1}, {0, 0}}},           // the one-row shift that builds h_{t-1} in a scan's grad
      {{64, 32}, {{-3, 5}, {0, 0}}},           // crop one end, pad the other
      {{64, 32}, {{2, 1}, {3, -2}}},           // every side: the rows inside the box get border runs
      {{8, 16, 32}, {{0, 0}, {2, 2}, {0, 0}}}, // a middle dim
      {{8, 16, 32}, {{1, 1}, {-1, 2}, {4, 0}}},
      {{512, 2}, {{0, 0}, {1, 1}}},            // narrow borders on many short rows: one whole fill
  };
  for (const auto& [shape, lo_hi] : cases) {
    Array x = Iota(shape);
    std::vector<std::array<int64_t, 3>> config;
    for (const auto& [lo, hi] : lo_hi) config.push_back({lo, hi, 0});
    EXPECT_EQ(lax::pad(x, 7.0, config).to_vector<float>(), reference(x, 7.0f, lo_hi))
        << ShapeToString(shape);
  }
}

// ---------------------------------------------------------------------------------------
// gather

GatherDimensionNumbers TakeRows() { return GatherDimensionNumbers{{1}, {0}, {0}}; }

TEST(GatherTest, TakeRowsAndModes) {
  Array x = Iota({4, 2});
  Array idx = I32({2, 0, 5, -1}, {4, 1});
  Array clip = lax::gather(x, idx, TakeRows(), {1, 2}, GatherScatterMode::kClip);
  EXPECT_EQ(clip.to_vector<float>(), (std::vector<float>{4, 5, 0, 1, 6, 7, 0, 1}));
  Array promise = lax::gather(x, idx, TakeRows(), {1, 2}, GatherScatterMode::kPromiseInBounds);
  EXPECT_EQ(promise.to_vector<float>(), clip.to_vector<float>());
  Array fill = lax::gather(x, idx, TakeRows(), {1, 2});
  auto f = fill.to_vector<float>();
  EXPECT_EQ(f[0], 4);
  EXPECT_EQ(f[3], 1);
  for (int i = 4; i < 8; ++i) EXPECT_TRUE(std::isnan(f[i])) << i;  // default fill: NaN
  Array fill2 = lax::gather(x, idx, TakeRows(), {1, 2}, GatherScatterMode::kFillOrDrop, -1.0);
  EXPECT_EQ(fill2.to_vector<float>(), (std::vector<float>{4, 5, 0, 1, -1, -1, -1, -1}));
}

TEST(GatherTest, DefaultFillValues) {
  Array idx = I32({7}, {1, 1});
  auto gather_one = [&](DType d) { return lax::gather(Iota({3, 1}, d), idx, TakeRows(), {1, 1}); };
  EXPECT_EQ(gather_one(int8).item<int64_t>(), -128);
  EXPECT_EQ(gather_one(int64).item<int64_t>(), std::numeric_limits<int64_t>::min());
  EXPECT_EQ(gather_one(uint16).item<int64_t>(), 65535);
  EXPECT_EQ(gather_one(uint64).item<uint64_t>(), std::numeric_limits<uint64_t>::max());
  EXPECT_TRUE(gather_one(bool_).item<bool>());
  EXPECT_TRUE(std::isnan(gather_one(bfloat16).item<float>()));
  EXPECT_TRUE(std::isnan(gather_one(float64).item<double>()));
}

TEST(GatherTest, GeneralWindowsAndBatching) {
  // x[i, j:j+2] for index pairs (i, j): start_index_map (0, 1), dim 0 collapsed.
  Array x = Iota({3, 4});
  Array idx = I32({0, 1, 2, 3, 1, 0}, {3, 2});
  Array y = lax::gather(x, idx, GatherDimensionNumbers{{1}, {0}, {0, 1}}, {1, 2}, GatherScatterMode::kClip);
  EXPECT_EQ(y.shape(), (Shape{3, 2}));
  EXPECT_EQ(y.to_vector<float>(), (std::vector<float>{1, 2, 10, 11, 4, 5}));  // (2, 3) clamps to (2, 2)
  // Batching dims: per row b of x, take x[b, idx[b]].
  Array xb = Iota({2, 5});
  Array ib = I32({4, 1}, {2, 1});
  Array yb = lax::gather(xb, ib, GatherDimensionNumbers{{}, {1}, {1}, {0}, {0}}, {1, 1});
  EXPECT_EQ(yb.to_vector<float>(), (std::vector<float>{4, 6}));
}

TEST(GatherTest, PrintedParams) {
  auto log = Record([&] { lax::gather(Iota({4, 2}), I32({1}, {1, 1}), TakeRows(), {1, 2}); });
  ASSERT_EQ(log.size(), 1u);
  EXPECT_EQ(log[0],
            "gather[dimension_numbers=GatherDimensionNumbers(offset_dims=(1,), collapsed_slice_dims=(0,), "
            "start_index_map=(0,), operand_batching_dims=(), start_indices_batching_dims=()) fill_value=None "
            "indices_are_sorted=False mode=GatherScatterMode.FILL_OR_DROP slice_sizes=(1, 2) unique_indices=False]");
  log = Record([&] { lax::gather(Iota({4, 2}), I32({1}, {1, 1}), TakeRows(), {1, 2}, GatherScatterMode::kClip); });
  EXPECT_NE(log[0].find("mode=GatherScatterMode.CLIP"), std::string::npos) << log[0];
}

TEST(GatherTest, BadInputs) {
  Array x = Iota({4, 2});
  Array idx = I32({1, 2}, {2, 1});
  ExpectOpError<TypeError>([&] { lax::gather(x, Iota({2, 1}), TakeRows(), {1, 2}); }, "gather", {"f32[4,2]", "f32[2,1]"});
  ExpectOpError<ShapeError>([&] { lax::gather(x, Array::Scalar(1, int32), TakeRows(), {1, 2}); }, "gather",
                            {"f32[4,2]", "i32[]"});
  ExpectOpError<ShapeError>([&] { lax::gather(x, idx, GatherDimensionNumbers{{1}, {0}, {0, 1}}, {1, 2}); }, "gather",
                            {"start_index_map", "i32[2,1]"});
  ExpectOpError<ShapeError>([&] { lax::gather(x, idx, TakeRows(), {2, 2}); }, "gather", {"collapse", "f32[4,2]"});
  ExpectOpError<ShapeError>([&] { lax::gather(x, idx, TakeRows(), {1, 3}); }, "gather", {"slice size", "f32[4,2]"});
  ExpectOpError<ShapeError>([&] { lax::gather(x, idx, TakeRows(), {1}); }, "gather", {"slice_sizes"});
  ExpectOpError<ShapeError>([&] { lax::gather(x, idx, GatherDimensionNumbers{{1}, {}, {0}}, {1, 2}); }, "gather",
                            {"accounted"});
  ExpectOpError<ShapeError>([&] { lax::gather(x, idx, GatherDimensionNumbers{{3}, {0}, {0}}, {1, 2}); }, "gather",
                            {"offset_dims"});
  ExpectOpError<ShapeError>([&] { lax::gather(Iota({3, 2, 2}), I32({1, 0}, {2, 1}), GatherDimensionNumbers{{1}, {1}, {1}, {0}, {0}},
                                              {1, 1, 2}); },
                            "gather", {"batching"});
  EXPECT_EQ(lax::gather(x, idx, TakeRows(), {1, 2}).shape(), (Shape{2, 2}));
}

// ---------------------------------------------------------------------------------------
// scatter, scatter_add

ScatterDimensionNumbers Rows() { return ScatterDimensionNumbers{{1}, {0}, {0}}; }

TEST(ScatterTest, OverwriteDropAndClip) {
  Array x = Iota({3, 2});
  Array idx = I32({1, 5, 1, -1}, {4, 1});
  Array u = Vec<float>({10, 11, 20, 21, 30, 31, 40, 41}, {4, 2});
  // Duplicates: the last update wins; out-of-bounds rows are dropped.
  EXPECT_EQ(lax::scatter(x, idx, u, Rows()).to_vector<float>(), (std::vector<float>{0, 1, 30, 31, 4, 5}));
  EXPECT_EQ(lax::scatter(x, idx, u, Rows(), GatherScatterMode::kClip).to_vector<float>(),
            (std::vector<float>{40, 41, 30, 31, 20, 21}));
  EXPECT_EQ(lax::scatter_add(x, idx, u, Rows()).to_vector<float>(), (std::vector<float>{0, 1, 42, 45, 4, 5}));
  EXPECT_EQ(lax::scatter_add(x, idx, u, Rows(), GatherScatterMode::kClip).to_vector<float>(),
            (std::vector<float>{40, 42, 42, 45, 24, 26}));
  // A window only partly in bounds is dropped as a whole.
  Array v = Iota({5});
  Array w = lax::scatter(v, I32({4}, {1, 1}), Vec<float>({-1, -2}, {1, 2}), ScatterDimensionNumbers{{1}, {}, {0}});
  EXPECT_EQ(w.to_vector<float>(), v.to_vector<float>());
}

TEST(ScatterTest, AddSemanticsPerDType) {
  // bool adds are logical or.
  Array b = Bools({0, 1, 0});
  Array ib = I32({0, 0, 1}, {3, 1});
  Array ub = Bools({1, 1, 0});
  EXPECT_EQ(lax::scatter_add(b, ib, ub, ScatterDimensionNumbers{{}, {0}, {0}}).to_vector<int>(),
            (std::vector<int>{1, 1, 0}));
  // Integers wrap.
  Array i8 = Vec<int8_t>({120});
  Array u8 = Vec<int8_t>({5, 5});
  EXPECT_EQ(lax::scatter_add(i8, I32({0, 0}, {2, 1}), u8, ScatterDimensionNumbers{{}, {0}, {0}}).item<int>(), -126);
  // float16 sums round once: 2048 + 1 + 1 is 2050 (adding 1 at a time in f16 would stay 2048).
  Array h = Array::Scalar(2048, float16).reshape({1});
  Array hu = Array::Scalar(1, float16).reshape({1});
  hu = lax::concatenate({hu, hu}, 0);
  EXPECT_EQ(lax::scatter_add(h, I32({0, 0}, {2, 1}), hu, ScatterDimensionNumbers{{}, {0}, {0}}).item<float>(), 2050.f);
}

// The parallel paths split the output, never the updates: the result equals a serial float
// accumulation in update order, bit for bit.
TEST(ScatterTest, AddIsDeterministic) {
  std::mt19937_64 rng(7);
  for (int64_t width : {int64_t{8}, int64_t{4096}}) {
    const int64_t rows = 64, n = width == 8 ? 100000 : 40;
    std::vector<int32_t> idx(static_cast<size_t>(n));
    std::vector<float> upd(static_cast<size_t>(n * width));
    std::uniform_int_distribution<int32_t> pick(0, static_cast<int32_t>(rows - 1));
    std::uniform_real_distribution<float> val(-1, 1);
    for (auto& i : idx) i = pick(rng);
    for (auto& u : upd) u = val(rng);
    std::vector<float> want(static_cast<size_t>(rows * width), 0.f);
    for (int64_t k = 0; k < n; ++k) {
      for (int64_t c = 0; c < width; ++c) {
        want[static_cast<size_t>(idx[static_cast<size_t>(k)] * width + c)] += upd[static_cast<size_t>(k * width + c)];
      }
    }
    Array x = Array::FromData(std::vector<float>(want.size(), 0.f).data(), {rows, width}, float32);
    Array out = lax::scatter_add(x, I32(idx, {n, 1}), Vec<float>(upd, {n, width}), Rows());
    EXPECT_EQ(out.to_vector<float>(), want) << "width " << width;
    EXPECT_EQ(lax::scatter_add(x, I32(idx, {n, 1}), Vec<float>(upd, {n, width}), Rows()).to_vector<float>(),
              out.to_vector<float>());
  }
}

TEST(ScatterTest, PrintedParams) {
  auto log = Record([&] { lax::scatter_add(Iota({3}), I32({1}, {1, 1}), Iota({1}), ScatterDimensionNumbers{{}, {0}, {0}}); });
  ASSERT_EQ(log.size(), 1u);
  EXPECT_EQ(log[0],
            "scatter_add[dimension_numbers=ScatterDimensionNumbers(update_window_dims=(), inserted_window_dims=(0,), "
            "scatter_dims_to_operand_dims=(0,), operand_batching_dims=(), scatter_indices_batching_dims=()) "
            "indices_are_sorted=False mode=GatherScatterMode.FILL_OR_DROP unique_indices=False update_consts=() "
            "update_jaxpr=None]");
}

TEST(ScatterTest, BadInputs) {
  Array x = Iota({3, 2});
  Array idx = I32({1, 2}, {2, 1});
  ExpectOpError<TypeError>([&] { lax::scatter_add(x, idx, Iota({2, 2}, float64), Rows()); }, "scatter_add",
                           {"f32[3,2]", "f64[2,2]"});
  ExpectOpError<TypeError>([&] { lax::scatter(x, Iota({2, 1}), Iota({2, 2}), Rows()); }, "scatter",
                           {"f32[3,2]", "f32[2,1]"});
  ExpectOpError<ShapeError>([&] { lax::scatter_add(x, idx, Iota({3, 2}), Rows()); }, "scatter_add",
                            {"f32[3,2]", "i32[2,1]"});
  ExpectOpError<ShapeError>([&] { lax::scatter_add(x, idx, Iota({2, 3}), Rows()); }, "scatter_add", {"f32[2,3]"});
  ExpectOpError<ShapeError>([&] { lax::scatter_add(x, idx, Iota({2}), Rows()); }, "scatter_add", {"update_window_dims"});
  ExpectOpError<ShapeError>([&] { lax::scatter_add(x, idx, Iota({2, 2, 1}), Rows()); }, "scatter_add", {"rank"});
  ExpectOpError<ShapeError>([&] { lax::scatter_add(x, idx, Iota({2, 2}), ScatterDimensionNumbers{{1}, {0}, {0, 1}}); },
                            "scatter_add", {"scatter_dims_to_operand_dims"});
  ExpectOpError<ShapeError>([&] { lax::scatter_add(x, idx, Iota({2, 2}), ScatterDimensionNumbers{{1}, {}, {0}}); },
                            "scatter_add", {"operand rank"});
  EXPECT_EQ(lax::scatter_add(x, idx, Iota({2, 2}), Rows()).shape(), (Shape{3, 2}));
}

// ---------------------------------------------------------------------------------------
// Array members that are ops

TEST(ArrayMethodsTest, IndexReshapeTransposeAstype) {
  Array x = Iota({3, 2});
  EXPECT_EQ(x[1].to_vector<float>(), (std::vector<float>{2, 3}));
  EXPECT_EQ(x[-1].to_vector<float>(), (std::vector<float>{4, 5}));
  EXPECT_EQ(x[2][0].item<float>(), 4);
  EXPECT_EQ(x[2][0].ndim(), 0);
  auto log = Record([&] { (void)x[1]; });
  ASSERT_EQ(log.size(), 2u);
  EXPECT_EQ(log[0], "slice[limit_indices=(2, 2) start_indices=(1, 0) strides=None]");
  EXPECT_EQ(log[1], "squeeze[dimensions=(0,)]");
  // Out-of-bounds reads clamp, as JAX's (docs.jax.dev "Sharp bits": out-of-bounds indexing).
  EXPECT_EQ(x[3].to_vector<float>(), (std::vector<float>{4, 5}));
  EXPECT_EQ(x[-4].to_vector<float>(), (std::vector<float>{0, 1}));
  ExpectOpError<IndexError>([&] { (void)x[0][0][0]; }, "getitem", {"0-dimensional"});
  EXPECT_EQ(x.T().shape(), (Shape{2, 3}));
  EXPECT_EQ(x.T().to_vector<float>(), (std::vector<float>{0, 2, 4, 1, 3, 5}));
  Array row = x[0];
  EXPECT_EQ(row.T().impl(), row.impl());  // 1-D: the identity permutation returns the array
  EXPECT_EQ(x.reshape({-1}).shape(), (Shape{6}));
  EXPECT_EQ(x.reshape({2, -1}).shape(), (Shape{2, 3}));
  ExpectOpError<ShapeError>([&] { x.reshape({-1, -1}); }, "reshape", {"f32[3,2]"});
  ExpectOpError<ShapeError>([&] { x.reshape({4, -1}); }, "reshape", {"f32[3,2]"});
  ExpectOpError<ShapeError>([&] { x.reshape({4, 2}); }, "reshape", {"f32[3,2]"});
  Array i = x.astype(int32);
  EXPECT_EQ(i.dtype(), int32);
  EXPECT_EQ(i.to_vector<int>(), (std::vector<int>{0, 1, 2, 3, 4, 5}));
}

}  // namespace
}  // namespace jx::slicing_test
