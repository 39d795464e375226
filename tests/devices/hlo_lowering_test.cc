// HloLowering (devices/cpu/cpu_compiler.h): the first compile takes the lowered module without
// copying it, and the program as lowered stays readable and compilable after that: as JAX's
// `jit(f).lower(x).as_text()` gives the unoptimized program before and after `.compile()`.
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <jx/jx.h>

#include "jx/compiler/hlo/hlo_module.h"
#include "jx/core/errors.h"
#include "jx/devices/cpu/cpu_compiler.h"

namespace jx::hlo_lowering_test {
namespace {

namespace jnp = jx::numpy;

ClosedJaxpr SinMulJaxpr() {
  return make_jaxpr([](const Array& x) { return lax::sin(x) * 2.5 + x; })(jnp::ones({8}));
}

// Exposes what a client's Compile asks for.
class ModuleTakingLowering final : public cpu_device::HloLowering {
 public:
  explicit ModuleTakingLowering(cpu_device::LoweredModule lowered) : HloLowering(lowered) {}
  std::shared_ptr<const Executable> Compile() const override { throw InternalError("not compiled in this test"); }
  using HloLowering::ModuleToCompile;
};

TEST(HloLoweringTest, TheTakenModuleIsLoweredAgainForWhoeverAsksAfter) {
  RegisterBuiltinClients();
  ModuleTakingLowering lowering(cpu_device::LowerToHlo(SinMulJaxpr(), {.name = "taken"}));
  const std::string lowered = lowering.as_text();
  ASSERT_NE(lowered.find("sine("), std::string::npos) << lowered;
  // Printing hands out no reference: the first compile takes the lowered module itself.
  std::unique_ptr<hlo::HloModule> first = lowering.ModuleToCompile();
  EXPECT_EQ(first->ToString(), lowered);
  first->entry_computation()->set_root_instruction(first->entry_computation()->parameter_instruction(0));
  EXPECT_EQ(lowering.as_text(), lowered);  // lowered again, not the rewritten one
  std::unique_ptr<hlo::HloModule> second = lowering.ModuleToCompile();
  EXPECT_EQ(second->ToString(), lowered);
  // A module read through module() stays: later compiles get copies.
  const hlo::HloModule& read = lowering.module();
  EXPECT_EQ(read.ToString(), lowered);
  std::unique_ptr<hlo::HloModule> third = lowering.ModuleToCompile();
  EXPECT_NE(third.get(), &read);
  third->entry_computation()->set_root_instruction(third->entry_computation()->parameter_instruction(0));
  EXPECT_EQ(&lowering.module(), &read);
  EXPECT_EQ(read.ToString(), lowered);
}

// What a pod plan rewrites: the lowering's own module, and the lowering still compiles after.
TEST(HloLoweringTest, AModuleToRewriteLeavesTheLoweringWhole) {
  RegisterBuiltinClients();
  std::shared_ptr<const Lowering> lowering =
      cpu_device::LowerForCpu(SinMulJaxpr(), {.name = "rewritten"}, *devices().front());
  const std::string lowered = lowering->as_text();
  std::unique_ptr<hlo::HloModule> module = cpu_device::LoweredModuleToRewrite(*lowering, "a test");
  EXPECT_EQ(module->ToString(), lowered);
  module.reset();
  EXPECT_EQ(lowering->as_text(), lowered);
  const Array x = jnp::ones({8});
  const std::vector<double> got = lowering->Compile()->Execute({x}).at(0).to_vector<double>();
  EXPECT_NEAR(got.at(0), std::sin(1.0) * 2.5 + 1.0, 1e-6);
}

TEST(HloLoweringTest, ALoweringPrintsTheLoweredProgramAfterCompilingAndCompilesAgain) {
  auto f = [](const Array& x) { return lax::cos(x) * 1.5 - x; };
  const Array x = jnp::arange(8, float32) * 0.25;
  auto lowered = jit(f).lower(x);
  const std::string before = lowered.as_text();
  auto compiled = lowered.compile();
  EXPECT_EQ(lowered.as_text(), before);
  EXPECT_NE(compiled.as_text(), before);  // the optimized program
  auto again = lowered.compile();
  const std::vector<double> got = compiled(x).to_vector<double>(), want = f(x).to_vector<double>();
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-6) << "element " << i;
  EXPECT_EQ(again(x).to_vector<double>(), got);
  EXPECT_EQ(lowered.as_text(), before);
}

}  // namespace
}  // namespace jx::hlo_lowering_test
