// HloModule and HloComputation bookkeeping that passes and the printer rely on: the
// computation post order, computation names, batch removal, and the instruction list.
#include "jx/compiler/hlo/hlo_module.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "jx/compiler/hlo/hlo_builder.h"
#include "jx/compiler/hlo/hlo_parser.h"
#include "jx/compiler/hlo/hlo_verifier.h"
#include "jx/compiler/hlo/str_util.h"

namespace jx::hlo::module_test {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

// The computation post order as it was defined before MakeComputationPostOrder stopped
// building an instruction post order of every computation: callees found in each caller's
// instruction post order, uncalled computations in creation order, then the entry. The
// printer, and every pass that walks computations, follow this order, so names and text
// depend on it.
std::vector<HloComputation*> ReferencePostOrder(const HloModule& module) {
  absl::flat_hash_set<const HloComputation*> called, visited;
  for (HloComputation* c : module.computations()) {
    for (HloInstruction* instr : c->instructions()) {
      for (HloComputation* callee : instr->called_computations()) called.insert(callee);
    }
  }
  std::vector<HloComputation*> order;
  auto visit_from = [&](HloComputation* start) {
    if (!visited.insert(start).second) return;
    struct Frame {
      HloComputation* c;
      std::vector<HloComputation*> callees;
      size_t next = 0;
    };
    std::vector<Frame> stack;
    auto push = [&](HloComputation* c) {
      Frame f{c, {}};
      for (HloInstruction* instr : c->MakeInstructionPostOrder()) {
        for (HloComputation* callee : instr->called_computations()) {
          if (callee != nullptr) f.callees.push_back(callee);
        }
      }
      stack.push_back(std::move(f));
    };
    push(start);
    while (!stack.empty()) {
      Frame& top = stack.back();
      if (top.next < top.callees.size()) {
        HloComputation* callee = top.callees[top.next++];
        if (visited.insert(callee).second) push(callee);
        continue;
      }
      order.push_back(top.c);
      stack.pop_back();
    }
  };
  HloComputation* entry = module.entry_computation();
  for (HloComputation* c : module.computations()) {
    if (c != entry && !called.contains(c)) visit_from(c);
  }
  if (entry != nullptr) visit_from(entry);
  for (HloComputation* c : module.computations()) visit_from(c);
  return order;
}

std::vector<std::string> Names(const std::vector<HloComputation*>& computations) {
  std::vector<std::string> out;
  for (const HloComputation* c : computations) out.push_back(c->name());
  return out;
}

// n fused computations defined in order fused.0 .. fused.<n-1>; the entry's fusions are
// listed in that order too, but the root tuple takes them last to first, and every third
// fusion is dead. Each fused computation reduces with %add, every second one also with
// %max (two distinct callees), so the post order differs from both the text order and
// the creation order.
std::string ManyFusionsText(int n) {
  std::string text = R"(HloModule many_fusions

%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(%a, %b)
}

%max (c: f32[], d: f32[]) -> f32[] {
  %c = f32[] parameter(0)
  %d = f32[] parameter(1)
  ROOT %m = f32[] maximum(%c, %d)
}
)";
  for (int i = 0; i < n; ++i) {
    const std::string k = std::to_string(i);
    StrAppend(&text, "\n%fused.", k, " (q.", k, ": f32[4]) -> f32[] {\n  %q.", k,
              " = f32[4]{0} parameter(0)\n  %z.", k, " = f32[] constant(0)\n");
    if (i % 2 == 0) {
      StrAppend(&text, "  %max.r", k, " = f32[] reduce(%q.", k, ", %z.", k,
                "), dimensions={0}, to_apply=%max\n  %add.r", k, " = f32[] reduce(%q.", k,
                ", %z.", k, "), dimensions={0}, to_apply=%add\n  ROOT %r.", k,
                " = f32[] add(%add.r", k, ", %max.r", k, ")\n}\n");
    } else {
      StrAppend(&text, "  ROOT %r.", k, " = f32[] reduce(%q.", k, ", %z.", k,
                "), dimensions={0}, to_apply=%add\n}\n");
    }
  }
  std::string fusions;
  std::vector<std::string> live;
  for (int i = 0; i < n; ++i) {
    StrAppend(&fusions, "  %f.", i, " = f32[] fusion(%p), kind=kInput, calls=%fused.", i, "\n");
    if (i % 3 != 2) live.insert(live.begin(), StrCat("%f.", i));
  }
  std::string shapes, operands;
  for (size_t i = 0; i < live.size(); ++i) {
    StrAppend(&shapes, i == 0 ? "" : ", ", "f32[]");
    StrAppend(&operands, i == 0 ? "" : ", ", live[i]);
  }
  StrAppend(&text, "\nENTRY %main (p: f32[4]) -> (", shapes, ") {\n  %p = f32[4]{0} parameter(0)\n",
            fusions, "  ROOT %t = (", shapes, ") tuple(", operands, ")\n}\n");
  return text;
}

TEST(HloModuleTest, ComputationPostOrderPinned) {
  auto module = ParseHloModule(ManyFusionsText(3));
  ASSERT_TRUE(module.ok()) << module.status();
  // The entry's post order starts with the dead %f.2, then the root tuple takes %f.1
  // before %f.0. %fused.2's root adds add.r2 and max.r2, in that order, so %add comes
  // before %max although %max's reduce comes first in the text.
  EXPECT_THAT(Names((*module)->MakeComputationPostOrder()),
              ElementsAre("add", "max", "fused.2", "fused.1", "fused.0", "main"));
  EXPECT_EQ(Names((*module)->MakeComputationPostOrder()), Names(ReferencePostOrder(**module)));
}

TEST(HloModuleTest, ComputationPostOrderWithManyFusionsMatchesTheInstructionPostOrder) {
  for (int n : {1, 2, 7, 64, 500}) {
    auto module = ParseHloModule(ManyFusionsText(n));
    ASSERT_TRUE(module.ok()) << module.status();
    ASSERT_TRUE(VerifyHloModule(**module).ok());
    const std::vector<HloComputation*> order = (*module)->MakeComputationPostOrder();
    EXPECT_EQ(order, ReferencePostOrder(**module)) << "n = " << n;
    EXPECT_EQ(order.size(), static_cast<size_t>(n + 3));
    // The printed module follows the same order.
    std::string expected = StrCat("HloModule many_fusions, entry_computation_layout={",
                                  (*module)->entry_computation()->ComputeProgramShape().ToString(),
                                  "}\n");
    for (const HloComputation* c : ReferencePostOrder(**module)) {
      StrAppend(&expected, "\n", c->ToString(), "\n");
    }
    EXPECT_EQ((*module)->ToString(), expected) << "n = " << n;
  }
}

TEST(HloModuleTest, ComputationPostOrderAfterEdits) {
  // Rewiring the entry changes which caller comes first; the order must follow.
  auto module = ParseHloModule(ManyFusionsText(6));
  ASSERT_TRUE(module.ok()) << module.status();
  HloComputation* entry = (*module)->entry_computation();
  HloInstruction* f0 = entry->GetInstructionWithName("f.0");
  HloInstruction* f4 = entry->GetInstructionWithName("f.4");
  ASSERT_NE(f0, nullptr);
  ASSERT_NE(f4, nullptr);
  ASSERT_TRUE(entry->root_instruction()->ReplaceOperandWith(0, f0).ok());  // was %f.4
  EXPECT_EQ((*module)->MakeComputationPostOrder(), ReferencePostOrder(**module));
  ASSERT_TRUE(entry->RemoveInstruction(f4).ok());
  EXPECT_EQ((*module)->MakeComputationPostOrder(), ReferencePostOrder(**module));
}

TEST(HloModuleTest, KeptComputationPostOrderFollowsEveryCallGraphEdit) {
  // MakeComputationPostOrder keeps its answer between calls; each edit below changes the
  // order, and the next call must see it.
  auto module = ParseHloModule(ManyFusionsText(6));
  ASSERT_TRUE(module.ok()) << module.status();
  HloModule& m = **module;
  auto names = [&] { return Names(m.MakeComputationPostOrder()); };
  ASSERT_THAT(names(), ElementsAre("add", "max", "fused.2", "fused.5", "fused.4", "fused.3",
                                   "fused.1", "fused.0", "main"));
  EXPECT_EQ(names(), Names(ReferencePostOrder(m)));  // kept: same answer

  // An operand swap inside %fused.2 (it calls %add and %max) puts %max first.
  HloComputation* fused2 = m.GetComputationWithName("fused.2");
  HloInstruction* root2 = fused2->root_instruction();
  HloInstruction* add_r2 = fused2->GetInstructionWithName("add.r2");
  HloInstruction* max_r2 = fused2->GetInstructionWithName("max.r2");
  ASSERT_TRUE(root2->ReplaceOperandWith(0, max_r2).ok());
  ASSERT_TRUE(root2->ReplaceOperandWith(1, add_r2).ok());
  EXPECT_EQ(names()[0], "max");
  EXPECT_EQ(names(), Names(ReferencePostOrder(m)));

  // A new computation nothing calls comes first (uncalled ones come in creation order).
  HloBuilder b(&m, "spare");
  HloInstruction* x = b.Parameter(0, ShapeUtil::MakeScalarShape(F32), "x").value();
  HloInstruction* y = b.Parameter(1, ShapeUtil::MakeScalarShape(F32), "y").value();
  HloComputation* spare = b.Build(b.Binary(HloOpcode::kMultiply, x, y).value()).value();
  EXPECT_EQ(names()[0], "spare");
  EXPECT_EQ(names(), Names(ReferencePostOrder(m)));

  // A reduce retargeted at it: %spare is now called, so it moves before its caller.
  HloComputation* fused1 = m.GetComputationWithName("fused.1");
  fused1->root_instruction()->set_to_apply(spare);
  EXPECT_EQ(names(), Names(ReferencePostOrder(m)));
  EXPECT_NE(names()[0], "spare");

  // A fusion retargeted at a copy of its computation (ReplaceCalledComputation).
  HloComputation* fused3 = m.GetComputationWithName("fused.3");
  HloBuilder copy(&m, "fused.3.copy");
  HloInstruction* q = copy.Parameter(0, ShapeUtil::MakeShape(F32, {4}), "q.copy").value();
  HloInstruction* z = copy.Constant(Literal::CreateScalar(F32, 0)).value();
  HloComputation* fused3_copy = copy.Build(copy.Reduce(q, z, {0}, spare).value()).value();
  HloInstruction* f3 = m.entry_computation()->GetInstructionWithName("f.3");
  f3->ReplaceCalledComputation(fused3, fused3_copy);
  EXPECT_EQ(names(), Names(ReferencePostOrder(m)));

  // The old computation removed.
  ASSERT_TRUE(m.RemoveComputation(fused3).ok());
  EXPECT_EQ(names(), Names(ReferencePostOrder(m)));

  // A clone starts from the original's order.
  auto clone = m.Clone();
  ASSERT_TRUE(clone.ok()) << clone.status();
  EXPECT_EQ(Names((*clone)->MakeComputationPostOrder()), names());

  // A fusion removed from the entry: its computation is then uncalled, so it comes first
  // (after %add, which it calls), then it is removed too.
  HloInstruction* f5 = m.entry_computation()->GetInstructionWithName("f.5");
  ASSERT_TRUE(m.entry_computation()->RemoveInstruction(f5).ok());
  EXPECT_EQ(names(), Names(ReferencePostOrder(m)));
  EXPECT_THAT(names(), ::testing::ElementsAreArray({"add", "fused.5", "max", "fused.2", "fused.4",
                                                     "spare", "fused.3.copy", "fused.1", "fused.0", "main"}));
  ASSERT_TRUE(m.RemoveComputation(m.GetComputationWithName("fused.5")).ok());
  EXPECT_EQ(names(), Names(ReferencePostOrder(m)));
  EXPECT_EQ(names().size(), 9u);
}

TEST(HloModuleTest, AddComputationTakesTheFirstFreeSuffix) {
  HloModule module("m");
  std::vector<HloComputation*> added;
  for (int i = 0; i < 5; ++i) added.push_back(module.AddComputation("f"));
  EXPECT_THAT(Names(added), ElementsAre("f", "f.1", "f.2", "f.3", "f.4"));
  // A freed name is found again, the lowest first, as a scan from 1 would.
  ASSERT_TRUE(module.RemoveComputations({added[3], added[1]}).ok());
  EXPECT_EQ(module.AddComputation("f")->name(), "f.1");
  EXPECT_EQ(module.AddComputation("f")->name(), "f.3");
  EXPECT_EQ(module.AddComputation("f")->name(), "f.5");
  ASSERT_TRUE(module.RemoveComputation(added[0]).ok());
  EXPECT_EQ(module.AddComputation("f")->name(), "f");
  // Names taken some other way are skipped.
  ASSERT_TRUE(module.AddComputationWithExactName("g.1").ok());
  EXPECT_EQ(module.AddComputation("g")->name(), "g");
  EXPECT_EQ(module.AddComputation("g")->name(), "g.2");
  // "f.05" is not a name AddComputation("f") makes; removing it frees nothing of f's.
  HloComputation* odd = module.AddComputationWithExactName("f.05").value();
  ASSERT_TRUE(module.RemoveComputation(odd).ok());
  EXPECT_EQ(module.AddComputation("f")->name(), "f.6");
  EXPECT_EQ(module.GetComputationWithName("f.05"), nullptr);
  EXPECT_EQ(module.GetComputationWithName("f.6")->name(), "f.6");
}

TEST(HloModuleTest, RemoveComputationsAllOrNothing) {
  auto module = ParseHloModule(ManyFusionsText(2));
  ASSERT_TRUE(module.ok()) << module.status();
  HloModule& m = **module;
  HloComputation* add = m.GetComputationWithName("add");
  HloComputation* max = m.GetComputationWithName("max");
  HloComputation* fused0 = m.GetComputationWithName("fused.0");
  // %fused.1 still calls %add.
  absl::Status st = m.RemoveComputations({add, max, fused0});
  EXPECT_EQ(st.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(st.message()), HasSubstr("cannot remove computation add: called by"));
  EXPECT_EQ(m.computation_count(), 5);
  st = m.RemoveComputations({max, m.entry_computation()});
  EXPECT_THAT(std::string(st.message()), HasSubstr("cannot remove the entry computation main"));
  EXPECT_EQ(m.computation_count(), 5);
  HloModule other("other");
  HloComputation* stranger = other.AddComputation("stranger");
  st = m.RemoveComputations({stranger});
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(m.computation_count(), 5);

  // The entry no longer calls %fused.0: it goes, with %max, which only it called.
  HloComputation* entry = m.entry_computation();
  HloInstruction* f0 = entry->GetInstructionWithName("f.0");
  HloInstruction* f1 = entry->GetInstructionWithName("f.1");
  ASSERT_TRUE(f0->ReplaceAllUsesWith(f1).ok());
  ASSERT_TRUE(entry->RemoveInstruction(f0).ok());
  ASSERT_TRUE(m.RemoveComputations({fused0, max}).ok());
  EXPECT_THAT(Names(m.computations()), ElementsAre("add", "fused.1", "main"));
  EXPECT_EQ(m.GetComputationWithName("max"), nullptr);
  EXPECT_TRUE(VerifyHloModule(m).ok());
}

TEST(HloComputationTest, InstructionListKeepsOrderThroughRemovals) {
  HloModule module("m");
  HloBuilder b(&module, "main");
  const Shape s = ShapeUtil::MakeShape(F32, {4});
  HloInstruction* x = b.Parameter(0, s).value();
  std::vector<HloInstruction*> chain = {x};
  for (int i = 0; i < 300; ++i) chain.push_back(b.Negate(chain.back()).value());
  std::vector<HloInstruction*> dead;
  for (int i = 0; i < 300; ++i) dead.push_back(b.Sin(x).value());
  HloComputation* c = b.Build(chain.back()).value();
  ASSERT_EQ(c->instruction_count(), 601);

  // Removing while a range is alive: each remaining instruction is seen once, in order,
  // and instructions added meanwhile are seen too (as with a list).
  std::vector<HloInstruction*> seen;
  HloInstruction* added = nullptr;
  for (HloInstruction* instr : c->instructions()) {
    seen.push_back(instr);
    if (instr == chain.back()) {
      for (HloInstruction* d : dead) ASSERT_TRUE(c->RemoveInstruction(d).ok());
      added = c->AddInstruction(HloInstruction::Create(HloOpcode::kCos, s, {x}));
    }
  }
  std::vector<HloInstruction*> expected = chain;
  expected.push_back(added);
  EXPECT_EQ(seen, expected);
  EXPECT_EQ(c->instruction_count(), 302);

  // Later removals compact the storage; order, lookups and the post order still hold.
  for (int i = 0; i < 200; ++i) {
    HloInstruction* extra = c->AddInstruction(HloInstruction::Create(HloOpcode::kExp, s, {x}));
    ASSERT_TRUE(c->RemoveInstruction(extra).ok());
  }
  ASSERT_TRUE(c->RemoveInstruction(added).ok());
  seen.clear();
  for (HloInstruction* instr : c->instructions()) seen.push_back(instr);
  EXPECT_EQ(seen, chain);
  EXPECT_EQ(c->MakeInstructionPostOrder(), chain);
  EXPECT_EQ(c->GetInstructionWithName(chain[150]->name()), chain[150]);
  c->set_schedule(chain);
  EXPECT_EQ(c->MakeSequentialOrder(), chain);
  EXPECT_EQ(c->RemoveInstruction(chain[1]).code(), absl::StatusCode::kFailedPrecondition);
  module.set_entry_computation(c);
  EXPECT_TRUE(VerifyHloModule(module).ok());

  HloModule other("other");
  HloBuilder ob(&other, "main");
  HloInstruction* stranger = ob.Parameter(0, s).value();
  EXPECT_EQ(c->RemoveInstruction(stranger).code(), absl::StatusCode::kInvalidArgument);
}

// Fusion moves a group's members into the fused computation: name, id, attributes and
// edges stay, the source computation forgets the instruction, both post orders follow.
TEST(HloComputationTest, MoveInstructionFromKeepsTheInstruction) {
  HloModule module("m");
  const Shape s = ShapeUtil::MakeShape(F32, {4});
  HloBuilder b(&module, "main");
  HloInstruction* x = b.Parameter(0, s).value();
  HloInstruction* e = b.Exp(x).value();
  HloInstruction* n = b.Negate(e).value();
  HloComputation* main = b.Build(n).value();
  module.set_entry_computation(main);
  ASSERT_THAT(main->MakeInstructionPostOrder(), ElementsAre(x, e, n));
  HloBuilder fb(&module, "fused");
  HloInstruction* p = fb.Parameter(0, s).value();
  HloComputation* fused = fb.Build(p).value();

  const std::string name = e->name();
  const int64_t id = e->unique_id();
  ASSERT_TRUE(e->ReplaceOperandWith(0, p).ok());
  ASSERT_TRUE(fused->MoveInstructionFrom(e).ok());
  EXPECT_EQ(e->parent(), fused);
  EXPECT_EQ(e->name(), name);
  EXPECT_EQ(e->unique_id(), id);
  EXPECT_EQ(fused->instruction_count(), 2);
  EXPECT_EQ(main->instruction_count(), 2);
  EXPECT_EQ(fused->GetInstructionWithName(name), e);
  EXPECT_EQ(main->GetInstructionWithName(name), nullptr);
  fused->set_root_instruction(e);
  EXPECT_THAT(fused->MakeInstructionPostOrder(), ElementsAre(p, e));
  // n still reads e across computations until the caller rewires it; main's walk follows it
  // (e and p are not main's: their slots are the fused computation's, not main's).
  EXPECT_THAT(main->MakeInstructionPostOrder(), ElementsAre(x, p, e, n));
  auto fusion = HloInstruction::Create(HloOpcode::kFusion, s, {x});
  fusion->set_fusion_kind(FusionKind::kLoop);
  HloInstruction* f = main->AddInstruction(std::move(fusion));
  f->set_fused_computation(fused);
  ASSERT_TRUE(n->ReplaceOperandWith(0, f).ok());
  EXPECT_THAT(main->MakeInstructionPostOrder(), ElementsAre(x, f, n));
  const absl::Status verified = VerifyHloModule(module);
  EXPECT_TRUE(verified.ok()) << verified;

  // Parameters, roots, instructions already there and strangers stay where they are.
  EXPECT_EQ(fused->MoveInstructionFrom(x).code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(fused->MoveInstructionFrom(n).code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(fused->MoveInstructionFrom(e).code(), absl::StatusCode::kInvalidArgument);
  HloModule other("other");
  HloBuilder ob(&other, "main");
  HloInstruction* y = ob.Parameter(0, s).value();
  HloInstruction* stranger = ob.Exp(y).value();
  ob.Build(ob.Negate(stranger).value()).value();
  EXPECT_EQ(fused->MoveInstructionFrom(stranger).code(), absl::StatusCode::kInvalidArgument);
}

// ReplaceAllUsesWith rewires every user and edits both user lists once (a value a whole
// program reads has tens of thousands of users); the edges it leaves are those of
// ReplaceUseWith user by user: the same operands, the same user lists in the same order, a
// new producer reading the old value keeps reading it, and a user that reads the old value
// twice or already reads the new producer is listed once.
TEST(HloComputationTest, ReplaceAllUsesWithLeavesTheEdgesOfOneUseAtATime) {
  struct Graph {
    HloModule module{"m"};
    HloInstruction* x = nullptr;
    HloInstruction* producer = nullptr;  // reads x; already has a user of its own
    HloInstruction* fresh = nullptr;     // no users yet
    HloComputation* c = nullptr;
  };
  auto build = [](Graph& g) {
    HloBuilder b(&g.module, "main");
    const Shape s = ShapeUtil::MakeShape(F32, {4});
    g.x = b.Parameter(0, s).value();
    g.fresh = b.Parameter(1, s).value();
    g.producer = b.Exp(g.x).value();
    std::vector<HloInstruction*> outs = {b.Negate(g.producer).value()};
    for (int i = 0; i < 30; ++i) {
      HloInstruction* user = i % 3 == 0   ? b.Add(g.x, g.x).value()           // reads x twice
                             : i % 3 == 1 ? b.Multiply(g.x, g.producer).value()  // reads both
                                          : b.Sin(g.x).value();
      outs.push_back(user);
    }
    g.c = b.Build(b.Tuple(outs).value()).value();
    g.module.set_entry_computation(g.c);
  };
  auto edges = [](const HloComputation& c) {
    std::vector<std::string> lines;
    for (const HloInstruction* instr : c.instructions()) {
      std::string line = instr->name() + " reads";
      for (const HloInstruction* operand : instr->operands()) line += " " + operand->name();
      line += "; read by";
      for (const HloInstruction* user : instr->users()) line += " " + user->name();
      lines.push_back(line);
    }
    return lines;
  };
  for (const bool onto_fresh : {false, true}) {
    SCOPED_TRACE(onto_fresh ? "onto a producer without users" : "onto a user of x");
    Graph bulk, reference;
    build(bulk);
    build(reference);
    ASSERT_EQ(bulk.x->user_count(), 31);
    ASSERT_TRUE(bulk.x->ReplaceAllUsesWith(onto_fresh ? bulk.fresh : bulk.producer).ok());
    HloInstruction* to = onto_fresh ? reference.fresh : reference.producer;
    const InstructionVector users = reference.x->users();
    for (HloInstruction* user : users) {
      if (user == to) continue;
      ASSERT_TRUE(reference.x->ReplaceUseWith(user, to).ok());
    }
    EXPECT_EQ(edges(*bulk.c), edges(*reference.c));
    EXPECT_EQ(bulk.x->user_count(), onto_fresh ? 0 : 1);
    HloInstruction* target = onto_fresh ? bulk.fresh : bulk.producer;
    for (const HloInstruction* user : target->users()) {
      EXPECT_TRUE(target->HasUser(user));
      EXPECT_FALSE(bulk.x->HasUser(user) && user != target);
    }
    const absl::Status verified = VerifyHloModule(bulk.module);
    EXPECT_TRUE(verified.ok()) << verified;
  }
}

// Instructions come from a slab of cache-line aligned slots that removed instructions
// give back: every instruction starts a cache line, and reusing the slots of removed ones
// leaves the live instructions (and those detached from any computation) intact.
TEST(HloComputationTest, InstructionsStartOnACacheLineAndSurviveSlotReuse) {
  static_assert(alignof(HloInstruction) == 64);
  HloModule module("m");
  HloBuilder b(&module, "main");
  const Shape s = ShapeUtil::MakeShape(F32, {4});
  HloInstruction* x = b.Parameter(0, s).value();
  std::vector<HloInstruction*> kept = {x}, dropped;
  for (int i = 0; i < 100; ++i) {
    kept.push_back(b.Negate(kept.back()).value());
    dropped.push_back(b.Sin(x).value());
  }
  HloComputation* c = b.Build(kept.back()).value();
  std::unique_ptr<HloInstruction> detached = HloInstruction::Create(HloOpcode::kCos, s, {});
  for (HloInstruction* d : dropped) ASSERT_TRUE(c->RemoveInstruction(d).ok());
  std::vector<HloInstruction*> added;
  for (int i = 0; i < 100; ++i) {
    added.push_back(c->AddInstruction(HloInstruction::Create(HloOpcode::kExp, s, {x})));
  }
  std::vector<HloInstruction*> all = kept;
  all.insert(all.end(), added.begin(), added.end());
  all.push_back(detached.get());
  for (const HloInstruction* instr : all) {
    EXPECT_EQ(reinterpret_cast<uintptr_t>(instr) % 64, 0u) << instr->ToString();
  }
  for (size_t i = 1; i < kept.size(); ++i) {
    ASSERT_EQ(kept[i]->opcode(), HloOpcode::kNegate);
    ASSERT_EQ(kept[i]->operand(0), kept[i - 1]);
  }
  for (HloInstruction* a : added) {
    ASSERT_EQ(a->opcode(), HloOpcode::kExp);
    ASSERT_EQ(a->parent(), c);
  }
  EXPECT_EQ(x->user_count(), 101);
  EXPECT_EQ(detached->opcode(), HloOpcode::kCos);
  EXPECT_EQ(detached->shape(), s);
  EXPECT_EQ(c->instruction_count(), 201);
  module.set_entry_computation(c);
  const absl::Status verified = VerifyHloModule(module);
  EXPECT_TRUE(verified.ok()) << verified;
}

TEST(HloComputationTest, PostOrderWalksUnusedInstructionsFirst) {
  HloModule module("m");
  HloBuilder b(&module, "main");
  const Shape s = ShapeUtil::MakeShape(F32, {4});
  HloInstruction* x = b.Parameter(0, s).value();
  HloInstruction* unused = b.Exp(x).value();
  HloInstruction* n = b.Negate(x).value();
  HloComputation* c = b.Build(n).value();
  EXPECT_THAT(c->MakeInstructionPostOrder(), ElementsAre(x, unused, n));
}

// The post order is kept between calls; every kind of graph edit must drop it.
TEST(HloComputationTest, KeptPostOrderFollowsEveryEdit) {
  HloModule module("m");
  HloBuilder b(&module, "main");
  const Shape s = ShapeUtil::MakeShape(F32, {4});
  HloInstruction* x = b.Parameter(0, s).value();
  HloInstruction* e = b.Exp(x).value();
  HloInstruction* n = b.Negate(e).value();
  HloComputation* c = b.Build(n).value();
  ASSERT_THAT(c->MakeInstructionPostOrder(), ElementsAre(x, e, n));
  EXPECT_THAT(c->MakeInstructionPostOrder(), ElementsAre(x, e, n));
  // An instruction added (unused: it walks first).
  HloInstruction* t = c->AddInstruction(HloInstruction::Create(HloOpcode::kTanh, s, {x}));
  EXPECT_THAT(c->MakeInstructionPostOrder(), ElementsAre(x, t, e, n));
  // An operand rewired: e now reads t, so t is no longer unused.
  ASSERT_TRUE(e->ReplaceOperandWith(0, t).ok());
  EXPECT_THAT(c->MakeInstructionPostOrder(), ElementsAre(x, t, e, n));
  ASSERT_TRUE(n->ReplaceOperandWith(0, t).ok());  // e is unused now
  EXPECT_THAT(c->MakeInstructionPostOrder(), ElementsAre(x, t, e, n));
  // The root moved: n is unused, e is the root.
  c->set_root_instruction(e);
  EXPECT_THAT(c->MakeInstructionPostOrder(), ElementsAre(x, t, n, e));
  // An instruction removed.
  ASSERT_TRUE(c->RemoveInstruction(n).ok());
  EXPECT_THAT(c->MakeInstructionPostOrder(), ElementsAre(x, t, e));
  HloInstruction* cs = c->AddInstruction(HloInstruction::Create(HloOpcode::kCos, s, {x}));
  EXPECT_THAT(c->MakeInstructionPostOrder(), ElementsAre(x, cs, t, e));
  HloInstruction* r = c->AddInstruction(HloInstruction::Create(HloOpcode::kTuple, ShapeUtil::MakeTupleShape({s}), {cs}));
  c->set_root_instruction(r);
  EXPECT_THAT(c->MakeInstructionPostOrder(), ElementsAre(x, t, e, cs, r));
  // An operand appended: e is no longer unused.
  r->AppendOperand(e);
  EXPECT_THAT(c->MakeInstructionPostOrder(), ElementsAre(x, cs, t, e, r));
  // Operands dropped: e and cos are unused again.
  r->DetachFromOperands();
  EXPECT_THAT(c->MakeInstructionPostOrder(), ElementsAre(x, t, e, cs, r));
}

}  // namespace
}  // namespace jx::hlo::module_test
