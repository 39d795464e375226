#include "jx/sharding/spmd/spmd_program.h"

#include <chrono>

#include "absl/strings/str_join.h"
#include "jx/compiler/hlo/hlo_module.h"
#include "jx/core/errors.h"
#include "jx/core/sharding.h"
#include "jx/core/str_util.h"
#include "jx/devices/cpu/compile_log.h"
#include "jx/devices/cpu/cpu_compiler.h"
#include "jx/devices/device_put.h"
#include "jx/devices/tpu/pod_program.h"
#include "jx/devices/tpu/tpu_client.h"
#include "jx/devices/tpu/tpu_compiler.h"
#include "jx/sharding/lockstep_eval.h"
#include "jx/sharding/collectives.h"
#include "jx/sharding/manual_context.h"
#include "jx/sharding/sharded_put.h"
#include "jx/sharding/spmd/partitioner.h"
#include "jx/sharding/spmd/sharding_constraint.h"
#include "jx/sharding/spmd/spmd_cost.h"
#include "jx/transforms/staging.h"

namespace jx::spmd {
namespace {

std::shared_ptr<const CollectiveMesh> AllManual(const Mesh& mesh) {
  return std::make_shared<CollectiveMesh>(mesh.axis_names(), mesh.axis_sizes(), mesh.axis_names());
}

}  // namespace

PartitionSpec SpecOf(const DimShardings& s, int64_t rank) {
  if (s.empty()) return PartitionSpec();
  std::vector<DimSpec> dims;
  for (int64_t d = 0; d < rank; ++d) dims.push_back(d < static_cast<int64_t>(s.size()) ? DimSpec(s[d]) : DimSpec());
  return PartitionSpec(std::move(dims));
}

std::shared_ptr<const SpmdProgram> SpmdProgram::Build(const ClosedJaxpr& global, const Mesh& mesh,
                                                      absl::Span<const MaybeSharding> in,
                                                      absl::Span<const MaybeSharding> out, const std::string& name) {
  RegisterSpmdPrimitives();
  const auto began = std::chrono::steady_clock::now();
  cpu_device::CompileTimer stages;
  auto p = std::make_shared<SpmdProgram>();
  p->name_ = name;
  p->global_ = global;
  p->mesh_ = mesh;
  const Jaxpr& j = *global.jaxpr;
  auto plan = std::make_shared<ShardingPlan>(PropagateShardings(j, mesh.abstract_mesh(), in, out));
  stages.Lap("propagate");
  p->log_ = plan->notes;
  p->conflicts_ = plan->conflicts;
  std::vector<ShapedArray> local_args;
  for (const Var& v : j.invars) {
    const ShapedArray& aval = j.aval(v);
    p->in_shardings_.emplace_back(mesh, SpecOf(plan->sharding(v), aval.ndim()));
    local_args.push_back(ShapedArray{LocalShape(aval.shape, plan->sharding(v), mesh), aval.dtype, aval.weak_type});
  }
  for (const Atom& a : j.outvars) {
    const Var* v = std::get_if<Var>(&a);
    p->out_shardings_.emplace_back(mesh, v != nullptr ? SpecOf(plan->sharding(*v), j.aval(*v).ndim()) : PartitionSpec());
  }
  std::unique_ptr<SpmdCostModel> cost = MakeCostModel(mesh);
  std::vector<std::string> log;
  {
    shard_map_internal::ManualContextScope scope(shard_map_internal::ManualContext{AllManual(mesh), /*check_vma=*/false});
    auto body = [&](absl::Span<const Array> locals) { return PartitionedEval(global, *plan, mesh, *cost, locals, &log, &p->dot_decisions_); };
    p->local_ = TraceToJaxpr(body, local_args, "spmd");
  }
  stages.Lap("partition");
  p->log_.insert(p->log_.end(), log.begin(), log.end());
  if (shard_map_internal::IsOneTpuSlice(mesh.devices())) {
    LoweringOptions options;
    options.name = name;
    options.device_assignment = mesh.devices();
    p->lowering_ = mesh.devices().front()->client().Lower(p->local_, options);
    stages.Lap("lower");
  }
  stages.Report(StrCat("spmd partitioning of ", name));
  p->build_seconds_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
  return p;
}

std::string SpmdProgram::ToString() const {
  std::vector<std::string> ins, outs;
  for (const NamedSharding& s : in_shardings_) ins.push_back(s.spec().ToString());
  for (const NamedSharding& s : out_shardings_) outs.push_back(s.spec().ToString());
  return StrCat("# spmd partitioned for ", mesh_.ToString(), "\n# in_shardings: (", absl::StrJoin(ins, ", "),
                ")\n# out_shardings: (", absl::StrJoin(outs, ", "), ")\n", local_.ToString(),
                executable() != nullptr ? StrCat("\n", executable()->as_text()) : "");
}

std::shared_ptr<const Executable> SpmdProgram::executable() const {
  if (lowering_ == nullptr) return nullptr;
  std::lock_guard<std::mutex> lock(compile_mu_);
  if (executable_ == nullptr) executable_ = lowering_->Compile();
  return executable_;
}

tpu::PodPlan SpmdProgram::Plan() const {
  if (lowering_ == nullptr) {
    throw ValueError(StrCat("jit(", name_, "): a plan needs a mesh of simulated TPU chips of one pod; this one is ",
                            mesh_.ToString(), " on ", mesh_.devices().front()->ToString()));
  }
  const auto began = std::chrono::steady_clock::now();
  cpu_device::CompileTimer stages;
  std::shared_ptr<const tpu::PodProgram> planned;
  {
    std::lock_guard<std::mutex> lock(compile_mu_);
    if (planned_ == nullptr) {
      const auto* client = dynamic_cast<const tpu::TpuClient*>(&mesh_.devices().front()->client());
      std::vector<const tpu::TpuChip*> chips;
      for (const Device* d : mesh_.devices()) chips.push_back(static_cast<const tpu::TpuChip*>(d));
      const std::string what = StrCat("jit(", name_, ")");
      // The lowered module itself when nothing has read or compiled it (no copy).
      std::unique_ptr<hlo::HloModule> module = cpu_device::LoweredModuleToRewrite(*lowering_, what);
      stages.Lap("lowered-module");
      planned_ = tpu::PlanPodProgram(std::move(module), *client, std::move(chips), local_.jaxpr->out_avals(), what);
      stages.Lap("plan-pod-program");
    }
    planned = planned_;
  }
  tpu::PodPlan plan = planned->Plan();
  stages.Lap("schedule-step");
  stages.Report(StrCat("the plan of jit(", name_, ")"));
  plan.planning_seconds =
      build_seconds_ + std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
  return plan;
}

Arrays SpmdProgram::Run(absl::Span<const Array> args) const {
  const size_t n = static_cast<size_t>(mesh_.size());
  std::vector<Arrays> per_device(n);                    // [device][argument]
  std::vector<shard_map_internal::PerDevice> per_arg;  // [argument][device]
  for (size_t i = 0; i < args.size(); ++i) {
    Array placed = device_put(args[i], in_shardings_[i]);
    std::vector<Shard> shards = placed.addressable_shards();
    per_arg.emplace_back(n);
    for (size_t d = 0; d < n; ++d) {
      per_device[d].push_back(shards[d].data);
      per_arg.back()[d] = shards[d].data;
    }
  }
  // One TPU slice runs the compiled pod program; any other mesh (the host, chips of several
  // pods) runs the partitioned program in lockstep over its devices, collectives in loop and
  // branch bodies included.
  std::vector<Arrays> results(n);
  if (const auto* pod = dynamic_cast<const tpu::PodProgram*>(executable().get())) {
    results = pod->ExecuteShards(per_device);
  } else {
    std::vector<shard_map_internal::PerDevice> outs = shard_map_internal::EvalLockstep(local_, per_arg, mesh_.devices());
    for (const shard_map_internal::PerDevice& out : outs) {
      for (size_t d = 0; d < n; ++d) results[d].push_back(out[d]);
    }
  }
  Arrays outs;
  const Jaxpr& g = *global_.jaxpr;
  for (size_t k = 0; k < g.outvars.size(); ++k) {
    const NamedSharding& s = out_shardings_[k];
    std::vector<Array> blocks;
    for (size_t d = 0; d < n; ++d) blocks.push_back(device_put(results[d][k], s.device_set()[d]));
    outs.push_back(make_array_from_single_device_arrays(g.aval(g.outvars[k]).shape, s, std::move(blocks)));
  }
  return outs;
}

}  // namespace jx::spmd
