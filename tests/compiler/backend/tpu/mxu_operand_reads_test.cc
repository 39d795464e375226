// The chip's view of a TpuNumerics-rewritten program: converts that only feed the MXU are
// read through (the MXU reads the stored operand), so buffer assignment no longer counts the
// host emulation's f32 copies; converts anything else reads stay. The latency-hiding
// scheduler's memory limit is checked on the same view (ChipMemoryPeak).
#include "jx/compiler/backend/tpu/mxu_operand_reads.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "jx/compiler/backend/cpu/buffer_assignment.h"
#include "jx/compiler/hlo/hlo_instruction.h"
#include "jx/compiler/hlo/hlo_module.h"
#include "jx/compiler/hlo/hlo_parser.h"
#include "jx/compiler/passes/latency_hiding_scheduler.h"

namespace jx::tpu::mxu_operand_reads_test {
namespace {

// w (bf16) feeds the dot through convert(bf16 -> f32) (its f32 copy: 512 KiB) and x (f32)
// through the DEFAULT round trip f32 -> bf16 -> f32; `kept` is also read by an add.
constexpr char kModule[] = R"(HloModule m
ENTRY %main (w: bf16[256,512], x: f32[8,256], y: bf16[8,256]) -> (f32[8,512], f32[8,256]) {
  %w = bf16[256,512] parameter(0)
  %x = f32[8,256] parameter(1)
  %y = bf16[8,256] parameter(2)
  %wf = f32[256,512] convert(%w)
  %xb = bf16[8,256] convert(%x)
  %xf = f32[8,256] convert(%xb)
  %dot = f32[8,512] dot(%xf, %wf), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  %kept = f32[8,256] convert(%y)
  %add = f32[8,256] add(%kept, %kept)
  ROOT %out = (f32[8,512], f32[8,256]) tuple(%dot, %add)
}
)";

int64_t PeakTempBytes(const hlo::HloComputation& entry) {
  const cpu::BufferAssignment ba = cpu::BufferAssignment::Run(entry, entry.MakeSequentialOrder()).value();
  return ba.memory().peak_live_temp_bytes;
}

TEST(MxuOperandReadsTest, ContractionsReadTheStoredOperands) {
  std::unique_ptr<hlo::HloModule> module = hlo::ParseHloModule(kModule).value();
  hlo::HloComputation* entry = module->entry_computation();
  std::vector<std::string> order;
  for (const hlo::HloInstruction* i : entry->MakeSequentialOrder()) order.push_back(i->name());
  entry->set_schedule(entry->MakeSequentialOrder());
  const int64_t before = PeakTempBytes(*entry);

  EXPECT_EQ(ReadMxuOperandsAsStored(entry).value(), 3);  // wf, xf, then xb
  const hlo::HloInstruction* dot = entry->root_instruction()->operand(0);
  EXPECT_EQ(dot->operand(0)->name(), "x");
  EXPECT_EQ(dot->operand(1)->name(), "w");
  EXPECT_EQ(entry->root_instruction()->operand(1)->operand(0)->name(), "kept");
  // The schedule holds: the same order less the removed converts.
  std::vector<std::string> want;
  for (const std::string& name : order) {
    if (name != "wf" && name != "xb" && name != "xf") want.push_back(name);
  }
  std::vector<std::string> got;
  for (const hlo::HloInstruction* i : entry->schedule()) got.push_back(i->name());
  EXPECT_EQ(got, want);
  EXPECT_EQ(entry->MakeSequentialOrder(), entry->schedule());
  // The f32 copy of w is gone from the live temps (and x's round trip with it).
  EXPECT_LE(PeakTempBytes(*entry), before - 256 * 512 * 4);
  EXPECT_EQ(ReadMxuOperandsAsStored(entry).value(), 0);
}

// An async all-gather: the host's done copies the start's result into a buffer of its own;
// on the chip the done returns the start's buffer, so one 64 KiB result is live, not two.
TEST(MxuOperandReadsTest, ADoneReturnsItsStartsBuffer) {
  constexpr char kAsync[] = R"(HloModule m
ENTRY %main (w: f32[128,32]) -> f32[512,32] {
  %w = f32[128,32] parameter(0)
  %start = (f32[128,32], f32[512,32]) all-gather-start(%w), channel_id=1, replica_groups={{0,1,2,3}}, dimensions={0}, use_global_device_ids=true
  %done = f32[512,32] all-gather-done(%start)
  ROOT %neg = f32[512,32] negate(%done)
}
)";
  std::unique_ptr<hlo::HloModule> module = hlo::ParseHloModule(kAsync).value();
  hlo::HloComputation* entry = module->entry_computation();
  entry->set_schedule(entry->MakeSequentialOrder());
  const int64_t before = PeakTempBytes(*entry);
  EXPECT_EQ(ShareAsyncCollectiveResults(entry).value(), 1);
  const hlo::HloInstruction* read = entry->root_instruction()->operand(0);
  EXPECT_EQ(read->opcode(), hlo::HloOpcode::kGetTupleElement);
  EXPECT_EQ(read->tuple_index(), 1);
  EXPECT_EQ(read->operand(0)->name(), "start");
  EXPECT_EQ(entry->MakeSequentialOrder(), entry->schedule());
  EXPECT_EQ(PeakTempBytes(*entry), before - 512 * 32 * 4);
}

// Every kind of start: an all-reduce-start is its result (of one operand or, combined, of
// several: a tuple), the others hold it as leaf 1.
TEST(MxuOperandReadsTest, EveryDoneReadsItsStartsResult) {
  constexpr char kKinds[] = R"(HloModule m
%sum (x: f32[], y: f32[]) -> f32[] {
  %x = f32[] parameter(0)
  %y = f32[] parameter(1)
  ROOT %s = f32[] add(f32[] %x, f32[] %y)
}

ENTRY %main (p: f32[8,4]) -> (f32[8,4], (f32[8,4], f32[8,4]), f32[32,4], f32[2,4]) {
  %p = f32[8,4]{1,0} parameter(0)
  %ars = f32[8,4]{1,0} all-reduce-start(f32[8,4]{1,0} %p), channel_id=1, replica_groups={{0,1},{2,3}}, use_global_device_ids=true, to_apply=%sum
  %ard = f32[8,4]{1,0} all-reduce-done(f32[8,4]{1,0} %ars)
  %ars2 = (f32[8,4]{1,0}, f32[8,4]{1,0}) all-reduce-start(f32[8,4]{1,0} %p, f32[8,4]{1,0} %p), channel_id=5, replica_groups={{0,1},{2,3}}, use_global_device_ids=true, to_apply=%sum
  %ard2 = (f32[8,4]{1,0}, f32[8,4]{1,0}) all-reduce-done((f32[8,4]{1,0}, f32[8,4]{1,0}) %ars2)
  %ags = (f32[8,4]{1,0}, f32[32,4]{1,0}) all-gather-start(f32[8,4]{1,0} %p), channel_id=2, replica_groups={{0,1,2,3}}, dimensions={0}, use_global_device_ids=true
  %agd = f32[32,4]{1,0} all-gather-done((f32[8,4]{1,0}, f32[32,4]{1,0}) %ags)
  %rss = ((f32[8,4]{1,0}), f32[2,4]{1,0}) reduce-scatter-start(f32[8,4]{1,0} %p), channel_id=3, replica_groups={{0,1,2,3}}, dimensions={0}, use_global_device_ids=true, to_apply=%sum
  %rsd = f32[2,4]{1,0} reduce-scatter-done(((f32[8,4]{1,0}), f32[2,4]{1,0}) %rss)
  ROOT %out = (f32[8,4], (f32[8,4], f32[8,4]), f32[32,4], f32[2,4]) tuple(%ard, %ard2, %agd, %rsd)
}
)";
  std::unique_ptr<hlo::HloModule> module = hlo::ParseHloModule(kKinds).value();
  hlo::HloComputation* entry = module->entry_computation();
  entry->set_schedule(entry->MakeSequentialOrder());
  EXPECT_EQ(ShareAsyncCollectiveResults(entry).value(), 4);
  const hlo::HloInstruction* out = entry->root_instruction();
  EXPECT_EQ(out->operand(0)->name(), "ars");
  EXPECT_EQ(out->operand(1)->name(), "ars2");
  EXPECT_EQ(out->operand(2)->opcode(), hlo::HloOpcode::kGetTupleElement);
  EXPECT_EQ(out->operand(2)->operand(0)->name(), "ags");
  EXPECT_EQ(out->operand(3)->operand(0)->name(), "rss");
  EXPECT_EQ(entry->MakeSequentialOrder(), entry->schedule());
}

// Two FSDP layers: each gathers its bf16 weight shard (32 KiB -> 128 KiB) and multiplies by it
// through the MXU feed converts TpuNumerics writes (the weight's f32 copy: 256 KiB). Collectives
// take 10 us, dots 4 us: overlapped, w1's all-gather runs beside layer 0's dot.
constexpr char kTwoLayers[] = R"(HloModule m
ENTRY %main (x: bf16[16,256], s0: bf16[64,256], s1: bf16[64,256]) -> f32[16,256] {
  %x = bf16[16,256]{1,0} parameter(0)
  %s0 = bf16[64,256]{1,0} parameter(1)
  %s1 = bf16[64,256]{1,0} parameter(2)
  %ag0s = (bf16[64,256]{1,0}, bf16[256,256]{1,0}) all-gather-start(%s0), channel_id=1, replica_groups={{0,1,2,3}}, dimensions={0}, use_global_device_ids=true
  %ag0d = bf16[256,256]{1,0} all-gather-done(%ag0s)
  %ag1s = (bf16[64,256]{1,0}, bf16[256,256]{1,0}) all-gather-start(%s1), channel_id=2, replica_groups={{0,1,2,3}}, dimensions={0}, use_global_device_ids=true
  %ag1d = bf16[256,256]{1,0} all-gather-done(%ag1s)
  %xf = f32[16,256]{1,0} convert(%x)
  %w0f = f32[256,256]{1,0} convert(%ag0d)
  %h = f32[16,256]{1,0} dot(%xf, %w0f), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  %w1f = f32[256,256]{1,0} convert(%ag1d)
  ROOT %y = f32[16,256]{1,0} dot(%h, %w1f), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}
)";

hlo::LatencyHidingSchedulerOptions TwoLayerTimes() {
  hlo::LatencyHidingSchedulerOptions options;
  options.estimate_seconds = [](const hlo::HloInstruction& instr) {
    if (hlo::IsAsyncCollectiveStart(instr.opcode())) return 10e-6;
    return instr.opcode() == hlo::HloOpcode::kDot ? 4e-6 : 0.0;
  };
  return options;
}

int64_t PositionOf(absl::Span<hlo::HloInstruction* const> order, std::string_view name) {
  for (size_t i = 0; i < order.size(); ++i) {
    if (order[i]->name() == name) return static_cast<int64_t>(i);
  }
  ADD_FAILURE() << name << " is not in the order";
  return -1;
}

// The overlapped order, by hand (arguments 72 KiB throughout): ag0s, xf, ag0d, ag1s, w0f, h,
// ag1d, w1f, y. As the text says, every value is a buffer of its own: at w0f the gathered w0
// (128), its f32 copy (256), xf (16) and w1's start (its operand's copy 32 and result 128) are
// live: 632 KiB. On the chip the converts are the MXU's reads and a done is its start's
// result: at ag1s, w0 gathered (128) and w1's start (32 + 128): 360 KiB.
TEST(MxuOperandReadsTest, TheSchedulerKeepsAnOverlapThatFitsOnTheChip) {
  std::unique_ptr<hlo::HloModule> module = hlo::ParseHloModule(kTwoLayers).value();
  const hlo::HloComputation& entry = *module->entry_computation();
  const hlo::LatencyHidingSchedule loose = hlo::ScheduleForLatencyHiding(entry, TwoLayerTimes()).value();
  ASSERT_EQ(loose.overlapped, 1);
  EXPECT_LT(PositionOf(loose.order, "ag1s"), PositionOf(loose.order, "h"));
  EXPECT_EQ(loose.peak_memory_bytes, 632 << 10);
  const hlo::MemoryPeakOfOrder chip = ChipMemoryPeak(entry).value();
  const hlo::MemoryPeak on_chip = chip(loose.order);
  EXPECT_EQ(on_chip.bytes, 360 << 10);
  EXPECT_EQ(on_chip.position, PositionOf(loose.order, "ag1s"));  // a position in the order given

  // A 500 KiB limit: the text's view gives up the overlap, the chip's keeps it.
  hlo::LatencyHidingSchedulerOptions as_text = TwoLayerTimes();
  as_text.memory_limit_bytes = 500 << 10;
  const hlo::LatencyHidingSchedule text = hlo::ScheduleForLatencyHiding(entry, as_text).value();
  EXPECT_EQ(text.overlapped, 0);
  EXPECT_GT(text.serialized, 0);
  EXPECT_LE(text.peak_memory_bytes, as_text.memory_limit_bytes);
  EXPECT_GT(text.estimated_seconds, loose.estimated_seconds);

  hlo::LatencyHidingSchedulerOptions as_chip = as_text;
  as_chip.memory_model = ChipMemoryPeak;
  const hlo::LatencyHidingSchedule kept = hlo::ScheduleForLatencyHiding(entry, as_chip).value();
  EXPECT_EQ(kept.order, loose.order);
  EXPECT_EQ(kept.overlapped, 1);
  EXPECT_EQ(kept.serialized, 0);
  EXPECT_EQ(kept.peak_memory_bytes, 360 << 10);
  EXPECT_DOUBLE_EQ(kept.estimated_seconds, loose.estimated_seconds);
  // The module itself is untouched: the chip's view is measured on a copy.
  EXPECT_EQ(entry.instruction_count(), 12);
}

}  // namespace
}  // namespace jx::tpu::mxu_operand_reads_test
