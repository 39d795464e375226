#include "jx/devices/interconnect/collective_cost.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <optional>
#include <type_traits>

#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "jx/core/errors.h"
#include "jx/core/str_util.h"
#include "jx/devices/interconnect/torus.h"

namespace jx::ici {
namespace {

// Bytes per one-way link, by link id (dense, all groups together).
using Loads = std::vector<double>;

// One group's bytes on the links it uses, collected in a dense scratch vector shared by the
// groups (a pod has tens of thousands of links, a group uses few of them).
class GroupLoads {
 public:
  explicit GroupLoads(int64_t num_links) : dense_(static_cast<size_t>(num_links), 0.0), used_(dense_.size(), false) {}
  void Add(int64_t link, double bytes) {
    const size_t l = static_cast<size_t>(link);
    if (!used_[l]) {
      used_[l] = true;
      touched_.push_back(link);
    }
    dense_[l] += bytes;
  }
  // The collected (link, bytes) by ascending link id; the scratch is cleared for the next group.
  std::vector<std::pair<int64_t, double>> Take() {
    std::sort(touched_.begin(), touched_.end());
    std::vector<std::pair<int64_t, double>> out;
    out.reserve(touched_.size());
    for (int64_t link : touched_) {
      const size_t l = static_cast<size_t>(link);
      out.emplace_back(link, dense_[l]);
      dense_[l] = 0;
      used_[l] = false;
    }
    touched_.clear();
    return out;
  }

 private:
  std::vector<double> dense_;
  std::vector<bool> used_;
  std::vector<int64_t> touched_;
};

// How a group lies along one torus axis it spans: a whole ring, or a contiguous run of chips
// (a line; on a ring, a segment that may cross the wraparound) starting at `start`.
struct AxisSpan {
  int axis = 0;
  int64_t size = 0;  // chips of the group along the axis
  int64_t start = 0;
  bool ring = false;
};

// A group that is an axis-aligned sub-grid: the product of its spans (axes it does not span
// hold one coordinate).
struct SubGrid {
  std::vector<AxisSpan> spans;
};

// The group's sub-grid, or nullopt when it is not one (not a product of per-axis coordinate
// sets, or a set that is not contiguous along its axis).
std::optional<SubGrid> AsSubGrid(const Torus& torus, const std::vector<int64_t>& group) {
  const int r = torus.rank();
  std::vector<std::vector<bool>> used(static_cast<size_t>(r));
  for (int a = 0; a < r; ++a)
    used[static_cast<size_t>(a)].assign(static_cast<size_t>(torus.shape()[static_cast<size_t>(a)]), false);
  for (int64_t chip : group) {
    const std::vector<int64_t> c = torus.Coords(chip);
    for (int a = 0; a < r; ++a) used[static_cast<size_t>(a)][static_cast<size_t>(c[static_cast<size_t>(a)])] = true;
  }
  SubGrid grid;
  int64_t product = 1;
  for (int a = 0; a < r; ++a) {
    const std::vector<bool>& u = used[static_cast<size_t>(a)];
    const int64_t n = static_cast<int64_t>(u.size());
    const int64_t count = std::count(u.begin(), u.end(), true);
    product *= count;
    if (count == 1) continue;
    AxisSpan span{.axis = a, .size = count};
    if (count == n) {
      span.ring = torus.wraps(a);
    } else {
      // Contiguous: exactly one chip of the run has no predecessor in it (cyclically on a ring,
      // linearly on a line).
      int64_t starts = 0;
      for (int64_t i = 0; i < n; ++i) {
        if (!u[static_cast<size_t>(i)]) continue;
        const bool has_prev = i > 0 ? u[static_cast<size_t>(i - 1)] : (torus.wraps(a) && u[static_cast<size_t>(n - 1)]);
        if (!has_prev) {
          ++starts;
          span.start = i;
        }
      }
      if (starts != 1) return std::nullopt;
    }
    grid.spans.push_back(span);
  }
  if (product != static_cast<int64_t>(group.size())) return std::nullopt;
  return grid;
}

// One span's share of the busiest link's load per byte of the array a 1D all-gather over it
// moves: a bidirectional ring sends every shard ceil((n-1)/2) hops one way and floor((n-1)/2)
// the other (V/2 per link when n is even: T = V / W_bidi); a line's end links carry n-1 of the
// n shards ((n-1)/n * V: T = (n-1)(V/n) / W).
double LoadPerByte(const AxisSpan& s) {
  const double n = static_cast<double>(s.size);
  return s.ring ? std::ceil((n - 1) / 2) / n : (n - 1) / n;
}

int64_t SpanHops(const AxisSpan& s) { return s.ring ? s.size / 2 : s.size - 1; }

// The seconds of hop latency a message crossing `route` pays (on-chip links have their own).
double RouteLatency(const Torus& torus, const std::vector<Link>& route) {
  double seconds = 0;
  for (const Link& l : route) seconds += torus.params(l).hop_latency_s;
  return seconds;
}

std::string SpanText(const AxisSpan& s, const Torus& torus, bool alone) {
  if (s.ring) return alone ? StrCat("bidi ring over torus axis ", s.axis, " (wraps)") : StrCat(s.axis, " (bidi ring)");
  const std::string why =
      torus.wraps(s.axis) ? StrCat(s.size, " chips of its ", torus.shape()[static_cast<size_t>(s.axis)], "-chip ring")
                          : "no wraparound";
  return alone ? StrCat("line over torus axis ", s.axis, " (", why, ")") : StrCat(s.axis, " (line, ", why, ")");
}

std::string GridText(const SubGrid& g, const Torus& torus) {
  if (g.spans.size() == 1) return SpanText(g.spans[0], torus, true);
  std::vector<std::string> parts;
  for (const AxisSpan& s : g.spans) parts.push_back(SpanText(s, torus, false));
  return StrCat("multi-axis over torus axes ", absl::StrJoin(parts, ", "));
}

// The link of `torus` leaving `chip` along `axis` in `direction` (it exists: callers stay
// inside a span).
int64_t LinkFrom(const Torus& torus, int64_t chip, int axis, int direction) {
  const std::optional<int64_t> next = torus.Neighbor(chip, axis, direction);
  return torus.FindLink(chip, *next)->id;
}

// Adds what a 1D all-gather stage over span s moves when every chip of the group holds
// `per_chip` bytes before it: on a ring each chip's + link carries ceil((n-1)/2) shards and
// its - link floor((n-1)/2); on a line the chip at position k sends k+1 shards on + (its own
// and those behind it) and n-k on -.
void AddStage(const Torus& torus, const std::vector<int64_t>& group, const AxisSpan& s, double per_chip,
              GroupLoads& loads) {
  const int64_t n_axis = torus.shape()[static_cast<size_t>(s.axis)];
  for (int64_t chip : group) {
    if (s.ring) {
      loads.Add(LinkFrom(torus, chip, s.axis, +1), static_cast<double>(s.size / 2) * per_chip);
      loads.Add(LinkFrom(torus, chip, s.axis, -1), static_cast<double>((s.size - 1) / 2) * per_chip);
      continue;
    }
    const int64_t k = (torus.Coords(chip)[static_cast<size_t>(s.axis)] - s.start + n_axis) % n_axis;
    if (k + 1 < s.size) loads.Add(LinkFrom(torus, chip, s.axis, +1), static_cast<double>(k + 1) * per_chip);
    if (k > 0) loads.Add(LinkFrom(torus, chip, s.axis, -1), static_cast<double>(s.size - k) * per_chip);
  }
}

// What one group's collective moves and how long it takes alone.
struct GroupPlan {
  std::vector<std::pair<int64_t, double>> own;  // (link, bytes) of this group
  int64_t latency_hops = 0;
  double latency_s = 0;    // those hops' latency (an on-chip hop's differs from an ICI hop's)
  double bandwidth_s = 0;  // alone on the torus (sub-grid all-gathers: TPU.md's formula)
  bool routed = false;     // its time is its busiest link's total load, not a formula
  std::string text;
};

// An all-gather over a sub-grid of k spans: the array splits in shares proportional to each
// span's rate (its links' eta W / LoadPerByte), share j gathered over the other spans first and span j last, so
// every span's links work at once and the rates add (TPU.md: over k rings, V / (k W_bidi);
// one span: its ring or line formula). The time counts each share's last (largest) stage, as
// TPU.md's formula does; link bytes hold every stage.
GroupPlan PlanSubGrid(const Torus& torus, const std::vector<int64_t>& group, const SubGrid& grid, double v,
                      GroupLoads& loads) {
  GroupPlan plan;
  auto rate = [&](const AxisSpan& s) { return torus.axis_link(s.axis).effective_bandwidth() / LoadPerByte(s); };
  double total_rate = 0;
  for (const AxisSpan& s : grid.spans) {
    total_rate += rate(s);
    plan.latency_hops += SpanHops(s);
    plan.latency_s += static_cast<double>(SpanHops(s)) * torus.axis_link(s.axis).hop_latency_s;
  }
  plan.bandwidth_s = v / total_rate;
  const size_t k = grid.spans.size();
  const double n = static_cast<double>(group.size());
  for (size_t j = 0; j < k; ++j) {
    double per_chip = v * (rate(grid.spans[j]) / total_rate) / n;
    for (size_t step = 1; step <= k; ++step) {
      const AxisSpan& s = grid.spans[(j + step) % k];
      AddStage(torus, group, s, per_chip, loads);
      per_chip *= static_cast<double>(s.size);
    }
  }
  plan.own = loads.Take();
  plan.text = GridText(grid, torus);
  return plan;
}

// An all-gather over any other group: a bidirectional ring in the group's order, every step
// (g[i] -> g[i+1] and back) routed over the torus. Every shard goes ceil((N-1)/2) steps
// forward and floor((N-1)/2) back; the latency is the longest run of consecutive steps' hops.
GroupPlan PlanRoutedRing(const Torus& torus, const std::vector<int64_t>& group, double v, GroupLoads& loads) {
  GroupPlan plan;
  plan.routed = true;
  const int64_t n = static_cast<int64_t>(group.size());
  const int64_t forward = n / 2, backward = (n - 1) / 2;
  const double shard = v / static_cast<double>(n);
  std::vector<int64_t> fwd_hops(static_cast<size_t>(n)), back_hops(static_cast<size_t>(n));
  std::vector<double> fwd_latency(static_cast<size_t>(n)), back_latency(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    const int64_t a = group[static_cast<size_t>(i)], b = group[static_cast<size_t>((i + 1) % n)];
    const std::vector<Link> there = torus.Route(a, b), back = torus.Route(b, a);
    for (const Link& l : there) loads.Add(l.id, static_cast<double>(forward) * shard);
    if (backward > 0) {
      for (const Link& l : back) loads.Add(l.id, static_cast<double>(backward) * shard);
    }
    fwd_hops[static_cast<size_t>(i)] = static_cast<int64_t>(there.size());
    back_hops[static_cast<size_t>(i)] = static_cast<int64_t>(back.size());
    fwd_latency[static_cast<size_t>(i)] = RouteLatency(torus, there);
    back_latency[static_cast<size_t>(i)] = RouteLatency(torus, back);
  }
  // The longest sum of `steps` cyclically consecutive entries of hops (a sliding window).
  auto longest = [n](const auto& hops, int64_t steps) {
    using T = typename std::decay_t<decltype(hops)>::value_type;
    if (steps == 0) return T{0};
    T window = 0;
    for (int64_t i = 0; i < steps; ++i) window += hops[static_cast<size_t>(i % n)];
    T best = window;
    for (int64_t i = 1; i < n; ++i) {
      window += hops[static_cast<size_t>((i + steps - 1) % n)] - hops[static_cast<size_t>(i - 1)];
      best = std::max(best, window);
    }
    return best;
  };
  plan.latency_hops = std::max(longest(fwd_hops, forward), longest(back_hops, backward));
  plan.latency_s = std::max(longest(fwd_latency, forward), longest(back_latency, backward));
  plan.own = loads.Take();
  plan.text = StrCat("bidi ring of ", n, " chips routed over the torus");
  return plan;
}

// The directions a message from `from` to `to` may take round each axis with their weights:
// the shorter way (weight 1), or both ways (1/2 each) where they tie on a ring.
struct Way {
  std::vector<int> directions;
  double weight = 1;
};
std::vector<Way> Ways(const Torus& torus, const std::vector<int64_t>& from, const std::vector<int64_t>& to) {
  const int r = torus.rank();
  Way shorter{.directions = std::vector<int>(static_cast<size_t>(r), +1)};
  std::vector<int> ties;
  for (int a = 0; a < r; ++a) {
    const size_t ua = static_cast<size_t>(a);
    shorter.directions[ua] = torus.AxisOffset(a, from[ua], to[ua]) < 0 ? -1 : +1;
    if (torus.AxisTie(a, from[ua], to[ua])) ties.push_back(a);
  }
  std::vector<Way> ways;
  const int64_t count = int64_t{1} << ties.size();
  for (int64_t mask = 0; mask < count; ++mask) {
    Way w = shorter;
    w.weight = 1 / static_cast<double>(count);
    for (size_t t = 0; t < ties.size(); ++t) w.directions[static_cast<size_t>(ties[t])] = (mask >> t) & 1 ? -1 : +1;
    ways.push_back(std::move(w));
  }
  return ways;
}

// An all-to-all over a sub-grid, without enumerating its N^2 pairs: a message's axis-a leg
// runs where the axes before a hold the target's coordinates and those after it the source's,
// so the link from position p along a line of axis a carries the N / n_a pairs for every 1D
// pair (s, d) of the span whose leg crosses p: (V / N^2) (N / n_a) c_a(p) bytes, with c_a
// counted on the axis' coordinates as Torus::Route goes (ties split in half).
GroupPlan PlanAllToAllSubGrid(const Torus& torus, const std::vector<int64_t>& group, const SubGrid& grid, double v,
                              GroupLoads& loads) {
  GroupPlan plan;
  plan.routed = true;
  const double n = static_cast<double>(group.size());
  for (const AxisSpan& s : grid.spans) {
    const int axis = s.axis;
    const int64_t n_axis = torus.shape()[static_cast<size_t>(axis)];
    std::vector<int64_t> coords;  // the span's coordinates along the axis
    for (int64_t k = 0; k < s.size; ++k) coords.push_back((s.start + k) % n_axis);
    // crossings[d][c]: 1D pairs whose leg leaves coordinate c the d way (0: -, 1: +).
    std::vector<std::vector<double>> crossings(2, std::vector<double>(static_cast<size_t>(n_axis), 0.0));
    int64_t max_hops = 0;
    for (int64_t from : coords) {
      for (int64_t to : coords) {
        if (from == to) continue;
        const int64_t offset = torus.AxisOffset(axis, from, to);
        const bool tie = torus.AxisTie(axis, from, to);
        max_hops = std::max(max_hops, std::abs(offset));
        for (int direction : {+1, -1}) {
          const bool shorter = (offset > 0) == (direction > 0);
          if (!shorter && !tie) continue;
          const double weight = tie ? 0.5 : 1.0;
          const int64_t hops = shorter ? std::abs(offset) : n_axis - std::abs(offset);
          for (int64_t h = 0, c = from; h < hops; ++h, c = (c + direction + n_axis) % n_axis) {
            crossings[direction > 0][static_cast<size_t>(c)] += weight;
          }
        }
      }
    }
    plan.latency_hops += max_hops;
    plan.latency_s += static_cast<double>(max_hops) * torus.axis_link(axis).hop_latency_s;
    const double per_crossing = v / (n * static_cast<double>(s.size));
    for (int64_t chip : group) {
      // Every chip of the group starts one line of the axis (those at the span's start).
      if (torus.Coords(chip)[static_cast<size_t>(axis)] != s.start) continue;
      for (int64_t c = 0; c < n_axis; ++c) {
        std::vector<int64_t> at = torus.Coords(chip);
        at[static_cast<size_t>(axis)] = c;
        const int64_t from = torus.ChipAt(at);
        for (int direction : {+1, -1}) {
          const double count = crossings[direction > 0][static_cast<size_t>(c)];
          if (count > 0) loads.Add(LinkFrom(torus, from, axis, direction), count * per_crossing);
        }
      }
    }
  }
  plan.own = loads.Take();
  plan.text = StrCat("routed pairwise within ", GridText(grid, torus));
  return plan;
}

// An all-to-all over any other group: every chip sends V/N^2 to every other along its
// dimension-ordered route, split evenly over both ways round a ring where they tie.
GroupPlan PlanAllToAllRouted(const Torus& torus, const std::vector<int64_t>& group, double v, GroupLoads& loads) {
  GroupPlan plan;
  plan.routed = true;
  const double n = static_cast<double>(group.size());
  const double piece = v / (n * n);
  for (int64_t src : group) {
    const std::vector<int64_t> from = torus.Coords(src);
    for (int64_t dst : group) {
      if (src == dst) continue;
      for (const Way& way : Ways(torus, from, torus.Coords(dst))) {
        const std::vector<Link> route = torus.Route(src, dst, way.directions);
        for (const Link& l : route) loads.Add(l.id, piece * way.weight);
        plan.latency_hops = std::max(plan.latency_hops, static_cast<int64_t>(route.size()));
        plan.latency_s = std::max(plan.latency_s, RouteLatency(torus, route));
      }
    }
  }
  plan.own = loads.Take();
  plan.text = StrCat("routed pairwise among ", group.size(), " scattered chips");
  return plan;
}

std::vector<LinkBytes> ToLinkBytes(const Loads& loads) {
  std::vector<LinkBytes> out;
  for (size_t id = 0; id < loads.size(); ++id) {
    const int64_t bytes = std::llround(loads[id]);
    if (bytes > 0) out.push_back({.link = static_cast<int64_t>(id), .bytes = bytes});
  }
  return out;
}

void CheckChipOf(const Torus& torus, int64_t chip, std::string_view op) {
  if (chip < 0 || chip >= torus.num_chips()) {
    throw ValueError(StrCat("[", op, "] chip ", chip, " is not on the ", torus.ToString(), " (chips 0..",
                            torus.num_chips() - 1, ")"));
  }
}

std::string GroupsText(const std::vector<std::vector<int64_t>>& groups) {
  std::vector<std::string> parts;
  for (const auto& g : groups) parts.push_back(StrCat("{", absl::StrJoin(g, ","), "}"));
  return StrCat("[", absl::StrJoin(parts, ", "), "]");
}

}  // namespace

std::string_view CollectiveKindName(CollectiveKind kind) {
  switch (kind) {
    case CollectiveKind::kAllReduce:
      return "all-reduce";
    case CollectiveKind::kAllGather:
      return "all-gather";
    case CollectiveKind::kReduceScatter:
      return "reduce-scatter";
    case CollectiveKind::kAllToAll:
      return "all-to-all";
  }
  return "unknown collective";
}

int64_t CollectiveCost::max_link_bytes() const {
  int64_t best = 0;
  for (const LinkBytes& l : link_bytes) best = std::max(best, l.bytes);
  return best;
}

int64_t CollectiveCost::total_link_bytes() const {
  int64_t total = 0;
  for (const LinkBytes& l : link_bytes) total += l.bytes;
  return total;
}

std::string CollectiveCost::ToString() const {
  const std::string parts =
      op == "collective-permute"
          ? absl::StrFormat("t0 %.3g + latency %.3g + bandwidth %.3g", fixed_s, latency_s, bandwidth_s)
          : absl::StrFormat("t0 %.3g + max(latency %.3g, bandwidth %.3g)", fixed_s, latency_s, bandwidth_s);
  return StrCat(op, " ", absl::StrFormat("%.3g", seconds), " s = ", parts, " [", algorithm, "]");
}

CollectiveCost CostCollective(const Torus& torus, CollectiveKind kind, const std::vector<std::vector<int64_t>>& groups,
                              int64_t bytes) {
  const std::string op(CollectiveKindName(kind));
  if (bytes < 0) throw ValueError(StrCat("[", op, "] bytes must be >= 0, got ", bytes));
  std::vector<std::vector<int64_t>> all = groups;
  if (all.empty()) {
    all.emplace_back();
    for (int64_t c = 0; c < torus.num_chips(); ++c) all.back().push_back(c);
  }
  std::vector<int> group_of(static_cast<size_t>(torus.num_chips()), -1);
  for (size_t g = 0; g < all.size(); ++g) {
    if (all[g].empty()) throw ValueError(StrCat("[", op, "] group ", g, " of ", GroupsText(all), " is empty"));
    for (int64_t chip : all[g]) {
      CheckChipOf(torus, chip, op);
      int& owner = group_of[static_cast<size_t>(chip)];
      if (owner >= 0) {
        throw ValueError(StrCat("[", op, "] chip ", chip, " is in group ", owner, " and group ", g, " of ",
                                GroupsText(all), "; every chip takes part in at most one group"));
      }
      owner = static_cast<int>(g);
    }
  }
  CollectiveCost cost;
  cost.op = op;
  const double v = static_cast<double>(bytes);
  GroupLoads scratch(torus.num_links());
  std::vector<GroupPlan> plans;
  for (const auto& group : all) {
    if (group.size() < 2) continue;  // a group of one chip communicates nothing
    const std::optional<SubGrid> grid = AsSubGrid(torus, group);
    if (kind == CollectiveKind::kAllToAll) {
      plans.push_back(grid ? PlanAllToAllSubGrid(torus, group, *grid, v, scratch)
                           : PlanAllToAllRouted(torus, group, v, scratch));
    } else {
      plans.push_back(grid ? PlanSubGrid(torus, group, *grid, v, scratch) : PlanRoutedRing(torus, group, v, scratch));
    }
  }
  if (plans.empty()) {
    cost.algorithm = "no communication (every group is one chip)";
    return cost;
  }
  Loads total(static_cast<size_t>(torus.num_links()), 0.0);
  for (const GroupPlan& p : plans) {
    for (const auto& [l, b] : p.own) total[static_cast<size_t>(l)] += b;
  }
  // The slowest group sets the time. A routed group is as slow as its busiest link's total
  // load, every group's bytes on it counted (contention). Sub-grids keep their formula time:
  // two of them never share a link (their chips are disjoint and their links run between
  // their own chips), and a link a routed group shares with one counts both groups' bytes in
  // the routed group's time, which then bounds the pair.
  int64_t latency_hops = 0;
  double latency_s = 0, bandwidth_s = 0;
  for (const GroupPlan& p : plans) {
    double busiest = 0;  // the seconds its busiest link needs
    for (const auto& [l, b] : p.own) {
      busiest = std::max(busiest, total[static_cast<size_t>(l)] /
                                      torus.params(torus.links()[static_cast<size_t>(l)]).effective_bandwidth());
    }
    bandwidth_s = std::max(bandwidth_s, p.routed ? busiest : p.bandwidth_s);
    latency_hops = std::max(latency_hops, p.latency_hops);
    latency_s = std::max(latency_s, p.latency_s);
  }
  // All-reduce: a reduce-scatter then an all-gather over the same links.
  const int64_t phases = kind == CollectiveKind::kAllReduce ? 2 : 1;
  if (phases != 1) {
    for (double& b : total) b *= static_cast<double>(phases);
  }
  cost.hops = phases * latency_hops;
  cost.fixed_s = torus.link().fixed_s;
  cost.latency_s = static_cast<double>(phases) * latency_s;
  cost.bandwidth_s = static_cast<double>(phases) * bandwidth_s;
  cost.latency_bound = cost.latency_s > cost.bandwidth_s;
  cost.seconds = cost.fixed_s + std::max(cost.latency_s, cost.bandwidth_s);
  std::vector<std::string> texts;
  for (const GroupPlan& p : plans) {
    if (std::find(texts.begin(), texts.end(), p.text) == texts.end()) texts.push_back(p.text);
  }
  cost.algorithm = absl::StrJoin(texts, "; ");
  if (plans.size() > 1) absl::StrAppend(&cost.algorithm, ", ", plans.size(), " groups at once");
  if (kind == CollectiveKind::kAllReduce) cost.algorithm = StrCat("reduce-scatter + all-gather: ", cost.algorithm);
  cost.link_bytes = ToLinkBytes(total);
  return cost;
}

CollectiveCost CostPermute(const Torus& torus, const std::vector<std::pair<int64_t, int64_t>>& pairs,
                           int64_t bytes_per_transfer) {
  const std::string op = "collective-permute";
  if (bytes_per_transfer < 0)
    throw ValueError(StrCat("[", op, "] bytes_per_transfer must be >= 0, got ", bytes_per_transfer));
  std::vector<int64_t> source_at(static_cast<size_t>(torus.num_chips()), -1), target_at(source_at);
  for (size_t i = 0; i < pairs.size(); ++i) {
    const auto [src, dst] = pairs[i];
    CheckChipOf(torus, src, op);
    CheckChipOf(torus, dst, op);
    if (source_at[static_cast<size_t>(src)] >= 0) {
      throw ValueError(StrCat("[", op, "] chip ", src, " is the source of pairs ", source_at[static_cast<size_t>(src)],
                              " and ", i, "; a permutation sends from each chip at most once"));
    }
    if (target_at[static_cast<size_t>(dst)] >= 0) {
      throw ValueError(StrCat("[", op, "] chip ", dst, " is the target of pairs ", target_at[static_cast<size_t>(dst)],
                              " and ", i, "; a permutation sends to each chip at most once"));
    }
    source_at[static_cast<size_t>(src)] = static_cast<int64_t>(i);
    target_at[static_cast<size_t>(dst)] = static_cast<int64_t>(i);
  }
  CollectiveCost cost;
  cost.op = op;
  Loads loads(static_cast<size_t>(torus.num_links()), 0.0);
  int64_t moving = 0;
  double latency_s = 0;
  for (const auto& [src, dst] : pairs) {
    if (src == dst) continue;
    ++moving;
    const std::vector<Link> route = torus.Route(src, dst);
    for (const Link& l : route) loads[static_cast<size_t>(l.id)] += static_cast<double>(bytes_per_transfer);
    cost.hops = std::max(cost.hops, static_cast<int64_t>(route.size()));
    latency_s = std::max(latency_s, RouteLatency(torus, route));
  }
  if (moving == 0) {
    cost.algorithm = "nothing moves over ICI (every transfer stays on its chip)";
    return cost;
  }
  double busiest = 0, busiest_s = 0;  // the most bytes on a link, the longest a link needs
  int64_t shared = 0;
  for (size_t id = 0; id < loads.size(); ++id) {
    const double b = loads[id];
    busiest = std::max(busiest, b);
    busiest_s = std::max(busiest_s, b / torus.params(torus.links()[id]).effective_bandwidth());
    if (b > static_cast<double>(bytes_per_transfer)) ++shared;
  }
  cost.fixed_s = torus.link().fixed_s;
  cost.latency_s = latency_s;
  cost.bandwidth_s = busiest_s;
  cost.latency_bound = cost.latency_s > cost.bandwidth_s;
  cost.seconds = cost.fixed_s + cost.latency_s + cost.bandwidth_s;
  const int64_t sharing = bytes_per_transfer > 0 ? std::llround(busiest / static_cast<double>(bytes_per_transfer)) : 1;
  cost.algorithm =
      StrCat(moving, " transfer", moving == 1 ? "" : "s", " routed hop by hop (dimension-ordered), ",
             shared == 0 ? std::string("no link shared")
                         : StrCat(shared, " link", shared == 1 ? "" : "s", " shared, busiest by ", sharing));
  cost.link_bytes = ToLinkBytes(loads);
  return cost;
}

}  // namespace jx::ici
