#include "jx/compiler/hlo/shape.h"

#include <algorithm>
#include <cctype>
#include <ostream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

#include "jx/compiler/hlo/str_util.h"

namespace jx::hlo {
namespace {

struct TypeInfo {
  std::string_view name;
  int bits;
};

constexpr TypeInfo kTypeInfo[] = {
    {"invalid", 0}, {"pred", 8}, {"s8", 8},    {"s16", 16},  {"s32", 32},
    {"s64", 64},    {"u8", 8},   {"u16", 16},  {"u32", 32},  {"u64", 64},
    {"f16", 16},    {"bf16", 16}, {"f32", 32}, {"f64", 64},  {"tuple", 0},
    {"token", 0},
};
static_assert(sizeof(kTypeInfo) / sizeof(kTypeInfo[0]) == TOKEN + 1);

}  // namespace

std::string_view PrimitiveTypeName(PrimitiveType type) {
  return type <= TOKEN ? kTypeInfo[type].name : "invalid";
}

absl::StatusOr<PrimitiveType> StringToPrimitiveType(std::string_view name) {
  for (int i = PRED; i <= TOKEN; ++i) {
    if (kTypeInfo[i].name == name) return static_cast<PrimitiveType>(i);
  }
  return absl::InvalidArgumentError(StrCat("unknown element type \"", name, "\""));
}

int BitWidth(PrimitiveType type) { return type <= TOKEN ? kTypeInfo[type].bits : 0; }
int64_t ByteSizeOfPrimitiveType(PrimitiveType type) { return BitWidth(type) / 8; }

bool IsFloatingPointType(PrimitiveType type) {
  return type == F16 || type == BF16 || type == F32 || type == F64;
}
bool IsSignedIntegralType(PrimitiveType type) { return type >= S8 && type <= S64; }
bool IsUnsignedIntegralType(PrimitiveType type) { return type >= U8 && type <= U64; }
bool IsIntegralType(PrimitiveType type) {
  return IsSignedIntegralType(type) || IsUnsignedIntegralType(type);
}
bool IsArrayType(PrimitiveType type) { return type >= PRED && type <= F64; }

Shape::Shape(PrimitiveType element_type, absl::Span<const int64_t> dimensions)
    : element_type_(element_type),
      dimensions_(dimensions.begin(), dimensions.end()),
      layout_(ShapeUtil::DefaultLayout(rank())) {}

Shape::Shape(PrimitiveType element_type, absl::Span<const int64_t> dimensions, Layout layout)
    : element_type_(element_type),
      dimensions_(dimensions.begin(), dimensions.end()),
      layout_(std::move(layout)) {}

Shape Shape::Tuple(std::vector<Shape> elements) {
  Shape s;
  s.element_type_ = TUPLE;
  s.tuple_shapes_ = std::make_shared<const std::vector<Shape>>(std::move(elements));
  return s;
}

const std::vector<Shape>& Shape::tuple_shapes() const {
  static const std::vector<Shape>* const kNone = new std::vector<Shape>();
  return tuple_shapes_ ? *tuple_shapes_ : *kNone;
}

bool operator==(const Shape& a, const Shape& b) {
  return a.element_type_ == b.element_type_ && a.dimensions_ == b.dimensions_ &&
         a.layout_ == b.layout_ &&
         (a.tuple_shapes_ == b.tuple_shapes_ || a.tuple_shapes() == b.tuple_shapes());
}

Shape Shape::Token() {
  Shape s;
  s.element_type_ = TOKEN;
  return s;
}

std::string Shape::ToString(bool print_layout) const {
  if (IsTuple()) {
    std::string out = "(";
    for (size_t i = 0; i < tuple_shapes().size(); ++i) {
      if (i > 0) out += ", ";
      out += tuple_shapes(i).ToString(print_layout);
    }
    return out + ")";
  }
  std::string out = StrCat(PrimitiveTypeName(element_type_), "[",
                                 absl::StrJoin(dimensions_, ","), "]");
  // XLA leaves the (trivial) layout off scalars; a scalar in another memory space keeps it.
  if (print_layout && IsArray() && (rank() > 0 || layout_.HasTilesOrMemorySpace())) {
    StrAppend(&out, "{", layout_.ToString(), "}");
  }
  return out;
}

std::string Layout::ToString() const {
  std::string out = absl::StrJoin(minor_to_major, ",");
  if (!HasTilesOrMemorySpace()) return out;
  out += ":";
  if (!tiles.empty()) {
    out += "T";
    for (const Tile& tile : tiles) StrAppend(&out, "(", absl::StrJoin(tile.dimensions, ","), ")");
  }
  if (memory_space != kDefaultMemorySpace) StrAppend(&out, "S(", memory_space, ")");
  return out;
}

std::ostream& operator<<(std::ostream& os, const Shape& shape) {
  return os << shape.ToString();
}

std::string ProgramShape::ToString(bool print_layout) const {
  std::string out = "(";
  for (size_t i = 0; i < parameters.size(); ++i) {
    if (i > 0) out += ", ";
    out += parameters[i].ToString(print_layout);
  }
  return StrCat(out, ")->", result.ToString(print_layout));
}

Shape ShapeUtil::ChangeElementType(const Shape& shape, PrimitiveType type) {
  return Shape(type, shape.dimensions());
}

Layout ShapeUtil::DefaultLayout(int64_t rank) {
  Layout layout;
  // A rank past kMaxRank gets no layout entries, so ValidateShape reports it.
  if (rank > kMaxRank) return layout;
  for (int64_t i = rank - 1; i >= 0; --i) layout.minor_to_major.push_back(static_cast<int16_t>(i));
  return layout;
}

int64_t ShapeUtil::ElementsIn(const Shape& shape) {
  int64_t n = 1;
  for (int64_t d : shape.dimensions()) n *= d;
  return n;
}

int64_t ShapeUtil::ByteSizeOf(const Shape& shape) {
  if (shape.IsTuple()) {
    int64_t total = 0;
    for (const Shape& s : shape.tuple_shapes()) total += ByteSizeOf(s);
    return total;
  }
  return ElementsIn(shape) * ByteSizeOfPrimitiveType(shape.element_type());
}

bool ShapeUtil::Compatible(const Shape& a, const Shape& b) {
  if (a.element_type() != b.element_type()) return false;
  if (a.IsTuple()) {
    if (a.tuple_shapes_size() != b.tuple_shapes_size()) return false;
    for (int64_t i = 0; i < a.tuple_shapes_size(); ++i) {
      if (!Compatible(a.tuple_shapes(i), b.tuple_shapes(i))) return false;
    }
    return true;
  }
  return a.dimensions() == b.dimensions();
}

absl::Status ShapeUtil::ValidateShape(const Shape& shape) {
  if (shape.IsTuple()) {
    for (const Shape& s : shape.tuple_shapes()) {
      if (absl::Status st = ValidateShape(s); !st.ok()) return st;
    }
    return absl::OkStatus();
  }
  if (!shape.valid()) return absl::InvalidArgumentError("invalid shape");
  if (shape.rank() > kMaxRank) {
    return absl::InvalidArgumentError(StrCat("shape of rank ", shape.rank(),
                                             " has more than ", kMaxRank, " dimensions"));
  }
  for (int64_t d : shape.dimensions()) {
    if (d < 0) {
      return absl::InvalidArgumentError(
          StrCat("shape ", shape.ToString(), " has a negative dimension"));
    }
  }
  if (shape.IsArray()) {
    // A permutation of the dims: as many entries, each in range, none twice. Every
    // instruction's shape is checked on each verification, so the usual ranks use a bit
    // mask rather than an allocated vector.
    const auto& m2m = shape.layout().minor_to_major;
    bool ok = static_cast<int64_t>(m2m.size()) == shape.rank();
    uint64_t seen_mask = 0;
    std::vector<bool> seen(shape.rank() > 64 ? shape.rank() : 0, false);
    for (int64_t d : m2m) {
      ok = ok && d >= 0 && d < shape.rank();
      if (!ok) break;
      if (shape.rank() <= 64) {
        ok = (seen_mask >> d & 1) == 0;
        seen_mask |= uint64_t{1} << d;
      } else {
        ok = !seen[d];
        seen[d] = true;
      }
    }
    if (!ok) {
      return absl::InvalidArgumentError(StrCat(
          "shape ", shape.ToString(), " has a layout that is not a permutation of its dims"));
    }
    for (const Tile& tile : shape.layout().tiles) {
      bool tile_ok = !tile.dimensions.empty() && static_cast<int64_t>(tile.dimensions.size()) <=
                                                     std::max<int64_t>(shape.rank(), 1);
      for (int64_t t : tile.dimensions) tile_ok = tile_ok && t > 0;
      if (!tile_ok) {
        return absl::InvalidArgumentError(StrCat("shape ", shape.ToString(),
                                                 " has a tile with more dims than the shape or a "
                                                 "non-positive size"));
      }
    }
    if (shape.layout().memory_space < 0) {
      return absl::InvalidArgumentError(
          StrCat("shape ", shape.ToString(), " has a negative memory space"));
    }
  }
  return absl::OkStatus();
}

namespace {

// Parses a comma-separated integer list up to (not including) `close`; `Ints` is
// std::vector<int64_t> (tiles) or DimensionVector (dims, minor_to_major).
template <typename Ints>
bool ParseIntList(std::string_view text, size_t* pos, char close, Ints* out) {
  auto skip = [&] {
    while (*pos < text.size() && text[*pos] == ' ') ++*pos;
  };
  skip();
  if (*pos < text.size() && text[*pos] == close) return true;
  while (true) {
    skip();
    size_t start = *pos;
    if (*pos < text.size() && text[*pos] == '-') ++*pos;
    while (*pos < text.size() && std::isdigit(static_cast<unsigned char>(text[*pos]))) ++*pos;
    if (*pos == start) return false;
    int64_t value = 0;
    if (!SimpleAtoi(text.substr(start, *pos - start), &value)) return false;
    out->push_back(value);
    skip();
    if (*pos >= text.size()) return false;
    if (text[*pos] == close) return true;
    if (text[*pos] != ',') return false;
    ++*pos;
  }
}

// Parses what follows a layout's '{' up to and including its '}':
// "1,0}", "1,0:T(8,128)(2,1)S(1)}", ":S(1)}" (a scalar's).
bool ParseLayoutBody(std::string_view text, size_t* pos, Layout* layout) {
  const size_t colon = text.find_first_of(":}", *pos);
  if (colon == std::string_view::npos) return false;
  // The minor_to_major list ends at the colon (or the brace).
  DimensionVector minor_to_major;
  if (!ParseIntList(text, pos, text[colon], &minor_to_major) || *pos != colon) return false;
  for (int64_t d : minor_to_major) {
    if (d < 0 || d >= kMaxRank) return false;  // no dimension of any shape
    layout->minor_to_major.push_back(static_cast<int16_t>(d));
  }
  if (text[*pos] == '}') {
    ++*pos;
    return true;
  }
  ++*pos;  // ':'
  // "T(..)(..)" then "S(n)", each optional, in XLA's order.
  auto parenthesized = [&](std::vector<int64_t>* out) {
    if (*pos >= text.size() || text[*pos] != '(') return false;
    ++*pos;
    if (!ParseIntList(text, pos, ')', out)) return false;
    ++*pos;
    return true;
  };
  if (*pos < text.size() && text[*pos] == 'T') {
    ++*pos;
    do {
      Tile tile;
      if (!parenthesized(&tile.dimensions)) return false;
      layout->tiles.push_back(std::move(tile));
    } while (*pos < text.size() && text[*pos] == '(');
  }
  if (*pos < text.size() && text[*pos] == 'S') {
    ++*pos;
    std::vector<int64_t> space;
    if (!parenthesized(&space) || space.size() != 1) return false;
    layout->memory_space = space[0];
  }
  if (*pos >= text.size() || text[*pos] != '}') return false;
  ++*pos;
  return true;
}

absl::StatusOr<Shape> ParseShapeAt(std::string_view text, size_t* pos) {
  auto error = [&](std::string_view what) {
    return absl::InvalidArgumentError(StrCat("expected ", what, " in shape"));
  };
  if (*pos < text.size() && text[*pos] == '(') {
    ++*pos;
    std::vector<Shape> elements;
    while (true) {
      while (*pos < text.size() && text[*pos] == ' ') ++*pos;
      if (*pos < text.size() && text[*pos] == ')') break;
      absl::StatusOr<Shape> element = ParseShapeAt(text, pos);
      if (!element.ok()) return element.status();
      elements.push_back(*std::move(element));
      while (*pos < text.size() && text[*pos] == ' ') ++*pos;
      if (*pos < text.size() && text[*pos] == ',') {
        ++*pos;
        continue;
      }
      if (*pos < text.size() && text[*pos] == ')') break;
      return error("',' or ')'");
    }
    ++*pos;
    return Shape::Tuple(std::move(elements));
  }
  size_t start = *pos;
  while (*pos < text.size() && std::isalnum(static_cast<unsigned char>(text[*pos]))) ++*pos;
  absl::StatusOr<PrimitiveType> type = StringToPrimitiveType(text.substr(start, *pos - start));
  if (!type.ok() || *type == TUPLE) {
    *pos = start;  // point at the bad type name
    return error("an element type");
  }
  if (*pos >= text.size() || text[*pos] != '[') return error("'['");
  ++*pos;
  DimensionVector dims;
  if (!ParseIntList(text, pos, ']', &dims)) return error("dimensions");
  ++*pos;
  if (*type == TOKEN) {
    if (!dims.empty()) return error("token[]");
    return Shape::Token();
  }
  Shape shape(*type, dims);
  if (*pos < text.size() && text[*pos] == '{') {
    ++*pos;
    Layout layout;
    if (!ParseLayoutBody(text, pos, &layout)) return error("a layout");
    shape.set_layout(std::move(layout));
  }
  if (absl::Status st = ShapeUtil::ValidateShape(shape); !st.ok()) return st;
  return shape;
}

}  // namespace

absl::StatusOr<Shape> ShapeUtil::ParseShapePrefix(std::string_view text, size_t* consumed) {
  size_t pos = 0;
  absl::StatusOr<Shape> shape = ParseShapeAt(text, &pos);
  *consumed = pos;
  return shape;
}

absl::StatusOr<Shape> ShapeUtil::ParseShape(std::string_view text) {
  size_t consumed = 0;
  absl::StatusOr<Shape> shape = ParseShapePrefix(text, &consumed);
  if (!shape.ok()) {
    return absl::InvalidArgumentError(
        StrCat(Message(shape.status()), " \"", text, "\" at offset ", consumed));
  }
  if (consumed != text.size()) {
    return absl::InvalidArgumentError(
        StrCat("trailing characters after shape in \"", text, "\""));
  }
  return shape;
}

}  // namespace jx::hlo
