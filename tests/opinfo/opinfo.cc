#include "opinfo.h"

#include <cmath>
#include <map>
#include <mutex>
#include <utility>

#include <gtest/gtest.h>

namespace jx::opinfo {

double& RefArray::at(const std::vector<int64_t>& idx) {
  int64_t flat = 0;
  for (size_t i = 0; i < idx.size(); ++i) flat = flat * shape[i] + idx[i];
  return data[static_cast<size_t>(flat)];
}
double RefArray::at(const std::vector<int64_t>& idx) const { return const_cast<RefArray*>(this)->at(idx); }

RefArray ToRef(const Array& a) { return RefArray{a.shape(), a.to_vector<double>()}; }

Tolerance DefaultTolerance(DType d) {
  switch (d) {
    case DType::kFloat16: return {2e-3, 2e-3};
    case DType::kBFloat16: return {1.6e-2, 1.6e-2};
    case DType::kFloat32: return {2e-6, 2e-6};
    case DType::kFloat64: return {1e-12, 1e-13};
    default: return {0, 0};
  }
}

std::vector<OpInfo>& Registry() {
  static std::vector<OpInfo> records;
  return records;
}

Registrar::Registrar(OpInfo (*make)()) { Registry().push_back(make()); }

const OpInfo& FindOpInfo(const std::string& name) {
  for (const OpInfo& info : Registry()) {
    if (info.name == name) return info;
  }
  throw std::runtime_error("no opinfo " + name);
}

std::vector<std::string> AllOpInfoNames() {
  std::vector<std::string> names;
  for (const OpInfo& info : Registry()) names.push_back(info.name);
  return names;
}

std::vector<Sample> SamplesFor(const OpInfo& info, DType d) {
  // Generated once per (record, dtype) and process: every column iterates the same samples,
  // and drawing them (random fills, transposed copies) anew in each column was a fifth of the
  // sanitized suite's CPU. Arrays are immutable handles, so the copies share their buffers.
  static std::mutex mu;
  static std::map<std::pair<std::string, DType>, std::vector<Sample>> generated;
  const std::lock_guard<std::mutex> lock(mu);
  const std::pair<std::string, DType> key(info.name, d);
  auto it = generated.find(key);
  if (it == generated.end()) {
    std::mt19937_64 rng(std::hash<std::string>{}(info.name) ^ static_cast<uint64_t>(d));
    it = generated.emplace(key, info.samples(d, rng)).first;
  }
  return it->second;
}

void ExpectArraysClose(const Array& got, const Array& want, const Tolerance& tol, const std::string& where) {
  ASSERT_EQ(got.shape(), want.shape()) << where;
  ASSERT_EQ(got.dtype(), want.dtype()) << where;
  const std::vector<double> g = got.to_vector<double>(), w = want.to_vector<double>();
  int reported = 0;
  for (size_t i = 0; i < g.size() && reported < 3; ++i) {
    if (std::isnan(g[i]) && std::isnan(w[i])) continue;
    if (g[i] == w[i]) continue;
    if (!(std::fabs(g[i] - w[i]) <= tol.atol + tol.rtol * std::fabs(w[i]))) {
      ADD_FAILURE() << where << " element " << i << ": got " << g[i] << " vs eager " << w[i];
      ++reported;
    }
  }
}

std::vector<DType> Concat(std::vector<DType> a, const std::vector<DType>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

const std::vector<Shape>& ElementwiseShapes() {
  static const std::vector<Shape> shapes = {{}, {0}, {5}, {3, 4}, {2, 0, 3}, {2, 3, 5}, {70000}};
  return shapes;
}

Array FillArray(const Shape& shape, DType dtype, absl::FunctionRef<double(int64_t)> value) {
  Array out = Array::Empty(shape, dtype);
  // Size and buffer looked up once: looked up per element they were a fifth of the suite's
  // time.
  const int64_t n = out.size();
  void* data = out.mutable_data();
  for (int64_t i = 0; i < n; ++i) StoreFromDouble(dtype, data, i, value(i));
  return out;
}

Array WithValuesAtRandom(const Array& a, std::mt19937_64& rng, int64_t count,
                         absl::FunctionRef<double(int64_t)> value) {
  Array out = Array::FromData(a.data(), a.shape(), a.dtype());
  void* data = out.mutable_data();
  std::uniform_int_distribution<int64_t> pick(0, a.size() - 1);
  for (int64_t k = 0; k < count; ++k) StoreFromDouble(a.dtype(), data, pick(rng), value(k));
  return out;
}

Array RandomArray(std::mt19937_64& rng, const Shape& shape, DType dtype, double lo, double hi) {
  std::uniform_real_distribution<double> dist(lo, hi);
  return FillArray(shape, dtype, [&](int64_t) {
    const double v = dist(rng);
    if (IsBool(dtype)) return v > (lo + hi) / 2 ? 1.0 : 0.0;
    return IsInteger(dtype) ? std::round(v) : v;
  });
}

Array NonContiguousCopy(const Array& a) {
  if (a.ndim() == 0) return a;
  // Build the transpose (reversed axes) of a, then transpose it back: the op sees an array
  // that was produced by a transpose rather than created directly.
  std::vector<int64_t> perm(static_cast<size_t>(a.ndim()));
  for (int64_t i = 0; i < a.ndim(); ++i) perm[static_cast<size_t>(i)] = a.ndim() - 1 - i;
  return lax::transpose(lax::transpose(a, perm), perm);
}

namespace {
std::vector<RefArray> MapRef(const std::vector<RefArray>& in, const std::function<double(double)>& f) {
  RefArray out{in[0].shape, std::vector<double>(in[0].data.size())};
  for (size_t i = 0; i < out.data.size(); ++i) out.data[i] = f(in[0].data[i]);
  return {out};
}
}  // namespace

OpInfo Unary(std::string name, std::function<Array(const Array&)> op, std::function<double(double)> ref,
             std::vector<DType> dtypes, double lo, double hi) {
  OpInfo info;
  info.name = name;
  info.dtypes = std::move(dtypes);
  info.tolerance = DefaultTolerance;
  info.samples = [op, ref, lo, hi](DType d, std::mt19937_64& rng) {
    std::vector<Sample> out;
    for (const Shape& s : ElementwiseShapes()) {
      Array x = RandomArray(rng, s, d, lo, hi);
      for (bool noncontig : {false, true}) {
        if (noncontig && s.size() < 2) continue;
        Sample sample;
        sample.description = StrCat(ShapedArray{s, d}.str(), noncontig ? " (transposed)" : "");
        sample.args = {noncontig ? NonContiguousCopy(x) : x};
        sample.op = [op](const std::vector<Array>& a) { return std::vector<Array>{op(a[0])}; };
        sample.reference = [ref](const std::vector<RefArray>& a) { return MapRef(a, ref); };
        out.push_back(std::move(sample));
      }
    }
    return out;
  };
  return info;
}

OpInfo Binary(std::string name, std::function<Array(const Array&, const Array&)> op,
              std::function<double(double, double)> ref, std::vector<DType> dtypes, double lo, double hi) {
  OpInfo info;
  info.name = name;
  info.dtypes = std::move(dtypes);
  info.tolerance = DefaultTolerance;
  info.samples = [op, ref, lo, hi](DType d, std::mt19937_64& rng) {
    std::vector<Sample> out;
    for (const Shape& s : ElementwiseShapes()) {
      Sample sample;
      sample.description = ShapedArray{s, d}.str();
      sample.args = {RandomArray(rng, s, d, lo, hi), RandomArray(rng, s, d, lo, hi)};
      sample.op = [op](const std::vector<Array>& a) { return std::vector<Array>{op(a[0], a[1])}; };
      sample.reference = [ref](const std::vector<RefArray>& a) {
        RefArray r{a[0].shape, std::vector<double>(a[0].data.size())};
        for (size_t i = 0; i < r.data.size(); ++i) r.data[i] = ref(a[0].data[i], a[1].data[i]);
        return std::vector<RefArray>{r};
      };
      out.push_back(std::move(sample));
    }
    return out;
  };
  return info;
}

}  // namespace jx::opinfo
