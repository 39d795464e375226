// HloEvaluator core: the per-computation walk, the opcode dispatch, tuples, calls and
// control flow, custom-calls, and the helpers the op-family files share.
#include "jx/compiler/hlo/hlo_evaluator.h"

#include <limits>
#include <mutex>
#include <utility>

#include "absl/strings/str_join.h"
#include "jx/compiler/hlo/allocate_buffer.h"
#include "jx/compiler/hlo/hlo_evaluator_internal.h"
#include "jx/compiler/hlo/status_macros.h"

namespace jx::hlo {

// The opcodes EvalElementwise implements, as case labels (EvaluateOpcode's dispatch and the
// ScalarCaller's step test share the list).
#define JX_EVAL_ELEMENTWISE_CASES                                                            \
  case HloOpcode::kAbs: case HloOpcode::kCbrt: case HloOpcode::kCeil: case HloOpcode::kClz:  \
  case HloOpcode::kCos: case HloOpcode::kErf: case HloOpcode::kExp: case HloOpcode::kExpm1:  \
  case HloOpcode::kFloor: case HloOpcode::kIsFinite: case HloOpcode::kLog:                    \
  case HloOpcode::kLog1p: case HloOpcode::kLogistic: case HloOpcode::kNegate:                 \
  case HloOpcode::kNot: case HloOpcode::kPopulationCount:                                     \
  case HloOpcode::kRoundNearestAfz: case HloOpcode::kRoundNearestEven:                        \
  case HloOpcode::kRsqrt: case HloOpcode::kSign: case HloOpcode::kSin:                        \
  case HloOpcode::kSqrt: case HloOpcode::kTan: case HloOpcode::kTanh:                         \
  case HloOpcode::kAdd: case HloOpcode::kAnd: case HloOpcode::kAtan2:                         \
  case HloOpcode::kCompare: case HloOpcode::kDivide: case HloOpcode::kMaximum:                \
  case HloOpcode::kMinimum: case HloOpcode::kMultiply: case HloOpcode::kOr:                   \
  case HloOpcode::kPower: case HloOpcode::kRemainder: case HloOpcode::kShiftLeft:             \
  case HloOpcode::kShiftRightArithmetic: case HloOpcode::kShiftRightLogical:                  \
  case HloOpcode::kSubtract: case HloOpcode::kXor:                                            \
  case HloOpcode::kClamp: case HloOpcode::kSelect

using eval_internal::Invalid;
using eval_internal::Operands;

namespace eval_internal {

std::vector<int64_t> RowMajorStrides(absl::Span<const int64_t> dims) {
  std::vector<int64_t> strides(dims.size(), 1);
  for (int64_t i = static_cast<int64_t>(dims.size()) - 2; i >= 0; --i) {
    strides[i] = strides[i + 1] * dims[i + 1];
  }
  return strides;
}

bool NextIndex(absl::Span<const int64_t> dims, std::vector<int64_t>& idx) {
  for (int64_t d = static_cast<int64_t>(dims.size()) - 1; d >= 0; --d) {
    if (++idx[d] < dims[d]) return true;
    idx[d] = 0;
  }
  return false;
}

int64_t LinearIndex(absl::Span<const int64_t> idx, absl::Span<const int64_t> strides) {
  int64_t linear = 0;
  for (size_t i = 0; i < idx.size(); ++i) linear += idx[i] * strides[i];
  return linear;
}

int64_t ElementBytes(const Literal& lit) {
  return ByteSizeOfPrimitiveType(lit.shape().element_type());
}

Literal LiteralWithBytes(const Shape& shape, absl::Span<const uint8_t> bytes) {
  Literal lit(shape);
  if (!bytes.empty()) std::memcpy(lit.mutable_untyped_data().data(), bytes.data(), bytes.size());
  return lit;
}

int64_t IndexValue(const Literal& lit, int64_t i) {
  if (IsUnsignedIntegralType(lit.shape().element_type())) {
    const uint64_t u = lit.GetAsUint64(i);
    return u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())
               ? std::numeric_limits<int64_t>::max()
               : static_cast<int64_t>(u);
  }
  return lit.GetAsInt64(i);
}

namespace {

bool RunsInEvalElementwise(HloOpcode op) {
  switch (op) {
    JX_EVAL_ELEMENTWISE_CASES:
      return true;
    default:
      return false;
  }
}

// Whether a scalar element-wise instruction's operand types fit its result type the way the
// element-wise kernels assume (so a step writes exactly one element of its slot's type).
bool ScalarTypesFit(const HloInstruction& instr) {
  const PrimitiveType out = instr.shape().element_type();
  for (int64_t i = 0; i < instr.operand_count(); ++i) {
    if (!ShapeUtil::IsScalar(instr.operand(i)->shape())) return false;
  }
  const PrimitiveType first = instr.operand(0)->shape().element_type();
  switch (instr.opcode()) {
    case HloOpcode::kCompare:
    case HloOpcode::kIsFinite:
      for (int64_t i = 1; i < instr.operand_count(); ++i) {
        if (instr.operand(i)->shape().element_type() != first) return false;
      }
      return out == PRED;
    case HloOpcode::kSelect:
      return first == PRED && instr.operand_count() == 3 &&
             instr.operand(1)->shape().element_type() == out &&
             instr.operand(2)->shape().element_type() == out;
    default:
      for (int64_t i = 0; i < instr.operand_count(); ++i) {
        if (instr.operand(i)->shape().element_type() != out) return false;
      }
      return true;
  }
}

}  // namespace

ScalarCaller::ScalarCaller(HloEvaluator& evaluator, const HloComputation* computation)
    : evaluator_(evaluator), computation_(computation) {
  if (computation == nullptr) {
    status_ = Invalid("missing called computation");
    return;
  }
  for (int64_t i = 0; i < computation->num_parameters(); ++i) {
    const HloInstruction* p = computation->parameter_instruction(i);
    if (p == nullptr || !ShapeUtil::IsScalar(p->shape())) {
      status_ = Invalid("computation %", computation->name(), " parameter ", i,
                        " must be a scalar");
      return;
    }
    args_.emplace_back(p->shape());
    arg_bytes_.push_back(static_cast<size_t>(ByteSizeOfPrimitiveType(p->shape().element_type())));
  }
  for (const Literal& a : args_) arg_ptrs_.push_back(&a);
  steps_ready_ = BuildSteps();
}

bool ScalarCaller::BuildSteps() {
  const HloInstruction* root = computation_->root_instruction();
  if (root == nullptr) return false;
  // The instructions the root needs, operands first (what Evaluate would run).
  std::vector<const HloInstruction*> order;
  absl::flat_hash_map<const HloInstruction*, int64_t> slot_of;  // -1: not a step's slot
  absl::flat_hash_map<const HloInstruction*, const Literal*> value_of;
  std::vector<std::pair<const HloInstruction*, bool>> stack = {{root, false}};
  absl::flat_hash_map<const HloInstruction*, bool> visited;
  while (!stack.empty()) {
    auto [instr, expanded] = stack.back();
    stack.pop_back();
    if (expanded) {
      order.push_back(instr);
      continue;
    }
    if (visited[instr]) continue;
    visited[instr] = true;
    stack.push_back({instr, true});
    for (const HloInstruction* operand : instr->operands()) {
      if (!visited[operand]) stack.push_back({operand, false});
    }
  }
  int64_t num_steps = 0;
  for (const HloInstruction* instr : order) {
    if (instr == root && root->opcode() == HloOpcode::kTuple) continue;
    switch (instr->opcode()) {
      case HloOpcode::kParameter:
        if (instr->parameter_number() < 0 || instr->parameter_number() >= num_params() ||
            computation_->parameter_instruction(instr->parameter_number()) != instr) {
          return false;
        }
        break;
      case HloOpcode::kConstant:
        if (!ShapeUtil::IsScalar(instr->shape()) ||
            !ShapeUtil::Compatible(instr->literal().shape(), instr->shape())) {
          return false;
        }
        break;
      default:
        if (!RunsInEvalElementwise(instr->opcode()) || !ShapeUtil::IsScalar(instr->shape()) ||
            instr->operand_count() == 0 || !ScalarTypesFit(*instr)) {
          return false;
        }
        ++num_steps;
    }
  }
  // Slots are allocated once, so the pointers the steps hold stay valid.
  slots_.reserve(num_steps);
  for (const HloInstruction* instr : order) {
    if (instr == root && root->opcode() == HloOpcode::kTuple) continue;
    if (instr->opcode() == HloOpcode::kParameter) {
      value_of[instr] = &args_[instr->parameter_number()];
    } else if (instr->opcode() == HloOpcode::kConstant) {
      value_of[instr] = &instr->literal();
    } else {
      slots_.emplace_back(instr->shape());
      Step step{instr, {}, &slots_.back()};
      for (const HloInstruction* operand : instr->operands()) step.operands.push_back(value_of.at(operand));
      value_of[instr] = step.out;
      steps_.push_back(std::move(step));
    }
  }
  if (root->opcode() == HloOpcode::kTuple) {
    for (const HloInstruction* operand : root->operands()) {
      if (operand->opcode() == HloOpcode::kTuple) return false;
      result_parts_.push_back(value_of.at(operand));
    }
  } else {
    result_parts_.push_back(value_of.at(root));
  }
  return true;
}

absl::Status ScalarCaller::RunSteps() {
  for (const Step& step : steps_) {
    HLO_RETURN_IF_ERROR(EvalElementwiseInto(*step.instr, step.operands, *step.out));
  }
  return absl::OkStatus();
}

absl::Status ScalarCaller::Call() {
  HLO_RETURN_IF_ERROR(status_);
  if (steps_ready_ && RunSteps().ok()) {
    last_call_ran_steps_ = true;
    return absl::OkStatus();
  }
  // Evaluate's own walk: for computations the steps do not cover, and for the error (with
  // the instruction it names) when a step fails.
  last_call_ran_steps_ = false;
  HLO_ASSIGN_OR_RETURN(result_, evaluator_.Evaluate(*computation_, arg_ptrs_));
  return absl::OkStatus();
}

absl::StatusOr<bool> ScalarCaller::CallPredicate() {
  HLO_RETURN_IF_ERROR(Call());
  const Shape& shape = last_call_ran_steps_ ? computation_->root_instruction()->shape() : result_.shape();
  if (!ShapeUtil::IsScalarWithType(shape, PRED)) {
    return Invalid("computation %", computation_->name(), " must return pred[], got ",
                   shape.ToString(false));
  }
  return Result(0).GetAsBool(0);
}

}  // namespace eval_internal

namespace {

struct Registry {
  std::mutex mu;
  absl::flat_hash_map<std::string, HloEvaluator::CustomCallTarget> targets;
};

Registry& CustomCallRegistry() {
  static Registry* registry = new Registry();
  return *registry;
}

absl::StatusOr<HloEvaluator::CustomCallTarget> FindCustomCallTarget(const std::string& name) {
  Registry& r = CustomCallRegistry();
  std::lock_guard<std::mutex> lock(r.mu);
  auto it = r.targets.find(name);
  if (it == r.targets.end()) {
    return absl::NotFoundError(StrCat("custom_call_target=\"", name,
                                      "\" is not registered with the reference evaluator "
                                      "(HloEvaluator::RegisterCustomCallTarget)"));
  }
  return it->second;
}

absl::Status CheckArgument(const HloComputation& c, int64_t i, const Literal* arg) {
  const HloInstruction* p = c.parameter_instruction(i);
  if (p == nullptr) return Invalid("computation %", c.name(), " has no parameter ", i);
  if (arg == nullptr) return Invalid("argument ", i, " of %", c.name(), " is null");
  if (!ShapeUtil::Compatible(arg->shape(), p->shape())) {
    return Invalid("argument ", i, " of %", c.name(), " has shape ",
                   arg->shape().ToString(false), " but parameter %", p->name(), " is ",
                   p->shape().ToString(false));
  }
  return absl::OkStatus();
}

}  // namespace

// What to evaluate in a computation: the instructions the root depends on, operands
// first, with operand positions and use counts (values are freed after their last use).
struct HloEvaluator::Plan {
  std::vector<const HloInstruction*> order;
  std::vector<std::vector<int64_t>> operand_slots;
  std::vector<int64_t> use_counts;
};

HloEvaluator::HloEvaluator(int64_t max_loop_iterations)
    : max_loop_iterations_(max_loop_iterations) {}
HloEvaluator::~HloEvaluator() = default;

void HloEvaluator::RegisterCustomCallTarget(std::string name, CustomCallTarget target) {
  Registry& r = CustomCallRegistry();
  std::lock_guard<std::mutex> lock(r.mu);
  r.targets[std::move(name)] = std::move(target);
}

bool HloEvaluator::UnregisterCustomCallTarget(std::string_view name) {
  Registry& r = CustomCallRegistry();
  std::lock_guard<std::mutex> lock(r.mu);
  return r.targets.erase(std::string(name)) > 0;
}

const HloEvaluator::Plan& HloEvaluator::GetPlan(const HloComputation& computation) {
  std::unique_ptr<Plan>& plan = plans_[&computation];
  if (plan != nullptr) return *plan;
  plan = std::make_unique<Plan>();
  std::vector<HloInstruction*> post_order = computation.MakeInstructionPostOrder();
  // Users come after operands, so a reverse sweep marks everything the root needs.
  absl::flat_hash_map<const HloInstruction*, bool> needed;
  for (auto it = post_order.rbegin(); it != post_order.rend(); ++it) {
    const HloInstruction* instr = *it;
    bool need = instr == computation.root_instruction();
    for (const HloInstruction* user : instr->users()) {
      auto found = needed.find(user);
      if (found != needed.end() && found->second) need = true;
    }
    needed[instr] = need;
  }
  absl::flat_hash_map<const HloInstruction*, int64_t> slot;
  for (const HloInstruction* instr : post_order) {
    if (!needed[instr]) continue;
    slot[instr] = static_cast<int64_t>(plan->order.size());
    plan->order.push_back(instr);
  }
  plan->use_counts.assign(plan->order.size(), 0);
  for (const HloInstruction* instr : plan->order) {
    std::vector<int64_t> slots;
    for (const HloInstruction* operand : instr->operands()) {
      const int64_t s = slot.at(operand);
      slots.push_back(s);
      ++plan->use_counts[s];
    }
    plan->operand_slots.push_back(std::move(slots));
  }
  return *plan;
}

absl::StatusOr<Literal> HloEvaluator::Evaluate(const HloModule& module,
                                               absl::Span<const Literal* const> args) {
  if (module.entry_computation() == nullptr) {
    return Invalid("module ", module.name(), " has no entry computation");
  }
  return Evaluate(*module.entry_computation(), args);
}

absl::StatusOr<Literal> HloEvaluator::Evaluate(const HloComputation& computation,
                                               absl::Span<const Literal* const> args) {
  if (computation.root_instruction() == nullptr) {
    return Invalid("computation %", computation.name(), " has no root");
  }
  if (static_cast<int64_t>(args.size()) != computation.num_parameters()) {
    return Invalid("computation %", computation.name(), " takes ",
                   computation.num_parameters(), " argument(s), got ", args.size());
  }
  for (int64_t i = 0; i < computation.num_parameters(); ++i) {
    HLO_RETURN_IF_ERROR(CheckArgument(computation, i, args[i]));
  }
  // The module may have changed since the last top-level call: plans are rebuilt.
  if (depth_ == 0) plans_.clear();
  struct DepthGuard {
    int& depth;
    explicit DepthGuard(int& d) : depth(d) { ++depth; }
    ~DepthGuard() { --depth; }
  } guard(depth_);

  const Plan& plan = GetPlan(computation);
  const int64_t n = static_cast<int64_t>(plan.order.size());
  std::vector<Literal> owned(n);
  std::vector<const Literal*> value(n, nullptr);
  std::vector<int64_t> remaining = plan.use_counts;
  std::vector<const Literal*> operands;
  for (int64_t i = 0; i < n; ++i) {
    const HloInstruction* instr = plan.order[i];
    if (instr->opcode() == HloOpcode::kParameter) {
      value[i] = args[instr->parameter_number()];
      continue;
    }
    operands.clear();
    for (int64_t s : plan.operand_slots[i]) operands.push_back(value[s]);
    HLO_ASSIGN_OR_RETURN(owned[i], EvaluateInstruction(*instr, operands));
    value[i] = &owned[i];
    for (int64_t s : plan.operand_slots[i]) {
      if (--remaining[s] == 0 && s != n - 1) owned[s] = Literal();
    }
  }
  // The root is last in the plan.
  if (value[n - 1] == &owned[n - 1]) return std::move(owned[n - 1]);
  return *value[n - 1];
}

absl::StatusOr<Literal> HloEvaluator::EvaluateInstruction(
    const HloInstruction& instr, absl::Span<const Literal* const> operands) {
  absl::StatusOr<Literal> result = [&]() -> absl::StatusOr<Literal> {
    if (static_cast<int64_t>(operands.size()) != instr.operand_count()) {
      return Invalid("expects ", instr.operand_count(), " operand value(s), got ",
                     operands.size());
    }
    for (int64_t i = 0; i < instr.operand_count(); ++i) {
      if (operands[i] == nullptr) return Invalid("operand ", i, " value is null");
      if (!ShapeUtil::Compatible(operands[i]->shape(), instr.operand(i)->shape())) {
        return Invalid("operand ", i, " value has shape ", operands[i]->shape().ToString(false),
                       " but %", instr.operand(i)->name(), " is ",
                       instr.operand(i)->shape().ToString(false));
      }
    }
    HLO_ASSIGN_OR_RETURN(Literal value, EvaluateOpcode(instr, operands));
    if (!ShapeUtil::Compatible(value.shape(), instr.shape())) {
      return absl::InternalError(StrCat("evaluated to shape ", value.shape().ToString(false),
                                        ", expected ", instr.shape().ToString(false)));
    }
    return value;
  }();
  if (result.ok()) return result;
  const absl::Status& st = result.status();
  // The opcode name is looked up only for opcodes in the table (a corrupt value must not
  // index past it).
  const int op = static_cast<int>(instr.opcode());
  return absl::Status(st.code(),
                      StrCat("%", instr.name(), " = ",
                             op < kHloOpcodeCount ? HloOpcodeString(instr.opcode())
                                                  : std::string_view("<invalid opcode>"),
                             ": ", Message(st)));
}

absl::StatusOr<Literal> HloEvaluator::EvaluateOpcode(const HloInstruction& instr,
                                                     Operands ops) {
  using namespace eval_internal;  // NOLINT: the op-family entry points
  // No default: -Wswitch flags an opcode added to opcode.def without an implementation.
  switch (instr.opcode()) {
    case HloOpcode::kParameter:
      return Invalid("a parameter has no value of its own; pass it as an argument to "
                     "Evaluate");
    case HloOpcode::kConstant:
      return instr.literal();
    case HloOpcode::kIota:
      return EvalIota(instr);

    JX_EVAL_ELEMENTWISE_CASES:
      return EvalElementwise(instr, ops);
    case HloOpcode::kConvert:
      return EvalConvert(instr, ops);
    case HloOpcode::kBitcastConvert:
      return EvalBitcastConvert(instr, ops);
    case HloOpcode::kReducePrecision:
      return EvalReducePrecision(instr, ops);
    case HloOpcode::kCopy:
    case HloOpcode::kOptimizationBarrier:
      return *ops[0];

    case HloOpcode::kBitcast: case HloOpcode::kBroadcast: case HloOpcode::kConcatenate:
    case HloOpcode::kDynamicSlice: case HloOpcode::kDynamicUpdateSlice: case HloOpcode::kPad:
    case HloOpcode::kReshape: case HloOpcode::kReverse: case HloOpcode::kSlice:
    case HloOpcode::kTranspose:
      return EvalShapeOp(instr, ops);
    case HloOpcode::kGather:
      return EvalGather(instr, ops);
    case HloOpcode::kScatter:
      return EvalScatter(instr, ops, *this);

    case HloOpcode::kConvolution:
      return EvalConvolution(instr, ops);
    case HloOpcode::kDot:
      return EvalDot(instr, ops);
    case HloOpcode::kMap:
      return EvalMap(instr, ops, *this);
    case HloOpcode::kReduce:
      return EvalReduce(instr, ops, *this);
    case HloOpcode::kReduceWindow:
      return EvalReduceWindow(instr, ops, *this);
    case HloOpcode::kSelectAndScatter:
      return EvalSelectAndScatter(instr, ops, *this);
    case HloOpcode::kSort:
      return EvalSort(instr, ops, *this);

    case HloOpcode::kCall: case HloOpcode::kConditional: case HloOpcode::kCustomCall:
    case HloOpcode::kFusion: case HloOpcode::kGetTupleElement: case HloOpcode::kTuple:
    case HloOpcode::kWhile:
      return EvaluateControlFlow(instr, ops);

    case HloOpcode::kRngBitGenerator:
      return EvalRngBitGenerator(instr, ops);

    case HloOpcode::kAllGather: case HloOpcode::kAllReduce: case HloOpcode::kAllToAll:
    case HloOpcode::kCollectivePermute: case HloOpcode::kReduceScatter:
    case HloOpcode::kPartitionId:
    case HloOpcode::kAllGatherStart: case HloOpcode::kAllGatherDone:
    case HloOpcode::kAllReduceStart: case HloOpcode::kAllReduceDone:
    case HloOpcode::kAllToAllStart: case HloOpcode::kAllToAllDone:
    case HloOpcode::kCollectivePermuteStart: case HloOpcode::kCollectivePermuteDone:
    case HloOpcode::kReduceScatterStart: case HloOpcode::kReduceScatterDone:
      return EvalCollective(instr, ops);
  }
  return absl::UnimplementedError(
      StrCat("opcode ", static_cast<int>(instr.opcode()),
             " is not implemented by the reference evaluator"));
}

absl::StatusOr<Literal> HloEvaluator::EvaluateControlFlow(const HloInstruction& instr,
                                                          Operands ops) {
  switch (instr.opcode()) {
    case HloOpcode::kTuple: {
      std::vector<Literal> elements;
      for (const Literal* op : ops) elements.push_back(*op);
      return Literal::CreateTuple(std::move(elements));
    }
    case HloOpcode::kGetTupleElement: {
      const Literal& t = *ops[0];
      if (!t.shape().IsTuple() || instr.tuple_index() < 0 ||
          instr.tuple_index() >= static_cast<int64_t>(t.tuple_elements().size())) {
        return Invalid("index=", instr.tuple_index(), " out of range for ",
                       t.shape().ToString(false));
      }
      return t.tuple_elements()[instr.tuple_index()];
    }
    case HloOpcode::kCall:
      if (instr.to_apply() == nullptr) return Invalid("missing to_apply=");
      return Evaluate(*instr.to_apply(), ops);
    case HloOpcode::kFusion:
      if (instr.fused_instructions_computation() == nullptr) return Invalid("missing calls=");
      return Evaluate(*instr.fused_instructions_computation(), ops);
    case HloOpcode::kConditional: {
      const auto& branches = instr.branch_computations();
      if (branches.empty()) return Invalid("no branch_computations");
      const Literal& selector = *ops[0];
      int64_t branch;
      if (selector.shape().element_type() == PRED) {
        if (branches.size() != 2) return Invalid("a pred selector needs 2 branches");
        branch = selector.GetAsBool(0) ? 0 : 1;
      } else {
        branch = eval_internal::IndexValue(selector, 0);
        // XLA: an out-of-range index runs the last branch.
        if (branch < 0 || branch >= static_cast<int64_t>(branches.size())) {
          branch = static_cast<int64_t>(branches.size()) - 1;
        }
      }
      if (branch + 1 >= static_cast<int64_t>(ops.size())) {
        return Invalid("branch ", branch, " has no operand");
      }
      if (branches[branch] == nullptr) return Invalid("branch ", branch, " is missing");
      return Evaluate(*branches[branch], {ops[branch + 1]});
    }
    case HloOpcode::kWhile: {
      if (instr.while_condition() == nullptr || instr.while_body() == nullptr) {
        return Invalid("missing condition= or body=");
      }
      Literal state = *ops[0];
      for (int64_t iteration = 0;; ++iteration) {
        HLO_ASSIGN_OR_RETURN(Literal keep_going, Evaluate(*instr.while_condition(), {&state}));
        if (!ShapeUtil::IsScalarWithType(keep_going.shape(), PRED)) {
          return Invalid("condition must return pred[]");
        }
        if (!keep_going.GetAsBool(0)) return state;
        if (max_loop_iterations_ >= 0 && iteration >= max_loop_iterations_) {
          return absl::ResourceExhaustedError(
              StrCat("loop ran more than max_loop_iterations=", max_loop_iterations_));
        }
        HLO_ASSIGN_OR_RETURN(state, Evaluate(*instr.while_body(), {&state}));
      }
    }
    case HloOpcode::kCustomCall: {
      // Unspecified contents: zeros (whatever is read of it was written first).
      if (IsAllocateBuffer(instr)) return Literal(instr.shape());
      HLO_ASSIGN_OR_RETURN(CustomCallTarget target,
                           FindCustomCallTarget(instr.custom_call_target()));
      return target(instr, ops);
    }
    default:
      return absl::InternalError("not a control-flow opcode");
  }
}

}  // namespace jx::hlo

#undef JX_EVAL_ELEMENTWISE_CASES
