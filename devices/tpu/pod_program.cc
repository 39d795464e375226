#include "jx/devices/tpu/pod_program.h"

#include <algorithm>
#include <exception>
#include <thread>
#include <utility>

#include "jx/compiler/backend/cpu/buffer_assignment.h"
#include "jx/compiler/backend/cpu/cpu_executable.h"
#include "jx/compiler/backend/cpu/masked_gather_fusion.h"
#include "jx/compiler/backend/cpu/widened_window_fusion.h"
#include "jx/compiler/backend/tpu/tpu_cost_model.h"
#include "jx/compiler/backend/tpu/tpu_pipeline.h"
#include "jx/compiler/hlo/hlo_pass.h"
#include "jx/compiler/passes/layout_assignment.h"
#include "jx/core/errors.h"
#include "jx/core/sharding.h"
#include "jx/core/str_util.h"
#include "jx/devices/cpu/cpu_compiler.h"
#include "jx/devices/cpu/cpu_program.h"
#include "jx/devices/interconnect/torus.h"
#include "jx/devices/profiler/profiler.h"
#include "jx/devices/tpu/chip_classes.h"
#include "jx/devices/tpu/ici_collective_timer.h"
#include "jx/devices/tpu/pod_rendezvous.h"
#include "jx/devices/tpu/tpu_client.h"

namespace jx::tpu {
namespace {

using cpu_device::ThrowStatus;
using cpu_device::ToMemoryAnalysis;

constexpr double kMicros = 1e6;

// The partitions that wait for each other at a collective: its replica groups (every
// partition for {}), or for a collective-permute everyone that sends or receives.
std::vector<std::vector<int64_t>> SyncGroupsOf(const hlo::HloInstruction& instr, int64_t num_partitions) {
  if (instr.opcode() == hlo::HloOpcode::kCollectivePermute) {
    std::vector<int64_t> members;
    for (const auto& [s, t] : instr.source_target_pairs()) {
      if (s == t) continue;
      for (int64_t id : {s, t}) {
        if (std::find(members.begin(), members.end(), id) == members.end()) members.push_back(id);
      }
    }
    std::sort(members.begin(), members.end());
    if (members.empty()) return {};
    return {members};
  }
  std::vector<std::vector<int64_t>> groups = instr.replica_groups();
  if (groups.empty()) {
    groups.emplace_back();
    for (int64_t p = 0; p < num_partitions; ++p) groups.back().push_back(p);
  }
  std::erase_if(groups, [](const std::vector<int64_t>& g) { return g.size() < 2; });
  return groups;
}

// Per cost row: the groups that synchronize at it (empty for rows that are not collectives).
SyncGroups SyncGroupsOfRows(const hlo::HloModule& module, const CostAnalysis& cost, int64_t num_partitions) {
  std::map<std::string, const hlo::HloInstruction*> by_name;
  for (const hlo::HloInstruction* instr : module.entry_computation()->instructions()) by_name[instr->name()] = instr;
  SyncGroups sync;
  for (const InstructionCost& row : cost.instructions) {
    auto it = by_name.find(row.name);
    const bool collective = it != by_name.end() && hlo::IsCollectiveOpcode(it->second->opcode());
    sync.push_back(collective ? SyncGroupsOf(*it->second, num_partitions) : std::vector<std::vector<int64_t>>{});
  }
  return sync;
}

// The optimized module's memory on one chip: buffer assignment after the host layout, as the
// host compile computes it (loop bodies' own scratch is not counted).
MemoryAnalysis PlannedMemory(const hlo::HloModule& module, const std::vector<bool>& donated, const std::string& what) {
  absl::StatusOr<std::unique_ptr<hlo::HloModule>> clone = module.Clone();
  if (!clone.ok()) ThrowStatus(StrCat(what, ": clone failed"), clone.status());
  hlo::HloModule& m = **clone;
  for (absl::StatusOr<bool> ran : {hlo::LayoutAssignment().Run(&m), cpu::WidenedWindowFusion().Run(&m),
                                   cpu::MaskedGatherFusion().Run(&m)}) {
    if (!ran.ok()) ThrowStatus(StrCat(what, ": planning the memory failed"), ran.status());
  }
  const hlo::HloComputation& entry = *m.entry_computation();
  absl::StatusOr<cpu::BufferAssignment> assignment = cpu::BufferAssignment::Run(entry, entry.MakeSequentialOrder(), donated);
  if (!assignment.ok()) ThrowStatus(StrCat(what, ": buffer assignment failed"), assignment.status());
  return ToMemoryAnalysis(assignment->memory());
}

}  // namespace

PodProgram::PodProgram(std::unique_ptr<cpu::CpuExecutable> host, std::unique_ptr<hlo::HloModule> module,
                       CostAnalysis cost, std::map<std::string, CollectiveTiming> timings, const TpuClient& client,
                       std::vector<const TpuChip*> chips, std::vector<ShapedArray> out_avals, std::string what)
    : host_(std::move(host)),
      module_(std::move(module)),
      cost_(std::move(cost)),
      memory_(ToMemoryAnalysis(host_->memory_analysis())),
      timings_(std::move(timings)),
      client_(client),
      chips_(std::move(chips)),
      out_avals_(std::move(out_avals)),
      what_(std::move(what)),
      sync_(SyncGroupsOfRows(*module_, cost_, static_cast<int64_t>(chips_.size()))) {}

PodProgram::PodProgram(std::unique_ptr<hlo::HloModule> module, CostAnalysis cost, MemoryAnalysis memory,
                       std::map<std::string, CollectiveTiming> timings, const TpuClient& client,
                       std::vector<const TpuChip*> chips, std::vector<ShapedArray> out_avals, std::string what)
    : module_(std::move(module)),
      cost_(std::move(cost)),
      memory_(memory),
      timings_(std::move(timings)),
      client_(client),
      chips_(std::move(chips)),
      out_avals_(std::move(out_avals)),
      what_(std::move(what)),
      sync_(SyncGroupsOfRows(*module_, cost_, static_cast<int64_t>(chips_.size()))) {}

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
  const PodTimelines step = SchedulePodStep(cost_, sync_, starts, chips_[0]->spec().hbm_bandwidth);
  StepReport report;
  report.what = what_;
  double first = 0, last = 0;
  for (size_t p = 0; p < n; ++p) {
    const StepTimeline& t = step.chips[p];
    chips_[p]->CommitStep(t);
    ChipStepReport c;
    c.chip = chips_[p]->ToString();
    c.start_seconds = t.start_seconds;
    c.end_seconds = t.start_seconds + t.seconds;
    c.communication_seconds = t.busy.ici;
    c.idle_seconds = step.idle_seconds[p];
    c.compute_seconds = t.seconds - t.busy.ici - c.idle_seconds;
    c.hbm_high_water_bytes = chips_[p]->memory_stats().peak_bytes_in_use;
    first = p == 0 ? c.start_seconds : std::min(first, c.start_seconds);
    last = std::max(last, c.end_seconds);
    report.chips.push_back(std::move(c));
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
  report.wall_seconds = last - first;
  AddLinkTraffic(&report);
  return report;
}

void PodProgram::AddLinkTraffic(StepReport* report) const {
  // Link bytes: every top-level collective's (each runs once per step).
  std::map<int64_t, int64_t> link_bytes;
  for (const InstructionCost& row : cost_.instructions) {
    auto it = timings_.find(row.name);
    if (it == timings_.end() || row.unit != "ici") continue;
    for (const auto& [link, bytes] : it->second.link_bytes) link_bytes[link] += bytes;
  }
  const ici::Torus& torus = client_.torus();
  for (const auto& [link, bytes] : link_bytes) {
    report->links.push_back({torus.Describe(torus.links()[link]), bytes});
  }
  std::stable_sort(report->links.begin(), report->links.end(),
                   [](const LinkTraffic& a, const LinkTraffic& b) { return a.bytes > b.bytes; });
}

PodPlan PodProgram::Plan() const {
  const size_t n = chips_.size();
  const std::vector<double> starts(n, 0.0);
  const ChipClasses classes = GroupIdenticalChips(sync_, starts);
  const PodTimelines step =
      SchedulePodStep(cost_, classes.sync, classes.RepresentativeStarts(starts), chips_[0]->spec().hbm_bandwidth);
  const TpuChipSpec& spec = client_.spec();
  PodPlan plan;
  plan.what = what_;
  plan.pod = client_.torus().ToString();
  plan.num_chips = static_cast<int64_t>(n);
  plan.flops_per_chip = cost_.flops;
  plan.peak_flops_per_chip = spec.bf16_flops;
  plan.hbm_peak_bytes = memory_.peak_memory_in_bytes;
  plan.hbm_capacity_bytes = spec.hbm_bytes;
  plan.num_timeline_classes = classes.num_classes();
  StepReport& report = plan.step;
  report.what = what_;
  report.chips.reserve(n);
  for (size_t p = 0; p < n; ++p) {
    const int64_t c = classes.class_of[p];
    const StepTimeline& t = step.chips[c];
    ChipStepReport r;
    r.chip = chips_[p]->ToString();
    r.start_seconds = t.start_seconds;
    r.end_seconds = t.start_seconds + t.seconds;
    r.communication_seconds = t.busy.ici;
    r.idle_seconds = step.idle_seconds[c];
    r.compute_seconds = t.seconds - t.busy.ici - r.idle_seconds;
    r.hbm_high_water_bytes = memory_.peak_memory_in_bytes;
    report.wall_seconds = std::max(report.wall_seconds, r.end_seconds);
    report.chips.push_back(std::move(r));
  }
  // The collectives, each run once, synchronous today: all of their time is exposed.
  std::map<std::string, const hlo::HloInstruction*> by_name;
  for (const hlo::HloInstruction* instr : module_->entry_computation()->instructions()) by_name[instr->name()] = instr;
  for (const InstructionCost& row : cost_.instructions) {
    auto timing = timings_.find(row.name);
    auto instr = by_name.find(row.name);
    if (timing == timings_.end() || instr == by_name.end() || row.unit != "ici") continue;
    report.collectives.push_back({.name = row.name,
                                  .kind = row.opcode,
                                  .runs = 1,
                                  .bytes = hlo::ShapeUtil::ByteSizeOf(instr->second->shape()),
                                  .seconds = row.seconds,
                                  .exposed_seconds = row.seconds,
                                  .algorithm = timing->second.algorithm});
  }
  AddLinkTraffic(&report);
  return plan;
}

namespace {

// The TPU pipeline and the cost model on the pod (collectives timed on its torus).
CostAnalysis OptimizeAndCost(hlo::HloModule* module, const TpuClient& client, const std::vector<const TpuChip*>& chips,
                             const std::string& what, std::map<std::string, CollectiveTiming>* timings) {
  const TpuChipSpec& spec = client.spec();
  hlo::HloPassPipeline pipeline("tpu");
  AddTpuPasses(pipeline, TpuTargetOptions(spec));
  if (absl::StatusOr<bool> ran = pipeline.Run(module); !ran.ok()) {
    ThrowStatus(StrCat(what, ": optimization for ", chips.size(), " ", spec.generation, " chips failed"), ran.status());
  }
  IciCollectiveTimer timer(client.torus(), chips);
  absl::StatusOr<CostAnalysis> cost = AnalyzeTpuCost(*module, spec, &timer);
  if (!cost.ok()) ThrowStatus(StrCat(what, ": TPU cost analysis failed"), cost.status());
  *timings = timer.timings();
  return *std::move(cost);
}

}  // namespace

std::shared_ptr<const PodProgram> PlanPodProgram(std::unique_ptr<hlo::HloModule> module, const TpuClient& client,
                                                 std::vector<const TpuChip*> chips,
                                                 std::vector<ShapedArray> out_avals, std::string what,
                                                 std::vector<bool> donated) {
  if (chips.empty()) throw ValueError(StrCat(what, ": a pod program needs at least one chip"));
  std::map<std::string, CollectiveTiming> timings;
  CostAnalysis cost = OptimizeAndCost(module.get(), client, chips, what, &timings);
  const MemoryAnalysis memory = PlannedMemory(*module, donated, what);
  return std::make_shared<PodProgram>(std::move(module), std::move(cost), memory, std::move(timings), client,
                                      std::move(chips), std::move(out_avals), std::move(what));
}

std::shared_ptr<const PodProgram> CompilePodProgram(std::unique_ptr<hlo::HloModule> module, const TpuClient& client,
                                                    std::vector<const TpuChip*> chips,
                                                    std::vector<ShapedArray> out_avals, std::string what,
                                                    std::vector<bool> donated) {
  if (chips.empty()) throw ValueError(StrCat(what, ": a pod program needs at least one chip"));
  std::map<std::string, CollectiveTiming> timings;
  CostAnalysis cost = OptimizeAndCost(module.get(), client, chips, what, &timings);
  absl::StatusOr<std::unique_ptr<hlo::HloModule>> host_module = module->Clone();
  if (!host_module.ok()) ThrowStatus(StrCat(what, ": clone failed"), host_module.status());
  if (absl::StatusOr<bool> ran = hlo::LayoutAssignment().Run(host_module->get()); !ran.ok()) {
    ThrowStatus(StrCat(what, ": host layout assignment failed"), ran.status());
  }
  std::unique_ptr<cpu::CpuExecutable> exe = cpu_device::CompileOnHost(std::move(*host_module), donated, what);
  for (const TpuChip* chip : chips) {
    chip->hbm()->CheckCapacity(exe->memory_analysis().peak_bytes, StrCat("compiling ", what, ", whose peak is"));
  }
  return std::make_shared<PodProgram>(std::move(exe), std::move(module), std::move(cost), std::move(timings), client,
                                      std::move(chips), std::move(out_avals), std::move(what));
}

}  // namespace jx::tpu
