// jx's predictions against published TPU numbers (examples/validation/validation_cases.h has
// each number, its configuration and its source): every fast case's prediction lies in the
// corridor the case claims, so the README's table is what the model computes today.
#include "validation_cases.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

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

}  // namespace
}  // namespace jx::validation
