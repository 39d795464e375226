#include "jx/compiler/backend/cpu/cpu_executable.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>

#include <tbb/task_arena.h>

#include "absl/container/flat_hash_set.h"

#include "jx/compiler/backend/cpu/collective_kernels.h"
#include "jx/compiler/backend/cpu/cpu_kernels.h"
#include "jx/compiler/backend/cpu/generic_reduce_expander.h"
#include "jx/compiler/backend/cpu/masked_gather_fusion.h"
#include "jx/compiler/backend/cpu/widened_window_fusion.h"
#include "jx/compiler/hlo/hlo_verifier.h"
#include "jx/compiler/hlo/status_macros.h"
#include "jx/compiler/hlo/str_util.h"
#include "jx/core/parallel.h"

namespace jx::cpu {

namespace internal {
struct ThreadArena {
  explicit ThreadArena(int threads) : arena(threads) {}
  tbb::task_arena arena;
};

// Temp arenas kept between runs, so a run neither maps fresh memory nor faults (and the
// kernel zeroes) its pages again. A run takes one (or allocates one when all are in use by
// concurrent runs) and returns it.
struct TempPool {
  explicit TempPool(int64_t bytes) : bytes((bytes + 63) / 64 * 64) {}
  ~TempPool() {
    for (uint8_t* p : free) std::free(p);
  }
  const int64_t bytes;
  std::mutex mu;
  std::vector<uint8_t*> free;

  uint8_t* Take() {
    {
      std::lock_guard<std::mutex> lock(mu);
      if (!free.empty()) {
        uint8_t* a = free.back();
        free.pop_back();
        return a;
      }
    }
    return static_cast<uint8_t*>(std::aligned_alloc(64, bytes));
  }
  void Give(uint8_t* a) {
    std::lock_guard<std::mutex> lock(mu);
    free.push_back(a);
  }
};

// JX_CPU_PROFILE: per-step time summed over runs.
struct Profile {
  std::string name;
  std::vector<std::atomic<int64_t>> step_ns;
  std::atomic<int64_t> runs{0};
  std::atomic<bool> printed{false};
};

namespace {

bool ProfileEnabled() {
  static const bool enabled = [] {
    const char* v = std::getenv("JX_CPU_PROFILE");
    return v != nullptr && v[0] != '\0' && std::string_view(v) != "0";
  }();
  return enabled;
}

// Live profiles, printed at exit (jit's program cache never destroys its executables).
std::mutex& ProfilesMu() {
  static auto* mu = new std::mutex;
  return *mu;
}
absl::flat_hash_set<const CpuExecutable*>& LiveProfiles() {
  static auto* live = new absl::flat_hash_set<const CpuExecutable*>;
  return *live;
}

std::atomic<int64_t> g_computations_compiled{0};

}  // namespace
}  // namespace internal

using hlo::HloInstruction;
using hlo::HloOpcode;
using hlo::Literal;
using hlo::Shape;

CpuExecutable::~CpuExecutable() {
  if (profile_ != nullptr) {
    PrintProfile();
    std::lock_guard<std::mutex> lock(internal::ProfilesMu());
    internal::LiveProfiles().erase(this);
  }
}

void CpuExecutable::PrintProfile() const {
  if (profile_ == nullptr || profile_->printed.exchange(true)) return;
  const int64_t runs = profile_->runs.load();
  if (runs == 0) return;
  const std::vector<LogicalBuffer>& buffers = assignment_.buffers();
  std::vector<size_t> order(steps_.size());
  int64_t total_ns = 0;
  for (size_t i = 0; i < steps_.size(); ++i) {
    order[i] = i;
    total_ns += profile_->step_ns[i].load();
  }
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return profile_->step_ns[a].load() > profile_->step_ns[b].load();
  });
  std::fprintf(stderr, "JX_CPU_PROFILE %s: %lld runs, %.3f ms/run in %zu steps\n",
               profile_->name.c_str(), static_cast<long long>(runs),
               total_ns / 1e6 / runs, steps_.size());
  std::fprintf(stderr, "  %10s %6s %8s %14s  %-14s %s\n", "ms/run", "%", "GB/s", "bytes", "kind",
               "instruction");
  for (size_t i : order) {
    const Step& step = steps_[i];
    int64_t bytes = 0;
    for (int b : step.operand_buffers) bytes += buffers[b].size;
    for (int b : step.result_buffers) bytes += buffers[b].size;
    const double ns = static_cast<double>(profile_->step_ns[i].load()) / runs;
    std::string what = hlo::StrCat(step.instr->name(), " = ",
                                   hlo::HloOpcodeString(step.instr->opcode()));
    if (step.instr->opcode() == HloOpcode::kFusion) {
      what += hlo::StrCat(" (", hlo::FusionKindToString(step.instr->fusion_kind()), ")");
    }
    what += " " + step.instr->shape().ToString(false);
    std::fprintf(stderr, "  %10.4f %6.2f %8.2f %14lld  %-14s %s\n", ns / 1e6,
                 total_ns > 0 ? 100.0 * ns * runs / total_ns : 0.0, ns > 0 ? bytes / ns : 0.0,
                 static_cast<long long>(bytes), std::string(step.kernel->kind()).c_str(),
                 what.c_str());
  }
}

absl::StatusOr<std::unique_ptr<CpuExecutable>> CompileComputation(
    const hlo::HloComputation& computation, const CpuCompileOptions& options,
    OutputBinding binding) {
  std::unique_ptr<CpuExecutable> exe(new CpuExecutable());
  exe->options_ = options;
  exe->computation_ = &computation;
  // The scheduler's order (lower peak memory) when the module was scheduled.
  const std::vector<HloInstruction*> schedule = computation.MakeSequentialOrder();
  const std::vector<bool> no_donations;
  HLO_ASSIGN_OR_RETURN(exe->assignment_,
                       BufferAssignment::Run(computation, schedule,
                                             binding == OutputBinding::kSeparate
                                                 ? options.donated_arguments
                                                 : no_donations,
                                             binding));
  for (int64_t p = 0; p < computation.num_parameters(); ++p) {
    for (const Shape& s : LeafShapes(computation.parameter_instruction(p)->shape())) {
      exe->argument_shapes_.push_back(s);
    }
  }
  internal::KernelSelectionOptions selection;
  selection.tile_elements = options.tile_elements;
  selection.fallback = options.allow_evaluator_fallback ? internal::FallbackPolicy::kLog
                                                        : internal::FallbackPolicy::kError;
  for (const HloInstruction* instr : schedule) {
    switch (instr->opcode()) {
      case HloOpcode::kParameter: case HloOpcode::kConstant: case HloOpcode::kTuple:
      case HloOpcode::kGetTupleElement:
        continue;  // buffers only (aliases)
      default:
        break;
    }
    if (IsBufferAlias(*instr)) continue;  // a reshape reading its operand's bytes in place
    CpuExecutable::Step step;
    step.instr = instr;
    HLO_ASSIGN_OR_RETURN(step.kernel, internal::SelectKernel(*instr, selection));
    for (const HloInstruction* op : instr->operands()) {
      const std::vector<int>& b = exe->assignment_.BuffersOf(op);
      step.operand_buffers.insert(step.operand_buffers.end(), b.begin(), b.end());
    }
    step.result_buffers = exe->assignment_.BuffersOf(instr);
    exe->steps_.push_back(std::move(step));
  }
  exe->temp_pool_ = std::make_unique<internal::TempPool>(exe->assignment_.memory().temp_bytes);
  // Steps run one at a time: the largest nested arena is what a run adds.
  int64_t nested_temp_bytes = 0;
  for (const CpuExecutable::Step& step : exe->steps_) {
    nested_temp_bytes = std::max(nested_temp_bytes, step.kernel->nested_temp_bytes());
  }
  exe->memory_ = exe->assignment_.memory();
  exe->memory_.temp_bytes += nested_temp_bytes;
  exe->memory_.peak_bytes += nested_temp_bytes;
  if (internal::ProfileEnabled()) {
    exe->profile_ = std::make_unique<internal::Profile>();
    const hlo::HloModule* module = computation.parent();
    exe->profile_->name = computation.IsEntryComputation() || module == nullptr
                              ? (module != nullptr ? module->name() : computation.name())
                              : hlo::StrCat(module->name(), "/", computation.name());
    exe->profile_->step_ns = std::vector<std::atomic<int64_t>>(exe->steps_.size());
    static const bool at_exit = [] {
      std::atexit([] {
        std::lock_guard<std::mutex> lock(internal::ProfilesMu());
        for (const CpuExecutable* e : internal::LiveProfiles()) e->PrintProfile();
      });
      return true;
    }();
    (void)at_exit;
    std::lock_guard<std::mutex> lock(internal::ProfilesMu());
    internal::LiveProfiles().insert(exe.get());
  }
  internal::g_computations_compiled.fetch_add(1, std::memory_order_relaxed);
  return exe;
}

int64_t ComputationsCompiled() {
  return internal::g_computations_compiled.load(std::memory_order_relaxed);
}

absl::StatusOr<std::unique_ptr<CpuExecutable>> CompileForCpu(
    std::unique_ptr<hlo::HloModule> module, const CpuCompileOptions& options) {
  if (module == nullptr || module->entry_computation() == nullptr) {
    return absl::InvalidArgumentError("CompileForCpu: module without an entry computation");
  }
  // The backend's own rewrites, before verification so that their output is verified too.
  // A generic reduce a pipeline fused before this backend saw it (the TPU pipeline, whose
  // optimized module the chips' host half compiles) is expanded here, inside its fusion.
  HLO_ASSIGN_OR_RETURN(const bool expanded, GenericReduceExpander().Run(module.get()));
  HLO_ASSIGN_OR_RETURN(const bool widened, WidenedWindowFusion().Run(module.get()));
  HLO_ASSIGN_OR_RETURN(const bool masked, MaskedGatherFusion().Run(module.get()));
  // A module verified as given is verified again only where the rewrites changed it
  // (verifying a 100k-instruction module costs as much as compiling its kernels).
  if (!options.module_verified || expanded || widened || masked) {
    HLO_RETURN_IF_ERROR(hlo::VerifyHloModule(*module));
  }
  HLO_ASSIGN_OR_RETURN(std::unique_ptr<CpuExecutable> exe,
                       CompileComputation(*module->entry_computation(), options));
  if (options.max_threads > 0) {
    exe->arena_ = std::make_unique<internal::ThreadArena>(options.max_threads);
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
  absl::Status status;
  auto run = [&] {
    Frame frame(*this);
    frame.Bind(arg_data, out_data);
    status = frame.Run();
  };
  if (arena_ != nullptr) {
    arena_->arena.execute(run);
  } else {
    // The process-wide pool eager ops use (JX_NUM_THREADS): compiled and eager work share
    // one set of threads instead of two pools fighting over the cores.
    RunInPool(run);
  }
  return status;
}

absl::Status CpuExecutable::Run(absl::Span<const void* const> arg_data,
                                absl::Span<void* const> out_data, const RunOptions& options) const {
  if (options.collectives == nullptr) return Run(arg_data, out_data);
  if (static_cast<int64_t>(arg_data.size()) != assignment_.num_argument_leaves() ||
      out_data.size() != assignment_.output_shapes().size()) {
    return absl::InvalidArgumentError(hlo::StrCat(
        "CpuExecutable::Run: expected ", assignment_.num_argument_leaves(), " argument and ",
        assignment_.output_shapes().size(), " output buffers, got ", arg_data.size(), " and ",
        out_data.size()));
  }
  internal::ScopedCollectiveContext scope(options.collectives);
  Frame frame(*this);
  frame.Bind(arg_data, out_data);
  return frame.Run();
}

CpuExecutable::Frame::Frame(const CpuExecutable& exe) : exe_(exe) {
  if (exe.assignment_.memory().temp_bytes > 0) arena_ = exe.temp_pool_->Take();
}

CpuExecutable::Frame::~Frame() {
  if (arena_ != nullptr) exe_.temp_pool_->Give(arena_);
}

void CpuExecutable::Frame::Bind(absl::Span<const void* const> args,
                                absl::Span<void* const> outs) {
  const std::vector<LogicalBuffer>& buffers = exe_.assignment_.buffers();
  buffer_.assign(buffers.size(), nullptr);
  for (size_t b = 0; b < buffers.size(); ++b) {
    const LogicalBuffer& buf = buffers[b];
    switch (buf.kind) {
      case LogicalBuffer::kParameter: buffer_[b] = const_cast<void*>(args[buf.index]); break;
      case LogicalBuffer::kConstant: buffer_[b] = const_cast<void*>(buf.data); break;
      case LogicalBuffer::kTemp: buffer_[b] = arena_ + buf.offset; break;
      case LogicalBuffer::kOutput: buffer_[b] = outs[buf.index]; break;
    }
  }
  operand_.clear();
  result_.clear();
  for (const Step& step : exe_.steps_) {
    for (int b : step.operand_buffers) operand_.push_back(buffer_[b]);
    for (int b : step.result_buffers) result_.push_back(buffer_[b]);
  }
  outs_.assign(outs.begin(), outs.end());
}

absl::Status CpuExecutable::Frame::Run() {
  if (arena_ == nullptr && exe_.assignment_.memory().temp_bytes > 0) {
    return absl::ResourceExhaustedError("CpuExecutable: temp arena");
  }
  const std::vector<Step>& steps = exe_.steps_;
  internal::Profile* profile = exe_.profile_.get();
  if (profile != nullptr) profile->runs.fetch_add(1, std::memory_order_relaxed);
  const void* const* operand = operand_.data();
  void* const* result = result_.data();
  for (size_t i = 0; i < steps.size(); ++i) {
    const Step& step = steps[i];
    const size_t num_operands = step.operand_buffers.size();
    const size_t num_results = step.result_buffers.size();
    const auto t0 = profile != nullptr ? std::chrono::steady_clock::now()
                                       : std::chrono::steady_clock::time_point();
    absl::Status s = step.kernel->Run(absl::MakeConstSpan(operand, num_operands),
                                      absl::MakeConstSpan(result, num_results));
    if (profile != nullptr) {
      profile->step_ns[i].fetch_add(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                        std::chrono::steady_clock::now() - t0)
                                        .count(),
                                    std::memory_order_relaxed);
    }
    if (!s.ok()) {
      return absl::Status(s.code(), hlo::StrCat("instruction %", step.instr->name(), " (",
                                                step.kernel->kind(), "): ", s.message()));
    }
    operand += num_operands;
    result += num_results;
  }
  // Loop state: parameter leaves the copies below overwrite are staged first.
  const std::vector<LogicalBuffer>& buffers = exe_.assignment_.buffers();
  for (const auto& [src, staging] : exe_.assignment_.staging_copies()) {
    if (buffers[src].size > 0) std::memcpy(buffer_[staging], buffer_[src], buffers[src].size);
  }
  for (const auto& [leaf, b] : exe_.assignment_.output_copies()) {
    if (buffers[b].size > 0 && outs_[leaf] != buffer_[b]) {
      std::memcpy(outs_[leaf], buffer_[b], buffers[b].size);
    }
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
