// jx::make_mesh: lays a mesh's logical axes on the torus of the pod its devices form.
//
// Each logical axis gets a set of whole torus axes whose sizes multiply to its size (one
// torus axis of the same size where possible; several, major first in torus order, for a
// larger one), so a collective over a logical axis runs over that axis's rings. The first
// layout found trying logical axes in order, single torus axes before groups and lower
// torus axes first, wins: a mesh of the pod's own shape keeps the pod's order.
//
// A v2/v3 pod (two devices per chip) is ordered as JAX's create_device_mesh orders a v2/v3
// slice (mesh_utils' _tpu_v2_v3_create_device_mesh): the devices as jax.devices() lists them,
// a tray of 8 (2x2 chips, 2 cores each) going round its ring (0, 1, 2, 3, 6, 7, 4, 5) when the
// mesh has 8 devices or a last axis of 8, else in the listed order.
//
// A v7 pod (a 3D torus of two-device chips) is ordered as create_device_mesh orders a TPU7x
// slice (_create_device_mesh_for_nd_torus on the physical mesh x, y, z, core_on_chip): the
// logical axes from the last (the most network-intensive) to the first, each on the largest
// number of free physical axes whose sizes multiply to it, among those the subsets holding the
// core axis (the on-chip link) first, then x, y, z.
#include <algorithm>
#include <array>
#include <iostream>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <tuple>

#include "absl/strings/str_join.h"
#include "jx/core/array.h"
#include "jx/core/errors.h"
#include "jx/core/str_util.h"
#include "jx/devices/device_put.h"
#include "jx/devices/tpu/tpu_chip.h"
#include "jx/devices/tpu/tpu_client.h"
#include "jx/sharding/mesh.h"

namespace jx {
namespace {

// The torus axes of each logical axis (ascending), or nullopt when no layout exists.
using Layout = std::vector<std::vector<int64_t>>;

bool Assign(const std::vector<int64_t>& logical, const std::vector<int64_t>& torus, size_t axis,
            std::vector<bool>& used, Layout& layout) {
  if (axis == logical.size()) {
    for (size_t t = 0; t < torus.size(); ++t) {
      if (!used[t] && torus[t] > 1) return false;
    }
    return true;
  }
  if (logical[axis] == 1) {
    layout[axis].clear();
    return Assign(logical, torus, axis + 1, used, layout);
  }
  // Subsets of the free torus axes (of size > 1), fewest axes first, then in torus order.
  std::vector<int64_t> free;
  for (size_t t = 0; t < torus.size(); ++t) {
    if (!used[t] && torus[t] > 1) free.push_back(static_cast<int64_t>(t));
  }
  std::vector<std::vector<int64_t>> subsets;
  for (uint64_t mask = 1; mask < (uint64_t{1} << free.size()); ++mask) {
    std::vector<int64_t> subset;
    int64_t product = 1;
    for (size_t k = 0; k < free.size(); ++k) {
      if (mask & (uint64_t{1} << k)) {
        subset.push_back(free[k]);
        product *= torus[free[k]];
      }
    }
    if (product == logical[axis]) subsets.push_back(std::move(subset));
  }
  std::stable_sort(subsets.begin(), subsets.end(),
                   [](const auto& a, const auto& b) { return a.size() < b.size() || (a.size() == b.size() && a < b); });
  for (const auto& subset : subsets) {
    for (int64_t t : subset) used[t] = true;
    layout[axis] = subset;
    if (Assign(logical, torus, axis + 1, used, layout)) return true;
    for (int64_t t : subset) used[t] = false;
  }
  return false;
}

// The position of each physical axis in _create_device_mesh_for_nd_torus's priority map for a
// TPU7x mesh (x, y, z, core): the core axis first.
constexpr std::array<int, 4> kV7AxisPriority = {1, 2, 3, 0};

// _create_device_mesh_for_nd_torus: the physical axes of each logical axis (ascending), or
// nullopt when a logical axis of size > 1 finds none. Physical axes of size 1 take part as in
// JAX (a candidate's product ignores them), so the chosen subsets are JAX's.
std::optional<Layout> NdTorusLayout(const std::vector<int64_t>& logical, const std::vector<int64_t>& physical,
                                    const std::array<int, 4>& priority) {
  const size_t p = physical.size();
  std::vector<int64_t> assignable = physical;  // 0 once assigned
  Layout layout(logical.size());
  for (size_t axis = logical.size(); axis-- > 0;) {
    bool found = false;
    for (size_t count = p; count >= 1 && !found; --count) {
      // Every subset of `count` physical axes in itertools.combinations' order, then stably
      // sorted by (best priority, priority sum).
      std::vector<std::vector<int64_t>> candidates;
      for (uint64_t mask = 0; mask < (uint64_t{1} << p); ++mask) {
        if (static_cast<size_t>(__builtin_popcountll(mask)) != count) continue;
        std::vector<int64_t> subset;
        for (size_t t = 0; t < p; ++t) {
          if (mask & (uint64_t{1} << t)) subset.push_back(static_cast<int64_t>(t));
        }
        candidates.push_back(std::move(subset));
      }
      std::sort(candidates.begin(), candidates.end());  // lexicographic, as combinations yields
      auto rank = [&](const std::vector<int64_t>& c) {
        int best = 1 << 20, sum = 0;
        for (int64_t t : c) {
          best = std::min(best, priority[static_cast<size_t>(t)]);
          sum += priority[static_cast<size_t>(t)];
        }
        return std::make_pair(best, sum);
      };
      std::stable_sort(candidates.begin(), candidates.end(),
                       [&](const auto& a, const auto& b) { return rank(a) < rank(b); });
      for (const auto& c : candidates) {
        int64_t product = 1;
        for (int64_t t : c) product *= assignable[static_cast<size_t>(t)];
        if (product != logical[axis]) continue;
        layout[axis] = c;
        for (int64_t t : c) assignable[static_cast<size_t>(t)] = 0;
        found = true;
        break;
      }
    }
    if (!found && logical[axis] > 1) return std::nullopt;
  }
  return layout;
}

// The pod the devices make up, when they are exactly one simulated pod's chips.
const tpu::TpuClient* WholePod(const std::vector<const Device*>& devices) {
  if (devices.empty()) return nullptr;
  const auto* client = dynamic_cast<const tpu::TpuClient*>(&devices[0]->client());
  if (client == nullptr || client->chips().size() != devices.size()) return nullptr;
  std::set<const Device*> seen;
  for (const Device* d : devices) {
    if (&d->client() != client || !seen.insert(d).second) return nullptr;
  }
  return client;
}

// jax.devices() on a v2/v3 slice: host by host (a host holds 2x2 chips; hosts x fastest, then
// y), on a host its chips x fastest, then y, each chip's cores in a row (the order of JAX's
// device ids within a host).
std::vector<const Device*> JaxListing(const tpu::TpuClient& pod) {
  std::vector<const tpu::TpuChip*> chips;
  for (const auto& chip : pod.chips()) chips.push_back(chip.get());
  auto key = [](const tpu::TpuChip* d) {
    const int64_t x = d->coords()[0], y = d->coords()[1];
    return std::make_tuple(y / 2, x / 2, y % 2, x % 2, d->core_on_chip());
  };
  std::stable_sort(chips.begin(), chips.end(), [&](const auto* a, const auto* b) { return key(a) < key(b); });
  return std::vector<const Device*>(chips.begin(), chips.end());
}

// _tpu_v2_v3_create_device_mesh: a tray's 8 devices in the order that makes a ring of its
// 2x2 chips.
std::vector<const Device*> TrayRingOrder(const std::vector<int64_t>& axis_shapes, std::vector<const Device*> listed) {
  static constexpr std::array<size_t, 8> kTrayRingOrder = {0, 1, 2, 3, 6, 7, 4, 5};
  if (listed.size() != 8 && (axis_shapes.empty() || axis_shapes.back() != 8)) return listed;
  std::vector<const Device*> ordered;
  ordered.reserve(listed.size());
  for (size_t row = 0; row < listed.size(); row += 8) {
    for (size_t k : kTrayRingOrder) ordered.push_back(listed[row + k]);
  }
  return ordered;
}

void LogOnce(const std::string& message) {
  static std::mutex mu;
  static std::set<std::string>* logged = new std::set<std::string>();
  std::lock_guard<std::mutex> lock(mu);
  if (logged->insert(message).second) std::clog << "jx: make_mesh: " << message << "\n";
}

}  // namespace

Mesh make_mesh(const std::vector<int64_t>& axis_shapes, const std::vector<std::string>& axis_names,
               std::vector<const Device*> devices, std::vector<AxisType> axis_types) {
  if (devices.empty()) {
    // The first pod made (its client registered first), else the host.
    const std::vector<const Device*> tpus = jx::devices("tpu");
    if (tpus.empty()) {
      devices = jx::devices("cpu");
    } else {
      for (const Device* d : tpus) {
        if (&d->client() == &tpus[0]->client()) devices.push_back(d);
      }
    }
  }
  AbstractMesh abstract(axis_shapes, axis_names, axis_types);  // validates names and sizes
  if (abstract.size() != static_cast<int64_t>(devices.size())) {
    ThrowOpError<ValueError>("make_mesh", "the axis shapes (", absl::StrJoin(axis_shapes, ", "), ") make a mesh of ",
                             abstract.size(), " devices, but ", devices.size(), " devices were given");
  }
  const tpu::TpuClient* pod = WholePod(devices);
  if (pod == nullptr) return Mesh(std::move(devices), axis_shapes, axis_names, std::move(axis_types));
  const bool core_pairs = pod->spec().devices_per_chip == 2;
  if (core_pairs && pod->spec().torus_rank == 2) {
    return Mesh(TrayRingOrder(axis_shapes, JaxListing(*pod)), axis_shapes, axis_names, std::move(axis_types));
  }

  // The torus of devices (TpuChip::torus_coords): the chips' axes, then (v7) the core axis.
  std::vector<int64_t> torus = pod->shape();
  if (core_pairs) torus.push_back(pod->spec().devices_per_chip);
  std::optional<Layout> layout;
  if (core_pairs) {
    layout = NdTorusLayout(axis_shapes, torus, kV7AxisPriority);
  } else {
    layout.emplace(axis_shapes.size());
    std::vector<bool> used(torus.size(), false);
    if (!Assign(axis_shapes, torus, 0, used, *layout)) layout.reset();
  }
  if (!layout) {
    LogOnce(StrCat("the mesh axes (", absl::StrJoin(axis_shapes, ", "), ") cannot each lie on whole axes of the ",
                   pod->spec().generation, " torus (", absl::StrJoin(torus, ", "),
                   "); the devices keep their given order, so some mesh axes are not rings of the torus"));
    return Mesh(std::move(devices), axis_shapes, axis_names, std::move(axis_types));
  }
  std::map<std::vector<int64_t>, const Device*> at;
  for (const Device* d : devices) at[static_cast<const tpu::TpuChip*>(d)->torus_coords()] = d;
  std::vector<const Device*> ordered;
  ordered.reserve(devices.size());
  std::vector<int64_t> pos(axis_shapes.size(), 0);
  for (size_t n = 0; n < devices.size(); ++n) {
    int64_t r = static_cast<int64_t>(n);
    for (size_t k = axis_shapes.size(); k-- > 0;) {
      pos[k] = r % axis_shapes[k];
      r /= axis_shapes[k];
    }
    std::vector<int64_t> coords(torus.size(), 0);
    for (size_t k = 0; k < axis_shapes.size(); ++k) {
      int64_t i = pos[k];  // row-major over the axis's torus axes, the first major
      const std::vector<int64_t>& axes = (*layout)[k];
      for (size_t g = axes.size(); g-- > 0;) {
        coords[axes[g]] = i % torus[axes[g]];
        i /= torus[axes[g]];
      }
    }
    ordered.push_back(at.at(coords));
  }
  return Mesh(std::move(ordered), axis_shapes, axis_names, std::move(axis_types));
}

}  // namespace jx
