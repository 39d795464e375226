// The "tpu" column of the opinfo suite: every record's samples run on a simulated TPU chip
// (the collectives' on the 2x2 v5e mesh their shard_maps name, RunOnTheMesh below; the others on
// one v5e chip; the arguments are device_put to it and the op runs under jx::jit, so the
// chip's client compiles it with the TPU pipeline: tiled layouts, MXU/VMEM tiling, TPU
// numerics, the cost model) and must equal eager execution on the host within the record's
// tolerance, outputs' dtypes and weak types included, with every output committed to the
// chip.
//
// Where TPU numerics legitimately differ from the host, the column asks for the numbers a
// TPU program asks for when it needs f32 accuracy instead of loosening a tolerance: dots and
// convolutions run under default_matmul_precision("highest"), because at DEFAULT the MXU
// multiplies bf16-rounded inputs (one pass) where the host multiplies f32; at HIGHEST the
// six bf16 passes are f32-accurate. (TPU_DefaultPrecision below checks the DEFAULT numbers
// themselves; tests/devices/tpu/tpu_execution_test.cc checks them against a bf16-rounded host
// matmul.)
#include <algorithm>
#include <cmath>
#include <iostream>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest-spi.h>
#include <gtest/gtest.h>

#include "opinfo.h"

namespace jx::opinfo::tpu_test {
namespace {

namespace jnp = jx::numpy;

// The chip every sample runs on: made once (chips are registered for the process's life).
const Device* Chip() {
  static const Device* chip = tpu::make_pod("v5e", {1, 1}).devices()[0];
  return chip;
}

// Records whose samples are dots or convolutions: the MXU's precision applies to them.
bool RunsOnTheMxu(const std::string& name) {
  static const std::set<std::string> kMxuRecords = {"dot_general", "conv_general_dilated"};
  return kMxuRecords.count(name) > 0;
}

// Samples where the chip's numbers may differ from the host's beyond the record's tolerance
// for a reason the TPU model states, each listed with it: they are compared as every sample
// is, and a difference is printed with the reason instead of failing the test (delete a
// line when the chip's numbers change). Matched by record, input dtype and a
// piece of the sample's description.
struct KnownDivergence {
  std::string record;
  DType dtype;
  std::string description_contains;
  std::string why;
};
const std::vector<KnownDivergence>& KnownDivergences() {
  static const std::vector<KnownDivergence> kList = {
      // The TPU target sums f32 in f32 (no f64 hardware; the "tpu" lowering rules); the
      // host sums f32 in f64. These sums cancel (|sum| ~ 4 from 70,000 terms of size ~1.5),
      // so the f32 rounding of the partial sums moves them by ~1e-5 relative, beyond 2e-6.
      {"reduce_sum", float32, "", "f32 sums accumulate in f32 on the chip"},
      // The same for the cumulative sum of exp over 270,000 positive terms: the chip's f32
      // scan runs sequentially (relative error up to ~n*u, 4e-4 observed at the end).
      {"cumlogsumexp", float32, "", "f32 cumulative sums accumulate sequentially in f32 on the chip"},
  };
  return kList;
}
const KnownDivergence* FindKnownDivergence(const std::string& record, DType d, const std::string& description) {
  for (const KnownDivergence& k : KnownDivergences()) {
    if (k.record == record && k.dtype == d && description.find(k.description_contains) != std::string::npos) {
      return &k;
    }
  }
  return nullptr;
}

// The ICI seconds each simulated TPU chip among `devices` has been busy for.
std::vector<double> IciBusySeconds(const std::vector<const Device*>& devices) {
  std::vector<double> out;
  for (const Device* d : devices) {
    const auto* chip = dynamic_cast<const tpu::TpuChip*>(d);
    out.push_back(chip != nullptr ? chip->activity().busy.ici : 0.0);
  }
  return out;
}

// Collectives that move no data between chips: pvary only retypes its operand and
// axis_index reads the partition id, so their programs keep the ICI idle.
bool MovesData(const std::string& record) { return record != "pvary" && record != "axis_index"; }

// A collective's samples are shard_maps over a small mesh of v5e chips (2x2): compiled under
// jx::jit for those chips (the TPU pipeline, one program per chip, the HLO collectives moving
// the chips' buffers and the ICI model timing them), every output must be a sharded array on
// the mesh's TPU chips, equal the eager evaluation, and the chips' ICI lanes must have been
// busy for the collective (every chip of a group; a ppermute's partners) or idle for the
// records that move nothing.
void RunOnTheMesh(const OpInfo& info) {
  int ran = 0;
  for (DType d : info.dtypes) {
    for (const Sample& s : SamplesFor(info, d)) {
      const std::string where = StrCat(info.name, " ", s.description);
      const std::vector<Array> want = s.op(s.args);  // eager: the body in lockstep over the chips
      ASSERT_FALSE(want.empty()) << where;
      const std::vector<const Device*> chips = want[0].devices();
      for (const Device* chip : chips) ASSERT_EQ(chip->platform(), "tpu") << where;
      auto jitted = jx::jit([&s](const std::vector<Array>& args) { return s.op(args); });
      std::vector<Array> got;
      const std::vector<double> ici_before = IciBusySeconds(chips);
      try {
        got = jitted(s.args);
      } catch (const std::exception& e) {
        ADD_FAILURE() << where << " threw: " << e.what();
        continue;
      }
      const std::vector<double> ici_after = IciBusySeconds(chips);
      ASSERT_EQ(got.size(), want.size()) << where;
      for (size_t k = 0; k < want.size(); ++k) {
        const std::string out = StrCat(where, " output ", k);
        EXPECT_EQ(got[k].devices(), chips) << out;
        EXPECT_TRUE(got[k].committed()) << out;
        EXPECT_EQ(got[k].aval().weak_type, want[k].aval().weak_type) << out;
        ExpectArraysClose(got[k], want[k], info.tolerance(want[k].dtype()), out);
      }
      // Every chip of a group takes part; a ppermute's chips outside its pairs stay idle.
      double busy = 0;
      for (size_t c = 0; c < chips.size(); ++c) {
        busy += ici_after[c] - ici_before[c];
        if (!MovesData(info.name)) {
          EXPECT_EQ(ici_after[c], ici_before[c]) << where << ": " << chips[c]->ToString() << "'s ICI was busy";
        } else if (info.name != "ppermute") {
          EXPECT_GT(ici_after[c], ici_before[c]) << where << ": " << chips[c]->ToString() << "'s ICI stayed idle";
        }
      }
      if (MovesData(info.name)) {
        EXPECT_GT(busy, 0) << where << ": no chip's ICI was busy";
      }
      ++ran;
    }
  }
  EXPECT_GT(ran, 0) << info.name << " has no samples";
}

class OpInfoTpuTest : public ::testing::TestWithParam<std::string> {};

TEST_P(OpInfoTpuTest, ChipMatchesHostEager) {
  const OpInfo& info = FindOpInfo(GetParam());
  const Device* chip = Chip();
  if (info.collective) return RunOnTheMesh(info);
  int ran = 0;
  for (DType d : info.dtypes) {
    for (const Sample& s : SamplesFor(info, d)) {
      const std::string where = StrCat(info.name, " ", s.description, " on ", chip->ToString());
      // A sample without arguments (iota) gets an unused empty one on the chip: a call
      // with a committed argument runs on that argument's device (JAX's rule); with none
      // it would run on the default device, the host.
      std::vector<Array> on_chip = {device_put(jnp::zeros({0}), chip)};
      for (const Array& a : s.args) on_chip.push_back(device_put(a, chip));
      std::optional<default_matmul_precision> highest;
      if (RunsOnTheMxu(info.name)) highest.emplace(lax::Precision::kHighest);
      auto jitted = jx::jit([&s](const std::vector<Array>& args) {
        return s.op(std::vector<Array>(args.begin() + 1, args.end()));
      });
      std::vector<Array> got;
      try {
        got = jitted(on_chip);
      } catch (const std::exception& e) {
        ADD_FAILURE() << where << " threw: " << e.what();
        continue;
      }
      const std::vector<Array> want = s.op(s.args);  // eager, on the host CPU
      ASSERT_EQ(got.size(), want.size()) << where;
      for (size_t k = 0; k < want.size(); ++k) {
        const std::string out = StrCat(where, " output ", k);
        EXPECT_EQ(got[k].devices(), std::vector<const Device*>{chip}) << out;
        EXPECT_TRUE(got[k].committed()) << out;
        EXPECT_EQ(got[k].aval().weak_type, want[k].aval().weak_type) << out;
        const KnownDivergence* known = FindKnownDivergence(info.name, d, s.description);
        if (known == nullptr) {
          ExpectArraysClose(got[k], want[k], info.tolerance(want[k].dtype()), out);
          continue;
        }
        // Compared all the same; a difference is reported with its reason instead of failing.
        ::testing::TestPartResultArray differences;
        {
          ::testing::ScopedFakeTestPartResultReporter capture(
              ::testing::ScopedFakeTestPartResultReporter::INTERCEPT_ONLY_CURRENT_THREAD, &differences);
          ExpectArraysClose(got[k], want[k], info.tolerance(want[k].dtype()), out);
        }
        if (differences.size() > 0) {
          std::cout << "[ KNOWN    ] " << known->why << ": " << differences.GetTestPartResult(0).message() << "\n";
        }
      }
      ++ran;
    }
  }
  EXPECT_GT(ran, 0) << info.name << " has no samples";
}

INSTANTIATE_TEST_SUITE_P(AllOps, OpInfoTpuTest, ::testing::ValuesIn(AllOpInfoNames()),
                         [](const ::testing::TestParamInfo<std::string>& p) { return p.param; });

// Matmul precision on a chip, each against the host. Sums of 256 products of N(0,1) values.
struct Operands {
  Array x, y;
};
Operands MatmulOperands() {
  const Array keys = random::split(random::key(11), 2);
  return {random::normal(keys[0], {48, 256}), random::normal(keys[1], {256, 40})};
}

double MaxAbsDiff(const Array& a, const Array& b) {
  const std::vector<float> u = a.to_vector<float>(), v = b.to_vector<float>();
  double m = 0;
  for (size_t i = 0; i < u.size(); ++i) m = std::max(m, std::abs(double(u[i]) - v[i]));
  return m;
}

// HIGHEST (six bf16 passes) is f32-accurate: the chip's result is within f32 summation-order
// noise of the host's f32 matmul (|sum| ~ 16, 256 terms: ~1e-5), far from the bf16-rounded
// product (bf16 keeps 8 bits: each product moves ~2^-8, sums by ~0.1).
TEST(TpuMatmulPrecisionTest, HighestMatchesF32) {
  const auto [x, y] = MatmulOperands();
  const Device* chip = Chip();
  const Array got = jit([](const Array& a, const Array& b) {
                      return jnp::matmul(a, b, lax::Precision::kHighest);
                    })(device_put(x, chip), device_put(y, chip));
  const Array f32 = jnp::matmul(x, y);
  const Array bf16 = jnp::matmul(x.astype(bfloat16).astype(float32), y.astype(bfloat16).astype(float32));
  EXPECT_LT(MaxAbsDiff(got, f32), 1e-4);
  EXPECT_GT(MaxAbsDiff(got, bf16), 1e-2);
}

// The scope reaches a dot traced under it, and DEFAULT stays the bf16 one-pass product: the
// same jitted function compiled twice (the scope is in jit's cache key) gives both numbers.
TEST(TpuMatmulPrecisionTest, DefaultMatmulPrecisionScopeSelectsThePasses) {
  const auto [x, y] = MatmulOperands();
  const Device* chip = Chip();
  const Array xc = device_put(x, chip), yc = device_put(y, chip);
  auto matmul = jit([](const Array& a, const Array& b) { return jnp::matmul(a, b); });
  const Array at_default = matmul(xc, yc);
  Array at_highest;
  {
    default_matmul_precision highest("highest");
    at_highest = matmul(xc, yc);
  }
  const Array f32 = jnp::matmul(x, y);
  const Array bf16 = jnp::matmul(x.astype(bfloat16).astype(float32), y.astype(bfloat16).astype(float32));
  EXPECT_LT(MaxAbsDiff(at_default, bf16), 1e-4);
  EXPECT_GT(MaxAbsDiff(at_default, f32), 1e-2);
  EXPECT_LT(MaxAbsDiff(at_highest, f32), 1e-4);
}

}  // namespace
}  // namespace jx::opinfo::tpu_test
