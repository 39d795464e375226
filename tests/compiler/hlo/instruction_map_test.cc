// InstructionMap: a value per instruction, by unique id within a computation's range and
// hashed outside it; instructions added after the map was made are covered too.
#include "jx/compiler/hlo/instruction_map.h"

#include <gtest/gtest.h>

#include <vector>

#include "jx/compiler/hlo/hlo_builder.h"
#include "jx/compiler/hlo/hlo_module.h"

namespace jx::hlo::instruction_map_test {
namespace {

TEST(InstructionMapTest, HoldsAValuePerInstructionOfTheComputationAndOfOthers) {
  HloModule module("m");
  HloBuilder a(&module, "a");
  HloInstruction* x = a.Parameter(0, ShapeUtil::MakeScalarShape(F32)).value();
  std::vector<HloInstruction*> chain = {x};
  for (int i = 0; i < 5; ++i) chain.push_back(a.Negate(chain.back()).value());
  HloComputation* c = a.Build(chain.back()).value();
  module.set_entry_computation(c);

  InstructionMap<int> map(*c);
  for (size_t i = 0; i < chain.size(); ++i) EXPECT_EQ(map.Get(chain[i]), 0);
  for (size_t i = 0; i < chain.size(); ++i) map[chain[i]] = static_cast<int>(i) + 10;

  // Added after the map was made: a later id, past the table's initial size.
  HloInstruction* added =
      c->AddInstruction(HloInstruction::Create(HloOpcode::kNegate, x->shape(), {x}));
  EXPECT_EQ(map.Get(added), 0);
  map[added] = 99;

  // An instruction of another computation with an id far beyond this one's range.
  HloBuilder b(&module, "b");
  HloInstruction* y = b.Parameter(0, ShapeUtil::MakeScalarShape(F32)).value();
  HloInstruction* far = y;
  for (int i = 0; i < 2000; ++i) far = b.Negate(far).value();
  b.Build(far).value();
  ASSERT_GT(far->unique_id() - x->unique_id(), 4 * static_cast<int64_t>(chain.size()) + 1024);
  EXPECT_EQ(map.Get(far), 0);
  map[far] = 7;

  for (size_t i = 0; i < chain.size(); ++i) EXPECT_EQ(map.Get(chain[i]), static_cast<int>(i) + 10);
  EXPECT_EQ(map.Get(added), 99);
  EXPECT_EQ(map.Get(far), 7);
  EXPECT_EQ(map.Get(y), 0);
}

TEST(InstructionMapTest, AnEmptyComputationHashesEverything) {
  HloModule module("m");
  HloBuilder a(&module, "a");
  HloInstruction* x = a.Parameter(0, ShapeUtil::MakeScalarShape(F32)).value();
  a.Build(x).value();
  InstructionMap<int> map(/*lowest_id=*/-1, /*n=*/0);
  map[x] = 3;
  EXPECT_EQ(map.Get(x), 3);
}

}  // namespace
}  // namespace jx::hlo::instruction_map_test
