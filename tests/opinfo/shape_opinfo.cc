// opinfo records for the shape family: broadcast_in_dim, reshape, transpose, squeeze,
// expand_dims, rev, iota, copy. References are naive index loops on float64.
#include <functional>
#include <numeric>

#include "opinfo.h"

namespace jx::opinfo::shape_opinfo {
namespace {

// Calls fn(idx) for every multi-index of shape in row-major order.
void ForAllIndices(const Shape& shape, const std::function<void(const std::vector<int64_t>&)>& fn) {
  if (NumElements(shape) == 0) return;
  std::vector<int64_t> idx(shape.size(), 0);
  while (true) {
    fn(idx);
    size_t d = shape.size();
    while (d > 0) {
      --d;
      if (++idx[d] < shape[d]) break;
      idx[d] = 0;
      if (d == 0) return;
    }
    if (shape.empty()) return;
  }
}

Array Rand(std::mt19937_64& rng, const Shape& shape, DType d) {
  return RandomArray(rng, shape, d, IsUnsignedInt(d) ? 0 : -5, 5);
}

// One sample of a one-operand op; the reference maps the input RefArray to the output.
Sample OneOperand(std::string desc, Array x, std::function<Array(const Array&)> op,
                  std::function<RefArray(const RefArray&)> ref) {
  Sample s;
  s.description = StrCat(x.aval().str(), " ", desc);
  s.out_dtypes = {x.dtype()};
  s.args = {std::move(x)};
  s.op = [op](const std::vector<Array>& a) { return std::vector<Array>{op(a[0])}; };
  s.reference = [ref](const std::vector<RefArray>& a) { return std::vector<RefArray>{ref(a[0])}; };
  return s;
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

RefArray TransposeRef(const RefArray& x, const std::vector<int64_t>& perm) {
  Shape out_shape;
  for (int64_t a : perm) out_shape.push_back(x.shape[static_cast<size_t>(a)]);
  RefArray out{out_shape, std::vector<double>(x.data.size())};
  ForAllIndices(out_shape, [&](const std::vector<int64_t>& idx) {
    std::vector<int64_t> in(idx.size());
    for (size_t j = 0; j < perm.size(); ++j) in[static_cast<size_t>(perm[j])] = idx[j];
    out.at(idx) = x.at(in);
  });
  return out;
}

JX_OPINFO(broadcast_in_dim) {
  return MakeInfo("broadcast_in_dim", kAllDTypes, [](DType d, std::mt19937_64& rng) {
    struct Case {
      Shape in, out;
      std::vector<int64_t> dims;
    };
    const std::vector<Case> cases = {{{}, {3, 2}, {}},         {{3}, {2, 3}, {1}},
                                     {{3}, {3, 4}, {0}},       {{2, 1, 3}, {4, 2, 5, 3}, {1, 2, 3}},
                                     {{0, 3}, {2, 0, 3}, {1, 2}}, {{1}, {7}, {0}},
                                     {{}, {}, {}},             {{4, 1}, {4, 3}, {0, 1}},
                                     {{300}, {200, 300}, {1}}, {{250, 1}, {250, 280}, {0, 1}}};
    std::vector<Sample> out;
    for (const Case& c : cases) {
      for (bool noncontig : {false, true}) {
        if (noncontig && c.in.size() < 2) continue;
        Array x = Rand(rng, c.in, d);
        if (noncontig) x = NonContiguousCopy(x);
        out.push_back(OneOperand(
            StrCat("-> ", ShapeToString(c.out), " dims=", ShapeToString(c.dims), noncontig ? " (transposed)" : ""), x,
            [c](const Array& a) { return lax::broadcast_in_dim(a, c.out, c.dims); },
            [c](const RefArray& a) {
              RefArray r{c.out, std::vector<double>(static_cast<size_t>(NumElements(c.out)))};
              ForAllIndices(c.out, [&](const std::vector<int64_t>& idx) {
                std::vector<int64_t> in(c.in.size());
                for (size_t i = 0; i < c.in.size(); ++i) in[i] = c.in[i] == 1 ? 0 : idx[static_cast<size_t>(c.dims[i])];
                r.at(idx) = a.at(in);
              });
              return r;
            }));
      }
    }
    return out;
  });
}

JX_OPINFO(reshape) {
  return MakeInfo("reshape", kAllDTypes, [](DType d, std::mt19937_64& rng) {
    struct Case {
      Shape in, out;
      std::vector<int64_t> dims;  // empty: None
    };
    const std::vector<Case> cases = {{{2, 3}, {3, 2}, {}},     {{}, {1, 1}, {}},          {{6}, {2, 1, 3}, {}},
                                     {{0, 3}, {3, 0}, {}},     {{4, 5, 6}, {120}, {}},    {{1, 1}, {}, {}},
                                     {{2, 3}, {6}, {1, 0}},    {{2, 3, 4}, {4, 6}, {2, 0, 1}},
                                     {{300, 250}, {250, 300}, {}}};
    std::vector<Sample> out;
    for (const Case& c : cases) {
      out.push_back(OneOperand(
          StrCat("-> ", ShapeToString(c.out), c.dims.empty() ? "" : StrCat(" dimensions=", ShapeToString(c.dims))),
          Rand(rng, c.in, d),
          [c](const Array& a) { return c.dims.empty() ? lax::reshape(a, c.out) : lax::reshape(a, c.out, c.dims); },
          [c](const RefArray& a) {
            RefArray src = c.dims.empty() ? a : TransposeRef(a, c.dims);
            return RefArray{c.out, src.data};
          }));
    }
    return out;
  });
}

JX_OPINFO(transpose) {
  return MakeInfo("transpose", kAllDTypes, [](DType d, std::mt19937_64& rng) {
    struct Case {
      Shape in;
      std::vector<int64_t> perm;
    };
    std::vector<Case> cases = {{{}, {}},         {{5}, {0}},           {{3, 4}, {1, 0}},        {{1, 5, 1, 3}, {3, 2, 1, 0}},
                               {{0, 3}, {1, 0}}, {{2, 0, 3}, {1, 2, 0}}, {{300, 250}, {1, 0}},  {{7, 33, 65}, {0, 2, 1}},
                               {{4, 5, 6, 7}, {2, 3, 0, 1}}, {{3, 4, 5, 2, 3}, {4, 1, 3, 0, 2}}};
    std::vector<int64_t> p = {0, 1, 2};
    do {
      cases.push_back({{2, 3, 4}, p});
    } while (std::next_permutation(p.begin(), p.end()));
    std::vector<Sample> out;
    for (const Case& c : cases) {
      out.push_back(OneOperand(StrCat("permutation=", ShapeToString(c.perm)), Rand(rng, c.in, d),
                               [c](const Array& a) { return lax::transpose(a, c.perm); },
                               [c](const RefArray& a) { return TransposeRef(a, c.perm); }));
    }
    return out;
  });
}

JX_OPINFO(squeeze) {
  return MakeInfo("squeeze", kAllDTypes, [](DType d, std::mt19937_64& rng) {
    struct Case {
      Shape in;
      std::vector<int64_t> dims;
      Shape out;
    };
    const std::vector<Case> cases = {{{1, 3, 1}, {0, 2}, {3}}, {{1}, {0}, {}},        {{2, 1, 0}, {1}, {2, 0}},
                                     {{1, 1}, {-1}, {1}},      {{4, 1, 5}, {1}, {4, 5}}};
    std::vector<Sample> out;
    for (const Case& c : cases) {
      out.push_back(OneOperand(StrCat("dimensions=", ShapeToString(c.dims)), Rand(rng, c.in, d),
                               [c](const Array& a) { return lax::squeeze(a, c.dims); },
                               [c](const RefArray& a) { return RefArray{c.out, a.data}; }));
    }
    return out;
  });
}

JX_OPINFO(expand_dims) {
  return MakeInfo("expand_dims", kAllDTypes, [](DType d, std::mt19937_64& rng) {
    struct Case {
      Shape in;
      std::vector<int64_t> dims;
      Shape out;
    };
    const std::vector<Case> cases = {{{3}, {0}, {1, 3}}, {{}, {0}, {1}}, {{2, 3}, {1, 3}, {2, 1, 3, 1}},
                                     {{0}, {0}, {1, 0}}, {{2, 3}, {-1}, {2, 3, 1}}};
    std::vector<Sample> out;
    for (const Case& c : cases) {
      out.push_back(OneOperand(StrCat("dimensions=", ShapeToString(c.dims)), Rand(rng, c.in, d),
                               [c](const Array& a) { return lax::expand_dims(a, c.dims); },
                               [c](const RefArray& a) { return RefArray{c.out, a.data}; }));
    }
    return out;
  });
}

JX_OPINFO(rev) {
  return MakeInfo("rev", kAllDTypes, [](DType d, std::mt19937_64& rng) {
    struct Case {
      Shape in;
      std::vector<int64_t> dims;
    };
    const std::vector<Case> cases = {{{5}, {0}},       {{3, 4}, {0}},  {{3, 4}, {1}},       {{3, 4}, {0, 1}},
                                     {{2, 3, 4}, {0, 2}}, {{}, {}},    {{0, 3}, {1}},       {{2, 3, 4}, {}},
                                     {{1, 4, 1}, {0, 1}}, {{250, 300}, {1}}, {{250, 300}, {0}}};
    std::vector<Sample> out;
    for (const Case& c : cases) {
      out.push_back(OneOperand(StrCat("dimensions=", ShapeToString(c.dims)), Rand(rng, c.in, d),
                               [c](const Array& a) { return lax::rev(a, c.dims); },
                               [c](const RefArray& a) {
                                 RefArray r{a.shape, a.data};
                                 ForAllIndices(a.shape, [&](const std::vector<int64_t>& idx) {
                                   std::vector<int64_t> in = idx;
                                   for (int64_t k : c.dims) {
                                     in[static_cast<size_t>(k)] = a.shape[static_cast<size_t>(k)] - 1 - idx[static_cast<size_t>(k)];
                                   }
                                   r.at(idx) = a.at(in);
                                 });
                                 return r;
                               }));
    }
    return out;
  });
}

JX_OPINFO(iota) {
  std::vector<DType> dtypes(kAllDTypes.begin() + 1, kAllDTypes.end());  // not bool
  return MakeInfo("iota", dtypes, [](DType d, std::mt19937_64&) {
    struct Case {
      Shape shape;
      int64_t dimension;
    };
    // Values stay below 128 so every dtype holds them exactly.
    const std::vector<Case> cases = {{{5}, 0}, {{3, 4}, 1}, {{3, 4}, 0}, {{2, 3, 4}, 1}, {{0}, 0},
                                     {{2, 0}, 0}, {{1}, 0}, {{700, 100}, 1}, {{100, 700}, 0}};
    std::vector<Sample> out;
    for (const Case& c : cases) {
      Sample s;
      s.description = StrCat(dtype_name(d), " shape=", ShapeToString(c.shape), " dimension=", c.dimension);
      s.out_dtypes = {d};
      s.op = [c, d](const std::vector<Array>&) {
        return std::vector<Array>{c.shape.size() == 1 ? lax::iota(d, c.shape[0])
                                                       : lax::broadcasted_iota(d, c.shape, c.dimension)};
      };
      s.reference = [c](const std::vector<RefArray>&) {
        RefArray r{c.shape, std::vector<double>(static_cast<size_t>(NumElements(c.shape)))};
        ForAllIndices(c.shape, [&](const std::vector<int64_t>& idx) {
          r.at(idx) = static_cast<double>(idx[static_cast<size_t>(c.dimension)]);
        });
        return std::vector<RefArray>{r};
      };
      out.push_back(std::move(s));
    }
    return out;
  });
}

JX_OPINFO(copy) {
  return MakeInfo("copy", kAllDTypes, [](DType d, std::mt19937_64& rng) {
    std::vector<Sample> out;
    for (const Shape& shape : ElementwiseShapes()) {
      out.push_back(OneOperand("", Rand(rng, shape, d), [](const Array& a) { return lax::copy(a); },
                               [](const RefArray& a) { return a; }));
    }
    return out;
  });
}

}  // namespace
}  // namespace jx::opinfo::shape_opinfo
