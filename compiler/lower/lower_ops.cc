#include "jx/compiler/lower/lower_ops.h"

#include <cmath>
#include <limits>
#include <string>

#include "jx/core/errors.h"

namespace jx::lower {

using hlo::HloInstruction;
using hlo::HloOpcode;
using hlo::PrimitiveType;

HloInstruction* Check(absl::StatusOr<HloInstruction*> result) {
  if (!result.ok()) throw InternalError(std::string(result.status().message()));
  return *result;
}

XOp Wrap(hlo::HloBuilder& b, absl::StatusOr<HloInstruction*> result) { return XOp(&b, Check(std::move(result))); }

std::vector<XOp> Operands(LowerContext& ctx) {
  std::vector<XOp> out;
  for (HloInstruction* x : ctx.operands()) out.emplace_back(&ctx.builder(), x);
  return out;
}

std::vector<HloInstruction*> Instrs(absl::Span<const XOp> ops) {
  std::vector<HloInstruction*> out;
  for (const XOp& x : ops) out.push_back(x.instr());
  return out;
}

std::vector<XOp> ElementwiseOperands(LowerContext& ctx) {
  const std::vector<int64_t>& dims = ctx.out_aval(0).shape;
  std::vector<XOp> out;
  for (HloInstruction* x : ctx.operands()) {
    XOp op(&ctx.builder(), x);
    out.push_back(op.rank() == 0 && !dims.empty() ? Broadcast(op, dims, {}) : op);
  }
  return out;
}

absl::Status Outputs(LowerContext& ctx, absl::Span<const XOp> outs) {
  ctx.SetOutputs(Instrs(outs));
  return absl::OkStatus();
}

XOp ComputeIn(const XOp& x, PrimitiveType type, const std::function<XOp(const XOp&)>& fn) {
  if (hlo::BitWidth(x.type()) >= hlo::BitWidth(type)) return fn(x);
  return Convert(fn(Convert(x, type)), x.type());
}

namespace {

XOp ScalarConstant(hlo::HloBuilder& b, hlo::Literal literal, absl::Span<const int64_t> dims) {
  XOp c = Wrap(b, b.Constant(std::move(literal)));
  return BroadcastScalar(c, dims);
}

}  // namespace

XOp Full(hlo::HloBuilder& b, PrimitiveType type, absl::Span<const int64_t> dims, double value) {
  return ScalarConstant(b, hlo::Literal::CreateScalar(type, value), dims);
}

XOp FullInt(hlo::HloBuilder& b, PrimitiveType type, absl::Span<const int64_t> dims, int64_t value) {
  hlo::Literal lit(hlo::ShapeUtil::MakeScalarShape(type));
  lit.SetFromInt64(0, value);
  return ScalarConstant(b, std::move(lit), dims);
}

XOp FullUint(hlo::HloBuilder& b, PrimitiveType type, absl::Span<const int64_t> dims, uint64_t value) {
  hlo::Literal lit(hlo::ShapeUtil::MakeScalarShape(type));
  lit.SetFromUint64(0, value);
  return ScalarConstant(b, std::move(lit), dims);
}

XOp Like(const XOp& x, double value) { return Full(x.builder(), x.type(), x.dims(), value); }
XOp LikeUint(const XOp& x, uint64_t value) { return FullUint(x.builder(), x.type(), x.dims(), value); }

namespace {

template <typename T>
int64_t Extreme(bool lowest) {
  return lowest ? static_cast<int64_t>(std::numeric_limits<T>::lowest())
                : static_cast<int64_t>(std::numeric_limits<T>::max());
}

XOp ExtremeOf(hlo::HloBuilder& b, PrimitiveType type, bool lowest) {
  if (hlo::IsFloatingPointType(type)) {
    return Full(b, type, {}, lowest ? -std::numeric_limits<double>::infinity() : std::numeric_limits<double>::infinity());
  }
  switch (type) {
    case hlo::PRED: return FullInt(b, type, {}, lowest ? 0 : 1);
    case hlo::S8: return FullInt(b, type, {}, Extreme<int8_t>(lowest));
    case hlo::S16: return FullInt(b, type, {}, Extreme<int16_t>(lowest));
    case hlo::S32: return FullInt(b, type, {}, Extreme<int32_t>(lowest));
    case hlo::S64: return FullInt(b, type, {}, Extreme<int64_t>(lowest));
    case hlo::U8: return FullInt(b, type, {}, Extreme<uint8_t>(lowest));
    case hlo::U16: return FullInt(b, type, {}, Extreme<uint16_t>(lowest));
    case hlo::U32: return FullInt(b, type, {}, Extreme<uint32_t>(lowest));
    default: return FullUint(b, type, {}, lowest ? 0 : std::numeric_limits<uint64_t>::max());
  }
}

}  // namespace

XOp Lowest(hlo::HloBuilder& b, PrimitiveType type) { return ExtremeOf(b, type, true); }
XOp Highest(hlo::HloBuilder& b, PrimitiveType type) { return ExtremeOf(b, type, false); }

XOp Unary(HloOpcode op, const XOp& x) { return Wrap(x.builder(), x.builder().Unary(op, x.instr())); }
XOp Binary(HloOpcode op, const XOp& a, const XOp& b) {
  return Wrap(a.builder(), a.builder().Binary(op, a.instr(), b.instr()));
}

XOp operator+(const XOp& a, const XOp& b) { return Binary(HloOpcode::kAdd, a, b); }
XOp operator-(const XOp& a, const XOp& b) { return Binary(HloOpcode::kSubtract, a, b); }
XOp operator*(const XOp& a, const XOp& b) { return Binary(HloOpcode::kMultiply, a, b); }
XOp operator/(const XOp& a, const XOp& b) { return Binary(HloOpcode::kDivide, a, b); }
XOp operator-(const XOp& a) { return Unary(HloOpcode::kNegate, a); }
XOp operator+(const XOp& a, double b) { return a + Like(a, b); }
XOp operator-(const XOp& a, double b) { return a - Like(a, b); }
XOp operator*(const XOp& a, double b) { return a * Like(a, b); }
XOp operator/(const XOp& a, double b) { return a / Like(a, b); }
XOp operator+(double a, const XOp& b) { return Like(b, a) + b; }
XOp operator-(double a, const XOp& b) { return Like(b, a) - b; }
XOp operator*(double a, const XOp& b) { return Like(b, a) * b; }
XOp operator/(double a, const XOp& b) { return Like(b, a) / b; }
XOp operator&(const XOp& a, const XOp& b) { return Binary(HloOpcode::kAnd, a, b); }
XOp operator|(const XOp& a, const XOp& b) { return Binary(HloOpcode::kOr, a, b); }
XOp operator^(const XOp& a, const XOp& b) { return Binary(HloOpcode::kXor, a, b); }
XOp operator!(const XOp& a) { return Unary(HloOpcode::kNot, a); }

XOp Compare(const XOp& a, const XOp& b, hlo::ComparisonDirection dir, hlo::ComparisonType type) {
  return Wrap(a.builder(), a.builder().Compare(a.instr(), b.instr(), dir, type));
}
XOp operator<(const XOp& a, const XOp& b) { return Compare(a, b, hlo::ComparisonDirection::kLt); }
XOp operator<=(const XOp& a, const XOp& b) { return Compare(a, b, hlo::ComparisonDirection::kLe); }
XOp operator>(const XOp& a, const XOp& b) { return Compare(a, b, hlo::ComparisonDirection::kGt); }
XOp operator>=(const XOp& a, const XOp& b) { return Compare(a, b, hlo::ComparisonDirection::kGe); }
XOp operator<(const XOp& a, double b) { return a < Like(a, b); }
XOp operator<=(const XOp& a, double b) { return a <= Like(a, b); }
XOp operator>(const XOp& a, double b) { return a > Like(a, b); }
XOp operator>=(const XOp& a, double b) { return a >= Like(a, b); }
XOp Eq(const XOp& a, const XOp& b) { return Compare(a, b, hlo::ComparisonDirection::kEq); }
XOp Ne(const XOp& a, const XOp& b) { return Compare(a, b, hlo::ComparisonDirection::kNe); }
XOp Eq(const XOp& a, double b) { return Eq(a, Like(a, b)); }
XOp Ne(const XOp& a, double b) { return Ne(a, Like(a, b)); }

XOp Abs(const XOp& x) { return Unary(HloOpcode::kAbs, x); }
XOp Exp(const XOp& x) { return Unary(HloOpcode::kExp, x); }
XOp Log(const XOp& x) { return Unary(HloOpcode::kLog, x); }
XOp Log1p(const XOp& x) { return Unary(HloOpcode::kLog1p, x); }
XOp Sqrt(const XOp& x) { return Unary(HloOpcode::kSqrt, x); }
XOp Rsqrt(const XOp& x) { return Unary(HloOpcode::kRsqrt, x); }
XOp Floor(const XOp& x) { return Unary(HloOpcode::kFloor, x); }
XOp Sin(const XOp& x) { return Unary(HloOpcode::kSin, x); }
XOp Cos(const XOp& x) { return Unary(HloOpcode::kCos, x); }
XOp Tan(const XOp& x) { return Unary(HloOpcode::kTan, x); }
XOp IsFinite(const XOp& x) { return Unary(HloOpcode::kIsFinite, x); }
XOp Max(const XOp& a, const XOp& b) { return Binary(HloOpcode::kMaximum, a, b); }
XOp Min(const XOp& a, const XOp& b) { return Binary(HloOpcode::kMinimum, a, b); }
XOp Pow(const XOp& a, const XOp& b) { return Binary(HloOpcode::kPower, a, b); }
XOp Atan2(const XOp& a, const XOp& b) { return Binary(HloOpcode::kAtan2, a, b); }
XOp Rem(const XOp& a, const XOp& b) { return Binary(HloOpcode::kRemainder, a, b); }
XOp ShiftLeft(const XOp& a, const XOp& b) { return Binary(HloOpcode::kShiftLeft, a, b); }
XOp ShiftRightLogical(const XOp& a, const XOp& b) { return Binary(HloOpcode::kShiftRightLogical, a, b); }

XOp Select(const XOp& pred, const XOp& on_true, const XOp& on_false) {
  return Wrap(pred.builder(), pred.builder().Select(pred.instr(), on_true.instr(), on_false.instr()));
}
XOp Convert(const XOp& x, PrimitiveType type) {
  if (x.type() == type) return x;
  return Wrap(x.builder(), x.builder().Convert(x.instr(), type));
}
XOp BitcastConvert(const XOp& x, PrimitiveType type) {
  return Wrap(x.builder(), x.builder().BitcastConvert(x.instr(), type));
}
XOp Reshape(const XOp& x, absl::Span<const int64_t> dims) {
  return Wrap(x.builder(), x.builder().Reshape(x.instr(), dims));
}
XOp Broadcast(const XOp& x, absl::Span<const int64_t> dims, absl::Span<const int64_t> broadcast_dims) {
  return Wrap(x.builder(), x.builder().Broadcast(x.instr(), dims, broadcast_dims));
}
XOp BroadcastScalar(const XOp& x, absl::Span<const int64_t> dims) {
  if (x.dims() == std::vector<int64_t>(dims.begin(), dims.end())) return x;
  return Broadcast(x, dims, {});
}
XOp Slice(const XOp& x, absl::Span<const int64_t> starts, absl::Span<const int64_t> limits,
          absl::Span<const int64_t> strides) {
  std::vector<int64_t> s(strides.begin(), strides.end());
  if (s.empty()) s.assign(starts.size(), 1);
  return Wrap(x.builder(), x.builder().Slice(x.instr(), starts, limits, s));
}
XOp Tuple(hlo::HloBuilder& b, absl::Span<const XOp> elements) { return Wrap(b, b.Tuple(Instrs(elements))); }
XOp GetTupleElement(const XOp& t, int64_t i) { return Wrap(t.builder(), t.builder().GetTupleElement(t.instr(), i)); }

XOp Polynomial(const XOp& x, absl::Span<const double> coefficients) {
  XOp acc = Like(x, coefficients[0]);
  for (size_t i = 1; i < coefficients.size(); ++i) acc = acc * x + coefficients[i];
  return acc;
}

}  // namespace jx::lower
