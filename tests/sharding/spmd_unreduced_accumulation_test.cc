// jit with shardings of a microbatched gradient accumulation on 8 v5e chips: the partitioner
// sums each layer's gradient over the data axis inside the scan (a psum per layer per
// microbatch in the per-device program); the TPU pipeline keeps the accumulators unreduced and
// all-reduces them once per step, in one all-reduce. Small integers: the gradients compare exactly.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "jx/devices/tpu/all_reduce_tally.h"
#include "jx/devices/tpu/pod_program.h"
#include "jx/jx.h"
#include "jx/sharding/spmd/spmd_jit.h"
#include "tests/devices/tpu/microbatched_loss.h"

namespace jx::spmd_unreduced_accumulation_test {
namespace {

namespace jnp = jx::numpy;

using testing::kChips;
using testing::kDim;
using testing::kLayers;
using testing::kMicrobatches;
using testing::kRowsPerChip;
using testing::Loss;
using testing::SmallInts;

TEST(SpmdUnreducedAccumulationTest, JitOfAMicrobatchScanAllReducesOncePerStep) {
  tpu::Pod pod = tpu::make_pod("v5e", {4, 2});
  Mesh mesh = make_mesh({kChips}, {"data"}, pod.devices());
  const Array w1 = SmallInts({kDim, kDim}, 1), w2 = SmallInts({kDim, kDim}, 2);
  const Array xs = SmallInts({kMicrobatches, kChips * kRowsPerChip, kDim}, 3);
  auto step = [](const Array& a, const Array& b, const Array& batches) {
    const std::vector<Array> zeros = {jnp::zeros_like(a), jnp::zeros_like(b)};
    auto [acc, unused] = lax::scan(
        [&](const std::vector<Array>& acc, const Array& x) {
          const std::vector<Array> g = grad(Loss)(std::vector<Array>{a, b}, x);
          return std::pair{std::vector<Array>{acc[0] + g[0], acc[1] + g[1]}, jnp::zeros({})};
        },
        zeros, batches);
    return acc;
  };
  NamedSharding replicated(mesh, P()), batch(mesh, P(none, "data"));
  auto jitted = jit(step, in_shardings{replicated, replicated, batch});
  const auto compiled = jitted.lower(w1, w2, device_put(xs, batch)).compile();
  // As partitioned: each layer's gradient psummed inside the scan body, every microbatch.
  const std::string text = compiled.as_text();
  const std::string jaxpr = text.substr(0, text.find("HloModule"));
  int64_t psums = 0;
  for (size_t at = jaxpr.find("psum["); at != std::string::npos; at = jaxpr.find("psum[", at + 1)) ++psums;
  EXPECT_GE(psums, kLayers) << jaxpr;
  auto program = std::dynamic_pointer_cast<const tpu::PodProgram>(compiled.program().executable());
  ASSERT_NE(program, nullptr);
  const std::vector<Array> got = jitted(w1, w2, device_put(xs, batch));
  const Array all = xs.reshape({kMicrobatches * kChips * kRowsPerChip, kDim});
  const std::vector<Array> want = grad(Loss)(std::vector<Array>{w1, w2}, all);
  for (size_t l = 0; l < want.size(); ++l) {
    EXPECT_EQ(device_put(got[l], devices("cpu")[0]).to_vector<float>(), want[l].to_vector<float>());
  }
  // As compiled: the layers' all-reduces after the loop, combined into one run.
  const tpu::AllReduceTally tally = program->all_reduces();
  EXPECT_EQ(tally.runs(), 1) << tally.ToString();
  for (const tpu::AllReduceRuns& a : tally.all_reduces) EXPECT_EQ(a.runs, 1) << tally.ToString();
}

}  // namespace
}  // namespace jx::spmd_unreduced_accumulation_test
