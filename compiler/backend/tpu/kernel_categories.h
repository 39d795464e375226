// Where a TPU program's kernel time goes, by kind of kernel: the categories of XLA's TPU op
// profile (xprof's "op profile" groups HLO ops the same way), so a plan can be compared with a
// profile of the real run. Each kernel (an instruction of the entry or of a while/call/
// conditional body that runs code; a fusion is one kernel) is costed by the TPU cost model
// and counted as often as its computation runs per step (while bodies x their trip count).
// Collectives are the network's, not kernels, and are left out.
//
//   attention fusion     an attention kernel (attention_fusion.h: QK^T, softmax, P.V per block)
//   convolution fusion   a fusion around a dot/convolution (output fusion: its epilogue)
//   convolution          an unfused dot or convolution
//   reduce fusion        an input fusion (a reduce and what it reads: softmax/layer-norm sums)
//   loop fusion          an elementwise loop fusion that computes something
//   data formatting      copies, transposes, and fusions of only data movement
//   convert              converts, and fusions of only converts and data movement
//   dynamic-slice        dynamic-slice/gather and fusions rooted at one
//   dynamic-update-slice dynamic-update-slice/scatter and fusions rooted at one
//   non-fusion elementwise / reduce / other   unfused instructions of those kinds
//
//   HLO_ASSIGN_OR_RETURN(auto categories, tpu::TpuKernelCategories(*module, v5e));
//   std::cout << tpu::FormatKernelCategories(categories);   // slowest category first
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "jx/compiler/backend/tpu/tpu_chip_spec.h"
#include "jx/compiler/hlo/hlo_module.h"

namespace jx::tpu {

struct KernelCategory {
  std::string name;             // "loop fusion"
  double kernels = 0;           // kernel runs per step
  double seconds = 0;           // summed kernel times (the cost model's, overhead included)
  double compute_seconds = 0;   // the busier of MXU/VPU, summed
  double vpu_seconds = 0;       // of which the vector units'
  double memory_seconds = 0;    // the slower of HBM/VMEM, summed
  double overhead_seconds = 0;  // launches and grid steps
  double hbm_bytes = 0;
};

// The XLA op-profile category of one kernel (see the file comment).
std::string KernelCategoryOf(const hlo::HloInstruction& instr);

// The module's kernels by category, slowest category first. Fails without an entry.
absl::StatusOr<std::vector<KernelCategory>> TpuKernelCategories(const hlo::HloModule& module,
                                                                const TpuChipSpec& spec);

// One line per category: kernels, seconds, % of all kernel time, compute/VPU/memory/overhead.
std::string FormatKernelCategories(const std::vector<KernelCategory>& categories);

}  // namespace jx::tpu
