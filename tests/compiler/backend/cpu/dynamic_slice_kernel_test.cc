// The native dynamic-slice / dynamic-update-slice kernels against the evaluator, bit for
// bit, for every element type and several index types, with start indices that fall inside,
// before and past the operand (XLA clamps them); and dynamic-update-slice in place: its
// result takes its operand's buffer when the operand is a dead temp or a donated argument,
// and then only the window is written.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "jx/compiler/backend/cpu/buffer_assignment.h"
#include "jx/compiler/hlo/str_util.h"
#include "tests/compiler/backend/cpu/native_kernel_test_util.h"

namespace jx::cpu::dynamic_slice_kernel_test {
namespace {

using hlo::HloInstruction;
using testing::ExactOptions;
using testing::ExpectExact;

constexpr const char* kElementTypes[] = {"f32", "f64", "f16", "bf16", "s8",  "u8",  "s16",
                                         "u16", "s32", "u32", "s64", "u64", "pred"};

// dims and window as "a,b,..." lists; `it` the start index type.
std::string SliceModule(const std::string& t, const std::string& dims, const std::string& window,
                        int rank, const std::string& it) {
  std::string params, names, decls;
  for (int d = 0; d < rank; ++d) {
    params += hlo::StrCat(", i", d, ": ", it, "[]");
    names += hlo::StrCat(", %i", d);
    decls += hlo::StrCat("  %i", d, " = ", it, "[] parameter(", d + 1, ")\n");
  }
  return hlo::StrCat("HloModule ds\nENTRY %main (x: ", t, "[", dims, "]", params, ") -> ", t, "[",
                     window, "] {\n  %x = ", t, "[", dims, "] parameter(0)\n", decls, "  ROOT %ds = ",
                     t, "[", window, "] dynamic-slice(%x", names, "), dynamic_slice_sizes={", window,
                     "}\n}\n");
}

std::string UpdateModule(const std::string& t, const std::string& dims, const std::string& window,
                         int rank, const std::string& it) {
  std::string params, names, decls;
  for (int d = 0; d < rank; ++d) {
    params += hlo::StrCat(", i", d, ": ", it, "[]");
    names += hlo::StrCat(", %i", d);
    decls += hlo::StrCat("  %i", d, " = ", it, "[] parameter(", d + 2, ")\n");
  }
  return hlo::StrCat("HloModule dus\nENTRY %main (x: ", t, "[", dims, "], u: ", t, "[", window, "]",
                     params, ") -> ", t, "[", dims, "] {\n  %x = ", t, "[", dims,
                     "] parameter(0)\n  %u = ", t, "[", window, "] parameter(1)\n", decls,
                     "  ROOT %dus = ", t, "[", dims, "] dynamic-update-slice(%x, %u", names,
                     ")\n}\n");
}

// Indices in [-12, 12] for dims up to 9: inside, clamped below and clamped above.
ExactOptions Indices(uint32_t seed) {
  ExactOptions o;
  o.lo = -12;
  o.hi = 12;
  o.seed = seed;
  return o;
}

TEST(DynamicSliceKernelTest, EveryElementTypeClampedStarts) {
  for (const char* t : kElementTypes) {
    SCOPED_TRACE(t);
    for (uint32_t seed = 1; seed <= 6; ++seed) {
      ExpectExact(SliceModule(t, "7,9", "3,4", 2, "s32"), "ds", "dynamic-slice", Indices(seed));
      ExpectExact(UpdateModule(t, "7,9", "3,4", 2, "s32"), "dus", "dynamic-update-slice",
                  Indices(seed));
    }
  }
}

TEST(DynamicSliceKernelTest, IndexTypesRanksAndEdgeWindows) {
  for (const char* it : {"s8", "u8", "s16", "s64", "u32"}) {
    SCOPED_TRACE(it);
    for (uint32_t seed = 1; seed <= 4; ++seed) {
      ExpectExact(SliceModule("f32", "5,6,7", "2,6,3", 3, it), "ds", "dynamic-slice", Indices(seed));
      ExpectExact(UpdateModule("s16", "5,6,7", "5,1,3", 3, it), "dus", "dynamic-update-slice",
                  Indices(seed));
    }
  }
  // Full windows, empty windows, rank 1 and rank 0.
  for (uint32_t seed = 1; seed <= 3; ++seed) {
    ExpectExact(SliceModule("f32", "6,4", "6,4", 2, "s32"), "ds", "dynamic-slice", Indices(seed));
    ExpectExact(SliceModule("f32", "6,4", "0,4", 2, "s32"), "ds", "dynamic-slice", Indices(seed));
    ExpectExact(UpdateModule("f64", "6,4", "6,4", 2, "s32"), "dus", "dynamic-update-slice",
                Indices(seed));
    ExpectExact(UpdateModule("f64", "6,4", "2,0", 2, "s32"), "dus", "dynamic-update-slice",
                Indices(seed));
    ExpectExact(SliceModule("u8", "9", "4", 1, "s64"), "ds", "dynamic-slice", Indices(seed));
    ExpectExact(UpdateModule("bf16", "9", "4", 1, "s64"), "dus", "dynamic-update-slice",
                Indices(seed));
  }
  ExpectExact(SliceModule("f32", "", "", 0, "s32"), "ds", "dynamic-slice");
  ExpectExact(UpdateModule("s32", "", "", 0, "s32"), "dus", "dynamic-update-slice");
}

TEST(DynamicSliceKernelTest, LargeRowsSplitOverThreads) {
  // Windows with long rows go through the parallel copy; results must not change.
  CpuCompileOptions threads;
  threads.max_threads = 2;
  ExactOptions o = Indices(3);
  o.compile = threads;
  o.lo = -100;
  o.hi = 400;
  ExpectExact(SliceModule("f32", "300,1024", "256,1000", 2, "s32"), "ds", "dynamic-slice", o);
  ExpectExact(UpdateModule("f32", "300,1024", "256,1000", 2, "s32"), "dus",
              "dynamic-update-slice", o);
}

// The update lands in the operand's own buffer when the operand is dead after the update.
TEST(DynamicSliceKernelTest, UpdateOfDeadTempIsInPlace) {
  constexpr char kText[] = R"(HloModule m
ENTRY %main (x: f32[64,32], u: f32[8,32], i: s32[]) -> (f32[64,32], f32[64,32]) {
  %x = f32[64,32] parameter(0)
  %u = f32[8,32] parameter(1)
  %i = s32[] parameter(2)
  %z = s32[] constant(0)
  %e = f32[64,32] multiply(%x, %x)
  %d1 = f32[64,32] dynamic-update-slice(%e, %u, %i, %z)
  %n = f32[64,32] negate(%x)
  %d2 = f32[64,32] dynamic-update-slice(%n, %u, %z, %z)
  %keep = f32[64,32] add(%n, %d2)
  ROOT %t = (f32[64,32], f32[64,32]) tuple(%d1, %keep)
})";
  auto module = hlo::ParseHloModule(kText).value();
  const hlo::HloComputation& entry = *module->entry_computation();
  BufferAssignment ba = BufferAssignment::Run(entry, entry.MakeInstructionPostOrder()).value();
  auto buffer = [&](const char* name) {
    return ba.BuffersOf(entry.GetInstructionWithName(name)).at(0);
  };
  // %e is read only by %d1: one buffer, and it is the output.
  EXPECT_EQ(buffer("d1"), buffer("e"));
  EXPECT_EQ(ba.buffers()[buffer("d1")].kind, LogicalBuffer::kOutput);
  // %n is read again after %d2, so %d2 needs its own buffer.
  EXPECT_NE(buffer("d2"), buffer("n"));
  for (uint32_t seed = 1; seed <= 4; ++seed) {
    ExpectExact(kText, "d1", "dynamic-update-slice", Indices(seed));
  }
}

// A donated operand holds the result and only the window is written: the bytes outside it
// are whatever the caller's buffer held (here the operand itself, unchanged).
TEST(DynamicSliceKernelTest, UpdateOfDonatedArgumentWritesOnlyTheWindow) {
  constexpr char kText[] = R"(HloModule m
ENTRY %main (x: f32[16,16], u: f32[4,4], i: s32[], j: s32[]) -> (f32[16,16]) {
  %x = f32[16,16] parameter(0)
  %u = f32[4,4] parameter(1)
  %i = s32[] parameter(2)
  %j = s32[] parameter(3)
  %d = f32[16,16] dynamic-update-slice(%x, %u, %i, %j)
  ROOT %t = (f32[16,16]) tuple(%d)
})";
  CpuCompileOptions options;
  options.donated_arguments = {true, false, false, false};
  auto exe = CompileForCpu(hlo::ParseHloModule(kText).value(), options).value();
  ASSERT_EQ(exe->output_aliases().size(), 1u);
  EXPECT_EQ(exe->output_aliases()[0], (std::pair<int64_t, int64_t>{0, 0}));
  std::vector<float> x(256), u(16, -1.f);
  for (int k = 0; k < 256; ++k) x[k] = static_cast<float>(k);
  const int32_t i = 14, j = -3;  // clamped to 12 and 0
  const void* args[] = {x.data(), u.data(), &i, &j};
  void* outs[] = {x.data()};
  ASSERT_TRUE(exe->Run(args, outs).ok());
  for (int r = 0; r < 16; ++r) {
    for (int c = 0; c < 16; ++c) {
      const bool in_window = r >= 12 && c < 4;
      EXPECT_EQ(x[r * 16 + c], in_window ? -1.f : static_cast<float>(r * 16 + c)) << r << "," << c;
    }
  }
}

TEST(DynamicSliceKernelTest, NonIntegerStartIndexIsRejected) {
  // The verifier rejects it before kernel selection; either way an error, not a crash.
  auto module = hlo::ParseHloModule(R"(HloModule m
ENTRY %main (x: f32[8], i: f32[]) -> f32[2] {
  %x = f32[8] parameter(0)
  %i = f32[] parameter(1)
  ROOT %ds = f32[2] dynamic-slice(%x, %i), dynamic_slice_sizes={2}
})");
  if (module.ok()) {
    EXPECT_FALSE(CompileForCpu(*std::move(module)).ok());
  }
}

}  // namespace
}  // namespace jx::cpu::dynamic_slice_kernel_test
