// opinfo records for dot_general: eager vs a naive float64 contraction over explicit loops
// (output index x contraction index), across dimension numbers that exercise every GEMM
// canonicalization (batch dims in the middle, contracting dim first, several contracting
// dims, transposed operands, outer products, empty and 0-d results, the parallel paths).
#include <algorithm>
#include <cmath>
#include <optional>

#include "opinfo.h"

namespace jx::opinfo {

// Tolerances for contractions: the error of a K-term sum scales with K * eps * max|term|,
// not with |result| (cancellation), hence the absolute terms.
Tolerance ContractionTolerance(DType d) {
  switch (d) {
    case DType::kFloat16:
      return {2e-3, 2e-3};
    case DType::kBFloat16:
      return {1.6e-2, 1.6e-2};
    case DType::kFloat32:
      return {1e-5, 1e-4};
    case DType::kFloat64:
      return {1e-12, 1e-11};
    default:
      return {0, 0};
  }
}

// Values for contraction samples: small integers for integer dtypes (no overflow), [-2, 2]
// for floats, a coin for bool.
Array ContractionArg(std::mt19937_64& rng, const Shape& shape, DType d) {
  if (IsUnsignedInt(d)) return RandomArray(rng, shape, d, 0, 3);
  if (IsFloating(d)) return RandomArray(rng, shape, d, -2, 2);
  return RandomArray(rng, shape, d, -3, 3);
}

// An exact integer sum as the GEMM/XLA result of integer dtype d: two's complement
// wrap-around to d's width. Other dtypes pass through.
double WrapToDType(double sum, DType d) {
  if (!IsInteger(d) || ItemSize(d) == 8) return sum;
  const int bits = static_cast<int>(ItemSize(d) * 8);
  const int64_t mask = (int64_t{1} << bits) - 1;
  int64_t v = static_cast<int64_t>(std::llround(sum)) & mask;
  if (IsSignedInt(d) && v >= (int64_t{1} << (bits - 1))) v -= int64_t{1} << bits;
  return static_cast<double>(v);
}

// A wider result dtype JAX accepts as preferred_element_type for inputs of dtype d.
std::optional<DType> WiderPreferred(DType d) {
  switch (d) {
    case DType::kBool:
      return int32;
    case DType::kInt8:
      return int32;
    case DType::kInt32:
      return int64;
    case DType::kUInt8:
      return uint32;
    case DType::kFloat16:
    case DType::kBFloat16:
      return float32;
    case DType::kFloat32:
      return float64;
    default:
      return std::nullopt;
  }
}

}  // namespace jx::opinfo

namespace jx::opinfo::dot_opinfo {
namespace {

struct DotCase {
  std::string name;
  Shape lhs, rhs;
  lax::DotDimensionNumbers dn;
};

void Advance(std::vector<int64_t>& idx, const Shape& sizes, bool* done) {
  for (int i = static_cast<int>(sizes.size()) - 1; i >= 0; --i) {
    if (++idx[i] < sizes[i]) return;
    idx[i] = 0;
  }
  *done = true;
}

// The naive reference: for every output index (batch, lhs free, rhs free), for every
// contraction index, accumulate lhs * rhs in float64.
RefArray NaiveDotGeneral(const RefArray& l, const RefArray& r, const lax::DotDimensionNumbers& dn, DType out_dtype) {
  auto free_dims = [](int64_t rank, const std::vector<int64_t>& a, const std::vector<int64_t>& b) {
    std::vector<int64_t> out;
    for (int64_t d = 0; d < rank; ++d) {
      if (std::find(a.begin(), a.end(), d) == a.end() && std::find(b.begin(), b.end(), d) == b.end()) out.push_back(d);
    }
    return out;
  };
  const auto lf = free_dims(static_cast<int64_t>(l.shape.size()), dn.lhs_batch_dims, dn.lhs_contracting_dims);
  const auto rf = free_dims(static_cast<int64_t>(r.shape.size()), dn.rhs_batch_dims, dn.rhs_contracting_dims);
  Shape out_shape, csizes;
  for (int64_t d : dn.lhs_batch_dims) out_shape.push_back(l.shape[d]);
  for (int64_t d : lf) out_shape.push_back(l.shape[d]);
  for (int64_t d : rf) out_shape.push_back(r.shape[d]);
  for (int64_t d : dn.lhs_contracting_dims) csizes.push_back(l.shape[d]);
  RefArray out{out_shape, std::vector<double>(static_cast<size_t>(NumElements(out_shape)))};
  if (out.data.empty()) return out;
  const size_t nb = dn.lhs_batch_dims.size();
  std::vector<int64_t> oi(out_shape.size(), 0);
  int64_t flat = 0;
  for (bool done = false; !done; Advance(oi, out_shape, &done), ++flat) {
    std::vector<int64_t> li(l.shape.size()), ri(r.shape.size());
    for (size_t b = 0; b < nb; ++b) {
      li[dn.lhs_batch_dims[b]] = oi[b];
      ri[dn.rhs_batch_dims[b]] = oi[b];
    }
    for (size_t j = 0; j < lf.size(); ++j) li[lf[j]] = oi[nb + j];
    for (size_t j = 0; j < rf.size(); ++j) ri[rf[j]] = oi[nb + lf.size() + j];
    double sum = 0;
    if (NumElements(csizes) > 0) {
      std::vector<int64_t> ci(csizes.size(), 0);
      for (bool cdone = false; !cdone; Advance(ci, csizes, &cdone)) {
        for (size_t c = 0; c < ci.size(); ++c) {
          li[dn.lhs_contracting_dims[c]] = ci[c];
          ri[dn.rhs_contracting_dims[c]] = ci[c];
        }
        sum += l.at(li) * r.at(ri);
      }
    }
    out.data[static_cast<size_t>(flat)] = IsBool(out_dtype) ? (sum != 0 ? 1.0 : 0.0) : WrapToDType(sum, out_dtype);
  }
  return out;
}

std::vector<DotCase> DotCases() {
  using DN = lax::DotDimensionNumbers;
  return {
      {"matmul", {3, 4}, {4, 5}, DN{{1}, {0}, {}, {}}},
      {"vector.vector", {7}, {7}, DN{{0}, {0}, {}, {}}},
      {"matrix.vector", {3, 4}, {4}, DN{{1}, {0}, {}, {}}},
      {"vector.matrix", {4}, {4, 5}, DN{{0}, {0}, {}, {}}},
      {"batched matmul", {2, 3, 4}, {2, 4, 5}, DN{{2}, {1}, {0}, {0}}},
      {"batch dim in the middle", {3, 2, 4}, {4, 2, 5}, DN{{2}, {0}, {1}, {1}}},
      {"contracting dim first", {4, 3}, {4, 5}, DN{{0}, {0}, {}, {}}},
      {"rhs transposed", {3, 4}, {5, 4}, DN{{1}, {1}, {}, {}}},
      {"both transposed", {4, 3}, {5, 4}, DN{{0}, {1}, {}, {}}},
      {"two contracting dims", {2, 3, 4}, {4, 3, 5}, DN{{1, 2}, {1, 0}, {}, {}}},
      {"two batch dims, batch last", {3, 4, 2, 2}, {2, 4, 2, 5}, DN{{1}, {1}, {2, 3}, {0, 2}}},
      {"free dims split by contracting", {2, 4, 3}, {4, 5}, DN{{1}, {0}, {}, {}}},
      {"outer product", {3}, {4}, DN{{}, {}, {}, {}}},
      {"batched outer product", {2, 3}, {2, 4}, DN{{}, {}, {0}, {0}}},
      {"batch only (elementwise)", {6}, {6}, DN{{}, {}, {0}, {0}}},
      {"empty rows", {0, 4}, {4, 5}, DN{{1}, {0}, {}, {}}},
      {"empty contraction", {3, 0}, {0, 5}, DN{{1}, {0}, {}, {}}},
      {"empty batch", {0, 3, 4}, {0, 4, 2}, DN{{2}, {1}, {0}, {0}}},
      {"parallel batch in the middle", {70, 3, 80}, {80, 3, 60}, DN{{2}, {0}, {1}, {1}}},
      {"parallel split", {130, 96}, {96, 150}, DN{{1}, {0}, {}, {}}},
      {"parallel transposed lhs", {96, 130}, {96, 140}, DN{{0}, {0}, {}, {}}},
  };
}

JX_OPINFO(dot_general) {
  OpInfo info;
  info.name = "dot_general";
  info.dtypes = {bool_, int8, int32, int64, uint8, uint32, float16, bfloat16, float32, float64};
  info.tolerance = ContractionTolerance;
  info.samples = [](DType d, std::mt19937_64& rng) {
    std::vector<Sample> out;
    for (const DotCase& c : DotCases()) {
      const Array lhs = ContractionArg(rng, c.lhs, d), rhs = ContractionArg(rng, c.rhs, d);
      // (precision, preferred_element_type) variants: the params ride through every
      // transform and target; precision changes no numbers on the CPU, so the reference is
      // the same.
      std::vector<std::pair<std::optional<lax::PrecisionPair>, std::optional<DType>>> variants = {{}};
      if (WiderPreferred(d) && c.lhs.size() == 2 && c.rhs.size() == 2) variants.push_back({{}, WiderPreferred(d)});
      if (IsInteger(d) && c.name == "matmul") variants.push_back({{}, float32});  // integer -> floating
      if (c.name == "matmul" || c.name == "batched matmul") {
        using Prec = lax::Precision;
        variants.push_back({lax::PrecisionPair{Prec::kHighest, Prec::kHighest}, std::nullopt});
        variants.push_back({lax::PrecisionPair{Prec::kHigh, Prec::kDefault}, WiderPreferred(d)});
      }
      for (const auto& [precision, pref] : variants) {
        Sample s;
        s.description = StrCat(c.name, ": ", ShapedArray{c.lhs, d}.str(), " x ", ShapedArray{c.rhs, d}.str(),
                               pref ? StrCat(" preferred ", dtype_name(*pref)) : "",
                               precision ? StrCat(" precision ", lax::PrecisionName((*precision)[0]), ",",
                                                  lax::PrecisionName((*precision)[1]))
                                         : "");
        s.args = {lhs, rhs};
        const lax::DotDimensionNumbers dn = c.dn;
        s.op = [dn, precision, pref](const std::vector<Array>& a) {
          return std::vector<Array>{lax::dot_general(a[0], a[1], dn, precision, pref)};
        };
        const DType out_dtype = pref.value_or(d);
        s.reference = [dn, out_dtype](const std::vector<RefArray>& a) {
          return std::vector<RefArray>{NaiveDotGeneral(a[0], a[1], dn, out_dtype)};
        };
        s.out_dtypes = {out_dtype};
        out.push_back(std::move(s));
      }
    }
    // One sample on inputs produced by transposes (the op sees derived buffers).
    const Array lhs = ContractionArg(rng, {5, 6}, d), rhs = ContractionArg(rng, {6, 4}, d);
    Sample s;
    s.description = StrCat("matmul of transposed-derived inputs ", dtype_name(d));
    s.args = {NonContiguousCopy(lhs), NonContiguousCopy(rhs)};
    s.op = [](const std::vector<Array>& a) { return std::vector<Array>{lax::dot(a[0], a[1])}; };
    s.reference = [d](const std::vector<RefArray>& a) {
      return std::vector<RefArray>{NaiveDotGeneral(a[0], a[1], lax::DotDimensionNumbers{{1}, {0}, {}, {}}, d)};
    };
    s.out_dtypes = {d};
    out.push_back(std::move(s));
    return out;
  };
  return info;
}

}  // namespace
}  // namespace jx::opinfo::dot_opinfo
