#include "jx/sharding/eager_collective_clock.h"

#include <algorithm>

#include "jx/core/sharding.h"
#include "jx/devices/interconnect/collective_cost.h"
#include "jx/devices/sharded_gather_hook.h"
#include "jx/devices/tpu/tpu_chip.h"
#include "jx/devices/tpu/tpu_client.h"
#include "jx/sharding/collectives.h"

namespace jx::shard_map_internal {
namespace {

// The chips of one slice behind `devices` and their torus vertices, or nullptr.
const tpu::TpuClient* SliceOf(const std::vector<const Device*>& devices, std::vector<const tpu::TpuChip*>* chips,
                              std::vector<int64_t>* vertex) {
  const tpu::TpuClient* client = nullptr;
  for (const Device* d : devices) {
    const auto* chip = dynamic_cast<const tpu::TpuChip*>(d);
    if (chip == nullptr) return nullptr;
    const auto* c = dynamic_cast<const tpu::TpuClient*>(&chip->client());
    if (c == nullptr || (client != nullptr && c != client)) return nullptr;
    client = c;
    const auto& all = c->chips();
    auto it = std::find_if(all.begin(), all.end(), [chip](const auto& x) { return x.get() == chip; });
    chips->push_back(chip);
    vertex->push_back(static_cast<int64_t>(it - all.begin()));
  }
  return client;
}

// Each chip's clock moves to `start` (the latest chip's time) plus seconds, on its ICI lane.
void CommitTransfer(const std::vector<const tpu::TpuChip*>& chips, std::string name, double seconds) {
  double start = 0;
  for (const tpu::TpuChip* c : chips) start = std::max(start, c->activity().now_seconds);
  tpu::StepTimeline step;
  step.start_seconds = start;
  step.seconds = seconds;
  step.busy.ici = seconds;
  step.instructions.push_back(tpu::PlacedInstruction{std::move(name), "ICI", start, seconds, nullptr});
  for (const tpu::TpuChip* c : chips) c->CommitStep(step);
}

void GatherHook(const Array& sharded, const Device* target) { AdvanceClocksForGather(sharded, target); }

}  // namespace

double AdvanceClocksForGather(const Array& sharded, const Device* target) {
  std::vector<const Device*> devices;
  std::vector<Shard> sources;
  for (Shard& s : sharded.addressable_shards()) {
    if (s.replica_id != 0 || s.device == target) continue;
    devices.push_back(s.device);
    sources.push_back(std::move(s));
  }
  if (sources.empty()) return 0;
  devices.push_back(target);
  std::vector<const tpu::TpuChip*> chips;
  std::vector<int64_t> vertex;
  const tpu::TpuClient* client = SliceOf(devices, &chips, &vertex);
  if (client == nullptr) return 0;
  // The target takes in the pieces through its links as fast as an all-gather over the chips
  // involved delivers them to each of its members (a permutation, ici::CostPermute, sends to
  // a chip at most once).
  std::vector<std::vector<int64_t>> group = {vertex};
  std::sort(group[0].begin(), group[0].end());
  group[0].erase(std::unique(group[0].begin(), group[0].end()), group[0].end());
  const int64_t bytes = sources.front().data.nbytes() * static_cast<int64_t>(group[0].size());
  const double seconds = ici::CostCollective(client->torus(), ici::CollectiveKind::kAllGather, group, bytes).seconds;
  CommitTransfer(chips, "device_put gather", seconds);
  return seconds;
}

void InstallShardedGatherCost() {
  static const bool installed = [] {
    SetShardedGatherHook(GatherHook);
    return true;
  }();
  (void)installed;
}

double AdvanceClocksForCollective(Primitive p, const ParamMap& params, const std::vector<std::vector<Array>>& operands,
                                  const std::vector<const Device*>& devices) {
  if (p == lax::kAxisIndex || p == lax::kPvary || operands.empty() || operands[0].empty()) return 0;
  std::vector<const tpu::TpuChip*> chips;
  std::vector<int64_t> vertex;
  const tpu::TpuClient* client = SliceOf(devices, &chips, &vertex);
  if (client == nullptr) return 0;
  const std::vector<std::vector<int64_t>> groups = CollectiveMeshOf(params).Groups(CollectiveAxes(params));
  int64_t bytes = 0;  // one device's operands
  for (const std::vector<Array>& operand : operands) bytes += operand[0].nbytes();
  const int64_t n = groups.empty() ? 1 : static_cast<int64_t>(groups.front().size());
  ici::CollectiveCost cost;
  if (p == lax::kPpermute) {
    std::vector<std::pair<int64_t, int64_t>> pairs;
    for (const auto& g : groups) {
      for (const auto& [src, dst] : PermOf(params)) {
        pairs.emplace_back(vertex[static_cast<size_t>(g[static_cast<size_t>(src)])],
                           vertex[static_cast<size_t>(g[static_cast<size_t>(dst)])]);
      }
    }
    cost = ici::CostPermute(client->torus(), pairs, bytes);
  } else {
    ici::CollectiveKind kind = ici::CollectiveKind::kAllReduce;
    int64_t v = bytes;  // the full array of one group, as the HLO collective timer counts it
    if (p == lax::kAllGather) {
      kind = ici::CollectiveKind::kAllGather;
      v = bytes * n;
    } else if (p == lax::kReduceScatter) {
      kind = ici::CollectiveKind::kReduceScatter;
    } else if (p == lax::kAllToAll) {
      kind = ici::CollectiveKind::kAllToAll;
      v = bytes * n;
    }
    std::vector<std::vector<int64_t>> torus_groups = groups;
    for (auto& g : torus_groups) {
      for (int64_t& d : g) d = vertex[static_cast<size_t>(d)];
    }
    cost = ici::CostCollective(client->torus(), kind, torus_groups, v);
  }
  // Each group starts when its last chip arrives.
  for (const auto& g : groups) {
    std::vector<const tpu::TpuChip*> members;
    for (int64_t d : g) members.push_back(chips[static_cast<size_t>(d)]);
    CommitTransfer(members, std::string(p.name()), cost.seconds);
  }
  return cost.seconds;
}

}  // namespace jx::shard_map_internal
