// The rule tables: for every primitive, its abstract evaluation (mandatory) and its eager
// implementation; later layers add jvp, transpose, batching and lowering rules beside them.
// A primitive family registers all its rules in one explicit RegisterX(Registry&) function
// (lax::RegisterAll calls them; no static-initializer registration). A missing rule is an
// explicit Unsupported("why"), which the coverage test lists.
#pragma once

#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "absl/status/status.h"
#include "absl/types/span.h"
#include "jx/core/array.h"
#include "jx/core/param_map.h"
#include "jx/core/primitive.h"
#include "jx/core/sharding_rule.h"

namespace jx {

// Lowering to HLO (compiler/lower/lower_context.h defines the context; core only names it).
class LowerContext;
using LowerRule = std::function<absl::Status(LowerContext& ctx)>;

using InAvals = absl::Span<const ShapedArray* const>;
using Avals = absl::InlinedVector<ShapedArray, 1>;

// Computes output avals from input avals, or throws TypeError/ShapeError naming the op.
using AbstractEvalRule = std::function<Avals(InAvals in, const ParamMap& params)>;
// Computes concrete outputs; out_avals is what abstract_eval returned for these inputs.
using ImplRule = std::function<Arrays(absl::Span<const Array> in, const ParamMap& params,
                                      absl::Span<const ShapedArray> out_avals)>;

// Forward mode: primal outputs and their tangents. An undefined tangent (Array{}) is a
// symbolic zero, in and out. Runs one level down (its binds go to the enclosing
// interpreter), so it is written with ordinary lax ops.
struct JvpResult {
  Arrays primals_out;
  Arrays tangents_out;
};
using JvpRule = std::function<JvpResult(absl::Span<const Array> primals, absl::Span<const Array> tangents,
                                        const ParamMap& params)>;

// An input of a linear equation being transposed: either a known value, or a linear input
// (undefined primal) of which only the aval is known.
// Both members refer into the jaxpr being transposed and its values (the struct lives for
// one rule call): copying a residual would touch its reference count, a cache miss per input
// once a long program's forward values have left the cache.
struct TransposeArg {
  const Array& value;        // defined iff the input is not linear
  const ShapedArray& aval;   // always set
  bool is_linear() const { return !value.defined(); }
};
// Reverse mode for primitives linear in some inputs: cotangents of the outputs (undefined:
// zero) -> cotangents of the inputs (undefined for non-linear inputs or zero cotangents).
using TransposeRule = std::function<Arrays(absl::Span<const Array> cts_out, absl::Span<const TransposeArg> args,
                                           const ParamMap& params)>;

// vmap: the batch dimension of every input (kNotMapped for unbatched ones) -> outputs and
// their batch dimensions. axis_size is the mapped extent.
inline constexpr int64_t kNotMapped = std::numeric_limits<int64_t>::min();
struct BatchResult {
  Arrays outs;
  std::vector<int64_t> out_dims;
};
using BatchRule = std::function<BatchResult(absl::Span<const Array> args, absl::Span<const int64_t> dims,
                                            int64_t axis_size, const ParamMap& params)>;

// Partial evaluation (linearize's staging of what is unknown) for a primitive whose inputs
// are partly unknown, like JAX's partial_eval_jaxpr_custom rules: the known part runs now
// (the rule runs one level down, so its binds go to the enclosing interpreter) and one
// equation is staged for the rest. Without a rule, or when the rule returns nullopt, the
// whole equation is staged.
struct PartialEvalSplit {
  Arrays known_outs;  // one per output; undefined where the output is unknown
  // The staged remainder; its outputs fill known_outs' undefined entries, in order (or, if
  // unknown_from is set, output unknown_from[j] fills the j-th). Its inputs are known values
  // (residuals) and the unknown inputs, passed through untouched.
  Primitive staged;
  Arrays staged_inputs;
  ParamMap staged_params;
  std::vector<size_t> unknown_from;
};
using PartialEvalRule = std::function<std::optional<PartialEvalSplit>(
    absl::Span<const Array> inputs, const std::vector<bool>& unknown, const ParamMap& params)>;

struct PrimitiveRules {
  Primitive primitive;
  AbstractEvalRule abstract_eval;
  ImplRule impl;
  JvpRule jvp;
  TransposeRule transpose;
  BatchRule batch;
  PartialEvalRule partial_eval;  // optional: higher-order primitives (cond, scan)
  LowerRule lower;               // emits the equation's HLO (compiler/lower), any platform
  // Per-platform replacements of `lower` (JAX's register_lowering(..., platform="tpu")),
  // for targets whose numerics or hardware differ: (platform name, rule).
  std::vector<std::pair<std::string, LowerRule>> platform_lower;
  // The op's factor mapping of operand dims to result dims (core/sharding_rule.h): the types
  // of explicit sharding, propagation under jit and the SPMD partitioner read it. Without one,
  // sharded operands are gathered to replicated first (and that is logged).
  ShardingRuleFn sharding_rule;
  // The rule that lowers for `platform` ("cpu", "tpu"): its override, else `lower`.
  const LowerRule& LowerFor(std::string_view platform) const {
    for (const auto& [name, rule] : platform_lower) {
      if (name == platform) return rule;
    }
    return lower;
  }
  // Runs across the devices of a mesh (shard_map): a jit program with such an equation is an
  // SPMD program for the mesh's chips, not a one-device program.
  bool runs_on_mesh = false;
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
