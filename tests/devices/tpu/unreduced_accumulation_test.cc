// Unreduced gradient accumulation on the 8 chips of a v5e 4x2 slice: a microbatched training
// step inside shard_map psums each layer's gradient every microbatch; the TPU pipeline keeps
// the accumulators unreduced and all-reduces them once per step (one all-reduce of every
// layer's accumulator, not layers x microbatches runs), with the same gradients. The analysis reports both ways.
// Values are small integers (exact in bf16 and in every f32 sum), so gradients compare exactly.
#include "jx/devices/tpu/unreduced_accumulation.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <utility>
#include <vector>

#include "jx/devices/tpu/pod_program.h"
#include "jx/jx.h"
#include "jx/sharding/shard_map.h"
#include "jx/sharding/shard_map_compiled.h"
#include "jx/sharding/shard_map_internal.h"
#include "jx/sharding/spmd/spmd_jit.h"
#include "tests/devices/tpu/microbatched_loss.h"

namespace jx::tpu::unreduced_accumulation_test {
namespace {

namespace jnp = jx::numpy;

using testing::kChips;
using testing::kDim;
using testing::kLayers;
using testing::kMicrobatches;
using testing::kRowsPerChip;
using testing::Loss;
using testing::SmallInts;

struct Step {
  Pod pod = make_pod("v5e", {4, 2});
  Mesh mesh = make_mesh({kChips}, {"data"}, pod.devices());
  Array w1 = SmallInts({kDim, kDim}, 1), w2 = SmallInts({kDim, kDim}, 2);
  // [microbatch, rows, dim]: each microbatch's rows split over the data axis.
  Array xs = SmallInts({kMicrobatches, kChips * kRowsPerChip, kDim}, 3);

  std::vector<const TpuChip*> Chips() const {
    std::vector<const TpuChip*> chips;
    for (const Device* d : pod.devices()) chips.push_back(static_cast<const TpuChip*>(d));
    return chips;
  }
  // The full batch's gradients on the host.
  std::vector<Array> Reference() const {
    const Array all = device_put(xs, devices("cpu")[0]).reshape({kMicrobatches * kChips * kRowsPerChip, kDim});
    return grad(Loss)(std::vector<Array>{w1, w2}, all);
  }
};

// Runs the shard_map equation of `body` compiled for the pod; returns its outputs and program.
std::pair<Arrays, std::shared_ptr<const PodProgram>> RunCompiled(const Step& s, const ClosedJaxpr& j) {
  const Eqn& eqn = j.jaxpr->eqns.front();
  EXPECT_EQ(eqn.primitive, kShardMap);
  Arrays outs = shard_map_internal::ShardMapCompiled({s.w1, s.w2, s.xs}, eqn.params, j.jaxpr->out_avals());
  auto program = std::dynamic_pointer_cast<const PodProgram>(shard_map_internal::CompileShardMap(eqn.params));
  return {std::move(outs), program};
}

// The per-device program as lowered, before the TPU pipeline.
std::shared_ptr<const Lowering> Lowered(const Step& s, const ClosedJaxpr& j) {
  const shard_map_internal::ShardMapParams p = shard_map_internal::ShardMapParams::From(j.jaxpr->eqns.front().params);
  return s.pod.client().Lower(p.jaxpr, {.name = "step", .device_assignment = s.pod.devices()});
}

// scale: 1, or 1 / chips for gradients averaged with pmean (a power of two: still exact).
void ExpectReferenceGradients(const Step& s, const Arrays& outs, float scale) {
  const std::vector<Array> want = s.Reference();
  ASSERT_EQ(outs.size(), want.size());
  for (size_t l = 0; l < want.size(); ++l) {
    EXPECT_EQ(device_put(outs[l], devices("cpu")[0]).to_vector<float>(), (want[l] * scale).to_vector<float>())
        << "layer " << l;
  }
}

// Each microbatch: per-layer gradients, psum over the data axis, added to the accumulators.
std::vector<Array> AccumulateReduced(const std::vector<Array>& acc, const Array& w1, const Array& w2, const Array& x) {
  const std::vector<Array> g = grad(Loss)(std::vector<Array>{w1, w2}, x);
  std::vector<Array> next;
  for (size_t l = 0; l < g.size(); ++l) next.push_back(acc[l] + lax::psum(g[l], "data"));
  return next;
}

// The same with the gradients averaged over the data axis (pmean: psum, then / chips).
std::vector<Array> AccumulateAveraged(const std::vector<Array>& acc, const Array& w1, const Array& w2, const Array& x) {
  const std::vector<Array> g = grad(Loss)(std::vector<Array>{w1, w2}, x);
  std::vector<Array> next;
  for (size_t l = 0; l < g.size(); ++l) next.push_back(acc[l] + lax::pmean(g[l], "data"));
  return next;
}

// Runs body (w1, w2, xs) -> accumulated gradients as a shard_map over the data axis compiled
// for the pod, checks its gradients against the host's, and analyzes the lowered program.
struct Compiled {
  std::shared_ptr<const PodProgram> program;
  UnreducedAccumulation analysis;
};
template <typename F>
Compiled CompileAndCheck(const Step& s, F body, float scale = 1) {
  auto sm = shard_map(body, s.mesh, in_specs{P(), P(), P(none, "data")}, out_specs{P()}, {.check_vma = false});
  const ClosedJaxpr j = make_jaxpr(sm)(s.w1, s.w2, s.xs);
  auto [outs, program] = RunCompiled(s, j);
  EXPECT_NE(program, nullptr);
  ExpectReferenceGradients(s, outs, scale);
  return {program, AnalyzeUnreducedAccumulation(*Lowered(s, j), s.pod.client(), s.Chips())};
}

TEST(UnreducedAccumulationTest, AScanOverMicrobatchesAllReducesEachLayerOncePerStep) {
  Step s;
  auto body = [](const Array& w1, const Array& w2, const Array& xs) {
    const std::vector<Array> zeros = {jnp::zeros_like(w1), jnp::zeros_like(w2)};
    auto [acc, unused] = lax::scan(
        [&](const std::vector<Array>& acc, const Array& x) {
          return std::pair{AccumulateReduced(acc, w1, w2, x), jnp::zeros({})};
        },
        zeros, xs);
    return acc;
  };
  const auto [program, u] = CompileAndCheck(s, body);
  ASSERT_NE(program, nullptr);

  // The compiled step: the layers' all-reduces, moved out of the loop, run as one all-reduce
  // of both accumulators (AllReduceCombiner), once.
  const AllReduceTally compiled = program->all_reduces();
  EXPECT_EQ(compiled.instructions(), 1) << compiled.ToString();
  EXPECT_EQ(compiled.runs(), 1) << compiled.ToString();
  for (const AllReduceRuns& a : compiled.all_reduces) EXPECT_EQ(a.runs, 1) << compiled.ToString();
  EXPECT_EQ(compiled.bytes(), kLayers * kDim * kDim * 4) << compiled.ToString();

  // Both ways, by hand: layers x microbatches runs of dim x dim f32 as written, layers after.
  const int64_t grad_bytes = kDim * kDim * 4;
  EXPECT_EQ(u.reduced.instructions(), kLayers) << u.ToString();
  EXPECT_EQ(u.reduced.runs(), kLayers * kMicrobatches) << u.ToString();
  EXPECT_EQ(u.reduced.bytes(), kLayers * kMicrobatches * grad_bytes);
  EXPECT_EQ(u.unreduced.runs(), kLayers) << u.ToString();
  EXPECT_EQ(u.unreduced.bytes(), kLayers * grad_bytes);
  EXPECT_EQ(u.saved_runs(), kLayers * (kMicrobatches - 1));
  // Every all-reduce moves the same 64 B over the same 8 chips, latency-bound: on the 4x2 slice
  // (two lines, no wraparound) reduce-scatter then all-gather each cross 3 + 1 hops of 1 us,
  // after the collective's start-up t0 = 2.29 us (TPU.md): 2.29 + 2 x 4 = 10.29 us per run.
  const double one = u.unreduced.all_reduces.front().seconds;
  EXPECT_NEAR(one, 2.29e-6 + 2 * (3 + 1) * 1e-6, 1e-12) << u.ToString();
  for (const AllReduceRuns& a : u.reduced.all_reduces) EXPECT_DOUBLE_EQ(a.seconds, one);
  EXPECT_DOUBLE_EQ(u.reduced.seconds(), kLayers * kMicrobatches * one);
  EXPECT_DOUBLE_EQ(u.unreduced.seconds(), kLayers * one);
  EXPECT_DOUBLE_EQ(u.saved_seconds(), kLayers * (kMicrobatches - 1) * one);
  // Combined, the layers pay one latency-bound run (128 B take as long as 64 B).
  EXPECT_DOUBLE_EQ(compiled.seconds(), one);
  EXPECT_THAT(u.ToString(), ::testing::HasSubstr("save 6 all-reduce runs and 0 reduce-scatter runs, 384 B per chip"));
  EXPECT_TRUE(u.reduce_scatter_hoists.empty());
}

TEST(UnreducedAccumulationTest, AnUnrolledLoopOverMicrobatchesAllReducesEachLayerOnce) {
  Step s;
  auto body = [](const Array& w1, const Array& w2, const Array& xs) {
    std::vector<Array> acc = {jnp::zeros_like(w1), jnp::zeros_like(w2)};
    for (int64_t m = 0; m < kMicrobatches; ++m) acc = AccumulateReduced(acc, w1, w2, xs[m]);
    return acc;
  };
  const auto [program, u] = CompileAndCheck(s, body);
  ASSERT_NE(program, nullptr);
  EXPECT_EQ(program->all_reduces().runs(), 1) << program->all_reduces().ToString();  // the layers combined
  EXPECT_EQ(u.reduced.instructions(), kLayers * kMicrobatches) << u.ToString();
  EXPECT_EQ(u.reduced.runs(), kLayers * kMicrobatches);
  EXPECT_EQ(u.unreduced.runs(), kLayers) << u.ToString();
}

TEST(UnreducedAccumulationTest, AveragedGradientsAlsoAllReduceOncePerStep) {
  Step s;
  auto body = [](const Array& w1, const Array& w2, const Array& xs) {
    const std::vector<Array> zeros = {jnp::zeros_like(w1), jnp::zeros_like(w2)};
    auto [acc, unused] = lax::scan(
        [&](const std::vector<Array>& acc, const Array& x) {
          return std::pair{AccumulateAveraged(acc, w1, w2, x), jnp::zeros({})};
        },
        zeros, xs);
    return acc;
  };
  const auto [program, u] = CompileAndCheck(s, body, 1.0f / kChips);
  ASSERT_NE(program, nullptr);
  EXPECT_EQ(program->all_reduces().runs(), 1) << program->all_reduces().ToString();  // the layers combined
  EXPECT_EQ(u.reduced.runs(), kLayers * kMicrobatches) << u.ToString();
  EXPECT_EQ(u.unreduced.runs(), kLayers) << u.ToString();
}

// ---- FSDP: gradients reduce-scattered into the weights' sharding ---------------------------

// Weights [16, 16] split over the 8 chips' data axis by rows (FSDP: a chip holds 2 rows); each
// microbatch's rows split over it too.
constexpr int64_t kFsdpDim = 16;

// Layer l's weight: one +-1 per row and column (row i has it in column (i * (2l + 3) + l) mod
// 16), so activations and cotangents stay in {-1, 0, 1} (exact in the MXU's bf16 passes) and
// each gradient entry is a sum of at most 64 of them: exact in f32 in any order.
Array SignedPermutation(int64_t l) {
  std::vector<float> v(static_cast<size_t>(kFsdpDim * kFsdpDim), 0.0f);
  for (int64_t i = 0; i < kFsdpDim; ++i) {
    const int64_t j = (i * (2 * l + 3) + l) % kFsdpDim;
    v[static_cast<size_t>(i * kFsdpDim + j)] = (i + l) % 3 == 0 ? -1.0f : 1.0f;
  }
  return jnp::array(v, Shape{kFsdpDim, kFsdpDim});
}

struct FsdpStep {
  Pod pod = make_pod("v5e", {4, 2});
  Mesh mesh = make_mesh({kChips}, {"data"}, pod.devices());
  NamedSharding weight{mesh, P("data", none)};
  NamedSharding batch{mesh, P(none, "data")};
  Array w1 = SignedPermutation(0), w2 = SignedPermutation(1);
  Array xs = SmallInts({kMicrobatches, kChips * kRowsPerChip, kFsdpDim}, 3);

  std::vector<const TpuChip*> Chips() const {
    std::vector<const TpuChip*> chips;
    for (const Device* d : pod.devices()) chips.push_back(static_cast<const TpuChip*>(d));
    return chips;
  }
  // Gradient accumulation over a scan of microbatches, the accumulators in the weights'
  // sharding (as MaxText's): the partitioner reduce-scatters each microbatch's partial
  // gradients into them.
  // Unrolled: the same sums written out microbatch by microbatch (a C++ loop).
  auto Jitted(bool unrolled = false) const {
    auto step = [weight = weight, unrolled](const Array& a, const Array& b, const Array& batches) {
      const std::vector<Array> zeros = {lax::with_sharding_constraint(jnp::zeros_like(a), weight),
                                        lax::with_sharding_constraint(jnp::zeros_like(b), weight)};
      auto accumulate = [&](const std::vector<Array>& acc, const Array& x) {
        const std::vector<Array> g = grad(Loss)(std::vector<Array>{a, b}, x);
        return std::vector<Array>{acc[0] + g[0], acc[1] + g[1]};
      };
      if (unrolled) {
        std::vector<Array> acc = zeros;
        for (int64_t m = 0; m < kMicrobatches; ++m) acc = accumulate(acc, batches[m]);
        return acc;
      }
      auto [acc, unused] = lax::scan(
          [&](const std::vector<Array>& acc, const Array& x) { return std::pair{accumulate(acc, x), jnp::zeros({})}; },
          zeros, batches);
      return acc;
    };
    return jit(step, in_shardings{weight, weight, batch});
  }
  // The compiled step and the analysis of its per-device program as partitioned.
  std::pair<std::shared_ptr<const PodProgram>, UnreducedAccumulation> CompileAndAnalyze(
      const UnreducedAccumulationOptions& options = {}, bool unrolled = false) const {
    const auto compiled =
        Jitted(unrolled).lower(device_put(w1, weight), device_put(w2, weight), device_put(xs, batch)).compile();
    const spmd::SpmdProgram& spmd = compiled.program();
    auto program = std::dynamic_pointer_cast<const PodProgram>(spmd.executable());
    auto lowering =
        pod.client().Lower(spmd.local_jaxpr(), {.name = "step", .donated = {}, .device_assignment = pod.devices()});
    return {program, AnalyzeUnreducedAccumulation(*lowering, pod.client(), Chips(), options)};
  }
};

// The gradients of the whole batch, bit for bit: every value is a small integer, so summing
// each chip's microbatches first changes no rounding.
void ExpectWholeBatchGradients(const FsdpStep& s, bool unrolled) {
  const std::vector<Array> got =
      s.Jitted(unrolled)(device_put(s.w1, s.weight), device_put(s.w2, s.weight), device_put(s.xs, s.batch));
  const Array all = s.xs.reshape({kMicrobatches * kChips * kRowsPerChip, kFsdpDim});
  const std::vector<Array> want = grad(Loss)(std::vector<Array>{s.w1, s.w2}, all);
  ASSERT_EQ(got.size(), want.size());
  for (size_t l = 0; l < want.size(); ++l) {
    EXPECT_EQ(got[l].sharding()->ToString(), s.weight.ToString()) << "layer " << l;
    EXPECT_EQ(device_put(got[l], devices("cpu")[0]).to_vector<float>(), want[l].to_vector<float>()) << "layer " << l;
  }
}

TEST(UnreducedAccumulationTest, FsdpGradientsReduceScatterOncePerStepWithTheSameValues) {
  FsdpStep s;
  const auto [program, u] = s.CompileAndAnalyze();
  ASSERT_NE(program, nullptr);
  // As partitioned: one reduce-scatter per layer per microbatch, each leaving a chip its
  // f32[2,16] block; hoisted: one per layer per step, as many bytes each.
  const int64_t block = kFsdpDim / kChips * kFsdpDim * 4, full = kFsdpDim * kFsdpDim * 4;
  const AllReduceTally written = u.reduced.Of("reduce-scatter"), hoisted = u.unreduced.Of("reduce-scatter");
  EXPECT_EQ(written.runs(), kLayers * kMicrobatches) << u.ToString();
  EXPECT_EQ(written.bytes(), kLayers * kMicrobatches * block) << u.ToString();
  EXPECT_EQ(hoisted.runs(), kLayers) << u.ToString();
  EXPECT_EQ(hoisted.bytes(), kLayers * block) << u.ToString();
  EXPECT_EQ(u.reduced.Of("all-reduce").runs(), u.unreduced.Of("all-reduce").runs()) << u.ToString();
  ASSERT_EQ(u.reduce_scatter_hoists.size(), static_cast<size_t>(kLayers)) << u.ToString();
  for (const hlo::ReduceScatterHoist& h : u.reduce_scatter_hoists) {
    EXPECT_EQ(h.outcome, hlo::ReduceScatterHoist::Outcome::kHoisted) << h.ToString();
    EXPECT_EQ(h.trips, kMicrobatches);
    EXPECT_EQ(h.group_size, kChips);
    EXPECT_EQ(h.accumulator_bytes, block);
    EXPECT_EQ(h.hoisted_bytes, full);
    EXPECT_GT(h.saved_seconds, 0);
  }
  // The HBM the full-size accumulators cost, and the seconds the runs saved: every run moves
  // the same bytes over the same chips, so each saves one written run's time.
  EXPECT_EQ(u.extra_accumulator_bytes(), kLayers * (full - block));
  const double one = written.all_reduces.front().seconds;
  EXPECT_GT(one, 0);
  EXPECT_DOUBLE_EQ(u.saved_seconds(), kLayers * (kMicrobatches - 1) * one) << u.ToString();
  EXPECT_THAT(u.ToString(), ::testing::HasSubstr("save 0 all-reduce runs and 6 reduce-scatter runs"));

  // The compiled step (the TPU pipeline): the same, reduce-scatters after the loop.
  const AllReduceTally compiled = program->all_reduces().Of("reduce-scatter");
  EXPECT_EQ(compiled.runs(), kLayers) << compiled.ToString();
  for (const AllReduceRuns& a : compiled.all_reduces) EXPECT_EQ(a.runs, 1) << compiled.ToString();

  ExpectWholeBatchGradients(s, /*unrolled=*/false);
}

// Unrolled, the microbatches' reduce-scatters of a layer are summed unreduced and
// reduce-scattered once (ReduceScatterReassociate, with the loop's pricing and memory limit).
TEST(UnreducedAccumulationTest, FsdpGradientsOfAnUnrolledLoopReduceScatterOncePerStep) {
  FsdpStep s;
  const auto [program, u] = s.CompileAndAnalyze({}, /*unrolled=*/true);
  ASSERT_NE(program, nullptr);
  const int64_t block = kFsdpDim / kChips * kFsdpDim * 4, full = kFsdpDim * kFsdpDim * 4;
  EXPECT_EQ(u.reduced.Of("reduce-scatter").runs(), kLayers * kMicrobatches) << u.ToString();
  EXPECT_EQ(u.unreduced.Of("reduce-scatter").runs(), kLayers) << u.ToString();
  // Per layer, three pairs combined: the first grows the sum to the full size.
  ASSERT_EQ(u.reduce_scatter_hoists.size(), static_cast<size_t>(kLayers * (kMicrobatches - 1))) << u.ToString();
  for (const hlo::ReduceScatterHoist& h : u.reduce_scatter_hoists) {
    EXPECT_EQ(h.outcome, hlo::ReduceScatterHoist::Outcome::kHoisted) << h.ToString();
    EXPECT_EQ(h.loop, "");
    EXPECT_GT(h.saved_seconds, 0);
  }
  EXPECT_EQ(u.extra_accumulator_bytes(), kLayers * (full - block)) << u.ToString();
  const AllReduceTally compiled = program->all_reduces().Of("reduce-scatter");
  EXPECT_EQ(compiled.runs(), kLayers) << compiled.ToString();
  ExpectWholeBatchGradients(s, /*unrolled=*/true);
  // Under a 1 KiB limit they stay apart.
  const auto [kept_program, kept] = s.CompileAndAnalyze({.memory_limit_bytes = 1024}, /*unrolled=*/true);
  EXPECT_EQ(kept.unreduced.Of("reduce-scatter").runs(), kLayers * kMicrobatches) << kept.ToString();
}

TEST(UnreducedAccumulationTest, FsdpAccumulatorsStayBlocksWhenTheFullSizeOnesDoNotFit) {
  FsdpStep s;
  // 1 KiB: less than the weights alone, so no accumulator may grow.
  const auto [program, u] = s.CompileAndAnalyze({.memory_limit_bytes = 1024});
  EXPECT_EQ(u.unreduced.Of("reduce-scatter").runs(), kLayers * kMicrobatches) << u.ToString();
  ASSERT_EQ(u.reduce_scatter_hoists.size(), static_cast<size_t>(kLayers)) << u.ToString();
  for (const hlo::ReduceScatterHoist& h : u.reduce_scatter_hoists) {
    EXPECT_EQ(h.outcome, hlo::ReduceScatterHoist::Outcome::kOverMemoryLimit) << h.ToString();
  }
  EXPECT_EQ(u.extra_accumulator_bytes(), 0);
  EXPECT_EQ(u.saved_runs(), 0);
  EXPECT_THAT(u.ToString(), ::testing::HasSubstr("would exceed the memory limit"));
}

}  // namespace
}  // namespace jx::tpu::unreduced_accumulation_test
