// The kernel library's gather/scatter, reduction, window, sort and cumulative kernels called
// directly (lax/kernels/): what eager lax ops do not reach (scatter mul/min/max, window init
// values and and/or, descending sort, top_k's output stride, scan init values, signed integers
// on kernels shared with unsigned ones) against plain reference loops, with edge lengths
// around vector widths (1, 15, 16, 17, 33) and the line groups of the scans.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numeric>
#include <random>
#include <vector>

#include "jx/lax/kernels/cumulative.h"
#include "jx/lax/kernels/gather_scatter.h"
#include "jx/lax/kernels/reduction.h"
#include "jx/lax/kernels/sort.h"
#include "jx/lax/kernels/window.h"

namespace jx::lax::kernels::kernel_library_test {
namespace {

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

// XLA's max/min (the HLO evaluator's): NaN wins as the quiet NaN, -0 < +0.
float XlaMax(float a, float b) {
  if (std::isnan(a) || std::isnan(b)) return kNaN;
  if (a == b) return std::signbit(a) ? b : a;
  return a > b ? a : b;
}
float XlaMin(float a, float b) {
  if (std::isnan(a) || std::isnan(b)) return kNaN;
  if (a == b) return std::signbit(a) ? a : b;
  return a < b ? a : b;
}

bool SameBits(const std::vector<float>& a, const std::vector<float>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::bit_cast<uint32_t>(a[i]) != std::bit_cast<uint32_t>(b[i])) {
      ADD_FAILURE() << "element " << i << ": " << a[i] << " vs " << b[i];
      return false;
    }
  }
  return true;
}

// Rows of a [10, 3] f32 operand combined with 12 updates at indices with duplicates and
// out-of-bounds values, for every combiner; dropped (XLA) or clamped (JAX's CLIP).
TEST(KernelScatterTest, EveryCombinerWithDuplicatesAndOutOfBounds) {
  const std::vector<int64_t> xs = {10, 3}, us = {12, 3};
  const std::vector<int32_t> idx = {0, 3, 3, -1, 9, 10, 3, 0, 7, 100, -50, 9};
  std::vector<float> x(30), u(36);
  std::mt19937 rng(3);
  std::uniform_int_distribution<int> d(-4, 4);
  for (float& v : x) v = static_cast<float>(d(rng)) * 0.5f;
  for (float& v : u) v = static_cast<float>(d(rng)) * 0.5f;
  x[4] = -0.0f, u[4] = 0.0f, u[7] = kNaN, x[20] = kNaN;
  const ScatterDims dn{{1}, {0}, {0}};
  for (ScatterCombiner c : {ScatterCombiner::kOverwrite, ScatterCombiner::kAdd, ScatterCombiner::kMul,
                            ScatterCombiner::kMin, ScatterCombiner::kMax}) {
    for (bool clamp : {false, true}) {
      SCOPED_TRACE(::testing::Message() << "combiner " << static_cast<int>(c) << (clamp ? " clamp" : " drop"));
      std::vector<float> want = x, got = x;
      for (size_t k = 0; k < idx.size(); ++k) {
        int64_t r = idx[k];
        if (clamp) r = std::clamp<int64_t>(r, 0, 9);
        if (r < 0 || r > 9) continue;
        for (int j = 0; j < 3; ++j) {
          float& o = want[r * 3 + j];
          const float v = u[k * 3 + j];
          switch (c) {
            case ScatterCombiner::kOverwrite: o = v; break;
            case ScatterCombiner::kAdd: o = o + v; break;
            case ScatterCombiner::kMul: o = o * v; break;
            case ScatterCombiner::kMin: o = XlaMin(o, v); break;
            case ScatterCombiner::kMax: o = XlaMax(o, v); break;
          }
        }
      }
      Scatter(DType::kFloat32, c, got.data(), xs, {DType::kInt32, idx.data(), {12, 1}}, u.data(), us, dn, clamp);
      EXPECT_TRUE(SameBits(got, want));
    }
  }
}

TEST(KernelScatterTest, BoolAndIntegerCombiners) {
  // bool: add and max are or, mul and min are and; int8 add and mul wrap.
  const std::vector<int64_t> idx = {1, 1, 0};
  const ScatterDims dn{{}, {0}, {0}};
  std::vector<uint8_t> b = {1, 0}, bu = {1, 0, 0};
  std::vector<uint8_t> b_or = b, b_and = b;
  Scatter(DType::kBool, ScatterCombiner::kAdd, b_or.data(), {2}, {DType::kInt64, idx.data(), {3, 1}}, bu.data(), {3},
          dn, false);
  Scatter(DType::kBool, ScatterCombiner::kMin, b_and.data(), {2}, {DType::kInt64, idx.data(), {3, 1}}, bu.data(),
          {3}, dn, false);
  EXPECT_EQ(b_or, (std::vector<uint8_t>{1, 1}));
  EXPECT_EQ(b_and, (std::vector<uint8_t>{0, 0}));
  std::vector<int8_t> i = {100, 3}, iu = {100, 2, 27};
  std::vector<int8_t> sum = i, prod = i;
  Scatter(DType::kInt8, ScatterCombiner::kAdd, sum.data(), {2}, {DType::kInt64, idx.data(), {3, 1}}, iu.data(), {3},
          dn, false);
  Scatter(DType::kInt8, ScatterCombiner::kMul, prod.data(), {2}, {DType::kInt64, idx.data(), {3, 1}}, iu.data(), {3},
          dn, false);
  EXPECT_EQ(sum, (std::vector<int8_t>{127, 105}));
  EXPECT_EQ(prod, (std::vector<int8_t>{static_cast<int8_t>(2700), static_cast<int8_t>(600)}));
}

TEST(KernelGatherTest, ClampOrFillEdgeRowLengths) {
  for (int64_t w : {1, 15, 16, 17, 33}) {
    SCOPED_TRACE(::testing::Message() << "row length " << w);
    std::vector<float> x(5 * w);
    std::iota(x.begin(), x.end(), 0.f);
    const std::vector<int32_t> idx = {4, -1, 5, 0, 2};
    const GatherDims dn{{1}, {0}, {0}};
    std::vector<float> clamped(5 * w), filled(5 * w);
    Gather(4, x.data(), {5, w}, {DType::kInt32, idx.data(), {5, 1}}, dn, {1, w}, nullptr, clamped.data(), {5, w});
    const float fill = -7.f;
    Gather(4, x.data(), {5, w}, {DType::kInt32, idx.data(), {5, 1}}, dn, {1, w}, &fill, filled.data(), {5, w});
    for (int64_t b = 0; b < 5; ++b) {
      const int64_t r = std::clamp<int64_t>(idx[b], 0, 4);
      const bool in = idx[b] >= 0 && idx[b] <= 4;
      for (int64_t j = 0; j < w; ++j) {
        EXPECT_EQ(clamped[b * w + j], x[r * w + j]);
        EXPECT_EQ(filled[b * w + j], in ? x[r * w + j] : fill);
      }
    }
  }
}

TEST(KernelWindowTest, XlaMaxMinInitAndEdgeLengths) {
  for (int64_t n : {1, 15, 16, 17, 33}) {
    for (WindowReducer op : {WindowReducer::kMax, WindowReducer::kMin}) {
      SCOPED_TRACE(::testing::Message() << "n " << n << " op " << static_cast<int>(op));
      // A window of 3, stride 1, padding 1 on both sides over n elements; init 0.25.
      std::vector<float> x(n);
      std::mt19937 rng(static_cast<uint32_t>(n));
      std::uniform_int_distribution<int> d(-2, 2);
      for (float& v : x) v = static_cast<float>(d(rng)) * 0.25f;
      for (int64_t i = 0; i < n; i += 4) x[i] = (i / 4) % 2 ? -0.0f : 0.0f;
      if (n > 5) x[5] = kNaN;
      const float init = 0.25f;
      std::vector<float> got(n), want(n);
      ReduceWindow(DType::kFloat32, op, x.data(), {{n, n, 3, 1, 1, 1, 1, 1}}, &init, got.data());
      for (int64_t o = 0; o < n; ++o) {
        float acc = init;
        for (int64_t k = 0; k < 3; ++k) {
          const int64_t i = o + k - 1;
          if (i < 0 || i >= n) continue;
          acc = op == WindowReducer::kMax ? XlaMax(acc, x[i]) : XlaMin(acc, x[i]);
        }
        want[o] = acc;
      }
      EXPECT_TRUE(SameBits(got, want));
    }
  }
}

TEST(KernelWindowTest, IntegerAndOrAndBoolReducers) {
  const std::vector<int32_t> x = {0b1100, 0b1010, 0b0110, 0b0001};
  std::vector<int32_t> a(3), o(3);
  ReduceWindow(DType::kInt32, WindowReducer::kAnd, x.data(), {{4, 3, 2}}, nullptr, a.data());
  ReduceWindow(DType::kInt32, WindowReducer::kOr, x.data(), {{4, 3, 2}}, nullptr, o.data());
  EXPECT_EQ(a, (std::vector<int32_t>{0b1000, 0b0010, 0b0000}));
  EXPECT_EQ(o, (std::vector<int32_t>{0b1110, 0b1110, 0b0111}));
  const std::vector<uint8_t> b = {1, 0, 0, 1};
  std::vector<uint8_t> any(3), all(3);
  ReduceWindow(DType::kBool, WindowReducer::kSum, b.data(), {{4, 3, 2}}, nullptr, any.data());
  ReduceWindow(DType::kBool, WindowReducer::kProd, b.data(), {{4, 3, 2}}, nullptr, all.data());
  EXPECT_EQ(any, (std::vector<uint8_t>{1, 0, 1}));
  EXPECT_EQ(all, (std::vector<uint8_t>{0, 0, 0}));
  EXPECT_FALSE(WindowReducerAccepts(WindowReducer::kAnd, DType::kFloat32));
}

// Signed integers run their unsigned counterpart's kernels where the bits agree (wrapping
// sums and products, and/or: reducer.h's SharedElement), while max and min must still order
// them as signed. Each family (reduction, window, scan) against a fold in T, from the
// identity, on values of both signs that overflow T.
template <typename T>
T Fold(int op, T a, T b) {
  using U = std::make_unsigned_t<T>;
  switch (op) {
    case 0: return static_cast<T>(static_cast<U>(static_cast<U>(a) + static_cast<U>(b)));
    case 1: return static_cast<T>(static_cast<U>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b)));
    case 2: return std::max(a, b);
    case 3: return std::min(a, b);
    case 4: return static_cast<T>(a & b);
    default: return static_cast<T>(a | b);
  }
}

template <typename T>
void ExpectSignedReducersMatchFolds(DType dtype) {
  constexpr int64_t n = 17, taps = 3;
  std::vector<T> x(n);
  for (int64_t i = 0; i < n; ++i) x[i] = static_cast<T>(0x9E3779B97F4A7C15ull * static_cast<uint64_t>(i + 1));
  const T identity[] = {0, 1, std::numeric_limits<T>::lowest(), std::numeric_limits<T>::max(), T(-1), 0};
  for (int op = 0; op < 6; ++op) {
    SCOPED_TRACE(::testing::Message() << dtype << " op " << op);
    T total = identity[op];
    std::vector<T> scan(n);
    for (int64_t i = 0; i < n; ++i) scan[i] = total = Fold(op, total, x[i]);
    T reduced = 0;
    Reduce(static_cast<ReduceOp>(op), dtype, {n}, {0}, x.data(), &reduced);
    EXPECT_EQ(reduced, total);
    std::vector<T> window(n - taps + 1), want(n - taps + 1);
    ReduceWindow(dtype, static_cast<WindowReducer>(op), x.data(), {{n, n - taps + 1, taps}}, nullptr, window.data());
    for (int64_t o = 0; o + taps <= n; ++o) {
      want[o] = identity[op];
      for (int64_t k = 0; k < taps; ++k) want[o] = Fold(op, want[o], x[o + k]);
    }
    EXPECT_EQ(window, want);
    if (op < 4) {
      std::vector<T> got(n);
      Cumulative(dtype, static_cast<CumulativeOp>(op), x.data(), got.data(), 1, n, 1, false, nullptr);
      EXPECT_EQ(got, scan);
    }
  }
}

TEST(KernelSignedIntegerTest, EveryFamilyWrapsAndOrdersAsSigned) {
  ExpectSignedReducersMatchFolds<int8_t>(DType::kInt8);
  ExpectSignedReducersMatchFolds<int16_t>(DType::kInt16);
  ExpectSignedReducersMatchFolds<int32_t>(DType::kInt32);
  ExpectSignedReducersMatchFolds<int64_t>(DType::kInt64);
}

TEST(KernelSortTest, DescendingIsStableAndTopKWritesWithAStride) {
  const std::vector<float> x = {1, 3, 3, -0.0f, 0.0f, kNaN, 3, -1};
  std::vector<int32_t> pos(8);
  std::iota(pos.begin(), pos.end(), 0);
  std::vector<float> xs(8);
  std::vector<int32_t> ps(8);
  const SortOperand ops[] = {{DType::kFloat32, x.data(), xs.data()}, {DType::kInt32, pos.data(), ps.data()}};
  Sort(ops, {8}, 0, 1, /*descending=*/true);
  // Total order descending: NaN, 3 (positions 1, 2, 6 in order), 1, +0, -0, -1.
  EXPECT_EQ(ps, (std::vector<int32_t>{5, 1, 2, 6, 0, 4, 3, 7}));
  std::vector<float> values(2 * 5, 9.f);
  std::vector<int32_t> indices(2 * 5, 9);
  const std::vector<float> rows = {1, 3, 3, -0.0f, 0.0f, 5, 4, 4, 4, 6};
  TopK(DType::kFloat32, rows.data(), values.data(), indices.data(), 2, 5, 3, /*out_row_stride=*/5);
  EXPECT_EQ(indices, (std::vector<int32_t>{1, 2, 0, 9, 9, 4, 0, 1, 9, 9}));
  EXPECT_EQ(values[5], 6.f);
}

// Scans of O lines of n contiguous elements (lines advance in groups of 4; O around that),
// from an init value, against a sequential fold per line.
TEST(KernelCumulativeTest, LineGroupsInitsAndEdgeLengths) {
  for (int64_t lines : {1, 3, 4, 5, 9}) {
    for (int64_t n : {1, 15, 16, 17, 33}) {
      for (bool reverse : {false, true}) {
        SCOPED_TRACE(::testing::Message() << lines << " lines of " << n << (reverse ? " reversed" : ""));
        std::vector<float> x(lines * n);
        std::mt19937 rng(static_cast<uint32_t>(lines * 100 + n));
        std::normal_distribution<float> d;
        for (float& v : x) v = d(rng);
        if (x.size() > 7) x[7] = kNaN;
        const float init = 0.5f;
        std::vector<float> sum(x.size()), mx(x.size()), want_sum(x.size()), want_max(x.size());
        Cumulative(DType::kFloat32, CumulativeOp::kSum, x.data(), sum.data(), lines, n, 1, reverse, &init);
        Cumulative(DType::kFloat32, CumulativeOp::kMax, x.data(), mx.data(), lines, n, 1, reverse, &init);
        for (int64_t o = 0; o < lines; ++o) {
          double s = init;
          float m = init;
          for (int64_t j = 0; j < n; ++j) {
            const int64_t k = o * n + (reverse ? n - 1 - j : j);
            s += x[k];
            m = XlaMax(m, x[k]);
            want_sum[k] = static_cast<float>(s);
            want_max[k] = m;
          }
        }
        EXPECT_TRUE(SameBits(sum, want_sum));
        EXPECT_TRUE(SameBits(mx, want_max));
      }
    }
  }
  EXPECT_FALSE(CumulativeAccepts(CumulativeOp::kLogSumExp, DType::kInt32));
  EXPECT_FALSE(CumulativeAccepts(CumulativeOp::kSum, DType::kBool));
}

}  // namespace
}  // namespace jx::lax::kernels::kernel_library_test
