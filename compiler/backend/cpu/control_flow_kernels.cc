// while, conditional and call on the CPU backend. Their computations are compiled once, when
// the kernel is built (at the enclosing computation's compile), into CpuExecutables with the
// same pipeline of kernels, buffer assignment and temp arenas as the entry; a run binds them
// to the instruction's buffers and runs them, with no interpretation and no allocation per
// iteration.
//
// A while keeps its state in its result buffers (or, for a leaf the body passes through
// unchanged, in the init buffer: it is only read). The body is compiled with
// OutputBinding::kLoopState, so each iteration updates the state in place: a leaf computed
// after its last read is written straight into the state buffer (a dynamic-update-slice of
// a scan's ys writes one row), only the rest are copied at the end of the body. Init leaves
// are copied in once, unless buffer assignment already placed the state in them.
#include <algorithm>
#include <cstring>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "jx/compiler/backend/cpu/buffer_assignment.h"
#include "jx/compiler/backend/cpu/cpu_executable.h"
#include "jx/compiler/backend/cpu/cpu_kernels.h"
#include "jx/compiler/hlo/hlo_computation.h"
#include "jx/compiler/hlo/status_macros.h"
#include "jx/compiler/hlo/str_util.h"

namespace jx::cpu::internal {
namespace {

using hlo::HloComputation;
using hlo::HloInstruction;
using hlo::HloOpcode;
using hlo::Shape;

// Sub-computations compile as the computation that holds the instruction did.
CpuCompileOptions SubOptions(const KernelSelectionOptions& options) {
  CpuCompileOptions o;
  o.tile_elements = options.tile_elements;
  o.allow_evaluator_fallback = options.fallback == FallbackPolicy::kLog;
  return o;
}

absl::StatusOr<std::unique_ptr<CpuExecutable>> CompileCallee(
    const HloComputation* computation, std::string_view role, const KernelSelectionOptions& options,
    OutputBinding binding = OutputBinding::kSeparate) {
  if (computation == nullptr) return absl::InvalidArgumentError(hlo::StrCat("missing ", role));
  absl::StatusOr<std::unique_ptr<CpuExecutable>> exe =
      CompileComputation(*computation, SubOptions(options), binding);
  if (!exe.ok()) {
    return absl::Status(exe.status().code(), hlo::StrCat(role, " %", computation->name(), ": ",
                                                         exe.status().message()));
  }
  return exe;
}

absl::Status InContext(absl::Status s, std::string_view role) {
  if (s.ok()) return s;
  return absl::Status(s.code(), hlo::StrCat(role, ": ", s.message()));
}

class WhileKernel : public Kernel {
 public:
  absl::Status Run(absl::Span<const void* const> init,
                   absl::Span<void* const> results) const override {
    const size_t n = results.size();
    absl::InlinedVector<void*, 16> state(n);
    for (size_t k = 0; k < n; ++k) {
      if (invariant_[k]) {
        state[k] = const_cast<void*>(init[k]);  // never written: the body passes it through
      } else {
        state[k] = results[k];
        if (results[k] != init[k] && bytes_[k] > 0) std::memcpy(results[k], init[k], bytes_[k]);
      }
    }
    uint8_t keep_going = 0;
    void* const pred[] = {&keep_going};
    CpuExecutable::Frame cond(*cond_), body(*body_);
    const absl::Span<const void* const> state_in(state.data(), n);
    cond.Bind(state_in, pred);
    body.Bind(state_in, state);
    for (;;) {
      HLO_RETURN_IF_ERROR(InContext(cond.Run(), "while condition"));
      if (keep_going == 0) break;
      HLO_RETURN_IF_ERROR(InContext(body.Run(), "while body"));
    }
    for (size_t k = 0; k < n; ++k) {
      if (invariant_[k] && read_after_[k] && results[k] != init[k] && bytes_[k] > 0) {
        std::memcpy(results[k], init[k], bytes_[k]);
      }
    }
    return absl::OkStatus();
  }
  std::string_view kind() const override { return "while"; }
  int64_t nested_temp_bytes() const override {
    return cond_->memory_analysis().temp_bytes + body_->memory_analysis().temp_bytes;
  }

  std::unique_ptr<CpuExecutable> cond_, body_;
  std::vector<int64_t> bytes_;     // per state leaf
  std::vector<bool> invariant_;    // the body returns the leaf unchanged
  std::vector<bool> read_after_;   // some user reads the while's result leaf
};

// Which leaves of instr's (tuple) result are read: a get-tuple-element reads its element's
// leaves, any other user all of them.
std::vector<bool> LeavesRead(const HloInstruction& instr) {
  const Shape& shape = instr.shape();
  const size_t n = LeafShapes(shape).size();
  std::vector<bool> read(n, instr.IsRoot());
  for (const HloInstruction* user : instr.users()) {
    if (user->opcode() != HloOpcode::kGetTupleElement || !shape.IsTuple()) {
      read.assign(n, true);
      break;
    }
    size_t begin = 0;
    for (int64_t i = 0; i < user->tuple_index(); ++i) {
      begin += LeafShapes(shape.tuple_shapes(i)).size();
    }
    const size_t count = LeafShapes(user->shape()).size();
    for (size_t k = begin; k < begin + count && k < n; ++k) read[k] = true;
  }
  return read;
}

absl::StatusOr<std::unique_ptr<Kernel>> MakeWhile(const HloInstruction& instr,
                                                  const KernelSelectionOptions& options) {
  auto k = std::make_unique<WhileKernel>();
  HLO_ASSIGN_OR_RETURN(k->cond_, CompileCallee(instr.while_condition(), "while condition", options));
  HLO_ASSIGN_OR_RETURN(k->body_, CompileCallee(instr.while_body(), "while body", options,
                                               OutputBinding::kLoopState));
  const std::vector<Shape>& pred = k->cond_->output_shapes();
  if (pred.size() != 1 || !hlo::ShapeUtil::IsScalarWithType(pred[0], hlo::PRED)) {
    return absl::InvalidArgumentError("while condition must return pred[]");
  }
  const std::vector<Shape> leaves = LeafShapes(instr.shape());
  if (k->body_->argument_shapes().size() != leaves.size() ||
      k->cond_->argument_shapes().size() != leaves.size()) {
    return absl::InvalidArgumentError(hlo::StrCat("while state has ", leaves.size(),
                                                  " leaves, its computations take ",
                                                  k->cond_->argument_shapes().size(), " and ",
                                                  k->body_->argument_shapes().size()));
  }
  k->read_after_ = LeavesRead(instr);
  for (size_t i = 0; i < leaves.size(); ++i) {
    k->bytes_.push_back(hlo::ShapeUtil::ByteSizeOf(leaves[i]));
    k->invariant_.push_back(k->body_->buffer_assignment().OutputIsItsArgument(
        static_cast<int64_t>(i)));
  }
  return k;
}

class ConditionalKernel : public Kernel {
 public:
  absl::Status Run(absl::Span<const void* const> operands,
                   absl::Span<void* const> results) const override {
    const int64_t n = static_cast<int64_t>(branches_.size());
    int64_t branch;
    if (pred_selector_) {
      branch = *static_cast<const uint8_t*>(operands[0]) != 0 ? 0 : 1;
    } else {
      int32_t index;
      std::memcpy(&index, operands[0], sizeof(index));
      // XLA: an out-of-range index runs the last branch.
      branch = index < 0 || index >= n ? n - 1 : index;
    }
    CpuExecutable::Frame frame(*branches_[branch]);
    frame.Bind(operands.subspan(operand_begin_[branch], operand_count_[branch]), results);
    return InContext(frame.Run(), hlo::StrCat("branch ", branch));
  }
  std::string_view kind() const override { return "conditional"; }
  int64_t nested_temp_bytes() const override {
    int64_t bytes = 0;
    for (const auto& b : branches_) bytes = std::max(bytes, b->memory_analysis().temp_bytes);
    return bytes;
  }

  bool pred_selector_ = false;
  std::vector<std::unique_ptr<CpuExecutable>> branches_;
  std::vector<size_t> operand_begin_, operand_count_;  // branch i's operand leaves
};

absl::StatusOr<std::unique_ptr<Kernel>> MakeConditional(const HloInstruction& instr,
                                                        const KernelSelectionOptions& options) {
  auto k = std::make_unique<ConditionalKernel>();
  const Shape& selector = instr.operand(0)->shape();
  const size_t n = instr.branch_computations().size();
  k->pred_selector_ = hlo::ShapeUtil::IsScalarWithType(selector, hlo::PRED);
  if (!k->pred_selector_ && !hlo::ShapeUtil::IsScalarWithType(selector, hlo::S32)) {
    return absl::InvalidArgumentError(hlo::StrCat("conditional selector must be pred[] or s32[], got ",
                                                  selector.ToString(false)));
  }
  if (n == 0 || (k->pred_selector_ && n != 2) ||
      static_cast<size_t>(instr.operand_count()) != n + 1) {
    return absl::InvalidArgumentError(hlo::StrCat("conditional with ", n, " branches and ",
                                                  instr.operand_count(), " operands"));
  }
  size_t begin = 1;  // leaf 0 is the selector
  for (size_t i = 0; i < n; ++i) {
    HLO_ASSIGN_OR_RETURN(std::unique_ptr<CpuExecutable> exe,
                         CompileCallee(instr.branch_computations()[i],
                                       hlo::StrCat("branch ", i), options));
    const size_t count = LeafShapes(instr.operand(i + 1)->shape()).size();
    if (exe->argument_shapes().size() != count) {
      return absl::InvalidArgumentError(hlo::StrCat("branch ", i, " takes ",
                                                    exe->argument_shapes().size(),
                                                    " leaves, its operand has ", count));
    }
    k->operand_begin_.push_back(begin);
    k->operand_count_.push_back(count);
    begin += count;
    k->branches_.push_back(std::move(exe));
  }
  return k;
}

// A call's callee, or the body of a fusion run op by op (kind "unfused").
class CallKernel : public Kernel {
 public:
  absl::Status Run(absl::Span<const void* const> operands,
                   absl::Span<void* const> results) const override {
    CpuExecutable::Frame frame(*callee_);
    frame.Bind(operands, results);
    return frame.Run();
  }
  std::string_view kind() const override { return kind_; }
  int64_t nested_temp_bytes() const override { return callee_->memory_analysis().temp_bytes; }

  std::unique_ptr<CpuExecutable> callee_;
  std::string_view kind_ = "call";
};

}  // namespace

absl::StatusOr<std::unique_ptr<Kernel>> MakeControlFlowKernel(
    const HloInstruction& instr, const KernelSelectionOptions& options) {
  switch (instr.opcode()) {
    case HloOpcode::kWhile:
      return MakeWhile(instr, options);
    case HloOpcode::kConditional:
      return MakeConditional(instr, options);
    case HloOpcode::kCall: {
      auto k = std::make_unique<CallKernel>();
      HLO_ASSIGN_OR_RETURN(k->callee_, CompileCallee(instr.to_apply(), "callee", options));
      return k;
    }
    default:
      return absl::UnimplementedError("not a control-flow instruction");
  }
}

absl::StatusOr<std::unique_ptr<Kernel>> MakeUnfusedKernel(const HloInstruction& instr,
                                                          const KernelSelectionOptions& options) {
  if (instr.opcode() != HloOpcode::kFusion) return absl::UnimplementedError("not a fusion");
  auto k = std::make_unique<CallKernel>();
  HLO_ASSIGN_OR_RETURN(k->callee_, CompileCallee(instr.fused_instructions_computation(), "fused computation", options));
  k->kind_ = "unfused";
  return k;
}

}  // namespace jx::cpu::internal
