// Kernel selection for the CPU backend: the one place that decides which kernel an entry
// instruction runs as. Native kernels are tried from the most specialized (fused loops, GEMM
// with epilogue) to the general ones; the reference evaluator is the last resort, and taking
// it is never silent: JX_LOG_COMPILES names the instruction and why, and
// FallbackPolicy::kError turns it into a compile error (the no-fallback coverage test).
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "jx/compiler/backend/cpu/collective_kernels.h"
#include "jx/compiler/backend/cpu/cpu_kernels.h"
#include "jx/compiler/backend/cpu/tile_program.h"
#include "jx/compiler/hlo/hlo_computation.h"
#include "jx/compiler/hlo/instruction_prefetch.h"
#include "jx/compiler/hlo/str_util.h"

namespace jx::cpu::internal {
namespace {

using hlo::FusionKind;
using hlo::HloInstruction;
using hlo::HloOpcode;

bool LogFallbacks() {
  const char* v = std::getenv("JX_LOG_COMPILES");
  return v != nullptr && v[0] != '\0' && std::string_view(v) != "0";
}

// Whether a fusion's computation holds kernels of its own: a fusion, or several dots. Reads
// each instruction's opcode, loading it a few instructions ahead (a 100k-op fused chain is
// past the cache, and its instructions need not lie in address order).
bool FusesKernels(const HloInstruction& fusion) {
  int64_t dots = 0;
  bool fuses = false;
  hlo::ForEachInStorageOrder(
      *fusion.fused_instructions_computation(), [](const HloInstruction* ahead) { __builtin_prefetch(ahead); },
      [&](const HloInstruction* instr) {
        dots += instr->opcode() == HloOpcode::kDot ? 1 : 0;
        fuses = instr->opcode() == HloOpcode::kFusion || dots > 1;
        return !fuses;
      });
  return fuses;
}

// The native kernel for instr, or the reasons each candidate declined.
absl::StatusOr<std::unique_ptr<Kernel>> SelectNative(const HloInstruction& instr,
                                                     const KernelSelectionOptions& options) {
  const int64_t tile_elements = options.tile_elements;
  std::string declined;
  auto attempt = [&](absl::StatusOr<std::unique_ptr<Kernel>> k) -> std::unique_ptr<Kernel> {
    if (k.ok()) return *std::move(k);
    if (!declined.empty()) declined += "; ";
    declined += std::string(k.status().message());
    return nullptr;
  };
  std::unique_ptr<Kernel> kernel;
  switch (instr.opcode()) {
    case HloOpcode::kFusion: {
      const HloInstruction* root = instr.fused_instructions_computation()->root_instruction();
      if (FusesKernels(instr)) {
        // A target's kernel made of kernels (the TPU's attention fusion): each nested kernel
        // runs as it would on its own.
        kernel = attempt(MakeUnfusedKernel(instr, options));
      } else if (root->opcode() == HloOpcode::kReduce && root->operand_count() == 4) {
        if ((kernel = attempt(MakeLibraryArgReduceKernel(instr)))) break;
        kernel = attempt(MakeArgReduceKernel(instr, tile_elements));
      } else if (root->opcode() == HloOpcode::kReduce) {
        if ((kernel = attempt(MakeLibraryReduceKernel(instr)))) break;
        if ((kernel = attempt(MakeColumnReduceKernel(instr, tile_elements)))) break;
        if ((kernel = attempt(MakeReduceKernel(instr, tile_elements)))) break;
        kernel = attempt(MakeTypedReduceKernel(instr, tile_elements));
      } else if (instr.fusion_kind() == FusionKind::kCustom) {
        // The backend's own fusions: WidenedWindowFusion's convert -> f64 window -> convert,
        // MaskedGatherFusion's select of a gather and a fill value.
        if ((kernel = attempt(MakeScanKernel(instr)))) break;
        if ((kernel = attempt(MakeReduceWindowKernel(instr)))) break;
        kernel = attempt(MakeMaskedGatherKernel(instr, tile_elements));
      } else if (instr.fusion_kind() == FusionKind::kOutput || root->opcode() == HloOpcode::kDot ||
                 root->opcode() == HloOpcode::kConvolution) {
        if ((kernel = attempt(MakeDotKernel(instr, tile_elements)))) break;
        kernel = attempt(MakeConvKernel(instr, tile_elements));
      } else {
        if ((kernel = attempt(MakeLoopKernel(instr, tile_elements)))) break;
        // An op a tile program cannot hold (concatenate, pad): the fusion op by op.
        kernel = attempt(MakeUnfusedKernel(instr, options));
      }
      break;
    }
    case HloOpcode::kReduce:
      if (instr.operand_count() == 4) {
        if ((kernel = attempt(MakeLibraryArgReduceKernel(instr)))) break;
        kernel = attempt(MakeArgReduceKernel(instr, tile_elements));
        break;
      }
      if ((kernel = attempt(MakeLibraryReduceKernel(instr)))) break;
      if ((kernel = attempt(MakeColumnReduceKernel(instr, tile_elements)))) break;
      if ((kernel = attempt(MakeReduceKernel(instr, tile_elements)))) break;
      kernel = attempt(MakeTypedReduceKernel(instr, tile_elements));
      break;
    case HloOpcode::kDot:
      kernel = attempt(MakeDotKernel(instr, tile_elements));
      break;
    case HloOpcode::kConvolution:
      kernel = attempt(MakeConvKernel(instr, tile_elements));
      break;
    case HloOpcode::kReduceWindow:
      if ((kernel = attempt(MakeScanKernel(instr)))) break;
      kernel = attempt(MakeReduceWindowKernel(instr));
      break;
    case HloOpcode::kSort:
      kernel = attempt(MakeSortKernel(instr));
      break;
    case HloOpcode::kScatter:
      kernel = attempt(MakeScatterKernel(instr));
      break;
    case HloOpcode::kWhile: case HloOpcode::kConditional: case HloOpcode::kCall:
      kernel = attempt(MakeControlFlowKernel(instr, options));
      break;
    case HloOpcode::kDynamicSlice: case HloOpcode::kDynamicUpdateSlice:
      kernel = attempt(MakeDynamicSliceKernel(instr));
      break;
    case HloOpcode::kGather:
      kernel = attempt(MakeGatherKernel(instr));
      break;
    case HloOpcode::kAllReduce: case HloOpcode::kAllGather: case HloOpcode::kReduceScatter:
    case HloOpcode::kAllToAll: case HloOpcode::kCollectivePermute: case HloOpcode::kPartitionId:
    case HloOpcode::kAllGatherStart: case HloOpcode::kAllGatherDone:
    case HloOpcode::kAllReduceStart: case HloOpcode::kAllReduceDone:
    case HloOpcode::kAllToAllStart: case HloOpcode::kAllToAllDone:
    case HloOpcode::kCollectivePermuteStart: case HloOpcode::kCollectivePermuteDone:
    case HloOpcode::kReduceScatterStart: case HloOpcode::kReduceScatterDone:
      kernel = attempt(MakeCollectiveKernel(instr));
      break;
    case HloOpcode::kBroadcast: case HloOpcode::kTranspose: case HloOpcode::kSlice:
    case HloOpcode::kReverse: case HloOpcode::kReshape: case HloOpcode::kBitcast:
    case HloOpcode::kIota: case HloOpcode::kCopy:
      if ((kernel = attempt(MakeDataMovementKernel(instr)))) break;
      kernel = attempt(MakeLoopKernel(instr, tile_elements));
      break;
    case HloOpcode::kPad: case HloOpcode::kConcatenate: case HloOpcode::kBitcastConvert:
      kernel = attempt(MakeDataMovementKernel(instr));
      break;
    case HloOpcode::kCustomCall:
      if ((kernel = attempt(MakeAllocateBufferKernel(instr)))) break;
      if ((kernel = attempt(MakeLinalgKernel(instr)))) break;
      kernel = attempt(MakeHostCallbackKernel(instr));
      break;
    default:
      if (instr.IsElementwise()) {
        kernel = attempt(MakeLoopKernel(instr, tile_elements));
      } else {
        declined = "no native kernel for this opcode";
      }
      break;
  }
  if (kernel != nullptr) return kernel;
  return absl::UnimplementedError(declined);
}

}  // namespace

absl::StatusOr<std::unique_ptr<Kernel>> SelectKernel(const HloInstruction& instr,
                                                     const KernelSelectionOptions& options) {
  TileFallbackRecorder per_tile_fallbacks;
  absl::StatusOr<std::unique_ptr<Kernel>> native = SelectNative(instr, options);
  const std::string what =
      hlo::StrCat("%", instr.name(), " = ", instr.shape().ToString(false), " ",
                  hlo::HloOpcodeString(instr.opcode()),
                  instr.opcode() == HloOpcode::kFusion
                      ? hlo::StrCat(" (", hlo::FusionKindToString(instr.fusion_kind()), ")")
                      : std::string());
  if (native.ok()) {
    // A native kernel whose tile programs still run some ops on the evaluator is a partial
    // fallback: as loud as a whole one.
    if (per_tile_fallbacks.ops().empty()) return native;
    if (options.fallback == FallbackPolicy::kError) {
      return absl::UnimplementedError(
          hlo::StrCat("no native CPU loop for ", per_tile_fallbacks.ops(), " in ", what));
    }
    if (LogFallbacks()) {
      std::fprintf(stderr, "jx: CPU backend runs %s on the reference evaluator per tile (slow), in %s\n",
                   per_tile_fallbacks.ops().c_str(), what.c_str());
    }
    return native;
  }
  if (options.fallback == FallbackPolicy::kError) {
    return absl::UnimplementedError(hlo::StrCat("no native CPU kernel for ", what, ": ",
                                                native.status().message()));
  }
  if (LogFallbacks()) {
    std::fprintf(stderr, "jx: CPU backend runs %s on the reference evaluator (slow): %s\n",
                 what.c_str(), std::string(native.status().message()).c_str());
  }
  return MakeFallbackKernel(instr);
}

}  // namespace jx::cpu::internal
