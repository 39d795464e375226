#include "jx/compiler/hlo/hlo_parser.h"

#include <cctype>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "jx/compiler/hlo/hlo_attr_table.h"
#include "jx/compiler/hlo/status_macros.h"
#include "jx/compiler/hlo/str_util.h"

namespace jx::hlo {
namespace {

bool IsNameChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '-';
}

class HloParser {
 public:
  explicit HloParser(std::string_view text) : text_(text) {}

  absl::StatusOr<std::unique_ptr<HloModule>> ParseModule() {
    SkipSpace();
    if (!ConsumeWord("HloModule")) return Error(pos_, "expected 'HloModule'");
    SkipSpace();
    size_t name_pos = pos_;
    std::string_view name = ReadName();
    if (name.empty()) return Error(name_pos, "expected a module name");
    module_ = std::make_unique<HloModule>(std::string(name));
    // Header attributes (entry_computation_layout, ...) are derived data: skip them.
    while (SkipInlineSpace(), Peek() == ',') {
      ++pos_;
      SkipInlineSpace();
      ReadName();
      if (!Consume('=')) return Error(pos_, "expected '=' in module attribute");
      ScanValue();
    }
    HloComputation* last = nullptr;
    while (SkipSpace(), pos_ < text_.size()) {
      HLO_ASSIGN_OR_RETURN(last, ParseComputation());
    }
    if (last == nullptr) return Error(pos_, "module has no computations");
    if (module_->entry_computation() == nullptr) module_->set_entry_computation(last);
    return std::move(module_);
  }

 private:
  struct Signature {
    size_t pos = 0;
    std::vector<std::pair<std::string, Shape>> params;
    Shape result;
    bool present = false;
  };

  absl::StatusOr<HloComputation*> ParseComputation() {
    const bool is_entry = ConsumeWord("ENTRY");
    SkipSpace();
    Consume('%');
    size_t name_pos = pos_;
    std::string_view name = ReadName();
    if (name.empty()) return Error(name_pos, "expected a computation name");
    absl::StatusOr<HloComputation*> comp = module_->AddComputationWithExactName(name);
    if (!comp.ok()) return Error(name_pos, Message(comp.status()));
    HloComputation* c = *comp;
    SkipSpace();
    Signature sig;
    sig.pos = pos_;
    if (Peek() == '(') {
      HLO_RETURN_IF_ERROR(ParseSignature(&sig));
      SkipSpace();
    }
    if (!Consume('{')) return Error(pos_, "expected '{' to open the computation body");
    instructions_.clear();
    HloInstruction* root = nullptr;
    HloInstruction* last = nullptr;
    while (SkipSpace(), Peek() != '}') {
      if (pos_ >= text_.size()) return Error(pos_, "expected '}' to close the computation body");
      bool is_root = false;
      HLO_ASSIGN_OR_RETURN(last, ParseInstruction(c, &is_root));
      if (is_root) {
        if (root != nullptr) return Error(pos_, "computation has two ROOT instructions");
        root = last;
      }
    }
    ++pos_;  // '}'
    if (last == nullptr) return Error(name_pos, StrCat("computation %", name, " is empty"));
    c->set_root_instruction(root != nullptr ? root : last);
    for (int64_t i = 0; i < c->num_parameters(); ++i) {
      if (c->parameter_instruction(i) == nullptr) {
        return Error(name_pos, StrCat("computation %", name, " has no parameter(", i, ")"));
      }
    }
    if (sig.present) HLO_RETURN_IF_ERROR(CheckSignature(sig, *c));
    if (is_entry) {
      if (module_->entry_computation() != nullptr) {
        return Error(name_pos, "more than one ENTRY computation");
      }
      module_->set_entry_computation(c);
    }
    return c;
  }

  absl::Status ParseSignature(Signature* sig) {
    sig->present = true;
    Consume('(');
    while (SkipSpace(), Peek() != ')') {
      if (!sig->params.empty() && !Consume(',')) return Error(pos_, "expected ',' or ')'");
      SkipSpace();
      std::string_view pname = ReadName();
      SkipSpace();
      if (pname.empty() || !Consume(':')) return Error(pos_, "expected 'name: shape'");
      SkipSpace();
      HLO_ASSIGN_OR_RETURN(Shape shape, ParseShape());
      sig->params.emplace_back(std::string(pname), std::move(shape));
    }
    ++pos_;
    SkipSpace();
    if (!ConsumeWord("->")) return Error(pos_, "expected '->' in the computation signature");
    SkipSpace();
    HLO_ASSIGN_OR_RETURN(sig->result, ParseShape());
    return absl::OkStatus();
  }

  absl::Status CheckSignature(const Signature& sig, const HloComputation& c) {
    if (static_cast<int64_t>(sig.params.size()) != c.num_parameters()) {
      return Error(sig.pos, StrCat("signature lists ", sig.params.size(),
                                         " parameters but the body has ", c.num_parameters()));
    }
    for (size_t i = 0; i < sig.params.size(); ++i) {
      if (!ShapeUtil::Compatible(sig.params[i].second, c.parameter_instruction(i)->shape())) {
        return Error(sig.pos, StrCat("signature parameter ", i, " is ",
                                           sig.params[i].second.ToString(false), " but parameter(",
                                           i, ") is ",
                                           c.parameter_instruction(i)->shape().ToString(false)));
      }
    }
    if (!ShapeUtil::Compatible(sig.result, c.root_instruction()->shape())) {
      return Error(sig.pos, StrCat("signature result ", sig.result.ToString(false),
                                         " differs from the root's shape ",
                                         c.root_instruction()->shape().ToString(false)));
    }
    return absl::OkStatus();
  }

  absl::StatusOr<HloInstruction*> ParseInstruction(HloComputation* c, bool* is_root) {
    *is_root = ConsumeWord("ROOT");
    SkipSpace();
    Consume('%');
    const size_t name_pos = pos_;
    std::string_view name = ReadName();
    if (name.empty()) return Error(name_pos, "expected an instruction name");
    SkipSpace();
    if (!Consume('=')) return Error(pos_, "expected '=' after the instruction name");
    SkipSpace();
    HLO_ASSIGN_OR_RETURN(Shape shape, ParseShape());
    SkipSpace();
    const size_t opcode_pos = pos_;
    std::string_view opcode_name = ReadName();
    absl::StatusOr<HloOpcode> opcode = StringToHloOpcode(opcode_name);
    if (!opcode.ok()) return Error(opcode_pos, Message(opcode.status()));
    if (!Consume('(')) return Error(pos_, "expected '(' after the opcode");

    std::unique_ptr<HloInstruction> instr;
    if (*opcode == HloOpcode::kParameter || *opcode == HloOpcode::kConstant) {
      const size_t arg_pos = pos_;
      std::string_view arg = ScanBalancedUntil(')');
      if (!Consume(')')) return Error(pos_, "expected ')'");
      instr = HloInstruction::Create(*opcode, shape, {});
      if (*opcode == HloOpcode::kParameter) {
        int64_t number;
        if (!SimpleAtoi(arg, &number) || number < 0) {
          return Error(arg_pos, "expected a parameter number");
        }
        if (number < c->num_parameters() && c->parameter_instruction(number) != nullptr) {
          return Error(arg_pos, StrCat("parameter(", number, ") defined twice"));
        }
        instr->set_parameter_number(number);
      } else {
        absl::StatusOr<Literal> literal = Literal::Parse(arg, shape);
        if (!literal.ok()) return Error(arg_pos, Message(literal.status()));
        instr->set_literal(*std::move(literal));
      }
    } else {
      std::vector<HloInstruction*> operands;
      while (SkipSpace(), Peek() != ')') {
        if (!operands.empty() && !Consume(',')) return Error(pos_, "expected ',' or ')'");
        HLO_ASSIGN_OR_RETURN(HloInstruction * operand, ParseOperand());
        operands.push_back(operand);
      }
      ++pos_;
      instr = HloInstruction::Create(*opcode, shape, operands);
    }
    HLO_RETURN_IF_ERROR(ParseAttributes(instr.get()));
    absl::StatusOr<HloInstruction*> added = c->AddInstructionWithExactName(std::move(instr), name);
    if (!added.ok()) return Error(name_pos, Message(added.status()));
    instructions_[(*added)->name()] = *added;
    return *added;
  }

  absl::StatusOr<HloInstruction*> ParseOperand() {
    SkipSpace();
    std::optional<Shape> shape;
    size_t start = pos_;
    if (Peek() != '%') {
      // Either "shape %name" (long form) or a bare name.
      std::string_view word = Peek() == '(' ? "" : ReadName();
      if (Peek() == '[' || Peek() == '(') {
        pos_ = start;
        HLO_ASSIGN_OR_RETURN(shape, ParseShape());
        SkipSpace();
      } else {
        pos_ = start;
        if (word.empty()) return Error(pos_, "expected an operand");
      }
    }
    Consume('%');
    const size_t name_pos = pos_;
    std::string_view name = ReadName();
    auto it = instructions_.find(name);
    if (name.empty() || it == instructions_.end()) {
      return Error(name_pos, StrCat("unknown operand %", name,
                                          " (operands must be defined earlier in the computation)"));
    }
    if (shape.has_value() && !ShapeUtil::Compatible(*shape, it->second->shape())) {
      return Error(start, StrCat("operand %", name, " is written as ",
                                       shape->ToString(false), " but defined as ",
                                       it->second->shape().ToString(false)));
    }
    return it->second;
  }

  absl::Status ParseAttributes(HloInstruction* instr) {
    while (SkipInlineSpace(), Peek() == ',') {
      ++pos_;
      SkipInlineSpace();
      const size_t key_pos = pos_;
      std::string_view key = ReadName();
      if (key.empty() || !Consume('=')) return Error(key_pos, "expected 'attribute=value'");
      const size_t value_pos = pos_;
      std::string_view value = ScanValue();
      absl::Status st;
      if (key == "metadata") {
        absl::StatusOr<OpMetadata> metadata = ParseOpMetadata(value);
        if (metadata.ok()) instr->set_metadata(*std::move(metadata));
        st = metadata.status();
      } else if (std::optional<HloAttr> attr = FindHloAttr(key); attr.has_value()) {
        st = GetHloAttrInfo(*attr).parse(
            value, instr, [&](std::string_view ref) -> absl::StatusOr<HloComputation*> {
              std::string_view cname = ref.substr(!ref.empty() && ref[0] == '%' ? 1 : 0);
              HloComputation* c = module_->GetComputationWithName(cname);
              if (c == nullptr) {
                return absl::NotFoundError(StrCat(
                    "unknown computation %", cname, " (computations must be defined before use)"));
              }
              return c;
            });
      } else {
        return Error(key_pos, StrCat("unknown attribute \"", key, "\""));
      }
      if (!st.ok()) return Error(value_pos, StrCat(key, ": ", Message(st)));
    }
    return absl::OkStatus();
  }

  absl::StatusOr<Shape> ParseShape() {
    size_t consumed = 0;
    absl::StatusOr<Shape> shape = ShapeUtil::ParseShapePrefix(text_.substr(pos_), &consumed);
    if (!shape.ok()) return Error(pos_ + consumed, Message(shape.status()));
    pos_ += consumed;
    return shape;
  }

  // An attribute value: up to a top-level ',' or end of line (brackets and quotes nest).
  std::string_view ScanValue() {
    const size_t start = pos_;
    int depth = 0;
    while (pos_ < text_.size()) {
      const char ch = text_[pos_];
      if (ch == '"') {
        SkipQuoted();
        continue;
      }
      if (depth == 0 && (ch == ',' || ch == '\n')) break;
      if (ch == '{' || ch == '(' || ch == '[') ++depth;
      if (ch == '}' || ch == ')' || ch == ']') {
        if (depth == 0) break;
        --depth;
      }
      ++pos_;
    }
    size_t end = pos_;
    while (end > start && std::isspace(static_cast<unsigned char>(text_[end - 1]))) --end;
    return text_.substr(start, end - start);
  }

  // Text up to the `close` that ends the current bracket level.
  std::string_view ScanBalancedUntil(char close) {
    const size_t start = pos_;
    int depth = 0;
    while (pos_ < text_.size()) {
      const char ch = text_[pos_];
      if (ch == '"') {
        SkipQuoted();
        continue;
      }
      if (depth == 0 && ch == close) break;
      if (ch == '{' || ch == '(' || ch == '[') ++depth;
      if (ch == '}' || ch == ')' || ch == ']') --depth;
      ++pos_;
    }
    return text_.substr(start, pos_ - start);
  }

  void SkipQuoted() {
    ++pos_;
    while (pos_ < text_.size() && text_[pos_] != '"') pos_ += text_[pos_] == '\\' ? 2 : 1;
    pos_ = std::min(pos_ + 1, text_.size());
  }

  std::string_view ReadName() {
    const size_t start = pos_;
    while (pos_ < text_.size() && IsNameChar(text_[pos_])) ++pos_;
    return text_.substr(start, pos_ - start);
  }

  char Peek() const { return pos_ < text_.size() ? text_[pos_] : '\0'; }
  bool Consume(char c) {
    if (Peek() != c) return false;
    ++pos_;
    return true;
  }
  bool ConsumeWord(std::string_view word) {
    if (text_.substr(pos_, word.size()) != word) return false;
    const size_t after = pos_ + word.size();
    if (IsNameChar(word.back()) && after < text_.size() && IsNameChar(text_[after])) return false;
    pos_ = after;
    return true;
  }

  // Spaces, newlines and comments (/* ... */ and // to end of line).
  void SkipSpace() {
    while (pos_ < text_.size()) {
      if (std::isspace(static_cast<unsigned char>(text_[pos_]))) {
        ++pos_;
      } else if (text_.substr(pos_, 2) == "/*") {
        size_t end = text_.find("*/", pos_ + 2);
        pos_ = end == std::string_view::npos ? text_.size() : end + 2;
      } else if (text_.substr(pos_, 2) == "//") {
        size_t end = text_.find('\n', pos_);
        pos_ = end == std::string_view::npos ? text_.size() : end;
      } else {
        break;
      }
    }
  }
  void SkipInlineSpace() {
    while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\t')) ++pos_;
  }

  absl::Status Error(size_t pos, std::string_view message) const {
    pos = std::min(pos, text_.size());
    const size_t line_start = text_.rfind('\n', pos == 0 ? 0 : pos - 1);
    const size_t begin = (line_start == std::string_view::npos || pos == 0) ? 0 : line_start + 1;
    size_t line_end = text_.find('\n', begin);
    if (line_end == std::string_view::npos) line_end = text_.size();
    int64_t line = 1;
    for (size_t i = 0; i < begin; ++i) line += text_[i] == '\n';
    const size_t column = pos - begin + 1;
    return absl::InvalidArgumentError(
        StrCat("line ", line, ", column ", column, ": ", message, "\n  ",
                     text_.substr(begin, line_end - begin), "\n  ",
                     std::string(column - 1, ' '), "^"));
  }

  std::string_view text_;
  size_t pos_ = 0;
  std::unique_ptr<HloModule> module_;
  absl::flat_hash_map<std::string_view, HloInstruction*> instructions_;  // current computation
};

}  // namespace

absl::StatusOr<std::unique_ptr<HloModule>> ParseHloModule(std::string_view text) {
  return HloParser(text).ParseModule();
}

}  // namespace jx::hlo
