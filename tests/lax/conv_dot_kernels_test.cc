// The kernel library's convolution and dot_general entry points (what eager and the CPU
// backend both call): the output epilogue sees every element exactly once, after its final
// value is written, on every convolution path and GEMM split; results do not depend on
// whether an epilogue is attached nor on the thread count; inconsistent arguments throw
// naming the shapes.
#include <gtest/gtest.h>
#include <jx/jx.h>

#include <atomic>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "jx/core/parallel.h"
#include "jx/lax/kernels/convolution.h"
#include "jx/lax/kernels/dot_general.h"

namespace jx::conv_dot_kernels_test {
namespace {

namespace kernels = lax::kernels;

std::vector<uint8_t> RandomBytes(int64_t elements, DType dtype, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(-1, 1);
  Array a = Array::Empty({elements}, dtype);
  for (int64_t i = 0; i < elements; ++i) StoreFromDouble(dtype, a.mutable_data(), i, IsFloating(dtype) ? u(rng) : 3 * u(rng));
  const auto* p = static_cast<const uint8_t*>(a.data());
  return std::vector<uint8_t>(p, p + a.nbytes());
}

int64_t Elements(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

// Counts epilogue calls per element and checks each sees its final value (by comparing with
// a run without epilogue afterwards).
struct EpilogueProbe {
  explicit EpilogueProbe(int64_t n, int64_t esize) : calls(static_cast<size_t>(n)), seen(n * esize), esize(esize) {}
  kernels::OutputEpilogue Make(const void* out) {
    return [this, out](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) calls[static_cast<size_t>(i)].fetch_add(1);
      std::memcpy(seen.data() + begin * esize, static_cast<const uint8_t*>(out) + begin * esize,
                  static_cast<size_t>((end - begin) * esize));
    };
  }
  std::vector<std::atomic<int>> calls;
  std::vector<uint8_t> seen;
  int64_t esize;
};

struct ConvCase {
  std::string name;
  std::vector<int64_t> lhs, rhs, out, lhs_spec, rhs_spec, out_spec, strides, pad_lo, pad_hi;
  int64_t feature_groups = 1, batch_groups = 1;
};

std::vector<ConvCase> Cases() {
  const std::vector<int64_t> nhwc = {0, 3, 1, 2}, hwio = {3, 2, 0, 1}, nchw = {0, 1, 2, 3}, oihw = {0, 1, 2, 3};
  return {
      {"NHWC tiled", {2, 30, 30, 16}, {3, 3, 16, 8}, {2, 30, 30, 8}, nhwc, hwio, nhwc, {1, 1}, {1, 1}, {1, 1}},
      {"NHWC whole", {1, 6, 6, 4}, {3, 3, 4, 5}, {1, 6, 6, 5}, nhwc, hwio, nhwc, {1, 1}, {1, 1}, {1, 1}},
      {"NHWC 1x1", {2, 9, 9, 8}, {1, 1, 8, 6}, {2, 9, 9, 6}, nhwc, hwio, nhwc, {1, 1}, {0, 0}, {0, 0}},
      {"NHWC depthwise", {2, 40, 40, 8}, {3, 3, 1, 8}, {2, 40, 40, 8}, nhwc, hwio, nhwc, {1, 1}, {1, 1}, {1, 1}, 8},
      {"NHWC groups tiled", {2, 30, 30, 8}, {3, 3, 4, 6}, {2, 30, 30, 6}, nhwc, hwio, nhwc, {1, 1}, {1, 1}, {1, 1},
       2},
      {"NCHW tiled", {4, 8, 29, 29}, {6, 8, 3, 3}, {4, 6, 29, 29}, nchw, oihw, nchw, {1, 1}, {1, 1}, {1, 1}},
      {"NCHW whole, small images", {3, 2, 5, 5}, {4, 2, 3, 3}, {3, 4, 5, 5}, nchw, oihw, nchw, {1, 1}, {1, 1}, {1, 1}},
      {"NCHW 1x1", {2, 8, 9, 9}, {6, 8, 1, 1}, {2, 6, 9, 9}, nchw, oihw, nchw, {1, 1}, {0, 0}, {0, 0}},
      {"NCHW batch groups", {4, 4, 20, 20}, {6, 4, 3, 3}, {2, 6, 20, 20}, nchw, oihw, nchw, {1, 1}, {1, 1}, {1, 1}, 1,
       2},
      {"NHWC in, NCHW out", {2, 10, 10, 3}, {3, 3, 3, 4}, {2, 4, 10, 10}, nhwc, hwio, nchw, {1, 1}, {1, 1}, {1, 1}},
      // The rhs transpose of an NHWC convolution (its weight gradient): lhs [n, h, w, c] with c
      // the batch, rhs [n, h, w, f], out HWIO.
      {"weight gradient", {2, 9, 8, 5}, {2, 9, 8, 6}, {3, 3, 5, 6}, {3, 0, 1, 2}, {3, 0, 1, 2}, {2, 3, 0, 1}, {1, 1},
       {1, 1}, {1, 1}},
  };
}

kernels::ConvArgs Args(const ConvCase& c, DType dtype) {
  static const std::vector<int64_t> ones = {1, 1};
  kernels::ConvArgs a;
  a.lhs_dtype = a.rhs_dtype = a.out_dtype = dtype;
  a.lhs_shape = c.lhs;
  a.rhs_shape = c.rhs;
  a.out_shape = c.out;
  a.lhs_spec = c.lhs_spec;
  a.rhs_spec = c.rhs_spec;
  a.out_spec = c.out_spec;
  a.window_strides = c.strides;
  a.padding_low = c.pad_lo;
  a.padding_high = c.pad_hi;
  a.lhs_dilation = ones;
  a.rhs_dilation = ones;
  a.feature_group_count = c.feature_groups;
  a.batch_group_count = c.batch_groups;
  return a;
}

TEST(ConvKernelLibraryTest, EpilogueSeesEveryFinalElementOnceOnEveryPath) {
  for (const ConvCase& c : Cases()) {
    for (DType dtype : {float32, bfloat16, int32}) {
      SCOPED_TRACE(StrCat(c.name, " ", dtype_name(dtype)));
      const std::vector<uint8_t> lhs = RandomBytes(Elements(c.lhs), dtype, 1), rhs = RandomBytes(Elements(c.rhs), dtype, 2);
      const int64_t n = Elements(c.out), esize = ItemSize(dtype);
      std::vector<uint8_t> plain(n * esize), fused(n * esize);
      kernels::ConvArgs a = Args(c, dtype);
      a.lhs = lhs.data();
      a.rhs = rhs.data();
      a.out = plain.data();
      kernels::ConvGeneralDilated(a);
      EpilogueProbe probe(n, esize);
      a.out = fused.data();
      a.epilogue = probe.Make(fused.data());
      kernels::ConvGeneralDilated(a);
      EXPECT_EQ(fused, plain) << "the epilogue changed the convolution";
      EXPECT_EQ(probe.seen, plain) << "the epilogue saw values before they were final";
      int64_t wrong = 0;
      for (const auto& k : probe.calls) wrong += k.load() != 1;
      EXPECT_EQ(wrong, 0) << "elements not seen exactly once";
    }
  }
}

TEST(DotKernelLibraryTest, EpilogueSeesEveryFinalElementOnce) {
  struct Case {
    std::vector<int64_t> lhs, rhs, out, lc, rc, lb, rb;
  };
  const Case cases[] = {
      {{300, 200}, {200, 150}, {300, 150}, {1}, {0}, {}, {}},    // split over threads
      {{20, 700}, {700, 600}, {20, 600}, {1}, {0}, {}, {}},      // split into column blocks
      {{3, 17, 9}, {3, 9, 5}, {3, 17, 5}, {2}, {1}, {0}, {0}},   // small batched
      {{5, 0}, {0, 4}, {5, 4}, {1}, {0}, {}, {}},                // empty contraction: zeros
  };
  for (const Case& c : cases) {
    for (DType dtype : {float32, bfloat16, float16, int8, int64}) {
      SCOPED_TRACE(StrCat(dtype_name(dtype), " ", Elements(c.out)));
      const std::vector<uint8_t> lhs = RandomBytes(Elements(c.lhs), dtype, 3), rhs = RandomBytes(Elements(c.rhs), dtype, 4);
      const int64_t n = Elements(c.out), esize = ItemSize(dtype);
      std::vector<uint8_t> plain(n * esize, 0xAB), fused(n * esize, 0xCD);
      kernels::DotGeneralArgs d;
      d.lhs_dtype = d.rhs_dtype = d.out_dtype = dtype;
      d.lhs_shape = c.lhs;
      d.rhs_shape = c.rhs;
      d.lhs_contracting_dims = c.lc;
      d.rhs_contracting_dims = c.rc;
      d.lhs_batch_dims = c.lb;
      d.rhs_batch_dims = c.rb;
      d.lhs = lhs.data();
      d.rhs = rhs.data();
      d.out = plain.data();
      kernels::DotGeneral(d);
      EpilogueProbe probe(n, esize);
      d.out = fused.data();
      d.epilogue = probe.Make(fused.data());
      kernels::DotGeneral(d);
      EXPECT_EQ(fused, plain);
      EXPECT_EQ(probe.seen, plain);
      int64_t wrong = 0;
      for (const auto& k : probe.calls) wrong += k.load() != 1;
      EXPECT_EQ(wrong, 0);
    }
  }
}

// A product split into blocks over the pool gives the bits of the unsplit product (blocks
// start at multiples of Eigen's register panels), so results do not depend on the thread
// count. Row splits (m >= n) and column splits, with tails.
TEST(GemmTest, SplitProductEqualsUnsplitProduct) {
  if (NumThreads() < 2) GTEST_SKIP() << "needs a pool of 2 or more threads to split";
  const int64_t dims[][3] = {{301, 203, 301}, {20, 700, 600}, {97, 50, 300}, {130, 784, 70},
                             {1000, 64, 49},  {777, 333, 555}, {33, 17, 2048}, {100, 300, 40}, {20, 500, 100}};
  for (DType dtype : {float32, float64}) {
    for (const auto& d : dims) {
      SCOPED_TRACE(StrCat(dtype_name(dtype), " ", d[0], "x", d[1], "x", d[2]));
      const int64_t m = d[0], k = d[1], n = d[2], esize = ItemSize(dtype);
      const std::vector<uint8_t> a = RandomBytes(m * k, dtype, 5), b = RandomBytes(k * n, dtype, 6);
      std::vector<uint8_t> split(m * n * esize), whole(m * n * esize);
      kernels::GemmArgs g;
      g.dtype = dtype;
      g.m = m;
      g.n = n;
      g.k = k;
      g.a = a.data();
      g.lda = k;
      g.b = b.data();
      g.ldb = n;
      g.ldc = n;
      g.c = split.data();
      std::atomic<int> blocks = 0;
      g.on_block = [&](int64_t, int64_t, int64_t, int64_t, int64_t) { blocks.fetch_add(1); };
      kernels::Gemm(g);
      EXPECT_GT(blocks.load(), 1) << "the product was not split";
      g.on_block = nullptr;
      g.parallel = false;
      g.c = whole.data();
      kernels::Gemm(g);
      EXPECT_EQ(split, whole);
    }
  }
}

TEST(ConvKernelLibraryTest, InconsistentArgumentsThrowNamingShapes) {
  ConvCase c = Cases()[0];
  c.rhs = {3, 3, 15, 8};  // 15 input features for a 16-feature lhs
  std::vector<uint8_t> buf(1 << 20);
  kernels::ConvArgs a = Args(c, float32);
  a.lhs = a.rhs = buf.data();
  a.out = buf.data();
  try {
    kernels::ConvGeneralDilated(a);
    ADD_FAILURE() << "no error";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("lhs float32[2,30,30,16], rhs float32[3,3,15,8]"), std::string::npos)
        << e.what();
  }
  c = Cases()[0];
  c.strides = {1};  // one stride for two spatial dims
  a = Args(c, float32);
  a.lhs = a.rhs = buf.data();
  a.out = buf.data();
  EXPECT_THROW(kernels::ConvGeneralDilated(a), ValueError);
}

TEST(DotKernelLibraryTest, InconsistentArgumentsThrowNamingShapes) {
  const std::vector<int64_t> lhs = {4, 5}, rhs = {6, 3}, one = {1}, zero = {0};
  std::vector<float> buf(64);
  kernels::DotGeneralArgs d;
  d.lhs_shape = lhs;
  d.rhs_shape = rhs;
  d.lhs_contracting_dims = one;
  d.rhs_contracting_dims = zero;
  d.lhs = d.rhs = buf.data();
  d.out = buf.data();
  try {
    kernels::DotGeneral(d);
    ADD_FAILURE() << "no error";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("contracting dim sizes differ (lhs float32[4,5], rhs float32[6,3]"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace jx::conv_dot_kernels_test
