#include "jx/core/registry.h"

#include "jx/core/errors.h"

namespace jx {

PrimitiveRules& Registry::Define(Primitive p) {
  if (p.id() >= by_id_.size()) by_id_.resize(p.id() + 1);
  PrimitiveRules& rules = by_id_[p.id()];
  rules.primitive = p;
  return rules;
}

const PrimitiveRules& Registry::Get(Primitive p) const {
  const PrimitiveRules* rules = Find(p);
  if (rules == nullptr) {
    throw InternalError(StrCat("[", p.valid() ? p.name() : "?", "] primitive has no registered rules"));
  }
  return *rules;
}

std::vector<Primitive> Registry::primitives() const {
  std::vector<Primitive> out;
  for (const PrimitiveRules& r : by_id_) {
    if (r.primitive.valid()) out.push_back(r.primitive);
  }
  return out;
}

Registry& GlobalRegistry() {
  static auto* registry = new Registry;
  return *registry;
}

}  // namespace jx
