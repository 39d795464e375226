// Internals shared by the hlo_evaluator*.cc files (not a public API): element access by
// type, multi-index helpers, a scalar-computation caller, and one entry point per op
// family. Each family function gets the instruction and its operand values and returns the
// result value (errors without the instruction prefix; the dispatcher adds it).
#pragma once

#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "jx/compiler/hlo/hlo_computation.h"
#include "jx/compiler/hlo/hlo_evaluator.h"
#include "jx/compiler/hlo/hlo_instruction.h"
#include "jx/compiler/hlo/literal.h"
#include "jx/compiler/hlo/str_util.h"

namespace jx::hlo::eval_internal {

using Operands = absl::Span<const Literal* const>;

template <typename... Args>
absl::Status Invalid(const Args&... args) {
  return absl::InvalidArgumentError(StrCat(args...));
}

// ---- Element types as C++ types. f16/bf16 are stored as bits and computed in float. ----
struct F16Bits { uint16_t bits; };
struct BF16Bits { uint16_t bits; };

template <PrimitiveType kType> struct TypeInfo;
#define JX_EVAL_TYPE(kType, Storage, Compute) \
  template <> struct TypeInfo<kType> { using storage = Storage; using compute = Compute; };
JX_EVAL_TYPE(PRED, bool, bool)
JX_EVAL_TYPE(S8, int8_t, int8_t)
JX_EVAL_TYPE(S16, int16_t, int16_t)
JX_EVAL_TYPE(S32, int32_t, int32_t)
JX_EVAL_TYPE(S64, int64_t, int64_t)
JX_EVAL_TYPE(U8, uint8_t, uint8_t)
JX_EVAL_TYPE(U16, uint16_t, uint16_t)
JX_EVAL_TYPE(U32, uint32_t, uint32_t)
JX_EVAL_TYPE(U64, uint64_t, uint64_t)
JX_EVAL_TYPE(F16, F16Bits, float)
JX_EVAL_TYPE(BF16, BF16Bits, float)
JX_EVAL_TYPE(F32, float, float)
JX_EVAL_TYPE(F64, double, double)
#undef JX_EVAL_TYPE

template <PrimitiveType kType>
using ComputeT = typename TypeInfo<kType>::compute;

template <PrimitiveType kType>
ComputeT<kType> Load(const Literal& lit, int64_t i) {
  using S = typename TypeInfo<kType>::storage;
  S v;
  std::memcpy(&v, lit.untyped_data().data() + i * sizeof(S), sizeof(S));
  if constexpr (kType == F16) {
    return HalfToFloat(v.bits);
  } else if constexpr (kType == BF16) {
    return BFloat16ToFloat(v.bits);
  } else {
    return v;
  }
}

template <PrimitiveType kType>
void Store(Literal& lit, int64_t i, ComputeT<kType> value) {
  using S = typename TypeInfo<kType>::storage;
  S v;
  if constexpr (kType == F16) {
    v.bits = FloatToHalf(value);
  } else if constexpr (kType == BF16) {
    v.bits = FloatToBFloat16(value);
  } else {
    v = value;
  }
  std::memcpy(lit.mutable_untyped_data().data() + i * sizeof(S), &v, sizeof(S));
}

// Calls fn(std::integral_constant<PrimitiveType, T>{}) for the array type t; returns what fn
// returns (a StatusOr<Literal> or a Status).
template <typename Fn>
auto SwitchType(PrimitiveType t, Fn&& fn) -> decltype(fn(std::integral_constant<PrimitiveType, PRED>{})) {
  switch (t) {
#define JX_EVAL_CASE(kType) \
  case kType: return fn(std::integral_constant<PrimitiveType, kType>{});
    JX_EVAL_CASE(PRED) JX_EVAL_CASE(S8) JX_EVAL_CASE(S16) JX_EVAL_CASE(S32) JX_EVAL_CASE(S64)
    JX_EVAL_CASE(U8) JX_EVAL_CASE(U16) JX_EVAL_CASE(U32) JX_EVAL_CASE(U64)
    JX_EVAL_CASE(F16) JX_EVAL_CASE(BF16) JX_EVAL_CASE(F32) JX_EVAL_CASE(F64)
#undef JX_EVAL_CASE
    default:
      return Invalid("element type ", PrimitiveTypeName(t), " is not an array type");
  }
}

// ---- Multi-index helpers (row-major, as Literal stores elements). ----
std::vector<int64_t> RowMajorStrides(absl::Span<const int64_t> dims);
// Advances idx to the next row-major index of dims; false after the last one.
bool NextIndex(absl::Span<const int64_t> dims, std::vector<int64_t>& idx);
int64_t LinearIndex(absl::Span<const int64_t> idx, absl::Span<const int64_t> strides);
int64_t ElementBytes(const Literal& lit);
// dst[di] = src[si] (same element type).
inline void CopyElement(const Literal& src, int64_t si, Literal& dst, int64_t di) {
  const int64_t n = ElementBytes(src);
  std::memcpy(dst.mutable_untyped_data().data() + di * n, src.untyped_data().data() + si * n,
              n);
}
// A literal of `shape` whose raw row-major bytes are `bytes`.
Literal LiteralWithBytes(const Shape& shape, absl::Span<const uint8_t> bytes);
// An integer element read for index arithmetic (unsigned values saturate at INT64_MAX).
int64_t IndexValue(const Literal& lit, int64_t i);
// Element i as exact double (floats, small ints) and as wrapped 64-bit two's complement.
double ElementAsDouble(const Literal& lit, int64_t i);
uint64_t ElementAsBits64(const Literal& lit, int64_t i);  // ints sign/zero-extended
// Stores a double / 64-bit integer with convert's rounding and saturation rules.
void StoreDouble(Literal& lit, int64_t i, double v);
void StoreInt64(Literal& lit, int64_t i, int64_t v);
void StoreUint64(Literal& lit, int64_t i, uint64_t v);
// Element-by-element convert to `type` (XLA's convert semantics).
Literal ConvertLiteral(const Literal& in, PrimitiveType type);

// Calls a computation of scalar parameters many times (reduce, sort, map, scatter...),
// reusing its argument literals. A computation of scalar element-wise ops, constants and a
// root tuple (the usual reducers and comparators) runs as a fixed list of steps into reused
// scalar slots: no per-call plan lookup, operand checks or allocation. Anything else, and any
// call whose steps fail (so the error is the evaluator's own), runs through Evaluate.
class ScalarCaller {
 public:
  ScalarCaller(HloEvaluator& evaluator, const HloComputation* computation);
  ScalarCaller(const ScalarCaller&) = delete;
  ScalarCaller& operator=(const ScalarCaller&) = delete;
  absl::Status status() const { return status_; }
  int64_t num_params() const { return static_cast<int64_t>(args_.size()); }
  // Argument i = element `index` of `lit` (which has parameter i's element type).
  void SetArg(int64_t i, const Literal& lit, int64_t index) {
    const size_t bytes = arg_bytes_[i];
    std::memcpy(args_[i].mutable_untyped_data().data(), lit.untyped_data().data() + index * bytes, bytes);
  }
  // Runs the computation on the arguments set; its result is then Result(k).
  absl::Status Call();
  // The k-th scalar of the last call's result (k = 0 for a scalar result); valid until the
  // next call.
  const Literal& Result(int64_t k) const {
    if (!last_call_ran_steps_) return result_.shape().IsTuple() ? result_.tuple_elements()[k] : result_;
    return *result_parts_[k];
  }
  // Calls a predicate computation and reads its pred result.
  absl::StatusOr<bool> CallPredicate();

 private:
  // One element-wise instruction of the computation, its operand values and its slot.
  struct Step {
    const HloInstruction* instr;
    std::vector<const Literal*> operands;
    Literal* out;
  };
  bool BuildSteps();
  absl::Status RunSteps();

  HloEvaluator& evaluator_;
  const HloComputation* computation_;
  std::vector<Literal> args_;
  std::vector<size_t> arg_bytes_;  // each parameter's element size
  std::vector<const Literal*> arg_ptrs_;
  absl::Status status_;
  // The step list (when the computation qualifies): slots_ holds one scalar per step.
  bool steps_ready_ = false;
  bool last_call_ran_steps_ = false;  // else result_ holds the last call's result
  std::vector<Step> steps_;
  std::vector<Literal> slots_;
  std::vector<const Literal*> result_parts_;
  Literal result_;  // the result when the call ran through Evaluate
};

// ---- Op families. ----
absl::StatusOr<Literal> EvalElementwise(const HloInstruction& instr, Operands ops);
// The same into `out`, which has instr's shape (ScalarCaller's reused scalar slots).
absl::Status EvalElementwiseInto(const HloInstruction& instr, Operands ops, Literal& out);
absl::StatusOr<Literal> EvalConvert(const HloInstruction& instr, Operands ops);
absl::StatusOr<Literal> EvalBitcastConvert(const HloInstruction& instr, Operands ops);
absl::StatusOr<Literal> EvalReducePrecision(const HloInstruction& instr, Operands ops);
absl::StatusOr<Literal> EvalIota(const HloInstruction& instr);
// Collectives and partition-id as partition 0 of a one-partition run.
absl::StatusOr<Literal> EvalCollective(const HloInstruction& instr, Operands ops);
absl::StatusOr<Literal> EvalShapeOp(const HloInstruction& instr, Operands ops);
absl::StatusOr<Literal> EvalGather(const HloInstruction& instr, Operands ops);
absl::StatusOr<Literal> EvalScatter(const HloInstruction& instr, Operands ops,
                                    HloEvaluator& evaluator);
absl::StatusOr<Literal> EvalReduce(const HloInstruction& instr, Operands ops,
                                   HloEvaluator& evaluator);
absl::StatusOr<Literal> EvalReduceWindow(const HloInstruction& instr, Operands ops,
                                         HloEvaluator& evaluator);
absl::StatusOr<Literal> EvalSelectAndScatter(const HloInstruction& instr, Operands ops,
                                             HloEvaluator& evaluator);
absl::StatusOr<Literal> EvalSort(const HloInstruction& instr, Operands ops,
                                 HloEvaluator& evaluator);
absl::StatusOr<Literal> EvalMap(const HloInstruction& instr, Operands ops,
                                HloEvaluator& evaluator);
absl::StatusOr<Literal> EvalDot(const HloInstruction& instr, Operands ops);
absl::StatusOr<Literal> EvalConvolution(const HloInstruction& instr, Operands ops);
absl::StatusOr<Literal> EvalRngBitGenerator(const HloInstruction& instr, Operands ops);

}  // namespace jx::hlo::eval_internal
