#include "jx/compiler/backend/cpu/generic_reduce_expander.h"

#include <algorithm>
#include <vector>

#include "absl/container/flat_hash_map.h"

#include "jx/compiler/backend/cpu/cpu_kernels.h"
#include "jx/compiler/backend/cpu/scalar_semantics.h"
#include "jx/compiler/backend/cpu/vector_computation.h"
#include "jx/compiler/hlo/hlo_builder.h"
#include "jx/compiler/hlo/hlo_computation.h"
#include "jx/compiler/hlo/instruction_prefetch.h"
#include "jx/compiler/hlo/status_macros.h"
#include "jx/compiler/hlo/str_util.h"

namespace jx::cpu {
namespace {

using hlo::HloBuilder;
using hlo::HloComputation;
using hlo::HloInstruction;
using hlo::HloOpcode;
using hlo::Shape;
using hlo::ShapeUtil;

constexpr int64_t kProbeTileElements = 2048;

bool HasNativeKernel(const HloInstruction& reduce) {
  if (reduce.operand_count() == 2) return internal::SimpleBinaryReducer(*reduce.to_apply()).has_value();
  if (reduce.operand_count() == 4) {
    return internal::MakeLibraryArgReduceKernel(reduce).ok() ||
           internal::MakeArgReduceKernel(reduce, kProbeTileElements).ok();
  }
  return false;
}

absl::StatusOr<HloInstruction*> Expand(HloInstruction* reduce) {
  HloComputation& c = *reduce->parent();
  HloBuilder b(&c);
  const size_t n = static_cast<size_t>(reduce->operand_count()) / 2;
  const Shape& in_shape = reduce->operand(0)->shape();
  absl::Span<const int64_t> dims = reduce->dimensions();
  std::vector<int64_t> perm, kept;
  int64_t m = 1, cols = 1;
  for (int64_t d = 0; d < in_shape.rank(); ++d) {
    if (std::find(dims.begin(), dims.end(), d) == dims.end()) {
      perm.push_back(d);
      kept.push_back(in_shape.dimensions(d));
      m *= in_shape.dimensions(d);
    }
  }
  for (int64_t d : dims) {
    perm.push_back(d);
    cols *= in_shape.dimensions(d);
  }
  std::vector<HloInstruction*> acc, mats;
  for (size_t k = 0; k < n; ++k) {
    HloInstruction* init = reduce->mutable_operand(static_cast<int64_t>(n + k));
    HLO_ASSIGN_OR_RETURN(HloInstruction * a, b.Broadcast(init, {m}, {}));
    acc.push_back(a);
    HLO_ASSIGN_OR_RETURN(HloInstruction * t, b.Transpose(reduce->mutable_operand(static_cast<int64_t>(k)), perm));
    HLO_ASSIGN_OR_RETURN(HloInstruction * mat, b.Reshape(t, {m, cols}));
    mats.push_back(mat);
  }
  std::vector<HloInstruction*> outs;
  if (m == 0 || cols == 0) {
    for (size_t k = 0; k < n; ++k) {
      HLO_ASSIGN_OR_RETURN(HloInstruction * o, b.Broadcast(reduce->mutable_operand(static_cast<int64_t>(n + k)), kept, {}));
      outs.push_back(o);
    }
  } else {
    auto columns = [&](const std::vector<HloInstruction*>& xs, int64_t start, int64_t stop)
        -> absl::StatusOr<std::vector<HloInstruction*>> {
      std::vector<HloInstruction*> out;
      for (HloInstruction* x : xs) {
        HLO_ASSIGN_OR_RETURN(HloInstruction * s, b.Slice(x, {0, start}, {m, stop}, {1, 1}));
        HLO_ASSIGN_OR_RETURN(HloInstruction * r, b.Reshape(s, {m * (stop - start)}));
        out.push_back(r);
      }
      return out;
    };
    while (cols > 1) {
      const int64_t h = cols / 2;
      if (cols % 2 == 1) {
        HLO_ASSIGN_OR_RETURN(std::vector<HloInstruction*> last, columns(mats, cols - 1, cols));
        HLO_ASSIGN_OR_RETURN(acc, internal::ApplyToVectors(b, *reduce->to_apply(), acc, last, m));
      }
      HLO_ASSIGN_OR_RETURN(std::vector<HloInstruction*> first, columns(mats, 0, h));
      HLO_ASSIGN_OR_RETURN(std::vector<HloInstruction*> second, columns(mats, h, 2 * h));
      HLO_ASSIGN_OR_RETURN(std::vector<HloInstruction*> combined, internal::ApplyToVectors(b, *reduce->to_apply(), first, second, m * h));
      for (size_t k = 0; k < n; ++k) {
        HLO_ASSIGN_OR_RETURN(mats[k], b.Reshape(combined[k], {m, h}));
      }
      cols = h;
    }
    HLO_ASSIGN_OR_RETURN(std::vector<HloInstruction*> last, columns(mats, 0, 1));
    HLO_ASSIGN_OR_RETURN(std::vector<HloInstruction*> final_acc, internal::ApplyToVectors(b, *reduce->to_apply(), acc, last, m));
    for (HloInstruction* f : final_acc) {
      HLO_ASSIGN_OR_RETURN(HloInstruction * o, b.Reshape(f, kept));
      outs.push_back(o);
    }
  }
  if (n == 1) return outs[0];
  return b.Tuple(outs);
}

}  // namespace

absl::StatusOr<bool> GenericReduceExpander::Run(hlo::HloModule* module) {
  bool changed = false;
  for (HloComputation* c : module->MakeComputationPostOrder()) {
    const auto is_reduce = [](const HloInstruction& instr) { return instr.opcode() == HloOpcode::kReduce; };
    if (!AnyInstruction(*c, is_reduce)) continue;  // most computations
    for (HloInstruction* instr : c->MakeInstructionPostOrder()) {
      if (!is_reduce(*instr) || instr->to_apply() == nullptr) continue;
      if (HasNativeKernel(*instr) || !internal::IsVectorizable(*instr->to_apply())) continue;
      HLO_ASSIGN_OR_RETURN(HloInstruction * expanded, Expand(instr));
      HLO_RETURN_IF_ERROR(c->ReplaceInstruction(instr, expanded));
      changed = true;
    }
  }
  return changed;
}

}  // namespace jx::cpu
