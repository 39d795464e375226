// What holds a chip's HBM peak: the buffers live where the per-device program's buffer
// assignment reaches its high-water mark, each with its size, shape, the HLO instruction that
// defines it, that instruction's op_name metadata (the jaxpr equation it was lowered from) and
// a kind. A PodPlan carries it (PodPlan::hbm) and prints it:
//
//   jx::tpu::PodPlan plan = step.lower(abstract_params, abstract_batch).compile().plan();
//   for (const jx::tpu::PeakBuffer& b : plan.hbm.buffers)
//     std::cout << b.bytes << " " << b.shape << " " << b.instruction << " " << b.op_name << "\n";
//   std::cout << plan.hbm.ToString();   // the peak's split and its largest buffers
//
// The peak is arguments + outputs + constants (live for the whole step) + the temp arena, less
// outputs written into donated arguments (XLA's peak: the live set of its heap simulation).
// The arena holds peak_live_temp_bytes at its fullest point; the rest is fragmentation. A loop,
// conditional or call runs its computation in an arena of its own (loop_scratch_bytes: the
// largest, counted on top of the entry's, as the host compile sizes it).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace jx::tpu {

enum class PeakBufferKind {
  kParameter,        // an argument of the step (a parameter shard, an optimizer state, a batch)
  kOutput,           // a result of the step (not written into a donated argument)
  kConstant,         // a literal
  kGatheredWeight,   // an all-gather of an argument: a weight gathered over its FSDP axes
  kGathered,         // an all-gather of a computed value
  kLongLived,        // a temp live over more than a quarter of the step: an activation saved for
                     // the backward pass, or a value held from the forward pass to its use there
  kTemporary,        // any other temp
};
inline constexpr int kNumPeakBufferKinds = 7;
// "parameter", "output", "constant", "gathered weight", "gathered", "long-lived", "temporary".
std::string_view PeakBufferKindName(PeakBufferKind kind);

// One buffer live at the peak, or several alike: `count` buffers of the same kind, shape, opcode
// and op_name (a layer's value, once per layer) are one entry, named by the first of them.
struct PeakBuffer {
  int64_t bytes = 0;        // one buffer's bytes
  int64_t count = 1;        // buffers folded into this entry
  int64_t total_bytes() const { return bytes * count; }
  std::string shape;        // "bf16[6144,21504]"
  std::string instruction;  // the HLO instruction that defines it ("all-gather-done.12", "param.3")
  std::string opcode;       // its opcode ("all-gather-done", "fusion", "parameter")
  std::string op_name;      // its op_name metadata ("jit(step)/checkpoint/dot_general"); may be empty
  PeakBufferKind kind = PeakBufferKind::kTemporary;
  // The buffer's live range as fractions of the schedule (0: the first instruction, 1: the
  // last); arguments and outputs span [0, 1].
  double defined_at = 0, last_use = 1;
};

struct HbmPeakReport {
  int64_t argument_bytes = 0;
  int64_t output_bytes = 0;
  int64_t constant_bytes = 0;
  int64_t alias_bytes = 0;           // outputs written into donated arguments (not counted twice)
  int64_t temp_arena_bytes = 0;      // the temp arena after reuse (its fullest point + fragmentation)
  int64_t peak_live_temp_bytes = 0;  // the most temp bytes live at once
  int64_t loop_scratch_bytes = 0;    // the largest arena of a loop (condition + body), branch or callee
  // The instruction at whose position the most temp bytes are live, and its op_name.
  std::string peak_instruction, peak_op_name;
  double peak_at = 0;  // its position as a fraction of the schedule
  // Bytes live at the peak per kind (arguments and outputs included; index: the kind).
  std::array<int64_t, kNumPeakBufferKinds> bytes_by_kind{};
  int64_t bytes_of(PeakBufferKind kind) const { return bytes_by_kind[static_cast<int>(kind)]; }
  // The entries holding the most bytes at the peak (buffers alike folded), most first (at most
  // the planner's limit).
  std::vector<PeakBuffer> buffers;
  // The split (arguments, outputs, arena, live temps, fragmentation), bytes per kind and the
  // first max_buffers entries, one per line.
  std::string ToString(size_t max_buffers = 10) const;
};

}  // namespace jx::tpu
