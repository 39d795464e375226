#include "jx/lax/debug_format.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "jx/core/errors.h"
#include "jx/core/str_util.h"

namespace jx::debug::internal {
namespace {

// The format mini-language: [[fill]align][sign]["z"]["#"]["0"][width][grouping]["." precision][type]
struct Spec {
  std::string fill = " ";  // one code point (UTF-8)
  char align = '\0';       // '<' '>' '^' '=' or unset
  char sign = '\0';        // '+' '-' ' ' or unset
  bool z = false;
  bool alt = false;
  bool zero = false;
  int64_t width = -1;
  char grouping = '\0';  // ',' '_' or unset
  int64_t precision = -1;
  char type = '\0';
};

size_t CodePointLength(std::string_view s, size_t i) {
  const unsigned char c = static_cast<unsigned char>(s[i]);
  const size_t n = c < 0x80 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
  return std::min(n, s.size() - i);
}

size_t CountCodePoints(std::string_view s) {
  size_t n = 0;
  for (size_t i = 0; i < s.size(); i += CodePointLength(s, i)) ++n;
  return n;
}

bool IsAlign(char c) { return c == '<' || c == '>' || c == '^' || c == '='; }
bool IsDigit(char c) { return c >= '0' && c <= '9'; }

int64_t ReadNumber(std::string_view s, size_t& i) {
  int64_t v = 0;
  while (i < s.size() && IsDigit(s[i])) {
    v = v * 10 + (s[i++] - '0');
    if (v > (int64_t{1} << 40)) throw ValueError("Too many decimal digits in format string");
  }
  return v;
}

Spec ParseSpec(std::string_view s, std::string_view type_name) {
  Spec spec;
  size_t i = 0;
  if (!s.empty()) {
    const size_t first = CodePointLength(s, 0);
    if (first < s.size() && IsAlign(s[first])) {
      spec.fill = std::string(s.substr(0, first));
      spec.align = s[first];
      i = first + 1;
    } else if (IsAlign(s[0])) {
      spec.align = s[0];
      i = 1;
    }
  }
  if (i < s.size() && (s[i] == '+' || s[i] == '-' || s[i] == ' ')) spec.sign = s[i++];
  if (i < s.size() && s[i] == 'z') spec.z = true, ++i;
  if (i < s.size() && s[i] == '#') spec.alt = true, ++i;
  if (i < s.size() && s[i] == '0') {
    spec.zero = true;
    if (spec.align == '\0') spec.fill = "0", spec.align = '=';
    ++i;
  }
  if (i < s.size() && IsDigit(s[i])) spec.width = ReadNumber(s, i);
  if (i < s.size() && (s[i] == ',' || s[i] == '_')) spec.grouping = s[i++];
  if (i < s.size() && (s[i] == ',' || s[i] == '_')) throw ValueError("Cannot specify both ',' and '_'.");
  if (i < s.size() && s[i] == '.') {
    ++i;
    if (i >= s.size() || !IsDigit(s[i])) throw ValueError("Format specifier missing precision");
    spec.precision = ReadNumber(s, i);
  }
  if (s.size() - i > 1) {
    throw ValueError(StrCat("Invalid format specifier '", s, "' for object of type '", type_name, "'"));
  }
  if (i < s.size()) spec.type = s[i];
  return spec;
}

std::string Repeat(std::string_view fill, int64_t n) {
  std::string out;
  for (int64_t k = 0; k < n; ++k) out += fill;
  return out;
}

// Lays out sign + body in the spec's width; '=' puts the padding between them.
std::string Pad(std::string_view sign, std::string_view body, const Spec& spec, char default_align) {
  const int64_t len = static_cast<int64_t>(CountCodePoints(sign) + CountCodePoints(body));
  const int64_t pad = std::max<int64_t>(0, spec.width - len);
  const char align = spec.align ? spec.align : default_align;
  switch (align) {
    case '<': return StrCat(sign, body, Repeat(spec.fill, pad));
    case '^': return StrCat(Repeat(spec.fill, pad / 2), sign, body, Repeat(spec.fill, pad - pad / 2));
    case '=': return StrCat(sign, Repeat(spec.fill, pad), body);
    default: return StrCat(Repeat(spec.fill, pad), sign, body);
  }
}

// Inserts `sep` every `every` digits from the right of `digits`; with '0' fill and '='
// alignment the zero padding is grouped too, up to `min_width` characters (Python's rule).
std::string Group(std::string digits, char sep, int every, int64_t min_width) {
  auto group = [&](const std::string& d) {
    std::string out;
    for (size_t k = 0; k < d.size(); ++k) {
      if (k > 0 && (d.size() - k) % every == 0) out += sep;
      out += d[k];
    }
    return out;
  };
  if (sep == '\0') {
    while (static_cast<int64_t>(digits.size()) < min_width) digits.insert(digits.begin(), '0');
    return digits;
  }
  std::string out = group(digits);
  while (static_cast<int64_t>(out.size()) < min_width) {
    digits.insert(digits.begin(), '0');
    out = group(digits);  // may pass min_width by the separator: Python keeps it ("0,001,234")
  }
  return out;
}

// Width left for the digits when the padding is grouped zeros (fill '0', align '=').
int64_t ZeroPadWidth(const Spec& spec, size_t sign_len, size_t rest_len) {
  if (!(spec.fill == "0" && spec.align == '=') || spec.width < 0) return 0;
  return spec.width - static_cast<int64_t>(sign_len + rest_len);
}

std::string SignOf(bool negative, const Spec& spec) {
  if (negative) return "-";
  if (spec.sign == '+') return "+";
  if (spec.sign == ' ') return " ";
  return "";
}

// Digits and decimal exponent of x (> 0) rounded to `sig` significant digits, or the
// shortest digits that round-trip when sig < 0 (repr).
void Digits(double x, int sig, std::string& digits, int& exp) {
  char buf[64];
  if (sig < 0) {
    for (int p = 1; p <= 17; ++p) {
      std::snprintf(buf, sizeof(buf), "%.*e", p - 1, x);
      if (std::strtod(buf, nullptr) == x) break;
    }
  } else {
    std::snprintf(buf, sizeof(buf), "%.*e", std::max(sig, 1) - 1, x);
  }
  std::string_view s(buf);
  const size_t e = s.find('e');
  digits.clear();
  for (char c : s.substr(0, e)) {
    if (IsDigit(c)) digits += c;
  }
  exp = std::atoi(buf + e + 1);
}

std::string ExponentText(int exp, bool upper) {
  char buf[16];
  std::snprintf(buf, sizeof(buf), "%c%c%02d", upper ? 'E' : 'e', exp < 0 ? '-' : '+', std::abs(exp));
  return buf;
}

// 'g' (and repr, and the empty type with a precision): digits laid out fixed or scientific.
// Returns integer part and the rest (point, fraction, exponent) separately for grouping.
std::pair<std::string, std::string> GeneralLayout(double x, const Spec& spec) {
  std::string digits;
  int exp = 0;
  const bool repr = spec.type == '\0' && spec.precision < 0;
  const bool add_dot_0 = spec.type == '\0';
  const int p = repr ? -1 : static_cast<int>(spec.precision < 0 ? 6 : std::max<int64_t>(spec.precision, 1));
  if (x == 0) {
    digits = std::string(repr ? 1 : p, '0');
    exp = 0;
  } else {
    Digits(x, p, digits, exp);
  }
  bool scientific = false;
  if (repr) {
    scientific = exp < -4 || exp >= 16;
  } else {
    scientific = exp < -4 || exp >= (add_dot_0 ? p - 1 : p);
  }
  if (!spec.alt) {
    while (digits.size() > 1 && digits.back() == '0') digits.pop_back();
  }
  const bool upper = spec.type == 'G';
  if (scientific) {
    std::string frac = digits.substr(1);
    std::string rest = frac.empty() ? (spec.alt ? "." : "") : "." + frac;
    return {digits.substr(0, 1), rest + ExponentText(exp, upper)};
  }
  std::string int_part, frac;
  if (exp < 0) {
    int_part = "0";
    frac = std::string(-exp - 1, '0') + digits;
  } else {
    const size_t n = static_cast<size_t>(exp) + 1;
    if (digits.size() < n) digits.append(n - digits.size(), '0');
    int_part = digits.substr(0, n);
    frac = digits.substr(n);
  }
  if (frac.empty()) return {int_part, add_dot_0 ? ".0" : (spec.alt ? "." : "")};
  return {int_part, "." + frac};
}

std::string FormatFloatSpec(double x, Spec spec) {
  switch (spec.type) {
    case '\0': case 'e': case 'E': case 'f': case 'F': case 'g': case 'G': case 'n': case '%':
      break;
    default:
      throw ValueError(StrCat("Unknown format code '", std::string(1, spec.type), "' for object of type 'float'"));
  }
  if (spec.type == 'n') {
    if (spec.grouping) throw ValueError(StrCat("Cannot specify '", std::string(1, spec.grouping), "' with 'n'."));
    spec.type = 'g';
  }
  const bool upper = spec.type == 'E' || spec.type == 'F' || spec.type == 'G';
  bool negative = std::signbit(x) && !std::isnan(x);  // Python prints nan unsigned
  double a = std::fabs(x);
  std::string int_part, rest;
  if (std::isnan(x) || std::isinf(x)) {
    int_part = std::isnan(x) ? (upper ? "NAN" : "nan") : (upper ? "INF" : "inf");
    if (spec.type == '%') rest = "%";
  } else if (spec.type == 'f' || spec.type == 'F' || spec.type == '%' || spec.type == 'e' || spec.type == 'E') {
    const char kind = (spec.type == 'e' || spec.type == 'E') ? 'e' : 'f';
    if (spec.type == '%') a *= 100;
    const int p = static_cast<int>(spec.precision < 0 ? 6 : spec.precision);
    char fmt[8];
    std::snprintf(fmt, sizeof(fmt), "%%%s.*%c", spec.alt ? "#" : "", kind);
    std::vector<char> buf(static_cast<size_t>(p) + 400);
    std::snprintf(buf.data(), buf.size(), fmt, p, a);
    std::string s(buf.data());
    if (upper) {
      for (char& c : s) c = c == 'e' ? 'E' : c;
    }
    const size_t cut = s.find_first_of(".eE");
    int_part = s.substr(0, cut);
    rest = cut == std::string::npos ? "" : s.substr(cut);
    if (spec.type == '%') rest += '%';
  } else {
    std::tie(int_part, rest) = GeneralLayout(a, spec);
  }
  if (spec.z && negative && int_part.find_first_not_of('0') == std::string::npos &&
      rest.find_first_of("123456789") == std::string::npos) {
    negative = false;  // 'z': negative zero after rounding prints as zero
  }
  const std::string sign = SignOf(negative, spec);
  if (std::isfinite(x)) {
    int_part = Group(int_part, spec.grouping, 3, ZeroPadWidth(spec, sign.size(), rest.size()));
  }
  return Pad(sign, int_part + rest, spec, '>');
}

std::string FormatIntegerSpec(bool negative, uint64_t magnitude, const Spec& spec) {
  const bool float_type = std::string_view("eEfFgG%").find(spec.type) != std::string_view::npos && spec.type;
  if (float_type) {
    const double v = static_cast<double>(magnitude);
    return FormatFloatSpec(negative ? -v : v, spec);
  }
  if (spec.precision >= 0) throw ValueError("Precision not allowed in integer format specifier");
  if (spec.z) throw ValueError("Negative zero coercion (z) not allowed in integer format specifier");
  int base = 10;
  std::string prefix;
  switch (spec.type) {
    case '\0': case 'd': break;
    case 'n':
      if (spec.grouping) throw ValueError(StrCat("Cannot specify '", std::string(1, spec.grouping), "' with 'n'."));
      break;
    case 'b': base = 2, prefix = "0b"; break;
    case 'o': base = 8, prefix = "0o"; break;
    case 'x': base = 16, prefix = "0x"; break;
    case 'X': base = 16, prefix = "0X"; break;
    case 'c': {
      if (spec.sign) throw ValueError("Sign not allowed with integer format specifier 'c'");
      if (spec.alt) throw ValueError("Alternate form (#) not allowed with integer format specifier 'c'");
      if (negative || magnitude > 0x10FFFF) throw ValueError("%c arg not in range(0x110000)");
      const auto cp = static_cast<uint32_t>(magnitude);
      std::string ch;
      if (cp < 0x80) {
        ch += static_cast<char>(cp);
      } else if (cp < 0x800) {
        ch += static_cast<char>(0xC0 | (cp >> 6)), ch += static_cast<char>(0x80 | (cp & 0x3F));
      } else if (cp < 0x10000) {
        ch += static_cast<char>(0xE0 | (cp >> 12)), ch += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
        ch += static_cast<char>(0x80 | (cp & 0x3F));
      } else {
        ch += static_cast<char>(0xF0 | (cp >> 18)), ch += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
        ch += static_cast<char>(0x80 | ((cp >> 6) & 0x3F)), ch += static_cast<char>(0x80 | (cp & 0x3F));
      }
      return Pad("", ch, spec, '<');
    }
    default:
      throw ValueError(StrCat("Unknown format code '", std::string(1, spec.type), "' for object of type 'int'"));
  }
  if (spec.grouping == ',' && base != 10) {
    throw ValueError(StrCat("Cannot specify ',' with '", std::string(1, spec.type), "'."));
  }
  std::string digits;
  do {
    const int d = static_cast<int>(magnitude % base);
    digits.insert(digits.begin(), static_cast<char>(d < 10 ? '0' + d : (spec.type == 'X' ? 'A' : 'a') + d - 10));
    magnitude /= base;
  } while (magnitude != 0);
  const std::string sign = SignOf(negative, spec) + (spec.alt ? prefix : "");
  digits = Group(digits, spec.grouping, base == 10 ? 3 : 4, ZeroPadWidth(spec, sign.size(), 0));
  return Pad(sign, digits, spec, '>');
}

}  // namespace

std::string FormatFloat(double x, std::string_view spec) {
  if (spec.empty()) return FormatFloatSpec(x, Spec{});
  return FormatFloatSpec(x, ParseSpec(spec, "float"));
}

std::string FormatInt(int64_t x, std::string_view spec) {
  const uint64_t magnitude = x < 0 ? 0 - static_cast<uint64_t>(x) : static_cast<uint64_t>(x);
  return FormatIntegerSpec(x < 0, magnitude, ParseSpec(spec, "int"));
}

std::string FormatUInt(uint64_t x, std::string_view spec) {
  return FormatIntegerSpec(false, x, ParseSpec(spec, "int"));
}

std::string FormatString(std::string_view s, std::string_view spec_text) {
  const Spec spec = ParseSpec(spec_text, "str");
  if (spec.type != '\0' && spec.type != 's') {
    throw ValueError(StrCat("Unknown format code '", std::string(1, spec.type), "' for object of type 'str'"));
  }
  if (spec.sign) throw ValueError("Sign not allowed in string format specifier");
  if (spec.alt) throw ValueError("Alternate form (#) not allowed in string format specifier");
  if (spec.z) throw ValueError("Negative zero coercion (z) not allowed in format specifier");
  if (spec.grouping) throw ValueError(StrCat("Cannot specify '", std::string(1, spec.grouping), "' with 's'."));
  if (spec.align == '=') throw ValueError("'=' alignment not allowed in string format specifier");
  std::string_view body = s;
  if (spec.precision >= 0) {
    size_t end = 0;
    for (int64_t k = 0; k < spec.precision && end < s.size(); ++k) end += CodePointLength(s, end);
    body = s.substr(0, end);
  }
  return Pad("", body, spec, '<');
}

std::vector<FormatPiece> ParseFormat(std::string_view fmt, size_t num_positional,
                                     absl::Span<const std::string> names) {
  auto fail = [&](std::string_view why) {
    return ValueError(StrCat("[debug.print] format \"", fmt, "\": ", why));
  };
  std::vector<FormatPiece> pieces;
  std::string literal;
  size_t next_auto = 0;
  bool used_auto = false, used_manual = false;
  for (size_t i = 0; i < fmt.size(); ++i) {
    const char c = fmt[i];
    if (c == '}') {
      if (i + 1 < fmt.size() && fmt[i + 1] == '}') {
        literal += '}';
        ++i;
        continue;
      }
      throw fail("single '}' encountered");
    }
    if (c != '{') {
      literal += c;
      continue;
    }
    if (i + 1 < fmt.size() && fmt[i + 1] == '{') {
      literal += '{';
      ++i;
      continue;
    }
    // The field ends at the '}' that closes it (a spec may hold nested braces).
    size_t close = i + 1;
    for (int depth = 1; close < fmt.size(); ++close) {
      if (fmt[close] == '{') ++depth;
      if (fmt[close] == '}' && --depth == 0) break;
    }
    if (close >= fmt.size()) throw fail("expected '}' before end of string");
    ReplacementField field;
    field.text = std::string(fmt.substr(i, close - i + 1));
    std::string_view body = fmt.substr(i + 1, close - i - 1);
    const size_t colon = body.find(':');
    const size_t bang = body.substr(0, colon).find('!');
    std::string_view name = body.substr(0, std::min(colon, bang));
    if (colon != std::string_view::npos) field.spec = std::string(body.substr(colon + 1));
    if (bang != std::string_view::npos) {
      const std::string_view conv = body.substr(bang + 1, colon == std::string_view::npos ? std::string_view::npos
                                                                                          : colon - bang - 1);
      if (conv != "s" && conv != "r") {
        throw fail(StrCat("field ", field.text, ": unknown conversion '!", conv, "' (use !s or !r)"));
      }
      field.conversion = conv[0];
    }
    if (field.spec.find('{') != std::string::npos) {
      throw fail(StrCat("field ", field.text, ": nested replacement fields in a format spec are not supported"));
    }
    if (name.find_first_of(".[") != std::string_view::npos) {
      throw fail(StrCat("field ", field.text, ": attribute and element access are not supported"));
    }
    if (name.empty()) {
      if (used_manual) throw fail("cannot switch from manual field numbering to automatic");
      used_auto = true;
      field.arg = next_auto++;
      if (field.arg >= num_positional) {
        throw fail(StrCat("field ", field.text, ": replacement index ", field.arg, " out of range for ",
                          num_positional, " positional argument(s)"));
      }
    } else if (name.find_first_not_of("0123456789") == std::string_view::npos) {
      if (used_auto) throw fail("cannot switch from automatic field numbering to manual");
      used_manual = true;
      field.arg = static_cast<size_t>(std::stoul(std::string(name)));
      if (field.arg >= num_positional) {
        throw fail(StrCat("field ", field.text, ": replacement index ", field.arg, " out of range for ",
                          num_positional, " positional argument(s)"));
      }
    } else {
      const auto it = std::find(names.begin(), names.end(), name);
      if (it == names.end()) {
        std::string known;
        for (const std::string& n : names) known += (known.empty() ? "" : ", ") + n;
        throw fail(StrCat("field ", field.text, ": no argument named '", name, "' (named arguments: ",
                          known.empty() ? "none" : known, ")"));
      }
      field.arg = num_positional + static_cast<size_t>(it - names.begin());
    }
    if (!literal.empty()) pieces.emplace_back(std::move(literal));
    literal.clear();
    pieces.emplace_back(std::move(field));
    i = close;
  }
  if (!literal.empty()) pieces.emplace_back(std::move(literal));
  return pieces;
}

namespace {

std::string FormatScalar(const Array& v, std::string_view spec) {
  const DType d = v.dtype();
  if (IsFloating(d)) return FormatFloat(v.item<double>(), spec);
  if (IsUnsignedInt(d)) return FormatUInt(v.item<uint64_t>(), spec);
  return FormatInt(v.item<int64_t>(), spec);  // bool formats as Python's int with a spec
}

}  // namespace

std::string FormatField(std::string_view fmt, const ReplacementField& field, const Array& value) {
  try {
    if (field.conversion == 'r') return FormatString(value.repr(), field.spec);
    if (field.conversion == 's' || field.spec.empty()) return FormatString(value.str(), field.spec);
    if (value.ndim() != 0) {
      throw TypeError(StrCat("[debug.print] format \"", fmt, "\" field ", field.text,
                             ": unsupported format string passed to numpy.ndarray.__format__ (the value is ",
                             value.aval().str(), "; a format spec applies to 0-d arrays only)"));
    }
    return FormatScalar(value, field.spec);
  } catch (const ValueError& e) {
    throw ValueError(StrCat("[debug.print] format \"", fmt, "\" field ", field.text, " for a ",
                            value.aval().str(), " value: ", e.what()));
  }
}

void CheckField(std::string_view fmt, const ReplacementField& field, const ShapedArray& aval) {
  if (aval.ndim() != 0 && field.conversion == '\0' && !field.spec.empty()) {
    throw TypeError(StrCat("[debug.print] format \"", fmt, "\" field ", field.text,
                           ": unsupported format string passed to numpy.ndarray.__format__ (the value is ",
                           aval.str(), "; a format spec applies to 0-d arrays only)"));
  }
  FormatField(fmt, field, Array::Scalar(0, aval.dtype));
}

}  // namespace jx::debug::internal
