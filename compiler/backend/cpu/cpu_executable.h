// The CPU backend: compiles an HLO module (typically after the fusion pass) into a
// CpuExecutable, a list of kernels over one buffer assignment, and runs it on the host.
//   - kLoop fusions and lone elementwise ops run as tile programs: the fused
//     expression is computed over cache-resident tiles, each op one vectorized loop, only
//     the root written to memory, tiles spread over cores with TBB;
//   - kInput fusions (reduce of an elementwise expression) and reduces fold the expression
//     tile by tile without materializing it;
//   - dot and convolution run the kernel library's code eager runs (every dtype); a kOutput
//     fusion applies its epilogue per output block;
//   - lone data movement (transpose, broadcast, slice, pad, concatenate, ...), gather,
//     scatter, sort/top-k and reduce-window run the kernel library's copies and loops; a
//     gather whose rows a select replaces by a fill value (FILL_OR_DROP) is first fused with
//     it (MaskedGatherFusion) and fills those rows in the same pass;
//   - a reduce-window that is a running prefix/suffix scan (cumsum, cumprod, cummax,
//     cummin) runs as an O(n) scan per line; a float sum or product lowered as convert ->
//     f64 window -> convert is first fused (WidenedWindowFusion, one of the backend's two rewrites)
//     and runs as one pass of eager's kernel in the narrow type;
//   - while, conditional and call run their computations as executables compiled once,
//     with the entry (CompileComputation); a while body updates the loop state in place;
//   - dynamic-slice / dynamic-update-slice copy the clamped window (the latter in place
//     when its operand is dead after it or donated);
//   - anything else runs through the reference HloEvaluator (the slow path), logged under
//     JX_LOG_COMPILES and refused with allow_evaluator_fallback = false.
// Kernels are built at compile time; a run only walks the kernel list. Results are
// identical for any number of threads. Run may be called concurrently: each run takes a
// temp arena from the executable's pool (allocated once, pages stay faulted in) and gives
// it back at the end.
//
// JX_CPU_PROFILE=1 times every step of every run; each executable prints its table (time
// per run, kernel kind and bytes touched per instruction, slowest first) to stderr when it
// is destroyed or at exit. Loop bodies, conditions and branches print their own tables
// (named module/computation), one "run" per iteration.
//
//   auto exe = jx::cpu::CompileForCpu(std::move(module)).value();
//   std::vector<hlo::Literal> out = exe->Run({&x, &y}).value();   // one per root leaf
//   exe->memory_analysis().temp_bytes;
//   // Fast path, shapes fixed at compile time (dense row-major buffers, one per leaf):
//   HLO_RETURN_IF_ERROR(exe->Run({x_ptr, y_ptr}, {out_ptr}));
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "jx/compiler/backend/cpu/buffer_assignment.h"
#include "jx/compiler/hlo/hlo_module.h"
#include "jx/compiler/hlo/literal.h"

namespace jx::cpu {

class CpuExecutable;

namespace internal {
class Kernel;
struct ThreadArena;
struct TempPool;
struct Profile;
}

class CollectiveContext;

// Per run: the partition this run is in a multi-device run (collective_context.h); null
// for a one-device run.
struct RunOptions {
  CollectiveContext* collectives = nullptr;
};

struct CpuCompileOptions {
  // Elements per tile of a loop kernel (rounded up to a multiple of 16).
  int64_t tile_elements = 2048;
  // Threads a run may use (0: the process-wide pool eager ops also run on, JX_NUM_THREADS
  // threads; n > 0: an arena of n threads owned by the executable, for tests and benches).
  int max_threads = 0;
  // Per argument leaf (or empty): whether the caller donates it, so an output may be
  // written into its memory (see output_aliases()).
  std::vector<bool> donated_arguments;
  // An instruction without a native kernel runs on the reference evaluator (logged under
  // JX_LOG_COMPILES) unless this is false; then the compile fails naming it.
  bool allow_evaluator_fallback = true;
  // The module was verified as given (the CPU pipeline verifies what its passes change): the
  // backend verifies it again only when its own rewrites change it.
  bool module_verified = false;
};

class CpuExecutable {
 public:
  ~CpuExecutable();
  CpuExecutable(const CpuExecutable&) = delete;
  CpuExecutable& operator=(const CpuExecutable&) = delete;

  // args[i] is entry parameter i (tuple parameters as tuple literals). Returns the root's
  // value: one literal for an array root, one per leaf (depth first) for a tuple root.
  absl::StatusOr<std::vector<hlo::Literal>> Run(absl::Span<const hlo::Literal* const> args) const;
  // Raw buffers: one dense row-major buffer per parameter leaf and per output leaf, shapes
  // as compiled (argument_shapes(), output_shapes()).
  absl::Status Run(absl::Span<const void* const> arg_data, absl::Span<void* const> out_data) const;
  // A partition of a multi-device run: runs in the calling thread (each partition has its
  // own; they block at collectives until their group arrives, which a shared thread pool
  // could deadlock on), its kernels meeting the other partitions through
  // options.collectives. Kernels still spread their loops over the pool.
  absl::Status Run(absl::Span<const void* const> arg_data, absl::Span<void* const> out_data,
                   const RunOptions& options) const;

  // The buffer assignment's sizes, with the temp arenas of loop bodies, branches and callees
  // (the largest in use at once) added to temp_bytes and peak_bytes.
  const MemoryAnalysis& memory_analysis() const { return memory_; }
  const std::vector<hlo::Shape>& argument_shapes() const { return argument_shapes_; }
  const std::vector<hlo::Shape>& output_shapes() const { return assignment_.output_shapes(); }
  // The owning module (CompileForCpu's executables only) and the compiled computation.
  const hlo::HloModule& module() const { return *module_; }
  const hlo::HloComputation& computation() const { return *computation_; }
  const BufferAssignment& buffer_assignment() const { return assignment_; }
  // (output leaf, donated argument leaf): Run may be given the argument's buffer as that
  // output's buffer (then the argument's value is gone after the run).
  const std::vector<std::pair<int64_t, int64_t>>& output_aliases() const {
    return assignment_.output_aliases();
  }
  // The kernel kind an entry instruction runs as ("loop", "reduce", "dot", "dot+epilogue",
  // "scan", "while", "dynamic-slice", ..., "fallback"), or "" for instructions without a kernel (parameter, constant,
  // tuple, ...).
  std::string_view KernelKind(std::string_view instruction_name) const;
  // With JX_CPU_PROFILE set: prints the step times so far to stderr (once; later calls and
  // the destructor print nothing).
  void PrintProfile() const;

  // Runs the executable many times on the same buffers (a loop body, its condition): the
  // temp arena is taken once and every step's buffer pointers are resolved once. Runs in
  // the caller's thread context. Not thread-safe: one Frame per concurrent run.
  //   CpuExecutable::Frame frame(body);
  //   frame.Bind(state, state);
  //   while (...) HLO_RETURN_IF_ERROR(frame.Run());
  class Frame {
   public:
    explicit Frame(const CpuExecutable& exe);
    ~Frame();
    Frame(const Frame&) = delete;
    Frame& operator=(const Frame&) = delete;
    // One buffer per argument leaf and per output leaf, as Run takes them; they stay bound
    // for every later Run().
    void Bind(absl::Span<const void* const> args, absl::Span<void* const> outs);
    absl::Status Run();

   private:
    const CpuExecutable& exe_;
    // Inline storage: a frame made per run of a small branch or inner loop allocates nothing.
    template <typename T>
    using Pointers = absl::InlinedVector<T, 32>;
    uint8_t* arena_ = nullptr;
    Pointers<void*> buffer_;         // per logical buffer
    Pointers<const void*> operand_;  // every step's operand buffers, back to back
    Pointers<void*> result_;         // every step's result buffers, back to back
    Pointers<void*> outs_;           // per output leaf
  };

 private:
  friend absl::StatusOr<std::unique_ptr<CpuExecutable>> CompileForCpu(
      std::unique_ptr<hlo::HloModule>, const CpuCompileOptions&);
  friend absl::StatusOr<std::unique_ptr<CpuExecutable>> CompileComputation(
      const hlo::HloComputation&, const CpuCompileOptions&, OutputBinding);
  struct Step {
    const hlo::HloInstruction* instr;
    std::unique_ptr<internal::Kernel> kernel;
    std::vector<int> operand_buffers, result_buffers;
  };
  CpuExecutable() = default;

  std::unique_ptr<hlo::HloModule> module_;  // null for a sub-computation's executable
  const hlo::HloComputation* computation_ = nullptr;
  CpuCompileOptions options_;
  BufferAssignment assignment_;
  MemoryAnalysis memory_;
  std::vector<Step> steps_;
  std::vector<hlo::Shape> argument_shapes_;  // parameter leaves
  // With max_threads > 0: the arena every run executes in. It lives as long as the
  // executable so its worker threads stay attached between runs (a fresh arena per run has
  // to recruit workers each time, and on a busy machine the run often ends first).
  std::unique_ptr<internal::ThreadArena> arena_;
  std::unique_ptr<internal::TempPool> temp_pool_;
  std::unique_ptr<internal::Profile> profile_;  // with JX_CPU_PROFILE set
};

// Verifies the module and compiles its entry computation.
absl::StatusOr<std::unique_ptr<CpuExecutable>> CompileForCpu(
    std::unique_ptr<hlo::HloModule> module, const CpuCompileOptions& options = {});

// Compiles one computation of a module that must outlive the executable: a while body
// (binding kLoopState: its output leaf i may be bound to argument leaf i's memory) or
// condition, a conditional's branch, a call's callee. Kernels of the while, conditional and
// call instructions do this once when they are built (options.max_threads and donations
// are ignored: the executable runs inside its caller's run).
absl::StatusOr<std::unique_ptr<CpuExecutable>> CompileComputation(
    const hlo::HloComputation& computation, const CpuCompileOptions& options,
    OutputBinding binding = OutputBinding::kSeparate);

// How many computations this process compiled so far (entries and sub-computations): a
// test hook proving that loop bodies are compiled once, not per iteration or per run.
int64_t ComputationsCompiled();

}  // namespace jx::cpu
