// opinfo records for the collectives (psum_invariant, with a sample of two operands, pmax,
// pmin, all_gather, reduce_scatter, all_to_all, ppermute, axis_index, pvary). Each sample runs
// the collective inside a shard_map over the four chips of a 2x2 v5e pod (a mesh ('i': 4), and
// ('i': 2, 'j': 2) for collectives over two axes flattened), the arguments split along dim 0;
// the reference is the float64 computation over the four blocks, reassembled along
// dimension 0 as the out_specs say.
#include <memory>

#include "opinfo.h"

namespace jx::opinfo::collectives_opinfo {
namespace {

constexpr int64_t kDevices = 4;

const tpu::Pod& Pod() {
  static const auto* pod = new tpu::Pod(tpu::make_pod("v5e", {2, 2}));
  return *pod;
}
const Mesh& Mesh1D() {
  static const auto* mesh = new Mesh(make_mesh({4}, {"i"}, Pod().devices()));
  return *mesh;
}
const Mesh& Mesh2D() {
  static const auto* mesh = new Mesh(make_mesh({2, 2}, {"i", "j"}, Pod().devices()));
  return *mesh;
}

// The blocks of a along dimension 0 (kDevices of them), and their concatenation.
std::vector<RefArray> Blocks(const RefArray& a) {
  const int64_t rows = a.shape[0] / kDevices;
  const int64_t per = a.size() / kDevices;
  std::vector<RefArray> out;
  for (int64_t d = 0; d < kDevices; ++d) {
    RefArray b{a.shape, {a.data.begin() + d * per, a.data.begin() + (d + 1) * per}};
    b.shape[0] = rows;
    out.push_back(std::move(b));
  }
  return out;
}
RefArray Concat0(const std::vector<RefArray>& blocks) {
  RefArray out{blocks[0].shape, {}};
  out.shape[0] = 0;
  for (const RefArray& b : blocks) {
    out.shape[0] += b.shape[0];
    out.data.insert(out.data.end(), b.data.begin(), b.data.end());
  }
  return out;
}
// Rows [k*n/parts, (k+1)*n/parts) of a block.
RefArray Rows(const RefArray& b, int64_t k, int64_t parts) {
  const int64_t per = b.size() / parts;
  RefArray out{b.shape, {b.data.begin() + k * per, b.data.begin() + (k + 1) * per}};
  out.shape[0] /= parts;
  return out;
}

using BlockRef = std::function<std::vector<RefArray>(const std::vector<RefArray>&)>;
using Body = std::function<Array(const Array&)>;

struct CollectiveCase {
  std::string description;
  Body body;
  BlockRef reference;  // input blocks -> output blocks (device order)
  PartitionSpec in_spec = P("i");
  PartitionSpec out_spec = P("i");
  bool two_axes = false;  // the 2x2 mesh, dimension 0 split over ('i', 'j')
  Shape shape = {8, 3};
  bool check_vma = true;
};

OpInfo CollectiveRecord(std::string name, std::vector<CollectiveCase> cases, std::vector<DType> dtypes) {
  OpInfo info;
  info.name = name;
  info.dtypes = std::move(dtypes);
  info.tolerance = DefaultTolerance;
  info.collective = true;
  info.samples = [cases](DType d, std::mt19937_64& rng) {
    std::vector<Sample> out;
    for (const CollectiveCase& c : cases) {
      Sample s;
      Array x = RandomArray(rng, c.shape, d);
      s.description = StrCat(x.aval().str(), " ", c.description, c.two_axes ? " mesh (i:2, j:2)" : " mesh (i:4)");
      s.args = {x};
      s.op = [c](const std::vector<Array>& args) {
        const Mesh& mesh = c.two_axes ? Mesh2D() : Mesh1D();
        auto f = shard_map(c.body, mesh, in_specs{c.in_spec}, out_specs{c.out_spec}, {.check_vma = c.check_vma});
        return std::vector<Array>{f(args[0])};
      };
      s.reference = [c](const std::vector<RefArray>& in) {
        return std::vector<RefArray>{Concat0(c.reference(Blocks(in[0])))};
      };
      s.out_dtypes = {d};
      out.push_back(std::move(s));
    }
    return out;
  };
  return info;
}

// Every device gets fold(blocks) elementwise.
BlockRef AllReduce(std::function<double(double, double)> fold) {
  return [fold](const std::vector<RefArray>& b) {
    RefArray r = b[0];
    for (size_t d = 1; d < b.size(); ++d) {
      for (size_t e = 0; e < r.data.size(); ++e) r.data[e] = fold(r.data[e], b[d].data[e]);
    }
    return std::vector<RefArray>(b.size(), r);
  };
}

const std::vector<DType> kCollectiveDTypes = {float32, float64};

// psum of two arrays in one call: ONE psum_invariant equation of two operands and two results
// (JAX binds `psum_invariant[axes=('i',)] a b`), one all-reduce of both once lowered.
Sample TwoOperandPsum(DType d, std::mt19937_64& rng, const BlockRef& sum) {
  Sample s;
  Array a = RandomArray(rng, {8, 3}, d), b = RandomArray(rng, {4}, d);
  s.description = StrCat(a.aval().str(), " ", b.aval().str(), " psum of both over i in one call mesh (i:4)");
  s.args = {a, b};
  s.op = [](const std::vector<Array>& args) {
    auto f = shard_map([](const Array& x, const Array& y) { return lax::psum(std::vector<Array>{x, y}, "i"); },
                       Mesh1D(), in_specs{P("i"), P("i")}, out_specs{P("i")});
    return f(args[0], args[1]);
  };
  s.reference = [sum](const std::vector<RefArray>& in) {
    return std::vector<RefArray>{Concat0(sum(Blocks(in[0]))), Concat0(sum(Blocks(in[1])))};
  };
  s.out_dtypes = {d, d};
  return s;
}

JX_OPINFO(psum_invariant) {
  BlockRef sum = AllReduce([](double a, double b) { return a + b; });
  OpInfo info = CollectiveRecord(
      "psum_invariant",
      {{"psum over i", [](const Array& x) { return lax::psum(x, "i"); }, sum},
       {"psum over (i, j)", [](const Array& x) { return lax::psum(x, {"i", "j"}); }, sum, P({"i", "j"}),
        P({"i", "j"}), true},
       {"psum over i, rank 1", [](const Array& x) { return lax::psum(x, "i"); }, sum, P("i"), P("i"), false, {4}}},
      kCollectiveDTypes);
  info.samples = [one = info.samples, sum](DType d, std::mt19937_64& rng) {
    std::vector<Sample> out = one(d, rng);
    out.push_back(TwoOperandPsum(d, rng, sum));
    return out;
  };
  return info;
}

// psum in a body without varying-axes types (check_vma=false): JAX's psum_p.
JX_OPINFO(psum) {
  CollectiveCase c{"psum over i, check_vma=false", [](const Array& x) { return lax::psum(x, "i"); },
                   AllReduce([](double a, double b) { return a + b; })};
  c.out_spec = P();
  c.check_vma = false;
  c.reference = [](const std::vector<RefArray>& b) {
    // out_specs P(): the result is one block (every device's).
    return std::vector<RefArray>{AllReduce([](double x, double y) { return x + y; })(b)[0]};
  };
  return CollectiveRecord("psum", {c}, kCollectiveDTypes);
}

JX_OPINFO(pmax) {
  return CollectiveRecord(
      "pmax",
      {{"pmax over i", [](const Array& x) { return lax::pmax(x, "i"); },
        AllReduce([](double a, double b) { return std::max(a, b); })}},
      kCollectiveDTypes);
}

JX_OPINFO(pmin) {
  return CollectiveRecord(
      "pmin",
      {{"pmin over i", [](const Array& x) { return lax::pmin(x, "i"); },
        AllReduce([](double a, double b) { return std::min(a, b); })}},
      kCollectiveDTypes);
}

JX_OPINFO(all_gather) {
  // Tiled: every device holds the concatenation; untiled: the stack (same elements, a new
  // leading dimension of 4, which out_specs P('i') concatenates along dimension 0).
  BlockRef tiled = [](const std::vector<RefArray>& b) { return std::vector<RefArray>(b.size(), Concat0(b)); };
  BlockRef stacked = [](const std::vector<RefArray>& b) {
    RefArray s = Concat0(b);
    s.shape = b[0].shape;
    s.shape.insert(s.shape.begin(), static_cast<int64_t>(b.size()));
    return std::vector<RefArray>(b.size(), s);
  };
  return CollectiveRecord(
      "all_gather",
      {{"tiled", [](const Array& x) { return lax::all_gather(x, "i", 0, true); }, tiled},
       {"untiled", [](const Array& x) { return lax::all_gather(x, "i"); }, stacked},
       {"tiled over (i, j)", [](const Array& x) { return lax::all_gather(x, {"i", "j"}, 0, true); }, tiled,
        P({"i", "j"}), P({"i", "j"}), true}},
      kCollectiveDTypes);
}

JX_OPINFO(reduce_scatter) {
  // Device d gets block d (of 4) of the sum of the blocks.
  BlockRef scatter = [](const std::vector<RefArray>& b) {
    RefArray sum = AllReduce([](double x, double y) { return x + y; })(b)[0];
    std::vector<RefArray> out;
    for (int64_t d = 0; d < kDevices; ++d) out.push_back(Rows(sum, d, kDevices));
    return out;
  };
  return CollectiveRecord(
      "reduce_scatter",
      {{"psum_scatter tiled", [](const Array& x) { return lax::psum_scatter(x, "i", 0, true); }, scatter,
        P("i"), P("i"), false, {16, 3}}},
      kCollectiveDTypes);
}

JX_OPINFO(all_to_all) {
  // Device d gets sub-block d of every device's block, in device order.
  BlockRef exchange = [](const std::vector<RefArray>& b) {
    std::vector<RefArray> out;
    for (int64_t d = 0; d < kDevices; ++d) {
      std::vector<RefArray> parts;
      for (const RefArray& blk : b) parts.push_back(Rows(blk, d, kDevices));
      out.push_back(Concat0(parts));
    }
    return out;
  };
  return CollectiveRecord(
      "all_to_all",
      {{"split 0 concat 0 tiled", [](const Array& x) { return lax::all_to_all(x, "i", 0, 0, true); }, exchange,
        P("i"), P("i"), false, {16, 3}}},
      kCollectiveDTypes);
}

JX_OPINFO(ppermute) {
  // A cyclic shift: device d's block goes to d+1; a partial permutation leaves zeros.
  BlockRef shift = [](const std::vector<RefArray>& b) {
    std::vector<RefArray> out(b.size());
    for (size_t d = 0; d < b.size(); ++d) out[(d + 1) % b.size()] = b[d];
    return out;
  };
  BlockRef partial = [](const std::vector<RefArray>& b) {
    std::vector<RefArray> out = b;
    for (RefArray& r : out) std::fill(r.data.begin(), r.data.end(), 0.0);
    out[2] = b[0];
    out[0] = b[3];
    return out;
  };
  return CollectiveRecord(
      "ppermute",
      {{"shift", [](const Array& x) { return lax::ppermute(x, "i", {{0, 1}, {1, 2}, {2, 3}, {3, 0}}); }, shift},
       {"partial", [](const Array& x) { return lax::ppermute(x, "i", {{0, 2}, {3, 0}}); }, partial}},
      kCollectiveDTypes);
}

JX_OPINFO(axis_index) {
  BlockRef plus_index = [](const std::vector<RefArray>& b) {
    std::vector<RefArray> out = b;
    for (size_t d = 0; d < b.size(); ++d) {
      for (double& v : out[d].data) v += static_cast<double>(d);
    }
    return out;
  };
  return CollectiveRecord(
      "axis_index",
      {{"x + axis_index(i)",
        [](const Array& x) { return x + lax::axis_index("i").astype(x.dtype()); }, plus_index},
       {"x + axis_index((j, i))",
        [](const Array& x) { return x + lax::axis_index({"j", "i"}).astype(x.dtype()); },
        [](const std::vector<RefArray>& b) {
          // Device (i, j) (row-major over (i, j)) has position j * 2 + i along (j, i).
          std::vector<RefArray> out = b;
          for (size_t d = 0; d < b.size(); ++d) {
            const double pos = static_cast<double>((d % 2) * 2 + d / 2);
            for (double& v : out[d].data) v += pos;
          }
          return out;
        },
        P({"i", "j"}), P({"i", "j"}), true}},
      kCollectiveDTypes);
}

JX_OPINFO(pvary) {
  // An invariant (replicated) argument made varying and tiled by out_specs P('i'): four
  // copies; its transpose (psum) sums the copies' cotangents.
  OpInfo info = CollectiveRecord(
      "pvary",
      {{"pvary over i", [](const Array& x) { return lax::pvary(x, "i") * 2.0; },
        [](const std::vector<RefArray>&) -> std::vector<RefArray> { return {}; }, P(), P("i"), false, {2, 3}}},
      kCollectiveDTypes);
  auto samples = info.samples;
  info.samples = [samples](DType d, std::mt19937_64& rng) {
    std::vector<Sample> out = samples(d, rng);
    for (Sample& s : out) {
      s.reference = [](const std::vector<RefArray>& in) {
        RefArray twice = in[0];
        for (double& v : twice.data) v *= 2;
        return std::vector<RefArray>{Concat0(std::vector<RefArray>(kDevices, twice))};
      };
    }
    return out;
  };
  return info;
}

}  // namespace
}  // namespace jx::opinfo::collectives_opinfo

namespace jx::opinfo {

bool ShardedEagerOpsRun() {
  static const bool runs = [] {
    try {
      Array x = device_put(numpy::zeros({4}), NamedSharding(collectives_opinfo::Mesh1D(), P("i")));
      (void)(x + 1.0f).to_vector<float>();
      return true;
    } catch (const NotImplementedError&) {
      return false;
    }
  }();
  return runs;
}

}  // namespace jx::opinfo
