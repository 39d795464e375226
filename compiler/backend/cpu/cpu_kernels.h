// Internal to the CPU backend: the kernels one entry instruction runs as. Each is built once
// at compile time from its instruction and runs on raw buffers:
//   loop      an elementwise instruction or kLoop fusion: a TileProgram over tiles, tiles
//             spread over cores with TBB;
//   reduce    a reduce or kInput fusion (reduce of an elementwise expression): the expression
//             is computed tile by tile and folded without being materialized;
//   dot/conv  the kernel library's dot_general / convolution (eager's code, every dtype); a
//             kOutput fusion applies its elementwise epilogue to each output block right
//             after the block is computed;
//   scan      a reduce-window that is a running prefix/suffix scan along one axis;
//   others    data movement, gather/scatter, sort/top-k, windows, while/conditional/call,
//             dynamic slices, host callbacks, linalg custom-calls (declared below);
//   fallback  the slow path: the reference HloEvaluator on Literals, chosen only by
//             SelectKernel, logged or refused as its options say.
// Results do not depend on the number of threads: work is split at fixed boundaries.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string_view>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "jx/compiler/hlo/hlo_instruction.h"
#include "jx/core/dtype.h"

namespace jx::cpu::internal {

class Kernel {
 public:
  virtual ~Kernel() = default;
  // operands: the buffers of the instruction's operand leaves, operand by operand (one per
  // array operand); results: the buffers of its result leaves.
  virtual absl::Status Run(absl::Span<const void* const> operands,
                           absl::Span<void* const> results) const = 0;
  // "loop", "library-loop", "reduce", "library-reduce", "dot", "dot+epilogue", "conv", "conv+epilogue",
  // "scan", "arg-reduce", "library-arg-reduce", "sort", "top-k", "reduce-window", "gather",
  // "scatter", "while", "conditional", "call", "unfused", "dynamic-slice",
  // "dynamic-update-slice", "data-movement", "host-callback", "linalg", "allocate-buffer" or
  // "fallback".
  virtual std::string_view kind() const = 0;
  // Temp arena bytes of the computations the kernel runs (while/conditional/call), in use
  // while it runs; counted in the executable's memory_analysis().
  virtual int64_t nested_temp_bytes() const { return 0; }
};

// Each returns Unimplemented when the instruction is outside what the kernel handles.
absl::StatusOr<std::unique_ptr<Kernel>> MakeLoopKernel(const hlo::HloInstruction& instr,
                                                       int64_t tile_elements);
absl::StatusOr<std::unique_ptr<Kernel>> MakeReduceKernel(const hlo::HloInstruction& instr,
                                                         int64_t tile_elements);
absl::StatusOr<std::unique_ptr<Kernel>> MakeDotKernel(const hlo::HloInstruction& instr,
                                                      int64_t tile_elements);
absl::StatusOr<std::unique_ptr<Kernel>> MakeConvKernel(const hlo::HloInstruction& instr,  // conv_kernel.cc
                                                       int64_t tile_elements);
// A reduce-window whose window is a full-axis prefix or suffix (hlo::AsScanWindow: how the
// cumulative ops lower) with a simple binary reducer (add/multiply/maximum/minimum/and/or/
// xor) on any element type, or cumlogsumexp's log-add-exp reducer on floats: a running
// scan, O(n) per line, lines spread over cores. f64 sums are Neumaier-compensated as eager.
absl::StatusOr<std::unique_ptr<Kernel>> MakeScanKernel(const hlo::HloInstruction& instr);
std::unique_ptr<Kernel> MakeFallbackKernel(const hlo::HloInstruction& instr);

// What to do with an instruction no native kernel handles.
enum class FallbackPolicy {
  kLog,    // run it on the reference evaluator; JX_LOG_COMPILES names it and why
  kError,  // fail the compile (Unimplemented, naming the instruction)
};

struct KernelSelectionOptions {
  int64_t tile_elements = 2048;
  FallbackPolicy fallback = FallbackPolicy::kLog;
};

// The kernel an entry instruction runs as: the fastest native kernel that handles it, else
// the evaluator fallback as options.fallback says (kernel_selection.cc, the only place that
// chooses).
absl::StatusOr<std::unique_ptr<Kernel>> SelectKernel(const hlo::HloInstruction& instr,
                                                     const KernelSelectionOptions& options);

// Runs fn(begin, end) over [0, n) split at multiples of `grain`, in parallel when there is
// more than one chunk.
void ParallelChunks(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn);

// Native kernels for ops the kernels above leave to the fallback (reduce_kernels.cc,
// sort_kernel.cc, window_kernels.cc, gather_scatter_kernels.cc); sort, top-k, reduce-window,
// gather and scatter run the kernel library eager runs (lax/kernels/):
//   reduce         any element type with an add/multiply/maximum/minimum/and/or/xor reducer;
//   arg-reduce     2-operand (value, index) reduce picking by compares (argmax/argmin);
//   sort           comparators made of compares of operand pairs (any keys, stable);
//   reduce-window  general windows with an add/mul/max/min/and/or reducer (not running scans);
//   scatter        an add/mul/max/min or overwriting combiner; any other elementwise update
//                  computation (scatter_apply) in rounds of distinct destinations.
absl::StatusOr<std::unique_ptr<Kernel>> MakeTypedReduceKernel(const hlo::HloInstruction& instr,
                                                              int64_t tile_elements);
// The kernel library's reduction and argmax/argmin (lax/kernels/reduction.h), as eager runs
// them, and the outer-axis reduce of a fused expression (reduce_kernels.cc).
absl::StatusOr<std::unique_ptr<Kernel>> MakeLibraryReduceKernel(const hlo::HloInstruction& instr);
absl::StatusOr<std::unique_ptr<Kernel>> MakeLibraryArgReduceKernel(const hlo::HloInstruction& instr);
absl::StatusOr<std::unique_ptr<Kernel>> MakeColumnReduceKernel(const hlo::HloInstruction& instr,
                                                               int64_t tile_elements);
absl::StatusOr<std::unique_ptr<Kernel>> MakeArgReduceKernel(const hlo::HloInstruction& instr,
                                                            int64_t tile_elements);
absl::StatusOr<std::unique_ptr<Kernel>> MakeSortKernel(const hlo::HloInstruction& instr);
absl::StatusOr<std::unique_ptr<Kernel>> MakeReduceWindowKernel(const hlo::HloInstruction& instr);
absl::StatusOr<std::unique_ptr<Kernel>> MakeScatterKernel(const hlo::HloInstruction& instr);
// Lone transpose/broadcast/reverse/slice/pad/concatenate/iota/copy/reshape/bitcast/
// bitcast-convert on row-major buffers: the kernel library's copies, as eager runs them.
absl::StatusOr<std::unique_ptr<Kernel>> MakeDataMovementKernel(const hlo::HloInstruction& instr);

// while / conditional / call: their computations compiled once, when the kernel is built,
// into executables run on the instruction's buffers (control_flow_kernels.cc).
absl::StatusOr<std::unique_ptr<Kernel>> MakeControlFlowKernel(const hlo::HloInstruction& instr, const KernelSelectionOptions& options);
// A loop fusion whose expression a tile program cannot compute (a concatenate or pad inside:
// batched gather/scatter indices, the threefry counter) run op by op: its fused computation
// compiled once, like a call's callee, each op a native kernel (control_flow_kernels.cc).
absl::StatusOr<std::unique_ptr<Kernel>> MakeUnfusedKernel(const hlo::HloInstruction& instr,
                                                          const KernelSelectionOptions& options);
// dynamic-slice / dynamic-update-slice, any element type (dynamic_slice_kernels.cc).
absl::StatusOr<std::unique_ptr<Kernel>> MakeDynamicSliceKernel(const hlo::HloInstruction& instr);
// gather (clamping) and scatter (dropping) through the kernel library eager shares.
absl::StatusOr<std::unique_ptr<Kernel>> MakeGatherKernel(const hlo::HloInstruction& instr);
// A fusion select(broadcast(mask), gather, fill) (masked_gather_fusion.h): the gather, then
// the fill value where the mask is false.
absl::StatusOr<std::unique_ptr<Kernel>> MakeMaskedGatherKernel(const hlo::HloInstruction& instr,
                                                                int64_t tile_elements);
// The host-callback custom-call (core/host_callback.h): calls the registered host function
// on the operands (host_callback_kernel.cc).
absl::StatusOr<std::unique_ptr<Kernel>> MakeHostCallbackKernel(const hlo::HloInstruction& instr);
// The AllocateBuffer custom-call (compiler/hlo/allocate_buffer.h): nothing to run
// (allocate_buffer_kernel.cc).
absl::StatusOr<std::unique_ptr<Kernel>> MakeAllocateBufferKernel(const hlo::HloInstruction& instr);
// The linalg custom-calls (lax/linalg_lowering.cc): the kernel library's linalg numerics
// (linalg_kernel.cc).
absl::StatusOr<std::unique_ptr<Kernel>> MakeLinalgKernel(const hlo::HloInstruction& instr);
// The jx dtype of an HLO element type, for kernel library calls (nullopt: not an array type).
std::optional<DType> KernelDTypeOf(hlo::PrimitiveType type);

}  // namespace jx::cpu::internal
