// Focused tests of the shape primitives: values, params, identity shortcuts, the kernels'
// fast paths (row copies, tiles, replicated blocks, buffer sharing) and bad inputs.
#include <cmath>
#include <numeric>

#include <gtest/gtest.h>

#include <jx/core/interpreter.h>
#include <jx/jx.h>

namespace jx::shape_test {
namespace {

Array Arange(int64_t n, DType dtype = float32) {
  Array out = Array::Empty(Shape{n}, dtype);
  for (int64_t i = 0; i < n; ++i) StoreFromDouble(dtype, out.mutable_data(), i, static_cast<double>(i));
  return out;
}

Array ArangeShaped(const Shape& shape, DType dtype = float32) {
  Array out = Array::Empty(shape, dtype);
  for (int64_t i = 0; i < out.size(); ++i) StoreFromDouble(dtype, out.mutable_data(), i, static_cast<double>(i % 1000));
  return out;
}

// Naive transpose reference on doubles.
std::vector<double> NaiveTranspose(const std::vector<double>& x, const Shape& shape, const std::vector<int64_t>& perm) {
  const std::vector<int64_t> in_strides = RowMajorStrides(shape);
  Shape out_shape;
  for (int64_t a : perm) out_shape.push_back(shape[static_cast<size_t>(a)]);
  std::vector<double> out(x.size());
  std::vector<int64_t> idx(out_shape.size(), 0);
  for (size_t flat = 0; flat < out.size(); ++flat) {
    int64_t rem = static_cast<int64_t>(flat), src = 0;
    for (size_t j = out_shape.size(); j-- > 0;) {
      idx[j] = rem % out_shape[j];
      rem /= out_shape[j];
      src += idx[j] * in_strides[static_cast<size_t>(perm[j])];
    }
    out[flat] = x[static_cast<size_t>(src)];
  }
  return out;
}

template <typename F>
void ExpectOpError(F&& f, const std::string& op, const std::vector<std::string>& needles) {
  try {
    f();
    ADD_FAILURE() << "expected an error from " << op;
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("[" + op + "]"), std::string::npos) << msg;
    for (const std::string& n : needles) EXPECT_NE(msg.find(n), std::string::npos) << "missing '" << n << "' in: " << msg;
  }
}

TEST(BroadcastInDimTest, Values) {
  Array x = Arange(3);
  Array y = lax::broadcast_in_dim(x, {2, 3}, {1});
  EXPECT_EQ(y.shape(), (Shape{2, 3}));
  EXPECT_EQ(y.to_vector<float>(), (std::vector<float>{0, 1, 2, 0, 1, 2}));
  Array z = lax::broadcast_in_dim(x, {3, 2}, {0});
  EXPECT_EQ(z.to_vector<float>(), (std::vector<float>{0, 0, 1, 1, 2, 2}));
  // Size-1 operand dims broadcast too.
  Array c = lax::broadcast_in_dim(lax::reshape(x, {3, 1}), {2, 3, 4}, {1, 2});
  std::vector<float> want;
  for (int a = 0; a < 2; ++a)
    for (int b = 0; b < 3; ++b)
      for (int k = 0; k < 4; ++k) want.push_back(static_cast<float>(b));
  EXPECT_EQ(c.to_vector<float>(), want);
  // Scalars fill.
  Array s = lax::broadcast_in_dim(Array::Scalar(7, int8), {100000}, {});
  EXPECT_EQ(s.dtype(), int8);
  auto sv = s.to_vector<int>();
  EXPECT_TRUE(std::all_of(sv.begin(), sv.end(), [](int v) { return v == 7; }));
  // Empty outputs.
  EXPECT_EQ(lax::broadcast_in_dim(x, {0, 3}, {1}).size(), 0);
}

TEST(BroadcastInDimTest, LargeParallelMatchesNaive) {
  // [N, 1, D] -> [N, M, D] plus a leading replicated dim: exercises rows and ReplicateBlock.
  const int64_t n = 7, m = 50, d = 333;
  Array x = ArangeShaped({n, 1, d}, float64);
  Array y = lax::broadcast_in_dim(x, {3, n, m, d}, {1, 2, 3});
  const auto xv = x.to_vector<double>();
  const auto yv = y.to_vector<double>();
  for (int64_t r = 0; r < 3; ++r)
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < m; ++j)
        for (int64_t k = 0; k < d; ++k)
          ASSERT_EQ(yv[static_cast<size_t>(((r * n + i) * m + j) * d + k)], xv[static_cast<size_t>(i * d + k)]);
}

TEST(BroadcastInDimTest, KeepsWeakType) {
  Array w(2.5);
  EXPECT_TRUE(lax::broadcast_in_dim(w, {3}, {}).weak_type());
}

TEST(BroadcastInDimTest, BadInputs) {
  Array x = Arange(3);
  ExpectOpError([&] { lax::broadcast_in_dim(x, {2, 4}, {1}); }, "broadcast_in_dim", {"f32[3]", "(2, 4)"});
  ExpectOpError([&] { lax::broadcast_in_dim(x, {3, 3}, {0, 1}); }, "broadcast_in_dim", {"f32[3]", "(0, 1)"});
  ExpectOpError([&] { lax::broadcast_in_dim(x, {3}, {1}); }, "broadcast_in_dim", {"f32[3]"});
  ExpectOpError([&] { lax::broadcast_in_dim(lax::reshape(x, {1, 3}), {3, 3}, {1, 0}); }, "broadcast_in_dim",
                {"strictly increasing"});
  ExpectOpError([&] { lax::broadcast_in_dim(x, {-1, 3}, {1}); }, "broadcast_in_dim", {"nonnegative"});
  EXPECT_THROW(lax::broadcast_in_dim(x, {2, 4}, {1}), ShapeError);
  EXPECT_EQ(lax::broadcast_in_dim(x, {2, 3}, {1}).size(), 6);  // still works after an error
}

TEST(ReshapeTest, ValuesAndSharing) {
  Array x = Arange(6);
  Array y = lax::reshape(x, {2, 3});
  EXPECT_EQ(y.shape(), (Shape{2, 3}));
  EXPECT_EQ(y.to_vector<float>(), x.to_vector<float>());
  EXPECT_EQ(y.data(), x.data());  // no copy
  EXPECT_EQ(lax::reshape(y, {2, 3}).impl(), y.impl());  // identity returns the operand
  // With dimensions: transpose first.
  Array z = lax::reshape(y, {6}, {1, 0});
  EXPECT_EQ(z.to_vector<float>(), (std::vector<float>{0, 3, 1, 4, 2, 5}));
  EXPECT_EQ(lax::reshape(Array::Scalar(3, int32), {1, 1}).shape(), (Shape{1, 1}));
  EXPECT_EQ(lax::reshape(Arange(0), {0, 5}).shape(), (Shape{0, 5}));
}

TEST(ReshapeTest, BadInputs) {
  Array x = Arange(6);
  ExpectOpError([&] { lax::reshape(x, {4, 2}); }, "reshape", {"f32[6]", "(4, 2)"});
  ExpectOpError([&] { lax::reshape(x, {-1, 6}); }, "reshape", {"nonnegative"});
  ExpectOpError([&] { lax::reshape(lax::reshape(x, {2, 3}), {6}, {0, 0}); }, "reshape", {"f32[2,3]"});
  EXPECT_THROW(lax::reshape(x, {4, 2}), ShapeError);
  EXPECT_EQ(lax::reshape(x, {3, 2}).shape(), (Shape{3, 2}));
}

struct TransposeCase {
  Shape shape;
  std::vector<int64_t> perm;
};

TEST(TransposeTest, MatchesNaive) {
  const std::vector<TransposeCase> cases = {
      {{2, 3}, {1, 0}},
      {{1, 1}, {1, 0}},
      {{2, 3, 4}, {2, 0, 1}},
      {{2, 3, 4}, {1, 0, 2}},        // last axis kept: row copies
      {{2, 3, 4}, {0, 2, 1}},
      {{5, 1, 7}, {2, 1, 0}},
      {{100, 67}, {1, 0}},           // partial tiles
      {{300, 257}, {1, 0}},          // parallel
      {{3, 40, 50, 2}, {3, 2, 1, 0}},
      {{4, 3, 5, 6, 2}, {4, 0, 3, 1, 2}},
      {{2, 3, 4, 5}, {2, 3, 0, 1}},  // merges into a 2-D transpose
      {{0, 3}, {1, 0}},
  };
  for (DType d : {float32, float64, int8, bfloat16, uint16, bool_}) {
    for (const TransposeCase& c : cases) {
      Array x = ArangeShaped(c.shape, d);
      if (IsBool(d)) {
        for (int64_t i = 0; i < x.size(); ++i) StoreFromDouble(d, x.mutable_data(), i, (i * 7) % 3 == 0);
      }
      Array y = lax::transpose(x, c.perm);
      Shape want_shape;
      for (int64_t a : c.perm) want_shape.push_back(c.shape[static_cast<size_t>(a)]);
      ASSERT_EQ(y.shape(), want_shape);
      EXPECT_EQ(y.dtype(), d);
      EXPECT_EQ(y.to_vector<double>(), NaiveTranspose(x.to_vector<double>(), c.shape, c.perm))
          << dtype_name(d) << " " << ShapeToString(c.shape) << " perm " << ShapeToString(c.perm);
    }
  }
}

TEST(TransposeTest, IdentityAndBadInputs) {
  Array x = ArangeShaped({2, 3});
  EXPECT_EQ(lax::transpose(x, {0, 1}).impl(), x.impl());
  ExpectOpError([&] { lax::transpose(x, {0, 0}); }, "transpose", {"f32[2,3]", "(0, 0)"});
  ExpectOpError([&] { lax::transpose(x, {0}); }, "transpose", {"f32[2,3]", "(0,)"});
  ExpectOpError([&] { lax::transpose(x, {0, 2}); }, "transpose", {"f32[2,3]", "(0, 2)"});
  EXPECT_THROW(lax::transpose(x, {1, 1}), ShapeError);
  EXPECT_EQ(lax::transpose(x, {1, 0}).shape(), (Shape{3, 2}));
}

// Records each bound primitive with its printed params.
class RecordingInterpreter : public Interpreter {
 public:
  Arrays Process(Primitive p, absl::Span<const Array> inputs, const ParamMap& params) override {
    log.push_back(StrCat(p.name(), "[", params.ToString(), "]"));
    return EvalPrimitive(p, inputs, params);
  }
  std::string name() const override { return "record"; }
  std::vector<std::string> log;
};

TEST(ShapeOpsTest, PrintedParams) {
  RecordingInterpreter rec;
  {
    InterpreterScope scope(&rec);
    Array x = Arange(6);
    lax::broadcast_in_dim(x, {2, 6}, {1});
    lax::reshape(x, {2, 3});
    lax::transpose(lax::reshape(x, {2, 3}), {1, 0});
    lax::broadcasted_iota(int32, {2, 3}, 1);
    lax::squeeze(lax::reshape(x, {1, 6}), {0});
    lax::rev(x, {0});
  }
  const std::vector<std::string> want = {
      "broadcast_in_dim[broadcast_dimensions=(1,) shape=(2, 6) sharding=None]",
      "reshape[dimensions=None new_sizes=(2, 3) sharding=None]",
      "reshape[dimensions=None new_sizes=(2, 3) sharding=None]",
      "transpose[permutation=(1, 0)]",
      "iota[dimension=1 dtype=int32 shape=(2, 3) sharding=None]",
      "reshape[dimensions=None new_sizes=(1, 6) sharding=None]",
      "squeeze[dimensions=(0,)]",
      "rev[dimensions=(0,)]"};
  EXPECT_EQ(rec.log, want);
}

TEST(ShapeOpsTest, SqueezeExpandDimsRevIotaCopy) {
  Array x = ArangeShaped({2, 1, 3});
  Array s = lax::squeeze(x, {-2});
  EXPECT_EQ(s.shape(), (Shape{2, 3}));
  EXPECT_EQ(s.data(), x.data());  // shares the buffer
  EXPECT_EQ(lax::expand_dims(s, {0, -1}).shape(), (Shape{1, 2, 3, 1}));
  EXPECT_EQ(lax::rev(s, {1}).to_vector<float>(), (std::vector<float>{2, 1, 0, 5, 4, 3}));
  EXPECT_EQ(lax::rev(s, {0, 1}).to_vector<float>(), (std::vector<float>{5, 4, 3, 2, 1, 0}));
  EXPECT_EQ(lax::iota(int8, 4).to_vector<int>(), (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(lax::broadcasted_iota(float32, {2, 3}, 0).to_vector<float>(), (std::vector<float>{0, 0, 0, 1, 1, 1}));
  Array c = lax::copy(s);
  EXPECT_NE(c.data(), s.data());
  EXPECT_EQ(c.to_vector<float>(), s.to_vector<float>());
}

TEST(ShapeOpsTest, BadInputs) {
  Array x = ArangeShaped({2, 1, 3});
  ExpectOpError([&] { lax::squeeze(x, {0}); }, "squeeze", {"f32[2,1,3]", "(0,)"});
  ExpectOpError([&] { lax::squeeze(x, {3}); }, "squeeze", {"out of bounds"});
  ExpectOpError([&] { lax::squeeze(x, {1, -2}); }, "squeeze", {"f32[2,1,3]", "unique"});
  ExpectOpError([&] { lax::expand_dims(x, {0, 0}); }, "expand_dims", {"f32[2,1,3]", "unique"});
  ExpectOpError([&] { lax::expand_dims(x, {5}); }, "expand_dims", {"out of bounds"});
  ExpectOpError([&] { lax::rev(x, {3}); }, "rev", {"f32[2,1,3]", "(3,)"});
  ExpectOpError([&] { lax::rev(x, {0, 0}); }, "rev", {"f32[2,1,3]", "unique"});
  ExpectOpError([&] { lax::broadcasted_iota(int32, {2, 3}, 2); }, "iota", {"(2, 3)", "int32"});
  ExpectOpError([&] { lax::iota(bool_, 3); }, "iota", {"bool"});
  ExpectOpError([&] { lax::iota(int32, -1); }, "iota", {"nonnegative"});
  EXPECT_THROW(lax::iota(bool_, 3), TypeError);
  EXPECT_THROW(lax::squeeze(x, {0}), ShapeError);
  EXPECT_EQ(lax::squeeze(x, {1}).shape(), (Shape{2, 3}));
}

}  // namespace
}  // namespace jx::shape_test
