#include "jx/compiler/backend/tpu/tpu_cost_model.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_format.h"
#include "jx/compiler/backend/linalg_cost.h"
#include "jx/compiler/backend/module_cost_conversion.h"
#include "jx/compiler/backend/tpu/kernel_roofline.h"
#include "jx/compiler/backend/tpu/mxu_feed.h"
#include "jx/compiler/backend/tpu/mxu_tiling.h"
#include "jx/compiler/backend/tpu/tpu_layout.h"
#include "jx/compiler/backend/tpu/vmem_tiling.h"
#include "jx/compiler/hlo/hlo_module.h"
#include "jx/compiler/hlo/str_util.h"

namespace jx::tpu {
namespace {

using hlo::ExecutionUnit;
using hlo::HloCost;
using hlo::HloInstruction;
using hlo::HloOpcode;
using hlo::PrimitiveType;

// The MXU plan of a dot or convolution: the one the MXU tiling pass recorded, or the one it
// would record for this chip (a module that did not go through the TPU passes).
hlo::MxuTiling MxuPlan(const HloInstruction& instr, const TpuChipSpec& spec) {
  if (instr.has_mxu_tiling()) return instr.mxu_tiling();
  absl::StatusOr<hlo::MxuTiling> plan = PlanMxuTiling(instr, TpuTargetOptions(spec));
  return plan.ok() ? *plan : hlo::MxuTiling{};
}

bool IsF64(const HloInstruction& instr) {
  if (instr.shape().IsArray() && instr.shape().element_type() == PrimitiveType::F64) return true;
  for (const HloInstruction* operand : instr.operands()) {
    if (operand->shape().IsArray() && operand->shape().element_type() == PrimitiveType::F64) {
      return true;
    }
  }
  return false;
}

// Integer dots run on the MXU's int8 path (TPU.md's int8 rate): a wider integer operand is
// split into bytes and the dot into int8 x int8 -> int32 passes, one per pair of byte pieces
// (i of lhs, j of rhs) whose product lands below the result's width (i + j < result bytes;
// higher products vanish modulo 2^bits). int8 takes 1 pass, int16 -> int32 4, int32 x int32
// -> int32 10, int64 36.
int64_t IntegerMatmulPasses(PrimitiveType lhs, PrimitiveType rhs, PrimitiveType result) {
  const int64_t lhs_bytes = hlo::ByteSizeOfPrimitiveType(lhs);
  const int64_t rhs_bytes = hlo::ByteSizeOfPrimitiveType(rhs);
  // The accumulation is at least int32 wide (the MXU's int8 path accumulates in int32).
  const int64_t result_bytes = std::max<int64_t>(4, hlo::ByteSizeOfPrimitiveType(result));
  int64_t passes = 0;
  for (int64_t i = 0; i < lhs_bytes; ++i) {
    for (int64_t j = 0; j < rhs_bytes; ++j) passes += i + j < result_bytes ? 1 : 0;
  }
  return passes;
}

// bf16 MXU passes of a floating-point contraction: f64 emulated, f32 by precision, bf16 and
// f16 one.
int64_t FloatMatmulPasses(PrimitiveType lhs, PrimitiveType rhs, hlo::Precision precision) {
  if (lhs == PrimitiveType::F64 || rhs == PrimitiveType::F64) return kF64MatmulPasses;
  if (lhs != PrimitiveType::F32 && rhs != PrimitiveType::F32) return 1;  // bf16 and f16: one pass
  switch (precision) {
    case hlo::Precision::kDefault: return 1;
    case hlo::Precision::kHigh: return kF32HighPasses;
    case hlo::Precision::kHighest: return kF32HighestPasses;
  }
  return 1;
}

// The passes of a dot or convolution instruction, for its operand types and precision.
MatmulPasses MatmulPassesOf(const HloInstruction& instr, const TpuChipSpec& spec) {
  const hlo::Shape& lhs = instr.operand(0)->shape();
  const hlo::Shape& rhs = instr.operand(1)->shape();
  if (!lhs.IsArray() || !rhs.IsArray() || !instr.shape().IsArray()) return MatmulPasses{};
  hlo::Precision precision = hlo::Precision::kDefault;
  for (hlo::Precision p : instr.precision_config().operand_precision) precision = std::max(precision, p);
  return MatmulPassesFor(spec, lhs.element_type(), rhs.element_type(), instr.shape().element_type(), precision);
}

// Bytes the MXUs read from and write to VMEM: the weights once, the streamed operand once per
// output-column tile (each tile streams all rows), the result once (partial sums accumulate
// in the MXU's result buffers); every pass re-reads its operands. Arrays as stored (tiled).
double MatmulOnchipBytes(const HloInstruction& instr, const hlo::MxuTiling& plan,
                         int64_t passes) {
  auto fed = [](const HloInstruction& operand) {
    return static_cast<double>(hlo::ShapeUtil::ElementsIn(operand.shape())) * MxuFeedBytesPerElement(operand);
  };
  const double lhs = fed(*instr.operand(0));
  const double rhs = fed(*instr.operand(1));
  const double out = static_cast<double>(PaddedBytes(instr.shape()));
  return static_cast<double>(passes) *
             (lhs * static_cast<double>(std::max<int64_t>(1, plan.n_tiles)) + rhs) +
         out;
}

// A kernel's traffic with memory as the chip stores it: each boundary byte the analysis
// counted, scaled by its array's padding to tiles, goes to HBM or, for a value the VMEM
// tiling pass placed in VMEM (memory space S(1)), stays in VMEM. An operand that is an MXU
// feed is read from the feed's source (mxu_feed.h).
struct KernelTraffic {
  double hbm_bytes = 0;
  double vmem_resident_bytes = 0;
};

bool InVmem(const hlo::Shape& shape) {
  return shape.IsArray() && shape.layout().memory_space == kVmemMemorySpace;
}

KernelTraffic Traffic(const HloInstruction& instr, const HloCost& cost) {
  KernelTraffic traffic;
  // `bytes` of `shape` as the analysis counts them, stored as `stored` is (per element: a
  // sliced MXU feed reads only its window of the stored source).
  auto per_element = [](const hlo::Shape& s, double bytes) {
    const int64_t elements = hlo::ShapeUtil::ElementsIn(s);
    return elements > 0 ? bytes / static_cast<double>(elements) : 0.0;
  };
  auto charge = [&](const hlo::Shape& shape, const hlo::Shape& stored, double bytes) {
    const double logical = static_cast<double>(hlo::ShapeUtil::ByteSizeOf(shape));
    double scale = logical > 0 ? static_cast<double>(PaddedBytes(stored)) / logical : 1;
    if (shape.IsArray() && stored.IsArray()) {
      const double per = per_element(shape, logical);
      scale = per > 0 ? per_element(stored, static_cast<double>(PaddedBytes(stored))) / per : 1;
    }
    (InVmem(stored) ? traffic.vmem_resident_bytes : traffic.hbm_bytes) += bytes * scale;
  };
  double boundary = cost.output_bytes;
  if (instr.shape().IsArray() || instr.shape().IsTuple()) {
    charge(instr.shape(), instr.shape(), cost.output_bytes);
  }
  for (size_t i = 0; i < cost.operand_bytes.size(); ++i) {
    const HloInstruction& operand = *instr.operand(static_cast<int64_t>(i));
    if (!operand.shape().IsArray() && !operand.shape().IsTuple()) continue;
    charge(operand.shape(), MxuFeedSource(operand).shape(), cost.operand_bytes[i]);
    boundary += cost.operand_bytes[i];
  }
  // Bytes of no operand (a fusion's constant arrays) come from HBM as they are.
  traffic.hbm_bytes += std::max(0.0, cost.bytes_accessed - boundary);
  return traffic;
}

}  // namespace

int64_t WeightStationaryFoldCycles(int64_t rows, int64_t cols, int64_t streamed_rows) {
  return 2 * rows + cols + streamed_rows - 2;
}

int64_t ScaleSimGemmCycles(int64_t rows, int64_t cols, int64_t m, int64_t k, int64_t n) {
  return CeilDiv(k, rows) * CeilDiv(n, cols) * WeightStationaryFoldCycles(rows, cols, m);
}

int64_t MxuPipelineCycles(int64_t rows, int64_t cols, int64_t streamed_rows, int64_t folds) {
  if (folds <= 0) return 0;
  return WeightStationaryFoldCycles(rows, cols, streamed_rows) +
         (folds - 1) * std::max(streamed_rows, rows);
}

MatmulPasses MatmulPassesFor(const TpuChipSpec& spec, PrimitiveType lhs, PrimitiveType rhs, PrimitiveType result,
                             hlo::Precision precision) {
  MatmulPasses m;
  if (hlo::IsIntegralType(lhs) && hlo::IsIntegralType(rhs)) {
    m.integer = true;
    m.passes = IntegerMatmulPasses(lhs, rhs, result);
    if (spec.int8_ops > 0) m.rate = spec.int8_ops / spec.bf16_flops;
    return m;
  }
  m.passes = FloatMatmulPasses(lhs, rhs, precision);
  return m;
}

double PeakMatmulSeconds(const TpuChipSpec& spec, double flops, PrimitiveType lhs, PrimitiveType rhs,
                         PrimitiveType result, hlo::Precision precision) {
  const MatmulPasses m = MatmulPassesFor(spec, lhs, rhs, result, precision);
  return flops * static_cast<double>(m.passes) / (spec.bf16_flops * m.rate);
}

MxuWork MatmulOnMxu(const TpuChipSpec& spec, const hlo::MxuTiling& plan, int64_t passes,
                    double rate) {
  MxuWork w;
  const int64_t mxus = std::max<int64_t>(1, spec.num_mxus());
  const int64_t weight_tiles = std::max<int64_t>(1, plan.batch * plan.k_tiles * plan.n_tiles) *
                               std::max<int64_t>(1, passes);
  const int64_t row_groups = std::max<int64_t>(1, plan.m_groups);
  // Fewer weight tiles than MXUs: each tile's rows are split over several MXUs.
  const int64_t split = std::clamp<int64_t>(mxus / weight_tiles, 1, row_groups);
  w.streamed_rows = kStreamedRowGroup * CeilDiv(row_groups, split);
  w.folds = weight_tiles * split;
  w.folds_per_mxu = CeilDiv(w.folds, mxus);
  w.cycles = MxuPipelineCycles(plan.tile_rows, plan.tile_cols, w.streamed_rows, w.folds_per_mxu);
  w.seconds = static_cast<double>(w.cycles) / (spec.clock_hz * rate);
  w.issued_flops = 2.0 * static_cast<double>(plan.tile_rows * plan.tile_cols) *
                   static_cast<double>(w.streamed_rows) * static_cast<double>(w.folds);
  return w;
}

TpuCostModel::TpuCostModel(const TpuChipSpec& spec, const CollectiveTimer* timer)
    : spec_(spec), timer_(timer) {
  ::jx::backend::RegisterLinalgCustomCallCosts();
  // A library custom-call's flops (the linalg calls' LAPACK counts) run on the vector units:
  // XLA's TPU linalg expanders are panel loops of vector ops around the MXU updates, so the
  // VPU rate is the bound that holds at every size.
  AppendHandler(HloOpcode::kCustomCall, [this](const HloInstruction& x, HloCost* c) {
    if (c->flops > 0) AddVectorTime(x, c);
  });
  for (int i = 0; i < hlo::kHloOpcodeCount; ++i) {
    const HloOpcode opcode = static_cast<HloOpcode>(i);
    switch (hlo::OpcodeUnit(opcode)) {
      case ExecutionUnit::kMatrix:
        AppendHandler(opcode, [this](const HloInstruction& x, HloCost* c) { AddMatrixTime(x, c); });
        break;
      case ExecutionUnit::kVector:
        AppendHandler(opcode, [this](const HloInstruction& x, HloCost* c) { AddVectorTime(x, c); });
        break;
      case ExecutionUnit::kNetwork:
        AppendHandler(opcode, [this](const HloInstruction& x, HloCost* c) { AddNetworkTime(x, c); });
        continue;  // timed by the network, not a kernel's roofline
      default:
        break;  // data movement costs only bytes; fusions and control flow sum their callees
    }
    AppendHandler(opcode, [this](const HloInstruction& x, HloCost* c) { FinishKernel(x, c); });
  }
}

void TpuCostModel::AddMatrixTime(const HloInstruction& instr, HloCost* cost) const {
  if (instr.operand_count() < 2) return;
  const hlo::MxuTiling plan = MxuPlan(instr, spec_);
  const auto [passes, rate, integer] = MatmulPassesOf(instr, spec_);
  const MxuWork work = MatmulOnMxu(spec_, plan, passes, rate);
  hlo::TargetCost& t = cost->target;
  t.unit(ExecutionUnit::kMatrix) += work.seconds;
  t.matrix_flops += work.issued_flops;
  t.matrix_useful_flops += cost->flops * static_cast<double>(passes);
  t.onchip_bytes += MatmulOnchipBytes(instr, plan, passes);
  t.emulated = t.emulated || (!integer && passes == kF64MatmulPasses);
}

void TpuCostModel::AddVectorTime(const HloInstruction& instr, HloCost* cost) const {
  // Ops that apply a computation (reduce, map, scatter, ...) get their time from it.
  if (!instr.called_computations().empty()) return;
  double ops = cost->flops + kTranscendentalVpuOps * cost->transcendentals;
  if (IsF64(instr)) {
    ops *= kF64VpuOps;
    cost->target.emulated = true;
  }
  cost->target.unit(ExecutionUnit::kVector) += ops / spec_.vpu_flops();
}

namespace {

// Whether every group of a collective is one partition (it moves nothing between chips).
bool IsLocalCollective(const HloInstruction& instr) {
  if (hlo::SyncCollectiveOpcode(instr.opcode()) == HloOpcode::kCollectivePermute) {
    for (const auto& [source, target] : instr.source_target_pairs()) {
      if (source != target) return false;
    }
    return true;
  }
  const hlo::ReplicaGroups& groups = instr.replica_groups();
  return !groups.empty() && groups.uniform() && groups.group_size() <= 1;
}

}  // namespace

void TpuCostModel::AddNetworkTime(const HloInstruction& instr, HloCost* cost) const {
  hlo::TargetCost& t = cost->target;
  t = hlo::TargetCost{};
  // A done waits for its start's collective: the pod's step times the wait.
  if (hlo::IsAsyncCollectiveDone(instr.opcode()) || IsLocalCollective(instr)) return;
  if (timer_ == nullptr) {
    if (network_status_.ok()) {
      network_status_ = absl::FailedPreconditionError(hlo::StrCat(
          "%", instr.name(), " (", hlo::HloOpcodeString(instr.opcode()),
          ") exchanges data between partitions: cost it for a program on several chips"));
    }
    return;
  }
  absl::StatusOr<double> seconds = timer_->Seconds(instr);
  if (!seconds.ok()) {
    if (network_status_.ok()) network_status_ = seconds.status();
    return;
  }
  t.unit(ExecutionUnit::kNetwork) = *seconds;
  t.seconds = *seconds;
}

void TpuCostModel::FinishKernel(const HloInstruction& instr, HloCost* cost) const {
  const ExecutionUnit unit = hlo::OpcodeUnit(instr.opcode());
  hlo::TargetCost& t = cost->target;
  // The MXU converts the values as it reads them (also a feed inside an attention kernel).
  if (current_role() != Role::kPerElement && IsMxuFeed(instr)) {
    t = hlo::TargetCost{};
    return;
  }
  if (current_role() != Role::kKernel || unit == ExecutionUnit::kNone ||
      unit == ExecutionUnit::kControlFlow) {
    return;  // fused or per-element code, no code at all, or already a sum of kernels
  }
  const KernelTraffic traffic = Traffic(instr, *cost);
  // A kernel too big for VMEM runs as the VMEM tiling pass planned it (recorded, or planned
  // here for a module that did not go through the TPU passes): its HBM traffic re-reads
  // operands per grid step. A kernel that fits is one step.
  std::optional<hlo::VmemTiling> tiling = instr.has_vmem_tiling()
                                              ? std::optional(instr.vmem_tiling())
                                              : PlanVmemTiling(instr, spec_.vmem_bytes, spec_.mxu_dim);
  const double hbm_bytes =
      tiling.has_value() ? static_cast<double>(tiling->hbm_bytes) : traffic.hbm_bytes;
  t.hbm_bytes = hbm_bytes;
  // What comes from HBM, and what stays in VMEM, passes between VMEM and the units.
  t.onchip_bytes = std::max(t.onchip_bytes, hbm_bytes + traffic.vmem_resident_bytes);
  const KernelTime k = KernelRoofline(
      spec_, {.compute_seconds = std::max(t.unit(ExecutionUnit::kVector), t.unit(ExecutionUnit::kMatrix)),
              .hbm_bytes = hbm_bytes,
              .onchip_bytes = t.onchip_bytes,
              .grid_steps = tiling.has_value() ? tiling->steps : 1});
  t.compute_seconds = k.compute_seconds;
  t.memory_seconds = k.memory_seconds;
  t.unit(ExecutionUnit::kMemory) += t.memory_seconds;
  t.overhead_seconds = k.overhead_seconds;
  t.seconds = k.seconds;
}

namespace {

// The unit a row is attributed to: MXU or VPU by the busier, DMA when neither computes.
std::string RowUnit(const hlo::TargetCost& t) {
  if (t.unit(ExecutionUnit::kNetwork) > 0) return "ici";
  const double mxu = t.unit(ExecutionUnit::kMatrix);
  const double vpu = t.unit(ExecutionUnit::kVector);
  if (mxu > 0 && mxu >= vpu) return "mxu";
  if (vpu > 0) return "vpu";
  return "dma";
}

std::string BoundBy(const hlo::TargetCost& t) {
  if (t.seconds <= 0) return "";
  if (t.overhead_seconds >= t.compute_seconds && t.overhead_seconds >= t.memory_seconds) {
    return "overhead";
  }
  return t.compute_seconds >= t.memory_seconds ? "compute" : "memory";
}

// One instruction's row.
InstructionCost MakeRow(const HloInstruction& instr, const HloCost& c) {
  InstructionCost row;
  row.name = instr.name();
  row.opcode = std::string(hlo::HloOpcodeString(instr.opcode()));
  // Collectives (their starts and dones too) are rows of the ICI.
  row.unit = hlo::OpcodeUnit(instr.opcode()) == ExecutionUnit::kNetwork ? "ici" : RowUnit(c.target);
  row.flops = c.flops;
  row.transcendentals = c.transcendentals;
  row.bytes = c.target.hbm_bytes;
  row.seconds = c.target.seconds;
  row.bound_by = BoundBy(c.target);
  return row;
}

// Whether an instruction gets a row: it runs code (not parameters, tuples, MXU feeds).
bool HasRow(const HloInstruction& instr) {
  return hlo::OpcodeUnit(instr.opcode()) != ExecutionUnit::kNone && !IsMxuFeed(instr);
}

}  // namespace

absl::StatusOr<std::vector<InstructionCost>> TpuInstructionCosts(const hlo::HloComputation& computation,
                                                                 const TpuChipSpec& spec,
                                                                 const CollectiveTimer* timer) {
  TpuCostModel model(spec, timer);
  std::vector<InstructionCost> rows;
  for (const HloInstruction* instr : computation.MakeSequentialOrder()) {
    if (HasRow(*instr)) rows.push_back(MakeRow(*instr, model.Cost(*instr)));
  }
  if (absl::Status st = model.network_status(); !st.ok()) return st;
  return rows;
}

absl::StatusOr<CostAnalysis> AnalyzeTpuCost(const hlo::HloModule& module,
                                            const TpuChipSpec& spec,
                                            const CollectiveTimer* timer) {
  TpuCostModel model(spec, timer);
  absl::StatusOr<hlo::ModuleCost> analyzed = model.Analyze(module);
  if (!analyzed.ok()) return analyzed.status();
  if (absl::Status st = model.network_status(); !st.ok()) return st;
  const hlo::ModuleCost& m = *analyzed;
  CostAnalysis out = ToCostAnalysis(m);
  out.bytes_accessed_hbm = m.target.hbm_bytes;
  out.bytes_accessed_vmem = m.target.onchip_bytes;
  out.predicted_seconds = m.target.seconds;
  out.compute_seconds = m.target.compute_seconds;
  out.memory_seconds = m.target.memory_seconds;
  out.communication_seconds = m.target.unit(ExecutionUnit::kNetwork);
  out.mxu_utilization = out.predicted_seconds > 0
                            ? m.target.matrix_useful_flops / (spec.bf16_flops * out.predicted_seconds)
                            : 0;
  out.padding_waste =
      m.target.matrix_flops > 0 ? 1 - m.target.matrix_useful_flops / m.target.matrix_flops : 0;
  out.f64_emulated = m.target.emulated;
  // Rows in the order the entry runs (the schedule: a start before the compute that hides
  // it, its done after).
  absl::flat_hash_map<std::string_view, const HloCost*> by_name;
  for (const auto& [name, c] : m.per_instruction) by_name[name] = &c;
  for (const HloInstruction* instr : module.entry_computation()->MakeSequentialOrder()) {
    auto it = by_name.find(instr->name());
    if (it == by_name.end()) continue;
    if (HasRow(*instr)) out.instructions.push_back(MakeRow(*instr, *it->second));
  }
  return out;
}

std::string FormatInstructionCosts(const CostAnalysis& cost) {
  std::vector<const InstructionCost*> rows;
  for (const InstructionCost& row : cost.instructions) rows.push_back(&row);
  std::stable_sort(rows.begin(), rows.end(), [](const InstructionCost* a, const InstructionCost* b) {
    return a->seconds > b->seconds;
  });
  size_t width = 4;
  for (const InstructionCost* row : rows) width = std::max(width, row->name.size());
  const int w = static_cast<int>(width);
  std::string out = absl::StrFormat("%-*s  %-18s %-4s %12s %12s %12s %6s  %s\n", w, "name",
                                    "opcode", "unit", "flops", "bytes", "time(us)", "%", "bound by");
  const double total = cost.predicted_seconds;
  for (const InstructionCost* row : rows) {
    absl::StrAppendFormat(&out, "%-*s  %-18s %-4s %12.4g %12.4g %12.3f %6.1f  %s\n", w, row->name,
                          row->opcode, row->unit, row->flops, row->bytes, row->seconds * 1e6,
                          total > 0 ? 100 * row->seconds / total : 0.0, row->bound_by);
  }
  absl::StrAppendFormat(&out,
                        "total %.3f us (compute %.3f us, memory %.3f us), MXU utilization %.1f%%, "
                        "padding waste %.1f%%%s\n",
                        total * 1e6, cost.compute_seconds * 1e6, cost.memory_seconds * 1e6,
                        100 * cost.mxu_utilization, 100 * cost.padding_waste,
                        cost.f64_emulated ? ", f64 emulated" : "");
  return out;
}

}  // namespace jx::tpu
