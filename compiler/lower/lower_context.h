// LowerContext: what a primitive's lowering rule (PrimitiveRules::lower) sees while one
// equation is lowered to HLO: its params, the HLO values of its inputs, the input and output
// avals, the builder of the computation being emitted, and helpers for constants and
// sub-computations (cond branches, loop bodies, reducers). A rule emits instructions through
// builder() and finishes with SetOutputs (one instruction per output aval, in order).
//
//   rules.lower = [](LowerContext& ctx) -> absl::Status {
//     HLO_ASSIGN_OR_RETURN(hlo::HloInstruction* y, ctx.builder().Sin(ctx.operand(0)));
//     ctx.SetOutputs({y});
//     return absl::OkStatus();
//   };
//
// Every instruction emitted for the equation carries op_name metadata "<name stack>/<prim>"
// (e.g. "jit(f)/sin", "jit(f)/while/body/mul"), as JAX's lowering writes it.
#pragma once

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "jx/compiler/hlo/hlo_builder.h"
#include "jx/compiler/hlo/hlo_module.h"
#include "jx/core/jaxpr.h"
#include "jx/core/param_map.h"
#include "jx/core/shape.h"

namespace jx {

namespace lower_internal {
class Lowerer;
}  // namespace lower_internal

// An equation's input or output avals where the jaxpr keeps them (the lowering reads them
// for every equation: copying them cost more than the rest of the driver's work). Indexes
// and iterates as a span of ShapedArray would.
class AvalSpan {
 public:
  class Iterator {
   public:
    using iterator_category = std::forward_iterator_tag;
    using value_type = ShapedArray;
    using difference_type = std::ptrdiff_t;
    using pointer = const ShapedArray*;
    using reference = const ShapedArray&;
    Iterator() = default;
    explicit Iterator(const ShapedArray* const* at) : at_(at) {}
    const ShapedArray& operator*() const { return **at_; }
    const ShapedArray* operator->() const { return *at_; }
    Iterator& operator++() {
      ++at_;
      return *this;
    }
    Iterator operator++(int) { return Iterator(at_++); }
    friend bool operator==(const Iterator&, const Iterator&) = default;

   private:
    const ShapedArray* const* at_ = nullptr;
  };

  AvalSpan() = default;
  explicit AvalSpan(absl::Span<const ShapedArray* const> avals) : avals_(avals) {}
  size_t size() const { return avals_.size(); }
  bool empty() const { return avals_.empty(); }
  const ShapedArray& operator[](size_t i) const { return *avals_[i]; }
  const ShapedArray& at(size_t i) const { return *avals_.at(i); }
  Iterator begin() const { return Iterator(avals_.data()); }
  Iterator end() const { return Iterator(avals_.data() + avals_.size()); }

 private:
  absl::Span<const ShapedArray* const> avals_;
};

class LowerContext {
 public:
  // Made by the lowering driver (lower_jaxpr.cc) for one equation.
  // The spans and name_stack are the driver's, valid while the rule runs (the driver reuses
  // their memory from equation to equation).
  LowerContext(lower_internal::Lowerer& lowerer, hlo::HloBuilder& builder, const Eqn& eqn,
               absl::Span<hlo::HloInstruction* const> operands, AvalSpan in_avals, AvalSpan out_avals,
               const std::string& name_stack);
  LowerContext(const LowerContext&) = delete;
  LowerContext& operator=(const LowerContext&) = delete;

  const ParamMap& params() const { return eqn_.params; }
  Primitive primitive() const { return eqn_.primitive; }
  std::string_view primitive_name() const { return eqn_.primitive.name(); }
  absl::Span<hlo::HloInstruction* const> operands() const { return operands_; }
  hlo::HloInstruction* operand(size_t i) const { return operands_.at(i); }
  AvalSpan in_avals() const { return in_avals_; }
  AvalSpan out_avals() const { return out_avals_; }
  const ShapedArray& in_aval(size_t i) const { return in_avals_.at(i); }
  const ShapedArray& out_aval(size_t i) const { return out_avals_.at(i); }

  hlo::HloBuilder& builder() { return builder_; }
  hlo::HloModule& module();
  // A channel id no collective of the module has yet (collectives' lowering rules).
  int64_t NewChannelId();
  // The platform being lowered for ("cpu", "tpu"; LowerOptions::platform).
  const std::string& platform() const;
  // The enclosing scopes ("jit(f)", "jit(f)/while/body"); op_name() appends the primitive.
  const std::string& name_stack() const { return name_stack_; }
  std::string op_name() const;
  hlo::OpMetadata metadata() const;

  // One instruction per output aval; the driver checks their shapes.
  void SetOutputs(std::vector<hlo::HloInstruction*> outputs) { outputs_ = std::move(outputs); }
  const std::vector<hlo::HloInstruction*>& outputs() const { return outputs_; }

  static hlo::Shape ShapeOf(const ShapedArray& aval);
  static hlo::PrimitiveType TypeOf(DType dtype);

  // A scalar constant of dtype (integers from doubles truncate; use the integral overload
  // for exact 64-bit values).
  absl::StatusOr<hlo::HloInstruction*> ConstantScalar(double value, DType dtype);
  absl::StatusOr<hlo::HloInstruction*> ConstantInt(int64_t value, DType dtype);
  template <std::integral T>
  absl::StatusOr<hlo::HloInstruction*> ConstantScalar(T value, DType dtype) {
    return ConstantInt(static_cast<int64_t>(value), dtype);
  }

  // A builder for a new computation of this module whose instructions carry this
  // equation's metadata (reducers, comparators, loop bodies).
  hlo::HloBuilder NewBuilder(std::string_view name);
  // (a, b) -> op(a, b) over scalars of `type`: the to_apply of reduce/scatter/reduce-window.
  absl::StatusOr<hlo::HloComputation*> ScalarBinaryComputation(hlo::HloOpcode op, hlo::PrimitiveType type,
                                                               std::string_view name);

  // Lowers a sub-jaxpr into a new computation `name`: parameters are its invars (one tuple
  // parameter holding them when tuple_param), its consts become constants, and the root is
  // the tuple of its outputs (the single output itself when !tuple_result). The name stack
  // inside is name_stack()/<prim>/<scope>.
  absl::StatusOr<hlo::HloComputation*> LowerSubJaxpr(const ClosedJaxpr& jaxpr, std::string_view name,
                                                     std::string_view scope, bool tuple_param = false,
                                                     bool tuple_result = true);
  // Emits the sub-jaxpr's equations into `builder` (a computation of this module) on args;
  // returns its outputs.
  absl::StatusOr<std::vector<hlo::HloInstruction*>> InlineJaxpr(hlo::HloBuilder& builder, const ClosedJaxpr& jaxpr,
                                                                absl::Span<hlo::HloInstruction* const> args,
                                                                std::string_view scope);

 private:
  lower_internal::Lowerer& lowerer_;
  hlo::HloBuilder& builder_;
  const Eqn& eqn_;
  absl::Span<hlo::HloInstruction* const> operands_;
  AvalSpan in_avals_, out_avals_;
  const std::string& name_stack_;
  std::vector<hlo::HloInstruction*> outputs_;
};

}  // namespace jx
