// The "lower" column of the opinfo suite: every record's samples are staged into a jaxpr
// (make_jaxpr-style, every argument abstract), lowered to HLO, verified, and evaluated with
// the reference HloEvaluator against eager execution, within the record's tolerance.
#include <cmath>
#include <functional>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "jx/compiler/hlo/hlo_evaluator.h"
#include "jx/compiler/hlo/hlo_verifier.h"
#include "jx/compiler/lower/literal_convert.h"
#include "jx/compiler/lower/lower_jaxpr.h"
#include "jx/sharding/shard_map_internal.h"
#include "jx/transforms/staging.h"
#include "opinfo.h"

namespace jx::opinfo::lowering_test {
namespace {

// The sample's op staged on abstract arguments of the sample's avals.
ClosedJaxpr Stage(const Sample& s) {
  std::vector<ShapedArray> avals;
  for (const Array& a : s.args) avals.push_back(a.aval());
  return TraceToJaxpr(
      [&s](absl::Span<const Array> args) {
        std::vector<Array> out = s.op(std::vector<Array>(args.begin(), args.end()));
        return Arrays(out.begin(), out.end());
      },
      avals, "f");
}

// The HLO collective a collective record lowers to ("" for pvary, which moves nothing).
std::string HloCollectiveOf(const std::string& record) {
  if (record == "psum_invariant" || record == "psum" || record == "pmax" || record == "pmin") return "all-reduce(";
  if (record == "all_gather") return "all-gather(";
  if (record == "reduce_scatter") return "reduce-scatter(";
  if (record == "all_to_all") return "all-to-all(";
  if (record == "ppermute") return "collective-permute(";
  if (record == "axis_index") return "partition-id()";
  return "";
}

// A collective's samples are shard_maps: each body (the per-device program) lowers for the
// mesh's chips, verified, with the record's HLO collective in it. (Running it is the jit
// column's: the HLO evaluator runs one partition.)
void LowerPerDeviceBodies(const OpInfo& info) {
  int lowered = 0;
  for (DType d : info.dtypes) {
    for (const Sample& s : SamplesFor(info, d)) {
      const std::string where = StrCat(info.name, " ", s.description);
      const ClosedJaxpr jaxpr = Stage(s);
      ASSERT_EQ(jaxpr.jaxpr->eqns.size(), 1u) << where << "\n" << jaxpr;
      const auto params = shard_map_internal::ShardMapParams::From(jaxpr.jaxpr->eqns[0].params);
      const std::vector<const Device*>& chips = params.mesh.devices();
      std::shared_ptr<const Lowering> lowering;
      try {
        lowering = chips.front()->client().Lower(params.jaxpr, {.name = "per_device", .device_assignment = chips});
      } catch (const std::exception& e) {
        ADD_FAILURE() << where << " lowering threw: " << e.what() << "\n" << params.jaxpr;
        continue;
      }
      const std::string hlo = lowering->as_text();
      EXPECT_THAT(hlo, ::testing::HasSubstr(HloCollectiveOf(info.name))) << where;
      ++lowered;
    }
  }
  EXPECT_GT(lowered, 0) << info.name << " has no samples";
}

class OpInfoLowerTest : public ::testing::TestWithParam<std::string> {};

TEST_P(OpInfoLowerTest, LowersVerifiesAndEvaluatesLikeEager) {
  lax::RegisterAll();
  const OpInfo& info = FindOpInfo(GetParam());
  int lowered = 0;
  if (info.collective) return LowerPerDeviceBodies(info);
  for (DType d : info.dtypes) {
    for (const Sample& s : SamplesFor(info, d)) {
      const std::string where = StrCat(info.name, " ", s.description);
      ClosedJaxpr jaxpr;
      try {
        jaxpr = Stage(s);
      } catch (const std::exception& e) {
        ADD_FAILURE() << where << " staging threw: " << e.what();
        continue;
      }
      absl::StatusOr<std::unique_ptr<hlo::HloModule>> module = LowerJaxpr(jaxpr, "jit_f", {.tuple_result = true});
      ASSERT_TRUE(module.ok()) << where << ": " << module.status() << "\n" << jaxpr;
      const absl::Status verified = hlo::VerifyHloModule(**module);
      ASSERT_TRUE(verified.ok()) << where << ": " << verified << "\n" << (*module)->ToString();
      ++lowered;
      // Evaluate (skipping the large parallel-path samples: the evaluator is a slow reference).
      int64_t elements = 0;
      for (const Array& a : s.args) elements += a.size();
      if (elements > 20000) continue;
      std::vector<hlo::Literal> args;
      for (const Array& a : s.args) args.push_back(ArrayToLiteral(a));
      std::vector<const hlo::Literal*> arg_ptrs;
      for (const hlo::Literal& l : args) arg_ptrs.push_back(&l);
      hlo::HloEvaluator evaluator;
      absl::StatusOr<hlo::Literal> result = evaluator.Evaluate(**module, arg_ptrs);
      ASSERT_TRUE(result.ok()) << where << ": " << result.status() << "\n" << (*module)->ToString();
      const std::vector<Array> want = s.op(s.args);
      ASSERT_EQ(result->tuple_elements().size(), want.size()) << where;
      for (size_t k = 0; k < want.size(); ++k) {
        ExpectArraysClose(LiteralToArray(result->tuple_elements()[k]), want[k], info.tolerance(want[k].dtype()),
                    StrCat(where, " output ", k));
      }
    }
  }
  EXPECT_GT(lowered, 0) << info.name << " has no samples";
}

INSTANTIATE_TEST_SUITE_P(AllOps, OpInfoLowerTest, ::testing::ValuesIn(AllOpInfoNames()),
                         [](const ::testing::TestParamInfo<std::string>& p) { return p.param; });

}  // namespace
}  // namespace jx::opinfo::lowering_test
