#include "jx/core/param_map.h"

#include <gtest/gtest.h>

#include "jx/core/errors.h"
#include "jx/core/primitive.h"

namespace jx::param_map_test {
namespace {

TEST(ParamMapTest, CanonicalOrderHashAndPrint) {
  ParamMap a{{"keepdims", false}, {"axes", std::vector<int64_t>{0, 2}}};
  ParamMap b{{"axes", std::vector<int64_t>{0, 2}}, {"keepdims", false}};
  EXPECT_EQ(a, b);
  EXPECT_EQ(a.Hash(), b.Hash());
  EXPECT_EQ(a.ToString(), "axes=(0, 2) keepdims=False");
  EXPECT_EQ(a.GetInts("axes"), (std::vector<int64_t>{0, 2}));
  ParamMap c{{"axes", std::vector<int64_t>{1}}};
  EXPECT_NE(a, c);
  EXPECT_EQ(c.ToString(), "axes=(1,)");
  EXPECT_THROW(a.GetInt("axes"), InternalError);
  EXPECT_THROW(a.GetInt("missing"), InternalError);
}

TEST(ParamMapTest, NestedListsAndDTypes) {
  ParamMap p{{"dimension_numbers", ParamList{ParamList{std::vector<int64_t>{1}, std::vector<int64_t>{0}},
                                             ParamList{std::vector<int64_t>{}, std::vector<int64_t>{}}}},
             {"preferred_element_type", float32}};
  EXPECT_EQ(p.ToString(), "dimension_numbers=(((1,), (0,)), ((), ())) preferred_element_type=float32");
}

TEST(PrimitiveTest, InternedHandles) {
  Primitive a = Primitive::Intern("test_prim_a");
  EXPECT_EQ(a, Primitive::Intern("test_prim_a"));
  EXPECT_NE(a, Primitive::Intern("test_prim_b"));
  EXPECT_EQ(a.name(), "test_prim_a");
}

}  // namespace
}  // namespace jx::param_map_test
