// jx::debug::print on a simulated TPU chip: the chip's program runs on the host's CPU
// backend, so the host-callback custom-call prints there too, under jit and for an eager
// print of an array that lives on the chip (a one-equation program on the chip).
#include <gtest/gtest.h>

#include <string>

#include "jx/jx.h"

namespace jx::tpu::debug_print_on_chip_test {
namespace {

namespace jnp = jx::numpy;
using ::testing::internal::CaptureStdout;
using ::testing::internal::GetCapturedStdout;

TEST(TpuDebugPrint, PrintsFromACompiledProgramOnAChip) {
  Pod pod = make_pod("v5e", {1, 1});
  const Device* chip = pod.devices()[0];
  const Array x = device_put(jnp::arange(3.0), chip);
  auto f = jit([](const Array& v) {
    debug::print("v = {}", v);
    return v * 2.0f;
  });
  CaptureStdout();
  const Array y = f(x);
  EXPECT_EQ(GetCapturedStdout(), "v = [0. 1. 2.]\n");
  EXPECT_EQ(y.devices().front(), chip);
  EXPECT_EQ(y.to_vector<float>(), (std::vector<float>{0, 2, 4}));
}

TEST(TpuDebugPrint, EagerPrintOfAChipArray) {
  Pod pod = make_pod("v5e", {1, 1});
  const Array x = device_put(Array::Scalar(4.0, float32), pod.devices()[0]);
  CaptureStdout();
  debug::print("x = {}", x);
  EXPECT_EQ(GetCapturedStdout(), "x = 4.0\n");
}

}  // namespace
}  // namespace jx::tpu::debug_print_on_chip_test
