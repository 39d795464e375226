// The inter-chip interconnect (ICI) of a TPU slice: a 2D or 3D torus of chips as a
// Boost.Graph graph. Vertices are chips in row-major order over the shape (the last axis
// fastest, the order of jx::tpu::Pod::devices()); edges are one-way links, two per pair of
// neighbouring chips (one each way). An axis either wraps (a ring: the last chip links back to
// the first) or is a line; which axes wrap follows the generation's rule (../shared/TPU.md,
// "Wraparound"; Torus::ForSlice). Routing is dimension-ordered: axis 0 first, then axis 1, ...,
// each the shorter way round a ring (the + way on a tie).
//
//   ici::Torus t = ici::Torus::ForSlice(tpu::ChipSpec("v5e"), {8, 16});
//   t.wraps(0), t.wraps(1);          // false, true: v5e wraps an axis only at its full 16
//   t.Coords(17);                    // {1, 1}
//   t.Route(t.ChipAt({0, 0}), t.ChipAt({2, 15}));  // 3 links: (0,0)->(1,0)->(2,0) along
//                                                   // axis 0, then (2,0)->(2,15), axis 1's
//                                                   // wraparound link (the - way round)
//   t.link().bandwidth;              // W: 4.5e10 one-way B/s per link on v5e
//
// On v2/v3/v7 (TpuChipSpec::devices_per_chip 2) a vertex is one TensorCore (one JAX device): the
// torus gets a last "core axis" of 2 whose links are the on-chip path between a chip's cores
// (Link::on_chip, their own LinkParams: no ICI hop), never a ring:
//
//   ici::Torus v3 = ici::Torus::ForSlice(tpu::ChipSpec("v3"), {2, 2});   // a v3-8
//   v3.shape();                      // {2, 2, 2}: 2x2 chips, 2 cores each
//   v3.core_axis();                  // 2
//   v3.Route(0, 1)[0].on_chip;       // true: core 0 -> core 1 of chip (0,0)
//   ici::Torus::ForSlice(tpu::ChipSpec("v7"), {4, 4, 4}).shape();  // {4, 4, 4, 2}: a cube of
//                                                                   // rings, then the cores
//
// Collective costs on the torus: collective_cost.h.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <boost/graph/adjacency_list.hpp>

#include "jx/compiler/backend/tpu/tpu_chip_spec.h"

namespace jx::ici {

// What every link of a torus costs (one generation's constants, TpuChipSpec's ici_* fields).
// A transfer of b bytes over h hops takes fixed_s + h * hop_latency_s + b / (efficiency *
// bandwidth) (TPU.md, "Collectives": the ppermute fits).
struct LinkParams {
  double bandwidth = 0;      // W: one-way bytes/s of one link
  double hop_latency_s = 0;  // per hop a message crosses
  double fixed_s = 0;        // t0: the start-up cost every collective pays once
  double efficiency = 1;     // eta: the fraction of W a transfer achieves
  double effective_bandwidth() const { return efficiency * bandwidth; }
};

// One one-way link, from chip src to its neighbour dst along `axis` (on a torus with a core
// axis, src and dst are TensorCores).
struct Link {
  int64_t id = -1;   // its index in Torus::links(), 0 .. num_links() - 1
  int64_t src = -1;  // chip indices (row-major over the shape)
  int64_t dst = -1;
  int axis = 0;             // the torus axis it runs along
  int direction = +1;       // +1: towards the higher coordinate, -1: the lower
  bool wraparound = false;  // the ring's closing link (last chip <-> first)
  bool on_chip = false;     // along the core axis: the path between two cores of one chip
};

class Torus {
 public:
  // The graph: vertex i is chip i, each edge's bundle is its Link.
  using Graph = boost::adjacency_list<boost::vecS, boost::vecS, boost::bidirectionalS, boost::no_property, Link>;

  // A torus of `shape` (rank 1 to 3, every side >= 1) whose axis a wraps when wraps[a]. An
  // axis of fewer than 3 chips cannot wrap (its ring would be its line). Throws ValueError
  // naming the shape and axis otherwise. `name` labels it in messages ("v5e"). With
  // `core_link`, shape's last axis (beyond the 3) is the cores of each chip: a line whose
  // links are on-chip and cost core_link (its fixed_s is unused: a collective pays link's t0).
  Torus(std::vector<int64_t> shape, std::vector<bool> wraps, LinkParams link, std::string name = "",
        std::optional<LinkParams> core_link = std::nullopt);

  // The torus of a slice of `shape` of spec's generation, with TPU.md's wraparound rule:
  //  * 2D generations (v3, v5e, v6e): an axis wraps only at the full pod's size (16 on
  //    v5e/v6e, so 8x16 wraps its 16 axis only; 32 on v3).
  //  * 3D generations (v4, v5p, v7): slices are made of 4x4x4 cubes joined by optical
  //    switches; a slice of whole cubes (every side a multiple of 4) wraps every axis, a slice
  //    smaller than a cube (2x2x1, 2x2x2, 2x2x4, ...) wraps none.
  // The link constants are spec's ici_link_bandwidth, ici_hop_latency_s,
  // ici_collective_fixed_s and ici_efficiency. `shape` counts chips; with spec.devices_per_chip
  // 2 (v2, v3, v7) a core axis of 2 follows, its links core_link_bandwidth at ici_efficiency with
  // no hop latency (the cores share the chip: no ICI hop is crossed). Throws ValueError when
  // shape's rank is not the generation's torus rank.
  static Torus ForSlice(const tpu::TpuChipSpec& spec, const std::vector<int64_t>& shape);

  const std::vector<int64_t>& shape() const { return shape_; }
  int rank() const { return static_cast<int>(shape_.size()); }
  int64_t num_chips() const { return num_chips_; }
  bool wraps(int axis) const;
  const std::vector<bool>& wraparound() const { return wraps_; }
  // The ICI links' constants; axis_link(a) is the constants of axis a's links (the core axis'
  // on-chip path, else link()).
  const LinkParams& link() const { return link_; }
  const LinkParams& axis_link(int axis) const;
  const LinkParams& params(const Link& l) const { return l.on_chip ? core_link_ : link_; }
  // The core axis (the last), or -1 when a vertex is a whole chip.
  int core_axis() const { return core_axis_; }
  const std::string& name() const { return name_; }

  const Graph& graph() const { return graph_; }
  // Every one-way link, by id (ids ascend by source chip, then axis, then - before +).
  const std::vector<Link>& links() const { return links_; }
  int64_t num_links() const { return static_cast<int64_t>(links_.size()); }

  // Chip index <-> coordinates (row-major, the last axis fastest). ValueError when off the
  // torus.
  std::vector<int64_t> Coords(int64_t chip) const;
  int64_t ChipAt(const std::vector<int64_t>& coords) const;

  // The chip one link away from `chip` along `axis` in `direction` (+1/-1), if any (none past
  // the end of a line, or on an axis of one chip).
  std::optional<int64_t> Neighbor(int64_t chip, int axis, int direction) const;
  // Every distinct chip one link away, in link-id order.
  std::vector<int64_t> Neighbors(int64_t chip) const;
  // The one-way link src -> dst, or nullptr when they are not neighbours.
  const Link* FindLink(int64_t src, int64_t dst) const;

  // The signed number of hops from coordinate `from` to `to` along `axis` by the shorter way:
  // on a ring the shorter way round (+ on a tie), on a line the only way.
  int64_t AxisOffset(int axis, int64_t from, int64_t to) const;
  // True when both ways round `axis` are equally short from `from` to `to` (a ring of even
  // size, half of it apart): routers may take either.
  bool AxisTie(int axis, int64_t from, int64_t to) const;

  // Dimension-ordered route: the links from src to dst in the order a message crosses them,
  // correcting axis 0 first, then 1, ..., each by AxisOffset. Empty when src == dst.
  std::vector<Link> Route(int64_t src, int64_t dst) const;
  // The same with the way round each axis given (directions[a] is +1 or -1; ignored on axes
  // where src and dst agree). ValueError when a direction leaves a line.
  std::vector<Link> Route(int64_t src, int64_t dst, const std::vector<int>& directions) const;
  // Route(src, dst).size(): the torus distance.
  int64_t Hops(int64_t src, int64_t dst) const;

  // "chip 5 (2,1) -> chip 7 (3,1), axis 0 +" (", wraparound" on a ring's closing link,
  // ", on-chip" along the core axis; "device 5 ..." where a vertex is a TensorCore).
  std::string Describe(const Link& link) const;
  // "v5e 8x16 torus: axis 0 line, axis 1 ring; 4.5e+10 B/s per one-way link" ("v3 2x2x2
  // torus: axis 0 line, axis 1 line, axis 2 cores (on-chip, 1e+11 B/s); 1e+11 B/s per one-way
  // link").
  std::string ToString() const;

 private:
  void CheckChip(int64_t chip, const char* what) const;
  void CheckAxis(int axis) const;

  std::vector<int64_t> shape_;
  std::vector<bool> wraps_;
  LinkParams link_;
  std::string name_;
  LinkParams core_link_;
  int core_axis_ = -1;
  int64_t num_chips_ = 1;
  std::vector<int64_t> strides_;  // row-major
  Graph graph_;
  std::vector<Link> links_;
  // links_ index of the link leaving chip c along axis a in direction d (-1: none), at
  // (c * rank + a) * 2 + (d > 0).
  std::vector<int64_t> out_link_;
};

}  // namespace jx::ici
