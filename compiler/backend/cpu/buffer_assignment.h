// Buffer assignment for the CPU backend: every array value of a computation (every leaf of
// a tuple-shaped value) gets a logical buffer, and temporaries share one arena with
// liveness-based reuse: walking the schedule, an instruction's results are placed first
// (first fit, 64-byte aligned) and an operand's buffer is released once its last reader
// ran, so a later temporary can take its place. Parameters read the caller's argument
// buffers, constants their literal's data, and the root's results are written straight
// into the caller's output buffers (a root leaf that is a parameter, a constant or repeated
// is copied there at the end instead). tuple and get-tuple-element alias their operands'
// buffers, which extends those buffers' live ranges to the aliases' readers; so does a
// reshape or bitcast between row-major arrays of one element type (IsBufferAlias: the same
// bytes in the same order, XLA's bitcast), which then runs no kernel.
//
// Donated argument leaves (jit's donate_argnums) may hold an output: an output leaf of the
// same shape whose defining instruction runs after the argument's last reader, or is that
// reader and reads it in place (an elementwise op, a loop fusion that reads it only through
// elementwise ops: each element is read at its own index before it is written, or a
// dynamic-update-slice or scatter of it). Outputs and donated leaves are matched as a maximum
// matching seeded with JAX's pairing (each output its own argument, hlo::PairDonatedArguments).
// output_aliases() lists these (output leaf, argument leaf) pairs; a caller may then pass the
// argument's memory as that output's buffer.
//
// In place: a dynamic-update-slice or a scatter whose operand is a temp it reads last takes
// that temp's buffer (it then writes only the window, or the scattered elements), and so does
// each leaf of a while's state from the init leaf it replaces, as XLA's buffer assignment
// shares operand and output.
//
// A loop body (OutputBinding::kLoopState) is run with output leaf i in argument leaf i's
// memory, the loop state updated in place: a root leaf that is its own parameter leaf is not
// touched, one computed after that parameter leaf's last reader (or by it, in place) is
// written there directly, and only the rest are copied at the end (through a staging temp
// when the source is another parameter leaf the end overwrites, e.g. swapped carries).
//
//   auto schedule = entry->MakeInstructionPostOrder();
//   BufferAssignment ba = BufferAssignment::Run(*entry, schedule).value();
//   ba.BuffersOf(add);          // logical buffer ids of add's leaves
//   ba.memory().temp_bytes;     // arena size after reuse
#pragma once

#include <cstdint>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "jx/compiler/hlo/hlo_computation.h"

namespace jx::cpu {

// Sizes of one run's memory, in bytes.
struct MemoryAnalysis {
  int64_t argument_bytes = 0;
  int64_t output_bytes = 0;
  int64_t constant_bytes = 0;
  // The temp arena (after reuse) and what it would be without reuse.
  int64_t temp_bytes = 0;
  int64_t temp_bytes_without_reuse = 0;
  // Most temp bytes live at once (<= temp_bytes; the gap is fragmentation).
  int64_t peak_live_temp_bytes = 0;
  // Everything a run touches at its peak: arguments + outputs + constants + temp arena,
  // less the outputs written into donated arguments.
  int64_t peak_bytes = 0;
  // Output bytes that may live in donated arguments' memory (output_aliases()).
  int64_t alias_bytes = 0;
};

struct LogicalBuffer {
  enum Kind { kParameter, kConstant, kTemp, kOutput };
  Kind kind = kTemp;
  int64_t size = 0;               // bytes
  int64_t index = 0;              // kParameter: argument leaf; kOutput: output leaf
  int64_t offset = 0;             // kTemp: offset in the arena
  const void* data = nullptr;     // kConstant
  const hlo::HloInstruction* defining = nullptr;
  int64_t defined_at = 0, last_use = 0;  // schedule positions
  // >= 0: merged into that buffer (an in-place update); this entry is no longer used.
  int merged_into = -1;
};

// How a run's output leaves relate to its argument leaves.
enum class OutputBinding {
  kSeparate,   // outputs are fresh memory (entry computations, branches, calls)
  kLoopState,  // output leaf i is argument leaf i's memory (a while body's state)
};

class BufferAssigner;

class BufferAssignment {
 public:
  // `schedule` orders the computation's instructions, operands first. donated_arguments[i]
  // (one per argument leaf, or empty for none) says leaf i may be overwritten.
  static absl::StatusOr<BufferAssignment> Run(const hlo::HloComputation& computation,
                                              absl::Span<hlo::HloInstruction* const> schedule,
                                              const std::vector<bool>& donated_arguments = {},
                                              OutputBinding binding = OutputBinding::kSeparate);

  const std::vector<LogicalBuffer>& buffers() const { return buffers_; }
  // The buffers of instr's leaves (one for an array, one per leaf of a tuple, depth first).
  const std::vector<int>& BuffersOf(const hlo::HloInstruction* instr) const {
    return buffers_of_.at(instr);
  }
  int64_t num_argument_leaves() const { return num_argument_leaves_; }
  // The root's leaves: shapes, and the buffer each is read from.
  const std::vector<hlo::Shape>& output_shapes() const { return output_shapes_; }
  // Output leaves whose value is copied from another buffer at the end of a run:
  // (output leaf, source buffer). Before them, staging_copies() (source, staging temp) run.
  const std::vector<std::pair<int64_t, int>>& output_copies() const { return output_copies_; }
  const std::vector<std::pair<int, int>>& staging_copies() const { return staging_copies_; }
  // kLoopState: whether output leaf i is argument leaf i unchanged (a loop invariant).
  bool OutputIsItsArgument(int64_t leaf) const;
  // (output leaf, donated argument leaf) pairs whose memory the output may be written into.
  const std::vector<std::pair<int64_t, int64_t>>& output_aliases() const { return output_aliases_; }
  const MemoryAnalysis& memory() const { return memory_; }

 private:
  friend class BufferAssigner;
  const hlo::HloInstruction* root_ = nullptr;
  std::vector<LogicalBuffer> buffers_;
  absl::flat_hash_map<const hlo::HloInstruction*, std::vector<int>> buffers_of_;
  int64_t num_argument_leaves_ = 0;
  std::vector<hlo::Shape> output_shapes_;
  std::vector<std::pair<int64_t, int>> output_copies_;
  std::vector<std::pair<int, int>> staging_copies_;
  std::vector<std::pair<int64_t, int64_t>> output_aliases_;
  MemoryAnalysis memory_;
};

// Whether instr's result is its operand's buffer, read as another shape: a reshape or
// bitcast whose operand and result are row-major arrays of the same element type. Such an
// instruction copies nothing (it has no kernel).
bool IsBufferAlias(const hlo::HloInstruction& instr);

// The array leaves of a shape, depth first (an array is its own single leaf).
std::vector<hlo::Shape> LeafShapes(const hlo::Shape& shape);

}  // namespace jx::cpu
