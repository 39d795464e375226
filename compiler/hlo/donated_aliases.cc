#include "jx/compiler/hlo/donated_aliases.h"

namespace jx::hlo {

std::vector<Shape> ArrayLeaves(const Shape& shape) {
  std::vector<Shape> leaves;
  std::vector<const Shape*> stack{&shape};  // iterative: nested tuples may be deep
  while (!stack.empty()) {
    const Shape* s = stack.back();
    stack.pop_back();
    if (s->IsTuple()) {
      for (int64_t i = s->tuple_shapes_size() - 1; i >= 0; --i) stack.push_back(&s->tuple_shapes(i));
    } else {
      leaves.push_back(*s);
    }
  }
  return leaves;
}

std::vector<DonatedAlias> PairDonatedArguments(const HloComputation& computation, const std::vector<bool>& donated) {
  std::vector<DonatedAlias> pairs;
  if (donated.empty()) return pairs;
  std::vector<Shape> arguments;
  for (int64_t p = 0; p < computation.num_parameters(); ++p) {
    for (Shape& s : ArrayLeaves(computation.parameter_instruction(p)->shape())) arguments.push_back(std::move(s));
  }
  if (arguments.size() != donated.size()) return pairs;
  std::vector<bool> taken(arguments.size(), false);
  const std::vector<Shape> outputs = ArrayLeaves(computation.root_instruction()->shape());
  for (size_t k = 0; k < outputs.size(); ++k) {
    const Shape& out = outputs[k];
    if (!out.IsArray()) continue;
    for (size_t a = 0; a < arguments.size(); ++a) {
      const Shape& arg = arguments[a];
      if (!donated[a] || taken[a] || !arg.IsArray() || arg.element_type() != out.element_type() ||
          arg.dimensions() != out.dimensions()) {
        continue;
      }
      taken[a] = true;
      pairs.push_back({static_cast<int64_t>(k), static_cast<int64_t>(a)});
      break;
    }
  }
  return pairs;
}

}  // namespace jx::hlo
