#include "jx/compiler/hlo/hlo_graphviz.h"

#include <cctype>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "jx/compiler/hlo/str_util.h"

namespace jx::hlo {
namespace {

// A DOT double-quoted string body: quotes and backslashes escaped, newlines as \n, other
// control characters dropped.
std::string Escape(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (const char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else if (static_cast<unsigned char>(c) >= 0x20) {
      out += c;
    }
  }
  return out;
}

// An unquoted DOT identifier: letters, digits and '_'.
std::string Identifier(std::string_view s) {
  std::string out;
  for (const char c : s) out += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  return out;
}

std::string_view FusionColor(FusionKind kind) {
  switch (kind) {
    case FusionKind::kLoop: return "#dcecff";
    case FusionKind::kInput: return "#e2f5e2";
    case FusionKind::kOutput: return "#fbe3cc";
    case FusionKind::kCustom: return "#ececec";
  }
  return "#ececec";
}

// Whether a called computation is drawn as a cluster (fusion bodies and control flow) or only
// named in the caller's label (reducers, comparators, mapped functions).
bool DrawsCallees(HloOpcode opcode) {
  return opcode == HloOpcode::kFusion || opcode == HloOpcode::kWhile ||
         opcode == HloOpcode::kCall || opcode == HloOpcode::kConditional;
}

std::string NodeLabel(const HloInstruction& instr) {
  std::string label = StrCat("%", instr.name(), "\n", HloOpcodeString(instr.opcode()));
  if (instr.opcode() == HloOpcode::kParameter) StrAppend(&label, " ", instr.parameter_number());
  if (instr.opcode() == HloOpcode::kConstant && instr.shape().IsArray() &&
      ShapeUtil::ElementsIn(instr.shape()) <= 4) {
    StrAppend(&label, " ", instr.literal().ToString());
  }
  if (instr.opcode() == HloOpcode::kCustomCall) {
    StrAppend(&label, " ", QuoteString(instr.custom_call_target()));
  }
  if (!DrawsCallees(instr.opcode())) {
    for (const HloComputation* c : instr.called_computations()) {
      if (c != nullptr) StrAppend(&label, "\ncalls %", c->name());
    }
  }
  StrAppend(&label, "\n", instr.shape().ToString());
  return label;
}

// One drawing of a computation: the entry, or a cluster for a fusion or control-flow callee.
struct Instance {
  const HloComputation* computation = nullptr;
  const HloInstruction* caller = nullptr;  // null for the entry
  int parent = -1;                         // the drawing that holds the caller
  int depth = 0;
  std::string cluster;  // "cluster_<name>"
  absl::flat_hash_map<const HloInstruction*, std::string> node;  // every non-fusion instruction
  absl::flat_hash_map<const HloInstruction*, int> fusion;        // fusion -> its cluster
  std::vector<int> children;                                     // in instruction order
};

class DotWriter {
 public:
  std::string Write(const HloModule& module);

 private:
  void BuildInstances(const HloComputation* entry);
  // The node that carries x's value in instance k (through fusions to their fused roots).
  const std::string* ValueNode(int k, const HloInstruction* x) const;
  void WriteNodes(const Instance& inst, std::string* out) const;
  void WriteEdges(std::string* out) const;

  std::vector<Instance> instances_;
  int next_node_ = 0;
  absl::flat_hash_set<std::string> cluster_names_;
};

void DotWriter::BuildInstances(const HloComputation* entry) {
  instances_.push_back({});
  instances_[0].computation = entry;
  // Breadth-first over drawings; instances_ only grows, so indices stay valid.
  for (size_t k = 0; k < instances_.size(); ++k) {
    const HloComputation* computation = instances_[k].computation;
    for (const HloInstruction* instr : computation->MakeInstructionPostOrder()) {
      const bool cluster_only =
          instr->opcode() == HloOpcode::kFusion && instr->fused_instructions_computation() != nullptr;
      if (!cluster_only) instances_[k].node[instr] = StrCat("n", next_node_++);
      if (!DrawsCallees(instr->opcode())) continue;
      for (const HloComputation* callee : instr->called_computations()) {
        if (callee == nullptr) continue;
        Instance child;
        child.computation = callee;
        child.caller = instr;
        child.parent = static_cast<int>(k);
        child.depth = instances_[k].depth + 1;
        std::string name = StrCat("cluster_", Identifier(instr->name()));
        if (!cluster_only) StrAppend(&name, "_", Identifier(callee->name()));
        for (int n = 1; !cluster_names_.insert(name).second; ++n) {
          name = StrCat("cluster_", Identifier(instr->name()), "_", n);
        }
        child.cluster = std::move(name);
        const int index = static_cast<int>(instances_.size());
        instances_[k].children.push_back(index);
        if (cluster_only) instances_[k].fusion[instr] = index;
        instances_.push_back(std::move(child));
      }
    }
  }
}

const std::string* DotWriter::ValueNode(int k, const HloInstruction* x) const {
  // Loop, not recursion: fusions nest.
  while (true) {
    const Instance& inst = instances_[k];
    if (auto it = inst.node.find(x); it != inst.node.end()) return &it->second;
    auto f = inst.fusion.find(x);
    if (f == inst.fusion.end()) return nullptr;
    k = f->second;
    x = instances_[k].computation->root_instruction();
    if (x == nullptr) return nullptr;
  }
}

void DotWriter::WriteNodes(const Instance& inst, std::string* out) const {
  const std::string indent(2 * (inst.depth + 1), ' ');
  for (const HloInstruction* instr : inst.computation->MakeInstructionPostOrder()) {
    auto it = inst.node.find(instr);
    if (it == inst.node.end()) continue;
    std::string attrs = StrCat("label=\"", Escape(NodeLabel(*instr)), "\"");
    switch (instr->opcode()) {
      case HloOpcode::kParameter: StrAppend(&attrs, ", shape=ellipse, fillcolor=\"#fff3c4\""); break;
      case HloOpcode::kConstant: StrAppend(&attrs, ", shape=ellipse, fillcolor=\"#e6e6e6\""); break;
      case HloOpcode::kDot:
      case HloOpcode::kConvolution: StrAppend(&attrs, ", fillcolor=\"#f8d7d0\""); break;
      default: break;
    }
    if (instr->IsRoot()) StrAppend(&attrs, ", penwidth=2");
    StrAppend(out, indent, it->second, " [", attrs, "];\n");
  }
}

void DotWriter::WriteEdges(std::string* out) const {
  for (size_t k = 0; k < instances_.size(); ++k) {
    const Instance& inst = instances_[k];
    for (const HloInstruction* user : inst.computation->MakeInstructionPostOrder()) {
      auto fusion = inst.fusion.find(user);
      for (int64_t i = 0; i < user->operand_count(); ++i) {
        const std::string* from = ValueNode(static_cast<int>(k), user->operand(i));
        const std::string* to = nullptr;
        if (fusion != inst.fusion.end()) {
          // Into the fused parameter that stands for operand i.
          const HloComputation* fused = instances_[fusion->second].computation;
          if (i < fused->num_parameters() && fused->parameter_instruction(i) != nullptr) {
            to = ValueNode(fusion->second, fused->parameter_instruction(i));
          }
        } else {
          to = ValueNode(static_cast<int>(k), user);
        }
        if (from != nullptr && to != nullptr) StrAppend(out, "  ", *from, " -> ", *to, ";\n");
      }
    }
    // A control-flow callee: the caller hands it its parameters and takes its root back.
    if (inst.caller == nullptr || inst.caller->opcode() == HloOpcode::kFusion) continue;
    auto caller_node = instances_[inst.parent].node.find(inst.caller);
    if (caller_node == instances_[inst.parent].node.end()) continue;
    const std::string* caller = &caller_node->second;
    for (const HloInstruction* param : inst.computation->parameter_instructions()) {
      const std::string* to = param != nullptr ? ValueNode(static_cast<int>(k), param) : nullptr;
      if (to != nullptr) StrAppend(out, "  ", *caller, " -> ", *to, " [style=dashed];\n");
    }
    const HloInstruction* root = inst.computation->root_instruction();
    if (const std::string* from = root != nullptr ? ValueNode(static_cast<int>(k), root) : nullptr) {
      StrAppend(out, "  ", *from, " -> ", *caller, " [style=dashed];\n");
    }
  }
}

std::string DotWriter::Write(const HloModule& module) {
  std::string out = StrCat("digraph \"", Escape(module.name()), "\" {\n",
                           "  rankdir=TB;\n",
                           "  node [shape=box, style=filled, fillcolor=white, fontname=\"Helvetica\"];\n");
  const HloComputation* entry = module.entry_computation();
  if (entry == nullptr) return out + "}\n";
  BuildInstances(entry);

  // Clusters nest as the computations do; an explicit stack writes each inside its parent.
  std::vector<std::pair<int, bool>> stack = {{0, false}};  // (instance, closing)
  while (!stack.empty()) {
    const auto [k, closing] = stack.back();
    stack.pop_back();
    const Instance& inst = instances_[k];
    const std::string indent(2 * inst.depth, ' ');
    if (closing) {
      StrAppend(&out, indent, "}\n");
      continue;
    }
    if (inst.caller != nullptr) {
      StrAppend(&out, indent, "subgraph ", inst.cluster, " {\n");
      std::string label;
      if (inst.caller->opcode() == HloOpcode::kFusion) {
        label = StrCat("fusion kind=", FusionKindToString(inst.caller->fusion_kind()), "\n%",
                       inst.caller->name(), " (", inst.computation->name(), ")");
        StrAppend(&out, indent, "  style=\"filled,rounded\"; fillcolor=\"",
                  FusionColor(inst.caller->fusion_kind()), "\";\n");
      } else {
        label = StrCat(HloOpcodeString(inst.caller->opcode()), " %", inst.caller->name(), ": %",
                       inst.computation->name());
        StrAppend(&out, indent, "  style=dashed;\n");
      }
      StrAppend(&out, indent, "  label=\"", Escape(label), "\";\n");
      stack.push_back({k, true});
    }
    WriteNodes(inst, &out);
    for (auto it = inst.children.rbegin(); it != inst.children.rend(); ++it) {
      stack.push_back({*it, false});
    }
  }
  WriteEdges(&out);
  return out + "}\n";
}

}  // namespace

std::string HloModuleToDot(const HloModule& module) { return DotWriter().Write(module); }

}  // namespace jx::hlo
