// XOp: HLO values with arithmetic operators, so lowering rules and expansions (lgamma,
// erf_inv, threefry) read like the math they emit. Each operation adds an instruction to the
// builder the operands live in; a shape error throws InternalError, which LowerJaxpr turns
// into a status naming the equation. Scalars mixed with an XOp become constants of its type,
// broadcast to its shape.
//
//   XOp x = Wrap(ctx, ctx.operand(0));
//   XOp y = Select(x < 0.0, -x, x * 2.0);        // compare, negate, multiply, select
//   ctx.SetOutputs({y.instr()});
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "jx/compiler/hlo/hlo_builder.h"
#include "jx/compiler/lower/lower_context.h"

namespace jx::lower {

class XOp {
 public:
  XOp() = default;
  XOp(hlo::HloBuilder* builder, hlo::HloInstruction* instr) : builder_(builder), instr_(instr) {}
  hlo::HloInstruction* instr() const { return instr_; }
  hlo::HloBuilder& builder() const { return *builder_; }
  const hlo::Shape& shape() const { return instr_->shape(); }
  hlo::PrimitiveType type() const { return instr_->shape().element_type(); }
  absl::Span<const int64_t> dims() const { return instr_->shape().dimensions(); }
  int64_t rank() const { return instr_->shape().rank(); }

 private:
  hlo::HloBuilder* builder_ = nullptr;
  hlo::HloInstruction* instr_ = nullptr;
};

// The instruction, or InternalError with the status message.
hlo::HloInstruction* Check(absl::StatusOr<hlo::HloInstruction*> result);
XOp Wrap(hlo::HloBuilder& b, absl::StatusOr<hlo::HloInstruction*> result);
inline XOp Wrap(LowerContext& ctx, hlo::HloInstruction* instr) { return XOp(&ctx.builder(), instr); }
// The rule's operands as XOps.
std::vector<XOp> Operands(LowerContext& ctx);
std::vector<hlo::HloInstruction*> Instrs(absl::Span<const XOp> ops);
// The operands with 0-d ones broadcast to the first output's dimensions (lax's elementwise
// ops accept 0-d operands beside arrays; HLO never broadcasts implicitly).
std::vector<XOp> ElementwiseOperands(LowerContext& ctx);
// Sets the rule's outputs and returns OK.
absl::Status Outputs(LowerContext& ctx, absl::Span<const XOp> outs);
inline absl::Status Output(LowerContext& ctx, const XOp& out) { return Outputs(ctx, {out}); }
// fn evaluated on x converted to at least `type`'s precision, the result converted back (so
// a multi-op expansion of a 16-bit float rounds once, as the eager kernels do).
XOp ComputeIn(const XOp& x, hlo::PrimitiveType type, const std::function<XOp(const XOp&)>& fn);

// Constants: a scalar of `type`, broadcast to dims.
XOp Full(hlo::HloBuilder& b, hlo::PrimitiveType type, absl::Span<const int64_t> dims, double value);
XOp FullInt(hlo::HloBuilder& b, hlo::PrimitiveType type, absl::Span<const int64_t> dims, int64_t value);
XOp FullUint(hlo::HloBuilder& b, hlo::PrimitiveType type, absl::Span<const int64_t> dims, uint64_t value);
// A constant like x (same type and shape).
XOp Like(const XOp& x, double value);
XOp LikeUint(const XOp& x, uint64_t value);
// The largest finite / infinite value of a float type (or the extreme value of an integer
// type), as a scalar constant: the identities of max/min reductions.
XOp Lowest(hlo::HloBuilder& b, hlo::PrimitiveType type);  // -inf or INT_MIN
XOp Highest(hlo::HloBuilder& b, hlo::PrimitiveType type);  // +inf or INT_MAX

XOp operator+(const XOp& a, const XOp& b);
XOp operator-(const XOp& a, const XOp& b);
XOp operator*(const XOp& a, const XOp& b);
XOp operator/(const XOp& a, const XOp& b);
XOp operator-(const XOp& a);
XOp operator+(const XOp& a, double b);
XOp operator-(const XOp& a, double b);
XOp operator*(const XOp& a, double b);
XOp operator/(const XOp& a, double b);
XOp operator+(double a, const XOp& b);
XOp operator-(double a, const XOp& b);
XOp operator*(double a, const XOp& b);
XOp operator/(double a, const XOp& b);
XOp operator&(const XOp& a, const XOp& b);
XOp operator|(const XOp& a, const XOp& b);
XOp operator^(const XOp& a, const XOp& b);
XOp operator!(const XOp& a);  // not (logical for pred, bitwise for integers)

XOp Unary(hlo::HloOpcode op, const XOp& x);
XOp Binary(hlo::HloOpcode op, const XOp& a, const XOp& b);
XOp Compare(const XOp& a, const XOp& b, hlo::ComparisonDirection dir,
            hlo::ComparisonType type = hlo::ComparisonType::kDefault);
XOp operator<(const XOp& a, const XOp& b);
XOp operator<=(const XOp& a, const XOp& b);
XOp operator>(const XOp& a, const XOp& b);
XOp operator>=(const XOp& a, const XOp& b);
XOp operator<(const XOp& a, double b);
XOp operator<=(const XOp& a, double b);
XOp operator>(const XOp& a, double b);
XOp operator>=(const XOp& a, double b);
XOp Eq(const XOp& a, const XOp& b);
XOp Ne(const XOp& a, const XOp& b);
XOp Eq(const XOp& a, double b);
XOp Ne(const XOp& a, double b);

XOp Abs(const XOp& x);
XOp Exp(const XOp& x);
XOp Log(const XOp& x);
XOp Log1p(const XOp& x);
XOp Sqrt(const XOp& x);
XOp Rsqrt(const XOp& x);
XOp Floor(const XOp& x);
XOp Sin(const XOp& x);
XOp Cos(const XOp& x);
XOp Tan(const XOp& x);
XOp IsFinite(const XOp& x);
XOp Max(const XOp& a, const XOp& b);
XOp Min(const XOp& a, const XOp& b);
XOp Pow(const XOp& a, const XOp& b);
XOp Atan2(const XOp& a, const XOp& b);
XOp Rem(const XOp& a, const XOp& b);
XOp ShiftLeft(const XOp& a, const XOp& b);
XOp ShiftRightLogical(const XOp& a, const XOp& b);
XOp Select(const XOp& pred, const XOp& on_true, const XOp& on_false);
XOp Convert(const XOp& x, hlo::PrimitiveType type);
XOp BitcastConvert(const XOp& x, hlo::PrimitiveType type);
XOp Reshape(const XOp& x, absl::Span<const int64_t> dims);
XOp Broadcast(const XOp& x, absl::Span<const int64_t> dims, absl::Span<const int64_t> broadcast_dims);
// A scalar broadcast to dims (returned unchanged when dims are its own).
XOp BroadcastScalar(const XOp& x, absl::Span<const int64_t> dims);
XOp Slice(const XOp& x, absl::Span<const int64_t> starts, absl::Span<const int64_t> limits,
          absl::Span<const int64_t> strides = {});
XOp Tuple(hlo::HloBuilder& b, absl::Span<const XOp> elements);
XOp GetTupleElement(const XOp& t, int64_t i);
// a*x^n + ... evaluated by Horner's rule; coefficients from the highest power down.
XOp Polynomial(const XOp& x, absl::Span<const double> coefficients);

}  // namespace jx::lower
