// opinfo records for the random family: threefry2x32 and random_bits against a naive
// reference: Random123's generic Threefry loop (round r rotates by R[r % 8], key injection
// every 4 rounds) and JAX's random_bits schemes spelled out with explicit counter arrays.
#include <cstring>

#include "opinfo.h"

namespace jx::opinfo::random_opinfo {
namespace {

void RefThreefry(uint32_t k0, uint32_t k1, uint32_t& x0, uint32_t& x1) {
  static constexpr int kRot[8] = {13, 15, 26, 6, 17, 29, 16, 24};
  const uint32_t ks[3] = {k0, k1, k0 ^ k1 ^ 0x1BD11BDAu};
  x0 += ks[0];
  x1 += ks[1];
  for (int r = 0; r < 20; ++r) {
    x0 += x1;
    x1 = (x1 << kRot[r % 8]) | (x1 >> (32 - kRot[r % 8]));
    x1 ^= x0;
    if (r % 4 == 3) {
      const uint32_t s = static_cast<uint32_t>(r / 4 + 1);
      x0 += ks[s % 3];
      x1 += ks[(s + 1) % 3] + s;
    }
  }
}

uint32_t U(double v) { return static_cast<uint32_t>(v); }

Array RandomU32(std::mt19937_64& rng, const Shape& shape) { return RandomArray(rng, shape, uint32, 0, 4294967295.0); }

JX_OPINFO(threefry2x32) {
  OpInfo info;
  info.name = "threefry2x32";
  info.dtypes = {uint32};
  info.differentiable = false;
  info.tolerance = DefaultTolerance;
  info.samples = [](DType, std::mt19937_64& rng) {
    std::vector<Sample> out;
    for (const Shape& s : ElementwiseShapes()) {
      for (bool batched_keys : {false, true}) {
        Sample sample;
        const Shape ks = batched_keys ? s : Shape{};
        sample.description = StrCat("keys ", ShapedArray{ks, uint32}.str(), " counters ", ShapedArray{s, uint32}.str());
        sample.args = {RandomU32(rng, ks), RandomU32(rng, ks), RandomU32(rng, s), RandomU32(rng, s)};
        sample.out_dtypes = {uint32, uint32};
        sample.op = [](const std::vector<Array>& a) {
          auto [y0, y1] = lax::threefry2x32(a[0], a[1], a[2], a[3]);
          return std::vector<Array>{y0, y1};
        };
        sample.reference = [](const std::vector<RefArray>& a) {
          RefArray y0{a[2].shape, a[2].data}, y1{a[3].shape, a[3].data};
          for (size_t i = 0; i < y0.data.size(); ++i) {
            const size_t k = a[0].data.size() == 1 && a[0].shape.empty() ? 0 : i;
            uint32_t x0 = U(a[2].data[i]), x1 = U(a[3].data[i]);
            RefThreefry(U(a[0].data[k]), U(a[1].data[k]), x0, x1);
            y0.data[i] = x0;
            y1.data[i] = x1;
          }
          return std::vector<RefArray>{y0, y1};
        };
        out.push_back(std::move(sample));
      }
    }
    return out;
  };
  return info;
}

// JAX's threefry_random_bits, literally: the original scheme hashes iota(n) split in halves
// (padded to even) and views the words; the partitionable one hashes (i >> 32, i).
std::vector<double> RefRandomBits(uint32_t k0, uint32_t k1, int bits, int64_t size, bool partitionable) {
  std::vector<double> out(static_cast<size_t>(size));
  if (partitionable) {
    for (int64_t i = 0; i < size; ++i) {
      uint32_t hi = static_cast<uint32_t>(static_cast<uint64_t>(i) >> 32), lo = static_cast<uint32_t>(i);
      RefThreefry(k0, k1, hi, lo);
      if (bits == 64) {
        out[static_cast<size_t>(i)] = static_cast<double>((uint64_t{hi} << 32) | lo);
      } else {
        const uint32_t x = hi ^ lo;
        out[static_cast<size_t>(i)] = bits == 32 ? x : bits == 16 ? static_cast<uint16_t>(x) : static_cast<uint8_t>(x);
      }
    }
    return out;
  }
  const int64_t n = (bits * size + 31) / 32;
  std::vector<uint32_t> counts(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) counts[static_cast<size_t>(i)] = static_cast<uint32_t>(i);
  if (n % 2 == 1) counts.push_back(0);
  const size_t half = counts.size() / 2;
  std::vector<uint32_t> words(counts.size());
  for (size_t i = 0; i < half; ++i) {
    uint32_t a = counts[i], b = counts[half + i];
    RefThreefry(k0, k1, a, b);
    words[i] = a;
    words[half + i] = b;
  }
  words.resize(static_cast<size_t>(n));
  for (int64_t i = 0; i < size; ++i) {
    const size_t k = static_cast<size_t>(i);
    if (bits == 64) {
      out[k] = static_cast<double>((uint64_t{words[k]} << 32) | words[static_cast<size_t>(size) + k]);
    } else if (bits == 32) {
      out[k] = words[k];
    } else {
      const int per = 32 / bits;
      const uint32_t w = words[k / static_cast<size_t>(per)];
      out[k] = (w >> (bits * static_cast<int>(k % static_cast<size_t>(per)))) & ((1u << bits) - 1);
    }
  }
  return out;
}

JX_OPINFO(random_bits) {
  OpInfo info;
  info.name = "random_bits";
  info.dtypes = {uint32};
  info.differentiable = false;
  info.tolerance = DefaultTolerance;
  info.samples = [](DType, std::mt19937_64& rng) {
    std::vector<Sample> out;
    const std::vector<Shape> shapes = {{}, {0}, {7}, {3, 5}, {2, 0, 3}, {70001}};
    for (int bits : {8, 16, 32, 64}) {
      for (bool part : {false, true}) {
        for (const Shape& s : shapes) {
          Sample sample;
          const DType out_dtype = bits == 8 ? uint8 : bits == 16 ? uint16 : bits == 32 ? uint32 : uint64;
          sample.description = StrCat("bits ", bits, " shape ", ShapeToString(s), part ? " partitionable" : " original");
          sample.args = {RandomU32(rng, {2})};
          sample.out_dtypes = {out_dtype};
          sample.op = [bits, s, part](const std::vector<Array>& a) {
            return std::vector<Array>{lax::random_bits(a[0], bits, s, part)};
          };
          sample.reference = [bits, s, part](const std::vector<RefArray>& a) {
            return std::vector<RefArray>{
                RefArray{s, RefRandomBits(U(a[0].data[0]), U(a[0].data[1]), bits, NumElements(s), part)}};
          };
          out.push_back(std::move(sample));
        }
      }
    }
    return out;
  };
  return info;
}

}  // namespace
}  // namespace jx::opinfo::random_opinfo
