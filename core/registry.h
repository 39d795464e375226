// The rule tables: for every primitive, its abstract evaluation (mandatory) and its eager
// implementation; later layers add jvp, transpose, batching and lowering rules beside them.
// A primitive family registers all its rules in one explicit RegisterX(Registry&) function
// (lax::RegisterAll calls them; no static-initializer registration). A missing rule is an
// explicit Unsupported("why"), which the coverage test lists.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "absl/types/span.h"
#include "jx/core/array.h"
#include "jx/core/param_map.h"
#include "jx/core/primitive.h"

namespace jx {

using InAvals = absl::Span<const ShapedArray* const>;
using Avals = absl::InlinedVector<ShapedArray, 1>;

// Computes output avals from input avals, or throws TypeError/ShapeError naming the op.
using AbstractEvalRule = std::function<Avals(InAvals in, const ParamMap& params)>;
// Computes concrete outputs; out_avals is what abstract_eval returned for these inputs.
using ImplRule = std::function<Arrays(absl::Span<const Array> in, const ParamMap& params,
                                      absl::Span<const ShapedArray> out_avals)>;

struct PrimitiveRules {
  Primitive primitive;
  AbstractEvalRule abstract_eval;
  ImplRule impl;
  // Rule name ("impl", "jvp", ...) -> why the primitive has no such rule.
  std::map<std::string, std::string> unsupported;
};

class Registry {
 public:
  // The entry for p, created empty on first use.
  PrimitiveRules& Define(Primitive p);
  const PrimitiveRules* Find(Primitive p) const {
    return p.id() < by_id_.size() && by_id_[p.id()].primitive.valid() ? &by_id_[p.id()] : nullptr;
  }
  // The rules for p, or InternalError when p was never registered.
  const PrimitiveRules& Get(Primitive p) const;
  std::vector<Primitive> primitives() const;

 private:
  std::vector<PrimitiveRules> by_id_;
};

// The process-wide registry. Filled once (lax::RegisterAll) before the first bind.
Registry& GlobalRegistry();

}  // namespace jx
