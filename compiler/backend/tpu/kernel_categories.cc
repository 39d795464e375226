#include "jx/compiler/backend/tpu/kernel_categories.h"

#include <algorithm>
#include <map>

#include "absl/strings/str_format.h"
#include "jx/compiler/analysis/computation_runs.h"
#include "jx/compiler/backend/tpu/attention_fusion.h"
#include "jx/compiler/backend/tpu/mxu_feed.h"
#include "jx/compiler/backend/tpu/tpu_cost_model.h"

namespace jx::tpu {
namespace {

using hlo::ExecutionUnit;
using hlo::HloInstruction;
using hlo::HloOpcode;

bool IsContraction(HloOpcode op) { return op == HloOpcode::kDot || op == HloOpcode::kConvolution; }

bool IsDynamicSlice(HloOpcode op) { return op == HloOpcode::kDynamicSlice || op == HloOpcode::kGather; }

bool IsDynamicUpdate(HloOpcode op) {
  return op == HloOpcode::kDynamicUpdateSlice || op == HloOpcode::kScatter;
}

// The category of a fusion, from what its fused computation does.
std::string FusionCategory(const HloInstruction& fusion) {
  const hlo::HloComputation* fused = fusion.fused_instructions_computation();
  if (fused == nullptr) return "other";
  if (IsAttentionFusion(fusion)) return "attention fusion";
  bool computes = false, converts = false;
  for (const HloInstruction* instr : fused->instructions()) {
    if (IsContraction(instr->opcode())) return "convolution fusion";
    const ExecutionUnit unit = hlo::OpcodeUnit(instr->opcode());
    if (instr->opcode() == HloOpcode::kConvert) {
      converts = true;
    } else if (unit == ExecutionUnit::kVector) {
      computes = true;
    }
  }
  const HloOpcode root = fused->root_instruction()->opcode();
  if (fusion.fusion_kind() == hlo::FusionKind::kInput || root == HloOpcode::kReduce) return "reduce fusion";
  if (IsDynamicUpdate(root)) return "dynamic-update-slice";
  if (IsDynamicSlice(root) && !computes) return "dynamic-slice";
  if (computes) return "loop fusion";
  return converts ? "convert" : "data formatting";
}

}  // namespace

std::string KernelCategoryOf(const HloInstruction& instr) {
  const HloOpcode op = instr.opcode();
  if (op == HloOpcode::kFusion) return FusionCategory(instr);
  if (IsContraction(op)) return "convolution";
  if (op == HloOpcode::kConvert) return "convert";
  if (op == HloOpcode::kCopy || op == HloOpcode::kTranspose) return "data formatting";
  if (IsDynamicSlice(op)) return "dynamic-slice";
  if (IsDynamicUpdate(op)) return "dynamic-update-slice";
  if (op == HloOpcode::kReduce) return "reduce";
  if (instr.IsElementwise()) return "non-fusion elementwise";
  return "other";
}

absl::StatusOr<std::vector<KernelCategory>> TpuKernelCategories(const hlo::HloModule& module,
                                                                const TpuChipSpec& spec) {
  if (module.entry_computation() == nullptr) {
    return absl::InvalidArgumentError("TpuKernelCategories: the module has no entry computation");
  }
  const hlo::ComputationRuns runs = hlo::CountComputationRuns(module);
  TpuCostModel model(spec);
  std::map<std::string, KernelCategory> by_name;
  for (const hlo::HloComputation* computation : module.MakeComputationPostOrder()) {
    const double times = computation == module.entry_computation()
                             ? 1.0
                             : static_cast<double>(runs.RunsOf(computation));
    if (times <= 0) continue;  // fused computations, reducers: part of their kernel
    for (const HloInstruction* instr : computation->instructions()) {
      const ExecutionUnit unit = hlo::OpcodeUnit(instr->opcode());
      if (unit == ExecutionUnit::kNone || unit == ExecutionUnit::kControlFlow ||
          unit == ExecutionUnit::kNetwork || IsMxuFeed(*instr)) {
        continue;
      }
      const hlo::TargetCost t = model.Cost(*instr).target;
      KernelCategory& c = by_name[KernelCategoryOf(*instr)];
      c.kernels += times;
      c.seconds += times * t.seconds;
      c.compute_seconds += times * t.compute_seconds;
      c.vpu_seconds += times * t.unit(ExecutionUnit::kVector);
      c.memory_seconds += times * t.memory_seconds;
      c.overhead_seconds += times * t.overhead_seconds;
      c.hbm_bytes += times * t.hbm_bytes;
    }
  }
  std::vector<KernelCategory> out;
  for (auto& [name, c] : by_name) {
    c.name = name;
    out.push_back(c);
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const KernelCategory& a, const KernelCategory& b) { return a.seconds > b.seconds; });
  return out;
}

std::string FormatKernelCategories(const std::vector<KernelCategory>& categories) {
  double total = 0;
  for (const KernelCategory& c : categories) total += c.seconds;
  std::string out = absl::StrFormat("  %-22s %10s %12s %6s %12s %12s %12s %12s\n", "kernel category", "kernels",
                                    "time(ms)", "%", "compute(ms)", "vpu(ms)", "memory(ms)", "overhead(ms)");
  for (const KernelCategory& c : categories) {
    absl::StrAppendFormat(&out, "  %-22s %10.0f %12.3f %6.1f %12.3f %12.3f %12.3f %12.3f\n", c.name, c.kernels,
                          c.seconds * 1e3, total > 0 ? 100 * c.seconds / total : 0.0, c.compute_seconds * 1e3,
                          c.vpu_seconds * 1e3, c.memory_seconds * 1e3, c.overhead_seconds * 1e3);
  }
  return out;
}

}  // namespace jx::tpu
