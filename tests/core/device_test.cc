// Arrays know their device: JAX's committed/uncommitted rules on the host CPU device, the
// CPU device's description, and the helpers the interpreter and jit share (CommitTo,
// CommittedDeviceOf).
#include <gtest/gtest.h>
#include <jx/jx.h>

#include "jx/core/device.h"

namespace jx::device_test {
namespace {

namespace jnp = jx::numpy;

const Device* Cpu() { return devices()[0]; }

TEST(DeviceTest, TheHostCpuIsTheDefaultDevice) {
  const std::vector<const Device*> cpus = devices();
  ASSERT_EQ(cpus.size(), 1u);
  const Device& cpu = *cpus[0];
  EXPECT_EQ(cpu.platform(), "cpu");
  EXPECT_EQ(cpu.id(), 0);
  EXPECT_EQ(cpu.device_kind(), "cpu");
  EXPECT_EQ(cpu.ToString(), "CpuDevice(id=0)");
  EXPECT_EQ(cpu.client().platform(), "cpu");
  EXPECT_EQ(cpu.client().devices(), cpus);
  EXPECT_EQ(DefaultDevice(), &cpu);
  EXPECT_EQ(devices("cpu"), cpus);
  EXPECT_TRUE(devices("gpu").empty());
  for (const Device* d : devices("tpu")) EXPECT_EQ(d->platform(), "tpu");
  EXPECT_EQ(cpu.memory_stats().bytes_limit, 0);  // the host does not bound it
}

TEST(DeviceTest, CpuMemoryStatsCountLargeBuffers) {
  const int64_t before = Cpu()->memory_stats().bytes_in_use;
  {
    const Array big = jnp::zeros({1 << 20}, float32);  // 4 MiB: from the caching allocator
    EXPECT_GE(Cpu()->memory_stats().bytes_in_use - before, 4 << 20);
  }
  EXPECT_EQ(Cpu()->memory_stats().bytes_in_use, before);
}

TEST(DeviceTest, NewArraysAreUncommittedOnTheDefaultDevice) {
  const Array x = jnp::arange(3.0f);
  EXPECT_FALSE(x.committed());
  EXPECT_EQ(x.committed_device(), nullptr);
  EXPECT_EQ(x.devices(), std::vector<const Device*>{Cpu()});
  EXPECT_FALSE((x * 2.0).committed());
}

TEST(DeviceTest, DevicePutCommitsWithoutCopyingOnTheSameDevice) {
  const Array x = jnp::arange(3.0f);
  const Array c = device_put(x, Cpu());
  EXPECT_TRUE(c.committed());
  EXPECT_EQ(c.committed_device(), Cpu());
  EXPECT_EQ(c.devices(), std::vector<const Device*>{Cpu()});
  EXPECT_EQ(c.data(), x.data());  // the host's buffer, now committed
  EXPECT_FALSE(x.committed());    // x itself is unchanged
  const Array u = device_put(c);
  EXPECT_FALSE(u.committed());
  EXPECT_EQ(u.data(), x.data());
  EXPECT_EQ(device_put(x).impl(), x.impl());
}

TEST(DeviceTest, OpsOnCommittedArraysAreCommittedAndUncommittedOnesFollow) {
  const Array x = device_put(jnp::arange(3.0f), Cpu());
  const Array u = jnp::ones({3});
  for (const Array& y : {lax::sin(x), x + u, u * x, jnp::sum(x), x.reshape({3, 1})}) {
    EXPECT_TRUE(y.committed()) << y;
    EXPECT_EQ(y.committed_device(), Cpu());
  }
  EXPECT_FALSE((u + u).committed());
  EXPECT_EQ((x + u).to_vector<float>(), (jnp::arange(3.0f) + 1.0f).to_vector<float>());
}

TEST(DeviceTest, GradOfCommittedArraysIsCommitted) {
  const Array x = device_put(jnp::arange(3.0f), Cpu());
  const Array g = grad([](const Array& v) { return jnp::sum(lax::sin(v)); })(x);
  EXPECT_TRUE(g.committed());
  EXPECT_EQ(g.to_vector<float>(), lax::cos(jnp::arange(3.0f)).to_vector<float>());
}

TEST(DeviceTest, CommitToAndCommittedDeviceOf) {
  const Array x = jnp::arange(2.0f);
  const Array c = CommitTo(x, Cpu());
  EXPECT_EQ(c.committed_device(), Cpu());
  EXPECT_EQ(c.data(), x.data());
  EXPECT_EQ(CommitTo(c, Cpu()).impl(), c.impl());  // already there
  EXPECT_EQ(CommittedDeviceOf({x, x}, "op"), nullptr);
  EXPECT_EQ(CommittedDeviceOf({x, c}, "op"), Cpu());
}

TEST(DeviceTest, DevicePutOfATracerIsATypeError) {
  EXPECT_THROW(jit([](const Array& x) { return device_put(x, devices()[0]); })(jnp::ones({2})), TypeError);
  EXPECT_THROW(Array().devices(), ValueError);
}

}  // namespace
}  // namespace jx::device_test
