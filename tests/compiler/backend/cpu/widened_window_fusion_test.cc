// WidenedWindowFusion and the kernels it feeds: convert(T -> f64) -> reduce-window(f64) ->
// convert(f64 -> T), how lax lowers f16/bf16/f32 cumsum, cumprod and reduce_window_sum,
// becomes one kCustom fusion that runs the kernel library's T-typed scan or window. The
// compiled result must equal the library called directly in T (what eager runs), bit for bit,
// for every narrow float type, at lengths around a vector's width (1, 15, 16, 17, 33), along
// contiguous and strided axes, as prefix and suffix scans. Chains the fusion must leave alone
// (the f64 window read elsewhere, an init other than the identity, a max reducer) keep their
// unfused kernels.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_join.h"
#include "jx/compiler/backend/cpu/widened_window_fusion.h"
#include "jx/compiler/hlo/hlo_computation.h"
#include "jx/compiler/hlo/str_util.h"
#include "jx/lax/kernels/cumulative.h"
#include "jx/lax/kernels/window.h"
#include "tests/compiler/backend/cpu/native_kernel_test_util.h"

namespace jx::cpu::widened_window_fusion_test {
namespace {

using hlo::HloInstruction;
using hlo::HloOpcode;
using hlo::Literal;
using testing::SpecialLiteral;

struct NarrowType {
  const char* hlo;
  DType dtype;
};
const NarrowType kTypes[] = {{"f32", DType::kFloat32}, {"f16", DType::kFloat16}, {"bf16", DType::kBFloat16}};

std::string Dims(const std::vector<int64_t>& d) { return absl::StrJoin(d, ","); }

// x: T[dims] -> convert -> f64 reduce-window(window, init) with reducer op -> convert -> T.
// `extra` ends the entry (it may read %w and %y, and then names the root, whose shape is
// root_shape); without it %y is the root.
std::string ChainModule(const std::string& t, const std::vector<int64_t>& in, const std::vector<int64_t>& out,
                        const std::string& window, const std::string& op, const std::string& init,
                        const std::string& extra = "", const std::string& root_shape = "") {
  return hlo::StrCat("HloModule chain\n%red (a: f64[], b: f64[]) -> f64[] {\n  %a = f64[] parameter(0)\n",
                     "  %b = f64[] parameter(1)\n  ROOT %c = f64[] ", op, "(%a, %b)\n}\nENTRY %main (x: ", t,
                     "[", Dims(in), "]) -> ", root_shape.empty() ? hlo::StrCat(t, "[", Dims(out), "]") : root_shape,
                     " {\n  %x = ", t, "[", Dims(in), "] parameter(0)\n  %xw = f64[", Dims(in),
                     "] convert(%x)\n  %i = f64[] constant(", init, ")\n  %w = f64[", Dims(out),
                     "] reduce-window(%xw, %i), window={", window, "}, to_apply=%red\n  ", extra.empty() ? "ROOT " : "", "%y = ", t, "[",
                     Dims(out), "] convert(%w)\n", extra, "}\n");
}

// A running prefix (or suffix) window along axis.
std::string ScanWindow(const std::vector<int64_t>& dims, size_t axis, bool reverse) {
  std::vector<std::string> size, pad;
  for (size_t d = 0; d < dims.size(); ++d) {
    const int64_t p = d == axis ? dims[d] - 1 : 0;
    size.push_back(std::to_string(d == axis ? dims[d] : 1));
    pad.push_back(reverse ? hlo::StrCat("0_", p) : hlo::StrCat(p, "_0"));
  }
  return hlo::StrCat("size=", absl::StrJoin(size, "x"), " pad=", absl::StrJoin(pad, "x"));
}

// The one fusion of the compiled entry (null if there is none).
const HloInstruction* OnlyFusion(const CpuExecutable& exe) {
  const HloInstruction* fusion = nullptr;
  for (const HloInstruction* instr : exe.computation().instructions()) {
    if (instr->opcode() == HloOpcode::kFusion) {
      if (fusion != nullptr) return nullptr;
      fusion = instr;
    }
  }
  return fusion;
}

struct Compiled {
  std::unique_ptr<CpuExecutable> exe;
  Literal got;
};

Compiled CompileAndRun(const std::string& text, const Literal& x) {
  Compiled c;
  auto module = hlo::ParseHloModule(text);
  EXPECT_TRUE(module.ok()) << module.status();
  if (!module.ok()) return c;
  auto exe = CompileForCpu(*std::move(module));
  EXPECT_TRUE(exe.ok()) << exe.status();
  if (!exe.ok()) return c;
  c.exe = *std::move(exe);
  auto out = c.exe->Run({&x});
  EXPECT_TRUE(out.ok()) << out.status();
  if (out.ok()) c.got = std::move((*out)[0]);
  return c;
}

bool SameBytes(const Literal& a, const std::vector<uint8_t>& b) {
  return a.untyped_data().size() == b.size() && std::memcmp(a.untyped_data().data(), b.data(), b.size()) == 0;
}

TEST(WidenedWindowFusionTest, ScansRunEagersKernelInTheNarrowType) {
  std::mt19937 rng(7);
  for (const NarrowType& t : kTypes) {
    for (const int64_t n : {1, 15, 16, 17, 33}) {
      // Contiguous lines, strided lines (n lanes), and a middle axis.
      const std::vector<std::pair<std::vector<int64_t>, size_t>> layouts = {
          {{3, n}, 1}, {{n, 5}, 0}, {{2, n, 3}, 1}};
      for (const auto& [dims, axis] : layouts) {
        for (const bool reverse : {false, true}) {
          for (const char* op : {"add", "multiply"}) {
            SCOPED_TRACE(hlo::StrCat(t.hlo, " ", op, " [", Dims(dims), "] axis ", axis, reverse ? " suffix" : ""));
            const std::string text = ChainModule(t.hlo, dims, dims, ScanWindow(dims, axis, reverse), op,
                                                 op == std::string("add") ? "0" : "1");
            const Literal x = SpecialLiteral(hlo::ShapeUtil::MakeShape(hlo::StringToPrimitiveType(t.hlo).value(), dims),
                                             rng, 0.5, 1.5, 0.03);
            Compiled c = CompileAndRun(text, x);
            ASSERT_TRUE(c.exe);
            const HloInstruction* fusion = OnlyFusion(*c.exe);
            ASSERT_NE(fusion, nullptr);
            EXPECT_EQ(fusion->fusion_kind(), hlo::FusionKind::kCustom);
            EXPECT_EQ(c.exe->KernelKind(fusion->name()), "scan");
            int64_t outer = 1, inner = 1;
            for (size_t d = 0; d < axis; ++d) outer *= dims[d];
            for (size_t d = axis + 1; d < dims.size(); ++d) inner *= dims[d];
            std::vector<uint8_t> want(x.untyped_data().size());
            lax::kernels::Cumulative(t.dtype,
                                     op == std::string("add") ? lax::kernels::CumulativeOp::kSum
                                                              : lax::kernels::CumulativeOp::kProd,
                                     x.untyped_data().data(), want.data(), outer, dims[axis], inner, reverse, nullptr);
            EXPECT_TRUE(SameBytes(c.got, want));
          }
        }
      }
    }
  }
}

TEST(WidenedWindowFusionTest, WindowSumsRunEagersKernelInTheNarrowType) {
  struct Case {
    std::vector<int64_t> in, out;
    const char* window;
    std::vector<lax::kernels::WindowAxis> axes;
  };
  const Case cases[] = {
      {{17, 33}, {17, 33}, "size=3x3 pad=1_1x1_1", {{17, 17, 3, 1, 1, 1}, {33, 33, 3, 1, 1, 1}}},
      {{16, 15}, {8, 7}, "size=2x2 stride=2x2", {{16, 8, 2, 2}, {15, 7, 2, 2}}},
      {{1, 33}, {1, 16}, "size=1x3 stride=1x2", {{1, 1}, {33, 16, 3, 2}}},
  };
  std::mt19937 rng(11);
  for (const NarrowType& t : kTypes) {
    for (const Case& k : cases) {
      SCOPED_TRACE(hlo::StrCat(t.hlo, " ", k.window));
      const std::string text = ChainModule(t.hlo, k.in, k.out, k.window, "add", "0");
      const Literal x = SpecialLiteral(hlo::ShapeUtil::MakeShape(hlo::StringToPrimitiveType(t.hlo).value(), k.in), rng,
                                       -2, 2, 0.03);
      Compiled c = CompileAndRun(text, x);
      ASSERT_TRUE(c.exe);
      const HloInstruction* fusion = OnlyFusion(*c.exe);
      ASSERT_NE(fusion, nullptr);
      EXPECT_EQ(c.exe->KernelKind(fusion->name()), "reduce-window");
      std::vector<uint8_t> want(c.got.untyped_data().size());
      lax::kernels::ReduceWindow(t.dtype, lax::kernels::WindowReducer::kSum, x.untyped_data().data(), k.axes, nullptr,
                                 want.data());
      EXPECT_TRUE(SameBytes(c.got, want));
    }
  }
}

TEST(WidenedWindowFusionTest, LeavesOtherChainsAlone) {
  const std::vector<int64_t> dims = {4, 16};
  const std::string scan = ScanWindow(dims, 1, false);
  // The f64 window is also an output: it must be written to memory, so nothing fuses.
  const std::string shared = ChainModule("f32", dims, dims, scan, "add", "0",
                                   "  ROOT %t = (f32[4,16], f64[4,16]) tuple(%y, %w)\n", "(f32[4,16], f64[4,16])");
  // An init that is not the identity, and a max reducer (never widened by the lowering).
  const std::string offset = ChainModule("f32", dims, dims, scan, "add", "1");
  const std::string max = ChainModule("f32", dims, dims, scan, "maximum", "0");
  std::mt19937 rng(3);
  const Literal x = testing::RandomLiteral(hlo::ShapeUtil::MakeShape(hlo::F32, dims), rng);
  for (const std::string* text : {&shared, &offset, &max}) {
    Compiled c = CompileAndRun(*text, x);
    ASSERT_TRUE(c.exe);
    EXPECT_EQ(OnlyFusion(*c.exe), nullptr) << *text;
    EXPECT_EQ(c.exe->KernelKind("w"), "scan");
  }
}

TEST(WidenedWindowFusionTest, KeepsTheSchedule) {
  // Two chains in one scheduled computation: after the pass the schedule still holds every
  // instruction once, each after its operands.
  const std::vector<int64_t> dims = {2, 17};
  std::string text = ChainModule("f32", dims, dims, ScanWindow(dims, 1, false), "add", "0",
                                 "  %w2 = f64[2,17] reduce-window(%xw, %i), window={size=1x17 pad=0_0x0_16}, "
                                 "to_apply=%red\n  %y2 = f32[2,17] convert(%w2)\n  ROOT %s = f32[2,17] add(%y, %y2)\n");
  auto module = hlo::ParseHloModule(text);
  ASSERT_TRUE(module.ok()) << module.status();
  hlo::HloComputation* entry = (*module)->entry_computation();
  entry->set_schedule(entry->MakeInstructionPostOrder());
  auto changed = WidenedWindowFusion().Run(module->get());
  ASSERT_TRUE(changed.ok()) << changed.status();
  EXPECT_TRUE(*changed);
  const std::vector<HloInstruction*>& schedule = entry->schedule();
  EXPECT_EQ(static_cast<int64_t>(schedule.size()), entry->instruction_count());
  int fusions = 0;
  for (const HloInstruction* instr : schedule) {
    fusions += instr->opcode() == HloOpcode::kFusion;
    if (instr->opcode() == HloOpcode::kFusion) {
      EXPECT_NE(WidenedReduceWindow(*instr), nullptr);
    }
  }
  EXPECT_EQ(fusions, 2);
  EXPECT_EQ(entry->MakeSequentialOrder(), schedule);
  // Sharing %xw: the widening convert stays for no one once both chains are fused.
  EXPECT_EQ(entry->GetInstructionWithName("xw"), nullptr);
}

}  // namespace
}  // namespace jx::cpu::widened_window_fusion_test
