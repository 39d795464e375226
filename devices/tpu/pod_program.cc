#include "jx/devices/tpu/pod_program.h"

#include <algorithm>
#include <chrono>
#include <exception>
#include <thread>
#include <utility>

#include "jx/compiler/backend/cpu/cpu_executable.h"
#include "jx/compiler/backend/tpu/tpu_cost_model.h"
#include "jx/compiler/backend/tpu/tpu_pipeline.h"
#include "jx/compiler/hlo/hlo_pass.h"
#include "jx/compiler/hlo/hlo_verifier.h"
#include "jx/core/config.h"
#include "jx/core/errors.h"
#include "jx/core/sharding.h"
#include "jx/core/str_util.h"
#include "jx/devices/cpu/compile_log.h"
#include "jx/devices/cpu/cpu_compiler.h"
#include "jx/devices/cpu/cpu_program.h"
#include "jx/devices/interconnect/torus.h"
#include "jx/devices/profiler/profiler.h"
#include "jx/devices/tpu/chip_classes.h"
#include "jx/devices/tpu/chip_memory.h"
#include "jx/devices/tpu/dry_run_measures.h"
#include "jx/devices/tpu/ici_collective_timer.h"
#include "jx/devices/tpu/pod_overlap.h"
#include "jx/devices/tpu/pod_rendezvous.h"
#include "jx/devices/tpu/tpu_client.h"

namespace jx::tpu {
namespace {

using cpu_device::ThrowStatus;

constexpr double kMicros = 1e6;

// The pod step's rows of an optimized module (loop bodies' collectives timed on the pod).
std::vector<PodStepRow> StepRowsOf(const hlo::HloModule& module, const CostAnalysis& cost, const TpuClient& client,
                                   const std::vector<const TpuChip*>& chips, const std::string& what) {
  const IciCollectiveTimer timer(client.torus(), chips);
  absl::StatusOr<std::vector<PodStepRow>> rows =
      PodStepRowsOf(module, cost, static_cast<int64_t>(chips.size()), client.spec(), &timer);
  if (!rows.ok()) ThrowStatus(StrCat(what, ": costing its loops' collectives failed"), rows.status());
  return *std::move(rows);
}

}  // namespace

PodProgram::PodProgram(std::unique_ptr<cpu::CpuExecutable> host, std::unique_ptr<hlo::HloModule> module,
                       CostAnalysis cost, MemoryAnalysis memory, HbmPeakReport hbm, Timings timings,
                       const TpuClient& client, std::vector<const TpuChip*> chips,
                       std::vector<ShapedArray> out_avals, std::string what)
    : host_(std::move(host)),
      module_(std::move(module)),
      cost_(std::move(cost)),
      memory_(memory),
      hbm_(std::move(hbm)),
      timings_(std::move(timings)),
      client_(client),
      chips_(std::move(chips)),
      out_avals_(std::move(out_avals)),
      what_(std::move(what)),
      rows_(StepRowsOf(*module_, cost_, client_, chips_, what_)) {}

PodProgram::PodProgram(std::unique_ptr<hlo::HloModule> module, CostAnalysis cost, MemoryAnalysis memory,
                       HbmPeakReport hbm, Timings timings, const TpuClient& client,
                       std::vector<const TpuChip*> chips, std::vector<ShapedArray> out_avals, std::string what)
    : module_(std::move(module)),
      cost_(std::move(cost)),
      memory_(memory),
      hbm_(std::move(hbm)),
      timings_(std::move(timings)),
      client_(client),
      chips_(std::move(chips)),
      out_avals_(std::move(out_avals)),
      what_(std::move(what)),
      rows_(StepRowsOf(*module_, cost_, client_, chips_, what_)) {}

PodProgram::~PodProgram() = default;

StepReport PodProgram::last_step() const {
  std::lock_guard<std::mutex> lock(mu_);
  return last_step_;
}

Arrays PodProgram::Execute(absl::Span<const Array> args) const {
  const size_t n = chips_.size();
  std::vector<Arrays> per_chip(n);
  for (size_t i = 0; i < args.size(); ++i) {
    const Array& a = args[i];
    if (a.is_tracer()) throw InternalError(StrCat(what_, " run on a traced argument ", i));
    if (a.devices().size() <= 1) {
      for (size_t p = 0; p < n; ++p) per_chip[p].push_back(a);  // every chip gets it
      continue;
    }
    std::vector<Shard> shards = a.addressable_shards();
    if (shards.size() != n) {
      throw ValueError(StrCat(what_, ": argument ", i, " is sharded over ", shards.size(), " devices; the program runs on ",
                              n, " chips"));
    }
    for (size_t p = 0; p < n; ++p) {
      if (shards[p].device != chips_[p]) {
        throw ValueError(StrCat(what_, ": argument ", i, "'s shard ", p, " is on ", shards[p].device->ToString(),
                                "; partition ", p, " runs on ", chips_[p]->ToString()));
      }
      per_chip[p].push_back(shards[p].data);
    }
  }
  std::vector<Arrays> outs = ExecuteShards(per_chip);
  Arrays flat;
  for (Arrays& chip_outs : outs) {
    for (Array& a : chip_outs) flat.push_back(std::move(a));
  }
  return flat;
}

std::vector<Arrays> PodProgram::ExecuteShards(const std::vector<Arrays>& args) const {
  const size_t n = chips_.size();
  if (host_ == nullptr) {
    throw ValueError(StrCat(what_, " was planned, not compiled (a dry run from shapes): it has no program to run; "
                            "compile it from the same lowering to run it"));
  }
  const std::vector<hlo::Shape>& params = host_->argument_shapes();
  if (args.size() != n) {
    throw ValueError(StrCat(what_, ": the program runs on ", n, " chips; got arguments for ", args.size()));
  }
  std::vector<std::vector<const void*>> in(n);
  for (size_t p = 0; p < n; ++p) {
    if (args[p].size() != params.size()) {
      throw ValueError(StrCat(what_, ": partition ", p, " (", chips_[p]->ToString(), ") takes ", params.size(),
                              " arguments, got ", args[p].size()));
    }
    for (size_t i = 0; i < params.size(); ++i) {
      const Array& a = args[p][i];
      if (a.is_tracer()) throw InternalError(StrCat(what_, " run on a traced argument ", i));
      if (a.aval().nbytes() != hlo::ShapeUtil::ByteSizeOf(params[i])) {
        throw ValueError(StrCat(what_, ": partition ", p, "'s argument ", i, " is ", a.aval().str(), "; the program takes ",
                                params[i].ToString(false)));
      }
      in[p].push_back(a.data());
    }
  }
  std::vector<Arrays> outs(n);
  std::vector<std::vector<void*>> out(n);
  for (size_t p = 0; p < n; ++p) {
    for (const ShapedArray& aval : out_avals_) {
      std::shared_ptr<Buffer> storage = chips_[p]->Allocate(aval.nbytes());
      out[p].push_back(storage->data());
      outs[p].push_back(Array(std::make_shared<ConcreteArray>(aval, std::move(storage), chips_[p], true)));
    }
  }
  std::vector<std::unique_ptr<ScopedReservation>> scratch;
  for (size_t p = 0; p < n; ++p) {
    scratch.push_back(std::make_unique<ScopedReservation>(*chips_[p]->hbm(), memory_.temp_size_in_bytes,
                                                          StrCat("reserving ", what_, "'s scratch of")));
  }
  PodRendezvous rendezvous(static_cast<int64_t>(n));
  std::vector<absl::Status> status(n);
  std::mutex failure_mu;
  int64_t first_failure = -1;  // the chip whose error stopped the others
  std::vector<std::thread> threads;
  threads.reserve(n);
  for (size_t p = 0; p < n; ++p) {
    threads.emplace_back([&, p] {
      absl::Status st;
      try {
        PartitionContext context(rendezvous, static_cast<int64_t>(p));
        st = host_->Run(in[p], out[p], {.collectives = &context});
      } catch (const std::exception& e) {
        st = absl::InternalError(e.what());
      }
      if (st.ok()) return;
      status[p] = st;
      {
        std::lock_guard<std::mutex> lock(failure_mu);
        if (first_failure >= 0) return;  // stopped by another chip's failure
        first_failure = static_cast<int64_t>(p);
      }
      rendezvous.Abort(absl::AbortedError(StrCat(chips_[p]->ToString(), " failed")));
    });
  }
  for (std::thread& t : threads) t.join();
  scratch.clear();
  if (first_failure >= 0) {
    ThrowStatus(StrCat(what_, ": run failed on ", chips_[first_failure]->ToString(), " (partition ", first_failure,
                       ")"),
                status[first_failure]);
  }
  StepReport report = AdvanceClocks();
  client_.RecordStep(report);
  std::lock_guard<std::mutex> lock(mu_);
  last_step_ = std::move(report);
  return outs;
}

StepReport PodProgram::AdvanceClocks() const {
  const size_t n = chips_.size();
  std::vector<double> starts(n);
  for (size_t p = 0; p < n; ++p) starts[p] = chips_[p]->activity().now_seconds;
  const PodTimelines step = SchedulePodStep(cost_, rows_, starts, chips_[0]->spec().hbm_bandwidth);
  std::vector<int64_t> identity(n);
  for (size_t p = 0; p < n; ++p) identity[p] = static_cast<int64_t>(p);
  StepReport report = Report(step, identity);
  for (size_t p = 0; p < n; ++p) {
    const StepTimeline& t = step.chips[p];
    chips_[p]->CommitStep(t);
    report.chips[p].hbm_high_water_bytes = chips_[p]->memory_stats().peak_bytes_in_use;
    if (profiler::is_tracing()) {
      std::vector<profiler::Slice> slices;
      slices.push_back({.lane = std::string(profiler::kStepsLane),
                        .name = what_,
                        .start_us = t.start_seconds * kMicros,
                        .duration_us = t.seconds * kMicros,
                        .args = {{"partition", static_cast<double>(p)}, {"flops", cost_.flops}}});
      for (const PlacedInstruction& i : t.instructions) {
        slices.push_back({.lane = i.lane,
                          .name = i.name,
                          .start_us = i.start_seconds * kMicros,
                          .duration_us = i.seconds * kMicros,
                          .args = {{"opcode", i.cost->opcode}, {"bytes", i.cost->bytes}}});
      }
      profiler::Record(*chips_[p], std::move(slices));
    }
  }
  return report;
}

StepReport PodProgram::Report(const PodTimelines& step, absl::Span<const int64_t> timeline_of) const {
  const size_t n = chips_.size();
  StepReport report;
  report.what = what_;
  report.chips.reserve(n);
  double first = 0, last = 0;
  for (size_t p = 0; p < n; ++p) {
    ChipStepReport c = ChipStepReportOf(step, static_cast<size_t>(timeline_of[p]), chips_[p]->ToString());
    c.hbm_high_water_bytes = memory_.peak_memory_in_bytes;
    first = p == 0 ? c.start_seconds : std::min(first, c.start_seconds);
    last = std::max(last, c.end_seconds);
    report.chips.push_back(std::move(c));
  }
  report.wall_seconds = last - first;
  const ici::Torus& torus = client_.torus();
  AddCollectivesAndLinks(
      step, *module_,
      [&](std::string_view name) -> const CollectiveTiming* {
        auto it = timings_.find(std::string(name));
        return it == timings_.end() ? nullptr : it->second.get();
      },
      [&](int64_t link) { return torus.Describe(torus.links()[link]); }, &report);
  return report;
}

PodPlan PodProgram::Plan() const {
  const size_t n = chips_.size();
  const std::vector<double> starts(n, 0.0);
  const ChipClasses classes = GroupIdenticalChips(rows_, starts);
  const PodTimelines step =
      SchedulePodStep(cost_, classes.rows, classes.RepresentativeStarts(starts), chips_[0]->spec().hbm_bandwidth);
  const TpuChipSpec& spec = client_.spec();
  PodPlan plan;
  plan.what = what_;
  plan.pod = client_.torus().ToString();
  plan.num_chips = static_cast<int64_t>(n);
  plan.devices_per_chip = spec.devices_per_chip;
  plan.flops_per_chip = cost_.flops;
  plan.peak_flops_per_chip = spec.bf16_flops;
  plan.hbm_peak_bytes = memory_.peak_memory_in_bytes;
  plan.hbm = hbm_;
  plan.hbm_capacity_bytes = spec.hbm_bytes;
  plan.num_timeline_classes = classes.num_classes();
  plan.step = Report(step, classes.class_of);
  for (const InstructionCost& row : cost_.instructions) {
    if (row.unit != "ici" && row.seconds > 0) plan.costliest_instructions.push_back(row);
  }
  std::stable_sort(plan.costliest_instructions.begin(), plan.costliest_instructions.end(),
                   [](const InstructionCost& a, const InstructionCost& b) { return a.seconds > b.seconds; });
  if (plan.costliest_instructions.size() > 16) plan.costliest_instructions.resize(16);
  absl::StatusOr<std::vector<KernelCategory>> categories = TpuKernelCategories(*module_, spec);
  if (!categories.ok()) ThrowStatus(StrCat(what_, ": kernel categories"), categories.status());
  plan.kernel_categories = *std::move(categories);
  return plan;
}

namespace {

// How often the TPU pipeline verifies a pod program's HLO.
enum class Verify {
  kEveryChangedPass,  // as every compile: after each pass that changed the module
  kInputAndOutput,    // a dry run's: before the first pass and after the last
};

void VerifyOrThrow(const hlo::HloModule& module, const std::string& what, std::string_view which) {
  if (absl::Status st = hlo::VerifyHloModule(module); !st.ok()) {
    ThrowStatus(StrCat(what, ": the TPU pipeline's ", which, " fails verification"), st);
  }
}

// The TPU pipeline and the cost model on the pod (collectives timed on its torus; the
// latency-hiding scheduler reads the same timer). The code motion weighs hoists against the
// chip's memory and the step as the plan measures them (DryRunMeasures of a compiled copy).
CostAnalysis OptimizeAndCost(hlo::HloModule* module, const TpuClient& client, const std::vector<const TpuChip*>& chips,
                             const std::string& what, const std::vector<bool>& donated, bool async_collectives,
                             Verify verify, PodProgram::Timings* timings, cpu_device::CompileTimer& stages) {
  const TpuChipSpec& spec = client.spec();
  IciCollectiveTimer timer(client.torus(), chips);
  hlo::HloPassPipeline pipeline("tpu");
  TpuTargetOptions options(spec);
  options.collective_timer = &timer;
  options.async_collectives = async_collectives;
  AddTpuPasses(pipeline, options, DryRunMeasures(client, chips, donated, what));
  const bool every_pass = verify == Verify::kEveryChangedPass;
  pipeline.set_verify(every_pass);
  if (!every_pass) VerifyOrThrow(*module, what, "input");
  if (absl::StatusOr<bool> ran = pipeline.Run(module); !ran.ok()) {
    ThrowStatus(StrCat(what, ": optimization for ", chips.size(), " ", spec.generation, " chips failed"), ran.status());
  }
  if (!every_pass) {
    VerifyOrThrow(*module, what, "output (run with JX_ENABLE_CHECKS=1 to verify after every pass, naming the one that broke it)");
  }
  stages.Lap("passes", &pipeline);
  absl::StatusOr<CostAnalysis> cost = AnalyzeTpuCost(*module, spec, &timer);
  if (!cost.ok()) ThrowStatus(StrCat(what, ": TPU cost analysis failed"), cost.status());
  stages.Lap("tpu-cost-model");
  *timings = timer.shared_timings();
  return *std::move(cost);
}

// PlanPodProgram, with or without asynchronous collectives (PlanPodOverlap compares both).
std::shared_ptr<const PodProgram> PlanPod(std::unique_ptr<hlo::HloModule> module, const TpuClient& client,
                                          std::vector<const TpuChip*> chips, std::vector<ShapedArray> out_avals,
                                          std::string what, std::vector<bool> donated, bool async_collectives) {
  if (chips.empty()) throw ValueError(StrCat(what, ": a pod program needs at least one chip"));
  cpu_device::CompileTimer stages;
  PodProgram::Timings timings;
  // A dry run plans programs far larger than any run on the host (a 70B step on a pod: the
  // verifier after each of the pipeline's ~18 changing passes was a third of planning), so, as
  // XLA's AddInvariantCheckerDebug in its hot pipelines, per-pass verification is a check one
  // turns on (jax_enable_checks); the pipeline's input and output are always verified.
  const Verify verify = config::read("jax_enable_checks") ? Verify::kEveryChangedPass : Verify::kInputAndOutput;
  CostAnalysis cost =
      OptimizeAndCost(module.get(), client, chips, what, donated, async_collectives, verify, &timings, stages);
  auto [memory, hbm] = ChipMemory(*module, donated, what);
  stages.Lap("memory");
  auto program = std::make_shared<PodProgram>(std::move(module), std::move(cost), memory, std::move(hbm),
                                              std::move(timings), client, std::move(chips), std::move(out_avals), what);
  stages.Lap("step-rows");
  stages.Report(StrCat(what, " (planned)"));
  return program;
}

}  // namespace

std::shared_ptr<const PodProgram> PlanPodProgram(std::unique_ptr<hlo::HloModule> module, const TpuClient& client,
                                                 std::vector<const TpuChip*> chips,
                                                 std::vector<ShapedArray> out_avals, std::string what,
                                                 std::vector<bool> donated) {
  return PlanPod(std::move(module), client, std::move(chips), std::move(out_avals), std::move(what),
                 std::move(donated), /*async_collectives=*/true);
}

double PodOverlap::speedup() const {
  return scheduled.step.wall_seconds > 0 ? synchronous.step.wall_seconds / scheduled.step.wall_seconds : 1.0;
}

PodOverlap PlanPodOverlap(const hlo::HloModule& module, const TpuClient& client,
                          const std::vector<const TpuChip*>& chips, const std::vector<ShapedArray>& out_avals,
                          const std::string& what) {
  PodOverlap out;
  for (const bool async : {true, false}) {
    const auto began = std::chrono::steady_clock::now();
    absl::StatusOr<std::unique_ptr<hlo::HloModule>> copy = module.Clone();
    if (!copy.ok()) ThrowStatus(StrCat(what, ": clone failed"), copy.status());
    PodPlan& plan = async ? out.scheduled : out.synchronous;
    plan = PlanPod(*std::move(copy), client, chips, out_avals, what, {}, async)->Plan();
    plan.planning_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
  }
  return out;
}

std::shared_ptr<const PodProgram> CompilePodProgram(std::unique_ptr<hlo::HloModule> module, const TpuClient& client,
                                                    std::vector<const TpuChip*> chips,
                                                    std::vector<ShapedArray> out_avals, std::string what,
                                                    std::vector<bool> donated, bool async_collectives) {
  if (chips.empty()) throw ValueError(StrCat(what, ": a pod program needs at least one chip"));
  cpu_device::CompileTimer stages;
  PodProgram::Timings timings;
  CostAnalysis cost =
      OptimizeAndCost(module.get(), client, chips, what, donated, async_collectives, Verify::kEveryChangedPass, &timings,
                      stages);
  std::unique_ptr<cpu::CpuExecutable> exe = cpu_device::CompileOnHost(HostModuleOf(*module, what), donated, what);
  stages.Lap("cpu-backend");
  auto [memory, hbm] = ChipMemory(*module, donated, what);
  stages.Lap("memory");
  for (const TpuChip* chip : chips) {
    chip->hbm()->CheckCapacity(memory.peak_memory_in_bytes, StrCat("compiling ", what, ", whose peak is"));
  }
  auto program = std::make_shared<PodProgram>(std::move(exe), std::move(module), std::move(cost), memory,
                                              std::move(hbm), std::move(timings), client, std::move(chips),
                                              std::move(out_avals), what);
  stages.Lap("step-rows");
  stages.Report(what);
  return program;
}

}  // namespace jx::tpu
