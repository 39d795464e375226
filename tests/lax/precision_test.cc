// precision and preferred_element_type on dot_general and conv_general_dilated (and the jnp
// products that call them): the params JAX prints, their survival through jvp, transpose and
// vmap, the HLO operand_precision they lower to, the default_matmul_precision scope (and jit's
// cache key on it), and preferred_element_type's result dtypes eager and under jit.
#include <gtest/gtest.h>
#include <jx/jx.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "jx/lax/precision.h"

namespace jx::precision_test {
namespace {

namespace jnp = jx::numpy;
using lax::Precision;

constexpr char kHighestPair[] = "precision=(Precision.HIGHEST, Precision.HIGHEST)";

Array Ramp(const Shape& shape, DType dtype, double scale = 0.25) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  std::vector<float> v(static_cast<size_t>(n));
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(scale * (static_cast<double>(i % 7) - 3.0));
  return lax::convert_element_type(jnp::array(v, shape), dtype);
}

int Count(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

Array Matmul(const Array& a, const Array& b, lax::PrecisionLike p = {}, std::optional<DType> pref = std::nullopt) {
  return lax::dot_general(a, b, {{1}, {0}, {}, {}}, p, pref);
}

TEST(PrecisionTest, NamesParseAsJaxAccepts) {
  EXPECT_EQ(lax::ParsePrecision("default"), Precision::kDefault);
  EXPECT_EQ(lax::ParsePrecision("bfloat16"), Precision::kDefault);
  EXPECT_EQ(lax::ParsePrecision("fastest"), Precision::kDefault);
  EXPECT_EQ(lax::ParsePrecision("high"), Precision::kHigh);
  EXPECT_EQ(lax::ParsePrecision("tensorfloat32"), Precision::kHigh);
  EXPECT_EQ(lax::ParsePrecision("highest"), Precision::kHighest);
  EXPECT_EQ(lax::ParsePrecision("float32"), Precision::kHighest);
  EXPECT_EQ(lax::PrecisionName(Precision::kHigh), "HIGH");
  try {
    lax::ParsePrecision("fp8");
    ADD_FAILURE() << "no error";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("unknown name 'fp8'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("'tensorfloat32'"), std::string::npos) << e.what();
  }
  EXPECT_THROW(default_matmul_precision("fp8"), ValueError);
}

TEST(PrecisionTest, JaxprPrintsPrecisionAndPreferredAsJax) {
  const Array a = Ramp({2, 3}, float32), b = Ramp({3, 4}, float32);
  auto text = [&](lax::PrecisionLike p, std::optional<DType> pref) {
    return make_jaxpr([&](const Array& x, const Array& y) { return Matmul(x, y, p, pref); })(a, b).ToString();
  };
  EXPECT_EQ(text({}, std::nullopt),
            "{ lambda ; a:f32[2,3] b:f32[3,4]. let\n"
            "    c:f32[2,4] = dot_general[\n"
            "      dimension_numbers=(([1], [0]), ([], []))\n"
            "      precision=None\n"
            "      preferred_element_type=None\n"
            "    ] a b\n"
            "  in (c,) }");
  EXPECT_NE(text(Precision::kHighest, float32).find("precision=(Precision.HIGHEST, Precision.HIGHEST)\n"
                                                    "      preferred_element_type=float32"),
            std::string::npos)
      << text(Precision::kHighest, float32);
  EXPECT_NE(text({Precision::kHigh, Precision::kDefault}, std::nullopt)
                .find("precision=(Precision.HIGH, Precision.DEFAULT)"),
            std::string::npos);
  EXPECT_NE(text("float32", std::nullopt).find(kHighestPair), std::string::npos);
  const std::string conv = make_jaxpr([](const Array& x, const Array& w) {
                             return lax::conv_general_dilated(x, w, {1}, lax::Padding::Valid(), {}, {}, std::nullopt,
                                                              1, 1, Precision::kHighest, float64);
                           })(Ramp({1, 2, 5}, float32), Ramp({3, 2, 2}, float32))
                               .ToString();
  EXPECT_NE(conv.find("precision=(Precision.HIGHEST, Precision.HIGHEST)\n      preferred_element_type=float64"),
            std::string::npos)
      << conv;
}

TEST(PrecisionTest, PrecisionChangesNoCpuNumbers) {
  const Array a = Ramp({5, 7}, float32, 0.37), b = Ramp({7, 3}, float32, 1.3);
  const std::vector<float> want = Matmul(a, b).to_vector<float>();
  EXPECT_EQ(Matmul(a, b, Precision::kHighest).to_vector<float>(), want);
  EXPECT_EQ(Matmul(a, b, {Precision::kDefault, Precision::kHigh}).to_vector<float>(), want);
  auto jf = jit([](const Array& x, const Array& y) { return Matmul(x, y, Precision::kHighest); });
  EXPECT_EQ(jf(a, b).to_vector<float>(), want);
}

TEST(PrecisionTest, JvpTransposeAndVmapKeepPrecision) {
  const Array a = Ramp({2, 3}, float32), b = Ramp({3, 4}, float32);
  auto loss = [](const Array& x, const Array& y) { return jnp::sum(Matmul(x, y, Precision::kHighest)); };
  // grad: the forward dot and both cotangent dots carry it.
  const std::string g = make_jaxpr(grad(loss, argnums{0, 1}))(a, b).ToString();
  EXPECT_EQ(Count(g, "dot_general["), 3) << g;
  EXPECT_EQ(Count(g, kHighestPair), 3) << g;
  // jvp: the primal and the tangent dots.
  const std::string j = make_jaxpr([&](const Array& x, const Array& y) {
                          auto [out, tangent] = jvp([](const Array& p, const Array& q) { return Matmul(p, q, Precision::kHighest); },
                                                    std::tuple{x, y}, std::tuple{x, y});
                          return std::vector<Array>{out, tangent};
                        })(a, b)
                            .ToString();
  EXPECT_EQ(Count(j, "dot_general["), 3) << j;
  EXPECT_EQ(Count(j, kHighestPair), 3) << j;
  // vmap: the batched dot.
  const std::string v =
      make_jaxpr(vmap([](const Array& x, const Array& y) { return Matmul(x, y, {Precision::kHigh, Precision::kHighest}); }))(
          Ramp({5, 2, 3}, float32), Ramp({5, 3, 4}, float32))
          .ToString();
  EXPECT_NE(v.find("precision=(Precision.HIGH, Precision.HIGHEST)"), std::string::npos) << v;
  // The convolution's rules too.
  auto conv_loss = [](const Array& x, const Array& w) {
    return jnp::sum(lax::conv_general_dilated(x, w, {1}, lax::Padding::Same(), {}, {}, std::nullopt, 1, 1,
                                              Precision::kHighest));
  };
  const std::string c = make_jaxpr(grad(conv_loss, argnums{0, 1}))(Ramp({1, 2, 5}, float32), Ramp({3, 2, 2}, float32))
                            .ToString();
  EXPECT_EQ(Count(c, "conv_general_dilated["), 3) << c;
  EXPECT_EQ(Count(c, kHighestPair), 3) << c;
}

TEST(PrecisionTest, TransposeKeepsPreferredElementTypeThenConvertsBack) {
  // bf16 operands with an f32 result: the cotangent dots compute in f32 (preferred float32),
  // then each cotangent converts back to bf16, as JAX's _dot_general_transpose_lhs does.
  const Array a = Ramp({2, 3}, bfloat16), b = Ramp({3, 4}, bfloat16);
  auto loss = [](const Array& x, const Array& y) { return jnp::sum(Matmul(x, y, {}, float32)); };
  const std::string g = make_jaxpr(grad(loss, argnums{0, 1}))(a, b).ToString();
  EXPECT_EQ(Count(g, "preferred_element_type=float32"), 3) << g;
  auto [ga, gb] = grad(loss, argnums{0, 1})(a, b);
  EXPECT_EQ(ga.dtype(), bfloat16);
  EXPECT_EQ(gb.dtype(), bfloat16);
  // d(sum(a @ b))/da = rowsum of b, broadcast over a's rows.
  const std::vector<float> bv = lax::convert_element_type(b, float32).to_vector<float>();
  const std::vector<float> gav = lax::convert_element_type(ga, float32).to_vector<float>();
  for (int i = 0; i < 2; ++i) {
    for (int k = 0; k < 3; ++k) {
      float want = 0;
      for (int j = 0; j < 4; ++j) want += bv[static_cast<size_t>(k * 4 + j)];
      EXPECT_EQ(gav[static_cast<size_t>(i * 3 + k)], want);
    }
  }
}

TEST(PrecisionTest, PreferredElementTypeSetsTheResultDtypeEagerAndJit) {
  struct Case {
    DType in, out;
  };
  for (const Case& c : {Case{bfloat16, float32}, Case{float16, float32}, Case{int8, int32}, Case{float32, float64}}) {
    const Array a = Ramp({3, 4}, c.in, 1.0), b = Ramp({4, 2}, c.in, 1.0);
    const Array eager = Matmul(a, b, {}, c.out);
    EXPECT_EQ(eager.dtype(), c.out) << dtype_name(c.in);
    auto jf = jit([&c](const Array& x, const Array& y) { return Matmul(x, y, Precision::kHighest, c.out); });
    const Array jitted = jf(a, b);
    EXPECT_EQ(jitted.dtype(), c.out) << dtype_name(c.in);
    EXPECT_EQ(lax::convert_element_type(jitted, float64).to_vector<double>(),
              lax::convert_element_type(eager, float64).to_vector<double>())
        << dtype_name(c.in);
    // The reference: the dot in f64 of the same (exactly representable) values.
    const Array ref = Matmul(lax::convert_element_type(a, float64), lax::convert_element_type(b, float64));
    EXPECT_EQ(lax::convert_element_type(eager, float64).to_vector<double>(), ref.to_vector<double>())
        << dtype_name(c.in);
  }
  // int8 products past int8's range need the int32 result.
  const Array big = lax::convert_element_type(jnp::full({1, 4}, 100.0), int8);
  EXPECT_EQ(Matmul(big, lax::transpose(big, {1, 0}), {}, int32).item<int32_t>(), 40000);
  // Convolution: bf16 x bf16 -> f32, eager and jit.
  auto conv = [](const Array& x, const Array& w) {
    return lax::conv_general_dilated(x, w, {1}, lax::Padding::Valid(), {}, {}, std::nullopt, 1, 1, float32);
  };
  const Array x = Ramp({1, 2, 5}, bfloat16), w = Ramp({3, 2, 2}, bfloat16);
  EXPECT_EQ(conv(x, w).dtype(), float32);
  EXPECT_EQ(jit(conv)(x, w).dtype(), float32);
  EXPECT_EQ(jit(conv)(x, w).to_vector<float>(), conv(x, w).to_vector<float>());
}

TEST(PrecisionTest, InvalidPreferredElementTypeIsAClearError) {
  const Array f = Ramp({2, 3}, float32), g = Ramp({3, 2}, float32);
  const Array i = Ramp({2, 3}, int32, 1.0), k = Ramp({3, 2}, int32, 1.0);
  auto message = [](auto&& fn) -> std::string {
    try {
      fn();
    } catch (const TypeError& e) {
      return e.what();
    }
    return "no TypeError";
  };
  const std::string narrower = message([&] { Matmul(f, g, Precision::kHighest, float16); });
  EXPECT_NE(narrower.find("[dot_general] preferred_element_type float16 must not be narrower than the input type "
                          "float32 (lhs f32[2,3], rhs f32[3,2])"),
            std::string::npos)
      << narrower;
  EXPECT_NE(message([&] { Matmul(f, g, {}, int32); }).find("incompatible with preferred_element_type int32"),
            std::string::npos);
  EXPECT_NE(message([&] { Matmul(i, k, {}, uint32); }).find("same signedness"), std::string::npos);
  // Under jit the same error, and the next call works.
  auto jf = jit([](const Array& x, const Array& y) { return Matmul(x, y, {}, float16); });
  EXPECT_NE(message([&] { jf(f, g); }).find("must not be narrower"), std::string::npos);
  EXPECT_EQ(jit([](const Array& x, const Array& y) { return Matmul(x, y, {}, float64); })(f, g).dtype(), float64);
  const std::string conv = message([&] {
    lax::conv_general_dilated(Ramp({1, 2, 5}, float32), Ramp({3, 2, 2}, float32), {1}, lax::Padding::Valid(), {},
                              {}, std::nullopt, 1, 1, Precision::kHigh, bfloat16);
  });
  EXPECT_NE(conv.find("[conv_general_dilated] preferred_element_type bfloat16 must not be narrower"),
            std::string::npos)
      << conv;
}

TEST(PrecisionTest, DefaultMatmulPrecisionScope) {
  const Array a = Ramp({2, 3}, float32), b = Ramp({3, 4}, float32);
  auto f = [](const Array& x, const Array& y) { return Matmul(x, y); };
  auto text = [&] { return make_jaxpr(f)(a, b).ToString(); };
  EXPECT_NE(text().find("precision=None"), std::string::npos);
  {
    default_matmul_precision outer("float32");
    EXPECT_NE(text().find(kHighestPair), std::string::npos) << text();
    {
      default_matmul_precision inner("tensorfloat32");
      EXPECT_NE(text().find("precision=(Precision.HIGH, Precision.HIGH)"), std::string::npos) << text();
      // An explicit precision wins over the scope's.
      const std::string explicit_default =
          make_jaxpr([](const Array& x, const Array& y) { return Matmul(x, y, Precision::kDefault); })(a, b)
              .ToString();
      EXPECT_NE(explicit_default.find("precision=(Precision.DEFAULT, Precision.DEFAULT)"), std::string::npos);
    }
    EXPECT_NE(text().find(kHighestPair), std::string::npos);
  }
  EXPECT_NE(text().find("precision=None"), std::string::npos);
  // jnp products and convolutions pick it up too.
  default_matmul_precision scope(Precision::kHighest);
  EXPECT_NE(make_jaxpr([](const Array& x, const Array& y) { return jnp::matmul(x, y); })(a, b).ToString().find(
                kHighestPair),
            std::string::npos);
  EXPECT_NE(make_jaxpr([](const Array& x, const Array& y) { return jnp::einsum("ij,jk->ik", x, y); })(a, b)
                .ToString()
                .find(kHighestPair),
            std::string::npos);
  EXPECT_NE(make_jaxpr([](const Array& x, const Array& w) {
              return lax::conv_general_dilated(x, w, {1}, lax::Padding::Valid());
            })(Ramp({1, 2, 5}, float32), Ramp({3, 2, 2}, float32))
                .ToString()
                .find(kHighestPair),
            std::string::npos);
}

TEST(PrecisionTest, DefaultMatmulPrecisionIsPartOfJitsCacheKey) {
  const Array a = Ramp({2, 3}, float32), b = Ramp({3, 4}, float32);
  auto jf = jit([](const Array& x, const Array& y) { return Matmul(x, y); });
  jf(a, b);
  jf(a, b);
  EXPECT_EQ(jf.num_traces(), 1u);
  {
    default_matmul_precision scope("highest");
    setenv("JX_EXPLAIN_CACHE_MISSES", "1", 1);
    ::testing::internal::CaptureStderr();
    jf(a, b);
    const std::string why = ::testing::internal::GetCapturedStderr();
    unsetenv("JX_EXPLAIN_CACHE_MISSES");
    EXPECT_NE(why.find("default_matmul_precision changed"), std::string::npos) << why;
    EXPECT_EQ(jf.num_traces(), 2u);  // traced again: the program's dot changed
    jf(a, b);
    EXPECT_EQ(jf.num_traces(), 2u);
    EXPECT_NE(jf.lower(a, b).as_text().find("operand_precision={highest,highest}"), std::string::npos);
  }
  jf(a, b);
  EXPECT_EQ(jf.num_traces(), 2u);  // the first entry again
  EXPECT_EQ(jf.lower(a, b).as_text().find("operand_precision"), std::string::npos);
}

TEST(PrecisionTest, JnpProductsTakePrecisionAndPreferredElementType) {
  const Array a = Ramp({2, 3}, bfloat16), b = Ramp({3, 4}, bfloat16);
  using Fn = std::function<Array(const Array&, const Array&)>;
  const std::vector<std::pair<std::string, Fn>> products = {
      {"dot", [](const Array& x, const Array& y) { return jnp::dot(x, y, Precision::kHighest, float32); }},
      {"matmul", [](const Array& x, const Array& y) { return jnp::matmul(x, y, Precision::kHighest, float32); }},
      {"tensordot",
       [](const Array& x, const Array& y) { return jnp::tensordot(x, y, 1, Precision::kHighest, float32); }},
      {"einsum",
       [](const Array& x, const Array& y) { return jnp::einsum("ij,jk->ik", {x, y}, Precision::kHighest, float32); }},
  };
  const Array want = jnp::matmul(lax::convert_element_type(a, float32), lax::convert_element_type(b, float32));
  for (const auto& [name, fn] : products) {
    const Array out = fn(a, b);
    EXPECT_EQ(out.dtype(), float32) << name;
    EXPECT_EQ(out.to_vector<float>(), want.to_vector<float>()) << name;
    const std::string text = make_jaxpr(fn)(a, b).ToString();
    EXPECT_NE(text.find(std::string(kHighestPair) + "\n      preferred_element_type=float32"), std::string::npos)
        << name << "\n"
        << text;
  }
  // A product without a contraction still honours preferred_element_type.
  EXPECT_EQ(jnp::einsum("ij->i", {a}, {}, float32).dtype(), float32);
  EXPECT_EQ(jnp::dot(Ramp({}, int8, 1.0), Ramp({3}, int8, 1.0), {}, int32).dtype(), int32);
}

}  // namespace
}  // namespace jx::precision_test
