// Collectives of several operands on the 8 chips of a v5e 4x2 slice (hand-written SPMD HLO,
// compiled by the TPU pipeline, so the asynchronous starts and dones carry every operand):
// each operand gets what a collective of it alone gives, in one meeting of the chips, timed as
// one collective of all their bytes (one latency).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "jx/compiler/hlo/hlo_parser.h"
#include "jx/devices/tpu/pod_program.h"
#include "jx/jx.h"

namespace jx::tpu::variadic_collectives_test {
namespace {

constexpr int kChips = 8;

std::shared_ptr<const PodProgram> Compile(const Pod& pod, std::string_view text, std::vector<ShapedArray> outs) {
  absl::StatusOr<std::unique_ptr<hlo::HloModule>> module = hlo::ParseHloModule(text);
  EXPECT_TRUE(module.ok()) << module.status();
  std::vector<const TpuChip*> chips;
  for (const Device* d : pod.devices()) chips.push_back(static_cast<const TpuChip*>(d));
  return CompilePodProgram(*std::move(module), pod.client(), chips, std::move(outs), "jit(spmd)");
}

constexpr std::string_view kHeader = R"(HloModule spmd

%sum (x: f32[], y: f32[]) -> f32[] {
  %x = f32[] parameter(0)
  %y = f32[] parameter(1)
  ROOT %s = f32[] add(f32[] %x, f32[] %y)
}

)";

// Partition p's arguments: a = f32[4] {10p .. 10p+3}, b = f32[2] {-p, 100p}.
std::vector<Arrays> Args(const Pod& pod) {
  std::vector<Arrays> args;
  for (int p = 0; p < kChips; ++p) {
    args.push_back({device_put(numpy::array(std::vector<float>{10.f * p, 10.f * p + 1, 10.f * p + 2, 10.f * p + 3}, {4}),
                               pod.devices()[p]),
                    device_put(numpy::array(std::vector<float>{-1.f * p, 100.f * p}, {2}), pod.devices()[p])});
  }
  return args;
}

TEST(VariadicCollectivesTest, EachOperandGetsWhatItsOwnCollectiveGives) {
  // The same collectives of one operand each are the reference: both programs run on the chips.
  Pod pod = make_pod("v5e", {4, 2});
  const std::string groups = "replica_groups={{0,1},{2,3},{4,5},{6,7}}";
  const std::string variadic = StrCat(kHeader, R"(ENTRY %main (a: f32[4], b: f32[2]) -> ((f32[4], f32[2]), (f32[8], f32[4]), (f32[2], f32[1])) {
  %a = f32[4]{0} parameter(0)
  %b = f32[2]{0} parameter(1)
  %ar = (f32[4]{0}, f32[2]{0}) all-reduce(%a, %b), channel_id=1, )", groups, R"(, use_global_device_ids=true, to_apply=%sum
  %ag = (f32[8]{0}, f32[4]{0}) all-gather(%a, %b), channel_id=2, )", groups, R"(, dimensions={0}, use_global_device_ids=true
  %rs = (f32[2]{0}, f32[1]{0}) reduce-scatter(%a, %b), channel_id=3, )", groups, R"(, dimensions={0}, use_global_device_ids=true, to_apply=%sum
  ROOT %t = ((f32[4]{0}, f32[2]{0}), (f32[8]{0}, f32[4]{0}), (f32[2]{0}, f32[1]{0})) tuple(%ar, %ag, %rs)
})");
  auto one_each = [&](std::string_view x, std::string_view shape, int64_t n) {
    const std::string gathered = StrCat("f32[", 2 * n, "]{0}"), scattered = StrCat("f32[", n / 2, "]{0}");
    return StrCat(kHeader, "ENTRY %main (", x, ": ", shape, ") -> (", shape, ", ", gathered, ", ", scattered,
                  ") {\n  %", x, " = ", shape, "{0} parameter(0)\n",
                  "  %ar = ", shape, "{0} all-reduce(%", x, "), channel_id=1, ", groups,
                  ", use_global_device_ids=true, to_apply=%sum\n",
                  "  %ag = ", gathered, " all-gather(%", x, "), channel_id=2, ", groups,
                  ", dimensions={0}, use_global_device_ids=true\n",
                  "  %rs = ", scattered, " reduce-scatter(%", x, "), channel_id=3, ", groups,
                  ", dimensions={0}, use_global_device_ids=true, to_apply=%sum\n",
                  "  ROOT %t = (", shape, "{0}, ", gathered, ", ", scattered, ") tuple(%ar, %ag, %rs)\n}\n");
  };
  auto program = Compile(pod, variadic,
                         {ShapedArray{{4}, float32}, ShapedArray{{2}, float32}, ShapedArray{{8}, float32},
                          ShapedArray{{4}, float32}, ShapedArray{{2}, float32}, ShapedArray{{1}, float32}});
  EXPECT_THAT(program->as_text(), ::testing::HasSubstr("all-reduce-start(")) << program->as_text();
  auto only_a = Compile(pod, one_each("a", "f32[4]", 4),
                        {ShapedArray{{4}, float32}, ShapedArray{{8}, float32}, ShapedArray{{2}, float32}});
  auto only_b = Compile(pod, one_each("b", "f32[2]", 2),
                        {ShapedArray{{2}, float32}, ShapedArray{{4}, float32}, ShapedArray{{1}, float32}});
  const std::vector<Arrays> args = Args(pod);
  std::vector<Arrays> a_args, b_args;
  for (const Arrays& p : args) {
    a_args.push_back({p[0]});
    b_args.push_back({p[1]});
  }
  const std::vector<Arrays> got = program->ExecuteShards(args);
  const std::vector<Arrays> want_a = only_a->ExecuteShards(a_args), want_b = only_b->ExecuteShards(b_args);
  for (int p = 0; p < kChips; ++p) {
    for (int k = 0; k < 3; ++k) {
      EXPECT_EQ(got[p][2 * k].to_vector<float>(), want_a[p][k].to_vector<float>()) << "chip " << p << " op " << k;
      EXPECT_EQ(got[p][2 * k + 1].to_vector<float>(), want_b[p][k].to_vector<float>()) << "chip " << p << " op " << k;
    }
  }
  // A spot check by hand: chip 3's all-reduce over {2, 3}.
  EXPECT_EQ(got[3][1].to_vector<float>(), (std::vector<float>{-5.f, 500.f}));
}

TEST(VariadicCollectivesTest, TupleAllToAllSendsOperandIToMemberI) {
  // XLA's tuple all-to-all over groups of 4: chip r's result i is chip i's (in its group)
  // operand r, here the f32[2] {100 x chip + 10 x operand, the same + 1}.
  Pod pod = make_pod("v5e", {4, 2});
  auto program = Compile(pod, StrCat(kHeader, R"(ENTRY %main {
  %p0 = f32[2]{0} parameter(0)
  %p1 = f32[2]{0} parameter(1)
  %p2 = f32[2]{0} parameter(2)
  %p3 = f32[2]{0} parameter(3)
  ROOT %a2a = (f32[2]{0}, f32[2]{0}, f32[2]{0}, f32[2]{0}) all-to-all(%p0, %p1, %p2, %p3), channel_id=1, replica_groups={{0,1,2,3},{4,5,6,7}}
})"),
                         std::vector<ShapedArray>(4, ShapedArray{{2}, float32}));
  EXPECT_THAT(program->as_text(), ::testing::HasSubstr("all-to-all-start(")) << program->as_text();
  std::vector<Arrays> args(kChips);
  for (int p = 0; p < kChips; ++p) {
    for (int k = 0; k < 4; ++k) {
      const float v = 100.f * p + 10.f * k;
      args[p].push_back(device_put(numpy::array(std::vector<float>{v, v + 1}, {2}), pod.devices()[p]));
    }
  }
  const std::vector<Arrays> out = program->ExecuteShards(args);
  for (int p = 0; p < kChips; ++p) {
    const int group = p / 4, rank = p % 4;
    for (int i = 0; i < 4; ++i) {
      const float v = 100.f * (4 * group + i) + 10.f * rank;
      EXPECT_EQ(out[p][i].to_vector<float>(), (std::vector<float>{v, v + 1})) << "chip " << p << " result " << i;
    }
  }
}

TEST(VariadicCollectivesTest, SeveralOperandsAreTimedAsOneCollectiveOfTheirBytes) {
  // all-reduce(a, b) with a f32[256,256] and b f32[64,256] moves the bytes of one
  // f32[320,256] all-reduce and pays its fixed cost once: its step time equals that one's,
  // and two all-reduces one after the other (the second reads the first) take longer.
  Pod pod = make_pod("v5e", {4, 2});
  const std::string all = "replica_groups={{0,1,2,3,4,5,6,7}}, use_global_device_ids=true, to_apply=%sum";
  auto program = [&](std::string_view body, std::vector<ShapedArray> outs) {
    return Compile(pod, StrCat(kHeader, "ENTRY %main {\n",
                               "  %a = f32[256,256]{1,0} parameter(0)\n  %b = f32[64,256]{1,0} parameter(1)\n", body,
                               "\n}\n"),
                   std::move(outs));
  };
  auto combined = program(StrCat("  ROOT %ar = (f32[256,256]{1,0}, f32[64,256]{1,0}) all-reduce(%a, %b), channel_id=1, ",
                                 all),
                          {ShapedArray{{256, 256}, float32}, ShapedArray{{64, 256}, float32}});
  auto single = program(StrCat("  %ab = f32[320,256]{1,0} concatenate(%a, %b), dimensions={0}\n",
                               "  ROOT %ar = f32[320,256]{1,0} all-reduce(%ab), channel_id=1, ", all),
                        {ShapedArray{{320, 256}, float32}});
  auto chained = program(StrCat("  %ra = f32[256,256]{1,0} all-reduce(%a), channel_id=1, ", all, "\n",
                                "  %head = f32[64,256]{1,0} slice(%ra), slice={[0:64], [0:256]}\n",
                                "  %sb = f32[64,256]{1,0} add(%head, %b)\n",
                                "  ROOT %rb = f32[64,256]{1,0} all-reduce(%sb), channel_id=2, ", all),
                         {ShapedArray{{64, 256}, float32}});
  std::vector<Arrays> args;
  for (int p = 0; p < kChips; ++p) {
    args.push_back({device_put(numpy::full({256, 256}, 1.0f), pod.devices()[p]),
                    device_put(numpy::full({64, 256}, 2.0f), pod.devices()[p])});
  }
  const std::vector<Arrays> out = combined->ExecuteShards(args);
  EXPECT_EQ(out[5][1].to_vector<float>()[0], 16.0f);
  const StepReport combined_step = combined->last_step();
  ASSERT_EQ(combined_step.collectives.size(), 1u);
  EXPECT_EQ(combined_step.collectives[0].kind, "all-reduce");
  EXPECT_EQ(combined_step.collectives[0].bytes, 320 * 256 * 4);
  single->ExecuteShards(args);
  chained->ExecuteShards(args);
  const double one = combined_step.communication_seconds();
  EXPECT_NEAR(one, single->last_step().communication_seconds(), 1e-12);
  EXPECT_GT(chained->last_step().communication_seconds(), one);
}

}  // namespace
}  // namespace jx::tpu::variadic_collectives_test
