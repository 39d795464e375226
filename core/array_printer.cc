// NumPy-style printing of arrays: str() like numpy's str(), repr() like JAX's repr. Large
// arrays (more than 1000 elements) are summarized with "..." keeping 3 items per edge.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "jx/core/str_util.h"
#include "jx/core/array.h"

namespace jx {
namespace {

constexpr int64_t kSummarizeThreshold = 1000;
constexpr int64_t kEdgeItems = 3;
constexpr int kLineWidth = 75;
constexpr int kFloatPrecision = 8;

// True if the decimal string s reads back as exactly v in dtype (v is a value of dtype).
bool RoundTrips(DType dtype, double v, const char* s) {
  alignas(8) unsigned char slot[8];
  StoreFromDouble(dtype, slot, 0, std::strtod(s, nullptr));
  return LoadAsDouble(dtype, slot, 0) == v;
}

// NumPy's unique mode: the fewest digits (up to max_digits) that read back as v in its own
// dtype, so float32 0.7615942 prints as 0.7615942, not as its float64 expansion. Positional
// counts digits after the point ("3." for 3.0); scientific counts mantissa digits.
std::string ShortestDigits(DType dtype, double v, int max_digits, bool scientific) {
  char buf[64];
  for (int p = 0; p <= max_digits; ++p) {
    std::snprintf(buf, sizeof(buf), scientific ? "%.*e" : "%.*f", p, v);
    if (RoundTrips(dtype, v, buf)) break;
  }
  return buf;
}

std::string FormatPositional(DType dtype, double v, int precision) {
  std::string s = ShortestDigits(dtype, v, precision, /*scientific=*/false);
  if (s.find('.') == std::string::npos) return s + ".";
  while (!s.empty() && s.back() == '0') s.pop_back();
  return s;  // keeps the trailing '.'
}

std::string FormatScientific(DType dtype, double v, int precision) {
  std::string s = ShortestDigits(dtype, v, precision, /*scientific=*/true);
  const size_t e = s.find('e');
  std::string mantissa = s.substr(0, e);
  std::string exponent = s.substr(e);
  if (mantissa.find('.') == std::string::npos) return mantissa + "." + exponent;
  while (!mantissa.empty() && mantissa.back() == '0') mantissa.pop_back();
  // NumPy prints at least two exponent digits: e+10, e-05.
  return mantissa + exponent;
}

// str() of a 0-d float array: NumPy's scalar str (what JAX prints for one), the shortest
// digits that read back as v in its dtype, positional between 1e-4 and 1e16 ("2.0",
// "0.84147096"), scientific outside it ("1e-05", "1.5e+16").
std::string ScalarFloatStr(DType dtype, double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  const double av = std::fabs(v);
  if (av == 0 || (av >= 1e-4 && av < 1e16)) {
    std::string s = FormatPositional(dtype, v, 17);
    if (s.back() == '.') s += '0';
    return s;
  }
  std::string s = FormatScientific(dtype, v, 17);
  const size_t e = s.find('e');
  if (e > 0 && s[e - 1] == '.') s.erase(e - 1, 1);  // 1.e-05 -> 1e-05
  return s;
}

class ElementFormatter {
 public:
  ElementFormatter(const Array& a, const std::vector<int64_t>& shown) : dtype_(a.dtype()) {
    const void* data = a.data();
    if (IsBool(dtype_)) {
      width_ = 0;
      for (int64_t i : shown) width_ = std::max<int>(width_, LoadAsDouble(dtype_, data, i) != 0 ? 4 : 5);
      return;
    }
    if (!IsFloating(dtype_)) {
      for (int64_t i : shown) width_ = std::max<int>(width_, static_cast<int>(FormatInt(data, i).size()));
      return;
    }
    double max_abs = 0, min_abs = HUGE_VAL;
    bool any_finite = false;
    for (int64_t i : shown) {
      const double v = LoadAsDouble(dtype_, data, i);
      if (!std::isfinite(v)) continue;
      const double av = std::fabs(v);
      any_finite = true;
      max_abs = std::max(max_abs, av);
      if (av != 0) min_abs = std::min(min_abs, av);
    }
    if (any_finite && max_abs != 0) {
      scientific_ = max_abs >= 1e8 || min_abs < 1e-4 || max_abs / min_abs > 1e3;
    }
    // Precision: the fewest digits (up to 8) that represent every shown value exactly at that
    // precision, as NumPy's "maxprec" float mode does.
    precision_ = 0;
    for (int64_t i : shown) {
      const double v = LoadAsDouble(dtype_, data, i);
      if (!std::isfinite(v)) continue;
      std::string s = scientific_ ? FormatScientific(dtype_, v, kFloatPrecision)
                                  : FormatPositional(dtype_, v, kFloatPrecision);
      const size_t dot = s.find('.');
      const size_t end = scientific_ ? s.find('e') : s.size();
      if (dot != std::string::npos) precision_ = std::max<int>(precision_, static_cast<int>(end - dot - 1));
    }
    // Align decimal points; nan/inf and scientific strings are right-aligned to the width.
    int other = 0;
    for (int64_t i : shown) {
      const std::string s = FormatFloat(data, i);
      const size_t dot = s.find('.');
      if (dot == std::string::npos || scientific_) {
        other = std::max<int>(other, static_cast<int>(s.size()));
      } else {
        left_ = std::max<int>(left_, static_cast<int>(dot));
        right_ = std::max<int>(right_, static_cast<int>(s.size() - dot));
      }
    }
    width_ = std::max(left_ + right_, other);
  }

  std::string Format(const void* data, int64_t i) const {
    if (IsBool(dtype_)) return Pad(LoadAsDouble(dtype_, data, i) != 0 ? "True" : "False", width_);
    if (!IsFloating(dtype_)) return Pad(FormatInt(data, i), width_);
    const std::string s = FormatFloat(data, i);
    const size_t dot = s.find('.');
    if (dot == std::string::npos || scientific_) return Pad(s, width_);
    std::string out(static_cast<size_t>(std::max<int>(0, left_ - static_cast<int>(dot))), ' ');
    out += s;
    out.append(static_cast<size_t>(std::max<int>(0, right_ - static_cast<int>(s.size() - dot))), ' ');
    return out;
  }

 private:
  static std::string Pad(const std::string& s, int width) {
    return std::string(static_cast<size_t>(std::max<int>(0, width - static_cast<int>(s.size()))), ' ') + s;
  }
  std::string FormatInt(const void* data, int64_t i) const {
    if (dtype_ == DType::kUInt64) return StrCat(static_cast<const uint64_t*>(data)[i]);
    if (dtype_ == DType::kInt64) return StrCat(static_cast<const int64_t*>(data)[i]);
    return StrCat(static_cast<int64_t>(LoadAsDouble(dtype_, data, i)));
  }
  std::string FormatFloat(const void* data, int64_t i) const {
    const double v = LoadAsDouble(dtype_, data, i);
    if (std::isnan(v)) return "nan";
    if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
    if (scientific_) {
      // Every element shares the precision, zero-padded: 1.000e+00 (NumPy's exp format).
      char buf[64];
      std::snprintf(buf, sizeof(buf), "%.*e", precision_, v);
      std::string s = buf;
      if (s.find('.') == std::string::npos) s.insert(s.find('e'), ".");
      return s;
    }
    return FormatPositional(dtype_, v, precision_);
  }

  DType dtype_;
  bool scientific_ = false;
  int precision_ = 0;
  int left_ = 0, right_ = 0, width_ = 0;
};

// Indices shown along one axis of extent n: all, or the first and last kEdgeItems.
std::vector<int64_t> ShownIndices(int64_t n, bool summarize) {
  std::vector<int64_t> out;
  if (!summarize || n <= 2 * kEdgeItems) {
    for (int64_t i = 0; i < n; ++i) out.push_back(i);
  } else {
    for (int64_t i = 0; i < kEdgeItems; ++i) out.push_back(i);
    out.push_back(-1);  // the "..." marker
    for (int64_t i = n - kEdgeItems; i < n; ++i) out.push_back(i);
  }
  return out;
}

class Printer {
 public:
  Printer(const Array& a, std::string separator, int indent)
      : a_(a), shape_(a.shape()), strides_(RowMajorStrides(a.shape())),
        summarize_(a.size() > kSummarizeThreshold), sep_(std::move(separator)), indent_(indent) {}

  std::string Run() {
    std::vector<int64_t> shown;
    CollectShown(0, 0, &shown);
    ElementFormatter fmt(a_, shown);
    if (shape_.empty()) return fmt.Format(a_.data(), 0);
    std::string out;
    Recurse(fmt, 0, 0, indent_ + 1, &out);
    return out;
  }

 private:
  void CollectShown(int64_t axis, int64_t offset, std::vector<int64_t>* out) const {
    if (axis == static_cast<int64_t>(shape_.size())) {
      out->push_back(offset);
      return;
    }
    for (int64_t i : ShownIndices(shape_[axis], summarize_)) {
      if (i >= 0) CollectShown(axis + 1, offset + i * strides_[axis], out);
    }
  }

  void Recurse(const ElementFormatter& fmt, int64_t axis, int64_t offset, int column, std::string* out) const {
    const int64_t rank = static_cast<int64_t>(shape_.size());
    out->push_back('[');
    const std::vector<int64_t> idx = ShownIndices(shape_[axis], summarize_);
    if (axis == rank - 1) {
      int col = column;
      const std::string trimmed_sep = sep_.substr(0, sep_.find_last_not_of(' ') + 1);
      for (size_t k = 0; k < idx.size(); ++k) {
        std::string item = idx[k] < 0 ? "..." : fmt.Format(a_.data(), offset + idx[k] * strides_[axis]);
        if (k > 0) {
          if (col + static_cast<int>(sep_.size() + item.size()) + 1 > kLineWidth) {
            *out += trimmed_sep + "\n" + std::string(static_cast<size_t>(column), ' ');
            col = column;
          } else {
            *out += sep_;
            col += static_cast<int>(sep_.size());
          }
        }
        *out += item;
        col += static_cast<int>(item.size());
      }
    } else {
      const std::string trimmed_sep = sep_.substr(0, sep_.find_last_not_of(' ') + 1);
      const std::string newlines(static_cast<size_t>(rank - axis - 1), '\n');
      for (size_t k = 0; k < idx.size(); ++k) {
        if (k > 0) *out += trimmed_sep + newlines + std::string(static_cast<size_t>(column), ' ');
        if (idx[k] < 0) {
          *out += "...";
          continue;
        }
        Recurse(fmt, axis + 1, offset + idx[k] * strides_[axis], column + 1, out);
      }
    }
    out->push_back(']');
  }

  const Array& a_;
  const Shape& shape_;
  std::vector<int64_t> strides_;
  bool summarize_;
  std::string sep_;
  int indent_;
};

}  // namespace

std::string Array::str() const {
  if (!defined()) return "Array(<empty handle>)";
  if (!is_concrete()) return StrCat("Traced<", aval().str(), ">");
  if (is_deleted()) return StrCat("Array(<deleted>, shape=", ShapeToString(shape()), ", dtype=", dtype_name(dtype()), ")");
  if (size() == 0) return shape().size() <= 1 ? "[]" : StrCat("[]  # shape ", ShapeToString(shape()));
  if (shape().empty() && IsFloating(dtype())) return ScalarFloatStr(dtype(), LoadAsDouble(dtype(), data(), 0));
  return Printer(*this, " ", 0).Run();
}

std::string Array::repr() const {
  if (!defined() || !is_concrete() || is_deleted()) return str();
  std::string body = size() == 0 ? "[]" : Printer(*this, ", ", 6).Run();
  if (size() == 0 && ndim() > 1) body = StrCat("[], shape=", ShapeToString(shape()));
  return StrCat("Array(", body, ", dtype=", dtype_name(dtype()), weak_type() ? ", weak_type=True" : "", ")");
}

}  // namespace jx
