#include "jx/lax/numpy/linalg.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <numeric>
#include <set>

#include "jx/core/errors.h"
#include "jx/lax/convert_ops.h"
#include "jx/lax/dot_general.h"
#include "jx/lax/shape_ops.h"
#include "jx/lax/numpy/manipulation.h"
#include "jx/lax/numpy/math.h"
#include "jx/lax/numpy/promotion.h"
#include "jx/lax/numpy/reductions.h"

namespace jx::numpy {
namespace {

size_t U(int64_t i) { return static_cast<size_t>(i); }

std::pair<Array, Array> PromotePair(const Array& a, const Array& b) {
  std::vector<Array> v = promote_dtypes({a, b});
  return {v[0], v[1]};
}

// The result of a product that emitted no dot_general (a scalar operand, an einsum without a
// contraction) in preferred_element_type when one was asked for.
Array AsPreferred(const Array& x, std::optional<DType> preferred) {
  return preferred && x.dtype() != *preferred ? lax::convert_element_type(x, *preferred) : x;
}

}  // namespace

Array dot(const Array& a0, const Array& b0, lax::PrecisionLike precision, std::optional<DType> preferred) {
  auto [a, b] = PromotePair(a0, b0);
  if (a.ndim() == 0 || b.ndim() == 0) return AsPreferred(multiply(a, b), preferred);
  const int64_t ac = a.ndim() - 1;
  const int64_t bc = b.ndim() == 1 ? 0 : b.ndim() - 2;
  if (a.shape()[U(ac)] != b.shape()[U(bc)]) {
    ThrowOpError<ShapeError>("dot", "shapes ", a.aval().str(), " and ", b.aval().str(), " not aligned: ",
                             a.shape()[U(ac)], " (dim ", ac, ") != ", b.shape()[U(bc)], " (dim ", bc, ")");
  }
  return lax::dot_general(a, b, {{ac}, {bc}, {}, {}}, precision, preferred);
}

Array matmul(const Array& a0, const Array& b0, const OutSharding& out_sharding) {
  return matmul(a0, b0, {}, std::nullopt, out_sharding);
}

Array matmul(const Array& a0, const Array& b0, lax::PrecisionLike precision, std::optional<DType> preferred,
             const OutSharding& out_sharding) {
  auto [a, b] = PromotePair(a0, b0);
  if (a.ndim() == 0 || b.ndim() == 0) {
    ThrowOpError<ValueError>("matmul", "input operand does not have enough dimensions: ", a.aval().str(), " @ ",
                             b.aval().str());
  }
  const bool a_vec = a.ndim() == 1, b_vec = b.ndim() == 1;
  if (a_vec) a = lax::reshape(a, {1, a.shape()[0]});
  if (b_vec) b = lax::reshape(b, {b.shape()[0], 1});
  const int64_t ra = a.ndim(), rb = b.ndim();
  if (a.shape()[U(ra - 1)] != b.shape()[U(rb - 2)]) {
    ThrowOpError<ShapeError>("matmul", "contracting dimensions differ: ", a0.aval().str(), " (size ",
                             a.shape()[U(ra - 1)], ") @ ", b0.aval().str(), " (size ", b.shape()[U(rb - 2)], ")");
  }
  // Classify each broadcast batch position (aligned from the right): shared by both operands,
  // or belonging to one side only (the other side lacks it or has size 1, which is squeezed).
  const int64_t nba = ra - 2, nbb = rb - 2, nb = std::max(nba, nbb);
  enum Kind { kShared, kAOnly, kBOnly };
  std::vector<Kind> kind(U(nb));
  std::vector<int64_t> a_squeeze, b_squeeze;
  for (int64_t i = 0; i < nb; ++i) {
    const int64_t ia = i - (nb - nba), ib = i - (nb - nbb);
    const int64_t da = ia >= 0 ? a.shape()[U(ia)] : -1;
    const int64_t db = ib >= 0 ? b.shape()[U(ib)] : -1;
    if (da >= 0 && db >= 0 && da == db) {
      kind[U(i)] = kShared;
    } else if (da < 0 || (da == 1 && db >= 0)) {
      kind[U(i)] = kBOnly;
      if (da >= 0) a_squeeze.push_back(ia);
    } else if (db < 0 || db == 1) {
      kind[U(i)] = kAOnly;
      if (db >= 0) b_squeeze.push_back(ib);
    } else {
      ThrowOpError<ShapeError>("matmul", "batch dimensions do not broadcast: ", a0.aval().str(), " @ ", b0.aval().str());
    }
  }
  a = lax::squeeze(a, a_squeeze);
  b = lax::squeeze(b, b_squeeze);
  // Positions of the remaining batch dims in the squeezed operands.
  lax::DotDimensionNumbers dn;
  std::vector<int64_t> a_only, b_only;  // broadcast positions, in order
  int64_t pa = 0, pb = 0;
  for (int64_t i = 0; i < nb; ++i) {
    const bool has_a = i - (nb - nba) >= 0 && kind[U(i)] != kBOnly;
    const bool has_b = i - (nb - nbb) >= 0 && kind[U(i)] != kAOnly;
    if (kind[U(i)] == kShared) {
      dn.lhs_batch_dims.push_back(pa);
      dn.rhs_batch_dims.push_back(pb);
    } else if (kind[U(i)] == kAOnly) {
      a_only.push_back(i);
    } else {
      b_only.push_back(i);
    }
    pa += has_a ? 1 : 0;
    pb += has_b ? 1 : 0;
  }
  dn.lhs_contracting_dims = {a.ndim() - 1};
  dn.rhs_contracting_dims = {b.ndim() - 2};
  // dot_general gives (shared..., a_only..., n, b_only..., m); restore the broadcast order.
  std::vector<int64_t> pos_of(U(nb));  // broadcast position -> dot_general output dim
  int64_t k = 0;
  for (int64_t i = 0; i < nb; ++i) {
    if (kind[U(i)] == kShared) pos_of[U(i)] = k++;
  }
  for (int64_t i : a_only) pos_of[U(i)] = k++;
  const int64_t n_dim = k++;
  for (int64_t i : b_only) pos_of[U(i)] = k++;
  const int64_t m_dim = k++;
  std::vector<int64_t> perm = pos_of;
  perm.push_back(n_dim);
  perm.push_back(m_dim);
  std::vector<int64_t> drop;
  if (a_vec) drop.push_back(nb);
  if (b_vec) drop.push_back(nb + 1);
  OutSharding dot_sharding;
  if (!out_sharding.is_none()) {
    out_sharding.CheckMesh("matmul", {a, b});
    // The result's sharding, moved to the dot's dim order (a squeezed vector dim: whole).
    const DimShardings result = out_sharding.ForRank("matmul", nb + 2 - static_cast<int64_t>(drop.size()));
    DimShardings dot(U(nb + 2));
    for (int64_t t = 0, j = 0; t < nb + 2; ++t) {
      if (std::find(drop.begin(), drop.end(), t) != drop.end()) continue;
      dot[U(perm[U(t)])] = result[U(j++)];
    }
    dot_sharding = OutSharding(dot);
  }
  Array out = lax::dot_general(a, b, dn, precision, preferred, dot_sharding);
  return lax::squeeze(lax::transpose(out, perm), drop);
}

Array vdot(const Array& a, const Array& b, lax::PrecisionLike precision, std::optional<DType> preferred) {
  return numpy::dot(ravel(a), ravel(b), precision, preferred);
}

Array inner(const Array& a0, const Array& b0, lax::PrecisionLike precision, std::optional<DType> preferred) {
  auto [a, b] = PromotePair(a0, b0);
  if (a.ndim() == 0 || b.ndim() == 0) return AsPreferred(multiply(a, b), preferred);
  return numpy::tensordot(a, b, {{-1}, {-1}}, precision, preferred);
}

Array outer(const Array& a, const Array& b) {
  Array ra = ravel(a), rb = ravel(b);
  return multiply(lax::reshape(ra, {ra.size(), 1}), lax::reshape(rb, {1, rb.size()}));
}

Array tensordot(const Array& a, const Array& b, int64_t axes, lax::PrecisionLike precision,
                std::optional<DType> preferred) {
  if (axes < 0 || axes > a.ndim() || axes > b.ndim()) {
    ThrowOpError<ValueError>("tensordot", "axes ", axes, " out of range for ", a.aval().str(), " and ", b.aval().str());
  }
  std::vector<int64_t> ca, cb;
  for (int64_t i = 0; i < axes; ++i) {
    ca.push_back(a.ndim() - axes + i);
    cb.push_back(i);
  }
  return numpy::tensordot(a, b, {ca, cb}, precision, preferred);
}

Array tensordot(const Array& a0, const Array& b0, const std::pair<std::vector<int64_t>, std::vector<int64_t>>& axes,
                lax::PrecisionLike precision, std::optional<DType> preferred) {
  auto [a, b] = PromotePair(a0, b0);
  if (axes.first.size() != axes.second.size()) {
    ThrowOpError<ValueError>("tensordot", "axes lists must have equal lengths, got ", ShapeToString(axes.first), " and ",
                             ShapeToString(axes.second));
  }
  lax::DotDimensionNumbers dn;
  for (int64_t x : axes.first) dn.lhs_contracting_dims.push_back(CanonicalizeAxis(x, a.ndim(), "tensordot"));
  for (int64_t x : axes.second) dn.rhs_contracting_dims.push_back(CanonicalizeAxis(x, b.ndim(), "tensordot"));
  return lax::dot_general(a, b, dn, precision, preferred);
}

Array kron(const Array& a0, const Array& b0) {
  auto [a, b] = PromotePair(a0, b0);
  const int64_t r = std::max(a.ndim(), b.ndim());
  Shape sa(U(r - a.ndim()), 1), sb(U(r - b.ndim()), 1);
  sa.insert(sa.end(), a.shape().begin(), a.shape().end());
  sb.insert(sb.end(), b.shape().begin(), b.shape().end());
  // a[..., i, None, ...] * b[..., None, j, ...], then merge each (i, j) pair.
  Shape ea, eb, out;
  for (int64_t i = 0; i < r; ++i) {
    ea.push_back(sa[U(i)]);
    ea.push_back(1);
    eb.push_back(1);
    eb.push_back(sb[U(i)]);
    out.push_back(sa[U(i)] * sb[U(i)]);
  }
  return lax::reshape(multiply(lax::reshape(a, ea), lax::reshape(b, eb)), out);
}

// ---- einsum ----

namespace {

constexpr int kEllipsisBase = 256;  // labels for ellipsis dims (letters are < 128)

struct Term {
  std::vector<int> labels;
};

[[noreturn]] void EinsumError(std::string_view subscripts, const std::string& why) {
  ThrowOpError<ValueError>("einsum", why, " (subscripts '", subscripts, "')");
}

// Parses one term; "..." becomes `ell` labels right-aligned to the widest ellipsis.
Term ParseTerm(std::string_view subscripts, std::string_view term, int64_t rank, int64_t max_ell, bool is_output) {
  Term t;
  const size_t dots = term.find("...");
  const int64_t letters = static_cast<int64_t>(term.size()) - (dots == std::string_view::npos ? 0 : 3);
  const int64_t ell = is_output ? max_ell : rank - letters;
  if (!is_output && (ell < 0 || (dots == std::string_view::npos && ell != 0))) {
    EinsumError(subscripts, StrCat("operand has rank ", rank, " but its subscripts '", term, "' name ", letters, " axes"));
  }
  for (size_t i = 0; i < term.size(); ++i) {
    if (i == dots) {
      for (int64_t k = 0; k < ell; ++k) t.labels.push_back(kEllipsisBase + static_cast<int>(max_ell - ell + k));
      i += 2;
      continue;
    }
    const char c = term[i];
    if (!std::isalpha(static_cast<unsigned char>(c))) EinsumError(subscripts, StrCat("invalid subscript '", std::string(1, c), "'"));
    t.labels.push_back(c);
  }
  return t;
}

int64_t IndexOf(const std::vector<int>& v, int x) {
  return static_cast<int64_t>(std::find(v.begin(), v.end(), x) - v.begin());
}

// Sums the axes whose labels are not in `keep`.
void SumOut(Array& x, std::vector<int>& labels, const std::set<int>& keep) {
  std::vector<int64_t> axes;
  std::vector<int> rest;
  for (size_t i = 0; i < labels.size(); ++i) {
    if (keep.count(labels[i])) {
      rest.push_back(labels[i]);
    } else {
      axes.push_back(static_cast<int64_t>(i));
    }
  }
  if (axes.empty()) return;
  x = sum(x, Axis(axes), false, x.dtype());
  labels = rest;
}

// Takes diagonals for labels repeated within one operand.
void TakeDiagonals(Array& x, std::vector<int>& labels) {
  for (bool again = true; again;) {
    again = false;
    for (size_t i = 0; i < labels.size() && !again; ++i) {
      for (size_t j = i + 1; j < labels.size(); ++j) {
        if (labels[i] != labels[j]) continue;
        if (x.shape()[i] != x.shape()[j]) {
          ThrowOpError<ShapeError>("einsum", "repeated label with different sizes ", x.shape()[i], " and ",
                                   x.shape()[j], " in operand ", x.aval().str());
        }
        const int label = labels[i];
        x = diagonal(x, 0, static_cast<int64_t>(i), static_cast<int64_t>(j));  // the diagonal goes last
        labels.erase(labels.begin() + static_cast<std::ptrdiff_t>(j));
        labels.erase(labels.begin() + static_cast<std::ptrdiff_t>(i));
        labels.push_back(label);
        again = true;
        break;
      }
    }
  }
}

// Contracts two labelled operands, keeping the labels in `keep`; with `label_axes` (the last
// contraction under out_sharding), the product is typed with each label's axes.
std::pair<Array, std::vector<int>> Contract(Array a, std::vector<int> la, Array b, std::vector<int> lb,
                                            const std::set<int>& keep, const lax::PrecisionLike& precision,
                                            std::optional<DType> preferred,
                                            const std::map<int, std::vector<std::string>>* label_axes) {
  // A shared label of size 1 on one side broadcasts: squeeze it there.
  for (bool again = true; again;) {
    again = false;
    for (size_t i = 0; i < la.size() && !again; ++i) {
      const int64_t j = IndexOf(lb, la[i]);
      if (j == static_cast<int64_t>(lb.size())) continue;
      const int64_t da = a.shape()[i], db = b.shape()[U(j)];
      if (da == db) continue;
      if (da == 1) {
        a = lax::squeeze(a, {static_cast<int64_t>(i)});
        la.erase(la.begin() + static_cast<std::ptrdiff_t>(i));
      } else if (db == 1) {
        b = lax::squeeze(b, {j});
        lb.erase(lb.begin() + j);
      } else {
        ThrowOpError<ShapeError>("einsum", "label '", std::string(1, static_cast<char>(la[i] < 128 ? la[i] : '.')), "' has sizes ", da,
                                 " and ", db, " in operands ", a.aval().str(), " and ", b.aval().str());
      }
      again = true;
    }
  }
  // Labels only on one side and not needed afterwards are summed first.
  std::set<int> keep_a = keep, keep_b = keep;
  keep_a.insert(lb.begin(), lb.end());
  keep_b.insert(la.begin(), la.end());
  SumOut(a, la, keep_a);
  SumOut(b, lb, keep_b);
  lax::DotDimensionNumbers dn;
  std::vector<int> batch, free_a, free_b;
  for (size_t i = 0; i < la.size(); ++i) {
    const int64_t j = IndexOf(lb, la[i]);
    if (j == static_cast<int64_t>(lb.size())) {
      free_a.push_back(la[i]);
    } else if (keep.count(la[i])) {
      dn.lhs_batch_dims.push_back(static_cast<int64_t>(i));
      dn.rhs_batch_dims.push_back(j);
      batch.push_back(la[i]);
    } else {
      dn.lhs_contracting_dims.push_back(static_cast<int64_t>(i));
      dn.rhs_contracting_dims.push_back(j);
    }
  }
  for (int l : lb) {
    if (IndexOf(la, l) == static_cast<int64_t>(la.size())) free_b.push_back(l);
  }
  std::vector<int> labels = batch;
  labels.insert(labels.end(), free_a.begin(), free_a.end());
  labels.insert(labels.end(), free_b.begin(), free_b.end());
  OutSharding sharding;
  if (label_axes != nullptr) {
    DimShardings spec;
    for (int l : labels) spec.push_back(label_axes->at(l));
    sharding = OutSharding(std::move(spec));
  }
  Array out = lax::dot_general(a, b, dn, precision, preferred, sharding);
  return {out, labels};
}

}  // namespace

Array einsum(std::string_view subscripts, const std::vector<Array>& operands, const OutSharding& out_sharding) {
  return einsum(subscripts, operands, {}, std::nullopt, out_sharding);
}

Array einsum(std::string_view subscripts_in, const std::vector<Array>& operands_in, lax::PrecisionLike precision,
             std::optional<DType> preferred, const OutSharding& out_sharding) {
  std::string subs;
  for (char c : subscripts_in) {
    if (c != ' ') subs.push_back(c);
  }
  const std::string_view subscripts = subs;
  if (operands_in.empty()) EinsumError(subscripts, "no operands");
  const size_t arrow = subscripts.find("->");
  const std::string_view lhs = subscripts.substr(0, arrow);
  std::vector<std::string_view> terms;
  for (size_t start = 0;;) {
    const size_t comma = lhs.find(',', start);
    terms.push_back(lhs.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start));
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  if (terms.size() != operands_in.size()) {
    EinsumError(subscripts, StrCat(terms.size(), " terms for ", operands_in.size(), " operands"));
  }
  std::vector<ArrayLike> like(operands_in.begin(), operands_in.end());
  std::vector<Array> ops = promote_dtypes(like);
  // The widest ellipsis sets the number of broadcast labels.
  int64_t max_ell = 0;
  for (size_t k = 0; k < terms.size(); ++k) {
    if (terms[k].find("...") != std::string_view::npos) {
      max_ell = std::max(max_ell, ops[k].ndim() - static_cast<int64_t>(terms[k].size() - 3));
    }
  }
  std::vector<std::vector<int>> labels;
  std::map<int, int> counts;
  for (size_t k = 0; k < terms.size(); ++k) {
    labels.push_back(ParseTerm(subscripts, terms[k], ops[k].ndim(), max_ell, false).labels);
    for (int l : labels.back()) counts[l]++;
  }
  std::vector<int> out_labels;
  if (arrow != std::string_view::npos) {
    out_labels = ParseTerm(subscripts, subscripts.substr(arrow + 2), 0, max_ell, true).labels;
    std::set<int> seen;
    for (int l : out_labels) {
      if (!seen.insert(l).second) EinsumError(subscripts, "output subscript repeated");
      if (!counts.count(l)) EinsumError(subscripts, StrCat("output subscript '", std::string(1, static_cast<char>(l)), "' does not appear in the inputs"));
    }
  } else {
    for (int64_t k = 0; k < max_ell; ++k) out_labels.push_back(kEllipsisBase + static_cast<int>(k));
    for (const auto& [l, c] : counts) {
      if (l < kEllipsisBase && c == 1) out_labels.push_back(l);
    }
  }
  const std::set<int> out_set(out_labels.begin(), out_labels.end());
  // Per operand: diagonals, then sum the labels nobody else needs.
  for (size_t k = 0; k < ops.size(); ++k) {
    TakeDiagonals(ops[k], labels[k]);
    std::set<int> keep = out_set;
    for (size_t m = 0; m < ops.size(); ++m) {
      if (m != k) keep.insert(labels[m].begin(), labels[m].end());
    }
    SumOut(ops[k], labels[k], keep);
  }
  // out_sharding types the last contraction's product (its labels are the output's).
  std::map<int, std::vector<std::string>> label_axes;
  if (!out_sharding.is_none()) {
    if (ops.size() < 2) {
      EinsumError(subscripts, "out_sharding needs a contraction (two operands or more); reshard the result instead "
                              "(jx::reshard)");
    }
    out_sharding.CheckMesh("einsum", operands_in);
    const DimShardings spec = out_sharding.ForRank("einsum", static_cast<int64_t>(out_labels.size()));
    for (size_t i = 0; i < out_labels.size(); ++i) label_axes[out_labels[i]] = spec[i];
  }
  Array result = ops[0];
  std::vector<int> rl = labels[0];
  for (size_t k = 1; k < ops.size(); ++k) {
    std::set<int> keep = out_set;
    for (size_t m = k + 1; m < ops.size(); ++m) keep.insert(labels[m].begin(), labels[m].end());
    const bool last = k + 1 == ops.size();
    auto [r, l] = Contract(result, rl, ops[k], labels[k], keep, precision, preferred,
                           last && !out_sharding.is_none() ? &label_axes : nullptr);
    result = r;
    rl = l;
  }
  SumOut(result, rl, out_set);
  std::vector<int64_t> perm;
  for (int l : out_labels) perm.push_back(IndexOf(rl, l));
  return AsPreferred(lax::transpose(result, perm), preferred);
}

}  // namespace jx::numpy
