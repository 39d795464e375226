#include "jx/devices/cpu/cpu_compiler.h"

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <typeinfo>
#include <utility>
#include <vector>

#include "jx/compiler/analysis/hlo_cost_analysis.h"
#include "jx/compiler/backend/cpu/cpu_executable.h"
#include "jx/compiler/backend/linalg_cost.h"
#include "jx/compiler/backend/module_cost_conversion.h"
#include "jx/compiler/hlo/hlo_fingerprint.h"
#include "jx/compiler/hlo/hlo_graphviz.h"
#include "jx/compiler/hlo/hlo_pass.h"
#include "jx/compiler/lower/lower_jaxpr.h"
#include "jx/core/errors.h"
#include "jx/core/str_util.h"
#include "jx/devices/cpu/compile_log.h"
#include "jx/devices/cpu/cpu_pipeline.h"
#include "jx/devices/cpu/cpu_program.h"
#include "jx/devices/cpu/program_cache.h"
#include "jx/lax/registration.h"

namespace jx {
namespace cpu_device {
namespace {

std::atomic<int64_t> g_compiles{0}, g_cache_hits{0};

// As JAX: donating an argument no output can take is not an error, but worth a warning.
void WarnUnusableDonations(const cpu::CpuExecutable& exe, const std::vector<bool>& donated, std::string_view what) {
  std::vector<bool> used(donated.size(), false);
  for (const auto& [k, a] : exe.output_aliases()) used[a] = true;
  std::string unusable;
  for (size_t a = 0; a < donated.size(); ++a) {
    if (donated[a] && !used[a]) StrAppend(&unusable, unusable.empty() ? "" : ", ", exe.argument_shapes()[a].ToString(false));
  }
  if (!unusable.empty()) {
    std::fprintf(stderr, "jx: %.*s: some donated buffers were not usable: %s\n", static_cast<int>(what.size()),
                 what.data(), unusable.c_str());
  }
}

class CpuLowering final : public HloLowering {
 public:
  CpuLowering(LoweredModule lowered, std::vector<ShapedArray> out_avals, const Device& device)
      : HloLowering(lowered),
        out_avals_(std::move(out_avals)),
        donated_(std::move(lowered.donated_params)),
        device_(device),
        key_(ProgramCacheKey(lowered.fingerprint, out_avals_, donated_, device_)),
        what_(std::move(lowered.what)),
        dump_(std::move(lowered.dump)) {}

  std::shared_ptr<const Executable> Compile() const override {
    if (std::shared_ptr<const Executable> hit = ProgramCache::Global().Find(key_)) {
      g_cache_hits.fetch_add(1);
      return hit;
    }
    CompileTimer timer;
    std::unique_ptr<hlo::HloModule> module = ModuleToCompile();
    timer.Lap("module");
    hlo::HloPassPipeline pipeline("cpu");
    AddCpuPasses(pipeline, donated_);
    dump_.AttachTo(pipeline);
    if (absl::StatusOr<bool> ran = pipeline.Run(module.get()); !ran.ok()) {
      ThrowStatus(StrCat(what_, ": optimization failed"), ran.status());
    }
    timer.Lap("passes", &pipeline);
    dump_.Write(module->name(), ".dot", dump_.enabled() ? hlo::HloModuleToDot(*module) : "");
    ::jx::backend::RegisterLinalgCustomCallCosts();
    absl::StatusOr<hlo::ModuleCost> cost = hlo::AnalyzeCost(*module);
    if (!cost.ok()) ThrowStatus(StrCat(what_, ": cost analysis failed"), cost.status());
    timer.Lap("cost-analysis");
    std::unique_ptr<cpu::CpuExecutable> exe = CompileOnHost(std::move(module), donated_, what_, /*verified=*/true);
    timer.Lap("cpu-backend");
    auto program = std::make_shared<CpuProgram>(std::move(exe), ToCostAnalysis(*cost), out_avals_, what_, &device_);
    g_compiles.fetch_add(1);
    ProgramCache::Global().Insert(key_, program);
    timer.Lap("program-cache");
    timer.Report(what_);
    return program;
  }

 private:
  std::vector<ShapedArray> out_avals_;
  std::vector<bool> donated_;  // per argument leaf; empty when none
  const Device& device_;
  std::string key_;
  std::string what_;
  CompileDump dump_;
};

}  // namespace

std::string ModuleName(std::string_view name) {
  std::string out = "jit_";
  for (char c : name) out += (std::isalnum(static_cast<unsigned char>(c)) || c == '_') ? c : '_';
  return out;
}

void ThrowStatus(std::string_view what, const absl::Status& status) {
  const std::string msg = StrCat(what, ": ", status.message());
  if (status.code() == absl::StatusCode::kUnimplemented) throw NotImplementedError(msg);
  if (status.code() == absl::StatusCode::kResourceExhausted) throw ResourceExhaustedError(msg);
  throw InternalError(msg);
}

bool EvaluatorFallbackAllowed() {
  const char* v = std::getenv("JX_CPU_FALLBACK");
  return v == nullptr || std::string_view(v) != "error";
}

// The target's platform picks the primitives' per-platform lowering rules.
std::string PlatformOf(const LoweringOptions& options) {
  return options.device_assignment.empty() ? "cpu" : std::string(options.device_assignment.front()->platform());
}

LoweredModule LowerToHlo(const ClosedJaxpr& jaxpr, const LoweringOptions& options) {
  lax::RegisterAll();
  LoweredModule out;
  out.what = StrCat("jit(", options.name, ")");
  const std::string module_name = ModuleName(options.name);
  out.dump = CompileDump::ForNextCompile();
  // Printed only for a dump: a big program's jaxpr text costs as much as a pass.
  out.dump.Write(module_name, ".jaxpr.txt", out.dump.enabled() ? jaxpr.ToString() : "");
  CompileTimer timer;
  // Outputs come back as one buffer per leaf, so the root is always a tuple.
  const LowerOptions lower_options{.tuple_result = true, .name_stack = out.what, .platform = PlatformOf(options)};
  out.lower_again = [jaxpr, module_name, lower_options, what = out.what] {
    absl::StatusOr<std::unique_ptr<hlo::HloModule>> module = LowerJaxpr(jaxpr, module_name, lower_options);
    if (!module.ok()) ThrowStatus(StrCat(what, ": lowering again failed"), module.status());
    return std::move(*module);
  };
  absl::StatusOr<std::unique_ptr<hlo::HloModule>> module = LowerJaxpr(jaxpr, module_name, lower_options);
  if (!module.ok()) ThrowStatus(StrCat(out.what, ": lowering failed"), module.status());
  out.module = std::move(*module);
  timer.Lap("lower-jaxpr");
  out.fingerprint = hlo::FingerprintHloModule(*out.module);
  timer.Lap("fingerprint");
  out.dump.Write(module_name, ".lowered.txt", out.dump.enabled() ? out.module->ToString() : "");
  // Donation flags per entry parameter (jit passes one per argument leaf); none donated
  // means no flags, so those programs share one cache entry.
  const std::vector<bool>& donated = options.donated;
  if (std::find(donated.begin(), donated.end(), true) != donated.end()) {
    const int64_t params = out.module->entry_computation()->num_parameters();
    if (static_cast<int64_t>(donated.size()) != params) {
      throw InternalError(StrCat(out.what, ": ", donated.size(), " donation flags for ", params, " parameters"));
    }
    out.donated_params = donated;
  }
  timer.Report(out.what);
  return out;
}

std::unique_ptr<cpu::CpuExecutable> CompileOnHost(std::unique_ptr<hlo::HloModule> module,
                                                  const std::vector<bool>& donated_params, std::string_view what,
                                                  bool verified) {
  cpu::CpuCompileOptions options;
  options.module_verified = verified;
  options.donated_arguments = donated_params;
  options.allow_evaluator_fallback = EvaluatorFallbackAllowed();
  absl::StatusOr<std::unique_ptr<cpu::CpuExecutable>> exe = cpu::CompileForCpu(std::move(module), options);
  if (!exe.ok()) ThrowStatus(StrCat(what, ": compilation failed"), exe.status());
  WarnUnusableDonations(**exe, donated_params, what);
  return std::move(*exe);
}

HloLowering::HloLowering(LoweredModule& lowered)
    : module_(std::move(lowered.module)), lower_again_(std::move(lowered.lower_again)) {}

const hlo::HloModule& HloLowering::LoweredLocked() const {
  if (module_ == nullptr) module_ = lower_again_();
  return *module_;
}

const hlo::HloModule& HloLowering::module() const {
  std::lock_guard<std::mutex> lock(mutex_);
  read_ = true;
  return LoweredLocked();
}

// Printed under the lock without handing out a reference: a later compile may still take it.
std::string HloLowering::as_text() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return LoweredLocked().ToString();
}

std::unique_ptr<hlo::HloModule> HloLowering::ModuleToCompile() const {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!read_) return module_ != nullptr ? std::move(module_) : lower_again_();
  absl::StatusOr<std::unique_ptr<hlo::HloModule>> copy = module_->Clone();
  if (!copy.ok()) ThrowStatus("copying the lowered module", copy.status());
  return std::move(*copy);
}

namespace {

const HloLowering& AsHloLowering(const Lowering& lowering, std::string_view what) {
  const auto* hlo_lowering = dynamic_cast<const HloLowering*>(&lowering);
  if (hlo_lowering == nullptr) {
    throw InternalError(StrCat(what, ": the lowering is not an HLO module (", typeid(lowering).name(), ")"));
  }
  return *hlo_lowering;
}

}  // namespace

const hlo::HloModule& LoweredHloModule(const Lowering& lowering, std::string_view what) {
  return AsHloLowering(lowering, what).module();
}

std::unique_ptr<hlo::HloModule> LoweredModuleToRewrite(const Lowering& lowering, std::string_view what) {
  return AsHloLowering(lowering, what).ModuleToCompile();
}

std::shared_ptr<const Lowering> LowerForCpu(const ClosedJaxpr& jaxpr, const LoweringOptions& options,
                                            const Device& device) {
  return std::make_shared<CpuLowering>(LowerToHlo(jaxpr, options), jaxpr.jaxpr->out_avals(), device);
}

}  // namespace cpu_device

CpuJitStats GetCpuJitStats() { return CpuJitStats{cpu_device::g_compiles.load(), cpu_device::g_cache_hits.load()}; }

}  // namespace jx
