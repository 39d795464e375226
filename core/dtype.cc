#include "jx/core/dtype.h"

#include <array>
#include <bit>
#include <cmath>
#include <ostream>

namespace jx {
namespace {

struct DTypeNames {
  std::string_view name;
  std::string_view short_name;
};
constexpr std::array<DTypeNames, kNumDTypes> kNames = {{
    {"bool", "bool"},       {"int8", "i8"},    {"int16", "i16"},    {"int32", "i32"},
    {"int64", "i64"},       {"uint8", "u8"},   {"uint16", "u16"},   {"uint32", "u32"},
    {"uint64", "u64"},      {"float16", "f16"}, {"bfloat16", "bf16"}, {"float32", "f32"},
    {"float64", "f64"},
}};

// JAX's type promotion lattice (jax/_src/dtypes.py), without complex and fp8 types. Nodes are
// the 13 dtypes plus the two weak nodes i* (weak int) and f* (weak float). Each row lists a
// node's direct successors; promotion is the least upper bound.
constexpr int kWeakInt = kNumDTypes;
constexpr int kWeakFloat = kNumDTypes + 1;
constexpr int kNumNodes = kNumDTypes + 2;
constexpr int N(DType d) { return static_cast<int>(d); }

struct Edge {
  int from, to;
};
constexpr Edge kLatticeEdges[] = {
    {N(DType::kBool), kWeakInt},
    {kWeakInt, N(DType::kUInt8)},       {kWeakInt, N(DType::kInt8)},
    {N(DType::kUInt8), N(DType::kInt16)}, {N(DType::kUInt8), N(DType::kUInt16)},
    {N(DType::kUInt16), N(DType::kInt32)}, {N(DType::kUInt16), N(DType::kUInt32)},
    {N(DType::kUInt32), N(DType::kInt64)}, {N(DType::kUInt32), N(DType::kUInt64)},
    {N(DType::kUInt64), kWeakFloat},
    {N(DType::kInt8), N(DType::kInt16)},  {N(DType::kInt16), N(DType::kInt32)},
    {N(DType::kInt32), N(DType::kInt64)}, {N(DType::kInt64), kWeakFloat},
    {kWeakFloat, N(DType::kBFloat16)},    {kWeakFloat, N(DType::kFloat16)},
    {N(DType::kBFloat16), N(DType::kFloat32)}, {N(DType::kFloat16), N(DType::kFloat32)},
    {N(DType::kFloat32), N(DType::kFloat64)},
};

// upper[a][b]: b is reachable from a (a <= b), reflexive and transitive.
struct Closure {
  bool upper[kNumNodes][kNumNodes] = {};
  constexpr Closure() {
    for (int i = 0; i < kNumNodes; ++i) upper[i][i] = true;
    for (const Edge& e : kLatticeEdges) upper[e.from][e.to] = true;
    for (int k = 0; k < kNumNodes; ++k)
      for (int i = 0; i < kNumNodes; ++i)
        for (int j = 0; j < kNumNodes; ++j)
          if (upper[i][k] && upper[k][j]) upper[i][j] = true;
  }
};
constexpr Closure kClosure;

int LeastUpperBound(int a, int b) {
  int best = -1;
  for (int c = 0; c < kNumNodes; ++c) {
    if (!kClosure.upper[a][c] || !kClosure.upper[b][c]) continue;
    if (best < 0 || kClosure.upper[c][best]) best = c;
  }
  return best;  // The lattice has a top (f64), so best >= 0.
}

int NodeOf(TypeAndWeak t) {
  if (!t.weak || t.dtype == DType::kBool) return N(t.dtype);
  return IsFloating(t.dtype) ? kWeakFloat : kWeakInt;
}

}  // namespace

std::string_view dtype_name(DType d) { return kNames[N(d)].name; }
std::string_view dtype_short_name(DType d) { return kNames[N(d)].short_name; }
std::ostream& operator<<(std::ostream& os, DType d) { return os << dtype_name(d); }

TypeAndWeak PromoteWeak(TypeAndWeak a, TypeAndWeak b) {
  if (a.dtype == b.dtype) return {a.dtype, a.weak && b.weak};
  const int lub = LeastUpperBound(NodeOf(a), NodeOf(b));
  if (lub == kWeakInt) return {DType::kInt32, true};
  if (lub == kWeakFloat) {
    // f* is a weak float. A weak operand brings the default float (float32); two strong
    // integers meet here only for uint64 with a signed int, where JAX (x64) gives a weak
    // float64.
    const bool any_weak = a.weak || b.weak;
    return {any_weak ? DType::kFloat32 : DType::kFloat64, true};
  }
  return {static_cast<DType>(lub), false};
}

DType promote_types(DType a, DType b) { return PromoteWeak({a, false}, {b, false}).dtype; }

// IEEE binary16 <-> binary32 with round-to-nearest-even.
float16_t::float16_t(float f) {
  const uint32_t x = std::bit_cast<uint32_t>(f);
  const uint32_t sign = (x >> 16) & 0x8000u;
  const uint32_t abs = x & 0x7fffffffu;
  uint16_t h;
  if (abs >= 0x7f800000u) {  // inf or nan
    h = static_cast<uint16_t>(abs > 0x7f800000u ? 0x7e00u : 0x7c00u);
  } else if (abs >= 0x477ff000u) {  // rounds to >= 65520: overflow to inf
    h = 0x7c00u;
  } else if (abs < 0x38800000u) {  // subnormal half (or zero)
    const float af = std::bit_cast<float>(abs);
    // Scale so that the half subnormal ulp (2^-24) becomes 1, then round to nearest even.
    h = static_cast<uint16_t>(std::nearbyint(af * 16777216.0f));
  } else {
    const uint32_t mant_odd = (abs >> 13) & 1u;
    const uint32_t rounded = abs + 0xc8000fffu + mant_odd;  // rebias exponent (-112<<23) + round
    h = static_cast<uint16_t>(rounded >> 13);
  }
  bits = static_cast<uint16_t>(h | sign);
}

float16_t::operator float() const {
  const uint32_t sign = static_cast<uint32_t>(bits & 0x8000u) << 16;
  const uint32_t exp = (bits >> 10) & 0x1fu;
  const uint32_t mant = bits & 0x3ffu;
  if (exp == 0) {
    const float v = static_cast<float>(mant) * (1.0f / 16777216.0f);
    return sign ? -v : v;
  }
  uint32_t x;
  if (exp == 0x1f) x = sign | 0x7f800000u | (mant << 13);
  else x = sign | ((exp + 112) << 23) | (mant << 13);
  return std::bit_cast<float>(x);
}

bfloat16_t::bfloat16_t(float f) {
  const uint32_t x = std::bit_cast<uint32_t>(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) {
    bits = static_cast<uint16_t>((x >> 16) | 0x40u);  // quiet nan
    return;
  }
  const uint32_t rounding = 0x7fffu + ((x >> 16) & 1u);
  bits = static_cast<uint16_t>((x + rounding) >> 16);
}

bfloat16_t::operator float() const { return std::bit_cast<float>(static_cast<uint32_t>(bits) << 16); }

double LoadAsDouble(DType d, const void* data, int64_t i) {
  switch (d) {
#define JX_LOAD(D, T) \
  case D: return static_cast<double>(static_cast<const T*>(data)[i]);
    JX_LOAD(DType::kBool, bool)
    JX_LOAD(DType::kInt8, int8_t)
    JX_LOAD(DType::kInt16, int16_t)
    JX_LOAD(DType::kInt32, int32_t)
    JX_LOAD(DType::kInt64, int64_t)
    JX_LOAD(DType::kUInt8, uint8_t)
    JX_LOAD(DType::kUInt16, uint16_t)
    JX_LOAD(DType::kUInt32, uint32_t)
    JX_LOAD(DType::kUInt64, uint64_t)
    JX_LOAD(DType::kFloat32, float)
    JX_LOAD(DType::kFloat64, double)
#undef JX_LOAD
    case DType::kFloat16: return static_cast<float>(static_cast<const float16_t*>(data)[i]);
    case DType::kBFloat16: return static_cast<float>(static_cast<const bfloat16_t*>(data)[i]);
  }
  return 0;
}

namespace {
template <typename T>
T SaturatingCast(double v) {
  if (std::isnan(v)) return T{0};
  return static_cast<T>(v);
}
}  // namespace

void StoreFromDouble(DType d, void* data, int64_t i, double v) {
  switch (d) {
    case DType::kBool: static_cast<bool*>(data)[i] = v != 0; return;
#define JX_STORE(D, T) \
  case D: static_cast<T*>(data)[i] = SaturatingCast<T>(v); return;
    JX_STORE(DType::kInt8, int8_t)
    JX_STORE(DType::kInt16, int16_t)
    JX_STORE(DType::kInt32, int32_t)
    JX_STORE(DType::kInt64, int64_t)
    JX_STORE(DType::kUInt8, uint8_t)
    JX_STORE(DType::kUInt16, uint16_t)
    JX_STORE(DType::kUInt32, uint32_t)
    JX_STORE(DType::kUInt64, uint64_t)
#undef JX_STORE
    case DType::kFloat32: static_cast<float*>(data)[i] = static_cast<float>(v); return;
    case DType::kFloat64: static_cast<double*>(data)[i] = v; return;
    case DType::kFloat16: static_cast<float16_t*>(data)[i] = float16_t(static_cast<float>(v)); return;
    case DType::kBFloat16: static_cast<bfloat16_t*>(data)[i] = bfloat16_t(static_cast<float>(v)); return;
  }
}

}  // namespace jx
