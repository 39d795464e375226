#include "jx/compiler/backend/cpu/buffer_assignment.h"

#include <gtest/gtest.h>

#include "jx/compiler/hlo/hlo_parser.h"
#include "tests/compiler/backend/cpu/cpu_test_util.h"

namespace jx::cpu::buffer_assignment_test {
namespace {

using hlo::HloInstruction;

struct Assigned {
  std::unique_ptr<hlo::HloModule> module;
  BufferAssignment ba;
  const LogicalBuffer& Of(std::string_view name, size_t leaf = 0) const {
    const HloInstruction* i = module->entry_computation()->GetInstructionWithName(name);
    return ba.buffers()[ba.BuffersOf(i).at(leaf)];
  }
};

// Temps whose live ranges overlap never share arena bytes.
void ExpectNoOverlap(const BufferAssignment& ba) {
  const auto& bufs = ba.buffers();
  for (size_t i = 0; i < bufs.size(); ++i) {
    for (size_t j = i + 1; j < bufs.size(); ++j) {
      const LogicalBuffer &x = bufs[i], &y = bufs[j];
      if (x.kind != LogicalBuffer::kTemp || y.kind != LogicalBuffer::kTemp) continue;
      if (x.merged_into >= 0 || y.merged_into >= 0) continue;  // merged: no memory of its own
      const bool live_together = x.defined_at <= y.last_use && y.defined_at <= x.last_use;
      const bool share = x.offset < y.offset + y.size && y.offset < x.offset + x.size;
      EXPECT_FALSE(live_together && share) << x.defining->name() << " / " << y.defining->name();
    }
  }
}

Assigned Assign(std::string_view text) {
  Assigned a;
  a.module = hlo::ParseHloModule(text).value();
  const hlo::HloComputation& entry = *a.module->entry_computation();
  a.ba = BufferAssignment::Run(entry, entry.MakeInstructionPostOrder()).value();
  return a;
}

constexpr char kChain[] = R"(HloModule chain
ENTRY %main (x: f32[1024]) -> f32[1024] {
  %x = f32[1024] parameter(0)
  %a = f32[1024] exponential(%x)
  %b = f32[1024] negate(%a)
  %c = f32[1024] tanh(%b)
  %d = f32[1024] sine(%c)
  %e = f32[1024] cosine(%d)
  ROOT %f = f32[1024] add(%e, %x)
})";

TEST(BufferAssignmentTest, ChainReusesTemps) {
  Assigned a = Assign(kChain);
  const MemoryAnalysis& m = a.ba.memory();
  EXPECT_EQ(m.argument_bytes, 4096);
  EXPECT_EQ(m.output_bytes, 4096);
  // Five temps of 4 KiB; at most two are live at once.
  EXPECT_EQ(m.temp_bytes_without_reuse, 5 * 4096);
  EXPECT_EQ(m.peak_live_temp_bytes, 2 * 4096);
  EXPECT_EQ(m.temp_bytes, 2 * 4096);
  EXPECT_LT(m.peak_bytes - m.argument_bytes - m.output_bytes, m.temp_bytes_without_reuse);
  // c reuses a's slot (a died when b ran); an instruction never shares with its operand.
  EXPECT_EQ(a.Of("a").offset, a.Of("c").offset);
  EXPECT_NE(a.Of("a").offset, a.Of("b").offset);
  EXPECT_NE(a.Of("b").offset, a.Of("c").offset);
  EXPECT_EQ(a.Of("f").kind, LogicalBuffer::kOutput);
  EXPECT_EQ(a.Of("x").kind, LogicalBuffer::kParameter);
  ExpectNoOverlap(a.ba);
}

TEST(BufferAssignmentTest, TupleAliasesExtendLiveness) {
  Assigned a = Assign(R"(HloModule m
ENTRY %main (x: f32[256]) -> (f32[256], f32[256]) {
  %x = f32[256] parameter(0)
  %a = f32[256] exponential(%x)
  %b = f32[256] negate(%x)
  %t = (f32[256], f32[256]) tuple(%a, %b)
  %g = f32[256] get-tuple-element(%t), index=0
  %c = f32[256] tanh(%b)
  %d = f32[256] sine(%c)
  %e = f32[256] add(%d, %g)
  ROOT %r = (f32[256], f32[256]) tuple(%e, %x)
})");
  // a is read through the tuple (by g, then e): it lives until e ran.
  const int64_t a_off = a.Of("a").offset;
  EXPECT_EQ(a.Of("a").last_use, a.Of("e").defined_at);
  ExpectNoOverlap(a.ba);
  EXPECT_EQ(a.Of("t", 0).offset, a_off);
  EXPECT_EQ(a.Of("g").offset, a_off);
  // The root's second leaf is a parameter: copied to the output at the end.
  ASSERT_EQ(a.ba.output_copies().size(), 1u);
  EXPECT_EQ(a.ba.output_copies()[0].first, 1);
  EXPECT_EQ(a.Of("e").kind, LogicalBuffer::kOutput);
  EXPECT_EQ(a.ba.output_shapes().size(), 2u);
}

TEST(BufferAssignmentTest, ChainRunsCorrectlyWithReuse) {
  auto exe = testing::CheckAgainstEvaluator(kChain);
  ASSERT_NE(exe, nullptr);
  EXPECT_LT(exe->memory_analysis().temp_bytes, exe->memory_analysis().temp_bytes_without_reuse);
}

TEST(BufferAssignmentTest, TupleParametersAndConstants) {
  Assigned a = Assign(R"(HloModule m
ENTRY %main (p: (f32[4], s32[2]), q: f32[4]) -> (f32[4], s32[2], f32[2]) {
  %p = (f32[4], s32[2]) parameter(0)
  %q = f32[4] parameter(1)
  %c = f32[2] constant({1, 2})
  %g0 = f32[4] get-tuple-element(%p), index=0
  %g1 = s32[2] get-tuple-element(%p), index=1
  %s = f32[4] add(%g0, %q)
  ROOT %r = (f32[4], s32[2], f32[2]) tuple(%s, %g1, %c)
})");
  EXPECT_EQ(a.ba.num_argument_leaves(), 3);
  EXPECT_EQ(a.Of("q").index, 2);
  EXPECT_EQ(a.Of("g1").index, 1);
  EXPECT_EQ(a.Of("c").kind, LogicalBuffer::kConstant);
  EXPECT_EQ(a.ba.output_copies().size(), 2u);
  EXPECT_EQ(a.ba.memory().temp_bytes, 0);
  EXPECT_EQ(a.ba.memory().argument_bytes, 16 + 8 + 16);
}

// A row-major reshape is its operand's buffer read as another shape: no buffer, no kernel,
// no copy (XLA's bitcast). Its readers keep the operand alive.
constexpr char kReshapeAlias[] = R"(HloModule m
ENTRY %main (x: f32[64,1,32], u: f32[1,32], i: s32[]) -> f32[32,32] {
  %x = f32[64,1,32] parameter(0)
  %e = f32[64,1,32] exponential(%x)
  %r = f32[64,32] reshape(%e)
  %u = f32[1,32] parameter(1)
  %i = s32[] parameter(2)
  %z = s32[] constant(0)
  %d = f32[64,32] dynamic-update-slice(%r, %u, %i, %z)
  ROOT %dot = f32[32,32] dot(%d, %d), lhs_contracting_dims={0}, rhs_contracting_dims={0}
})";

TEST(BufferAssignmentTest, ReshapeIsABufferAlias) {
  Assigned a = Assign(kReshapeAlias);
  EXPECT_EQ(a.ba.BuffersOf(a.module->entry_computation()->GetInstructionWithName("r")),
            a.ba.BuffersOf(a.module->entry_computation()->GetInstructionWithName("e")));
  // The dynamic-update-slice, the reshape's last reader, updates e's buffer in place: one
  // 64x32 temp in all.
  EXPECT_EQ(a.ba.BuffersOf(a.module->entry_computation()->GetInstructionWithName("d")),
            a.ba.BuffersOf(a.module->entry_computation()->GetInstructionWithName("e")));
  EXPECT_EQ(a.ba.memory().temp_bytes, 64 * 32 * 4);
  ExpectNoOverlap(a.ba);
}

TEST(BufferAssignmentTest, ReshapeAliasRunsNoKernel) {
  auto exe = testing::CheckAgainstEvaluator(kReshapeAlias);
  ASSERT_NE(exe, nullptr);
  EXPECT_EQ(exe->KernelKind("r"), "");  // no step: nothing is copied
  EXPECT_NE(exe->KernelKind("e"), "");
}

TEST(BufferAssignmentTest, ReshapeOfAParameterOrToTheOutputIsAnAlias) {
  Assigned a = Assign(R"(HloModule m
ENTRY %main (x: f32[4,8]) -> (f32[32], f32[2,16]) {
  %x = f32[4,8] parameter(0)
  %r = f32[32] reshape(%x)
  %n = f32[32] negate(%r)
  %b = f32[2,16] bitcast(%n)
  ROOT %t = (f32[32], f32[2,16]) tuple(%r, %b)
})");
  EXPECT_EQ(a.Of("r").kind, LogicalBuffer::kParameter);
  // n is written straight into output leaf 1 through the bitcast; leaf 0 is x, copied.
  EXPECT_EQ(a.Of("n").kind, LogicalBuffer::kOutput);
  EXPECT_EQ(a.Of("n").index, 1);
  EXPECT_EQ(a.ba.output_copies().size(), 1u);
  EXPECT_EQ(a.ba.memory().temp_bytes, 0);
}

TEST(BufferAssignmentTest, ReshapeToAnotherLayoutIsNotAnAlias) {
  Assigned a = Assign(R"(HloModule m
ENTRY %main (x: f32[4,8]) -> f32[8,4] {
  %x = f32[4,8]{1,0} parameter(0)
  ROOT %r = f32[8,4]{0,1} reshape(%x)
})");
  EXPECT_EQ(a.Of("r").kind, LogicalBuffer::kOutput);
  EXPECT_EQ(a.ba.output_copies().size(), 0u);
}

// Donation: which outputs may be written into which donated argument leaves.
std::vector<std::pair<int64_t, int64_t>> Aliases(std::string_view text, std::vector<bool> donated) {
  auto module = hlo::ParseHloModule(text).value();
  const hlo::HloComputation& entry = *module->entry_computation();
  return BufferAssignment::Run(entry, entry.MakeInstructionPostOrder(), donated).value().output_aliases();
}

using AliasList = std::vector<std::pair<int64_t, int64_t>>;

TEST(BufferAssignmentTest, DonatedArgumentHoldsTheElementwiseUpdateOfItself) {
  // An SGD step: w - lr * g reads w at the index it writes, so it may overwrite w.
  constexpr char kStep[] = R"(HloModule step
%fused (fw: f32[64], fg: f32[64]) -> f32[64] {
  %fw = f32[64] parameter(0)
  %fg = f32[64] parameter(1)
  %lr = f32[] constant(0.1)
  %b = f32[64] broadcast(%lr), dimensions={}
  %m = f32[64] multiply(%b, %fg)
  ROOT %s = f32[64] subtract(%fw, %m)
}
ENTRY %main (w: f32[64], g: f32[64]) -> (f32[64]) {
  %w = f32[64] parameter(0)
  %g = f32[64] parameter(1)
  %f = f32[64] fusion(%w, %g), kind=kLoop, calls=%fused
  ROOT %t = (f32[64]) tuple(%f)
})";
  EXPECT_EQ(Aliases(kStep, {true, false}), (AliasList{{0, 0}}));
  EXPECT_EQ(Aliases(kStep, {false, true}), (AliasList{{0, 1}}));
  EXPECT_EQ(Aliases(kStep, {false, false}), AliasList{});
  EXPECT_EQ(Aliases(kStep, {}), AliasList{});
  auto module = hlo::ParseHloModule(kStep).value();
  const hlo::HloComputation& entry = *module->entry_computation();
  const MemoryAnalysis m =
      BufferAssignment::Run(entry, entry.MakeInstructionPostOrder(), {true, false}).value().memory();
  EXPECT_EQ(m.alias_bytes, 256);
  EXPECT_EQ(m.peak_bytes, m.argument_bytes + m.output_bytes + m.temp_bytes - 256);
}

TEST(BufferAssignmentTest, DonatedArgumentReadOutOfPlaceOrLaterIsNotOverwritten) {
  // The transpose reads x[j, i] while writing [i, j]; the second output reads x after the
  // first is written; a reverse inside a fusion reads another index.
  EXPECT_EQ(Aliases(R"(HloModule m
ENTRY %main (x: f32[8,8]) -> (f32[8,8]) {
  %x = f32[8,8] parameter(0)
  %t = f32[8,8] transpose(%x), dimensions={1,0}
  ROOT %r = (f32[8,8]) tuple(%t)
})",
                    {true}),
            AliasList{});
  EXPECT_EQ(Aliases(R"(HloModule m
ENTRY %main (x: f32[8]) -> (f32[8], f32[8]) {
  %x = f32[8] parameter(0)
  %a = f32[8] exponential(%x)
  %b = f32[8] add(%a, %x)
  ROOT %r = (f32[8], f32[8]) tuple(%a, %b)
})",
                    {true}),
            (AliasList{{1, 0}}));
  EXPECT_EQ(Aliases(R"(HloModule m
%fused (p: f32[8]) -> f32[8] {
  %p = f32[8] parameter(0)
  %r = f32[8] reverse(%p), dimensions={0}
  ROOT %n = f32[8] negate(%r)
}
ENTRY %main (x: f32[8]) -> (f32[8]) {
  %x = f32[8] parameter(0)
  %f = f32[8] fusion(%x), kind=kLoop, calls=%fused
  ROOT %t = (f32[8]) tuple(%f)
})",
                    {true}),
            AliasList{});
  // Another shape or element type cannot take the memory.
  EXPECT_EQ(Aliases(R"(HloModule m
ENTRY %main (x: f32[8]) -> (s32[8]) {
  %x = f32[8] parameter(0)
  %c = s32[8] convert(%x)
  ROOT %r = (s32[8]) tuple(%c)
})",
                    {true}),
            AliasList{});
  // A root leaf that is the argument itself is copied, not aliased.
  EXPECT_EQ(Aliases(R"(HloModule m
ENTRY %main (x: f32[8]) -> (f32[8]) {
  %x = f32[8] parameter(0)
  ROOT %r = (f32[8]) tuple(%x)
})",
                    {true}),
            AliasList{});
}

// A scatter of rows into the exponential of x: XLA updates a scatter's operand in place.
constexpr char kScatterOfTemp[] = R"(HloModule s
%comb (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %c = f32[] add(%a, %b)
}
ENTRY %main (x: f32[16,4], i: s32[3,1], u: f32[3,4]) -> f32[16,4] {
  %x = f32[16,4] parameter(0)
  %i = s32[3,1] parameter(1)
  %u = f32[3,4] parameter(2)
  %e = f32[16,4] exponential(%x)
  ROOT %s = f32[16,4] scatter(%e, %i, %u), update_window_dims={1}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=%comb
})";

TEST(BufferAssignmentTest, ScatterUpdatesADeadOperandInPlace) {
  // The exponential is read last by the scatter: the scatter writes into its buffer, which
  // is the output, so the program has no temps (the kernel skips the operand copy).
  Assigned a = Assign(kScatterOfTemp);
  EXPECT_EQ(a.ba.BuffersOf(a.module->entry_computation()->GetInstructionWithName("e")),
            a.ba.BuffersOf(a.module->entry_computation()->GetInstructionWithName("s")));
  EXPECT_EQ(a.Of("s").kind, LogicalBuffer::kOutput);
  EXPECT_EQ(a.ba.memory().temp_bytes, 0);
  // Still the evaluator's numbers (duplicate and out-of-bounds indices included).
  EXPECT_NE(testing::CheckAgainstEvaluator(kScatterOfTemp, 1e-5, 1e-6, {}, {-2, 18}), nullptr);
  // A donated x holds the scatter of itself.
  EXPECT_EQ(Aliases(R"(HloModule s
%comb (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  ROOT %b = f32[] parameter(1)
}
ENTRY %main (x: f32[16,4], i: s32[3,1], u: f32[3,4]) -> (f32[16,4]) {
  %x = f32[16,4] parameter(0)
  %i = s32[3,1] parameter(1)
  %u = f32[3,4] parameter(2)
  %s = f32[16,4] scatter(%x, %i, %u), update_window_dims={1}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=%comb
  ROOT %t = (f32[16,4]) tuple(%s)
})",
                    {true, false, false}),
            (AliasList{{0, 0}}));
  // An operand read again after the scatter keeps its buffer.
  Assigned kept = Assign(R"(HloModule s
%comb (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  ROOT %b = f32[] parameter(1)
}
ENTRY %main (x: f32[16,4], i: s32[3,1], u: f32[3,4]) -> (f32[16,4], f32[16,4]) {
  %x = f32[16,4] parameter(0)
  %i = s32[3,1] parameter(1)
  %u = f32[3,4] parameter(2)
  %e = f32[16,4] exponential(%x)
  %s = f32[16,4] scatter(%e, %i, %u), update_window_dims={1}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=%comb
  %n = f32[16,4] negate(%e)
  ROOT %t = (f32[16,4], f32[16,4]) tuple(%s, %n)
})");
  EXPECT_NE(kept.ba.BuffersOf(kept.module->entry_computation()->GetInstructionWithName("e")),
            kept.ba.BuffersOf(kept.module->entry_computation()->GetInstructionWithName("s")));
}

TEST(BufferAssignmentTest, DonatedOutputsTakeTheirOwnArgumentsOrTheMostAliases) {
  // Both arguments are dead before either output is written: JAX's pairing (output k takes
  // the k-th donated argument of its shape) decides.
  constexpr char kBoth[] = R"(HloModule m
ENTRY %main (a: f32[8], b: f32[8]) -> (f32[8], f32[8]) {
  %a = f32[8] parameter(0)
  %b = f32[8] parameter(1)
  %s = f32[8] add(%a, %b)
  %o1 = f32[8] exponential(%s)
  %o0 = f32[8] negate(%s)
  ROOT %r = (f32[8], f32[8]) tuple(%o0, %o1)
})";
  EXPECT_EQ(Aliases(kBoth, {true, true}), (AliasList{{0, 0}, {1, 1}}));
  // Output 0 cannot take a (a is read after it), so its pair gives way: it takes b and output
  // 1 takes a, two aliases where JAX's pairs alone would give one.
  EXPECT_EQ(Aliases(R"(HloModule m
ENTRY %main (a: f32[8], b: f32[8]) -> (f32[8], f32[8]) {
  %a = f32[8] parameter(0)
  %b = f32[8] parameter(1)
  %o0 = f32[8] negate(%b)
  %o1 = f32[8] add(%a, %o0)
  ROOT %r = (f32[8], f32[8]) tuple(%o0, %o1)
})",
                    {true, true}),
            (AliasList{{0, 1}, {1, 0}}));
  // Output 0 may take a or b, output 1 only a (b is read after it): a first-fit match in
  // output order gives a to output 0 and leaves output 1 without memory; the matching moves
  // output 0 to b.
  EXPECT_EQ(Aliases(R"(HloModule m
ENTRY %main (a: f32[8], b: f32[8]) -> (f32[8], f32[8]) {
  %a = f32[8] parameter(0)
  %o1 = f32[8] negate(%a)
  %b = f32[8] parameter(1)
  %t = f32[8] exponential(%b)
  %o0 = f32[8] add(%o1, %t)
  ROOT %r = (f32[8], f32[8]) tuple(%o0, %o1)
})",
                    {true, true}),
            (AliasList{{0, 1}, {1, 0}}));
}

TEST(BufferAssignmentTest, DonationFlagsMustMatchTheArguments) {
  auto module = hlo::ParseHloModule(kChain).value();
  const hlo::HloComputation& entry = *module->entry_computation();
  EXPECT_FALSE(BufferAssignment::Run(entry, entry.MakeInstructionPostOrder(), {true, true}).ok());
}

}  // namespace
}  // namespace jx::cpu::buffer_assignment_test
