// The instruction slab (compiler/hlo/hlo_instruction_slab.cc) hands out the free slot of
// lowest address, so instructions created one after another lie in increasing addresses
// even where they reuse the slots of freed ones: a walk in creation (storage) order reads
// memory in sequence.
#include "jx/compiler/hlo/hlo_instruction_slab.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <random>
#include <vector>

#include "jx/compiler/hlo/hlo_builder.h"
#include "jx/compiler/hlo/hlo_module.h"

namespace jx::hlo::instruction_slab_test {
namespace {

const Shape& F32x4() {
  static const Shape shape = ShapeUtil::MakeShape(F32, {4});
  return shape;
}

// A module of one computation: a parameter and a chain of n negations.
std::unique_ptr<HloModule> Chain(int n) {
  auto module = std::make_unique<HloModule>("chain");
  HloBuilder b(module.get(), "main");
  HloInstruction* last = b.Parameter(0, F32x4()).value();
  for (int i = 0; i < n; ++i) last = b.Negate(last).value();
  module->set_entry_computation(b.Build(last).value());
  return module;
}

// Where each instruction is, in storage order (the order they were created in).
std::vector<uintptr_t> Addresses(const HloComputation& c) {
  std::vector<uintptr_t> addresses;
  for (const HloInstruction* instr : c.instructions()) addresses.push_back(reinterpret_cast<uintptr_t>(instr));
  return addresses;
}

// A module built where a freed one lay (its slots freed first to last, which a
// last-freed-first list hands out backwards), across more than one 2 MiB chunk of slots.
TEST(InstructionSlabTest, AModuleBuiltWhereAFreedOneLayIsInCreationOrder) {
  if (!kInstructionsFromSlab) GTEST_SKIP() << "sanitized builds allocate instructions from the heap";
  constexpr int kInstructions = 8000;  // 320-byte slots: about 6,500 per chunk
  Chain(kInstructions).reset();
  const std::unique_ptr<HloModule> module = Chain(kInstructions);
  const std::vector<uintptr_t> addresses = Addresses(*module->entry_computation());
  EXPECT_TRUE(std::is_sorted(addresses.begin(), addresses.end()));
}

// Instructions removed in a scattered order, between instructions that stay (every other
// slot), and as many added: the added ones take the freed slots in increasing addresses.
TEST(InstructionSlabTest, InstructionsAddedAfterScatteredRemovalsAreInCreationOrder) {
  if (!kInstructionsFromSlab) GTEST_SKIP() << "sanitized builds allocate instructions from the heap";
  HloModule module("m");
  HloBuilder b(&module, "main");
  HloInstruction* x = b.Parameter(0, F32x4()).value();
  std::vector<HloInstruction*> removed;
  HloInstruction* kept = x;
  for (int i = 0; i < 500; ++i) {
    kept = b.Negate(kept).value();
    removed.push_back(b.Sin(x).value());
  }
  HloComputation* c = b.Build(kept).value();
  std::shuffle(removed.begin(), removed.end(), std::mt19937(7));
  for (HloInstruction* instr : removed) ASSERT_TRUE(c->RemoveInstruction(instr).ok());
  std::vector<uintptr_t> added;
  for (size_t i = 0; i < removed.size(); ++i) {
    added.push_back(reinterpret_cast<uintptr_t>(c->AddInstruction(HloInstruction::Create(HloOpcode::kExp, F32x4(), {x}))));
  }
  EXPECT_TRUE(std::is_sorted(added.begin(), added.end()));
}

}  // namespace
}  // namespace jx::hlo::instruction_slab_test
