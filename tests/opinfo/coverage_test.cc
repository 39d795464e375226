// The primitive x rule matrix: every registered primitive has a jvp, transpose, batching and
// lowering rule or an explicit Unsupported("why"), and an opinfo record (or a named test file that
// covers it). Prints the matrix; fails on an unexplained gap.
#include <iostream>
#include <map>
#include <set>
#include <string>

#include <gtest/gtest.h>

#include "opinfo.h"

namespace jx::opinfo::coverage_test {
namespace {

// Higher-order and transformation-internal primitives, tested where their callable lives.
const std::map<std::string, std::string> kTestedElsewhere = {
    {"custom_jvp_call", "tests/transforms/custom_derivatives_test.cc"},
    {"custom_vjp_call", "tests/transforms/custom_derivatives_test.cc"},
    {"custom_lin", "tests/transforms/custom_derivatives_test.cc"},
    {"checkpoint", "tests/transforms/custom_derivatives_test.cc, checkpoint_policies_test.cc"},
    {"name", "tests/transforms/checkpoint_policies_test.cc (checkpoint_name)"},
    {"optimization_barrier", "tests/transforms/optimization_barrier_test.cc"},
    {"jit", "tests/transforms/jit_test.cc"},
    {"shard_map", "tests/sharding/shard_map_collectives_test.cc, shard_map_transforms_test.cc"},
    // The SPMD layer's (registered once a sharding is used): identities that pin a layout.
    {"sharding_constraint", "tests/sharding/spmd_jit_test.cc, spmd_propagation_test.cc"},
    {"reshard", "tests/sharding/explicit_eager_test.cc (eager, jit, grad, errors)"},
    {"add_any", "every reverse-mode test (it sums cotangents)"},
    {"debug_callback", "tests/lax/debug_test.cc and tests/devices/tpu/debug_print_on_chip_test.cc"},
};

TEST(CoverageTest, EveryPrimitiveHasEveryRuleOrAReason) {
  lax::RegisterAll();
  RegisterShardMap();
  std::set<std::string> records;
  for (const OpInfo& info : Registry()) records.insert(info.name);
  std::string gaps;
  std::cout << "primitive                   jvp  transpose  batch  lower  tested by\n";
  for (Primitive p : GlobalRegistry().primitives()) {
    const PrimitiveRules& rules = GlobalRegistry().Get(p);
    const std::string name(p.name());
    auto cell = [&](bool has, const char* rule) -> std::string {
      if (has) return "yes";
      if (rules.unsupported.count(rule)) return "n/a";
      gaps += StrCat("  ", name, ": no ", rule, " rule and no reason\n");
      return "GAP";
    };
    const std::string jvp = cell(static_cast<bool>(rules.jvp), "jvp");
    const std::string transpose = cell(static_cast<bool>(rules.transpose), "transpose");
    const std::string batch = cell(static_cast<bool>(rules.batch), "batch");
    const std::string lower = cell(static_cast<bool>(rules.lower), "lower");
    std::string tested = records.count(name) ? "opinfo" : "";
    if (tested.empty()) {
      auto it = kTestedElsewhere.find(name);
      if (it != kTestedElsewhere.end()) {
        tested = it->second;
      } else {
        tested = "NONE";
        gaps += StrCat("  ", name, ": no opinfo record\n");
      }
    }
    std::printf("%-27s %-4s %-10s %-6s %-6s %s\n", name.c_str(), jvp.c_str(), transpose.c_str(), batch.c_str(),
                lower.c_str(), tested.c_str());
  }
  EXPECT_TRUE(gaps.empty()) << "unexplained gaps:\n" << gaps;
}

TEST(CoverageTest, ReasonsAreWritten) {
  lax::RegisterAll();
  RegisterShardMap();
  for (Primitive p : GlobalRegistry().primitives()) {
    for (const auto& [rule, why] : GlobalRegistry().Get(p).unsupported) {
      EXPECT_GE(why.size(), 10u) << p.name() << " " << rule << ": a reason must say why";
    }
  }
}

}  // namespace
}  // namespace jx::opinfo::coverage_test
