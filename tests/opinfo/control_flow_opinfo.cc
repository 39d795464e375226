// opinfo records for control flow: cond (a data-dependent predicate, so both branches run
// across samples and vmap turns a batched predicate into a select), while (a counted
// while_loop, forward mode only: a while has no transpose) and scan (a tanh recurrence
// with per-step outputs). References are the same recurrences in float64 loops. Through
// the suite's columns this puts control flow under jvp, vjp, vmap, jit and the CPU
// backend's no-fallback check like every other primitive.
#include <cmath>

#include "opinfo.h"

namespace jx::opinfo::control_flow_opinfo {
namespace {

namespace jnp = jx::numpy;

const std::vector<DType> kCfDTypes = {float32, float64};
const std::vector<Shape> kCfShapes = {{}, {1}, {5}, {3, 4}, {17}, {33}};

OpInfo CondRecord() {
  OpInfo info;
  info.name = "cond";
  info.dtypes = kCfDTypes;
  info.tolerance = DefaultTolerance;
  info.samples = [](DType d, std::mt19937_64& rng) {
    std::vector<Sample> out;
    for (const Shape& shape : kCfShapes) {
      Sample s;
      s.description = StrCat(dtype_name(d), ShapeToString(shape), " pred=sum(x)>0");
      s.args = {RandomArray(rng, shape, d)};
      s.op = [](const std::vector<Array>& a) {
        return std::vector<Array>{lax::cond(
            jnp::sum(a[0]) > 0.0, [](const Array& x) { return jnp::sin(x) * x; },
            [](const Array& x) { return jnp::cos(x) + x; }, a[0])};
      };
      s.reference = [](const std::vector<RefArray>& a) {
        double sum = 0;
        for (double v : a[0].data) sum += v;
        RefArray r = a[0];
        for (double& v : r.data) v = sum > 0 ? std::sin(v) * v : std::cos(v) + v;
        return std::vector<RefArray>{r};
      };
      s.out_dtypes = {d};
      out.push_back(std::move(s));
    }
    return out;
  };
  return info;
}

OpInfo WhileRecord() {
  OpInfo info;
  info.name = "while";
  info.dtypes = kCfDTypes;
  info.tolerance = DefaultTolerance;
  info.differentiable = false;  // no transpose: reverse mode needs a static trip count
  info.samples = [](DType d, std::mt19937_64& rng) {
    std::vector<Sample> out;
    for (const Shape& shape : kCfShapes) {
      Sample s;
      s.description = StrCat(dtype_name(d), ShapeToString(shape), " 3 steps of x*0.5+sin(x)");
      s.args = {RandomArray(rng, shape, d)};
      s.op = [](const std::vector<Array>& a) {
        auto [i, x] = lax::while_loop([](const std::pair<Array, Array>& c) { return c.first < 3; },
                                      [](const std::pair<Array, Array>& c) {
                                        return std::pair{c.first + 1, c.second * 0.5 + jnp::sin(c.second)};
                                      },
                                      std::pair{Array(0), a[0]});
        return std::vector<Array>{x};
      };
      s.reference = [](const std::vector<RefArray>& a) {
        RefArray r = a[0];
        for (double& v : r.data) {
          for (int k = 0; k < 3; ++k) v = v * 0.5 + std::sin(v);
        }
        return std::vector<RefArray>{r};
      };
      s.out_dtypes = {d};
      out.push_back(std::move(s));
    }
    return out;
  };
  return info;
}

OpInfo ScanRecord() {
  OpInfo info;
  info.name = "scan";
  info.dtypes = kCfDTypes;
  info.tolerance = DefaultTolerance;
  info.samples = [](DType d, std::mt19937_64& rng) {
    std::vector<Sample> out;
    const std::vector<std::pair<int64_t, int64_t>> cases = {{1, 1}, {4, 3}, {7, 17}, {0, 5}, {50, 8}};
    for (const auto& [steps, width] : cases) {
      Sample s;
      s.description = StrCat(dtype_name(d), " ", steps, " steps of h=tanh(h/2+x), y=h*x, width ", width);
      s.args = {RandomArray(rng, {width}, d), RandomArray(rng, {steps, width}, d)};
      s.op = [](const std::vector<Array>& a) {
        auto [h, ys] = lax::scan(
            [](const Array& h, const Array& x) {
              Array h2 = jnp::tanh(h * 0.5 + x);
              return std::pair{h2, h * x};
            },
            a[0], a[1]);
        return std::vector<Array>{h, ys};
      };
      s.reference = [](const std::vector<RefArray>& a) {
        const int64_t steps = a[1].shape[0], width = a[1].shape[1];
        RefArray h = a[0], ys = a[1];
        for (int64_t t = 0; t < steps; ++t) {
          for (int64_t j = 0; j < width; ++j) {
            const double x = a[1].data[static_cast<size_t>(t * width + j)];
            double& hj = h.data[static_cast<size_t>(j)];
            ys.data[static_cast<size_t>(t * width + j)] = hj * x;
            hj = std::tanh(hj * 0.5 + x);
          }
        }
        return std::vector<RefArray>{h, ys};
      };
      s.out_dtypes = {d, d};
      out.push_back(std::move(s));
    }
    return out;
  };
  return info;
}

}  // namespace

JX_OPINFO(cond) { return CondRecord(); }
JX_OPINFO(while) { return WhileRecord(); }
JX_OPINFO(scan) { return ScanRecord(); }

}  // namespace jx::opinfo::control_flow_opinfo
