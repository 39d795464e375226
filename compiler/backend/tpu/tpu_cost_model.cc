#include "jx/compiler/backend/tpu/tpu_cost_model.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "jx/compiler/hlo/hlo_module.h"

namespace jx::tpu {
namespace {

using hlo::ExecutionUnit;
using hlo::HloCost;
using hlo::HloInstruction;
using hlo::HloOpcode;
using hlo::PrimitiveType;

int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

int64_t Dim(const hlo::Shape& shape, int64_t i) {
  return i >= 0 && i < shape.rank() ? shape.dimensions(i) : 1;
}

bool Contains(const std::vector<int64_t>& dims, int64_t d) {
  return std::find(dims.begin(), dims.end(), d) != dims.end();
}

// The product of a shape's dims that are in neither list.
int64_t FreeSize(const hlo::Shape& shape, const std::vector<int64_t>& batch,
                 const std::vector<int64_t>& contracting) {
  int64_t size = 1;
  for (int64_t d = 0; d < shape.rank(); ++d) {
    if (!Contains(batch, d) && !Contains(contracting, d)) size *= shape.dimensions(d);
  }
  return size;
}

MatmulShape DotShape(const HloInstruction& dot) {
  const hlo::DotDimensionNumbers& d = dot.dot_dimension_numbers();
  const hlo::Shape& lhs = dot.operand(0)->shape();
  const hlo::Shape& rhs = dot.operand(1)->shape();
  MatmulShape s;
  for (int64_t b : d.lhs_batch_dims) s.groups *= Dim(lhs, b);
  for (int64_t c : d.lhs_contracting_dims) s.k *= Dim(lhs, c);
  s.m = FreeSize(lhs, d.lhs_batch_dims, d.lhs_contracting_dims);
  s.n = FreeSize(rhs, d.rhs_batch_dims, d.rhs_contracting_dims);
  return s;
}

// A convolution as an implicit GEMM: rows are (batch, output position), the contraction is
// (input feature, kernel tap), columns are output features; feature and batch groups are
// independent products.
MatmulShape ConvolutionShape(const HloInstruction& conv) {
  const hlo::ConvolutionDimensionNumbers& d = conv.convolution_dimension_numbers();
  const hlo::Shape& rhs = conv.operand(1)->shape();
  const hlo::Shape& out = conv.shape();
  const int64_t feature_groups = std::max<int64_t>(1, conv.feature_group_count());
  const int64_t batch_groups = std::max<int64_t>(1, conv.batch_group_count());
  MatmulShape s;
  s.groups = feature_groups * batch_groups;
  s.m = Dim(out, d.output_batch_dimension);
  for (int64_t dim : d.output_spatial_dimensions) s.m *= Dim(out, dim);
  s.k = Dim(rhs, d.kernel_input_feature_dimension);
  for (int64_t dim : d.kernel_spatial_dimensions) s.k *= Dim(rhs, dim);
  s.n = std::max<int64_t>(1, Dim(out, d.output_feature_dimension) / s.groups);
  return s;
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

bool IsInt8(PrimitiveType t) { return t == PrimitiveType::S8 || t == PrimitiveType::U8; }

// bf16 MXU passes a dot or convolution takes for its operand types and precision.
int64_t MxuPasses(const HloInstruction& instr) {
  bool f32 = false;
  for (const HloInstruction* operand : instr.operands()) {
    if (!operand->shape().IsArray()) continue;
    const PrimitiveType t = operand->shape().element_type();
    if (t == PrimitiveType::F64) return kF64MatmulPasses;
    f32 = f32 || t == PrimitiveType::F32;
  }
  if (!f32) return 1;  // bf16, f16 and integers: one pass
  hlo::Precision precision = hlo::Precision::kDefault;
  for (hlo::Precision p : instr.precision_config().operand_precision) precision = std::max(precision, p);
  switch (precision) {
    case hlo::Precision::kDefault: return 1;
    case hlo::Precision::kHigh: return kF32HighPasses;
    case hlo::Precision::kHighest: return kF32HighestPasses;
  }
  return 1;
}

// Bytes the MXUs read from and write to VMEM: the weights once, the streamed operand once per
// output-column tile (each tile streams all rows), the result once (partial sums accumulate
// in the MXU's result buffers); every pass re-reads its operands.
double MatmulOnchipBytes(const HloInstruction& instr, const MatmulShape& s, int64_t mxu_dim,
                         int64_t passes) {
  const double lhs = static_cast<double>(hlo::ShapeUtil::ByteSizeOf(instr.operand(0)->shape()));
  const double rhs = static_cast<double>(hlo::ShapeUtil::ByteSizeOf(instr.operand(1)->shape()));
  const double out = static_cast<double>(hlo::ShapeUtil::ByteSizeOf(instr.shape()));
  return static_cast<double>(passes) * (lhs * static_cast<double>(CeilDiv(s.n, mxu_dim)) + rhs) +
         out;
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

MxuWork MatmulOnMxu(const TpuChipSpec& spec, const MatmulShape& shape, int64_t passes,
                    double rate) {
  MxuWork w;
  const int64_t r = spec.mxu_dim;
  const int64_t mxus = std::max<int64_t>(1, spec.num_mxus());
  const int64_t weight_tiles =
      shape.groups * CeilDiv(shape.k, r) * CeilDiv(shape.n, r) * std::max<int64_t>(1, passes);
  const int64_t row_groups = CeilDiv(std::max<int64_t>(1, shape.m), kStreamedRowGroup);
  // Fewer weight tiles than MXUs: each tile's rows are split over several MXUs.
  const int64_t split = std::clamp<int64_t>(mxus / std::max<int64_t>(1, weight_tiles), 1, row_groups);
  w.streamed_rows = kStreamedRowGroup * CeilDiv(row_groups, split);
  w.folds = weight_tiles * split;
  w.folds_per_mxu = CeilDiv(w.folds, mxus);
  w.cycles = MxuPipelineCycles(r, r, w.streamed_rows, w.folds_per_mxu);
  w.seconds = static_cast<double>(w.cycles) / (spec.clock_hz * rate);
  w.issued_flops = 2.0 * static_cast<double>(r * r) * static_cast<double>(w.streamed_rows) *
                   static_cast<double>(w.folds);
  return w;
}

TpuCostModel::TpuCostModel(const TpuChipSpec& spec) : spec_(spec) {
  for (int i = 0; i < hlo::kHloOpcodeCount; ++i) {
    const HloOpcode opcode = static_cast<HloOpcode>(i);
    switch (hlo::OpcodeUnit(opcode)) {
      case ExecutionUnit::kMatrix:
        AppendHandler(opcode, [this](const HloInstruction& x, HloCost* c) { AddMatrixTime(x, c); });
        break;
      case ExecutionUnit::kVector:
        AppendHandler(opcode, [this](const HloInstruction& x, HloCost* c) { AddVectorTime(x, c); });
        break;
      default:
        break;  // data movement costs only bytes; fusions and control flow sum their callees
    }
    AppendHandler(opcode, [this](const HloInstruction& x, HloCost* c) { FinishKernel(x, c); });
  }
}

void TpuCostModel::AddMatrixTime(const HloInstruction& instr, HloCost* cost) const {
  if (instr.operand_count() < 2) return;
  const MatmulShape shape =
      instr.opcode() == HloOpcode::kDot ? DotShape(instr) : ConvolutionShape(instr);
  const int64_t passes = MxuPasses(instr);
  const bool int8 = instr.operand(0)->shape().IsArray() && instr.operand(1)->shape().IsArray() &&
                    IsInt8(instr.operand(0)->shape().element_type()) &&
                    IsInt8(instr.operand(1)->shape().element_type());
  const double rate = int8 && spec_.int8_ops > 0 ? spec_.int8_ops / spec_.bf16_flops : 1;
  const MxuWork work = MatmulOnMxu(spec_, shape, passes, rate);
  hlo::TargetCost& t = cost->target;
  t.unit(ExecutionUnit::kMatrix) += work.seconds;
  t.matrix_flops += work.issued_flops;
  t.matrix_useful_flops += cost->flops * static_cast<double>(passes);
  t.onchip_bytes += MatmulOnchipBytes(instr, shape, spec_.mxu_dim, passes);
  t.emulated = t.emulated || passes == kF64MatmulPasses;
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

void TpuCostModel::FinishKernel(const HloInstruction& instr, HloCost* cost) const {
  const ExecutionUnit unit = hlo::OpcodeUnit(instr.opcode());
  if (current_role() != Role::kKernel || unit == ExecutionUnit::kNone ||
      unit == ExecutionUnit::kControlFlow) {
    return;  // fused or per-element code, no code at all, or already a sum of kernels
  }
  hlo::TargetCost& t = cost->target;
  const double hbm_bytes = cost->bytes_accessed;
  t.onchip_bytes = std::max(t.onchip_bytes, hbm_bytes);  // what comes from HBM passes VMEM
  t.compute_seconds = std::max(t.unit(ExecutionUnit::kVector), t.unit(ExecutionUnit::kMatrix));
  t.memory_seconds = std::max(hbm_bytes / spec_.hbm_bandwidth, t.onchip_bytes / spec_.vmem_bandwidth);
  t.unit(ExecutionUnit::kMemory) += t.memory_seconds;
  // Double-buffered HBM<->VMEM pipeline: each grid step moves at most half the chip's VMEM.
  const double step_bytes = 0.5 * static_cast<double>(spec_.vmem_bytes * spec_.tensor_cores);
  const double grid_steps = std::max(1.0, std::ceil(hbm_bytes / step_bytes));
  t.overhead_seconds = spec_.kernel_launch_s + grid_steps * spec_.grid_step_s;
  t.seconds = std::max(t.compute_seconds, t.memory_seconds) + t.overhead_seconds;
}

namespace {

// The unit a row is attributed to: MXU or VPU by the busier, DMA when neither computes.
std::string RowUnit(const hlo::TargetCost& t) {
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

}  // namespace

absl::StatusOr<CostAnalysis> AnalyzeTpuCost(const hlo::HloModule& module,
                                            const TpuChipSpec& spec) {
  TpuCostModel model(spec);
  absl::StatusOr<hlo::ModuleCost> analyzed = model.Analyze(module);
  if (!analyzed.ok()) return analyzed.status();
  const hlo::ModuleCost& m = *analyzed;
  CostAnalysis out;
  out.flops = m.flops;
  out.transcendentals = m.transcendentals;
  out.bytes_accessed = m.bytes_accessed;
  out.bytes_accessed_operand = m.bytes_accessed_per_parameter;
  out.bytes_accessed_output = m.bytes_accessed_output;
  out.bytes_accessed_hbm = m.bytes_accessed;
  out.bytes_accessed_vmem = m.target.onchip_bytes;
  out.predicted_seconds = m.target.seconds;
  out.compute_seconds = m.target.compute_seconds;
  out.memory_seconds = m.target.memory_seconds;
  out.mxu_utilization = out.predicted_seconds > 0
                            ? m.target.matrix_useful_flops / (spec.bf16_flops * out.predicted_seconds)
                            : 0;
  out.padding_waste =
      m.target.matrix_flops > 0 ? 1 - m.target.matrix_useful_flops / m.target.matrix_flops : 0;
  out.f64_emulated = m.target.emulated;
  // per_instruction follows the entry's post order.
  const std::vector<HloInstruction*> order = module.entry_computation()->MakeInstructionPostOrder();
  for (size_t i = 0; i < order.size() && i < m.per_instruction.size(); ++i) {
    const HloInstruction* instr = order[i];
    const HloCost& c = m.per_instruction[i].second;
    if (hlo::OpcodeUnit(instr->opcode()) == ExecutionUnit::kNone) continue;
    InstructionCost row;
    row.name = instr->name();
    row.opcode = std::string(hlo::HloOpcodeString(instr->opcode()));
    row.unit = RowUnit(c.target);
    row.flops = c.flops;
    row.transcendentals = c.transcendentals;
    row.bytes = c.bytes_accessed;
    row.seconds = c.target.seconds;
    row.bound_by = BoundBy(c.target);
    out.instructions.push_back(std::move(row));
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
