// FSDP x TP on 8 v5e chips (data 4 x model 2, Megatron's column and row splits): the weight
// gradients' partial sums over the data axis are reduce-scattered into the parameters'
// sharding (the update's), as XLA's partitioner does, instead of all-reduced to the model
// axis' full size and kept until the update. The plan counts the
// collectives and their bytes; the per-chip HBM peak drops by the full-size gradients no
// longer held; the new parameters equal the unsharded program's (values in {-1, 0, 1}: exact).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "jx/jx.h"
#include "tests/devices/tpu/microbatched_loss.h"

namespace jx::weight_gradient_reduce_scatter_test {
namespace {

namespace jnp = jx::numpy;

using testing::Loss;
using testing::SmallInts;

constexpr int64_t kData = 4, kModel = 2, kLayers = 6, kDim = 512, kRows = 1024;
// A gradient as the all-reduce over 'data' leaves it (f32[512,256]: split over 'model' only)
// and the block a reduce-scatter leaves a chip (f32[128,256]). Each chip's 256 rows of
// activations outweigh a gradient, so the partitioner reduces the partial products rather than
// gathering the activations.
constexpr int64_t kAllReducedBytes = kDim * kDim * 4 / kModel;
constexpr int64_t kBlockBytes = kAllReducedBytes / kData;

// Layer l's weight: even layers split columns over 'model' (P('data', 'model')), odd ones rows
// (P('model', 'data')); both split d_model over 'data' (FSDP).
PartitionSpec WeightSpec(size_t l) { return l % 2 == 0 ? P("data", "model") : P("model", "data"); }
// The same without 'data': what the partitioner used to all-reduce the gradient to.
PartitionSpec AllReducedSpec(size_t l) { return l % 2 == 0 ? P(none, "model") : P("model", none); }

// One SGD step of the linear net (Loss: 0.5 |x w1 ... wL|^2). `all_reduced` constrains each
// gradient to its weight's sharding without 'data' first: the all-reduce the partitioner used to
// choose, as the baseline.
auto SgdStep(const Mesh& mesh, bool all_reduced) {
  return [mesh, all_reduced](const std::vector<Array>& ws, const Array& x) {
    std::vector<Array> g = grad(Loss)(ws, x);
    std::vector<Array> next;
    for (size_t l = 0; l < ws.size(); ++l) {
      if (all_reduced) g[l] = lax::with_sharding_constraint(g[l], NamedSharding(mesh, AllReducedSpec(l)));
      next.push_back(ws[l] - g[l] * 0.5f);
    }
    return next;
  };
}

// Layer l's weight: one entry of +-1 per row and column (row i has it in column
// (i * (2l + 3) + l) mod kDim), so every activation and cotangent stays in {-1, 0, 1} and every
// gradient entry is a sum of kRows of them: exact in bf16 and f32 through all the layers.
Array SignedPermutation(int64_t l) {
  std::vector<float> v(static_cast<size_t>(kDim * kDim), 0.0f);
  for (int64_t i = 0; i < kDim; ++i) {
    const int64_t j = (i * (2 * l + 3) + l) % kDim;
    v[static_cast<size_t>(i * kDim + j)] = (i + l) % 3 == 0 ? -1.0f : 1.0f;
  }
  return jnp::array(v, Shape{kDim, kDim});
}

struct Collectives {
  int64_t reduce_scatters = 0, all_reduces = 0;
  int64_t reduce_scatter_bytes = 0, all_reduce_bytes = 0;  // per chip per step
};

Collectives Count(const tpu::StepReport& step) {
  Collectives c;
  for (const tpu::CollectiveStepEntry& e : step.collectives) {
    if (e.kind == "reduce-scatter") {
      c.reduce_scatters += e.runs;
      c.reduce_scatter_bytes += e.runs * e.bytes;
    } else if (e.kind == "all-reduce") {
      c.all_reduces += e.runs;
      c.all_reduce_bytes += e.runs * e.bytes;
    }
  }
  return c;
}

class WeightGradientReduceScatterTest : public ::testing::Test {
 protected:
  WeightGradientReduceScatterTest()
      : pod_(tpu::make_pod("v5e", {4, 2})), mesh_(make_mesh({kData, kModel}, {"data", "model"}, pod_.devices())) {
    for (int64_t l = 0; l < kLayers; ++l) ws_.push_back(SignedPermutation(l));
    x_ = SmallInts({kRows, kDim}, 7);
  }

  NamedSharding Weight(size_t l) const { return NamedSharding(mesh_, WeightSpec(l)); }
  NamedSharding Rows() const { return NamedSharding(mesh_, P("data", none)); }

  // The step jitted with the weights and rows placed as above (the weights' shardings come
  // with the arguments).
  auto Jit(bool all_reduced) const { return jit(SgdStep(mesh_, all_reduced), in_shardings{std::nullopt, Rows()}); }

  tpu::PodPlan Plan(bool all_reduced) const {
    ShapeDtypeTree ws{tree::flatten(ws_).second, {}};
    for (size_t l = 0; l < ws_.size(); ++l) {
      ws.leaves.push_back(ShapeDtypeStruct{.shape = {kDim, kDim}, .sharding = std::make_shared<NamedSharding>(Weight(l))});
    }
    const ShapeDtypeStruct x{.shape = {kRows, kDim}, .sharding = std::make_shared<NamedSharding>(Rows())};
    return Jit(all_reduced).lower(ws, x).compile().plan();
  }

  tpu::Pod pod_;
  Mesh mesh_;
  std::vector<Array> ws_;
  Array x_;
};

TEST_F(WeightGradientReduceScatterTest, PartialSumsAreReduceScatteredIntoTheParametersSharding) {
  const tpu::PodPlan plan = Plan(/*all_reduced=*/false);
  const Collectives c = Count(plan.step);
  // One reduce-scatter per weight gradient, each leaving a chip its f32[128,256] block.
  EXPECT_EQ(c.reduce_scatters, kLayers) << plan.step.ToString();
  EXPECT_EQ(c.reduce_scatter_bytes, kLayers * kBlockBytes) << plan.step.ToString();

  const tpu::PodPlan baseline = Plan(/*all_reduced=*/true);
  const Collectives b = Count(baseline.step);
  EXPECT_EQ(b.reduce_scatters, 0) << baseline.step.ToString();
  // The all-reduces left are the activations' partial sums over 'model' (Megatron's), the same
  // in both: the baseline all-reduces the gradients on top.
  EXPECT_EQ(b.all_reduce_bytes - c.all_reduce_bytes, kLayers * kAllReducedBytes) << baseline.step.ToString();
}

TEST_F(WeightGradientReduceScatterTest, HbmPeakDropsByTheFullSizeGradients) {
  const tpu::PodPlan plan = Plan(false), baseline = Plan(true);
  // The baseline holds every layer's all-reduced gradient until its update; reduce-scattered, a
  // chip holds one such partial sum at a time and the blocks.
  const int64_t saved = (kLayers - 1) * (kAllReducedBytes - kBlockBytes);
  EXPECT_LE(plan.hbm_peak_bytes, baseline.hbm_peak_bytes - saved)
      << "reduce-scattered " << plan.hbm_peak_bytes << " B, all-reduced " << baseline.hbm_peak_bytes << " B";
}

TEST_F(WeightGradientReduceScatterTest, NewParametersEqualTheUnshardedProgram) {
  std::vector<Array> sharded;
  for (size_t l = 0; l < ws_.size(); ++l) sharded.push_back(device_put(ws_[l], Weight(l)));
  const std::vector<Array> got = Jit(false)(sharded, device_put(x_, Rows()));
  const std::vector<Array> want = jit(SgdStep(mesh_, false))(ws_, x_);
  ASSERT_EQ(got.size(), want.size());
  for (size_t l = 0; l < want.size(); ++l) {
    EXPECT_EQ(got[l].sharding()->ToString(), Weight(l).ToString()) << "layer " << l;
    EXPECT_EQ(device_put(got[l], devices("cpu")[0]).to_vector<float>(), want[l].to_vector<float>()) << "layer " << l;
  }
}

}  // namespace
}  // namespace jx::weight_gradient_reduce_scatter_test
