#include "jx/compiler/hlo/shape.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "jx/compiler/hlo/literal.h"

namespace jx::hlo::shape_test {
namespace {

TEST(HloShapeTest, PrintsLikeXla) {
  EXPECT_EQ(ShapeUtil::MakeShape(F32, {128, 512}).ToString(), "f32[128,512]{1,0}");
  EXPECT_EQ(ShapeUtil::MakeShape(F32, {128, 512}).ToString(false), "f32[128,512]");
  EXPECT_EQ(ShapeUtil::MakeScalarShape(F32).ToString(), "f32[]");
  EXPECT_EQ(ShapeUtil::MakeShape(PRED, {3}).ToString(), "pred[3]{0}");
  EXPECT_EQ(ShapeUtil::MakeShape(BF16, {2, 3, 4}).ToString(), "bf16[2,3,4]{2,1,0}");
  EXPECT_EQ(ShapeUtil::MakeTupleShape({ShapeUtil::MakeShape(F32, {2}),
                                       ShapeUtil::MakeScalarShape(S32)})
                .ToString(),
            "(f32[2]{0}, s32[])");
  EXPECT_EQ(Shape::Token().ToString(), "token[]");
  EXPECT_EQ(Shape(F32, {2, 3}, Layout{{0, 1}}).ToString(), "f32[2,3]{0,1}");
}

TEST(HloShapeTest, PrimitiveTypes) {
  EXPECT_EQ(PrimitiveTypeName(S64), "s64");
  EXPECT_EQ(PrimitiveTypeName(U8), "u8");
  EXPECT_EQ(StringToPrimitiveType("bf16").value(), BF16);
  EXPECT_FALSE(StringToPrimitiveType("f128").ok());
  EXPECT_EQ(ByteSizeOfPrimitiveType(PRED), 1);
  EXPECT_EQ(ByteSizeOfPrimitiveType(F16), 2);
  EXPECT_EQ(ByteSizeOfPrimitiveType(U32), 4);
  EXPECT_EQ(ByteSizeOfPrimitiveType(F64), 8);
  EXPECT_EQ(ByteSizeOfPrimitiveType(TUPLE), 0);
  EXPECT_TRUE(IsFloatingPointType(BF16));
  EXPECT_FALSE(IsIntegralType(PRED));
  EXPECT_TRUE(IsUnsignedIntegralType(U16));
}

TEST(HloShapeTest, Helpers) {
  Shape s = ShapeUtil::MakeShape(F32, {128, 512});
  EXPECT_EQ(ShapeUtil::ElementsIn(s), 128 * 512);
  EXPECT_EQ(ShapeUtil::ByteSizeOf(s), 128 * 512 * 4);
  EXPECT_EQ(ShapeUtil::Rank(s), 2);
  EXPECT_EQ(ShapeUtil::ElementsIn(ShapeUtil::MakeScalarShape(S8)), 1);
  Shape t = ShapeUtil::MakeTupleShape({s, ShapeUtil::MakeScalarShape(S16)});
  EXPECT_EQ(ShapeUtil::ByteSizeOf(t), 128 * 512 * 4 + 2);
  Shape transposed_layout(F32, {128, 512}, Layout{{0, 1}});
  EXPECT_FALSE(s == transposed_layout);
  EXPECT_TRUE(ShapeUtil::Compatible(s, transposed_layout));
  EXPECT_FALSE(ShapeUtil::Compatible(s, ShapeUtil::MakeShape(F32, {512, 128})));
  EXPECT_FALSE(ShapeUtil::Compatible(s, ShapeUtil::MakeShape(S32, {128, 512})));
  EXPECT_TRUE(ShapeUtil::IsScalarWithType(ShapeUtil::MakeScalarShape(PRED), PRED));
}

// Ranks past the inline capacity (kInlineRank) move dims and layout to the heap and keep
// every value: copies, equality, printing and parsing.
TEST(HloShapeTest, RanksPastTheInlineCapacityKeepTheirDimsAndLayout) {
  const std::vector<int64_t> dims = {2, 1, 3, 1, 2, 1, 4, 5};
  ASSERT_GT(static_cast<int>(dims.size()), kInlineRank);
  Shape s = ShapeUtil::MakeShape(F32, dims);
  EXPECT_EQ(s.dimensions(), dims);
  EXPECT_EQ(s.layout().minor_to_major, (MinorToMajor{7, 6, 5, 4, 3, 2, 1, 0}));
  const Shape copy = s;
  EXPECT_EQ(copy, s);
  Shape moved = std::move(s);
  EXPECT_EQ(moved, copy);
  EXPECT_EQ(ShapeUtil::ElementsIn(moved), 2 * 3 * 2 * 4 * 5);
  const std::string text = "f32[2,1,3,1,2,1,4,5]{0,1,2,3,4,5,6,7}";
  absl::StatusOr<Shape> parsed = ShapeUtil::ParseShape(text);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->ToString(), text);
  EXPECT_TRUE(ShapeUtil::Compatible(*parsed, copy));
  EXPECT_FALSE(*parsed == copy);  // the layouts differ
}

// A tuple's elements are shared between copies; equality still compares them by value.
TEST(HloShapeTest, TupleCopiesShareTheirElementsAndCompareByValue) {
  const Shape a = ShapeUtil::MakeShape(F32, {2, 3});
  const Shape b = ShapeUtil::MakeScalarShape(S32);
  const Shape t = ShapeUtil::MakeTupleShape({a, b});
  const Shape copy = t;
  EXPECT_EQ(&copy.tuple_shapes(), &t.tuple_shapes());
  EXPECT_EQ(copy, t);
  const Shape rebuilt = ShapeUtil::MakeTupleShape({a, b});
  EXPECT_NE(&rebuilt.tuple_shapes(), &t.tuple_shapes());
  EXPECT_EQ(rebuilt, t);
  EXPECT_FALSE(ShapeUtil::MakeTupleShape({b, a}) == t);
  EXPECT_FALSE(ShapeUtil::MakeTupleShape({a}) == t);
  EXPECT_TRUE(a.tuple_shapes().empty());
  EXPECT_EQ(a.tuple_shapes_size(), 0);
  EXPECT_EQ(ShapeUtil::MakeTupleShape({}).tuple_shapes_size(), 0);
  EXPECT_TRUE(ShapeUtil::MakeTupleShape({}).IsTuple());
}

// minor_to_major holds dimension numbers in 16 bits: a rank past kMaxRank is rejected with
// its rank named, and a layout entry no shape could have does not parse.
TEST(HloShapeTest, RanksPastTheMaximumAreRejected) {
  const Shape largest(F32, std::vector<int64_t>(kMaxRank, 1));
  EXPECT_TRUE(ShapeUtil::ValidateShape(largest).ok());
  EXPECT_EQ(largest.layout().minor_to_major.front(), kMaxRank - 1);
  const Shape too_many(F32, std::vector<int64_t>(kMaxRank + 1, 1));
  const absl::Status status = ShapeUtil::ValidateShape(too_many);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("rank 32768"), std::string_view::npos) << status;
  EXPECT_FALSE(ShapeUtil::ParseShape("f32[2,3]{65537,0}").ok());
  EXPECT_FALSE(ShapeUtil::ParseShape("f32[2,3]{1,-1}").ok());
}

TEST(HloShapeTest, ParseRoundTrips) {
  for (const char* text : {"f32[128,512]{1,0}", "f32[]", "(f32[2]{0}, s32[])", "token[]",
                           "f32[2,3]{0,1}", "((pred[], u64[4]{0}), bf16[1,1,1]{2,1,0})"}) {
    absl::StatusOr<Shape> shape = ShapeUtil::ParseShape(text);
    ASSERT_TRUE(shape.ok()) << text << ": " << shape.status();
    EXPECT_EQ(shape->ToString(), text);
  }
  EXPECT_EQ(ShapeUtil::ParseShape("f32[2,3]").value(), ShapeUtil::MakeShape(F32, {2, 3}));
  EXPECT_FALSE(ShapeUtil::ParseShape("f32[2,3]{0,0}").ok());  // not a permutation
  EXPECT_FALSE(ShapeUtil::ParseShape("q32[2]").ok());
  EXPECT_FALSE(ShapeUtil::ParseShape("f32[2").ok());
  EXPECT_FALSE(ShapeUtil::ParseShape("f32[-1]").ok());
}

TEST(HloLiteralTest, PrintsLikeXla) {
  EXPECT_EQ(Literal::CreateR0<float>(1.5f).ToString(), "1.5");
  EXPECT_EQ(Literal::CreateR0<float>(0.1f).ToString(), "0.1");
  EXPECT_EQ(Literal::CreateR0<double>(0.1).ToString(), "0.1");
  EXPECT_EQ(Literal::CreateR0<float>(1.0f).ToString(), "1");
  EXPECT_EQ(Literal::CreateR1<int32_t>({1, 2, 3}).ToString(), "{1, 2, 3}");
  EXPECT_EQ(Literal::CreateR0<bool>(true).ToString(), "true");
  EXPECT_EQ(Literal::CreateScalar(F32, -INFINITY).ToString(), "-inf");
  EXPECT_EQ(Literal::CreateScalar(F64, NAN).ToString(), "nan");
  EXPECT_EQ(Literal::CreateR0<uint64_t>(18446744073709551615ull).ToString(),
            "18446744073709551615");
  Literal m(ShapeUtil::MakeShape(S8, {2, 2}));
  for (int i = 0; i < 4; ++i) m.SetFromInt64(i, i - 2);
  EXPECT_EQ(m.ToString(), "{{-2, -1}, {0, 1}}");
  EXPECT_EQ(Literal::CreateTuple({Literal::CreateR0<int32_t>(1),
                                  Literal::CreateR1<float>({2.f, 3.f})})
                .ToString(),
            "(1, {2, 3})");
}

TEST(HloLiteralTest, HoldsEveryArrayType) {
  for (PrimitiveType t : {PRED, S8, S16, S32, S64, U8, U16, U32, U64, F16, BF16, F32, F64}) {
    Literal lit(ShapeUtil::MakeShape(t, {3}));
    lit.SetFromDouble(0, 1);
    lit.SetFromDouble(1, 0);
    lit.SetFromDouble(2, t == PRED ? 1 : 5);
    EXPECT_EQ(lit.untyped_data().size(), 3 * ByteSizeOfPrimitiveType(t));
    absl::StatusOr<Literal> back = Literal::Parse(lit.ToString(), lit.shape());
    ASSERT_TRUE(back.ok()) << PrimitiveTypeName(t) << ": " << back.status();
    EXPECT_TRUE(*back == lit) << PrimitiveTypeName(t) << " " << lit.ToString();
    EXPECT_EQ(lit.GetAsDouble(2), t == PRED ? 1 : 5);
  }
}

TEST(HloLiteralTest, HalfAndBfloat16RoundTrip) {
  for (float v : {0.f, 1.f, -2.5f, 65504.f, 6.1035156e-05f, 5.9604645e-08f, 0.1f}) {
    EXPECT_EQ(FloatToHalf(HalfToFloat(FloatToHalf(v))), FloatToHalf(v)) << v;
  }
  EXPECT_EQ(HalfToFloat(FloatToHalf(1.5f)), 1.5f);
  EXPECT_EQ(HalfToFloat(FloatToHalf(65504.f)), 65504.f);
  EXPECT_TRUE(std::isinf(HalfToFloat(FloatToHalf(1e6f))));
  EXPECT_EQ(HalfToFloat(FloatToHalf(5.9604645e-08f)), 5.9604645e-08f);  // smallest subnormal
  EXPECT_EQ(BFloat16ToFloat(FloatToBFloat16(1.5f)), 1.5f);
  EXPECT_EQ(BFloat16ToFloat(FloatToBFloat16(3.140625f)), 3.140625f);
  Literal h(ShapeUtil::MakeShape(F16, {1}));
  h.SetFromDouble(0, 0.1);
  EXPECT_EQ(h.ToString(), "{0.1}");
}

TEST(HloLiteralTest, ParseErrors) {
  EXPECT_FALSE(Literal::Parse("{1, 2}", ShapeUtil::MakeShape(S32, {3})).ok());
  EXPECT_FALSE(Literal::Parse("{1, 2, 3, 4}", ShapeUtil::MakeShape(S32, {3})).ok());
  EXPECT_FALSE(Literal::Parse("maybe", ShapeUtil::MakeScalarShape(PRED)).ok());
  EXPECT_FALSE(Literal::Parse("1.5x", ShapeUtil::MakeScalarShape(F32)).ok());
  absl::Status st = Literal::Parse("{1, 2}", ShapeUtil::MakeShape(S32, {3})).status();
  EXPECT_NE(st.message().find("dimension 0 has size 3"), std::string::npos) << st;
}

}  // namespace
}  // namespace jx::hlo::shape_test
