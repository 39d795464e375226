// Staging: an interpreter that records primitive applications into a Jaxpr instead of
// running them (JAX's DynamicJaxprTrace; with Mode::kStageUnknown, partial evaluation).
//
//   StagingInterpreter s(StagingInterpreter::Mode::kStageAll, "make_jaxpr(f)");
//   Array x = s.NewArg(ShapedArray{{3}, float32});
//   Arrays outs;
//   { InterpreterScope scope(&s); outs = {lax::sin(x)}; }
//   ClosedJaxpr j = s.Build(outs);
#pragma once

#include <optional>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "jx/core/interpreter.h"
#include "jx/core/jaxpr.h"

namespace jx {

class StagingInterpreter final : public Interpreter {
 public:
  enum class Mode {
    // Every primitive bound under this interpreter is recorded (make_jaxpr, jit).
    kStageAll,
    // Only primitives with an input traced by this interpreter are recorded; the rest run
    // on the parent, and their values become constants of the jaxpr (linearize: known
    // primal computations run now, the linear tangent program is staged).
    kStageUnknown,
  };
  StagingInterpreter(Mode mode, std::string name);

  // A new input variable of the jaxpr, as a tracer of this interpreter. The label names it
  // in errors ("argument 0 at .w"); empty: "input i".
  Array NewArg(ShapedArray aval, std::string label = {});
  Arrays Process(Primitive p, absl::Span<const Array> inputs, const ParamMap& params) override;
  std::string name() const override { return name_; }

  // Finishes the jaxpr with outs as its outputs (own tracers, constants or outer values).
  ClosedJaxpr Build(absl::Span<const Array> outs);

 private:
  Atom AtomFor(const Array& x, std::string_view op, size_t argument);
  // Records one equation and returns tracers for its outputs.
  Arrays Stage(Primitive p, absl::Span<const Array> inputs, const ParamMap& params);
  // kStageUnknown with some inputs known: the primitive's partial_eval rule, if it has one.
  std::optional<Arrays> SplitKnown(Primitive p, absl::Span<const Array> inputs, const ParamMap& params);

  Mode mode_;
  std::string name_;
  std::shared_ptr<Jaxpr> jaxpr_ = std::make_shared<Jaxpr>();
  std::vector<Array> consts_;
  std::shared_ptr<std::vector<std::string>> labels_ = std::make_shared<std::vector<std::string>>();
  absl::flat_hash_map<const ArrayImpl*, Var> const_vars_;
};

// The var a tracer of a staging interpreter stands for.
class StagedTracer final : public Tracer {
 public:
  StagedTracer(ShapedArray aval, const Interpreter& owner, Var var, std::shared_ptr<const Jaxpr> jaxpr,
               std::shared_ptr<const std::vector<std::string>> labels)
      : Tracer(std::move(aval), owner), var_(var), jaxpr_(std::move(jaxpr)), labels_(std::move(labels)) {}
  Var var() const { return var_; }
  // Names the inputs of the jaxpr being built that this value depends on.
  std::string Provenance() const override;

 private:
  Var var_;
  std::shared_ptr<const Jaxpr> jaxpr_;  // the jaxpr being built (kept alive for errors)
  std::shared_ptr<const std::vector<std::string>> labels_;
};

// Traces fn on abstract inputs of the given avals into a closed jaxpr (make_jaxpr's core).
// in_labels name the inputs in errors (empty: "input i").
ClosedJaxpr TraceToJaxpr(const std::function<Arrays(absl::Span<const Array>)>& fn,
                         absl::Span<const ShapedArray> in_avals, std::string name,
                         absl::Span<const std::string> in_labels = {});

}  // namespace jx
