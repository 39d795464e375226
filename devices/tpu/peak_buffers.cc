#include "jx/devices/tpu/peak_buffers.h"

#include <algorithm>
#include <tuple>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_format.h"
#include "jx/compiler/hlo/hlo_instruction.h"
#include "jx/devices/tpu/hbm_peak_analysis.h"

namespace jx::tpu {
namespace {

using cpu::LogicalBuffer;
using hlo::HloInstruction;
using hlo::HloOpcode;

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

std::string Bytes(int64_t bytes) {
  const double b = static_cast<double>(bytes);
  if (b >= kGiB) return absl::StrFormat("%.2f GiB", b / kGiB);
  if (b >= 1 << 20) return absl::StrFormat("%.2f MiB", b / (1 << 20));
  if (b >= 1 << 10) return absl::StrFormat("%.2f KiB", b / (1 << 10));
  return absl::StrFormat("%d B", bytes);
}

// Whether `value` is an argument seen through ops that keep its data (a copy, a bitcast, a
// convert, a reshape, a tuple element of a tuple or of an optimization barrier).
bool IsArgument(const HloInstruction* value) {
  for (int depth = 0; depth < 16 && value != nullptr; ++depth) {
    switch (value->opcode()) {
      case HloOpcode::kParameter:
        return true;
      case HloOpcode::kCopy:
      case HloOpcode::kBitcast:
      case HloOpcode::kConvert:
      case HloOpcode::kReshape:
        value = value->operand(0);
        break;
      case HloOpcode::kGetTupleElement: {
        const HloInstruction* tuple = value->operand(0);
        if (tuple->opcode() == HloOpcode::kOptimizationBarrier) tuple = tuple->operand(0);
        if (tuple->opcode() == HloOpcode::kParameter) return true;
        if (tuple->opcode() != HloOpcode::kTuple) return false;
        value = tuple->operand(value->tuple_index());
        break;
      }
      default:
        return false;
    }
  }
  return false;
}

// The all-gather whose result `def` is (an all-gather, or the done of an async one), or null.
const HloInstruction* GatherOf(const HloInstruction* def) {
  if (def->opcode() == HloOpcode::kAllGather || def->opcode() == HloOpcode::kAllGatherStart) return def;
  if (def->opcode() == HloOpcode::kAllGatherDone) return def->operand(0);  // the start
  return nullptr;
}

PeakBufferKind TempKind(const HloInstruction& def, double defined_at, double last_use) {
  if (const HloInstruction* gather = GatherOf(&def)) {
    const bool of_argument = std::all_of(gather->operands().begin(), gather->operands().end(),
                                         [](const HloInstruction* op) { return IsArgument(op); });
    return of_argument ? PeakBufferKind::kGatheredWeight : PeakBufferKind::kGathered;
  }
  return last_use - defined_at > 0.25 ? PeakBufferKind::kLongLived : PeakBufferKind::kTemporary;
}

}  // namespace

std::string_view PeakBufferKindName(PeakBufferKind kind) {
  switch (kind) {
    case PeakBufferKind::kParameter: return "parameter";
    case PeakBufferKind::kOutput: return "output";
    case PeakBufferKind::kConstant: return "constant";
    case PeakBufferKind::kGatheredWeight: return "gathered weight";
    case PeakBufferKind::kGathered: return "gathered";
    case PeakBufferKind::kLongLived: return "long-lived";
    case PeakBufferKind::kTemporary: return "temporary";
  }
  return "?";
}

HbmPeakReport AnalyzeHbmPeak(const cpu::BufferAssignment& assignment, absl::Span<HloInstruction* const> schedule,
                             size_t max_buffers) {
  const cpu::MemoryAnalysis& m = assignment.memory();
  HbmPeakReport report;
  report.argument_bytes = m.argument_bytes;
  report.output_bytes = m.output_bytes;
  report.constant_bytes = m.constant_bytes;
  report.alias_bytes = m.alias_bytes;
  report.temp_arena_bytes = m.temp_bytes;
  report.peak_live_temp_bytes = m.peak_live_temp_bytes;
  const std::vector<LogicalBuffer>& buffers = assignment.buffers();
  const size_t n = schedule.size();
  const double last = n > 1 ? static_cast<double>(n - 1) : 1.0;

  // The position with the most temp bytes live (the first such): a temp is live from its
  // definition through its last reader, as the arena walk counts it.
  std::vector<int64_t> delta(n + 1, 0);
  for (const LogicalBuffer& b : buffers) {
    if (b.merged_into >= 0 || b.kind != LogicalBuffer::kTemp) continue;
    delta[b.defined_at] += b.size;
    delta[b.last_use + 1] -= b.size;
  }
  int64_t live = 0, most = -1, peak = 0;
  for (size_t pos = 0; pos < n; ++pos) {
    live += delta[pos];
    if (live > most) most = live, peak = static_cast<int64_t>(pos);
  }
  if (n > 0) {
    report.peak_instruction = schedule[peak]->name();
    report.peak_op_name = schedule[peak]->metadata().op_name;
    report.peak_at = static_cast<double>(peak) / last;
  }

  // Each buffer's shape: the leaf of its defining instruction it is.
  absl::flat_hash_map<int, std::string> shape_of;
  for (const HloInstruction* instr : schedule) {
    const std::vector<int>& leaves = assignment.BuffersOf(instr);
    std::vector<hlo::Shape> shapes;
    for (size_t leaf = 0; leaf < leaves.size(); ++leaf) {
      if (buffers[leaves[leaf]].defining != instr || shape_of.contains(leaves[leaf])) continue;
      if (shapes.empty()) shapes = cpu::LeafShapes(instr->shape());
      if (leaf < shapes.size()) shape_of[leaves[leaf]] = shapes[leaf].ToString(/*print_layout=*/false);
    }
  }

  std::vector<PeakBuffer> live_buffers;
  for (size_t i = 0; i < buffers.size(); ++i) {
    const LogicalBuffer& b = buffers[i];
    if (b.merged_into >= 0 || b.defining == nullptr) continue;
    PeakBuffer out;
    switch (b.kind) {
      case LogicalBuffer::kParameter: out.kind = PeakBufferKind::kParameter; break;
      case LogicalBuffer::kConstant: out.kind = PeakBufferKind::kConstant; break;
      case LogicalBuffer::kOutput: out.kind = PeakBufferKind::kOutput; break;
      case LogicalBuffer::kTemp:
        if (b.defined_at > peak || b.last_use < peak) continue;
        out.defined_at = static_cast<double>(b.defined_at) / last;
        out.last_use = static_cast<double>(b.last_use) / last;
        out.kind = TempKind(*b.defining, out.defined_at, out.last_use);
        break;
    }
    out.bytes = b.size;
    auto shape = shape_of.find(static_cast<int>(i));
    if (shape != shape_of.end()) out.shape = shape->second;
    out.instruction = b.defining->name();
    out.opcode = std::string(hlo::HloOpcodeString(b.defining->opcode()));
    out.op_name = b.defining->metadata().op_name;
    if (out.kind != PeakBufferKind::kOutput) report.bytes_by_kind[static_cast<int>(out.kind)] += out.bytes;
    live_buffers.push_back(std::move(out));
  }
  // Outputs count by their shapes (some are copies of other buffers made at the end), less
  // those written into donated arguments.
  report.bytes_by_kind[static_cast<int>(PeakBufferKind::kOutput)] = m.output_bytes - m.alias_bytes;
  // Largest first, then buffers alike folded into the first of them.
  std::stable_sort(live_buffers.begin(), live_buffers.end(),
                   [](const PeakBuffer& a, const PeakBuffer& b) { return a.bytes > b.bytes; });
  using Key = std::tuple<PeakBufferKind, std::string_view, std::string_view, std::string_view, int64_t>;
  absl::flat_hash_map<Key, size_t> entry_of;
  for (const PeakBuffer& b : live_buffers) {
    auto [it, inserted] = entry_of.try_emplace(Key{b.kind, b.shape, b.opcode, b.op_name, b.bytes}, report.buffers.size());
    if (inserted) {
      report.buffers.push_back(b);
    } else {
      PeakBuffer& entry = report.buffers[it->second];
      ++entry.count;
      entry.defined_at = std::min(entry.defined_at, b.defined_at);
      entry.last_use = std::max(entry.last_use, b.last_use);
    }
  }
  std::stable_sort(report.buffers.begin(), report.buffers.end(),
                   [](const PeakBuffer& a, const PeakBuffer& b) { return a.total_bytes() > b.total_bytes(); });
  if (report.buffers.size() > max_buffers) report.buffers.resize(max_buffers);
  return report;
}

std::string HbmPeakReport::ToString(size_t max_buffers) const {
  const int64_t fragmentation = temp_arena_bytes - peak_live_temp_bytes;
  std::string out = absl::StrFormat(
      "HBM: arguments %s, outputs %s (%s in donated arguments), constants %s, temp arena %s (%s live at %s, "
      "%.0f%% through the step; %s fragmentation)",
      Bytes(argument_bytes), Bytes(output_bytes), Bytes(alias_bytes), Bytes(constant_bytes), Bytes(temp_arena_bytes),
      Bytes(peak_live_temp_bytes), peak_instruction.empty() ? "-" : peak_instruction, 100 * peak_at,
      Bytes(fragmentation));
  if (loop_scratch_bytes > 0) absl::StrAppendFormat(&out, ", loop bodies' scratch %s", Bytes(loop_scratch_bytes));
  out += "\n  live at the peak by kind:";
  for (int k = 0; k < kNumPeakBufferKinds; ++k) {
    if (bytes_by_kind[k] == 0) continue;
    absl::StrAppendFormat(&out, " %s %s;", PeakBufferKindName(static_cast<PeakBufferKind>(k)), Bytes(bytes_by_kind[k]));
  }
  out += "\n";
  for (size_t i = 0; i < buffers.size() && i < max_buffers; ++i) {
    const PeakBuffer& b = buffers[i];
    const std::string count = b.count > 1 ? absl::StrFormat("%d x ", b.count) : "";
    absl::StrAppendFormat(&out, "  %10s %-16s %s%-22s %s = %s [%.2f, %.2f]%s%s\n", Bytes(b.total_bytes()),
                          PeakBufferKindName(b.kind), count, b.shape, b.instruction, b.opcode, b.defined_at,
                          b.last_use, b.op_name.empty() ? "" : " ", b.op_name);
  }
  return out;
}

}  // namespace jx::tpu
