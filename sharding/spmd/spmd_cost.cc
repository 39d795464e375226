#include "jx/sharding/spmd/spmd_cost.h"

#include <algorithm>

#include "absl/strings/str_join.h"
#include "jx/core/device.h"
#include "jx/core/str_util.h"
#include "jx/devices/interconnect/torus.h"
#include "jx/devices/tpu/tpu_chip.h"
#include "jx/devices/tpu/tpu_client.h"

namespace jx::spmd {
namespace {

// A mesh of chips of one simulated TPU slice: collectives costed on its torus, dots at the
// chip's peak MXU rate.
class TorusCostModel final : public SpmdCostModel {
 public:
  TorusCostModel(const Mesh& mesh, const tpu::TpuClient& client) : mesh_(mesh), client_(client) {
    for (const Device* d : mesh.devices()) {
      const auto& chips = client.chips();
      auto it = std::find_if(chips.begin(), chips.end(), [d](const auto& c) { return c.get() == d; });
      vertex_.push_back(static_cast<int64_t>(it - chips.begin()));
    }
  }
  double CollectiveSeconds(ici::CollectiveKind kind, const std::vector<std::string>& axes,
                           int64_t bytes) const override {
    std::vector<std::vector<int64_t>> groups = mesh_.AxisGroups(axes);
    for (auto& g : groups) {
      for (int64_t& i : g) i = vertex_[static_cast<size_t>(i)];
    }
    return ici::CostCollective(client_.torus(), kind, groups, bytes).seconds;
  }
  double RingShiftSeconds(const std::string& axis, int64_t shift, int64_t bytes) const override {
    std::vector<std::pair<int64_t, int64_t>> pairs;
    for (const std::vector<int64_t>& g : mesh_.AxisGroups({axis})) {
      const auto n = static_cast<int64_t>(g.size());
      for (int64_t j = 0; j < n; ++j) {
        pairs.emplace_back(vertex_[static_cast<size_t>(g[static_cast<size_t>(j)])],
                           vertex_[static_cast<size_t>(g[static_cast<size_t>(((j + shift) % n + n) % n)])]);
      }
    }
    return ici::CostPermute(client_.torus(), pairs, bytes).seconds;
  }
  double DotSeconds(double flops) const override { return flops / client_.spec().bf16_flops; }
  std::string Describe() const override {
    return StrCat(client_.spec().generation, " ", absl::StrJoin(client_.shape(), "x"), " torus");
  }

 private:
  Mesh mesh_;
  const tpu::TpuClient& client_;
  std::vector<int64_t> vertex_;
};

// Devices without an interconnect model (the host): a nominal 10 GB/s link with 10 us per
// collective and 100 GFLOP/s, named as such in the log.
class HostCostModel final : public SpmdCostModel {
 public:
  explicit HostCostModel(const Mesh& mesh) : mesh_(mesh) {}
  double CollectiveSeconds(ici::CollectiveKind kind, const std::vector<std::string>& axes,
                           int64_t bytes) const override {
    int64_t n = 1;
    for (const std::string& a : axes) n *= mesh_.axis_size(a);
    const double moved = static_cast<double>(bytes) * static_cast<double>(n - 1) / static_cast<double>(n);
    const double factor = kind == ici::CollectiveKind::kAllReduce ? 2.0 : 1.0;
    return 1e-5 + factor * moved / 1e10;
  }
  double RingShiftSeconds(const std::string& axis, int64_t shift, int64_t bytes) const override {
    if (mesh_.axis_size(axis) == 1 || shift % mesh_.axis_size(axis) == 0) return 0;
    return 1e-5 + static_cast<double>(bytes) / 1e10;
  }
  double DotSeconds(double flops) const override { return flops / 1e11; }
  std::string Describe() const override { return "host (nominal 10 GB/s, 100 GFLOP/s)"; }

 private:
  Mesh mesh_;
};

}  // namespace

std::unique_ptr<SpmdCostModel> MakeCostModel(const Mesh& mesh) {
  const auto* chip = dynamic_cast<const tpu::TpuChip*>(mesh.devices().front());
  if (chip != nullptr) {
    const auto* client = dynamic_cast<const tpu::TpuClient*>(&chip->client());
    const bool one_client = std::all_of(mesh.devices().begin(), mesh.devices().end(), [&](const Device* d) {
      const auto* c = dynamic_cast<const tpu::TpuChip*>(d);
      return c != nullptr && &c->client() == client;
    });
    if (client != nullptr && one_client) return std::make_unique<TorusCostModel>(mesh, *client);
  }
  return std::make_unique<HostCostModel>(mesh);
}

}  // namespace jx::spmd
