#include "jx/compiler/hlo/literal.h"

#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

#include "jx/compiler/hlo/str_util.h"

namespace jx::hlo {

float HalfToFloat(uint16_t bits) {
  const uint32_t sign = static_cast<uint32_t>(bits & 0x8000) << 16;
  const uint32_t exp = (bits >> 10) & 0x1f;
  uint32_t mant = bits & 0x3ff;
  uint32_t out;
  if (exp == 0x1f) {
    out = sign | 0x7f800000 | (mant << 13);
  } else if (exp != 0) {
    out = sign | ((exp + 112) << 23) | (mant << 13);
  } else if (mant == 0) {
    out = sign;
  } else {  // subnormal: normalize
    int e = -1;
    do {
      ++e;
      mant <<= 1;
    } while ((mant & 0x400) == 0);
    out = sign | (static_cast<uint32_t>(112 - e) << 23) | ((mant & 0x3ff) << 13);
  }
  float f;
  std::memcpy(&f, &out, 4);
  return f;
}

uint16_t FloatToHalf(float value) {
  uint32_t x;
  std::memcpy(&x, &value, 4);
  const uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000);
  const uint32_t abs = x & 0x7fffffff;
  if (abs >= 0x7f800000) {  // inf or nan
    return sign | 0x7c00 | (abs > 0x7f800000 ? 0x200 : 0);
  }
  if (abs >= 0x477ff000) return sign | 0x7c00;  // rounds to inf
  if (abs < 0x38800000) {                       // subnormal or zero in half
    float f;
    uint32_t a = abs;
    std::memcpy(&f, &a, 4);
    // Scale into the subnormal integer range; the FPU rounds to nearest even.
    return sign | static_cast<uint16_t>(std::nearbyint(f * 16777216.0f));
  }
  const uint32_t mant_odd = (abs >> 13) & 1;
  uint32_t rounded = abs + 0xfff + mant_odd;
  return sign | static_cast<uint16_t>((rounded - 0x38000000) >> 13);
}

float BFloat16ToFloat(uint16_t bits) {
  uint32_t x = static_cast<uint32_t>(bits) << 16;
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}

uint16_t FloatToBFloat16(float value) {
  uint32_t x;
  std::memcpy(&x, &value, 4);
  if ((x & 0x7fffffff) > 0x7f800000) return static_cast<uint16_t>((x >> 16) | 0x40);  // nan
  x += 0x7fff + ((x >> 16) & 1);
  return static_cast<uint16_t>(x >> 16);
}

Literal::Literal(const Shape& shape) : shape_(shape) {
  if (shape.IsTuple()) {
    for (const Shape& s : shape.tuple_shapes()) tuple_elements_.emplace_back(s);
  } else if (shape.IsArray()) {
    data_.assign(ShapeUtil::ByteSizeOf(shape), 0);
  }
}

Literal Literal::CreateScalar(PrimitiveType type, double value) {
  Literal lit(ShapeUtil::MakeScalarShape(type));
  lit.SetFromDouble(0, value);
  return lit;
}

Literal Literal::CreateTuple(std::vector<Literal> elements) {
  std::vector<Shape> shapes;
  for (const Literal& e : elements) shapes.push_back(e.shape());
  Literal lit;
  lit.shape_ = Shape::Tuple(std::move(shapes));
  lit.tuple_elements_ = std::move(elements);
  return lit;
}

namespace {

template <typename T>
T Load(const std::vector<uint8_t>& data, int64_t index) {
  T v;
  std::memcpy(&v, data.data() + index * sizeof(T), sizeof(T));
  return v;
}

template <typename T>
void Store(std::vector<uint8_t>& data, int64_t index, T v) {
  std::memcpy(data.data() + index * sizeof(T), &v, sizeof(T));
}

// Saturating double -> integer conversion (NaN -> 0), so odd inputs never hit UB.
template <typename T>
T ClampToInt(double v) {
  if (std::isnan(v)) return 0;
  if (v <= static_cast<double>(std::numeric_limits<T>::min())) {
    return std::numeric_limits<T>::min();
  }
  if (v >= static_cast<double>(std::numeric_limits<T>::max())) {
    return std::numeric_limits<T>::max();
  }
  return static_cast<T>(v);
}

}  // namespace

double Literal::GetAsDouble(int64_t i) const {
  switch (shape_.element_type()) {
    case PRED: return Load<uint8_t>(data_, i) != 0;
    case S8: return Load<int8_t>(data_, i);
    case S16: return Load<int16_t>(data_, i);
    case S32: return Load<int32_t>(data_, i);
    case S64: return static_cast<double>(Load<int64_t>(data_, i));
    case U8: return Load<uint8_t>(data_, i);
    case U16: return Load<uint16_t>(data_, i);
    case U32: return Load<uint32_t>(data_, i);
    case U64: return static_cast<double>(Load<uint64_t>(data_, i));
    case F16: return HalfToFloat(Load<uint16_t>(data_, i));
    case BF16: return BFloat16ToFloat(Load<uint16_t>(data_, i));
    case F32: return Load<float>(data_, i);
    case F64: return Load<double>(data_, i);
    default: return 0;
  }
}

int64_t Literal::GetAsInt64(int64_t i) const {
  switch (shape_.element_type()) {
    case S64: return Load<int64_t>(data_, i);
    case U64: return static_cast<int64_t>(Load<uint64_t>(data_, i));
    case F16: case BF16: case F32: case F64: return ClampToInt<int64_t>(GetAsDouble(i));
    default: return static_cast<int64_t>(GetAsDouble(i));
  }
}

uint64_t Literal::GetAsUint64(int64_t i) const {
  switch (shape_.element_type()) {
    case S64: return static_cast<uint64_t>(Load<int64_t>(data_, i));
    case U64: return Load<uint64_t>(data_, i);
    case F16: case BF16: case F32: case F64: return ClampToInt<uint64_t>(GetAsDouble(i));
    default: return static_cast<uint64_t>(GetAsInt64(i));
  }
}

void Literal::SetFromDouble(int64_t i, double v) {
  switch (shape_.element_type()) {
    case PRED: Store<uint8_t>(data_, i, v != 0); break;
    case S8: Store(data_, i, ClampToInt<int8_t>(v)); break;
    case S16: Store(data_, i, ClampToInt<int16_t>(v)); break;
    case S32: Store(data_, i, ClampToInt<int32_t>(v)); break;
    case S64: Store(data_, i, ClampToInt<int64_t>(v)); break;
    case U8: Store(data_, i, ClampToInt<uint8_t>(v)); break;
    case U16: Store(data_, i, ClampToInt<uint16_t>(v)); break;
    case U32: Store(data_, i, ClampToInt<uint32_t>(v)); break;
    case U64: Store(data_, i, ClampToInt<uint64_t>(v)); break;
    case F16: Store(data_, i, FloatToHalf(static_cast<float>(v))); break;
    case BF16: Store(data_, i, FloatToBFloat16(static_cast<float>(v))); break;
    case F32: Store(data_, i, static_cast<float>(v)); break;
    case F64: Store(data_, i, v); break;
    default: break;
  }
}

void Literal::SetFromInt64(int64_t i, int64_t v) {
  switch (shape_.element_type()) {
    case PRED: Store<uint8_t>(data_, i, v != 0); break;
    case S8: Store(data_, i, static_cast<int8_t>(v)); break;
    case S16: Store(data_, i, static_cast<int16_t>(v)); break;
    case S32: Store(data_, i, static_cast<int32_t>(v)); break;
    case S64: Store(data_, i, v); break;
    case U8: Store(data_, i, static_cast<uint8_t>(v)); break;
    case U16: Store(data_, i, static_cast<uint16_t>(v)); break;
    case U32: Store(data_, i, static_cast<uint32_t>(v)); break;
    case U64: Store(data_, i, static_cast<uint64_t>(v)); break;
    default: SetFromDouble(i, static_cast<double>(v)); break;
  }
}

void Literal::SetFromUint64(int64_t i, uint64_t v) {
  if (shape_.element_type() == U64) {
    Store(data_, i, v);
  } else if (IsFloatingPointType(shape_.element_type())) {
    SetFromDouble(i, static_cast<double>(v));
  } else {
    SetFromInt64(i, static_cast<int64_t>(v));
  }
}

namespace {

// Shortest decimal that reads back to the same value of `type`.
std::string FloatToString(double v, PrimitiveType type) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v < 0 ? "-inf" : "inf";
  const int max_digits = type == F64 ? 17 : 9;
  char buf[64];
  for (int digits = 1; digits <= max_digits; ++digits) {
    std::snprintf(buf, sizeof(buf), "%.*g", digits, v);
    double back = std::strtod(buf, nullptr);
    bool same = false;
    switch (type) {
      case F64: same = back == v; break;
      case F32: same = static_cast<float>(back) == static_cast<float>(v); break;
      case F16: same = FloatToHalf(static_cast<float>(back)) == FloatToHalf(v); break;
      default: same = FloatToBFloat16(static_cast<float>(back)) == FloatToBFloat16(v); break;
    }
    if (same) return buf;
  }
  return buf;
}

std::string ElementToString(const Literal& lit, int64_t i) {
  PrimitiveType t = lit.shape().element_type();
  if (t == PRED) return lit.GetAsBool(i) ? "true" : "false";
  if (IsFloatingPointType(t)) return FloatToString(lit.GetAsDouble(i), t);
  if (t == U64) return StrCat(lit.GetAsUint64(i));
  return StrCat(lit.GetAsInt64(i));
}

void AppendArray(const Literal& lit, int64_t dim, int64_t* index, std::string* out) {
  const Shape& shape = lit.shape();
  if (dim == shape.rank()) {
    out->append(ElementToString(lit, (*index)++));
    return;
  }
  out->push_back('{');
  for (int64_t i = 0; i < shape.dimensions(dim); ++i) {
    if (i > 0) out->append(", ");
    AppendArray(lit, dim + 1, index, out);
  }
  out->push_back('}');
}

}  // namespace

std::string Literal::ToString() const {
  if (shape_.IsTuple()) {
    std::string out = "(";
    for (size_t i = 0; i < tuple_elements_.size(); ++i) {
      if (i > 0) out += ", ";
      out += tuple_elements_[i].ToString();
    }
    return out + ")";
  }
  if (!shape_.IsArray()) return "";
  std::string out;
  int64_t index = 0;
  AppendArray(*this, 0, &index, &out);
  return out;
}

namespace {

class LiteralParser {
 public:
  explicit LiteralParser(std::string_view text) : text_(text) {}

  absl::Status Parse(const Shape& shape, Literal* lit) {
    if (shape.IsTuple()) {
      std::vector<Literal> elements;
      if (!Consume('(')) return Error("expected '('");
      for (int64_t i = 0; i < shape.tuple_shapes_size(); ++i) {
        if (i > 0 && !Consume(',')) return Error("expected ','");
        Literal element(shape.tuple_shapes(i));
        if (absl::Status st = Parse(shape.tuple_shapes(i), &element); !st.ok()) return st;
        elements.push_back(std::move(element));
      }
      if (!Consume(')')) return Error("expected ')'");
      *lit = Literal::CreateTuple(std::move(elements));
      return absl::OkStatus();
    }
    *lit = Literal(shape);
    int64_t index = 0;
    return ParseArray(lit, 0, &index);
  }

  absl::Status Finish() {
    SkipSpace();
    if (pos_ != text_.size()) return Error("trailing characters");
    return absl::OkStatus();
  }

 private:
  absl::Status ParseArray(Literal* lit, int64_t dim, int64_t* index) {
    const Shape& shape = lit->shape();
    if (dim == shape.rank()) return ParseElement(lit, (*index)++);
    if (!Consume('{')) return Error("expected '{'");
    for (int64_t i = 0; i < shape.dimensions(dim); ++i) {
      if (i > 0 && !Consume(',')) {
        return Error(StrCat("expected ',' (dimension ", dim, " has size ",
                                  shape.dimensions(dim), ")"));
      }
      if (absl::Status st = ParseArray(lit, dim + 1, index); !st.ok()) return st;
    }
    if (!Consume('}')) {
      return Error(StrCat("expected '}' (dimension ", dim, " has size ",
                                shape.dimensions(dim), ")"));
    }
    return absl::OkStatus();
  }

  absl::Status ParseElement(Literal* lit, int64_t index) {
    SkipSpace();
    size_t start = pos_;
    while (pos_ < text_.size() && (std::isalnum(static_cast<unsigned char>(text_[pos_])) ||
                                   text_[pos_] == '-' || text_[pos_] == '+' ||
                                   text_[pos_] == '.')) {
      ++pos_;
    }
    std::string token(text_.substr(start, pos_ - start));
    if (token.empty()) return Error("expected a number");
    PrimitiveType t = lit->shape().element_type();
    if (t == PRED) {
      if (token == "true" || token == "1") {
        lit->SetFromInt64(index, 1);
      } else if (token == "false" || token == "0") {
        lit->SetFromInt64(index, 0);
      } else {
        return Error(StrCat("bad pred value \"", token, "\""));
      }
      return absl::OkStatus();
    }
    if (IsFloatingPointType(t)) {
      double v;
      if (token == "nan" || token == "-nan") {
        v = std::numeric_limits<double>::quiet_NaN();
      } else if (token == "inf" || token == "-inf") {
        v = token[0] == '-' ? -HUGE_VAL : HUGE_VAL;
      } else if (!SimpleAtod(token, &v)) {
        return Error(StrCat("bad floating-point value \"", token, "\""));
      }
      lit->SetFromDouble(index, v);
      return absl::OkStatus();
    }
    if (t == U64) {
      uint64_t v;
      if (!SimpleAtoi(token, &v)) return Error(StrCat("bad u64 \"", token, "\""));
      lit->SetFromUint64(index, v);
      return absl::OkStatus();
    }
    int64_t v;
    if (!SimpleAtoi(token, &v)) {
      return Error(StrCat("bad integer value \"", token, "\""));
    }
    lit->SetFromInt64(index, v);
    return absl::OkStatus();
  }

  void SkipSpace() {
    while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_]))) ++pos_;
  }
  bool Consume(char c) {
    SkipSpace();
    if (pos_ < text_.size() && text_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  absl::Status Error(std::string_view what) const {
    return absl::InvalidArgumentError(
        StrCat("literal: ", what, " at offset ", pos_, " in \"", text_, "\""));
  }

  std::string_view text_;
  size_t pos_ = 0;
};

}  // namespace

absl::StatusOr<Literal> Literal::Parse(std::string_view text, const Shape& shape) {
  if (!shape.IsArray() && !shape.IsTuple()) {
    return absl::InvalidArgumentError(
        StrCat("literal: cannot hold shape ", shape.ToString()));
  }
  LiteralParser parser(text);
  Literal lit;
  if (absl::Status st = parser.Parse(shape, &lit); !st.ok()) return st;
  if (absl::Status st = parser.Finish(); !st.ok()) return st;
  return lit;
}

bool operator==(const Literal& a, const Literal& b) {
  return ShapeUtil::Compatible(a.shape_, b.shape_) && a.data_ == b.data_ &&
         a.tuple_elements_ == b.tuple_elements_;
}

}  // namespace jx::hlo
