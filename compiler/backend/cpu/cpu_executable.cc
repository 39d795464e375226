#include "jx/compiler/backend/cpu/cpu_executable.h"

#include <cstdlib>
#include <cstring>

#include <tbb/task_arena.h>

#include "jx/compiler/backend/cpu/cpu_kernels.h"
#include "jx/compiler/hlo/hlo_verifier.h"
#include "jx/compiler/hlo/status_macros.h"
#include "jx/compiler/hlo/str_util.h"

namespace jx::cpu {

namespace internal {
struct ThreadArena {
  explicit ThreadArena(int threads) : arena(threads) {}
  tbb::task_arena arena;
};
}  // namespace internal

using hlo::HloInstruction;
using hlo::HloOpcode;
using hlo::Literal;
using hlo::Shape;

CpuExecutable::~CpuExecutable() = default;

absl::StatusOr<std::unique_ptr<CpuExecutable>> CompileForCpu(
    std::unique_ptr<hlo::HloModule> module, const CpuCompileOptions& options) {
  if (module == nullptr || module->entry_computation() == nullptr) {
    return absl::InvalidArgumentError("CompileForCpu: module without an entry computation");
  }
  HLO_RETURN_IF_ERROR(hlo::VerifyHloModule(*module));
  std::unique_ptr<CpuExecutable> exe(new CpuExecutable());
  exe->options_ = options;
  if (options.max_threads > 0) {
    exe->arena_ = std::make_unique<internal::ThreadArena>(options.max_threads);
  }
  const hlo::HloComputation& entry = *module->entry_computation();
  const std::vector<HloInstruction*> schedule = entry.MakeInstructionPostOrder();
  HLO_ASSIGN_OR_RETURN(exe->assignment_, BufferAssignment::Run(entry, schedule));
  for (int64_t p = 0; p < entry.num_parameters(); ++p) {
    for (const Shape& s : LeafShapes(entry.parameter_instruction(p)->shape())) {
      exe->argument_shapes_.push_back(s);
    }
  }
  for (const HloInstruction* instr : schedule) {
    switch (instr->opcode()) {
      case HloOpcode::kParameter: case HloOpcode::kConstant: case HloOpcode::kTuple:
      case HloOpcode::kGetTupleElement:
        continue;  // buffers only (aliases)
      default:
        break;
    }
    CpuExecutable::Step step;
    step.instr = instr;
    step.kernel = internal::SelectKernel(*instr, options.tile_elements);
    if (step.kernel->kind() == "fallback") {
      if (auto native = internal::SelectNativeKernel(*instr, options.tile_elements)) {
        step.kernel = std::move(native);
      }
    }
    for (const HloInstruction* op : instr->operands()) {
      const std::vector<int>& b = exe->assignment_.BuffersOf(op);
      step.operand_buffers.insert(step.operand_buffers.end(), b.begin(), b.end());
    }
    step.result_buffers = exe->assignment_.BuffersOf(instr);
    exe->steps_.push_back(std::move(step));
  }
  exe->module_ = std::move(module);
  return exe;
}

std::string_view CpuExecutable::KernelKind(std::string_view instruction_name) const {
  for (const Step& s : steps_) {
    if (s.instr->name() == instruction_name) return s.kernel->kind();
  }
  return "";
}

absl::Status CpuExecutable::Run(absl::Span<const void* const> arg_data,
                                absl::Span<void* const> out_data) const {
  if (static_cast<int64_t>(arg_data.size()) != assignment_.num_argument_leaves() ||
      out_data.size() != assignment_.output_shapes().size()) {
    return absl::InvalidArgumentError(hlo::StrCat(
        "CpuExecutable::Run: expected ", assignment_.num_argument_leaves(), " argument and ",
        assignment_.output_shapes().size(), " output buffers, got ", arg_data.size(), " and ",
        out_data.size()));
  }
  if (arena_ != nullptr) {
    absl::Status status;
    arena_->arena.execute([&] { status = RunSteps(arg_data, out_data); });
    return status;
  }
  return RunSteps(arg_data, out_data);
}

absl::Status CpuExecutable::RunSteps(absl::Span<const void* const> arg_data,
                                     absl::Span<void* const> out_data) const {
  const MemoryAnalysis& m = assignment_.memory();
  struct Free {
    void operator()(uint8_t* p) const { std::free(p); }
  };
  std::unique_ptr<uint8_t, Free> arena;
  if (m.temp_bytes > 0) {
    arena.reset(static_cast<uint8_t*>(std::aligned_alloc(64, (m.temp_bytes + 63) / 64 * 64)));
    if (arena == nullptr) return absl::ResourceExhaustedError("CpuExecutable: temp arena");
  }
  const std::vector<LogicalBuffer>& buffers = assignment_.buffers();
  std::vector<void*> ptr(buffers.size(), nullptr);
  for (size_t b = 0; b < buffers.size(); ++b) {
    const LogicalBuffer& buf = buffers[b];
    switch (buf.kind) {
      case LogicalBuffer::kParameter: ptr[b] = const_cast<void*>(arg_data[buf.index]); break;
      case LogicalBuffer::kConstant: ptr[b] = const_cast<void*>(buf.data); break;
      case LogicalBuffer::kTemp: ptr[b] = arena.get() + buf.offset; break;
      case LogicalBuffer::kOutput: ptr[b] = out_data[buf.index]; break;
    }
  }
  std::vector<const void*> operands;
  std::vector<void*> results;
  for (const Step& step : steps_) {
    operands.clear();
    results.clear();
    for (int b : step.operand_buffers) operands.push_back(ptr[b]);
    for (int b : step.result_buffers) results.push_back(ptr[b]);
    absl::Status s = step.kernel->Run(operands, results);
    if (!s.ok()) {
      return absl::Status(s.code(), hlo::StrCat("instruction %", step.instr->name(), " (",
                                                step.kernel->kind(), "): ", s.message()));
    }
  }
  for (const auto& [leaf, b] : assignment_.output_copies()) {
    if (buffers[b].size > 0) std::memcpy(out_data[leaf], ptr[b], buffers[b].size);
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<Literal>> CpuExecutable::Run(
    absl::Span<const Literal* const> args) const {
  const hlo::HloComputation& entry = *module_->entry_computation();
  if (static_cast<int64_t>(args.size()) != entry.num_parameters()) {
    return absl::InvalidArgumentError(hlo::StrCat("CpuExecutable::Run: expected ",
                                                  entry.num_parameters(), " arguments, got ",
                                                  args.size()));
  }
  std::vector<const void*> arg_data;
  for (size_t i = 0; i < args.size(); ++i) {
    const Shape& expected = entry.parameter_instruction(i)->shape();
    if (!hlo::ShapeUtil::Compatible(args[i]->shape(), expected)) {
      return absl::InvalidArgumentError(hlo::StrCat(
          "CpuExecutable::Run: argument ", i, " has shape ", args[i]->shape().ToString(false),
          " but parameter ", i, " is ", expected.ToString(false)));
    }
    // Leaves, depth first.
    std::vector<const Literal*> stack{args[i]};
    while (!stack.empty()) {
      const Literal* l = stack.back();
      stack.pop_back();
      if (l->shape().IsTuple()) {
        for (auto it = l->tuple_elements().rbegin(); it != l->tuple_elements().rend(); ++it) {
          stack.push_back(&*it);
        }
      } else {
        arg_data.push_back(l->untyped_data().data());
      }
    }
  }
  std::vector<Literal> outputs;
  std::vector<void*> out_data;
  for (const Shape& s : assignment_.output_shapes()) outputs.emplace_back(s);
  for (Literal& l : outputs) out_data.push_back(l.mutable_untyped_data().data());
  HLO_RETURN_IF_ERROR(Run(arg_data, out_data));
  return outputs;
}

}  // namespace jx::cpu
