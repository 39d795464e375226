// Internal to the CPU backend: an elementwise HLO expression compiled into a small program
// that computes a tile of the result (elements [start, start + n) in row-major order)
// without touching the HLO graph per element.
//
// Compilation walks the expression from its root once. Shape ops (broadcast, transpose,
// reshape, bitcast, slice, reverse, copy) become index maps composed down to the leaves, so
// a leaf (an input buffer or a constant) is loaded straight from memory at the right
// positions: contiguous leaves are used in place, scalars are splatted, a leaf under one
// index stage (broadcasts, transposes, slices) is copied run by run along the innermost dim
// (a broadcast along it is a splat per run), and the rest gathered through an index vector
// computed per strip with an odometer. Iota is an index map too.
// Every elementwise op becomes one vectorized loop over the tile (tile_ops.h); an (op, type)
// pair without a native loop runs through the reference evaluator on the tile (a scalar
// fallback, per op). Tile values live in per-thread scratch registers, reused once their
// last reader ran, so the whole working set of a tile stays in L1/L2 and only the root is
// written to memory.
//
//   TileProgram p = TileProgram::Compile(fused_root, ParameterLeaves(), 2048).value();
//   p.Evaluate(inputs, start, n, out + start * p.element_size());
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "jx/compiler/hlo/hlo_instruction.h"
#include "jx/compiler/hlo/hlo_module.h"
#include "jx/lax/kernels/elementwise.h"

namespace jx::cpu::internal {

// While alive, collects the ops that tile programs compiled on this thread run on the
// reference evaluator per tile (an (op, type) pair without a native loop), so kernel
// selection can count them as fallbacks whichever kernel compiled the program. Recorders
// nest (a loop body compiled while its while kernel is built): the innermost one records.
class TileFallbackRecorder {
 public:
  TileFallbackRecorder();
  ~TileFallbackRecorder();
  TileFallbackRecorder(const TileFallbackRecorder&) = delete;
  TileFallbackRecorder& operator=(const TileFallbackRecorder&) = delete;
  // "op type, op type" of the evaluator-run ops recorded so far ("" when none).
  const std::string& ops() const { return ops_; }
  static void Record(const std::string& op_names);

 private:
  TileFallbackRecorder* parent_;
  std::string ops_;
};

// Maps an instruction of the expression to the input slot it is read from, or -1 when the
// instruction is to be computed by the program.
using LeafResolver = std::function<int(const hlo::HloInstruction*)>;
// Fusion parameters are inputs, numbered by parameter_number.
LeafResolver ParameterLeaves();
// The operands of `root` are inputs, numbered by operand index (a lone instruction).
LeafResolver OperandLeaves(const hlo::HloInstruction* root);

// x_j = offset + mult * q[q_dim] (q_dim -1: constant offset) for each dim j of an
// instruction, q being a multi-index over the current stage's dims.
struct AffineDim {
  int64_t q_dim = -1;
  int64_t mult = 0;
  int64_t offset = 0;
};
// One stage of an index map: L_out = offset + sum_k q_k * strides_k, q = the input linear
// index delinearized over `dims`.
struct IndexStage {
  std::vector<int64_t> dims;
  std::vector<int64_t> strides;
  int64_t offset = 0;
};
// From the program's linear output index to positions of an instruction's elements.
struct IndexMap {
  std::vector<IndexStage> stages;  // finished stages (a reshape ends one)
  std::vector<int64_t> q_dims;     // the current stage's input dims
  std::vector<AffineDim> x;        // per dim of the instruction
  static IndexMap Identity(absl::Span<const int64_t> dims);
};

class TileProgram {
 public:
  // Compiles the value of `root` evaluated at `root_map` (identity over root's dims unless
  // given: a reduce reads its operand through a transposing map). Fails (Unimplemented) when
  // the expression holds an instruction that is neither a leaf, a shape op nor elementwise.
  static absl::StatusOr<std::unique_ptr<TileProgram>> Compile(
      const hlo::HloInstruction* root, const LeafResolver& leaves, int64_t tile_elements,
      const IndexMap* root_map = nullptr);
  ~TileProgram();

  // Computes elements [start, start + n) (n <= tile_elements()) into out (dense, the root's
  // element type). inputs[k] points at input slot k's buffer. With in_place, out may alias
  // an input read at the same positions (the result is staged in scratch first).
  void Evaluate(const void* const* inputs, int64_t start, int64_t n, void* out,
                bool in_place = false) const;

  int64_t tile_elements() const { return tile_; }
  // Elements each op runs over at a time (a strip of the tile, sized to stay in L1).
  int64_t strip_elements() const { return strip_; }
  int64_t element_size() const { return esize_; }
  int num_inputs() const { return num_inputs_; }
  // True when every load of input `slot` reads position i for output element i (so the
  // input may be the output buffer itself, block by block).
  bool InputReadInPlace(int slot) const;
  // Number of loads that compute a source index per element (gathers through a reshape
  // that mixes dims, and iota); the others are contiguous, scalar or loaded run by run (tests).
  int num_indexed_loads() const;
  // True when every strip is a list of kernel calls on fixed operand slots: the program has
  // only contiguous loads (at most 8), scalars read as one value and native ops (tests).
  bool straight() const { return straight_; }
  // Number of ops that run through the scalar evaluator fallback (tests).
  int num_fallback_ops() const;
  // Those ops as "opcode type, ..." (for JX_LOG_COMPILES).
  std::string FallbackOpNames() const;

 private:
  struct Node;
  struct IndexedLoad;
  struct ScalarVariants;
  TileProgram() = default;
  // A node's operand nodes.
  absl::Span<const int> operands(const Node& n) const;

  // Straight programs (straight()): a strip is the steps' kernel calls, without the general
  // per-node dispatch (a seventh of a chain's time with kilobyte strips).
  struct Step;
  void EvaluateStraight(const void* const* inputs, int64_t start, int64_t n, void* out,
                        bool in_place) const;

  std::vector<Node> nodes_;
  std::vector<int> operand_nodes_;  // the ops' operands, each op's a range
  std::vector<IndexedLoad> indexed_loads_;
  std::vector<ScalarVariants> scalar_variants_;
  std::vector<const hlo::HloInstruction*> fallback_ops_;  // in fallback_module_
  bool straight_ = false;
  std::vector<Step> steps_;  // straight programs: the native ops in order
  int64_t tile_ = 0;
  int64_t strip_ = 0;  // elements each op runs over at a time (<= tile_, fits L1)
  int64_t esize_ = 0;
  int num_inputs_ = 0;
  int num_registers_ = 0;
  std::unique_ptr<hlo::HloModule> fallback_module_;  // synthetic [tile] ops for fallbacks
  // Parameters of parameterized ops (reduce-precision's bits), read as scalar operands.
  std::vector<std::unique_ptr<lax::kernels::ReducePrecisionBits>> op_params_;
};

}  // namespace jx::cpu::internal
