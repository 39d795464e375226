// HloModule::Clone copies structurally: the copy prints as the original (the printed text is
// the oracle here), is independent of it, keeps ids, user order, schedules and fusion links,
// and names new instructions as the original would.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "jx/compiler/hlo/hlo_builder.h"
#include "jx/compiler/hlo/hlo_module.h"
#include "jx/compiler/hlo/hlo_parser.h"
#include "jx/compiler/hlo/hlo_verifier.h"
#include "everything_hlo.h"

namespace jx::hlo::module_clone_test {
namespace {

using ::testing::HasSubstr;

std::unique_ptr<HloModule> Parse(std::string_view text) {
  absl::StatusOr<std::unique_ptr<HloModule>> module = ParseHloModule(text);
  EXPECT_TRUE(module.ok()) << module.status();
  return module.ok() ? *std::move(module) : nullptr;
}

// Every instruction and computation of `clone` belongs to it, none to `original`.
void ExpectOwnedBy(const HloModule& clone) {
  for (const HloComputation* c : clone.computations()) {
    EXPECT_EQ(c->parent(), &clone);
    for (const HloInstruction* instr : c->instructions()) {
      EXPECT_EQ(instr->parent(), c) << instr->name();
      for (const HloInstruction* operand : instr->operands()) EXPECT_EQ(operand->parent(), c) << instr->name();
      for (const HloInstruction* user : instr->users()) EXPECT_EQ(user->parent(), c) << instr->name();
      for (const HloComputation* called : instr->called_computations()) {
        if (called != nullptr) {
          EXPECT_EQ(called->parent(), &clone) << instr->name();
        }
      }
    }
  }
}

TEST(ModuleCloneTest, EveryOpcodeAndAttributePrintsTheSame) {
  std::unique_ptr<HloModule> module = Parse(testing::kEverythingHlo);
  ASSERT_NE(module, nullptr);
  std::unique_ptr<HloModule> clone = module->Clone().value();
  EXPECT_EQ(clone->ToString(), module->ToString());
  EXPECT_TRUE(VerifyHloModule(*clone).ok());
  ExpectOwnedBy(*clone);
  EXPECT_EQ(clone->entry_computation()->name(), module->entry_computation()->name());
  EXPECT_EQ(clone->entry_computation()->parent(), clone.get());
  // The fused computation points back at the clone's fusion instruction.
  const HloInstruction* fusion = clone->entry_computation()->GetInstructionWithName("e_fusion");
  ASSERT_NE(fusion, nullptr);
  EXPECT_EQ(fusion->fused_instructions_computation()->FusionInstruction(), fusion);
}

// A module as a pass leaves it: removed slots, an operand defined after its user in the
// instruction list, a shared value with many users (user set), a schedule.
std::unique_ptr<HloModule> EditedModule() {
  auto module = std::make_unique<HloModule>("edited");
  HloBuilder b(module.get(), "main");
  const Shape f32 = ShapeUtil::MakeShape(F32, {8});
  HloInstruction* x = b.Parameter(0, f32, "x").value();
  HloInstruction* y = b.Sin(x).value();
  for (int i = 0; i < 20; ++i) y = b.Multiply(b.Cos(y).value(), x).value();
  HloInstruction* dead = b.Exp(x).value();
  HloInstruction* root = b.Add(y, x).value();
  HloComputation* c = b.Build(root).value();
  module->set_entry_computation(c);
  EXPECT_TRUE(c->RemoveInstruction(dead).ok());
  // The root now reads an instruction added after it.
  HloInstruction* late = c->AddInstruction(HloInstruction::Create(HloOpcode::kNegate, f32, {x}));
  EXPECT_TRUE(root->ReplaceOperandWith(1, late).ok());
  c->set_schedule(c->MakeInstructionPostOrder());
  return module;
}

TEST(ModuleCloneTest, EditedModuleKeepsIdsUsersAndSchedule) {
  std::unique_ptr<HloModule> module = EditedModule();
  std::unique_ptr<HloModule> clone = module->Clone().value();
  EXPECT_EQ(clone->ToString(), module->ToString());
  EXPECT_TRUE(VerifyHloModule(*clone).ok());
  ExpectOwnedBy(*clone);
  const HloComputation* from = module->entry_computation();
  const HloComputation* to = clone->entry_computation();
  ASSERT_EQ(to->instruction_count(), from->instruction_count());
  std::vector<HloInstruction*> a, b;
  for (HloInstruction* i : from->instructions()) a.push_back(i);
  for (HloInstruction* i : to->instructions()) b.push_back(i);
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(b[i]->name(), a[i]->name());
    EXPECT_EQ(b[i]->unique_id(), a[i]->unique_id());
    ASSERT_EQ(b[i]->user_count(), a[i]->user_count()) << a[i]->name();
    for (int64_t u = 0; u < a[i]->user_count(); ++u) EXPECT_EQ(b[i]->users()[u]->name(), a[i]->users()[u]->name());
  }
  // x has 22 users: membership goes through the copied user set.
  const HloInstruction* x = to->parameter_instruction(0);
  EXPECT_EQ(x->user_count(), 22);
  for (const HloInstruction* user : x->users()) EXPECT_TRUE(x->HasUser(user));
  EXPECT_FALSE(x->HasUser(to->root_instruction()));
  ASSERT_EQ(to->schedule().size(), from->schedule().size());
  for (size_t i = 0; i < from->schedule().size(); ++i) {
    EXPECT_EQ(to->schedule()[i]->parent(), to);
    EXPECT_EQ(to->schedule()[i]->name(), from->schedule()[i]->name());
  }
  EXPECT_EQ(to->MakeSequentialOrder().size(), from->MakeSequentialOrder().size());
}

std::vector<std::string> Names(const std::vector<HloInstruction*>& instrs) {
  std::vector<std::string> names;
  for (const HloInstruction* instr : instrs) names.push_back(instr->name());
  return names;
}

// The original's post order comes with the copy (mapped to the copy's instructions), and
// the copy's edits still invalidate it.
TEST(ModuleCloneTest, ThePostOrderComesWithTheCopyAndFollowsItsEdits) {
  std::unique_ptr<HloModule> module = EditedModule();
  const HloComputation* from = module->entry_computation();
  const std::vector<HloInstruction*> order = from->MakeInstructionPostOrder();
  std::unique_ptr<HloModule> clone = module->Clone().value();
  HloComputation* to = clone->entry_computation();
  const std::vector<HloInstruction*> copied = to->MakeInstructionPostOrder();
  EXPECT_EQ(Names(copied), Names(order));
  for (const HloInstruction* instr : copied) EXPECT_EQ(instr->parent(), to) << instr->name();

  HloInstruction* root = to->root_instruction();
  HloInstruction* neg = to->AddInstruction(HloInstruction::Create(HloOpcode::kNegate, root->shape(), {root}));
  to->set_root_instruction(neg);
  EXPECT_EQ(to->MakeInstructionPostOrder().back(), neg);
  EXPECT_EQ(Names(from->MakeInstructionPostOrder()), Names(order));
}

TEST(ModuleCloneTest, CloneIsIndependentAndNamesAsTheOriginalWould) {
  std::unique_ptr<HloModule> module = EditedModule();
  const std::string before = module->ToString();
  std::unique_ptr<HloModule> clone = module->Clone().value();
  HloComputation* to = clone->entry_computation();
  HloInstruction* root = to->root_instruction();
  HloInstruction* neg = to->AddInstruction(HloInstruction::Create(HloOpcode::kNegate, root->shape(), {root}));
  to->set_root_instruction(neg);
  EXPECT_EQ(module->ToString(), before);
  EXPECT_THAT(clone->ToString(), HasSubstr("ROOT %negate."));
  // The same addition on the original gets the same generated name.
  HloComputation* from = module->entry_computation();
  HloInstruction* neg0 = from->AddInstruction(
      HloInstruction::Create(HloOpcode::kNegate, root->shape(), {from->root_instruction()}));
  EXPECT_EQ(neg0->name(), neg->name());
  EXPECT_EQ(neg0->unique_id(), neg->unique_id());
  EXPECT_NE(module->AddComputation("main")->name(), "main");
  EXPECT_EQ(clone->AddComputation("main")->name(), module->computations().back()->name());
}

TEST(ModuleCloneTest, CloneOfAClonePrintsTheSame) {
  std::unique_ptr<HloModule> module = Parse(testing::kEverythingHlo);
  ASSERT_NE(module, nullptr);
  std::unique_ptr<HloModule> twice = module->Clone().value()->Clone().value();
  EXPECT_EQ(twice->ToString(), module->ToString());
}

}  // namespace
}  // namespace jx::hlo::module_clone_test
