// opinfo records for the sorting family: sort (one operand, and several operands sorted by
// one or two keys) and top_k. References stable-sort index permutations by a comparator on
// float64 bit patterns under JAX's total order:
// -NaN < -inf < ... < -0.0 < +0.0 < ... < inf < NaN.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "opinfo.h"

namespace jx::opinfo::sort_opinfo {
namespace {

// Total-order key of a double: the sign-magnitude bits mapped to a monotone unsigned.
uint64_t TotalKey(double v) {
  uint64_t b;
  std::memcpy(&b, &v, sizeof(b));
  const uint64_t sign = uint64_t{1} << 63;
  return (b & sign) ? ~b : (b | sign);
}

// Small integer values (many ties), stored in any dtype.
Array RandTies(std::mt19937_64& rng, const Shape& shape, DType d) {
  std::uniform_int_distribution<int> dist(IsUnsignedInt(d) || IsBool(d) ? 0 : -3, IsBool(d) ? 1 : 3);
  return FillArray(shape, d, [&](int64_t) { return dist(rng); });
}

// Floats with NaN, -NaN, +-inf and +-0 sprinkled in.
Array WithSpecials(const Array& a, std::mt19937_64& rng) {
  if (!IsFloating(a.dtype()) || a.size() == 0) return a;
  const double specials[] = {std::numeric_limits<double>::quiet_NaN(), -std::numeric_limits<double>::quiet_NaN(),
                             std::numeric_limits<double>::infinity(), -std::numeric_limits<double>::infinity(),
                             0.0, -0.0};
  return WithValuesAtRandom(a, rng, std::max<int64_t>(2, a.size() / 10), [&](int64_t k) { return specials[k % 6]; });
}

struct Layout {
  int64_t O = 1, N = 1, I = 1;
};
Layout MakeLayout(const Shape& shape, int64_t axis) {
  Layout l;
  l.N = shape[static_cast<size_t>(axis)];
  for (int64_t i = 0; i < axis; ++i) l.O *= shape[static_cast<size_t>(i)];
  for (size_t i = static_cast<size_t>(axis) + 1; i < shape.size(); ++i) l.I *= shape[i];
  return l;
}

// Stable sort of every row of every operand along axis by the first num_keys operands.
std::vector<RefArray> RefSort(const std::vector<RefArray>& in, int64_t axis, int64_t num_keys) {
  const Layout l = MakeLayout(in[0].shape, axis);
  std::vector<RefArray> out = in;
  std::vector<int64_t> perm;
  // The row's total-order keys, computed once per element rather than once per comparison:
  // keys[j * num_keys + k] is key k of element j.
  std::vector<uint64_t> keys;
  for (int64_t o = 0; o < l.O; ++o) {
    for (int64_t i = 0; i < l.I; ++i) {
      auto at = [&](size_t k, int64_t j) { return in[k].data[static_cast<size_t>((o * l.N + j) * l.I + i)]; };
      keys.resize(static_cast<size_t>(l.N * num_keys));
      for (int64_t j = 0; j < l.N; ++j) {
        for (int64_t k = 0; k < num_keys; ++k) keys[static_cast<size_t>(j * num_keys + k)] = TotalKey(at(static_cast<size_t>(k), j));
      }
      auto less = [&](int64_t a, int64_t b) {
        for (int64_t k = 0; k < num_keys; ++k) {
          const uint64_t ka = keys[static_cast<size_t>(a * num_keys + k)], kb = keys[static_cast<size_t>(b * num_keys + k)];
          if (ka != kb) return ka < kb;
        }
        return false;
      };
      perm.resize(static_cast<size_t>(l.N));
      for (int64_t j = 0; j < l.N; ++j) perm[static_cast<size_t>(j)] = j;
      std::stable_sort(perm.begin(), perm.end(), less);
      for (size_t k = 0; k < in.size(); ++k) {
        for (int64_t j = 0; j < l.N; ++j) {
          out[k].data[static_cast<size_t>((o * l.N + j) * l.I + i)] = at(k, perm[static_cast<size_t>(j)]);
        }
      }
    }
  }
  return out;
}

struct SortCase {
  Shape shape;
  int64_t dimension;
};

JX_OPINFO(sort) {
  OpInfo info;
  info.name = "sort";
  info.dtypes = kAllDTypes;
  info.tolerance = DefaultTolerance;
  info.samples = [](DType d, std::mt19937_64& rng) {
    const std::vector<SortCase> cases = {
        {{5}, 0},        {{1}, 0},          {{0}, 0},        {{3, 4}, 0},      {{3, 4}, 1},
        {{3, 4}, -1},    {{2, 0, 3}, 1},    {{2, 3, 5}, 1},  {{2, 3, 5}, 0},   {{2, 3, 5}, 2},
        {{300, 257}, 1}, {{300, 257}, 0},   {{5000}, 0},
    };
    std::vector<Sample> out;
    for (const SortCase& c : cases) {
      Array x = IsFloating(d) ? RandomArray(rng, c.shape, d) : RandTies(rng, c.shape, d);
      std::vector<std::pair<std::string, Array>> inputs = {{"", x}};
      if (c.shape.size() >= 2) inputs.push_back({" (transposed)", NonContiguousCopy(x)});
      if (IsFloating(d)) inputs.push_back({" (specials)", WithSpecials(x, rng)});
      for (auto& [tag, arg] : inputs) {
        Sample s;
        s.description = StrCat(ShapedArray{c.shape, d}.str(), " dimension=", c.dimension, tag);
        s.args = {arg};
        const int64_t dim = c.dimension;
        s.op = [dim](const std::vector<Array>& a) { return std::vector<Array>{lax::sort(a[0], dim)}; };
        s.reference = [dim](const std::vector<RefArray>& a) {
          return RefSort(a, dim < 0 ? dim + static_cast<int64_t>(a[0].shape.size()) : dim, 1);
        };
        s.out_dtypes = {d};
        s.derivatives_defined = tag != " (specials)";  // no finite differences at infinities and NaNs
        out.push_back(std::move(s));
      }
      // Keys with ties plus a payload: stability and the permutation of every operand.
      Array keys = RandTies(rng, c.shape, d);
      Array payload = RandomArray(rng, c.shape, float32, -100, 100);
      for (int64_t num_keys : {1, 2}) {
        Sample s;
        s.description = StrCat(ShapedArray{c.shape, d}.str(), " dimension=", c.dimension, " num_keys=", num_keys,
                               " (+ f32 payload)");
        Array second = num_keys == 2 ? RandTies(rng, c.shape, int32) : Array();
        s.args = num_keys == 1 ? std::vector<Array>{keys, payload} : std::vector<Array>{keys, second, payload};
        const int64_t dim = c.dimension;
        s.op = [dim, num_keys](const std::vector<Array>& a) { return lax::sort(a, dim, true, num_keys); };
        s.reference = [dim, num_keys](const std::vector<RefArray>& a) {
          return RefSort(a, dim < 0 ? dim + static_cast<int64_t>(a[0].shape.size()) : dim, num_keys);
        };
        s.out_dtypes = num_keys == 1 ? std::vector<DType>{d, float32} : std::vector<DType>{d, int32, float32};
        // Tied keys reorder under any perturbation and the payload is f32: unfit for finite
        // differences (the sample below covers the derivatives of several operands).
        s.derivatives_defined = false;
        out.push_back(std::move(s));
      }
      if (IsFloating(d)) {
        // Distinct float keys and a payload of the same dtype: the tangents of every operand
        // follow the sort permutation.
        Sample s;
        s.description =
            StrCat(ShapedArray{c.shape, d}.str(), " dimension=", c.dimension, " (+ payload, distinct keys)");
        s.args = {RandomArray(rng, c.shape, d), RandomArray(rng, c.shape, d)};
        const int64_t dim = c.dimension;
        s.op = [dim](const std::vector<Array>& a) { return lax::sort(a, dim, true, 1); };
        s.reference = [dim](const std::vector<RefArray>& a) {
          return RefSort(a, dim < 0 ? dim + static_cast<int64_t>(a[0].shape.size()) : dim, 1);
        };
        s.out_dtypes = {d, d};
        out.push_back(std::move(s));
      }
    }
    return out;
  };
  return info;
}

// The k largest along the last axis, descending by the total order, lower index first.
std::vector<RefArray> RefTopK(const RefArray& x, int64_t k) {
  const int64_t n = x.shape.back();
  const int64_t rows = n == 0 ? 0 : x.size() / n;
  RefArray values, indices;
  values.shape = x.shape;
  values.shape.back() = k;
  indices.shape = values.shape;
  for (int64_t r = 0; r < rows; ++r) {
    std::vector<int64_t> perm(static_cast<size_t>(n));
    for (int64_t j = 0; j < n; ++j) perm[static_cast<size_t>(j)] = j;
    std::stable_sort(perm.begin(), perm.end(), [&](int64_t a, int64_t b) {
      return TotalKey(x.data[static_cast<size_t>(r * n + a)]) > TotalKey(x.data[static_cast<size_t>(r * n + b)]);
    });
    for (int64_t j = 0; j < k; ++j) {
      values.data.push_back(x.data[static_cast<size_t>(r * n + perm[static_cast<size_t>(j)])]);
      indices.data.push_back(static_cast<double>(perm[static_cast<size_t>(j)]));
    }
  }
  return {values, indices};
}

struct TopKCase {
  Shape shape;
  int64_t k;
};

JX_OPINFO(top_k) {
  OpInfo info;
  info.name = "top_k";
  info.dtypes = kAllDTypes;
  info.tolerance = DefaultTolerance;
  info.samples = [](DType d, std::mt19937_64& rng) {
    const std::vector<TopKCase> cases = {
        {{5}, 0},       {{5}, 2},          {{5}, 5},      {{1}, 1},        {{0}, 0},     {{3, 4}, 1},
        {{3, 4}, 4},    {{2, 3, 10}, 3},   {{2, 0}, 0},   {{0, 3}, 2},     {{300, 257}, 10},
        {{1000}, 1000}, {{4, 2000}, 7},
    };
    std::vector<Sample> out;
    for (const TopKCase& c : cases) {
      std::vector<std::pair<std::string, Array>> inputs = {{" (ties)", RandTies(rng, c.shape, d)}};
      if (IsFloating(d)) {
        Array x = RandomArray(rng, c.shape, d);
        inputs.push_back({"", x});
        inputs.push_back({" (specials)", WithSpecials(x, rng)});
      }
      if (c.shape.size() >= 2) inputs.push_back({" (transposed)", NonContiguousCopy(inputs[0].second)});
      for (auto& [tag, arg] : inputs) {
        Sample s;
        s.description = StrCat(ShapedArray{c.shape, d}.str(), " k=", c.k, tag);
        s.args = {arg};
        const int64_t k = c.k;
        s.op = [k](const std::vector<Array>& a) {
          auto [values, indices] = lax::top_k(a[0], k);
          return std::vector<Array>{values, indices};
        };
        s.reference = [k](const std::vector<RefArray>& a) { return RefTopK(a[0], k); };
        s.out_dtypes = {d, int32};
        // Ties (the transposed copy is of the tied input) and specials are unfit for finite
        // differences.
        s.derivatives_defined = tag.empty();
        out.push_back(std::move(s));
      }
    }
    return out;
  };
  return info;
}

}  // namespace
}  // namespace jx::opinfo::sort_opinfo
