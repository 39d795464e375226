#include "jx/sharding/spmd/spmd_cost.h"

#include <algorithm>
#include <map>
#include <mutex>
#include <tuple>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_join.h"
#include "jx/core/device.h"
#include "jx/core/str_util.h"
#include "jx/compiler/backend/tpu/kernel_roofline.h"
#include "jx/compiler/backend/tpu/tpu_cost_model.h"
#include "jx/compiler/lower/literal_convert.h"
#include "jx/devices/interconnect/torus.h"
#include "jx/devices/tpu/tpu_chip.h"
#include "jx/devices/tpu/tpu_client.h"

namespace jx::spmd {
namespace {

// A mesh of chips of one simulated TPU slice: collectives costed on its torus, dots at the
// chip's peak MXU rate for their types (the TPU cost model's passes and rates).
class TorusCostModel final : public SpmdCostModel {
 public:
  TorusCostModel(const Mesh& mesh, const tpu::TpuClient& client) : mesh_(mesh), client_(client) {
    absl::flat_hash_map<const Device*, int64_t> vertex_of;
    for (size_t v = 0; v < client.chips().size(); ++v) vertex_of[client.chips()[v].get()] = static_cast<int64_t>(v);
    for (const Device* d : mesh.devices()) vertex_.push_back(vertex_of.at(d));
  }
  // Costed once per (kind, axes, bytes): a model's layers ask the same questions.
  double CollectiveSeconds(ici::CollectiveKind kind, const std::vector<std::string>& axes,
                           int64_t bytes) const override {
    auto key = std::make_tuple(static_cast<int>(kind), axes, bytes);
    std::lock_guard<std::mutex> lock(mu_);
    if (auto it = seconds_.find(key); it != seconds_.end()) return it->second;
    std::vector<std::vector<int64_t>> groups = mesh_.AxisGroups(axes);
    for (auto& g : groups) {
      for (int64_t& i : g) i = vertex_[static_cast<size_t>(i)];
    }
    const double seconds = ici::CostCollective(client_.torus(), kind, groups, bytes).seconds;
    seconds_.emplace(std::move(key), seconds);
    return seconds;
  }
  double RingShiftSeconds(const std::string& axis, const std::vector<int64_t>& shifts,
                          int64_t bytes) const override {
    // Costed once per (axis, shifts, bytes), as CollectiveSeconds: routing every pair of a
    // 256-chip ring per dot made partitioning a pod-scale model take minutes.
    auto key = std::make_tuple(axis, shifts, bytes);
    std::lock_guard<std::mutex> lock(mu_);
    if (auto it = shift_seconds_.find(key); it != shift_seconds_.end()) return it->second;
    const double seconds = RouteRingShifts(axis, shifts, bytes);
    shift_seconds_.emplace(std::move(key), seconds);
    return seconds;
  }

  double DotSeconds(double flops, const DotTypes& t) const override {
    return tpu::PeakMatmulSeconds(client_.spec(), flops, PrimitiveTypeOf(t.lhs), PrimitiveTypeOf(t.rhs),
                                  PrimitiveTypeOf(t.result), static_cast<hlo::Precision>(t.precision));
  }
  double KernelSeconds(double operand_bytes, double result_bytes, double matmul_flops,
                       const DotTypes& types) const override {
    const tpu::TpuChipSpec& spec = client_.spec();
    const double hbm = operand_bytes + (KeepsResultInVmem(operand_bytes, result_bytes) ? 0 : result_bytes);
    const double compute = matmul_flops > 0 ? DotSeconds(matmul_flops, types) : 0;
    return tpu::KernelRoofline(spec, {.compute_seconds = compute, .hbm_bytes = hbm}).seconds;
  }
  bool KeepsResultInVmem(double operand_bytes, double result_bytes) const override {
    return operand_bytes + result_bytes <= static_cast<double>(client_.spec().vmem_bytes);
  }
  std::string Describe() const override {
    return StrCat(client_.spec().generation, " ", absl::StrJoin(client_.shape(), "x"), " torus");
  }

 private:
  // Each shift routed alone, then their link loads added: the busiest link sets the time.
  double RouteRingShifts(const std::string& axis, const std::vector<int64_t>& shifts, int64_t bytes) const {
    std::map<int64_t, int64_t> loads;
    double fixed = 0, latency = 0;
    for (int64_t shift : shifts) {
      std::vector<std::pair<int64_t, int64_t>> pairs;
      for (const std::vector<int64_t>& g : mesh_.AxisGroups({axis})) {
        const auto n = static_cast<int64_t>(g.size());
        for (int64_t j = 0; j < n; ++j) {
          pairs.emplace_back(vertex_[static_cast<size_t>(g[static_cast<size_t>(j)])],
                             vertex_[static_cast<size_t>(g[static_cast<size_t>(((j + shift) % n + n) % n)])]);
        }
      }
      const ici::CollectiveCost c = ici::CostPermute(client_.torus(), pairs, bytes);
      fixed = std::max(fixed, c.fixed_s);
      latency = std::max(latency, c.latency_s);
      for (const ici::LinkBytes& l : c.link_bytes) loads[l.link] += l.bytes;
    }
    const ici::Torus& torus = client_.torus();
    double busiest = 0;  // the seconds the busiest link needs (on-chip links have their own rate)
    for (const auto& [link, b] : loads) {
      busiest = std::max(busiest, static_cast<double>(b) /
                                      torus.params(torus.links()[static_cast<size_t>(link)]).effective_bandwidth());
    }
    if (busiest == 0) return 0;
    return fixed + latency + busiest;
  }

  Mesh mesh_;
  const tpu::TpuClient& client_;
  std::vector<int64_t> vertex_;
  mutable std::mutex mu_;
  mutable std::map<std::tuple<int, std::vector<std::string>, int64_t>, double> seconds_;
  mutable std::map<std::tuple<std::string, std::vector<int64_t>, int64_t>, double> shift_seconds_;
};

// Devices without an interconnect model (the host): a nominal 10 GB/s link with 10 us per
// collective, 100 GFLOP/s and 100 GB/s of memory, named as such in the log.
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
  double RingShiftSeconds(const std::string& axis, const std::vector<int64_t>& shifts,
                          int64_t bytes) const override {
    const int64_t n = mesh_.axis_size(axis);
    const auto moving = std::count_if(shifts.begin(), shifts.end(), [n](int64_t s) { return s % n != 0; });
    if (moving == 0) return 0;
    return 1e-5 + static_cast<double>(moving) * static_cast<double>(bytes) / 1e10;  // one link each way
  }
  double DotSeconds(double flops, const DotTypes&) const override { return flops / 1e11; }
  // Memory at a nominal 1e11 B/s.
  double KernelSeconds(double operand_bytes, double result_bytes, double matmul_flops,
                       const DotTypes& types) const override {
    return std::max(DotSeconds(matmul_flops, types), (operand_bytes + result_bytes) / 1e11);
  }
  bool KeepsResultInVmem(double, double) const override { return false; }  // no VMEM
  std::string Describe() const override { return "host (nominal 10 GB/s links, 100 GFLOP/s, 100 GB/s memory)"; }

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
