// jx's predictions against published TPU numbers (examples/validation/validation_cases.h has
// each number, its configuration and its source): every fast case's prediction lies in the
// corridor the case claims, so the README's table is what the model computes today.
#include "validation_cases.h"
#include "profiled_layer.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <string>
#include <vector>

#include <jx/jx.h>
#include <jx/devices/interconnect/collective_cost.h>
#include <jx/devices/interconnect/torus.h>
#include <jx/devices/tpu/chip_specs.h>

namespace jx::validation::validation_test {
namespace {

std::vector<const Case*> FastCases() {
  std::vector<const Case*> cases;
  for (const Case& c : Cases()) {
    if (!c.slow) cases.push_back(&c);
  }
  return cases;
}

class PublishedNumberTest : public ::testing::TestWithParam<const Case*> {};

TEST_P(PublishedNumberTest, PredictionWithinClaimedCorridor) {
  const Case& c = *GetParam();
  const Row row{.c = &c, .predicted = c.predict()};
  EXPECT_TRUE(row.within()) << c.what << ": jx " << FormatValue(row.predicted, c.unit) << " vs published "
                            << FormatValue(c.published, c.unit) << " (ratio " << row.predicted / c.published
                            << ", claimed " << c.ratio_lo << " .. " << c.ratio_hi << ")\n"
                            << c.note;
}

std::string CaseName(const ::testing::TestParamInfo<const Case*>& info) {
  std::string name = info.param->id;
  for (char& ch : name) {
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  }
  return name;
}

INSTANTIATE_TEST_SUITE_P(Published, PublishedNumberTest, ::testing::ValuesIn(FastCases()), CaseName);

TEST(ValidationTableTest, EveryCaseNamesItsSourceAndAClaim) {
  for (const Case& c : Cases()) {
    EXPECT_FALSE(c.source.empty()) << c.id;
    EXPECT_FALSE(c.note.empty()) << c.id;
    EXPECT_GT(c.published, 0) << c.id;
    EXPECT_LT(c.ratio_lo, c.ratio_hi) << c.id;
    EXPECT_TRUE((c.ratio_lo <= 1 && 1 <= c.ratio_hi) || c.gap) << c.id << ": a claim must include the published number";
  }
}

TEST(ValidationTableTest, FormatsMarkdownRows) {
  const Case c{.id = "x", .what = "an all-gather", .source = "[src]", .published = 680e-6, .unit = "us",
               .ratio_lo = 0.8, .ratio_hi = 1.2, .note = "n"};
  const std::string table = FormatTable({Row{.c = &c, .predicted = 582e-6}});
  EXPECT_NE(table.find("| an all-gather | 680 us | 582 us | -14% | -20% .. +20% | [src] |"), std::string::npos)
      << table;
  EXPECT_EQ(FormatValue(0.462, "%"), "46.2%");
}

// The book10 all-gather (int32[512, 512] blocks gathered over 'Y' on a v5e 2x4 slice) run with
// real data on 8 simulated chips: the pod's clocks charge what the interconnect model says,
// so the table's model-only rows stand for what a run reports.
TEST(ValidationRealRunTest, EightChipAllGatherChargesTheInterconnectModel) {
  namespace jnp = jx::numpy;
  const tpu::Pod pod = tpu::make_pod("v5e", {2, 4});
  const Mesh mesh = make_mesh({2, 4}, {"X", "Y"}, pod.devices());
  auto gather = jit(shard_map([](const Array& a) { return lax::all_gather(a, "Y", 1, /*tiled=*/true); }, mesh,
                              in_specs{P("X", "Y")}, out_specs{P("X", none)}, ShardMapOptions{.check_vma = false}));
  const Array a = jnp::arange(1024 * 2048, int32).reshape({1024, 2048});
  const Array gathered = gather(a);
  double communication = 0;
  for (const tpu::ChipStepReport& chip : pod.last_step().chips) {
    communication = std::max(communication, chip.communication_seconds);
  }
  EXPECT_TRUE(jnp::array_equal(gathered, a));  // (a step of its own: read the report first)
  const ici::Torus torus = ici::Torus::ForSlice(tpu::ChipSpec("v5e"), {2, 4});
  const double model = ici::CostCollective(torus, ici::CollectiveKind::kAllGather,
                                           AbstractMesh({2, 4}, {"X", "Y"}).AxisGroups({"Y"}), 4 * 512 * 2048)
                           .seconds;
  EXPECT_NEAR(communication / model, 1.0, 0.01) << communication << " s vs " << model << " s";
  // 3 hops of 1 MiB at eta * W on a line of 4 (no wraparound below 16 on v5e), plus t0.
  const double by_hand = 3.0 * (1 << 20) / (0.964 * 4.5e10) + 2.29e-6;  // latency (3 us) < bandwidth
  EXPECT_NEAR(model / by_hand, 1.0, 0.05) << model;
}

// The scaling book's profiled layer (Part 9) planned on a v2-8: the rows are the plan's per-op
// times, and those are what the chips' peak and the interconnect give by hand.
TEST(ValidationProfiledLayerTest, RowsAreThePlansPerOpTimes) {
  const tpu::Pod pod = tpu::make_pod("v2", {2, 2});
  const BookFfwProfile profile = PlanBookFfw(pod);
  EXPECT_EQ(profile.num_reduce_scatters, 1);
  EXPECT_EQ(profile.num_other_collectives, 0) << profile.plan.ToString();
  EXPECT_EQ(profile.reduce_scatter_bytes, 2 * 8 * 1024 * 4096);  // per chip: bf16[8,1024,4096]
  for (const Case& c : Cases()) {
    if (c.id == "book9.ffw_up_projection") {
      EXPECT_DOUBLE_EQ(c.predict(), profile.up_projection_seconds);
    }
    if (c.id == "book9.reduce_scatter") {
      EXPECT_DOUBLE_EQ(c.predict(), profile.reduce_scatter_seconds);
    }
  }
  // Each projection: 2 * 8 * 1024 * 8192 * 16384 FLOPs at the book's 23e12 per core (95.6 ms),
  // compute-bound; the MXU's weight-tile fill/drain and the VMEM grid steps add under 2%.
  const double at_peak = 2.0 * 8 * 1024 * 8192 * 16384 / 23e12;
  for (const double seconds : {profile.up_projection_seconds, profile.down_projection_seconds}) {
    EXPECT_GE(seconds / at_peak, 1.0) << profile.plan.ToString();
    EXPECT_LT(seconds / at_peak, 1.02) << profile.plan.ToString();
  }
  // The reduce-scatter over 'model', the two cores of each chip (make_mesh orders a v2-8 as
  // JAX does): one on-chip hop of half the 134 MB at eta * W, plus t0.
  const tpu::TpuChipSpec& v2 = tpu::ChipSpec("v2");
  const double by_hand = (2.0 * 8 * 1024 * 8192 / 2) / (v2.ici_efficiency * v2.core_link_bandwidth) +
                         v2.ici_collective_fixed_s;
  const tpu::CollectiveStepEntry& rs = profile.plan.step.collectives.at(0);
  EXPECT_NE(rs.algorithm.find("torus axis 2"), std::string::npos) << rs.algorithm;
  EXPECT_NEAR(profile.reduce_scatter_seconds / by_hand, 1.0, 0.02);
  // The step is the two projections then the reduce-scatter: it has nothing to overlap.
  EXPECT_NEAR(profile.plan.step.wall_seconds /
                  (profile.up_projection_seconds + profile.down_projection_seconds + profile.reduce_scatter_seconds),
              1.0, 0.01)
      << profile.plan.ToString();
  EXPECT_TRUE(profile.plan.fits()) << profile.plan.ToString();
}

// The whole layer (attention, then the FFW, with residuals) planned on a v2-8: every projection
// is a per-core dot at the book's peak (the chapter's exercise for attention: "try to do the
// same exercise of calculating how long these should take").
TEST(ValidationProfiledLayerTest, WholeLayerProjectionsRunAtPeak) {
  const tpu::Pod pod = tpu::make_pod("v2", {2, 2});
  const tpu::PodPlan plan = PlanBookLayer(pod);
  // Per core: Q, K, V and O are [8 * 1024, 8192] x [8192, 16 heads * 256]; W_in and W_out as above.
  const double attention_flops = 2.0 * 8 * 1024 * 8192 * 16 * 256, ffw_flops = 2.0 * 8 * 1024 * 8192 * 16384;
  double attention_projections = 0;
  int ffw_projections = 0;
  double projections = 0;
  for (const InstructionCost& row : plan.costliest_instructions) {
    // A projection is one per-core dot, or two half dots where the partitioner priced a
    // collective matmul over the 2-way model axis cheaper (one step per core of the axis); a
    // projection's fusion may count a few elementwise FLOPs beside its dot's.
    const bool ffw = std::abs(row.flops / ffw_flops - 1) < 1e-3;
    double attention_share = 0;
    for (const double share : {1.0, 0.5}) {
      if (std::abs(row.flops / (share * attention_flops) - 1) < 1e-3) attention_share = share;
    }
    if (attention_share == 0 && !ffw) continue;
    if (ffw) ++ffw_projections;
    attention_projections += attention_share;
    projections += row.seconds;
    const double at_peak = (ffw ? ffw_flops : attention_share * attention_flops) / 23e12;
    EXPECT_GE(row.seconds / at_peak, 1.0) << row.name;
    EXPECT_LT(row.seconds / at_peak, 1.02) << row.name;
  }
  EXPECT_DOUBLE_EQ(attention_projections, 4) << plan.ToString();
  EXPECT_EQ(ffw_projections, 2) << plan.ToString();
  EXPECT_GT(plan.step.wall_seconds, projections);
  EXPECT_TRUE(plan.fits()) << plan.ToString();
}

// The same layer at small sizes run with data on a v2-8: the chips' step is the dry run's
// plan, and the sharded result is the layer's value.
TEST(ValidationProfiledLayerTest, DryRunEqualsARealRunOnSmallShapes) {
  namespace jnp = jx::numpy;
  const BookFfwConfig small{.batch = 8, .seq = 64, .d_model = 256, .d_ff = 512};
  const tpu::Pod pod = tpu::make_pod("v2", {2, 2});
  const Mesh mesh = make_mesh({4, 2}, {"data", "model"}, pod.devices());
  const tpu::PodPlan plan = CompileBookFfw(mesh, small).plan();

  const Array x = jx::random::normal(jx::random::key(0), {small.batch, small.seq, small.d_model}, bfloat16);
  const Array w_in = jx::random::normal(jx::random::key(1), {small.d_model, small.d_ff}, bfloat16);
  const Array w_out = jx::random::normal(jx::random::key(2), {small.d_ff, small.d_model}, bfloat16);
  auto ffw = jit([](const Array& x, const Array& w_in, const Array& w_out) { return BookFfw(x, w_in, w_out); },
                 in_shardings{NamedSharding(mesh, P("data", none, none)), NamedSharding(mesh, P(none, "model")),
                              NamedSharding(mesh, P("model", none))},
                 out_shardings{NamedSharding(mesh, P("data", none, "model"))});
  const Array out = ffw(x, w_in, w_out);
  const tpu::StepReport run = pod.last_step();
  EXPECT_NEAR(run.wall_seconds / plan.step.wall_seconds, 1.0, 1e-9) << run.ToString() << plan.ToString();
  ASSERT_EQ(run.collectives.size(), plan.step.collectives.size());
  EXPECT_EQ(run.collectives[0].kind, "reduce-scatter");

  // The chips multiply bf16 with f32 accumulation and round each projection to bf16; the
  // reference does the same on the host, so they differ by the rounding of the two partial
  // sums the reduce-scatter adds (a few bf16 ulps of the result's scale).
  const Array tmp = jnp::einsum("btd,df->btf", x.astype(float32), w_in.astype(float32)).astype(bfloat16);
  const Array expected = jnp::einsum("btf,fd->btd", tmp.astype(float32), w_out.astype(float32));
  const double scale = jnp::max(jnp::abs(expected)).item<float>();
  EXPECT_TRUE(jnp::allclose(out.astype(float32), expected, /*rtol=*/0, /*atol=*/4 * scale / 256)) << scale;
}

}  // namespace
}  // namespace jx::validation::validation_test
