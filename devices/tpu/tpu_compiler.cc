#include "jx/devices/tpu/tpu_compiler.h"

#include <atomic>
#include <cstdio>
#include <utility>
#include <vector>

#include "jx/compiler/backend/cpu/cpu_executable.h"
#include "jx/compiler/backend/tpu/tpu_cost_model.h"
#include "jx/compiler/backend/tpu/tpu_pipeline.h"
#include "jx/compiler/hlo/hlo_pass.h"
#include "jx/compiler/passes/layout_assignment.h"
#include "jx/core/errors.h"
#include "jx/core/str_util.h"
#include "jx/devices/cpu/compile_log.h"
#include "jx/devices/cpu/cpu_compiler.h"
#include "jx/devices/cpu/cpu_program.h"
#include "jx/devices/cpu/program_cache.h"
#include "jx/devices/tpu/pod_program.h"
#include "jx/devices/tpu/tpu_program.h"

namespace jx::tpu {
namespace {

using cpu_device::CompileDump;
using cpu_device::CompileTimer;
using cpu_device::ProgramCache;
using cpu_device::ThrowStatus;

void WarnF64EmulatedOnce(const std::string& what, const std::string& generation) {
  static std::atomic<bool> warned{false};
  if (warned.exchange(true)) return;
  std::fprintf(stderr,
               "jx: %s: TPU %s chips have no f64 units; f64 operations are emulated in software (costed as such, "
               "computed in f64 on the host). This warning is printed once.\n",
               what.c_str(), generation.c_str());
}

class TpuLowering final : public cpu_device::HloLowering {
 public:
  TpuLowering(cpu_device::LoweredModule lowered, std::vector<ShapedArray> out_avals, const TpuChip& chip)
      : HloLowering(lowered),
        out_avals_(std::move(out_avals)),
        donated_(std::move(lowered.donated_params)),
        chip_(chip),
        key_(cpu_device::ProgramCacheKey(lowered.fingerprint, out_avals_, donated_, chip_)),
        what_(std::move(lowered.what)),
        dump_(std::move(lowered.dump)) {}

  std::shared_ptr<const Executable> Compile() const override {
    if (std::shared_ptr<const Executable> hit = ProgramCache::Global().Find(key_)) return hit;
    CompileTimer timer;
    std::unique_ptr<hlo::HloModule> module = ModuleToCompile();
    timer.Lap("module");
    const TpuChipSpec& spec = chip_.spec();
    hlo::HloPassPipeline pipeline("tpu");
    AddTpuPasses(pipeline, TpuTargetOptions(spec));
    dump_.AttachTo(pipeline);
    if (absl::StatusOr<bool> ran = pipeline.Run(module.get()); !ran.ok()) {
      ThrowStatus(StrCat(what_, ": optimization for ", chip_.ToString(), " failed"), ran.status());
    }
    timer.Lap("passes", &pipeline);
    absl::StatusOr<CostAnalysis> cost = AnalyzeTpuCost(*module, spec);
    if (!cost.ok()) ThrowStatus(StrCat(what_, ": TPU cost analysis failed"), cost.status());
    if (cost->f64_emulated) WarnF64EmulatedOnce(what_, spec.generation);
    timer.Lap("tpu-cost-model");
    // The host runs the same program in the CPU's row-major layouts (the tiles and memory
    // spaces are the chip's, read by the cost model).
    absl::StatusOr<std::unique_ptr<hlo::HloModule>> host_module = module->Clone();
    if (!host_module.ok()) ThrowStatus(StrCat(what_, ": clone failed"), host_module.status());
    if (absl::StatusOr<bool> ran = hlo::LayoutAssignment().Run(host_module->get()); !ran.ok()) {
      ThrowStatus(StrCat(what_, ": host layout assignment failed"), ran.status());
    }
    std::unique_ptr<cpu::CpuExecutable> exe = cpu_device::CompileOnHost(std::move(*host_module), donated_, what_);
    timer.Lap("cpu-backend");
    // A program whose peak can never fit the chip's HBM fails now, as XLA's TPU compiler does;
    // one that fits the capacity but not what is free fails when it runs.
    chip_.hbm()->CheckCapacity(exe->memory_analysis().peak_bytes, StrCat("compiling ", what_, ", whose peak is"));
    auto host = std::make_shared<cpu_device::CpuProgram>(std::move(exe), *cost, out_avals_, what_, &chip_);
    auto program = std::make_shared<TpuProgram>(std::move(host), std::move(module), std::move(*cost), chip_, what_);
    timer.Report(what_);
    ProgramCache::Global().Insert(key_, program);
    return program;
  }

 private:
  std::vector<ShapedArray> out_avals_;
  std::vector<bool> donated_;  // per entry parameter; empty when none
  const TpuChip& chip_;
  std::string key_;
  std::string what_;
  CompileDump dump_;
};

class PodLowering final : public cpu_device::HloLowering {
 public:
  PodLowering(cpu_device::LoweredModule lowered, std::vector<ShapedArray> out_avals, const TpuClient& client,
              std::vector<const TpuChip*> chips)
      : HloLowering(lowered),
        out_avals_(std::move(out_avals)),
        donated_(std::move(lowered.donated_params)),
        client_(client),
        chips_(std::move(chips)),
        what_(std::move(lowered.what)) {
    key_ = cpu_device::ProgramCacheKey(lowered.fingerprint, out_avals_, donated_, *chips_.front());
    for (const TpuChip* chip : chips_) key_ += StrCat("|", chip->id());
  }

  std::shared_ptr<const Executable> Compile() const override {
    if (std::shared_ptr<const Executable> hit = ProgramCache::Global().Find(key_)) return hit;
    std::shared_ptr<const Executable> program =
        CompilePodProgram(ModuleToCompile(), client_, chips_, out_avals_, what_, donated_);
    ProgramCache::Global().Insert(key_, program);
    return program;
  }

 private:
  std::vector<ShapedArray> out_avals_;
  std::vector<bool> donated_;
  const TpuClient& client_;
  std::vector<const TpuChip*> chips_;
  std::string key_;
  std::string what_;
};

}  // namespace

std::shared_ptr<const Lowering> LowerForPod(const ClosedJaxpr& jaxpr, const LoweringOptions& options,
                                            const TpuClient& client, std::vector<const TpuChip*> chips) {
  LoweringOptions for_chip = options;
  for_chip.device_assignment = {chips.front()};  // the "tpu" platform's lowering rules
  return std::make_shared<PodLowering>(cpu_device::LowerToHlo(jaxpr, for_chip), jaxpr.jaxpr->out_avals(), client,
                                       std::move(chips));
}

std::shared_ptr<const Lowering> LowerForTpu(const ClosedJaxpr& jaxpr, const LoweringOptions& options,
                                            const TpuChip& chip) {
  LoweringOptions for_chip = options;
  for_chip.device_assignment = {&chip};  // the "tpu" platform's lowering rules
  return std::make_shared<TpuLowering>(cpu_device::LowerToHlo(jaxpr, for_chip), jaxpr.jaxpr->out_avals(), chip);
}

}  // namespace jx::tpu
