// HloModuleToDot: nodes, operand edges, fusion clusters, control-flow clusters, escaping.
#include "jx/compiler/hlo/hlo_graphviz.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <string_view>

#include "jx/compiler/hlo/hlo_parser.h"

namespace jx::hlo::graphviz_test {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

std::string Dot(std::string_view text) {
  absl::StatusOr<std::unique_ptr<HloModule>> module = ParseHloModule(text);
  EXPECT_TRUE(module.ok()) << module.status();
  return module.ok() ? HloModuleToDot(**module) : "";
}

// Position just past the '}' matching the '{' at `open`, skipping quoted strings (labels
// hold shapes like "f32[8]{0}"); npos when unbalanced or a quote never closes.
size_t MatchingBrace(std::string_view dot, size_t open) {
  int depth = 0;
  bool quoted = false;
  for (size_t i = open; i < dot.size(); ++i) {
    const char c = dot[i];
    if (quoted) {
      if (c == '\\') ++i;
      else if (c == '"') quoted = false;
      continue;
    }
    if (c == '"') quoted = true;
    else if (c == '{') ++depth;
    else if (c == '}' && --depth == 0) return i + 1;
  }
  return std::string_view::npos;
}

// The whole text is one balanced `digraph "..." { ... }`.
void ExpectWellFormed(std::string_view dot) {
  ASSERT_EQ(dot.rfind("digraph ", 0), 0u) << dot;
  const size_t open = dot.find('{');
  ASSERT_NE(open, std::string_view::npos);
  const size_t end = MatchingBrace(dot, open);
  ASSERT_NE(end, std::string_view::npos) << dot;
  EXPECT_EQ(dot.substr(end), "\n") << dot;
}

// The text of cluster `name` (from its header to its closing brace).
std::string_view Cluster(std::string_view dot, std::string_view name) {
  const size_t at = dot.find("subgraph " + std::string(name) + " {");
  if (at == std::string_view::npos) return {};
  const size_t end = MatchingBrace(dot, dot.find('{', at));
  return end == std::string_view::npos ? std::string_view() : dot.substr(at, end - at);
}

// The id of the node labelled with instruction `name` ("n3"), or "" when absent.
std::string NodeId(std::string_view dot, std::string_view name) {
  const size_t at = dot.find("[label=\"%" + std::string(name) + "\\n");
  if (at == std::string_view::npos) return "";
  const size_t line = dot.rfind('\n', at) + 1;
  std::string id(dot.substr(line, at - line));
  id.erase(0, id.find_first_not_of(' '));
  id.erase(id.find_last_not_of(' ') + 1);
  return id;
}

bool HasEdge(std::string_view dot, std::string_view from, std::string_view to) {
  const std::string a = NodeId(dot, from), b = NodeId(dot, to);
  return !a.empty() && !b.empty() && dot.find("  " + a + " -> " + b + ";") != std::string_view::npos;
}

constexpr char kFused[] = R"(HloModule fused_module
%fused_computation (p0: f32[128], p1: f32[128]) -> f32[128] {
  %p0 = f32[128] parameter(0)
  %p1 = f32[128] parameter(1)
  %m = f32[128] multiply(%p0, %p1)
  %e = f32[128] exponential(%m)
  %c = f32[] constant(2)
  %b = f32[128] broadcast(%c), dimensions={}
  ROOT %a = f32[128] add(%e, %b)
}
ENTRY %main (x: f32[128], y: f32[128]) -> f32[128] {
  %x = f32[128] parameter(0)
  %y = f32[128] parameter(1)
  %fusion = f32[128] fusion(%x, %y), kind=kLoop, calls=%fused_computation
  ROOT %n = f32[128] negate(%fusion)
})";

TEST(GraphvizTest, LoopFusionIsAClusterHoldingItsFusedInstructions) {
  const std::string dot = Dot(kFused);
  ExpectWellFormed(dot);
  EXPECT_THAT(dot, HasSubstr("subgraph cluster_"));
  const std::string_view cluster = Cluster(dot, "cluster_fusion");
  ASSERT_FALSE(cluster.empty()) << dot;
  EXPECT_THAT(std::string(cluster), HasSubstr("label=\"fusion kind=kLoop\\n%fusion"));
  EXPECT_THAT(std::string(cluster), HasSubstr("style=\"filled,rounded\""));
  for (const char* fused : {"p0", "p1", "m", "e", "c", "b", "a"}) {
    EXPECT_THAT(std::string(cluster), HasSubstr("label=\"%" + std::string(fused) + "\\n"))
        << fused;
  }
  for (const char* entry : {"x", "y", "n"}) {
    EXPECT_THAT(std::string(cluster), Not(HasSubstr("label=\"%" + std::string(entry) + "\\n")))
        << entry;
    EXPECT_NE(NodeId(dot, entry), "") << entry;
  }
  // The fusion's operands feed the fused parameters; the fused root feeds the fusion's user.
  EXPECT_TRUE(HasEdge(dot, "x", "p0")) << dot;
  EXPECT_TRUE(HasEdge(dot, "y", "p1")) << dot;
  EXPECT_TRUE(HasEdge(dot, "a", "n")) << dot;
  EXPECT_TRUE(HasEdge(dot, "m", "e")) << dot;
  EXPECT_TRUE(HasEdge(dot, "e", "a")) << dot;
  // Parameters and constants are styled apart; the fusion is a cluster, not a node.
  EXPECT_THAT(dot, HasSubstr("label=\"%x\\nparameter 0\\nf32[128]{0}\", shape=ellipse"));
  EXPECT_THAT(dot, HasSubstr("label=\"%c\\nconstant 2\\nf32[]\", shape=ellipse"));
  EXPECT_EQ(NodeId(dot, "fusion"), "");
  EXPECT_THAT(dot, HasSubstr("digraph \"fused_module\" {"));
}

TEST(GraphvizTest, NestedFusionsNestClustersAndEdgesReachTheInnerRoot) {
  const std::string dot = Dot(R"(HloModule nested
%inner (q0: f32[4]) -> f32[4] {
  %q0 = f32[4] parameter(0)
  ROOT %s = f32[4] sine(%q0)
}
%outer (p0: f32[4]) -> f32[4] {
  %p0 = f32[4] parameter(0)
  %f = f32[4] fusion(%p0), kind=kLoop, calls=%inner
  ROOT %t = f32[4] tanh(%f)
}
ENTRY %main (x: f32[4]) -> f32[4] {
  %x = f32[4] parameter(0)
  %g = f32[4] fusion(%x), kind=kOutput, calls=%outer
  ROOT %r = f32[4] reduce-precision(%g), exponent_bits=5, mantissa_bits=10
})");
  ExpectWellFormed(dot);
  const std::string_view outer = Cluster(dot, "cluster_g");
  const std::string_view inner = Cluster(dot, "cluster_f");
  ASSERT_FALSE(outer.empty());
  ASSERT_FALSE(inner.empty());
  EXPECT_NE(outer.find(inner), std::string_view::npos);  // inner sits inside outer
  EXPECT_THAT(std::string(outer), HasSubstr("fusion kind=kOutput"));
  EXPECT_TRUE(HasEdge(dot, "x", "p0"));
  EXPECT_TRUE(HasEdge(dot, "p0", "q0"));
  EXPECT_TRUE(HasEdge(dot, "s", "t"));
  EXPECT_TRUE(HasEdge(dot, "t", "r"));
}

TEST(GraphvizTest, WhileBodiesAreDashedClustersAndReducersAreNamed) {
  const std::string dot = Dot(R"(HloModule loop
%add (lhs: f32[], rhs: f32[]) -> f32[] {
  %lhs = f32[] parameter(0)
  %rhs = f32[] parameter(1)
  ROOT %plus = f32[] add(%lhs, %rhs)
}
%cond (s: (s32[], f32[4])) -> pred[] {
  %s = (s32[], f32[4]) parameter(0)
  %i = s32[] get-tuple-element(%s), index=0
  %n = s32[] constant(10)
  ROOT %lt = pred[] compare(%i, %n), direction=LT
}
%body (t: (s32[], f32[4])) -> (s32[], f32[4]) {
  %t = (s32[], f32[4]) parameter(0)
  %bi = s32[] get-tuple-element(%t), index=0
  %v = f32[4] get-tuple-element(%t), index=1
  %one = s32[] constant(1)
  %next = s32[] add(%bi, %one)
  %e = f32[4] exponential(%v)
  ROOT %r = (s32[], f32[4]) tuple(%next, %e)
}
ENTRY %main (x: f32[4]) -> f32[] {
  %x = f32[4] parameter(0)
  %zero = s32[] constant(0)
  %init = (s32[], f32[4]) tuple(%zero, %x)
  %loop = (s32[], f32[4]) while(%init), condition=%cond, body=%body
  %out = f32[4] get-tuple-element(%loop), index=1
  %z = f32[] constant(0)
  ROOT %sum = f32[] reduce(%out, %z), dimensions={0}, to_apply=%add
})");
  ExpectWellFormed(dot);
  const std::string_view body = Cluster(dot, "cluster_loop_body");
  const std::string_view cond = Cluster(dot, "cluster_loop_cond");
  ASSERT_FALSE(body.empty()) << dot;
  ASSERT_FALSE(cond.empty()) << dot;
  EXPECT_THAT(std::string(body), HasSubstr("style=dashed"));
  EXPECT_THAT(std::string(body), HasSubstr("label=\"%e\\nexponential"));
  EXPECT_THAT(std::string(cond), HasSubstr("label=\"%lt\\ncompare"));
  const std::string loop = NodeId(dot, "loop");
  ASSERT_NE(loop, "");
  EXPECT_TRUE(HasEdge(dot, "init", "loop"));
  EXPECT_TRUE(HasEdge(dot, "loop", "out"));
  EXPECT_THAT(dot, HasSubstr(loop + " -> " + NodeId(std::string(body), "t") + " [style=dashed];"));
  // The reducer is named in the label, not drawn.
  EXPECT_THAT(dot, HasSubstr("\\ncalls %add\\n"));
  EXPECT_EQ(Cluster(dot, "cluster_sum_add"), "");
}

TEST(GraphvizTest, LabelsEscapeQuotesAndBackslashes) {
  const std::string dot = Dot(R"(HloModule esc
ENTRY %main (x: f32[2]) -> f32[2] {
  %x = f32[2] parameter(0)
  ROOT %cc = f32[2] custom-call(%x), custom_call_target="say \"hi\" \\ bye"
})");
  ExpectWellFormed(dot);
  // The target prints quoted and escaped (\"say \\\"hi\\\" \\\\ bye\"), then DOT-escaped.
  EXPECT_THAT(dot, HasSubstr(R"(custom-call \"say \\\"hi\\\" \\\\ bye\")")) << dot;
}

TEST(GraphvizTest, EveryEntryInstructionIsDrawnOnce) {
  const std::string dot = Dot(kFused);
  absl::StatusOr<std::unique_ptr<HloModule>> module = ParseHloModule(kFused);
  ASSERT_TRUE(module.ok());
  for (const HloComputation* c : (*module)->computations()) {
    for (const HloInstruction* instr : c->instructions()) {
      if (instr->opcode() == HloOpcode::kFusion) continue;  // drawn as its cluster
      const std::string label = "label=\"%" + instr->name() + "\\n";
      const size_t first = dot.find(label);
      EXPECT_NE(first, std::string::npos) << instr->name();
      EXPECT_EQ(dot.find(label, first + 1), std::string::npos) << instr->name();
    }
  }
}

}  // namespace
}  // namespace jx::hlo::graphviz_test
