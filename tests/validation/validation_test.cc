// jx's predictions against published TPU numbers (examples/validation/validation_cases.h has
// each number, its configuration and its source): every fast case's prediction lies in the
// corridor the case claims, so the README's table is what the model computes today.
#include "validation_cases.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <string>
#include <vector>

#include <jx/jx.h>
#include <jx/devices/interconnect/collective_cost.h>
#include <jx/devices/interconnect/torus.h>
#include <jx/devices/tpu/chip_specs.h>

namespace jx::validation {
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
    EXPECT_TRUE(c.ratio_lo <= 1 && 1 <= c.ratio_hi || c.gap) << c.id << ": a claim must include the published number";
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

}  // namespace
}  // namespace jx::validation
