// A chip's HBM: device_put beyond what is free is a ResourceExhaustedError naming the chip,
// the bytes asked and the bytes free, after which nothing on the chip is lost and it stays
// usable; a program whose peak exceeds the chip's HBM fails at compile time; a program far
// larger than this machine's memory compiles from ShapeDtypeStructs (nothing allocated).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "jx/jx.h"

namespace jx::tpu::hbm_test {
namespace {

namespace jnp = jx::numpy;
using ::testing::HasSubstr;

constexpr int64_t kKiB = 1024;
constexpr int64_t kMiB = 1024 * kKiB;
constexpr int64_t kGiB = 1024 * kMiB;

TEST(HbmTest, ExhaustionNamesTheChipAndRecovers) {
  Pod pod = make_pod("v5e", {1, 1}, {.hbm_bytes = 1 * kMiB});
  const Device* chip = pod.devices()[0];
  std::vector<Array> held;  // four f32[65536] arrays: 256 KiB each fill the chip
  for (int i = 0; i < 4; ++i) held.push_back(device_put(jnp::full({65536}, static_cast<float>(i)), chip));
  EXPECT_EQ(chip->memory_stats().bytes_in_use, 1 * kMiB);
  try {
    device_put(jnp::ones({1000}), chip);
    FAIL() << "expected ResourceExhaustedError";
  } catch (const ResourceExhaustedError& e) {
    const std::string msg = e.what();
    EXPECT_THAT(msg, HasSubstr(chip->ToString()));
    EXPECT_THAT(msg, HasSubstr("allocating 4000 bytes"));
    EXPECT_THAT(msg, HasSubstr("0 bytes (0.00 B) free of 1048576 bytes (1.00 MiB)"));
  }
  // Nothing on the chip was lost.
  EXPECT_EQ(chip->memory_stats().bytes_in_use, 1 * kMiB);
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(held[i].to_vector<float>()[65535], static_cast<float>(i));
    EXPECT_EQ(held[i].devices(), std::vector<const Device*>{chip});
  }
  // Freeing an array gives its bytes back; the chip takes new arrays again.
  held.pop_back();
  EXPECT_EQ(chip->memory_stats().bytes_in_use, 768 * kKiB);
  Array again = device_put(jnp::full({65536}, 7.0f), chip);
  EXPECT_EQ(again.to_vector<float>()[0], 7.0f);
  const MemoryStats stats = chip->memory_stats();
  EXPECT_EQ(stats.bytes_in_use, 1 * kMiB);
  EXPECT_EQ(stats.peak_bytes_in_use, 1 * kMiB);
  EXPECT_EQ(stats.largest_alloc_size, 256 * kKiB);
}

TEST(HbmTest, ResultsAreChargedToTheChipAndFreedWithThem) {
  Pod pod = make_pod("v5e", {1, 1}, {.hbm_bytes = 1 * kMiB});
  const Device* chip = pod.devices()[0];
  Array x = device_put(jnp::ones({256, 256}), chip);  // 256 KiB
  {
    Array y = jit([](const Array& a) { return a * 2.0f; })(x);
    EXPECT_EQ(y.devices(), std::vector<const Device*>{chip});
    EXPECT_EQ(chip->memory_stats().bytes_in_use, 512 * kKiB);
  }
  EXPECT_EQ(chip->memory_stats().bytes_in_use, 256 * kKiB);
}

TEST(HbmTest, AProgramThatCannotFitFailsAtCompileTime) {
  Pod pod = make_pod("v5e", {1, 1}, {.hbm_bytes = 1 * kMiB});
  const Device* chip = pod.devices()[0];
  // Two f32[512,512] operands and the product: 3 MiB live at once on a 1 MiB chip.
  auto matmul = jit([](const Array& a, const Array& b) { return jnp::matmul(a, b); }, jx::name{"too_big"});
  const ShapeDtypeStruct big{{512, 512}, float32, chip};
  try {
    matmul.lower(big, big).compile();
    FAIL() << "expected ResourceExhaustedError";
  } catch (const ResourceExhaustedError& e) {
    const std::string msg = e.what();
    EXPECT_THAT(msg, HasSubstr(chip->ToString()));
    EXPECT_THAT(msg, HasSubstr("compiling jit(too_big), whose peak is "));
    EXPECT_THAT(msg, HasSubstr("1048576 bytes (1.00 MiB) free of 1048576 bytes"));
  }
  EXPECT_EQ(chip->memory_stats().bytes_in_use, 0);
  // The chip still compiles and runs what fits.
  const ShapeDtypeStruct small{{128, 128}, float32, chip};
  EXPECT_NO_THROW(matmul.lower(small, small).compile());
}

TEST(HbmTest, AProgramThatFitsTheChipButNotWhatIsFreeFailsWhenItRuns) {
  Pod pod = make_pod("v5e", {1, 1}, {.hbm_bytes = 1 * kMiB});
  const Device* chip = pod.devices()[0];
  Array x = device_put(jnp::ones({256, 512}), chip);      // 512 KiB
  Array filler = device_put(jnp::ones({65536 + 32768}), chip);  // 384 KiB: 128 KiB left
  auto twice = jit([](const Array& a) { return a * 2.0f; });
  EXPECT_THROW(twice(x), ResourceExhaustedError);  // the 512 KiB result does not fit
  EXPECT_EQ(chip->memory_stats().bytes_in_use, 896 * kKiB);
  filler = Array();
  EXPECT_EQ(twice(x).to_vector<float>()[0], 2.0f);
}

// The dry run: bf16[81920,81920] operands are 12.5 GiB each, so the arguments and the result
// alone (37.5 GiB) are far more than this machine's memory (23 GiB); the program's peak (87.5
// GiB with the f32 values the TPU numerics keep) still fits a v7 TensorCore's 96 GB of HBM.
// Compiling allocates none of it and reports what a run would cost.
TEST(HbmTest, ProgramsFarLargerThanTheHostCompileFromShapes) {
  Pod pod = make_pod("v7", {1, 1, 1});
  const Device* chip = pod.devices()[0];
  constexpr int64_t n = 81920;
  const ShapeDtypeStruct w{{n, n}, bfloat16, chip};
  auto compiled = jit([](const Array& a, const Array& b) { return jnp::matmul(a, b); }, jx::name{"huge"})
                      .lower(w, w)
                      .compile();
  EXPECT_GE(compiled.memory_analysis().peak_memory_in_bytes, 3 * 2 * n * n);
  EXPECT_LE(compiled.memory_analysis().peak_memory_in_bytes, pod.spec().hbm_bytes);
  EXPECT_EQ(chip->memory_stats().bytes_in_use, 0);
  const CostAnalysis cost = compiled.cost_analysis();
  const double dot_flops = 2.0 * n * n * n;
  EXPECT_GE(cost.flops, dot_flops);
  // At least the roofline's compute time on a v7 TensorCore (1.15e15 bf16 FLOP/s), and not far
  // above.
  EXPECT_GE(cost.predicted_seconds, dot_flops / 1.15e15);
  EXPECT_LT(cost.predicted_seconds, 2 * dot_flops / 1.15e15);
}

}  // namespace
}  // namespace jx::tpu::hbm_test
