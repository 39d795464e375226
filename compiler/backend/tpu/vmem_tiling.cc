#include "jx/compiler/backend/tpu/vmem_tiling.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "jx/compiler/backend/tpu/attention_fusion.h"
#include "jx/compiler/backend/tpu/mxu_tiling.h"
#include "jx/compiler/backend/tpu/tpu_layout.h"
#include "jx/compiler/hlo/hlo_computation.h"
#include "jx/compiler/hlo/hlo_module.h"

namespace jx::tpu {
namespace {

using hlo::HloInstruction;
using hlo::HloOpcode;
using hlo::Shape;

bool IsKernel(const HloInstruction& instr) {
  return instr.opcode() == HloOpcode::kFusion || instr.opcode() == HloOpcode::kDot ||
         instr.opcode() == HloOpcode::kConvolution;
}

void AppendArrayLeaves(const Shape& shape, std::vector<Shape>* out) {
  if (shape.IsTuple()) {
    for (const Shape& e : shape.tuple_shapes()) AppendArrayLeaves(e, out);
  } else if (shape.IsArray()) {
    out->push_back(shape);
  }
}

// The kernel operands (fusion parameter numbers) that `value` reads, directly or through
// the fused ops that compute it (a fused convert or transpose of a parameter).
absl::flat_hash_set<int64_t> ParametersFeeding(const HloInstruction* value) {
  absl::flat_hash_set<int64_t> params;
  absl::flat_hash_set<const HloInstruction*> seen = {value};
  std::vector<const HloInstruction*> stack = {value};
  while (!stack.empty()) {
    const HloInstruction* instr = stack.back();
    stack.pop_back();
    if (instr->opcode() == HloOpcode::kParameter) params.insert(instr->parameter_number());
    for (const HloInstruction* op : instr->operands()) {
      if (seen.insert(op).second) stack.push_back(op);
    }
  }
  return params;
}

// Padded bytes of the kernel's operands in `which`; `fallback` when none (a dot of
// constants, say).
int64_t OperandBytes(const HloInstruction& kernel, const absl::flat_hash_set<int64_t>& which,
                     const Shape& fallback) {
  int64_t bytes = 0;
  for (int64_t i : which) bytes += PaddedBytes(kernel.operand(i)->shape());
  return which.empty() ? PaddedBytes(fallback) : bytes;
}

// Block sizes along one GEMM dim: whole tiles (granule) doubling up to the padded extent,
// and the padded extent itself (one block: the dim is not split).
std::vector<int64_t> BlockCandidates(int64_t extent, int64_t granule) {
  const int64_t whole = RoundUpTo(std::max<int64_t>(extent, 1), granule);
  std::vector<int64_t> sizes;
  for (int64_t b = granule; b < whole; b *= 2) sizes.push_back(b);
  sizes.push_back(whole);
  return sizes;
}

// The matmul batch x ([rows, k] x [k, cols]) as a grid of bb x [bm, bk] x [bk, bn] blocks (the
// Pallas TPU matmul's blocking; a leading batch entry in the grid when batch > 1): lhs, rhs
// and out are the padded bytes of the GEMM's inputs and of its output with the epilogue's
// operands, all batches together. Every candidate block shape of whole tiles is priced
// by the HBM bytes it moves plus its grid steps' fixed cost, counted as the HBM bytes moved
// in that time (~0.35 us at ~1.5 TB/s); the cheapest whose double-buffered blocks fit wins.
//   - K whole (gk = 1): the outer grid axis's block stays resident while the inner axis
//     streams (a block whose index does not change between steps is not fetched again),
//     the cheaper order is taken: hbm = min(L + R gm, R + L gn) + O.
//   - K split (gk > 1): an f32 accumulator block stays in VMEM while K is walked; every
//     operand block is read once per output block that needs it: hbm = L gn + R gm + O.
// Large blocks raise the arithmetic intensity a step sees from HBM (bm bn / (bm + bn) FLOPs
// per operand element), so a large matmul is compute-bound even in v4's 16 MiB of VMEM.
std::optional<hlo::VmemTiling> PlanMatmulBlocks(int64_t batch, int64_t rows, int64_t k, int64_t cols,
                                                int64_t lhs, int64_t rhs, int64_t out, int64_t vmem_bytes) {
  constexpr int64_t kStepOverheadBytes = 512 * 1024;
  const double lhs_per_elem = static_cast<double>(lhs) / static_cast<double>(batch * rows * k);
  const double rhs_per_elem = static_cast<double>(rhs) / static_cast<double>(batch * k * cols);
  const double out_per_elem = static_cast<double>(out) / static_cast<double>(batch * rows * cols);
  // One GEMM of the batch's bytes (the formulas above hold per GEMM; a step may take bb).
  const int64_t l = CeilDiv(lhs, batch), r = CeilDiv(rhs, batch), o = CeilDiv(out, batch);
  std::vector<int64_t> batch_blocks;
  for (int64_t bb = 1; bb < batch; bb *= 2) batch_blocks.push_back(bb);
  batch_blocks.push_back(batch);
  std::optional<hlo::VmemTiling> best;
  double best_cost = 0;
  for (int64_t bb : batch_blocks) {
    for (int64_t bm : BlockCandidates(rows, kSublanes)) {
      for (int64_t bn : BlockCandidates(cols, kLanes)) {
        for (int64_t bk : BlockCandidates(k, kLanes)) {
          const int64_t gb = CeilDiv(batch, bb);
          const int64_t gm = CeilDiv(rows, bm), gn = CeilDiv(cols, bn), gk = CeilDiv(k, bk);
          const double blocks = lhs_per_elem * static_cast<double>(bm * bk) +
                                rhs_per_elem * static_cast<double>(bk * bn) +
                                out_per_elem * static_cast<double>(bm * bn);
          const int64_t step = static_cast<int64_t>(2 * blocks * static_cast<double>(bb)) +
                               (gk > 1 ? bb * bm * bn * 4 : 0);
          if (step > vmem_bytes) continue;
          const int64_t per_gemm = (gk == 1 ? std::min(l + r * gm, r + l * gn) : l * gn + r * gm) + o;
          const int64_t hbm = batch * per_gemm;
          const int64_t steps = gb * gm * gn * gk;
          const double cost = static_cast<double>(hbm) + static_cast<double>(steps * kStepOverheadBytes);
          if (best && (cost > best_cost || (cost == best_cost && step >= best->vmem_bytes))) continue;
          hlo::VmemTiling t;
          if (batch > 1) {
            t.grid = {gb};
            t.block = {bb};
          }
          t.grid.insert(t.grid.end(), {gm, gn});
          t.block.insert(t.block.end(), {bm, bn});
          if (gk > 1) {
            t.grid.push_back(gk);
            t.block.push_back(bk);
          }
          t.steps = steps;
          t.vmem_bytes = step;
          t.hbm_bytes = hbm;
          best = std::move(t);
          best_cost = cost;
        }
      }
    }
  }
  return best;  // none when not even (8, 128) x (128, 128) blocks fit (a VMEM below 1 MiB)
}

std::optional<hlo::VmemTiling> PlanMatmul(const HloInstruction& kernel,
                                          const HloInstruction& dot, int64_t vmem_bytes) {
  // The matmul's inputs: the dot's own operands, or the fusion operands they are computed
  // from; every other fusion operand (a bias, a residual) travels with the output blocks.
  int64_t lhs = PaddedBytes(dot.operand(0)->shape());
  int64_t rhs = PaddedBytes(dot.operand(1)->shape());
  int64_t out = PaddedBytes(kernel.shape());
  if (&kernel != &dot) {
    const absl::flat_hash_set<int64_t> lhs_params = ParametersFeeding(dot.operand(0));
    const absl::flat_hash_set<int64_t> rhs_params = ParametersFeeding(dot.operand(1));
    lhs = OperandBytes(kernel, lhs_params, dot.operand(0)->shape());
    rhs = OperandBytes(kernel, rhs_params, dot.operand(1)->shape());
    for (int64_t i = 0; i < kernel.operand_count(); ++i) {
      if (!lhs_params.contains(i) && !rhs_params.contains(i)) {
        out += PaddedBytes(kernel.operand(i)->shape());
      }
    }
  }
  if (lhs + rhs + out <= vmem_bytes) return std::nullopt;
  const hlo::MxuTiling gemm = PlanMxuTiling(dot, TpuTargetOptions()).value();
  return PlanMatmulBlocks(std::max<int64_t>(gemm.batch, 1), std::max<int64_t>(gemm.m, 1),
                          std::max<int64_t>(gemm.k, 1), std::max<int64_t>(gemm.n, 1), lhs, rhs, out,
                          vmem_bytes);
}

Shape WithMajorDim(const Shape& shape, int64_t extent) {
  std::vector<int64_t> dims = hlo::SpanToVector(shape.dimensions());
  dims[0] = extent;
  return Shape(shape.element_type(), std::move(dims), shape.layout());
}

std::optional<hlo::VmemTiling> PlanStreaming(const HloInstruction& kernel, int64_t vmem_bytes) {
  std::vector<Shape> arrays;
  for (const HloInstruction* op : kernel.operands()) AppendArrayLeaves(op->shape(), &arrays);
  AppendArrayLeaves(kernel.shape(), &arrays);
  int64_t total = 0;
  const Shape* largest = nullptr;
  for (const Shape& s : arrays) {
    total += PaddedBytes(s);
    if (largest == nullptr || PaddedBytes(s) > PaddedBytes(*largest)) largest = &s;
  }
  if (total <= vmem_bytes || largest == nullptr || largest->rank() == 0) return std::nullopt;
  const Shape iteration = *largest;
  const int64_t extent = iteration.dimensions(0);
  // Blocks keep whole tiles of the iteration array when its major dim is tiled.
  const std::vector<hlo::Tile> tiles = TpuTilesFor(iteration);
  const int64_t granule = iteration.rank() <= 2 && !tiles.empty()
                              ? tiles[0].dimensions[tiles[0].dimensions.size() - iteration.rank()]
                              : 1;
  auto streamed = [&](const Shape& s) { return s.rank() > 0 && s.dimensions(0) == extent; };
  auto step_bytes = [&](int64_t block) {
    int64_t bytes = 0;
    for (const Shape& s : arrays) {
      bytes += streamed(s) ? 2 * PaddedBytes(WithMajorDim(s, block)) : PaddedBytes(s);
    }
    return bytes;
  };
  int64_t block = RoundUpTo(extent, granule);
  for (int64_t split = 2; block > granule && step_bytes(block) > vmem_bytes; split *= 2) {
    block = RoundUpTo(CeilDiv(extent, split), granule);
  }
  hlo::VmemTiling t;
  t.grid.assign(iteration.rank(), 1);
  t.block = hlo::SpanToVector(iteration.dimensions());
  t.grid[0] = CeilDiv(extent, block);
  t.block[0] = block;
  t.steps = t.grid[0];
  t.vmem_bytes = step_bytes(block);
  for (const Shape& s : arrays) {
    t.hbm_bytes += streamed(s) ? t.steps * PaddedBytes(WithMajorDim(s, block)) : PaddedBytes(s);
  }
  return t;
}

// Whether the value may stay in VMEM between its producer and its readers.
bool MayLiveInVmem(const HloInstruction& instr) {
  switch (instr.opcode()) {
    case HloOpcode::kParameter: case HloOpcode::kConstant: case HloOpcode::kTuple:
    case HloOpcode::kGetTupleElement: case HloOpcode::kBitcast: case HloOpcode::kWhile:
    case HloOpcode::kCall: case HloOpcode::kConditional:
      return false;
    default:
      break;
  }
  if (!instr.shape().IsArray() || instr.IsRoot() || instr.users().empty() ||
      instr.has_vmem_tiling()) {
    return false;
  }
  for (const HloInstruction* user : instr.users()) {
    // Values crossing into another computation, or into a tuple (an output, a loop state),
    // and the operands of a kernel that streams from HBM stay in HBM.
    if (user->opcode() == HloOpcode::kTuple || user->opcode() == HloOpcode::kWhile ||
        user->opcode() == HloOpcode::kCall || user->opcode() == HloOpcode::kConditional ||
        user->opcode() == HloOpcode::kBitcast || user->has_vmem_tiling()) {
      return false;
    }
  }
  return true;
}

bool SetMemorySpace(HloInstruction* instr, int64_t space) {
  if (instr->shape().layout().memory_space == space) return false;
  hlo::Layout layout = instr->shape().layout();
  layout.memory_space = space;
  instr->mutable_shape()->set_layout(std::move(layout));
  return true;
}

// Places values in VMEM along the computation's order while half of VMEM has room.
bool AssignMemorySpaces(hlo::HloComputation* computation, int64_t vmem_bytes) {
  const std::vector<HloInstruction*> order = computation->MakeSequentialOrder();
  absl::flat_hash_map<const HloInstruction*, int64_t> position;
  for (size_t i = 0; i < order.size(); ++i) position[order[i]] = static_cast<int64_t>(i);
  const int64_t budget = vmem_bytes / 2;
  struct Live {
    int64_t last_use;
    int64_t bytes;
  };
  std::vector<Live> live;
  int64_t live_bytes = 0;
  bool changed = false;
  for (size_t i = 0; i < order.size(); ++i) {
    HloInstruction* instr = order[i];
    // Values whose last reader ran before this instruction give their space back.
    for (auto it = live.begin(); it != live.end();) {
      if (it->last_use < static_cast<int64_t>(i)) {
        live_bytes -= it->bytes;
        it = live.erase(it);
      } else {
        ++it;
      }
    }
    int64_t space = kHbmMemorySpace;
    if (MayLiveInVmem(*instr)) {
      const int64_t bytes = PaddedBytes(instr->shape());
      if (live_bytes + bytes <= budget) {
        int64_t last_use = static_cast<int64_t>(i);
        for (const HloInstruction* user : instr->users()) {
          last_use = std::max(last_use, position.at(user));
        }
        live.push_back({last_use, bytes});
        live_bytes += bytes;
        space = kVmemMemorySpace;
      }
    }
    if (instr->shape().IsArray() && instr->opcode() != HloOpcode::kParameter) {
      changed |= SetMemorySpace(instr, space);
    }
  }
  return changed;
}

}  // namespace

const HloInstruction* KernelDot(const HloInstruction& kernel) {
  if (kernel.opcode() == HloOpcode::kDot) return &kernel;
  const hlo::HloComputation* fused = kernel.opcode() == HloOpcode::kFusion
                                         ? kernel.fused_instructions_computation()
                                         : nullptr;
  if (fused == nullptr) return nullptr;
  for (const HloInstruction* instr : fused->instructions()) {
    if (instr->opcode() == HloOpcode::kDot) return instr;
  }
  return nullptr;
}

std::optional<hlo::VmemTiling> PlanVmemTiling(const HloInstruction& kernel, int64_t vmem_bytes, int64_t mxu_dim) {
  if (!IsKernel(kernel)) return std::nullopt;
  // An attention kernel's grid runs over its dots' batch dims and query row blocks
  // (attention_fusion.h).
  if (IsAttentionFusion(kernel)) return PlanAttentionKernel(kernel, vmem_bytes, mxu_dim);
  if (const HloInstruction* dot = KernelDot(kernel)) return PlanMatmul(kernel, *dot, vmem_bytes);
  return PlanStreaming(kernel, vmem_bytes);
}

absl::StatusOr<bool> VmemTilingPass::Run(hlo::HloModule* module) {
  bool changed = false;
  for (hlo::HloComputation* computation : module->computations()) {
    if (computation->IsFusionComputation()) continue;
    for (HloInstruction* instr : computation->instructions()) {
      std::optional<hlo::VmemTiling> plan = PlanVmemTiling(*instr, options_.vmem_bytes, options_.mxu_dim);
      if (!plan.has_value()) {
        if (instr->has_vmem_tiling()) {
          instr->ClearAttr(hlo::HloAttr::kVmemTiling);
          changed = true;
        }
        continue;
      }
      if (instr->has_vmem_tiling() && instr->vmem_tiling() == *plan) continue;
      instr->set_vmem_tiling(*std::move(plan));
      changed = true;
    }
    changed |= AssignMemorySpaces(computation, options_.vmem_bytes);
  }
  return changed;
}

}  // namespace jx::tpu
