// The chip's view of a TpuNumerics-rewritten program: converts that only feed the MXU are
// read through (the MXU reads the stored operand), so buffer assignment no longer counts the
// host emulation's f32 copies; converts anything else reads stay.
#include "jx/compiler/backend/tpu/mxu_operand_reads.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "jx/compiler/backend/cpu/buffer_assignment.h"
#include "jx/compiler/hlo/hlo_instruction.h"
#include "jx/compiler/hlo/hlo_module.h"
#include "jx/compiler/hlo/hlo_parser.h"

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

}  // namespace
}  // namespace jx::tpu::mxu_operand_reads_test
