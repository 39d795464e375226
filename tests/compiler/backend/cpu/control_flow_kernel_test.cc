// while, conditional and call on the CPU backend against the evaluator, bit for bit, with
// the evaluator fallback forbidden (every computation they call is compiled to native
// kernels): counted loops of several element types, zero-trip loops, nested loops, a
// conditional inside a loop body, swapped and repeated carries, a scan-shaped loop whose
// dynamic-update-slice writes the loop state in place, conditionals (pred and index
// selectors, out-of-range indices) and call; bad modules and run-time errors inside a body.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <sstream>
#include <string>
#include <vector>

#include "jx/compiler/backend/cpu/buffer_assignment.h"
#include "jx/compiler/hlo/str_util.h"
#include "tests/compiler/backend/cpu/native_kernel_test_util.h"

namespace jx::cpu::control_flow_kernel_test {
namespace {

using testing::ExactOptions;

// The modules below reuse short instruction names in each computation; HLO names are unique
// per module, so each non-entry computation's names get its name as a prefix (%body_ys2).
std::string Scoped(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  auto is_name_char = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
  std::string out;
  for (size_t begin = 0; begin < lines.size();) {
    if (lines[begin].rfind("HloModule", 0) == 0) {
      out += lines[begin++] + "\n";
      continue;
    }
    // A computation: its header line up to the closing "}".
    size_t end = begin;
    while (end < lines.size() && lines[end] != "}") ++end;
    const std::string& header = lines[begin];
    std::vector<std::string> defined;
    const bool entry = header.rfind("ENTRY", 0) == 0;
    if (!entry && header.rfind("%", 0) == 0) {
      const std::string prefix = header.substr(1, header.find(' ') - 1) + "_";
      for (size_t l = begin + 1; l < end; ++l) {
        const size_t pct = lines[l].find('%');
        const size_t eq = lines[l].find(" = ");
        if (pct != std::string::npos && eq != std::string::npos && pct < eq) {
          defined.push_back(lines[l].substr(pct + 1, eq - pct - 1));
        }
      }
      for (size_t l = begin + 1; l < end; ++l) {
        std::string& line = lines[l];
        std::string renamed;
        for (size_t i = 0; i < line.size(); ++i) {
          renamed += line[i];
          if (line[i] != '%') continue;
          size_t j = i + 1;
          while (j < line.size() && is_name_char(line[j])) ++j;
          const std::string name = line.substr(i + 1, j - i - 1);
          if (std::find(defined.begin(), defined.end(), name) != defined.end()) renamed += prefix;
        }
        line = renamed;
      }
    }
    for (size_t l = begin; l <= end && l < lines.size(); ++l) out += lines[l] + "\n";
    begin = end + 1;
  }
  return out;
}

void ExpectNative(const std::string& text, std::string_view name, std::string_view kind,
                  const ExactOptions& o) {
  testing::ExpectExact(Scoped(text), name, kind, o);
}

std::unique_ptr<hlo::HloModule> Parse(const std::string& text) {
  return hlo::ParseHloModule(Scoped(text)).value();
}

// Values in [-3, 3], so trip counts cover zero-trip (n <= 0) and a few iterations.
ExactOptions NoFallback(uint32_t seed, double lo = -3, double hi = 3) {
  ExactOptions o;
  o.lo = lo;
  o.hi = hi;
  o.seed = seed;
  o.compile.allow_evaluator_fallback = false;
  return o;
}

// for (i = 0; i < n; ++i) { acc += v; v *= v; } over T[16].
std::string CountedLoop(const std::string& t) {
  const std::string s = hlo::StrCat("(s32[], s32[], ", t, "[16], ", t, "[16])");
  return hlo::StrCat(
      "HloModule loop\n%cond (cs: ", s, ") -> pred[] {\n  %cs = ", s,
      " parameter(0)\n  %ci = s32[] get-tuple-element(%cs), index=0\n  %cn = s32[] "
      "get-tuple-element(%cs), index=1\n  ROOT %lt = pred[] compare(%ci, %cn), direction=LT\n}\n",
      "%body (bs: ", s, ") -> ", s, " {\n  %bs = ", s,
      " parameter(0)\n  %i = s32[] get-tuple-element(%bs), index=0\n  %n = s32[] "
      "get-tuple-element(%bs), index=1\n  %v = ",
      t, "[16] get-tuple-element(%bs), index=2\n  %acc = ", t,
      "[16] get-tuple-element(%bs), index=3\n  %one = s32[] constant(1)\n  %i2 = s32[] add(%i, "
      "%one)\n  %acc2 = ",
      t, "[16] add(%acc, %v)\n  %v2 = ", t, "[16] multiply(%v, %v)\n  ROOT %r = ", s,
      " tuple(%i2, %n, %v2, %acc2)\n}\n", "ENTRY %main (n: s32[], v: ", t, "[16], a: ", t,
      "[16]) -> (", t, "[16], ", t, "[16], s32[]) {\n  %n = s32[] parameter(0)\n  %v = ", t,
      "[16] parameter(1)\n  %a = ", t,
      "[16] parameter(2)\n  %zero = s32[] constant(0)\n  %init = ", s,
      " tuple(%zero, %n, %v, %a)\n  %w = ", s,
      " while(%init), condition=%cond, body=%body\n  %rv = ", t,
      "[16] get-tuple-element(%w), index=2\n  %ra = ", t,
      "[16] get-tuple-element(%w), index=3\n  %ri = s32[] get-tuple-element(%w), index=0\n  ROOT "
      "%out = (",
      t, "[16], ", t, "[16], s32[]) tuple(%rv, %ra, %ri)\n}\n");
}

TEST(WhileKernelTest, CountedLoopsEveryTypeIncludingZeroTrips) {
  for (const char* t : {"f32", "f64", "f16", "bf16", "s8", "s32", "u16", "s64"}) {
    SCOPED_TRACE(t);
    for (uint32_t seed = 1; seed <= 6; ++seed) ExpectNative(CountedLoop(t), "w", "while", NoFallback(seed));
  }
}

constexpr char kNested[] = R"(HloModule nested
%icond (s: (s32[], s32[], f32[8])) -> pred[] {
  %s = (s32[], s32[], f32[8]) parameter(0)
  %j = s32[] get-tuple-element(%s), index=0
  %m = s32[] get-tuple-element(%s), index=1
  ROOT %lt = pred[] compare(%j, %m), direction=LT
}
%ibody (s: (s32[], s32[], f32[8])) -> (s32[], s32[], f32[8]) {
  %s = (s32[], s32[], f32[8]) parameter(0)
  %j = s32[] get-tuple-element(%s), index=0
  %m = s32[] get-tuple-element(%s), index=1
  %x = f32[8] get-tuple-element(%s), index=2
  %one = s32[] constant(1)
  %j2 = s32[] add(%j, %one)
  %h = f32[] constant(0.5)
  %hb = f32[8] broadcast(%h), dimensions={}
  %c = f32[] constant(1)
  %cb = f32[8] broadcast(%c), dimensions={}
  %xh = f32[8] multiply(%x, %hb)
  %x2 = f32[8] add(%xh, %cb)
  ROOT %r = (s32[], s32[], f32[8]) tuple(%j2, %m, %x2)
}
%ocond (s: (s32[], s32[], f32[8])) -> pred[] {
  %s = (s32[], s32[], f32[8]) parameter(0)
  %i = s32[] get-tuple-element(%s), index=0
  %n = s32[] get-tuple-element(%s), index=1
  ROOT %lt = pred[] compare(%i, %n), direction=LT
}
%obody (s: (s32[], s32[], f32[8])) -> (s32[], s32[], f32[8]) {
  %s = (s32[], s32[], f32[8]) parameter(0)
  %i = s32[] get-tuple-element(%s), index=0
  %n = s32[] get-tuple-element(%s), index=1
  %x = f32[8] get-tuple-element(%s), index=2
  %zero = s32[] constant(0)
  %init = (s32[], s32[], f32[8]) tuple(%zero, %i, %x)
  %inner = (s32[], s32[], f32[8]) while(%init), condition=%icond, body=%ibody
  %y = f32[8] get-tuple-element(%inner), index=2
  %neg = f32[8] negate(%y)
  %one = s32[] constant(1)
  %i2 = s32[] add(%i, %one)
  ROOT %r = (s32[], s32[], f32[8]) tuple(%i2, %n, %neg)
}
ENTRY %main (n: s32[], x: f32[8]) -> (f32[8]) {
  %n = s32[] parameter(0)
  %x = f32[8] parameter(1)
  %zero = s32[] constant(0)
  %init = (s32[], s32[], f32[8]) tuple(%zero, %n, %x)
  %outer = (s32[], s32[], f32[8]) while(%init), condition=%ocond, body=%obody
  %y = f32[8] get-tuple-element(%outer), index=2
  ROOT %t = (f32[8]) tuple(%y)
})";

TEST(WhileKernelTest, NestedLoops) {
  for (uint32_t seed = 1; seed <= 8; ++seed) ExpectNative(kNested, "outer", "while", NoFallback(seed, -2, 6));
}

// A conditional on the counter's parity inside the body; one branch returns its operand.
constexpr char kCondInLoop[] = R"(HloModule cond_in_loop
%even (p: (f32[8], f32[8])) -> (f32[8]) {
  %p = (f32[8], f32[8]) parameter(0)
  %a = f32[8] get-tuple-element(%p), index=0
  %b = f32[8] get-tuple-element(%p), index=1
  %s = f32[8] add(%a, %b)
  ROOT %r = (f32[8]) tuple(%s)
}
%odd (p: (f32[8], f32[8])) -> (f32[8]) {
  %p = (f32[8], f32[8]) parameter(0)
  %b = f32[8] get-tuple-element(%p), index=1
  ROOT %r = (f32[8]) tuple(%b)
}
%cond (s: (s32[], f32[8], f32[8])) -> pred[] {
  %s = (s32[], f32[8], f32[8]) parameter(0)
  %i = s32[] get-tuple-element(%s), index=0
  %n = s32[] constant(5)
  ROOT %lt = pred[] compare(%i, %n), direction=LT
}
%body (s: (s32[], f32[8], f32[8])) -> (s32[], f32[8], f32[8]) {
  %s = (s32[], f32[8], f32[8]) parameter(0)
  %i = s32[] get-tuple-element(%s), index=0
  %x = f32[8] get-tuple-element(%s), index=1
  %y = f32[8] get-tuple-element(%s), index=2
  %two = s32[] constant(2)
  %rem = s32[] remainder(%i, %two)
  %zero = s32[] constant(0)
  %is_even = pred[] compare(%rem, %zero), direction=EQ
  %ops = (f32[8], f32[8]) tuple(%x, %y)
  %c = (f32[8]) conditional(%is_even, %ops, %ops), branch_computations={%even, %odd}
  %x2 = f32[8] get-tuple-element(%c), index=0
  %y2 = f32[8] multiply(%y, %x)
  %one = s32[] constant(1)
  %i2 = s32[] add(%i, %one)
  ROOT %r = (s32[], f32[8], f32[8]) tuple(%i2, %x2, %y2)
}
ENTRY %main (x: f32[8], y: f32[8]) -> (f32[8], f32[8]) {
  %x = f32[8] parameter(0)
  %y = f32[8] parameter(1)
  %zero = s32[] constant(0)
  %init = (s32[], f32[8], f32[8]) tuple(%zero, %x, %y)
  %w = (s32[], f32[8], f32[8]) while(%init), condition=%cond, body=%body
  %rx = f32[8] get-tuple-element(%w), index=1
  %ry = f32[8] get-tuple-element(%w), index=2
  ROOT %t = (f32[8], f32[8]) tuple(%rx, %ry)
})";

TEST(WhileKernelTest, ConditionalInsideTheBody) {
  for (uint32_t seed = 1; seed <= 4; ++seed) ExpectNative(kCondInLoop, "w", "while", NoFallback(seed, -1.5, 1.5));
}

// Carries that swap, one the body never changes, one written twice.
constexpr char kSwap[] = R"(HloModule swap
%cond (s: (s32[], f32[4], s32[4], f32[4], f32[4], f32[4], f32[4])) -> pred[] {
  %s = (s32[], f32[4], s32[4], f32[4], f32[4], f32[4], f32[4]) parameter(0)
  %i = s32[] get-tuple-element(%s), index=0
  %n = s32[] constant(3)
  ROOT %lt = pred[] compare(%i, %n), direction=LT
}
%body (s: (s32[], f32[4], s32[4], f32[4], f32[4], f32[4], f32[4])) -> (s32[], f32[4], s32[4], f32[4], f32[4], f32[4], f32[4]) {
  %s = (s32[], f32[4], s32[4], f32[4], f32[4], f32[4], f32[4]) parameter(0)
  %i = s32[] get-tuple-element(%s), index=0
  %a = f32[4] get-tuple-element(%s), index=1
  %k = s32[4] get-tuple-element(%s), index=2
  %b = f32[4] get-tuple-element(%s), index=3
  %sum = f32[4] add(%a, %b)
  %one = s32[] constant(1)
  %i2 = s32[] add(%i, %one)
  ROOT %r = (s32[], f32[4], s32[4], f32[4], f32[4], f32[4], f32[4]) tuple(%i2, %b, %k, %a, %sum, %sum, %a)
}
ENTRY %main (a: f32[4], k: s32[4], b: f32[4], c: f32[4]) -> (f32[4], s32[4], f32[4], f32[4], f32[4], f32[4]) {
  %a = f32[4] parameter(0)
  %k = s32[4] parameter(1)
  %b = f32[4] parameter(2)
  %c = f32[4] parameter(3)
  %zero = s32[] constant(0)
  %init = (s32[], f32[4], s32[4], f32[4], f32[4], f32[4], f32[4]) tuple(%zero, %a, %k, %b, %c, %c, %c)
  %w = (s32[], f32[4], s32[4], f32[4], f32[4], f32[4], f32[4]) while(%init), condition=%cond, body=%body
  %r1 = f32[4] get-tuple-element(%w), index=1
  %r2 = s32[4] get-tuple-element(%w), index=2
  %r3 = f32[4] get-tuple-element(%w), index=3
  %r4 = f32[4] get-tuple-element(%w), index=4
  %r5 = f32[4] get-tuple-element(%w), index=5
  %r6 = f32[4] get-tuple-element(%w), index=6
  ROOT %t = (f32[4], s32[4], f32[4], f32[4], f32[4], f32[4]) tuple(%r1, %r2, %r3, %r4, %r5, %r6)
})";

TEST(WhileKernelTest, SwappedInvariantAndRepeatedCarries) {
  for (uint32_t seed = 1; seed <= 4; ++seed) ExpectNative(kSwap, "w", "while", NoFallback(seed));
  auto module = Parse(kSwap);
  const hlo::HloComputation& body = *module->GetComputationWithName("body");
  BufferAssignment ba = BufferAssignment::Run(body, body.MakeInstructionPostOrder(), {},
                                              OutputBinding::kLoopState)
                            .value();
  EXPECT_TRUE(ba.OutputIsItsArgument(2));  // %k
  EXPECT_FALSE(ba.OutputIsItsArgument(1));
  // a and b come from each other's parameter leaves, which the end overwrites: staged.
  EXPECT_EQ(ba.staging_copies().size(), 3u);  // b -> 1, a -> 3, a -> 6
}

// A scan: row i of xs in, row i of ys out (dynamic-update-slice of the loop state).
constexpr char kScan[] = R"(HloModule scan
%cond (s: (s32[], f32[10,8], f32[10,8], f32[8])) -> pred[] {
  %s = (s32[], f32[10,8], f32[10,8], f32[8]) parameter(0)
  %i = s32[] get-tuple-element(%s), index=0
  %n = s32[] constant(10)
  ROOT %lt = pred[] compare(%i, %n), direction=LT
}
%body (s: (s32[], f32[10,8], f32[10,8], f32[8])) -> (s32[], f32[10,8], f32[10,8], f32[8]) {
  %s = (s32[], f32[10,8], f32[10,8], f32[8]) parameter(0)
  %i = s32[] get-tuple-element(%s), index=0
  %xs = f32[10,8] get-tuple-element(%s), index=1
  %ys = f32[10,8] get-tuple-element(%s), index=2
  %h = f32[8] get-tuple-element(%s), index=3
  %z = s32[] constant(0)
  %row = f32[1,8] dynamic-slice(%xs, %i, %z), dynamic_slice_sizes={1,8}
  %x = f32[8] reshape(%row)
  %hx = f32[8] add(%h, %x)
  %h2 = f32[8] maximum(%hx, %x)
  %y = f32[1,8] reshape(%h2)
  %ys2 = f32[10,8] dynamic-update-slice(%ys, %y, %i, %z)
  %one = s32[] constant(1)
  %i2 = s32[] add(%i, %one)
  ROOT %r = (s32[], f32[10,8], f32[10,8], f32[8]) tuple(%i2, %xs, %ys2, %h2)
}
ENTRY %main (xs: f32[10,8], h: f32[8]) -> (f32[10,8], f32[8]) {
  %xs = f32[10,8] parameter(0)
  %h = f32[8] parameter(1)
  %zero = s32[] constant(0)
  %fz = f32[] constant(0)
  %ys = f32[10,8] broadcast(%fz), dimensions={}
  %init = (s32[], f32[10,8], f32[10,8], f32[8]) tuple(%zero, %xs, %ys, %h)
  %w = (s32[], f32[10,8], f32[10,8], f32[8]) while(%init), condition=%cond, body=%body
  %rys = f32[10,8] get-tuple-element(%w), index=2
  %rh = f32[8] get-tuple-element(%w), index=3
  ROOT %t = (f32[10,8], f32[8]) tuple(%rys, %rh)
})";

TEST(WhileKernelTest, ScanWritesTheLoopStateInPlace) {
  for (uint32_t seed = 1; seed <= 4; ++seed) ExpectNative(kScan, "w", "while", NoFallback(seed));
  auto module = Parse(kScan);
  // The body: xs passes through untouched; ys is updated in place (the dynamic-update-slice
  // writes the state leaf itself) and is not copied at the end of an iteration.
  const hlo::HloComputation& body = *module->GetComputationWithName("body");
  BufferAssignment ba = BufferAssignment::Run(body, body.MakeInstructionPostOrder(), {},
                                              OutputBinding::kLoopState)
                            .value();
  EXPECT_TRUE(ba.OutputIsItsArgument(1));
  const LogicalBuffer& ys2 = ba.buffers()[ba.BuffersOf(body.GetInstructionWithName("body_ys2")).at(0)];
  EXPECT_EQ(ys2.kind, LogicalBuffer::kOutput);
  EXPECT_EQ(ys2.index, 2);
  for (const auto& [leaf, source] : ba.output_copies()) EXPECT_NE(leaf, 2);
  // The entry: the loop state's ys leaf is the zeros it starts from (dead after the while).
  const hlo::HloComputation& entry = *module->entry_computation();
  BufferAssignment eba = BufferAssignment::Run(entry, entry.MakeInstructionPostOrder()).value();
  EXPECT_EQ(eba.BuffersOf(entry.GetInstructionWithName("w")).at(2),
            eba.BuffersOf(entry.GetInstructionWithName("ys")).at(0));
  // memory_analysis counts the body's temp arena (the row and the new carry) as well.
  auto exe = CompileForCpu(Parse(kScan)).value();
  EXPECT_GE(exe->memory_analysis().temp_bytes,
            exe->buffer_assignment().memory().temp_bytes + 2 * 8 * 4);
  EXPECT_EQ(exe->memory_analysis().peak_bytes - exe->buffer_assignment().memory().peak_bytes,
            exe->memory_analysis().temp_bytes - exe->buffer_assignment().memory().temp_bytes);
}

// Buffer assignment rejects a loop body whose outputs do not match its arguments.
TEST(WhileKernelTest, LoopStateBindingNeedsMatchingLeaves) {
  auto module = Parse(R"(HloModule m
ENTRY %main (p: (f32[4], f32[4])) -> (f32[4]) {
  %p = (f32[4], f32[4]) parameter(0)
  %a = f32[4] get-tuple-element(%p), index=0
  ROOT %t = (f32[4]) tuple(%a)
})");
  const hlo::HloComputation& c = *module->entry_computation();
  EXPECT_FALSE(
      BufferAssignment::Run(c, c.MakeInstructionPostOrder(), {}, OutputBinding::kLoopState).ok());
}

// Two stacked outputs, the second's get-tuple-element scheduled after the first's update:
// a get-tuple-element reads no memory, so both updates still write their state leaves in
// place (before, the later get-tuple-element kept every leaf alive, and the first update
// copied its whole [steps, n] leaf every iteration: grad of a scan ran quadratic).
TEST(ControlFlowKernelTest, TwoStackedOutputsUpdateInPlace) {
  auto module = Parse(R"(HloModule two_ys
ENTRY %body (s: (s32[], f32[10,8], f32[10,8], f32[1,8])) -> (s32[], f32[10,8], f32[10,8], f32[1,8]) {
  %s = (s32[], f32[10,8], f32[10,8], f32[1,8]) parameter(0)
  %i = s32[] get-tuple-element(%s), index=0
  %zero = s32[] constant(0)
  %x = f32[1,8] get-tuple-element(%s), index=3
  %ys1 = f32[10,8] get-tuple-element(%s), index=1
  %u1 = f32[10,8] dynamic-update-slice(%ys1, %x, %i, %zero)
  %ys2 = f32[10,8] get-tuple-element(%s), index=2
  %x2 = f32[1,8] add(%x, %x)
  %u2 = f32[10,8] dynamic-update-slice(%ys2, %x2, %i, %zero)
  %one = s32[] constant(1)
  %next = s32[] add(%i, %one)
  ROOT %r = (s32[], f32[10,8], f32[10,8], f32[1,8]) tuple(%next, %u1, %u2, %x)
})");
  const hlo::HloComputation& body = *module->entry_computation();
  std::vector<hlo::HloInstruction*> order;
  for (const char* name : {"s", "i", "zero", "x", "ys1", "u1", "ys2", "x2", "u2", "one", "next", "r"}) {
    order.push_back(body.GetInstructionWithName(name));
  }
  BufferAssignment ba = BufferAssignment::Run(body, order, {}, OutputBinding::kLoopState).value();
  for (int leaf : {1, 2}) {
    for (const auto& [out, source] : ba.output_copies()) EXPECT_NE(out, leaf) << "leaf " << leaf << " copied";
  }
  EXPECT_TRUE(ba.OutputIsItsArgument(3));
}

constexpr char kSwitch[] = R"(HloModule sw
%b0 (p: (f32[8], f32[8])) -> (f32[8], f32[8]) {
  %p = (f32[8], f32[8]) parameter(0)
  %a = f32[8] get-tuple-element(%p), index=0
  %b = f32[8] get-tuple-element(%p), index=1
  %s = f32[8] add(%a, %b)
  ROOT %r = (f32[8], f32[8]) tuple(%s, %a)
}
%b1 (p: (f32[8], f32[8])) -> (f32[8], f32[8]) {
  %p = (f32[8], f32[8]) parameter(0)
  %a = f32[8] get-tuple-element(%p), index=0
  %b = f32[8] get-tuple-element(%p), index=1
  %m = f32[8] multiply(%a, %b)
  ROOT %r = (f32[8], f32[8]) tuple(%m, %m)
}
%b2 (p: (f32[8], f32[8])) -> (f32[8], f32[8]) {
  %p = (f32[8], f32[8]) parameter(0)
  %a = f32[8] get-tuple-element(%p), index=0
  %b = f32[8] get-tuple-element(%p), index=1
  ROOT %r = (f32[8], f32[8]) tuple(%b, %a)
}
ENTRY %main (k: s32[], x: f32[8], y: f32[8]) -> (f32[8], f32[8]) {
  %k = s32[] parameter(0)
  %x = f32[8] parameter(1)
  %y = f32[8] parameter(2)
  %ops = (f32[8], f32[8]) tuple(%x, %y)
  %c = (f32[8], f32[8]) conditional(%k, %ops, %ops, %ops), branch_computations={%b0, %b1, %b2}
  %r0 = f32[8] get-tuple-element(%c), index=0
  %r1 = f32[8] get-tuple-element(%c), index=1
  ROOT %t = (f32[8], f32[8]) tuple(%r0, %r1)
})";

TEST(ConditionalKernelTest, IndexSelectorOutOfRangeRunsTheLastBranch) {
  // k in [-4, 4]: every branch, and negative or too large indices (the last branch).
  for (uint32_t seed = 1; seed <= 12; ++seed) ExpectNative(kSwitch, "c", "conditional", NoFallback(seed, -4, 4));
}

TEST(ConditionalKernelTest, PredSelectorAndCall) {
  constexpr char kText[] = R"(HloModule pc
%t (p: (f32[8], s8[8])) -> (s8[8]) {
  %p = (f32[8], s8[8]) parameter(0)
  %b = s8[8] get-tuple-element(%p), index=1
  %n = s8[8] negate(%b)
  ROOT %r = (s8[8]) tuple(%n)
}
%f (p: (f32[8], s8[8])) -> (s8[8]) {
  %p = (f32[8], s8[8]) parameter(0)
  %a = f32[8] get-tuple-element(%p), index=0
  %c = s8[8] convert(%a)
  ROOT %r = (s8[8]) tuple(%c)
}
%callee (a: f32[8], b: s8[8]) -> s8[8] {
  %a = f32[8] parameter(0)
  %b = s8[8] parameter(1)
  %c = s8[8] convert(%a)
  ROOT %m = s8[8] maximum(%b, %c)
}
ENTRY %main (x: f32[8], y: s8[8], q: pred[]) -> (s8[8], s8[8]) {
  %x = f32[8] parameter(0)
  %y = s8[8] parameter(1)
  %q = pred[] parameter(2)
  %ops = (f32[8], s8[8]) tuple(%x, %y)
  %c = (s8[8]) conditional(%q, %ops, %ops), branch_computations={%t, %f}
  %r = s8[8] get-tuple-element(%c), index=0
  %k = s8[8] call(%x, %y), to_apply=%callee
  ROOT %o = (s8[8], s8[8]) tuple(%r, %k)
})";
  for (uint32_t seed = 1; seed <= 6; ++seed) {
    ExpectNative(kText, "c", "conditional", NoFallback(seed, -9, 9));
    ExpectNative(kText, "k", "call", NoFallback(seed, -9, 9));
  }
}

TEST(ControlFlowKernelTest, IllTypedModulesAreCompileErrors) {
  // A condition that does not return pred[], a selector that is not an integer or pred.
  for (const char* text : {R"(HloModule m
%cond (s: (s32[])) -> f32[] {
  %s = (s32[]) parameter(0)
  ROOT %c = f32[] constant(1)
}
%body (s: (s32[])) -> (s32[]) {
  ROOT %s = (s32[]) parameter(0)
}
ENTRY %main (x: s32[]) -> (s32[]) {
  %x = s32[] parameter(0)
  %init = (s32[]) tuple(%x)
  ROOT %w = (s32[]) while(%init), condition=%cond, body=%body
})",
                           R"(HloModule m
%b (p: f32[4]) -> f32[4] {
  ROOT %p = f32[4] parameter(0)
}
ENTRY %main (k: f32[], x: f32[4]) -> f32[4] {
  %k = f32[] parameter(0)
  %x = f32[4] parameter(1)
  ROOT %c = f32[4] conditional(%k, %x, %x), branch_computations={%b, %b}
})"}) {
    auto module = hlo::ParseHloModule(Scoped(text));
    if (!module.ok()) continue;  // rejected by the parser: also fine
    absl::StatusOr<std::unique_ptr<CpuExecutable>> exe = CompileForCpu(*std::move(module));
    EXPECT_FALSE(exe.ok()) << text;
  }
}

// A body instruction that fails at run time fails the run with the loop named, and the
// executable stays usable.
TEST(ControlFlowKernelTest, RunTimeErrorInsideABodyIsReturned) {
  auto module = hlo::ParseHloModule(Scoped(R"(HloModule m
%cond (s: (s32[], f32[4])) -> pred[] {
  %s = (s32[], f32[4]) parameter(0)
  %i = s32[] get-tuple-element(%s), index=0
  %n = s32[] constant(2)
  ROOT %lt = pred[] compare(%i, %n), direction=LT
}
%body (s: (s32[], f32[4])) -> (s32[], f32[4]) {
  %s = (s32[], f32[4]) parameter(0)
  %i = s32[] get-tuple-element(%s), index=0
  %x = f32[4] get-tuple-element(%s), index=1
  %y = f32[4] custom-call(%x), custom_call_target="no_such_target"
  %one = s32[] constant(1)
  %i2 = s32[] add(%i, %one)
  ROOT %r = (s32[], f32[4]) tuple(%i2, %y)
}
ENTRY %main (x: f32[4]) -> (f32[4]) {
  %x = f32[4] parameter(0)
  %zero = s32[] constant(0)
  %init = (s32[], f32[4]) tuple(%zero, %x)
  %w = (s32[], f32[4]) while(%init), condition=%cond, body=%body
  %y = f32[4] get-tuple-element(%w), index=1
  ROOT %t = (f32[4]) tuple(%y)
})"));
  ASSERT_TRUE(module.ok()) << module.status();
  auto exe = CompileForCpu(*std::move(module));
  ASSERT_TRUE(exe.ok()) << exe.status();
  hlo::Literal x(hlo::ShapeUtil::MakeShape(hlo::F32, {4}));
  for (int attempt = 0; attempt < 2; ++attempt) {
    absl::StatusOr<std::vector<hlo::Literal>> out = (*exe)->Run({&x});
    ASSERT_FALSE(out.ok());
    EXPECT_NE(out.status().message().find("while body"), std::string::npos) << out.status();
  }
}

}  // namespace
}  // namespace jx::cpu::control_flow_kernel_test
