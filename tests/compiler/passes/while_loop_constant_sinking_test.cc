// WhileLoopConstantSinking: a splat (or scalar constant) a loop carries unchanged is read as
// a splat built in the body; an element that changes or does not start as a constant is left.
// Values are integers (ParseAndRun's check is exact).
#include "jx/compiler/passes/while_loop_constant_sinking.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "pass_test_util.h"
#include "while_loop_state_test_util.h"

namespace jx::hlo::while_loop_constant_sinking_test {
namespace {

using ::jx::hlo::testing::Body;
using ::jx::hlo::testing::ComputationLines;
using ::jx::hlo::testing::Loop;
using ::jx::hlo::testing::ParseAndRun;
using ::testing::HasSubstr;

TEST(WhileLoopConstantSinkingTest, ASplatCarriedUnchangedIsReadAsASplat) {
  auto module = ParseAndRun<WhileLoopConstantSinking>(Loop(), true);
  ASSERT_NE(module, nullptr);
  const std::vector<std::string> body = ComputationLines(Body(*module));
  // The slice reads a splat built in the body; the element only passes through.
  EXPECT_THAT(body, ::testing::Contains(HasSubstr("s32[5,4]{1,0} broadcast(")));
  for (const std::string& line : body) {
    if (line.find("dynamic-slice(") != std::string::npos && line.find("%o ") == 0) {
      EXPECT_THAT(line, ::testing::Not(HasSubstr("%ones")));
    }
  }
}

TEST(WhileLoopConstantSinkingTest, NotAnElementThatChangesOrIsNotAConstant) {
  // The splat (element 2) is replaced by hs each trip; element 4 starts as a parameter.
  std::string text = Loop();
  text.replace(text.find("tuple(%i2, %g2, %ones,"), std::string("tuple(%i2, %g2, %ones,").size(),
               "tuple(%i2, %g2, %hs,");
  ParseAndRun<WhileLoopConstantSinking>(text, false);
}

}  // namespace
}  // namespace jx::hlo::while_loop_constant_sinking_test
