// opinfo records for the slicing family: slice, dynamic_slice, dynamic_update_slice,
// concatenate, pad, gather, scatter, scatter_add. References are naive index loops on float64
// that implement XLA's semantics directly (clamping, fill, dropped windows).
#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>

#include "opinfo.h"

namespace jx::opinfo::slicing_opinfo {
namespace {

using lax::GatherDimensionNumbers;
using lax::GatherScatterMode;
using lax::ScatterDimensionNumbers;

// Calls fn(idx) for every index of shape, row-major (a template: fn runs per element).
template <typename F>
void ForAllIndices(const Shape& shape, const F& fn) {
  if (NumElements(shape) == 0) return;
  std::vector<int64_t> idx(shape.size(), 0);
  while (true) {
    fn(idx);
    if (shape.empty()) return;
    size_t d = shape.size();
    while (true) {
      --d;
      if (++idx[d] < shape[d]) break;
      idx[d] = 0;
      if (d == 0) return;
    }
  }
}

bool Has(const std::vector<int64_t>& v, int64_t x) { return std::find(v.begin(), v.end(), x) != v.end(); }

Array Rand(std::mt19937_64& rng, const Shape& shape, DType d) {
  return RandomArray(rng, shape, d, IsUnsignedInt(d) ? 0 : -5, 5);
}

Array RandIndex(std::mt19937_64& rng, const Shape& shape, DType d, int64_t lo, int64_t hi) {
  std::uniform_int_distribution<int64_t> dist(lo, hi);
  return FillArray(shape, d, [&](int64_t) { return static_cast<double>(dist(rng)); });
}

// Integer-valued data (any dtype): float sums of such values are exact, so scatter_add's
// samples check the indexing exactly whatever the summation order.
Array RandIntegral(std::mt19937_64& rng, const Shape& shape, DType d) {
  if (IsBool(d)) return RandomArray(rng, shape, d);
  return RandIndex(rng, shape, d, IsUnsignedInt(d) ? 0 : -5, 5);
}

// Wraps an exact integer sum into dtype d's range (two's complement), as integer adds do.
double WrapInteger(double v, DType d) {
  if (!IsInteger(d) || ItemSize(d) == 8) return v;
  const double m = std::ldexp(1.0, static_cast<int>(8 * ItemSize(d)));
  double r = std::fmod(v, m);
  if (r < 0) r += m;
  if (IsSignedInt(d) && r >= m / 2) r -= m;
  return r;
}

OpInfo MakeInfo(std::string name, std::vector<DType> dtypes,
                std::function<std::vector<Sample>(DType, std::mt19937_64&)> samples) {
  OpInfo info;
  info.name = std::move(name);
  info.dtypes = std::move(dtypes);
  info.samples = std::move(samples);
  info.tolerance = DefaultTolerance;
  return info;
}

std::string ModeStr(GatherScatterMode m) {
  return m == GatherScatterMode::kClip ? "clip" : m == GatherScatterMode::kFillOrDrop ? "fill" : "promise";
}

JX_OPINFO(slice) {
  return MakeInfo("slice", kAllDTypes, [](DType d, std::mt19937_64& rng) {
    struct Case {
      Shape in;
      std::vector<int64_t> start, limit, strides;
    };
    const std::vector<Case> cases = {{{5}, {1}, {4}, {}},
                                     {{5}, {0}, {5}, {2}},
                                     {{3, 4}, {1, 0}, {3, 3}, {1, 2}},
                                     {{2, 3, 4}, {0, 1, 1}, {2, 3, 4}, {2, 2, 3}},
                                     {{0, 3}, {0, 1}, {0, 3}, {}},
                                     {{}, {}, {}, {}},
                                     {{4, 5}, {2, 2}, {2, 5}, {}},
                                     {{3, 4, 5}, {1, 0, 0}, {3, 4, 5}, {}},
                                     {{300, 300}, {10, 20}, {290, 280}, {}},
                                     {{300, 300}, {0, 1}, {300, 300}, {3, 2}}};
    std::vector<Sample> out;
    for (const Case& c : cases) {
      Sample s;
      Array x = Rand(rng, c.in, d);
      s.description = StrCat(x.aval().str(), " start=", ShapeToString(c.start), " limit=", ShapeToString(c.limit),
                             " strides=", ShapeToString(c.strides));
      s.out_dtypes = {d};
      s.args = {x};
      s.op = [c](const std::vector<Array>& a) { return std::vector<Array>{lax::slice(a[0], c.start, c.limit, c.strides)}; };
      s.reference = [c](const std::vector<RefArray>& a) {
        Shape out_shape;
        for (size_t k = 0; k < c.in.size(); ++k) {
          const int64_t st = c.strides.empty() ? 1 : c.strides[k];
          out_shape.push_back((c.limit[k] - c.start[k] + st - 1) / st);
        }
        RefArray r{out_shape, std::vector<double>(static_cast<size_t>(NumElements(out_shape)))};
        ForAllIndices(out_shape, [&](const std::vector<int64_t>& idx) {
          std::vector<int64_t> in(idx.size());
          for (size_t k = 0; k < idx.size(); ++k) in[k] = c.start[k] + idx[k] * (c.strides.empty() ? 1 : c.strides[k]);
          r.at(idx) = a[0].at(in);
        });
        return std::vector<RefArray>{r};
      };
      out.push_back(std::move(s));
    }
    return out;
  });
}

// XLA's clamping of a (JAX-normalized) start index.
int64_t ClampStart(int64_t s, int64_t dim, int64_t size) {
  if (s < 0) s += dim;  // JAX wraps negative indices once
  return std::clamp<int64_t>(s, 0, dim - size);
}

JX_OPINFO(dynamic_slice) {
  return MakeInfo("dynamic_slice", kAllDTypes, [](DType d, std::mt19937_64& rng) {
    struct Case {
      Shape in;
      std::vector<int64_t> starts, sizes;
      DType index_dtype;
    };
    const std::vector<Case> cases = {{{5}, {2}, {3}, int32},         {{5}, {4}, {3}, int32},
                                     {{5}, {-1}, {1}, int32},        {{5}, {-10}, {2}, int64},
                                     {{3, 4}, {1, 2}, {2, 2}, int64}, {{3, 4}, {7, -2}, {2, 3}, int8},
                                     {{}, {}, {}, int32},            {{0, 3}, {0, 1}, {0, 2}, int32},
                                     {{4, 5}, {3, 9}, {4, 5}, uint8}, {{300, 400}, {5, 100}, {250, 260}, int32}};
    std::vector<Sample> out;
    for (const Case& c : cases) {
      Sample s;
      Array x = Rand(rng, c.in, d);
      s.description = StrCat(x.aval().str(), " starts=", ShapeToString(c.starts), " (", dtype_name(c.index_dtype),
                             ") sizes=", ShapeToString(c.sizes));
      s.out_dtypes = {d};
      s.args = {x};
      for (int64_t st : c.starts) s.args.push_back(Array::Scalar(static_cast<double>(st), c.index_dtype));
      s.op = [c](const std::vector<Array>& a) {
        std::vector<Array> starts(a.begin() + 1, a.end());
        return std::vector<Array>{lax::dynamic_slice(a[0], starts, c.sizes)};
      };
      s.reference = [c](const std::vector<RefArray>& a) {
        RefArray r{c.sizes, std::vector<double>(static_cast<size_t>(NumElements(c.sizes)))};
        std::vector<int64_t> st(c.in.size());
        for (size_t k = 0; k < st.size(); ++k) st[k] = ClampStart(c.starts[k], c.in[k], c.sizes[k]);
        ForAllIndices(c.sizes, [&](const std::vector<int64_t>& idx) {
          std::vector<int64_t> in(idx.size());
          for (size_t k = 0; k < idx.size(); ++k) in[k] = st[k] + idx[k];
          r.at(idx) = a[0].at(in);
        });
        return std::vector<RefArray>{r};
      };
      out.push_back(std::move(s));
    }
    return out;
  });
}

JX_OPINFO(dynamic_update_slice) {
  return MakeInfo("dynamic_update_slice", kAllDTypes, [](DType d, std::mt19937_64& rng) {
    struct Case {
      Shape in, upd;
      std::vector<int64_t> starts;
    };
    const std::vector<Case> cases = {{{5}, {2}, {4}},         {{5}, {2}, {1}},          {{3, 4}, {2, 2}, {1, -1}},
                                     {{}, {}, {}},            {{3, 4}, {0, 2}, {1, 1}}, {{3, 4}, {3, 4}, {5, 5}},
                                     {{2, 3, 4}, {1, 3, 2}, {1, 0, 1}}, {{300, 400}, {200, 300}, {50, -150}}};
    std::vector<Sample> out;
    for (const Case& c : cases) {
      Sample s;
      Array x = Rand(rng, c.in, d);
      Array u = Rand(rng, c.upd, d);
      s.description = StrCat(x.aval().str(), " update ", u.aval().str(), " starts=", ShapeToString(c.starts));
      s.out_dtypes = {d};
      s.args = {x, u};
      for (int64_t st : c.starts) s.args.push_back(Array::Scalar(static_cast<double>(st), int32));
      s.op = [](const std::vector<Array>& a) {
        std::vector<Array> starts(a.begin() + 2, a.end());
        return std::vector<Array>{lax::dynamic_update_slice(a[0], a[1], starts)};
      };
      s.reference = [c](const std::vector<RefArray>& a) {
        RefArray r = a[0];
        std::vector<int64_t> st(c.in.size());
        for (size_t k = 0; k < st.size(); ++k) st[k] = ClampStart(c.starts[k], c.in[k], c.upd[k]);
        ForAllIndices(c.upd, [&](const std::vector<int64_t>& idx) {
          std::vector<int64_t> o(idx.size());
          for (size_t k = 0; k < idx.size(); ++k) o[k] = st[k] + idx[k];
          r.at(o) = a[1].at(idx);
        });
        return std::vector<RefArray>{r};
      };
      out.push_back(std::move(s));
    }
    return out;
  });
}

JX_OPINFO(concatenate) {
  return MakeInfo("concatenate", kAllDTypes, [](DType d, std::mt19937_64& rng) {
    struct Case {
      std::vector<Shape> shapes;
      int64_t dim;
    };
    const std::vector<Case> cases = {{{{2, 3}, {4, 3}}, 0},          {{{2, 3}, {2, 1}, {2, 0}}, 1},
                                     {{{5}, {0}, {3}}, 0},           {{{2, 3, 4}, {2, 2, 4}}, 1},
                                     {{{2, 3, 4}, {2, 3, 1}, {2, 3, 2}}, 2}, {{{0, 3}, {0, 2}}, 1},
                                     {{{4}}, 0},                     {{{300, 100}, {300, 150}}, 1},
                                     {{{200, 200}, {150, 200}}, 0}};
    std::vector<Sample> out;
    for (const Case& c : cases) {
      Sample s;
      std::string desc;
      for (const Shape& sh : c.shapes) {
        s.args.push_back(Rand(rng, sh, d));
        desc += s.args.back().aval().str() + " ";
      }
      s.description = StrCat(desc, "dimension=", c.dim);
      s.out_dtypes = {d};
      s.op = [c](const std::vector<Array>& a) { return std::vector<Array>{lax::concatenate(a, c.dim)}; };
      s.reference = [c](const std::vector<RefArray>& a) {
        Shape out_shape = a[0].shape;
        out_shape[static_cast<size_t>(c.dim)] = 0;
        for (const RefArray& r : a) out_shape[static_cast<size_t>(c.dim)] += r.shape[static_cast<size_t>(c.dim)];
        RefArray r{out_shape, std::vector<double>(static_cast<size_t>(NumElements(out_shape)))};
        ForAllIndices(out_shape, [&](const std::vector<int64_t>& idx) {
          std::vector<int64_t> in = idx;
          size_t k = 0;
          while (in[static_cast<size_t>(c.dim)] >= a[k].shape[static_cast<size_t>(c.dim)]) {
            in[static_cast<size_t>(c.dim)] -= a[k].shape[static_cast<size_t>(c.dim)];
            ++k;
          }
          r.at(idx) = a[k].at(in);
        });
        return std::vector<RefArray>{r};
      };
      out.push_back(std::move(s));
    }
    return out;
  });
}

JX_OPINFO(pad) {
  return MakeInfo("pad", kAllDTypes, [](DType d, std::mt19937_64& rng) {
    using Config = std::vector<std::array<int64_t, 3>>;
    struct Case {
      Shape in;
      Config config;
    };
    const std::vector<Case> cases = {{{5}, {{1, 2, 0}}},
                                     {{5}, {{-1, -2, 1}}},
                                     {{3, 4}, {{1, 0, 1}, {0, -1, 2}}},
                                     {{0}, {{1, 1, 0}}},
                                     {{0}, {{1, 1, 3}}},
                                     {{2, 3}, {{-2, 0, 0}, {0, 0, 0}}},
                                     {{}, {}},
                                     {{3}, {{0, 0, 0}}},
                                     {{3}, {{-3, 0, 0}}},
                                     {{4}, {{-3, -3, 2}}},
                                     {{2, 3, 4}, {{1, 1, 1}, {-1, 2, 0}, {0, 0, 2}}},
                                     {{250, 250}, {{2, 3, 0}, {-4, 5, 0}}}};
    std::vector<Sample> out;
    for (const Case& c : cases) {
      Sample s;
      Array x = Rand(rng, c.in, d);
      Array pv = Rand(rng, {}, d);
      std::string cfg;
      for (const auto& t : c.config) cfg += StrCat("(", t[0], ",", t[1], ",", t[2], ")");
      s.description = StrCat(x.aval().str(), " padding_config=", cfg);
      s.out_dtypes = {d};
      s.args = {x, pv};
      s.op = [c](const std::vector<Array>& a) { return std::vector<Array>{lax::pad(a[0], a[1], c.config)}; };
      s.reference = [c](const std::vector<RefArray>& a) {
        Shape out_shape;
        for (size_t k = 0; k < c.in.size(); ++k) {
          const auto& t = c.config[k];
          out_shape.push_back(t[0] + t[1] + c.in[k] + std::max<int64_t>(c.in[k] - 1, 0) * t[2]);
        }
        RefArray r{out_shape, std::vector<double>(static_cast<size_t>(NumElements(out_shape)), a[1].data[0])};
        // Scatter every operand element to its padded position, if inside the output.
        ForAllIndices(c.in, [&](const std::vector<int64_t>& idx) {
          std::vector<int64_t> o(idx.size());
          for (size_t k = 0; k < idx.size(); ++k) {
            o[k] = c.config[k][0] + idx[k] * (c.config[k][2] + 1);
            if (o[k] < 0 || o[k] >= out_shape[k]) return;
          }
          r.at(o) = a[0].at(idx);
        });
        return std::vector<RefArray>{r};
      };
      out.push_back(std::move(s));
    }
    return out;
  });
}

// JAX's default gather fill value for dtype d.
double DefaultFill(DType d) {
  if (IsFloating(d)) return std::numeric_limits<double>::quiet_NaN();
  if (IsBool(d)) return 1;
  switch (d) {
    case DType::kInt8: return -128;
    case DType::kInt16: return -32768;
    case DType::kInt32: return -2147483648.0;
    case DType::kInt64: return -9223372036854775808.0;
    case DType::kUInt8: return 255;
    case DType::kUInt16: return 65535;
    case DType::kUInt32: return 4294967295.0;
    default: return 18446744073709551615.0;
  }
}

// XLA gather on float64, one output element at a time.
RefArray GatherRef(const RefArray& x, const RefArray& ind, const GatherDimensionNumbers& dn,
                   const std::vector<int64_t>& ss, GatherScatterMode mode, double fill) {
  const size_t rank = x.shape.size();
  const size_t n = static_cast<size_t>(ind.shape.back());
  Shape batch(ind.shape.begin(), ind.shape.end() - 1);
  std::vector<int64_t> offsets;
  for (size_t d = 0; d < rank; ++d) {
    if (!Has(dn.collapsed_slice_dims, static_cast<int64_t>(d)) && !Has(dn.operand_batching_dims, static_cast<int64_t>(d))) {
      offsets.push_back(ss[d]);
    }
  }
  const size_t out_rank = offsets.size() + batch.size();
  Shape out_shape(out_rank);
  size_t bi = 0, oi = 0;
  for (size_t j = 0; j < out_rank; ++j) {
    out_shape[j] = Has(dn.offset_dims, static_cast<int64_t>(j)) ? offsets[oi++] : batch[bi++];
  }
  RefArray r{out_shape, std::vector<double>(static_cast<size_t>(NumElements(out_shape)))};
  // Index buffers reused across output elements (no allocation per element).
  std::vector<int64_t> bc, oc, start(rank), ii, in(rank);
  ForAllIndices(out_shape, [&](const std::vector<int64_t>& idx) {
    bc.clear();
    oc.clear();
    for (size_t j = 0; j < out_rank; ++j) (Has(dn.offset_dims, static_cast<int64_t>(j)) ? oc : bc).push_back(idx[j]);
    std::fill(start.begin(), start.end(), 0);
    bool ok = true;
    for (size_t k = 0; k < n; ++k) {
      ii = bc;
      ii.push_back(static_cast<int64_t>(k));
      const size_t dd = static_cast<size_t>(dn.start_index_map[k]);
      int64_t s = static_cast<int64_t>(ind.at(ii));
      const int64_t hi = x.shape[dd] - ss[dd];
      if (mode == GatherScatterMode::kFillOrDrop) {
        ok = ok && s >= 0 && s <= hi;
      } else {
        s = std::clamp<int64_t>(s, 0, hi);
      }
      start[dd] = s;
    }
    for (size_t j = 0; j < dn.operand_batching_dims.size(); ++j) {
      start[static_cast<size_t>(dn.operand_batching_dims[j])] = bc[static_cast<size_t>(dn.start_indices_batching_dims[j])];
    }
    if (!ok) {
      r.at(idx) = fill;
      return;
    }
    size_t w = 0;
    for (size_t dd = 0; dd < rank; ++dd) {
      const bool window = !Has(dn.collapsed_slice_dims, static_cast<int64_t>(dd)) &&
                          !Has(dn.operand_batching_dims, static_cast<int64_t>(dd));
      in[dd] = start[dd] + (window ? oc[w++] : 0);
    }
    r.at(idx) = x.at(in);
  });
  return r;
}

struct GatherCase {
  std::string name;
  Shape operand, indices;
  GatherDimensionNumbers dn;
  std::vector<int64_t> slice_sizes;
  int64_t lo, hi;  // index value range
};

std::vector<GatherCase> GatherCases() {
  return {
      {"take rows", {5, 3}, {4, 1}, {{1}, {0}, {0}}, {1, 3}, -2, 6},
      {"take rows, index batch 2-d", {6, 4}, {2, 3, 1}, {{2}, {0}, {0}}, {1, 4}, -1, 6},
      {"take rows, slice not collapsed", {5, 3}, {4, 1}, {{1, 2}, {}, {0}}, {1, 3}, 0, 5},
      {"2-d index", {4, 5, 6}, {3, 2}, {{1, 2}, {0}, {0, 2}}, {1, 3, 2}, -1, 5},
      {"offset dim first", {4, 5}, {2, 3, 1}, {{0}, {1}, {1}}, {4, 1}, -1, 5},
      {"take along axis 1", {3, 7, 4}, {5, 1}, {{0, 2}, {1}, {1}}, {3, 1, 4}, 0, 7},
      {"batching dims", {3, 5, 2}, {3, 4, 1}, {{2}, {1}, {1}, {0}, {0}}, {1, 1, 2}, -1, 5},
      {"empty indices", {5, 3}, {0, 1}, {{1}, {0}, {0}}, {1, 3}, 0, 4},
      {"scalar out", {5}, {1}, {{}, {0}, {0}}, {1}, -1, 5},
      {"partial window", {6, 8}, {3, 2}, {{1, 2}, {}, {0, 1}}, {2, 3}, -1, 7},
      {"large take rows", {1000, 64}, {2000, 1}, {{1}, {0}, {0}}, {1, 64}, -5, 1004},
      {"large scalar take", {5000}, {70000, 1}, {{}, {0}, {0}}, {1}, -5, 5004},
  };
}

JX_OPINFO(gather) {
  return MakeInfo("gather", kAllDTypes, [](DType d, std::mt19937_64& rng) {
    std::vector<Sample> out;
    const DType index_dtypes[] = {int32, int64, int16};
    int t = 0;
    for (const GatherCase& c : GatherCases()) {
      for (GatherScatterMode mode : {GatherScatterMode::kFillOrDrop, GatherScatterMode::kClip}) {
        for (bool explicit_fill : {false, true}) {
          if (explicit_fill && mode == GatherScatterMode::kClip) continue;
          Sample s;
          // The default fill is NaN: derivatives there are undefined (finite differences are NaN).
          s.derivatives_defined = explicit_fill || mode != GatherScatterMode::kFillOrDrop || !IsFloating(d);
          Array x = Rand(rng, c.operand, d);
          Array idx = RandIndex(rng, c.indices, index_dtypes[t++ % 3], c.lo, c.hi);
          const std::optional<double> fill = explicit_fill ? std::optional<double>(2) : std::nullopt;
          s.description = StrCat(c.name, ": ", x.aval().str(), " indices ", idx.aval().str(), " mode=", ModeStr(mode),
                                 explicit_fill ? " fill_value=2" : "");
          s.out_dtypes = {d};
          s.args = {x, idx};
          s.op = [c, mode, fill](const std::vector<Array>& a) {
            return std::vector<Array>{lax::gather(a[0], a[1], c.dn, c.slice_sizes, mode, fill)};
          };
          const double fill_ref = explicit_fill ? Array::Scalar(2, d).item<double>() : DefaultFill(d);
          s.reference = [c, mode, fill_ref](const std::vector<RefArray>& a) {
            return std::vector<RefArray>{GatherRef(a[0], a[1], c.dn, c.slice_sizes, mode, fill_ref)};
          };
          out.push_back(std::move(s));
        }
      }
    }
    return out;
  });
}

// XLA scatter on float64: updates applied in scatter-position order, windows that are not
// entirely in bounds dropped (kFillOrDrop) or start indices clamped (kClip).
// How a scatter combines an update with the operand element it lands on.
enum class Combine { kSet, kAdd, kMul, kMin, kMax };

RefArray ScatterRef(const RefArray& x, const RefArray& ind, const RefArray& upd, const ScatterDimensionNumbers& dn,
                    GatherScatterMode mode, Combine combine, DType dtype) {
  RefArray r = x;
  const size_t rank = x.shape.size();
  const size_t n = static_cast<size_t>(ind.shape.back());
  const Shape batch(ind.shape.begin(), ind.shape.end() - 1);
  std::vector<int64_t> win(rank, 1);
  Shape win_shape;
  size_t w = 0;
  for (size_t d = 0; d < rank; ++d) {
    if (Has(dn.inserted_window_dims, static_cast<int64_t>(d)) || Has(dn.operand_batching_dims, static_cast<int64_t>(d))) {
      continue;
    }
    win[d] = upd.shape[static_cast<size_t>(dn.update_window_dims[w++])];
    win_shape.push_back(win[d]);
  }
  // Index buffers reused across updates (no allocation per element).
  std::vector<int64_t> start(rank), ii, ui(upd.shape.size()), oi(rank);
  ForAllIndices(batch, [&](const std::vector<int64_t>& bc) {
    std::fill(start.begin(), start.end(), 0);
    bool ok = true;
    for (size_t k = 0; k < n; ++k) {
      ii = bc;
      ii.push_back(static_cast<int64_t>(k));
      const size_t dd = static_cast<size_t>(dn.scatter_dims_to_operand_dims[k]);
      int64_t s = static_cast<int64_t>(ind.at(ii));
      const int64_t hi = x.shape[dd] - win[dd];
      if (mode == GatherScatterMode::kClip) {
        s = std::clamp<int64_t>(s, 0, hi);
      } else {
        ok = ok && s >= 0 && s <= hi;
      }
      start[dd] = s;
    }
    for (size_t j = 0; j < dn.operand_batching_dims.size(); ++j) {
      start[static_cast<size_t>(dn.operand_batching_dims[j])] = bc[static_cast<size_t>(dn.scatter_indices_batching_dims[j])];
    }
    if (!ok) return;
    ForAllIndices(win_shape, [&](const std::vector<int64_t>& wc) {
      // Updates index: scatter coords at the non-window dims, window coords at the window dims.
      size_t bi = 0, wi = 0;
      for (size_t j = 0; j < ui.size(); ++j) ui[j] = Has(dn.update_window_dims, static_cast<int64_t>(j)) ? wc[wi++] : bc[bi++];
      size_t k = 0;
      for (size_t dd = 0; dd < rank; ++dd) {
        const bool window = !Has(dn.inserted_window_dims, static_cast<int64_t>(dd)) &&
                            !Has(dn.operand_batching_dims, static_cast<int64_t>(dd));
        oi[dd] = start[dd] + (window ? wc[k++] : 0);
      }
      const double u = upd.at(ui);
      double& o = r.at(oi);
      switch (combine) {
        case Combine::kSet: o = u; break;
        case Combine::kAdd: o = IsBool(dtype) ? ((o != 0 || u != 0) ? 1 : 0) : o + u; break;
        case Combine::kMul: o = IsBool(dtype) ? ((o != 0 && u != 0) ? 1 : 0) : o * u; break;
        case Combine::kMin: o = std::min(o, u); break;
        case Combine::kMax: o = std::max(o, u); break;
      }
    });
  });
  for (double& v : r.data) v = WrapInteger(v, dtype);
  return r;
}

struct ScatterCase {
  std::string name;
  Shape operand, indices, updates;
  ScatterDimensionNumbers dn;
  int64_t lo, hi;
};

std::vector<ScatterCase> ScatterCases() {
  return {
      {"rows", {5, 3}, {4, 1}, {4, 3}, {{1}, {0}, {0}}, -2, 6},
      {"rows, duplicates", {3, 4}, {9, 1}, {9, 4}, {{1}, {0}, {0}}, 0, 2},
      {"scalars", {5}, {7, 1}, {7}, {{}, {0}, {0}}, -1, 5},
      {"2-d index windows", {4, 5, 6}, {3, 2}, {3, 3, 2}, {{1, 2}, {0}, {0, 2}}, -1, 5},
      {"window dim first", {4, 5}, {2, 3, 1}, {4, 2, 3}, {{0}, {1}, {1}}, -1, 5},
      {"partial windows", {6, 8}, {5, 2}, {5, 2, 3}, {{1, 2}, {}, {0, 1}}, -1, 7},
      {"batching dims", {3, 5, 2}, {3, 4, 1}, {3, 4, 2}, {{2}, {1}, {1}, {0}, {0}}, -1, 5},
      {"empty updates", {5, 3}, {0, 1}, {0, 3}, {{1}, {0}, {0}}, 0, 4},
      {"large rows", {500, 64}, {3000, 1}, {3000, 64}, {{1}, {0}, {0}}, -3, 502},
      {"large long rows", {50, 4096}, {40, 1}, {40, 4096}, {{1}, {0}, {0}}, -1, 50},
      {"large scalars", {1000}, {80000, 1}, {80000}, {{}, {0}, {0}}, -3, 1002},
  };
}

// Values for a scatter sample: integral (exact sums whatever the order); +-1 for products, so
// many repeated updates stay exact; continuous float64 values for min/max, whose derivative
// columns need no ties.
Array ScatterValues(std::mt19937_64& rng, const Shape& shape, DType d, Combine combine) {
  if (combine == Combine::kMul && !IsBool(d)) {
    std::uniform_int_distribution<int> coin(0, 1);
    return FillArray(shape, d, [&](int64_t) { return IsUnsignedInt(d) || coin(rng) ? 1.0 : -1.0; });
  }
  if ((combine == Combine::kMin || combine == Combine::kMax) && d == float64) return RandomArray(rng, shape, d, -5, 5);
  return RandIntegral(rng, shape, d);
}

Array ScatterOp(Combine combine, const std::vector<Array>& a, const ScatterDimensionNumbers& dn, GatherScatterMode mode) {
  switch (combine) {
    case Combine::kSet: return lax::scatter(a[0], a[1], a[2], dn, mode);
    case Combine::kAdd: return lax::scatter_add(a[0], a[1], a[2], dn, mode);
    case Combine::kMul: return lax::scatter_mul(a[0], a[1], a[2], dn, mode);
    case Combine::kMin: return lax::scatter_min(a[0], a[1], a[2], dn, mode);
    case Combine::kMax: return lax::scatter_max(a[0], a[1], a[2], dn, mode);
  }
  return Array();
}

OpInfo ScatterInfo(std::string name, Combine combine) {
  return MakeInfo(name, kAllDTypes, [combine](DType d, std::mt19937_64& rng) {
    std::vector<Sample> out;
    for (const ScatterCase& c : ScatterCases()) {
      for (GatherScatterMode mode : {GatherScatterMode::kFillOrDrop, GatherScatterMode::kClip}) {
        Sample s;
        Array x = ScatterValues(rng, c.operand, d, combine);
        Array idx = RandIndex(rng, c.indices, mode == GatherScatterMode::kClip ? int64 : int32, c.lo, c.hi);
        Array u = ScatterValues(rng, c.updates, d, combine);
        s.description = StrCat(c.name, ": ", x.aval().str(), " indices ", idx.aval().str(), " updates ",
                               u.aval().str(), " mode=", ModeStr(mode));
        s.out_dtypes = {d};
        s.args = {x, idx, u};
        // scatter_mul's derivative in its updates needs unique indices (tests/lax/indexing_test.cc
        // covers the unique case through x.at[i].multiply).
        if (combine == Combine::kMul) s.derivatives_defined = false;
        s.op = [c, mode, combine](const std::vector<Array>& a) {
          return std::vector<Array>{ScatterOp(combine, a, c.dn, mode)};
        };
        s.reference = [c, mode, combine, d](const std::vector<RefArray>& a) {
          return std::vector<RefArray>{ScatterRef(a[0], a[1], a[2], c.dn, mode, combine, d)};
        };
        out.push_back(std::move(s));
      }
    }
    return out;
  });
}

// x.at[idx].apply(f) (JAX's scatter_apply: a scatter whose update_jaxpr is (x, _) -> f(x)),
// f applied once per update in update order: x / 2 + 1 for floats (a contraction, so 16-bit
// rounding does not grow over 80 repeats), x + 1 for integers (wrapping), not for bool.
// Integer indices along dim 0 as NumPy's (negative ones wrap), dropped out of bounds or
// clamped with mode='clip'. Its jvp raises (JAX's), so the derivative columns skip it.
Array ApplyFn(const Array& e) {
  if (IsBool(e.dtype())) return lax::bitwise_not(e);
  if (IsFloating(e.dtype())) return e * 0.5 + 1.0;
  return e + 1;
}
double ApplyRef(double v, DType d) {
  if (IsBool(d)) return v != 0 ? 0 : 1;
  return IsFloating(d) ? v * 0.5 + 1 : v + 1;
}

std::vector<Sample> ApplySamples(DType d, std::mt19937_64& rng) {
  struct Case {
    std::string name;
    Shape operand;
    int64_t count, lo, hi;
  };
  const std::vector<Case> cases = {
      {"rows", {5, 3}, 4, -6, 6},          {"rows, duplicates", {3, 4}, 9, 0, 2},
      {"scalars", {5}, 7, -1, 5},          {"large rows", {500, 64}, 3000, -3, 502},
      {"large scalars", {1000}, 80000, -3, 1002},
  };
  std::vector<Sample> out;
  for (const Case& c : cases) {
    for (const std::string mode : {"", "clip"}) {
      Sample s;
      Array x = RandIntegral(rng, c.operand, d);
      Array idx = RandIndex(rng, {c.count}, int32, c.lo, c.hi);
      s.description = StrCat("apply ", c.name, ": ", x.aval().str(), " indices ", idx.aval().str(),
                             mode.empty() ? "" : " mode=clip");
      s.out_dtypes = {d};
      s.args = {x, idx};
      s.derivatives_defined = false;  // "scatter_apply JVP not implemented"
      s.op = [mode](const std::vector<Array>& a) { return std::vector<Array>{a[0].at(a[1]).apply(ApplyFn, mode)}; };
      s.reference = [c, mode, d](const std::vector<RefArray>& a) {
        RefArray r = a[0];
        const int64_t n = c.operand[0], row = r.size() / std::max<int64_t>(n, 1);
        for (double raw : a[1].data) {
          int64_t i = static_cast<int64_t>(raw);
          if (i < 0) i += n;
          if (mode == "clip") i = std::clamp<int64_t>(i, 0, n - 1);
          if (i < 0 || i >= n) continue;  // dropped
          for (int64_t k = 0; k < row; ++k) {
            double& v = r.data[static_cast<size_t>(i * row + k)];
            v = ApplyRef(v, d);
          }
        }
        for (double& v : r.data) v = WrapInteger(v, d);
        return std::vector<RefArray>{r};
      };
      out.push_back(std::move(s));
    }
  }
  return out;
}

JX_OPINFO(scatter) {
  OpInfo info = ScatterInfo("scatter", Combine::kSet);
  auto scatter_samples = info.samples;
  info.samples = [scatter_samples](DType d, std::mt19937_64& rng) {
    std::vector<Sample> out = scatter_samples(d, rng);
    for (Sample& s : ApplySamples(d, rng)) out.push_back(std::move(s));
    return out;
  };
  return info;
}
JX_OPINFO(scatter_add) { return ScatterInfo("scatter_add", Combine::kAdd); }
JX_OPINFO(scatter_mul) { return ScatterInfo("scatter_mul", Combine::kMul); }
JX_OPINFO(scatter_min) { return ScatterInfo("scatter_min", Combine::kMin); }
JX_OPINFO(scatter_max) { return ScatterInfo("scatter_max", Combine::kMax); }

}  // namespace
}  // namespace jx::opinfo::slicing_opinfo
