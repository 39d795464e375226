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

#include "jx/compiler/backend/cpu/cpu_kernels.h"
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
  struct Free {
    void operator()(uint8_t* p) const { std::free(p); }
  };
  using Arena = std::unique_ptr<uint8_t, Free>;
  std::mutex mu;
  std::vector<Arena> free;

  Arena Take(int64_t bytes) {
    {
      std::lock_guard<std::mutex> lock(mu);
      if (!free.empty()) {
        Arena a = std::move(free.back());
        free.pop_back();
        return a;
      }
    }
    return Arena(static_cast<uint8_t*>(std::aligned_alloc(64, (bytes + 63) / 64 * 64)));
  }
  void Give(Arena a) {
    std::lock_guard<std::mutex> lock(mu);
    free.push_back(std::move(a));
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
  // The scheduler's order (lower peak memory) when the module was scheduled.
  const std::vector<HloInstruction*> schedule = entry.MakeSequentialOrder();
  HLO_ASSIGN_OR_RETURN(exe->assignment_, BufferAssignment::Run(entry, schedule, options.donated_arguments));
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
    internal::KernelSelectionOptions selection;
    selection.tile_elements = options.tile_elements;
    selection.fallback = options.allow_evaluator_fallback ? internal::FallbackPolicy::kLog
                                                          : internal::FallbackPolicy::kError;
    HLO_ASSIGN_OR_RETURN(step.kernel, internal::SelectKernel(*instr, selection));
    for (const HloInstruction* op : instr->operands()) {
      const std::vector<int>& b = exe->assignment_.BuffersOf(op);
      step.operand_buffers.insert(step.operand_buffers.end(), b.begin(), b.end());
    }
    step.result_buffers = exe->assignment_.BuffersOf(instr);
    exe->steps_.push_back(std::move(step));
  }
  exe->temp_pool_ = std::make_unique<internal::TempPool>();
  if (internal::ProfileEnabled()) {
    exe->profile_ = std::make_unique<internal::Profile>();
    exe->profile_->name = module->name();
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
  if (arena_ != nullptr) {
    arena_->arena.execute([&] { status = RunSteps(arg_data, out_data); });
  } else {
    // The process-wide pool eager ops use (JX_NUM_THREADS): compiled and eager work share
    // one set of threads instead of two pools fighting over the cores.
    RunInPool([&] { status = RunSteps(arg_data, out_data); });
  }
  return status;
}

absl::Status CpuExecutable::RunSteps(absl::Span<const void* const> arg_data,
                                     absl::Span<void* const> out_data) const {
  const MemoryAnalysis& m = assignment_.memory();
  internal::TempPool::Arena arena;
  if (m.temp_bytes > 0) {
    arena = temp_pool_->Take(m.temp_bytes);
    if (arena == nullptr) return absl::ResourceExhaustedError("CpuExecutable: temp arena");
  }
  // Back to the pool however the run ends.
  struct GiveBack {
    internal::TempPool* pool;
    internal::TempPool::Arena* arena;
    ~GiveBack() {
      if (*arena != nullptr) pool->Give(std::move(*arena));
    }
  } give_back{temp_pool_.get(), &arena};
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
  const bool profile = profile_ != nullptr;
  if (profile) profile_->runs.fetch_add(1, std::memory_order_relaxed);
  for (size_t i = 0; i < steps_.size(); ++i) {
    const Step& step = steps_[i];
    operands.clear();
    results.clear();
    for (int b : step.operand_buffers) operands.push_back(ptr[b]);
    for (int b : step.result_buffers) results.push_back(ptr[b]);
    const auto t0 = profile ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point();
    absl::Status s = step.kernel->Run(operands, results);
    if (profile) {
      profile_->step_ns[i].fetch_add(
          std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0)
              .count(),
          std::memory_order_relaxed);
    }
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
