// Focused tests of conv_general_dilated: dimension-number parsing and padding resolution as
// JAX does them, params as JAX prints them, known small results (cross-correlation, lhs
// dilation), every kernel path at sizes that take the parallel paths, and bad inputs.
#include <gtest/gtest.h>
#include <jx/jx.h>

#include <random>

#include "jx/core/interpreter.h"

namespace jx::convolution_test {
namespace {

using lax::ConvDimensionNumbers;
using lax::Padding;
using Pads = std::vector<std::pair<int64_t, int64_t>>;

Array FromVec(const std::vector<double>& v, const Shape& shape, DType dtype = float32) {
  Array out = Array::Empty(shape, dtype);
  for (size_t i = 0; i < v.size(); ++i) StoreFromDouble(dtype, out.mutable_data(), static_cast<int64_t>(i), v[i]);
  return out;
}

Array Random(const Shape& shape, DType dtype, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> dist(-1, 1);
  Array out = Array::Empty(shape, dtype);
  for (int64_t i = 0; i < out.size(); ++i) StoreFromDouble(dtype, out.mutable_data(), i, dist(rng));
  return out;
}

TEST(ConvDimensionNumbersTest, FromSpecsMatchesJax) {
  const auto nhwc = ConvDimensionNumbers::FromSpecs("NHWC", "HWIO", "NHWC");
  EXPECT_EQ(nhwc.lhs_spec, (std::vector<int64_t>{0, 3, 1, 2}));
  EXPECT_EQ(nhwc.rhs_spec, (std::vector<int64_t>{3, 2, 0, 1}));
  EXPECT_EQ(nhwc.out_spec, (std::vector<int64_t>{0, 3, 1, 2}));
  EXPECT_EQ(ConvDimensionNumbers::FromSpecs("NCHW", "OIHW", "NCHW"), ConvDimensionNumbers::Default(2));
  const auto d1 = ConvDimensionNumbers::FromSpecs("NWC", "WIO", "NWC");
  EXPECT_EQ(d1.lhs_spec, (std::vector<int64_t>{0, 2, 1}));
  EXPECT_EQ(d1.rhs_spec, (std::vector<int64_t>{2, 1, 0}));
  const auto d3 = ConvDimensionNumbers::FromSpecs("NDHWC", "DHWIO", "NCDHW");
  EXPECT_EQ(d3.lhs_spec, (std::vector<int64_t>{0, 4, 1, 2, 3}));
  EXPECT_EQ(d3.rhs_spec, (std::vector<int64_t>{4, 3, 0, 1, 2}));
  EXPECT_EQ(d3.out_spec, (std::vector<int64_t>{0, 1, 2, 3, 4}));
  // Spatial dims are ordered as the rhs spec lists them.
  const auto wh = ConvDimensionNumbers::FromSpecs("NCHW", "OIWH", "NHWC");
  EXPECT_EQ(wh.lhs_spec, (std::vector<int64_t>{0, 1, 3, 2}));
  EXPECT_EQ(wh.rhs_spec, (std::vector<int64_t>{0, 1, 2, 3}));
  EXPECT_EQ(wh.out_spec, (std::vector<int64_t>{0, 3, 2, 1}));
  EXPECT_EQ(ConvDimensionNumbers::Default(0).lhs_spec, (std::vector<int64_t>{0, 1}));
}

TEST(ConvDimensionNumbersTest, MalformedSpecsThrowTypeError) {
  EXPECT_THROW(ConvDimensionNumbers::FromSpecs("XHWC", "HWIO", "NHWC"), TypeError);  // no N
  EXPECT_THROW(ConvDimensionNumbers::FromSpecs("NHHC", "HWIO", "NHWC"), TypeError);  // duplicate
  EXPECT_THROW(ConvDimensionNumbers::FromSpecs("NHWC", "HWIO", "NHDC"), TypeError);  // spatial sets differ
  try {
    ConvDimensionNumbers::FromSpecs("NHWC", "HWOO", "NHWC");
    FAIL();
  } catch (const TypeError& e) {
    EXPECT_NE(std::string(e.what()).find("conv_general_dilated"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("HWOO"), std::string::npos);
  }
}

TEST(PadtypeToPadsTest, MatchesJax) {
  EXPECT_EQ(lax::padtype_to_pads({5}, {3}, {2}, "SAME"), (Pads{{1, 1}}));
  EXPECT_EQ(lax::padtype_to_pads({6}, {3}, {2}, "SAME"), (Pads{{0, 1}}));
  EXPECT_EQ(lax::padtype_to_pads({6}, {3}, {2}, "SAME_LOWER"), (Pads{{1, 0}}));
  EXPECT_EQ(lax::padtype_to_pads({6, 7}, {4, 1}, {1, 3}, "same"), (Pads{{1, 2}, {0, 0}}));
  EXPECT_EQ(lax::padtype_to_pads({6, 7}, {4, 1}, {1, 3}, "VALID"), (Pads{{0, 0}, {0, 0}}));
  // A window larger than the input still pads to ceil(in / stride) outputs.
  EXPECT_EQ(lax::padtype_to_pads({2}, {5}, {1}, "SAME"), (Pads{{2, 2}}));
  EXPECT_THROW(lax::padtype_to_pads({6}, {3}, {2}, "FULL"), ValueError);
}

class RecordingInterpreter : public Interpreter {
 public:
  Arrays Process(Primitive p, absl::Span<const Array> inputs, const ParamMap& params) override {
    last_params = params.ToString();
    dn = lax::internal::GetConvDimensionNumbers(params);
    return EvalPrimitive(p, inputs, params);
  }
  std::string name() const override { return "record"; }
  std::string last_params;
  ConvDimensionNumbers dn;
};

TEST(ConvTest, ParamsPrintAsJax) {
  RecordingInterpreter rec;
  {
    InterpreterScope scope(&rec);
    lax::conv_general_dilated(Random({1, 5, 5, 2}, float32, 1), Random({3, 3, 2, 4}, float32, 2), {1, 1},
                              Padding::Same(), {}, {}, ConvDimensionNumbers::FromSpecs("NHWC", "HWIO", "NHWC"));
  }
  const std::string& s = rec.last_params;
  EXPECT_NE(s.find("dimension_numbers=ConvDimensionNumbers(lhs_spec=(0, 3, 1, 2), rhs_spec=(3, 2, 0, 1), "
                   "out_spec=(0, 3, 1, 2))"),
            std::string::npos)
      << s;
  EXPECT_NE(s.find("padding=((1, 1), (1, 1))"), std::string::npos) << s;
  EXPECT_NE(s.find("window_strides=(1, 1)"), std::string::npos) << s;
  EXPECT_NE(s.find("lhs_dilation=(1, 1)"), std::string::npos) << s;
  EXPECT_NE(s.find("rhs_dilation=(1, 1)"), std::string::npos) << s;
  EXPECT_NE(s.find("feature_group_count=1"), std::string::npos) << s;
  EXPECT_NE(s.find("batch_group_count=1"), std::string::npos) << s;
  EXPECT_NE(s.find("precision=None"), std::string::npos) << s;
  EXPECT_NE(s.find("preferred_element_type=None"), std::string::npos) << s;
  {
    InterpreterScope scope(&rec);
    lax::conv_general_dilated(Random({1, 2, 5}, float32, 1), Random({3, 2, 2}, float32, 2), {2}, Padding({{1, 0}}));
  }
  EXPECT_NE(rec.last_params.find("padding=((1, 0),)"), std::string::npos) << rec.last_params;
  EXPECT_NE(rec.last_params.find("window_strides=(2,)"), std::string::npos) << rec.last_params;
  EXPECT_EQ(rec.dn, ConvDimensionNumbers::Default(1));
}

TEST(ConvTest, KnownValues) {
  // Cross-correlation (no kernel flip): [1 2 3 4] * [1 10] -> [21 32 43].
  Array x = FromVec({1, 2, 3, 4}, {1, 1, 4}), w = FromVec({1, 10}, {1, 1, 2});
  EXPECT_EQ(lax::conv_general_dilated(x, w, {1}, Padding::Valid()).to_vector<double>(),
            (std::vector<double>{21, 32, 43}));
  // Stride 2 with SAME: out = ceil(4 / 2) = 2, pad (0, 1).
  EXPECT_EQ(lax::conv_general_dilated(x, w, {2}, Padding::Same()).to_vector<double>(), (std::vector<double>{21, 43}));
  // lhs dilation 2: [1 0 2 0 3 0 4] * [1 10] -> [1 20 2 30 3 40].
  EXPECT_EQ(lax::conv_general_dilated(x, w, {1}, Padding({{0, 0}}), {2}).to_vector<double>(),
            (std::vector<double>{1, 20, 2, 30, 3, 40}));
  // rhs dilation 2: taps 2 apart: [1 + 30, 2 + 40].
  EXPECT_EQ(lax::conv_general_dilated(x, w, {1}, Padding::Valid(), {}, {2}).to_vector<double>(),
            (std::vector<double>{31, 42}));
  // Negative padding crops: drop the first input element.
  EXPECT_EQ(lax::conv_general_dilated(x, w, {1}, Padding({{-1, 0}})).to_vector<double>(),
            (std::vector<double>{32, 43}));
}

TEST(ConvTest, OutputShapes) {
  Array x = Random({2, 3, 7, 7}, float32, 3), w = Random({4, 3, 3, 3}, float32, 4);
  // dilated window 5, padded 9 -> (9 - 5) / 2 + 1 = 3.
  EXPECT_EQ(lax::conv_general_dilated(x, w, {2, 2}, Padding({{1, 1}, {1, 1}}), {}, {2, 2}).shape(),
            (Shape{2, 4, 3, 3}));
  EXPECT_EQ(lax::conv_general_dilated(x, w, {2, 1}, Padding::Same()).shape(), (Shape{2, 4, 4, 7}));
  // Batch groups divide the batch; feature groups keep it.
  Array xb = Random({4, 3, 5, 5}, float32, 5), wb = Random({6, 3, 3, 3}, float32, 6);
  EXPECT_EQ(lax::conv_general_dilated(xb, wb, {1, 1}, Padding::Valid(), {}, {}, std::nullopt, 1, 2).shape(),
            (Shape{2, 6, 3, 3}));
  // Output layout follows out_spec.
  Array xn = Random({2, 7, 7, 3}, float32, 7), wn = Random({3, 3, 3, 4}, float32, 8);
  EXPECT_EQ(lax::conv_general_dilated(xn, wn, {1, 1}, Padding::Valid(), {}, {},
                                      ConvDimensionNumbers::FromSpecs("NHWC", "HWIO", "NCHW"))
                .shape(),
            (Shape{2, 4, 5, 5}));
}

// The NHWC result of a conv computed through the NCHW path (transposed operands) must match.
void ExpectLayoutsAgree(const Array& x_nhwc, const Array& w_hwio, std::vector<int64_t> strides, const Padding& pad,
                        int64_t groups, double tol) {
  const auto nhwc = ConvDimensionNumbers::FromSpecs("NHWC", "HWIO", "NHWC");
  Array a = lax::conv_general_dilated(x_nhwc, w_hwio, strides, pad, {}, {}, nhwc, groups);
  Array x_nchw = lax::transpose(x_nhwc, {0, 3, 1, 2}), w_oihw = lax::transpose(w_hwio, {3, 2, 0, 1});
  Array b = lax::conv_general_dilated(x_nchw, w_oihw, strides, pad, {}, {}, std::nullopt, groups);
  Array b_nhwc = lax::transpose(b, {0, 2, 3, 1});
  ASSERT_EQ(a.shape(), b_nhwc.shape());
  const auto av = a.to_vector<double>(), bv = b_nhwc.to_vector<double>();
  for (size_t i = 0; i < av.size(); ++i) ASSERT_NEAR(av[i], bv[i], tol) << "element " << i;
}

// Direct float64 reference for NHWC/HWIO/NHWC with feature groups.
std::vector<double> RefConvNhwc(const Array& x, const Array& w, int64_t stride, int64_t pad, int64_t groups) {
  const auto xs = x.shape(), ws = w.shape();
  const int64_t n = xs[0], h = xs[1], wd = xs[2], c = xs[3], kh = ws[0], kw = ws[1], cg = ws[2], o = ws[3];
  const int64_t oh = (h + 2 * pad - kh) / stride + 1, ow = (wd + 2 * pad - kw) / stride + 1, og = o / groups;
  const auto xv = x.to_vector<double>(), wv = w.to_vector<double>();
  std::vector<double> out(static_cast<size_t>(n * oh * ow * o), 0.0);
  for (int64_t b = 0; b < n; ++b)
    for (int64_t y = 0; y < oh; ++y)
      for (int64_t z = 0; z < ow; ++z)
        for (int64_t f = 0; f < o; ++f) {
          double s = 0;
          for (int64_t i = 0; i < kh; ++i)
            for (int64_t j = 0; j < kw; ++j) {
              const int64_t yy = y * stride + i - pad, zz = z * stride + j - pad;
              if (yy < 0 || yy >= h || zz < 0 || zz >= wd) continue;
              for (int64_t q = 0; q < cg; ++q) {
                s += xv[((b * h + yy) * wd + zz) * c + (f / og) * cg + q] * wv[((i * kw + j) * cg + q) * o + f];
              }
            }
          out[((b * oh + y) * ow + z) * o + f] = s;
        }
  return out;
}

TEST(ConvTest, LargeNhwcMatchesReferenceOnEveryPath) {
  const auto nhwc = ConvDimensionNumbers::FromSpecs("NHWC", "HWIO", "NHWC");
  struct Case {
    Shape x, w;
    int64_t stride, pad, groups;
  };
  for (const Case& c : {Case{{3, 17, 15, 32}, {3, 3, 32, 24}, 1, 1, 1},    // im2col tiles
                        Case{{2, 16, 16, 24}, {1, 1, 24, 40}, 1, 0, 1},    // 1x1 single GEMM
                        Case{{2, 15, 17, 16}, {3, 3, 1, 32}, 2, 1, 16},    // depthwise x2
                        Case{{2, 14, 14, 32}, {3, 3, 8, 32}, 1, 1, 4}}) {  // grouped
    Array x = Random(c.x, float32, 11), w = Random(c.w, float32, 12);
    Array out = lax::conv_general_dilated(x, w, {c.stride, c.stride}, Padding({{c.pad, c.pad}, {c.pad, c.pad}}), {}, {},
                                          nhwc, c.groups);
    const auto want = RefConvNhwc(x, w, c.stride, c.pad, c.groups);
    const auto got = out.to_vector<double>();
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) ASSERT_NEAR(got[i], want[i], 1e-4) << "element " << i;
    ExpectLayoutsAgree(x, w, {c.stride, c.stride}, Padding({{c.pad, c.pad}, {c.pad, c.pad}}), c.groups, 1e-4);
    // float16 inputs take the converting im2col and output-conversion paths.
    Array xh = lax::convert_element_type(x, float16), wh = lax::convert_element_type(w, float16);
    Array oh = lax::conv_general_dilated(xh, wh, {c.stride, c.stride}, Padding({{c.pad, c.pad}, {c.pad, c.pad}}), {},
                                         {}, nhwc, c.groups);
    EXPECT_EQ(oh.dtype(), float16);
    const auto wanth = RefConvNhwc(xh, wh, c.stride, c.pad, c.groups);
    const auto goth = oh.to_vector<double>();
    for (size_t i = 0; i < goth.size(); ++i) ASSERT_NEAR(goth[i], wanth[i], 2e-3 * (1 + std::abs(wanth[i]))) << i;
  }
}

// The weight gradient of an NHWC/HWIO convolution as its transpose rule emits it (lhs = x with
// channels as the batch, rhs = the output cotangent with the images as input features, out
// HWIO), against the direct sum dw[i, j, c, f] = sum_{b, y, z} x[b, y*s+i-p, z*s+j-p, c] g[b, y, z, f].
TEST(ConvTest, WeightGradientFormMatchesReference) {
  struct Case {
    Shape x;
    int64_t k, stride, pad;
  };
  for (const Case& c : {Case{{2, 12, 11, 5}, 3, 1, 1},    // SAME
                        Case{{3, 13, 12, 4}, 3, 2, 1},    // strided: rhs dilation 2
                        Case{{1, 10, 10, 6}, 2, 1, 0},    // VALID, even window
                        Case{{2, 9, 9, 3}, 5, 1, 2}}) {  // 5x5
    for (DType dtype : {float32, float64}) {
      SCOPED_TRACE(StrCat("x ", ShapedArray{c.x, dtype}.str(), " k=", c.k, " stride=", c.stride, " pad=", c.pad));
      const int64_t n = c.x[0], h = c.x[1], w = c.x[2], ci = c.x[3], co = 7, k = c.k, s = c.stride, p = c.pad;
      const int64_t oh = (h + 2 * p - k) / s + 1, ow = (w + 2 * p - k) / s + 1;
      Array x = Random(c.x, dtype, 21), g = Random({n, oh, ow, co}, dtype, 22);
      const std::vector<std::pair<int64_t, int64_t>> pads = {{p, k + (oh - 1) * s - h - p}, {p, k + (ow - 1) * s - w - p}};
      Array dw = lax::conv_general_dilated(x, g, {1, 1}, Padding(pads), {}, {s, s},
                                           ConvDimensionNumbers::FromSpecs("CHWN", "IHWO", "HWNC"));
      ASSERT_EQ(dw.shape(), (Shape{k, k, ci, co}));
      const auto xv = x.to_vector<double>(), gv = g.to_vector<double>(), got = dw.to_vector<double>();
      for (int64_t i = 0; i < k; ++i)
        for (int64_t j = 0; j < k; ++j)
          for (int64_t a = 0; a < ci; ++a)
            for (int64_t f = 0; f < co; ++f) {
              double want = 0;
              for (int64_t b = 0; b < n; ++b)
                for (int64_t y = 0; y < oh; ++y)
                  for (int64_t z = 0; z < ow; ++z) {
                    const int64_t yy = y * s + i - p, zz = z * s + j - p;
                    if (yy < 0 || yy >= h || zz < 0 || zz >= w) continue;
                    want += xv[((b * h + yy) * w + zz) * ci + a] * gv[((b * oh + y) * ow + z) * co + f];
                  }
              ASSERT_NEAR(got[((i * k + j) * ci + a) * co + f], want, dtype == float64 ? 1e-12 : 1e-4)
                  << "at " << i << "," << j << "," << a << "," << f;
            }
    }
  }
}

TEST(ConvTest, PreferredElementType) {
  Array x = FromVec({100, 100, 100}, {1, 1, 3}, int8), w = FromVec({100, 100}, {1, 1, 2}, int8);
  Array out = lax::conv_general_dilated(x, w, {1}, Padding::Valid(), {}, {}, std::nullopt, 1, 1, int32);
  EXPECT_EQ(out.dtype(), int32);
  EXPECT_EQ(out.to_vector<int32_t>(), (std::vector<int32_t>{20000, 20000}));
  Array xb = lax::convert_element_type(x, bfloat16), wb = lax::convert_element_type(w, bfloat16);
  Array f = lax::conv_general_dilated(xb, wb, {1}, Padding::Valid(), {}, {}, std::nullopt, 1, 1, float32);
  EXPECT_EQ(f.dtype(), float32);
  EXPECT_EQ(f.to_vector<double>(), (std::vector<double>{20000, 20000}));
}

template <typename E, typename F>
void ExpectError(F f, std::vector<std::string> fragments) {
  try {
    f();
    FAIL() << "expected an exception";
  } catch (const E& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("conv_general_dilated"), std::string::npos) << what;
    for (const auto& frag : fragments) EXPECT_NE(what.find(frag), std::string::npos) << what << " lacks " << frag;
  }
}

TEST(ConvTest, BadInputsThrowAndTheNextCallWorks) {
  Array x = Random({2, 4, 5, 5}, float32, 1), w = Random({6, 2, 3, 3}, float32, 2);
  ExpectError<ShapeError>(
      [&] {
        lax::conv_general_dilated(x, w, {1, 1}, Padding::Same());
      },
      {"4 // 1 != 2", "f32[2,4,5,5]", "f32[6,2,3,3]"});
  ExpectError<ShapeError>(
      [&] {
        lax::conv_general_dilated(x, w, {1, 1}, Padding::Same(), {}, {}, std::nullopt, 3);
      },
      {"divide"});
  ExpectError<ValueError>(
      [&] {
        lax::conv_general_dilated(x, w, {1, 1}, Padding::Same(), {}, {}, std::nullopt, 2, 2);
      },
      {"At most one"});
  ExpectError<ValueError>(
      [&] {
        lax::conv_general_dilated(x, w, {1, 1}, Padding::Same(), {}, {}, std::nullopt, 0);
      },
      {"positive"});
  ExpectError<ShapeError>(
      [&] {
        lax::conv_general_dilated(x, w, {1}, Padding({{0, 0}, {0, 0}}), {}, {}, std::nullopt, 2);
      },
      {"window_strides", "f32[2,4,5,5]"});
  ExpectError<ShapeError>([&] { lax::conv_general_dilated(x, w, {1}, Padding::Same(), {}, {}, std::nullopt, 2); },
                          {"window_strides"});
  ExpectError<ValueError>(
      [&] {
        lax::conv_general_dilated(x, w, {0, 1}, Padding({{0, 0}, {0, 0}}), {}, {}, std::nullopt, 2);
      },
      {"window_strides must be positive"});
  ExpectError<ShapeError>(
      [&] {
        lax::conv_general_dilated(x, w, {1, 1}, Padding({{0, 0}}), {}, {}, std::nullopt, 2);
      },
      {"Wrong number of explicit pads"});
  ExpectError<ShapeError>(
      [&] {
        lax::conv_general_dilated(x, w, {1, 1}, Padding({{-6, 0}, {0, 0}}), {}, {}, std::nullopt, 2);
      },
      {"Negative padding"});
  ExpectError<ValueError>(
      [&] {
        lax::conv_general_dilated(x, w, {1, 1}, Padding("FULL", {}), {}, {}, std::nullopt, 2);
      },
      {"Unrecognized padding"});
  ExpectError<ValueError>(
      [&] {
        lax::conv_general_dilated(x, w, {1, 1}, Padding::Same(), {2, 2}, {}, std::nullopt, 2);
      },
      {"transposed convolution"});
  ExpectError<TypeError>(
      [&] {
        lax::conv_general_dilated(x, lax::convert_element_type(w, float64), {1, 1}, Padding::Same(), {}, {},
                                  std::nullopt, 2);
      },
      {"same dtypes", "float32", "float64"});
  ExpectError<TypeError>(
      [&] {
        lax::conv_general_dilated(x, w, {1, 1}, Padding::Same(), {}, {}, std::nullopt, 2, 1, int32);
      },
      {"incompatible"});
  ExpectError<ShapeError>(
      [&] {
        lax::conv_general_dilated(x, Random({6, 2, 3}, float32, 3), {1, 1}, Padding::Same());
      },
      {"same number of dimensions"});
  ExpectError<ShapeError>(
      [&] {
        lax::conv_general_dilated(x, w, {1, 1}, Padding::Same(), {}, {},
                                  ConvDimensionNumbers{{0, 1, 2, 2}, {0, 1, 2, 3}, {0, 1, 2, 3}}, 2);
      },
      {"lhs_spec", "permutation"});
  ExpectError<ShapeError>(
      [&] {
        lax::conv_general_dilated(x, w, {1, 1}, Padding::Same(), {}, {},
                                  ConvDimensionNumbers::FromSpecs("NCH", "OIH", "NCH"), 2);
      },
      {"permutation"});
  ExpectError<ShapeError>(
      [&] {
        lax::conv_general_dilated(Random({3, 4, 5, 5}, float32, 4), Random({6, 4, 3, 3}, float32, 5), {1, 1},
                                  Padding::Same(), {}, {}, std::nullopt, 1, 2);
      },
      {"batch_group_count must divide"});
  // The process keeps working.
  EXPECT_EQ(lax::conv_general_dilated(x, w, {1, 1}, Padding::Same(), {}, {}, std::nullopt, 2).shape(),
            (Shape{2, 6, 5, 5}));
}

}  // namespace
}  // namespace jx::convolution_test
