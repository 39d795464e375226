#include "jx/devices/interconnect/torus.h"

#include <cstdlib>
#include <string_view>
#include <utility>

#include "absl/strings/str_join.h"
#include "jx/core/errors.h"
#include "jx/core/str_util.h"

namespace jx::ici {
namespace {

std::string ShapeText(const std::vector<int64_t>& shape) { return absl::StrJoin(shape, "x"); }
std::string CoordsText(const std::vector<int64_t>& coords) { return StrCat("(", absl::StrJoin(coords, ","), ")"); }

// TPU.md, "Wraparound": which axes of a slice of `shape` are rings.
std::vector<bool> SliceWraparound(const tpu::TpuChipSpec& spec, const std::vector<int64_t>& shape) {
  std::vector<bool> wraps(shape.size(), false);
  if (spec.torus_rank == 3) {
    // v4 / v5p / v7: 4x4x4 cubes joined by optical switches. A slice of whole cubes closes
    // every axis into a ring; a slice smaller than a cube (or not made of cubes) has none.
    bool whole_cubes = true;
    for (int64_t side : shape) whole_cubes = whole_cubes && side % 4 == 0;
    if (whole_cubes) wraps.assign(shape.size(), true);
    return wraps;
  }
  // v5e / v6e (and v3): an axis gets its wraparound links only at the full pod's size.
  for (size_t a = 0; a < shape.size() && a < spec.full_pod.size(); ++a) {
    wraps[a] = shape[a] == spec.full_pod[a] && shape[a] >= 3;
  }
  return wraps;
}

void CheckLinkParams(const LinkParams& link, std::string_view what) {
  if (!(link.bandwidth > 0) || link.hop_latency_s < 0 || link.fixed_s < 0 || !(link.efficiency > 0) ||
      link.efficiency > 1) {
    throw ValueError(StrCat("[ici::Torus] ", what,
                            " parameters need bandwidth > 0, latencies >= 0 and 0 < efficiency <= 1;"
                            " got bandwidth ",
                            link.bandwidth, ", hop latency ", link.hop_latency_s, ", fixed ", link.fixed_s,
                            ", efficiency ", link.efficiency));
  }
}

}  // namespace

Torus::Torus(std::vector<int64_t> shape, std::vector<bool> wraps, LinkParams link, std::string name,
             std::optional<LinkParams> core_link)
    : shape_(std::move(shape)), wraps_(std::move(wraps)), link_(link), name_(std::move(name)) {
  const std::string label = name_.empty() ? std::string("torus") : StrCat(name_, " torus");
  const size_t chip_axes = shape_.size() - (core_link ? 1 : 0);
  if (shape_.empty() || chip_axes < 1 || chip_axes > 3) {
    throw ValueError(StrCat("[ici::Torus] a ", label, " has 1 to 3 axes of chips", core_link ? " and a core axis" : "",
                            ", got shape {", absl::StrJoin(shape_, ", "), "}"));
  }
  if (wraps_.size() != shape_.size()) {
    throw ValueError(StrCat("[ici::Torus] shape ", ShapeText(shape_), " has ", shape_.size(), " axes but ",
                            wraps_.size(), " wraparound flags were given"));
  }
  for (size_t a = 0; a < shape_.size(); ++a) {
    if (shape_[a] < 1) {
      throw ValueError(StrCat("[ici::Torus] shape ", ShapeText(shape_), ": axis ", a, " has ", shape_[a],
                              " chips; every axis needs at least 1"));
    }
    if (wraps_[a] && shape_[a] < 3) {
      throw ValueError(StrCat("[ici::Torus] shape ", ShapeText(shape_), ": axis ", a, " of ", shape_[a],
                              " chips cannot wrap (a ring needs at least 3 chips; its ring would be its line)"));
    }
  }
  CheckLinkParams(link_, "link");
  if (core_link) {
    CheckLinkParams(*core_link, "core link");
    core_axis_ = static_cast<int>(chip_axes);
    core_link_ = *core_link;
    if (wraps_[static_cast<size_t>(core_axis_)]) {
      throw ValueError(StrCat("[ici::Torus] shape ", ShapeText(shape_), ": the core axis ", core_axis_,
                              " cannot wrap (the cores of a chip are joined on the chip)"));
    }
  }
  strides_.assign(shape_.size(), 1);
  for (size_t a = shape_.size(); a-- > 0;) {
    strides_[a] = num_chips_;
    num_chips_ *= shape_[a];
  }
  graph_ = Graph(static_cast<Graph::vertices_size_type>(num_chips_));
  const int r = rank();
  out_link_.assign(static_cast<size_t>(num_chips_ * r * 2), -1);
  for (int64_t chip = 0; chip < num_chips_; ++chip) {
    for (int axis = 0; axis < r; ++axis) {
      const int64_t n = shape_[axis];
      const int64_t c = (chip / strides_[axis]) % n;
      for (int direction : {-1, +1}) {
        int64_t next = c + direction;
        bool wraparound = false;
        if (next < 0 || next >= n) {
          if (!wraps_[axis]) continue;
          next = (next + n) % n;
          wraparound = true;
        }
        Link l{.id = static_cast<int64_t>(links_.size()),
               .src = chip,
               .dst = chip + (next - c) * strides_[axis],
               .axis = axis,
               .direction = direction,
               .wraparound = wraparound,
               .on_chip = axis == core_axis_};
        out_link_[static_cast<size_t>((chip * r + axis) * 2 + (direction > 0))] = l.id;
        boost::add_edge(static_cast<Graph::vertex_descriptor>(l.src), static_cast<Graph::vertex_descriptor>(l.dst), l,
                        graph_);
        links_.push_back(l);
      }
    }
  }
}

Torus Torus::ForSlice(const tpu::TpuChipSpec& spec, const std::vector<int64_t>& shape) {
  if (static_cast<int64_t>(shape.size()) != spec.torus_rank) {
    throw ValueError(StrCat("[ici::Torus::ForSlice] ", spec.generation, " chips form a ", spec.torus_rank,
                            "D torus: shape {", absl::StrJoin(shape, ", "), "} has ", shape.size(), " axes"));
  }
  LinkParams link{.bandwidth = spec.ici_link_bandwidth,
                  .hop_latency_s = spec.ici_hop_latency_s,
                  .fixed_s = spec.ici_collective_fixed_s,
                  .efficiency = spec.ici_efficiency};
  std::vector<bool> wraps = SliceWraparound(spec, shape);
  if (spec.devices_per_chip == 1) return Torus(shape, std::move(wraps), link, spec.generation);
  std::vector<int64_t> cores = shape;
  cores.push_back(spec.devices_per_chip);
  wraps.push_back(false);
  LinkParams core_link{.bandwidth = spec.core_link_bandwidth,
                       .hop_latency_s = 0,
                       .fixed_s = spec.ici_collective_fixed_s,
                       .efficiency = spec.ici_efficiency};
  return Torus(std::move(cores), std::move(wraps), link, spec.generation, core_link);
}

const LinkParams& Torus::axis_link(int axis) const {
  CheckAxis(axis);
  return axis == core_axis_ ? core_link_ : link_;
}

void Torus::CheckChip(int64_t chip, const char* what) const {
  if (chip < 0 || chip >= num_chips_) {
    throw ValueError(StrCat("[ici::Torus::", what, "] chip ", chip, " is not on the ", ShapeText(shape_), " ",
                            name_.empty() ? std::string("torus") : StrCat(name_, " torus"), " (chips 0..",
                            num_chips_ - 1, ")"));
  }
}

void Torus::CheckAxis(int axis) const {
  if (axis < 0 || axis >= rank()) {
    throw ValueError(
        StrCat("[ici::Torus] axis ", axis, " is not an axis of the ", ShapeText(shape_), " torus (", rank(), " axes)"));
  }
}

bool Torus::wraps(int axis) const {
  CheckAxis(axis);
  return wraps_[static_cast<size_t>(axis)];
}

std::vector<int64_t> Torus::Coords(int64_t chip) const {
  CheckChip(chip, "Coords");
  std::vector<int64_t> coords(shape_.size());
  for (size_t a = 0; a < shape_.size(); ++a) coords[a] = (chip / strides_[a]) % shape_[a];
  return coords;
}

int64_t Torus::ChipAt(const std::vector<int64_t>& coords) const {
  bool inside = coords.size() == shape_.size();
  int64_t chip = 0;
  for (size_t a = 0; inside && a < shape_.size(); ++a) {
    inside = coords[a] >= 0 && coords[a] < shape_[a];
    chip += coords[a] * strides_[a];
  }
  if (!inside) {
    throw ValueError(
        StrCat("[ici::Torus::ChipAt] position ", CoordsText(coords), " is not on the ", ShapeText(shape_), " torus"));
  }
  return chip;
}

std::optional<int64_t> Torus::Neighbor(int64_t chip, int axis, int direction) const {
  CheckChip(chip, "Neighbor");
  CheckAxis(axis);
  if (direction != 1 && direction != -1) {
    throw ValueError(StrCat("[ici::Torus::Neighbor] direction must be +1 or -1, got ", direction));
  }
  const int64_t id = out_link_[static_cast<size_t>((chip * rank() + axis) * 2 + (direction > 0))];
  if (id < 0) return std::nullopt;
  return links_[static_cast<size_t>(id)].dst;
}

std::vector<int64_t> Torus::Neighbors(int64_t chip) const {
  CheckChip(chip, "Neighbors");
  std::vector<int64_t> out;
  for (auto [e, end] = boost::out_edges(static_cast<Graph::vertex_descriptor>(chip), graph_); e != end; ++e) {
    const int64_t dst = static_cast<int64_t>(boost::target(*e, graph_));
    bool seen = false;
    for (int64_t n : out) seen = seen || n == dst;
    if (!seen) out.push_back(dst);
  }
  return out;
}

const Link* Torus::FindLink(int64_t src, int64_t dst) const {
  CheckChip(src, "FindLink");
  CheckChip(dst, "FindLink");
  for (auto [e, end] = boost::out_edges(static_cast<Graph::vertex_descriptor>(src), graph_); e != end; ++e) {
    if (static_cast<int64_t>(boost::target(*e, graph_)) == dst) return &links_[static_cast<size_t>(graph_[*e].id)];
  }
  return nullptr;
}

int64_t Torus::AxisOffset(int axis, int64_t from, int64_t to) const {
  CheckAxis(axis);
  const int64_t n = shape_[static_cast<size_t>(axis)];
  if (from < 0 || from >= n || to < 0 || to >= n) {
    throw ValueError(StrCat("[ici::Torus::AxisOffset] coordinates ", from, " and ", to, " are not both on axis ", axis,
                            " of ", n, " chips"));
  }
  const int64_t forward = to - from;
  if (!wraps_[static_cast<size_t>(axis)]) return forward;
  const int64_t plus = (forward + n) % n;  // hops the + way round
  const int64_t minus = n - plus;          // hops the - way round
  if (plus == 0) return 0;
  return plus <= minus ? plus : -minus;
}

bool Torus::AxisTie(int axis, int64_t from, int64_t to) const {
  const int64_t offset = AxisOffset(axis, from, to);
  return wraps_[static_cast<size_t>(axis)] && offset != 0 && 2 * std::abs(offset) == shape_[static_cast<size_t>(axis)];
}

std::vector<Link> Torus::Route(int64_t src, int64_t dst) const {
  CheckChip(src, "Route");
  CheckChip(dst, "Route");
  std::vector<int> directions(shape_.size(), +1);
  for (size_t a = 0; a < shape_.size(); ++a) {
    const int axis = static_cast<int>(a);
    const int64_t offset = AxisOffset(axis, (src / strides_[a]) % shape_[a], (dst / strides_[a]) % shape_[a]);
    directions[a] = offset < 0 ? -1 : +1;
  }
  return Route(src, dst, directions);
}

std::vector<Link> Torus::Route(int64_t src, int64_t dst, const std::vector<int>& directions) const {
  CheckChip(src, "Route");
  CheckChip(dst, "Route");
  if (directions.size() != shape_.size()) {
    throw ValueError(StrCat("[ici::Torus::Route] ", directions.size(), " directions given for the ", rank(),
                            " axes of the ", ShapeText(shape_), " torus"));
  }
  std::vector<Link> route;
  int64_t at = src;
  const int r = rank();
  for (int axis = 0; axis < r; ++axis) {
    const size_t a = static_cast<size_t>(axis);
    const int64_t n = shape_[a];
    const int64_t from = (at / strides_[a]) % n, to = (dst / strides_[a]) % n;
    if (from == to) continue;
    const int direction = directions[a];
    if (direction != 1 && direction != -1) {
      throw ValueError(StrCat("[ici::Torus::Route] direction for axis ", axis, " must be +1 or -1, got ", direction));
    }
    const int64_t hops = direction > 0 ? (to - from + n) % n : (from - to + n) % n;
    if (!wraps_[a] && (direction > 0) != (to > from)) {
      throw ValueError(StrCat("[ici::Torus::Route] axis ", axis, " of the ", ShapeText(shape_),
                              " torus is a line: chip ", src, " cannot reach chip ", dst, " going the ",
                              direction > 0 ? "+" : "-", " way"));
    }
    for (int64_t h = 0; h < hops; ++h) {
      const int64_t id = out_link_[static_cast<size_t>((at * r + axis) * 2 + (direction > 0))];
      const Link& l = links_[static_cast<size_t>(id)];
      route.push_back(l);
      at = l.dst;
    }
  }
  return route;
}

int64_t Torus::Hops(int64_t src, int64_t dst) const {
  CheckChip(src, "Hops");
  CheckChip(dst, "Hops");
  int64_t hops = 0;
  for (size_t a = 0; a < shape_.size(); ++a) {
    hops += std::abs(AxisOffset(static_cast<int>(a), (src / strides_[a]) % shape_[a], (dst / strides_[a]) % shape_[a]));
  }
  return hops;
}

std::string Torus::Describe(const Link& link) const {
  // With a core axis a vertex is one of a chip's TensorCores: a device, not a chip.
  const char* vertex = core_axis_ >= 0 ? "device " : "chip ";
  return StrCat(vertex, link.src, " ", CoordsText(Coords(link.src)), " -> ", vertex, link.dst, " ",
                CoordsText(Coords(link.dst)), ", axis ", link.axis, " ", link.direction > 0 ? "+" : "-",
                link.wraparound ? ", wraparound" : "", link.on_chip ? ", on-chip" : "");
}

std::string Torus::ToString() const {
  std::vector<std::string> axes;
  for (size_t a = 0; a < shape_.size(); ++a) {
    axes.push_back(static_cast<int>(a) == core_axis_
                       ? StrCat("axis ", a, " cores (on-chip, ", core_link_.bandwidth, " B/s)")
                       : StrCat("axis ", a, wraps_[a] ? " ring" : " line"));
  }
  return StrCat(name_.empty() ? "" : StrCat(name_, " "), ShapeText(shape_), " torus: ", absl::StrJoin(axes, ", "), "; ",
                link_.bandwidth, " B/s per one-way link");
}

}  // namespace jx::ici
