// jit and eager dispatch against any registered Client: a fake second platform ("fake") whose
// client counts Lower calls, records the options it was given and runs programs on the host,
// placing their results on its device. It checks that jit and eager ops pick the client from
// the arguments' devices, pass the device assignment and name, key every cache on the device,
// and that results land on the device they ran on; and JAX's committed-device errors.
#include <atomic>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <jx/jx.h>

#include "jx/core/apply_primitive.h"
#include "jx/core/buffer.h"
#include "jx/core/device.h"
#include "jx/core/executable.h"
#include "jx/devices/cpu/cpu_compiler.h"

namespace jx::fake_platform_test {
namespace {

namespace jnp = jx::numpy;

class FakeClient;

class FakeDevice final : public Device {
 public:
  explicit FakeDevice(const FakeClient& client) : client_(client) {}
  const Client& client() const override;
  std::string_view platform() const override { return "fake"; }
  int id() const override { return 7000; }
  std::string device_kind() const override { return "fake chip"; }
  std::string ToString() const override { return "FakeDevice(id=7000)"; }
  MemoryStats memory_stats() const override {
    MemoryStats s;
    s.bytes_in_use = bytes_allocated.load();
    s.num_allocs = allocations.load();
    return s;
  }
  std::shared_ptr<Buffer> Allocate(int64_t nbytes) const override {
    allocations.fetch_add(1);
    bytes_allocated.fetch_add(nbytes);
    return Buffer::Allocate(nbytes);
  }
  mutable std::atomic<int64_t> allocations{0}, bytes_allocated{0};

 private:
  const FakeClient& client_;
};

// Runs the program on the host, on uncommitted views of its arguments (so the eval
// interpreter does not send it back here), and copies the results into the device's memory.
class FakeExecutable final : public Executable {
 public:
  FakeExecutable(ClosedJaxpr jaxpr, const FakeDevice& device) : jaxpr_(std::move(jaxpr)), device_(device) {}
  Arrays Execute(absl::Span<const Array> args) const override {
    std::vector<Array> host;
    for (const Array& a : args) host.push_back(Array(std::make_shared<ConcreteArray>(a.aval(), a.buffer())));
    Arrays outs;
    for (const Array& r : EvalJaxpr(*jaxpr_.jaxpr, jaxpr_.consts, host)) {
      std::shared_ptr<Buffer> b = device_.Allocate(r.nbytes());
      if (r.nbytes() > 0) std::memcpy(b->data(), r.data(), static_cast<size_t>(r.nbytes()));
      outs.push_back(Array(std::make_shared<ConcreteArray>(r.aval(), std::move(b), &device_, true)));
    }
    return outs;
  }
  std::string as_text() const override { return "fake:" + jaxpr_.ToString(); }
  CostAnalysis cost_analysis() const override { return {}; }
  MemoryAnalysis memory_analysis() const override { return {}; }

 private:
  ClosedJaxpr jaxpr_;
  const FakeDevice& device_;
};

class FakeLowering final : public Lowering {
 public:
  FakeLowering(ClosedJaxpr jaxpr, const FakeDevice& device) : jaxpr_(std::move(jaxpr)), device_(device) {}
  std::string as_text() const override { return "fake:" + jaxpr_.ToString(); }
  std::shared_ptr<const Executable> Compile() const override { return std::make_shared<FakeExecutable>(jaxpr_, device_); }

 private:
  ClosedJaxpr jaxpr_;
  const FakeDevice& device_;
};

class FakeClient final : public Client {
 public:
  FakeClient() : device_(*this) {}
  std::string_view platform() const override { return "fake"; }
  std::vector<const Device*> devices() const override { return {&device_}; }
  std::shared_ptr<const Lowering> Lower(const ClosedJaxpr& jaxpr, const LoweringOptions& options) const override {
    std::lock_guard<std::mutex> lock(mutex_);
    ++lower_calls_;
    last_options_ = options;
    return std::make_shared<FakeLowering>(jaxpr, device_);
  }
  int lower_calls() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return lower_calls_;
  }
  LoweringOptions last_options() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return last_options_;
  }
  const FakeDevice& device() const { return device_; }

 private:
  FakeDevice device_;
  mutable std::mutex mutex_;
  mutable int lower_calls_ = 0;
  mutable LoweringOptions last_options_;
};

const Client& FakeDevice::client() const { return client_; }

const FakeClient& Fake() {
  static const FakeClient* client = [] {
    auto c = std::make_shared<FakeClient>();
    RegisterClient(c);
    return c.get();  // the registry keeps it alive for the process
  }();
  return *client;
}

const Device* Cpu() { return devices()[0]; }

TEST(FakePlatformTest, RegisteredDevicesListTheNewPlatform) {
  const FakeClient& fake = Fake();
  ASSERT_EQ(devices("fake").size(), 1u);
  EXPECT_EQ(devices("fake")[0], &fake.device());
  EXPECT_EQ(devices("cpu").size(), 1u);
  EXPECT_EQ(devices()[0]->platform(), "cpu");  // the default platform stays the host's
}

TEST(FakePlatformTest, DevicePutCopiesIntoTheDevicesMemoryAndBack) {
  const FakeDevice& d = Fake().device();
  const Array x = jnp::arange(6.0f).reshape({2, 3});
  const int64_t allocs = d.allocations.load();
  const Array on = device_put(x, &d);
  EXPECT_EQ(d.allocations.load() - allocs, 1);
  EXPECT_TRUE(on.committed());
  ASSERT_EQ(on.devices().size(), 1u);
  EXPECT_EQ(on.devices()[0], &d);
  EXPECT_NE(on.data(), x.data());  // a copy in the device's memory
  EXPECT_EQ(on.to_vector<float>(), x.to_vector<float>());
  EXPECT_EQ(device_put(on, &d).impl(), on.impl());  // already there: no copy
  const Array back = device_put(on);
  EXPECT_FALSE(back.committed());
  EXPECT_EQ(back.devices()[0], Cpu());
  EXPECT_EQ(back.to_vector<float>(), x.to_vector<float>());
  const Array on_cpu = device_put(on, Cpu());
  EXPECT_TRUE(on_cpu.committed());
  EXPECT_EQ(on_cpu.devices()[0], Cpu());
  EXPECT_EQ(on_cpu.to_vector<float>(), x.to_vector<float>());
}

TEST(FakePlatformTest, EagerOpsOnTheDeviceRunAsCachedOneEquationPrograms) {
  const FakeClient& fake = Fake();
  const Array x = device_put(jnp::arange(4.0f), &fake.device());
  const int lowers = fake.lower_calls();
  const Array y = lax::sin(x);
  EXPECT_EQ(fake.lower_calls() - lowers, 1);
  const LoweringOptions options = fake.last_options();
  EXPECT_EQ(options.name, "sin");
  ASSERT_EQ(options.device_assignment.size(), 1u);
  EXPECT_EQ(options.device_assignment[0], &fake.device());
  EXPECT_TRUE(y.committed());
  EXPECT_EQ(y.devices()[0], &fake.device());
  EXPECT_EQ(y.to_vector<float>(), lax::sin(jnp::arange(4.0f)).to_vector<float>());
  // Same primitive, params and avals: the compiled program is reused.
  const ApplyPrimitiveStats before = GetApplyPrimitiveStats();
  lax::sin(y);
  EXPECT_EQ(fake.lower_calls() - lowers, 1);
  EXPECT_EQ(GetApplyPrimitiveStats().hits - before.hits, 1);
  // New shape: a new program.
  lax::sin(device_put(jnp::arange(5.0f), &fake.device()));
  EXPECT_EQ(fake.lower_calls() - lowers, 2);
  // An uncommitted argument follows the committed one onto the device.
  const Array z = x + jnp::ones({4});
  EXPECT_EQ(z.devices()[0], &fake.device());
  EXPECT_EQ(z.to_vector<float>(), (jnp::arange(4.0f) + 1.0f).to_vector<float>());
}

// jx::clear_caches() drops the eager ops' programs too: the next op lowers and compiles again.
TEST(FakePlatformTest, ClearCachesDropsTheEagerOpsPrograms) {
  const FakeClient& fake = Fake();
  const Array x = device_put(jnp::arange(3.0f), &fake.device());
  lax::cos(x);
  const int lowers = fake.lower_calls();
  lax::cos(x);
  EXPECT_EQ(fake.lower_calls(), lowers);
  clear_caches();
  const Array y = lax::cos(x);
  EXPECT_EQ(fake.lower_calls() - lowers, 1);
  EXPECT_EQ(y.to_vector<float>(), lax::cos(jnp::arange(3.0f)).to_vector<float>());
}

TEST(FakePlatformTest, ArraysCommittedToTwoDevicesInOneOpAreAnErrorNamingBoth) {
  const Array a = device_put(jnp::ones({3}), Cpu());
  const Array b = device_put(jnp::ones({3}), &Fake().device());
  try {
    lax::add(a, b);
    FAIL() << "expected ValueError";
  } catch (const ValueError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("[add]"), std::string::npos) << msg;
    EXPECT_NE(msg.find("CpuDevice(id=0)"), std::string::npos) << msg;
    EXPECT_NE(msg.find("FakeDevice(id=7000)"), std::string::npos) << msg;
  }
  // The process keeps working: each on its own device is fine.
  EXPECT_EQ((a + a).to_vector<float>(), std::vector<float>(3, 2.0f));
  EXPECT_EQ((b + b).to_vector<float>(), std::vector<float>(3, 2.0f));
}

TEST(FakePlatformTest, JitCompilesPerDeviceThroughThatDevicesClient) {
  const FakeClient& fake = Fake();
  auto f = [](const Array& x, const Array& y) { return lax::tanh(x) * y + 1.0; };
  auto jf = jit(f, name{"fake_step"});
  const Array xh = jnp::arange(4.0f) * 0.25f, yh = jnp::ones({4});
  const CpuJitStats cpu_before = GetCpuJitStats();
  const int lowers = fake.lower_calls();
  const Array on_cpu = jf(xh, yh);
  EXPECT_FALSE(on_cpu.committed());
  EXPECT_EQ(fake.lower_calls(), lowers);
  EXPECT_EQ(GetCpuJitStats().compiles - cpu_before.compiles, 1);

  const Array xd = device_put(xh, &fake.device());
  const Array on_fake = jf(xd, yh);  // yh is uncommitted: it follows xd
  EXPECT_EQ(fake.lower_calls() - lowers, 1);
  const LoweringOptions options = fake.last_options();
  EXPECT_EQ(options.name, "fake_step");
  ASSERT_EQ(options.device_assignment.size(), 1u);
  EXPECT_EQ(options.device_assignment[0], &fake.device());
  EXPECT_TRUE(on_fake.committed());
  EXPECT_EQ(on_fake.devices()[0], &fake.device());
  EXPECT_EQ(on_fake.to_vector<float>(), f(xh, yh).to_vector<float>());
  EXPECT_EQ(jf.num_traces(), 2u);  // the trace cache is keyed on the device too

  jf(xd, yh);  // a hit on both caches
  EXPECT_EQ(fake.lower_calls() - lowers, 1);
  EXPECT_EQ(jf.num_traces(), 2u);

  // Committed to the CPU: a third entry, compiled for the CPU (committed results).
  const Array on_cpu_committed = jf(device_put(xh, Cpu()), yh);
  EXPECT_TRUE(on_cpu_committed.committed());
  EXPECT_EQ(on_cpu_committed.devices()[0], Cpu());
  EXPECT_EQ(jf.num_traces(), 3u);

  try {
    jf(xd, device_put(yh, Cpu()));
    FAIL() << "expected ValueError";
  } catch (const ValueError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("jit(fake_step)"), std::string::npos) << msg;
    EXPECT_NE(msg.find("CpuDevice(id=0)"), std::string::npos) << msg;
    EXPECT_NE(msg.find("FakeDevice(id=7000)"), std::string::npos) << msg;
  }
}

TEST(FakePlatformTest, AClosedOverCommittedArrayPinsTheProgramToItsDevice) {
  const FakeClient& fake = Fake();
  const Array w = device_put(jnp::arange(3.0f), &fake.device());
  auto jf = jit([w](const Array& x) { return x * w; }, name{"closure"});
  const int lowers = fake.lower_calls();
  const Array y = jf(jnp::ones({3}));
  EXPECT_EQ(fake.lower_calls() - lowers, 1);
  EXPECT_EQ(y.devices()[0], &fake.device());
  EXPECT_EQ(y.to_vector<float>(), jnp::arange(3.0f).to_vector<float>());
  // An argument committed to another device conflicts with the constant's.
  EXPECT_THROW(jit([w](const Array& x) { return x * w; })(device_put(jnp::ones({3}), Cpu())), ValueError);
}

TEST(FakePlatformTest, LowerTakesTheTargetFromShapeDtypeStructDevices) {
  const FakeClient& fake = Fake();
  auto f = [](const Array& x) { return lax::exp(x); };
  const int lowers = fake.lower_calls();
  auto lowered = jit(f, name{"aot"}).lower(ShapeDtypeStruct{{8}, float32, &fake.device()});
  EXPECT_EQ(fake.lower_calls() - lowers, 1);
  EXPECT_EQ(fake.last_options().device_assignment, std::vector<const Device*>{&fake.device()});
  EXPECT_EQ(lowered.as_text().rfind("fake:", 0), 0u) << lowered.as_text();
  auto compiled = lowered.compile();
  const Array x = device_put(jnp::arange(8.0f), &fake.device());
  const Array y = compiled(x);
  EXPECT_EQ(y.devices()[0], &fake.device());
  EXPECT_EQ(y.to_vector<float>(), lax::exp(jnp::arange(8.0f)).to_vector<float>());
  // An argument committed elsewhere does not run on a program compiled for this device.
  EXPECT_THROW(compiled(device_put(jnp::arange(8.0f), Cpu())), ValueError);
  // Without a device the CPU compiles it.
  EXPECT_NE(jit(f, name{"aot"}).lower(ShapeDtypeStruct{{8}, float32}).as_text().find("HloModule jit_aot"),
            std::string::npos);
}

}  // namespace
}  // namespace jx::fake_platform_test
