#include "jx/nn/safetensors.h"

#include <array>
#include <cstdio>
#include <set>
#include <utility>

#include "jx/core/errors.h"
#include "jx/core/str_util.h"

namespace jx::safetensors {
namespace {

struct CodeEntry {
  DType dtype;
  std::string_view code;
};
constexpr std::array<CodeEntry, kNumDTypes> kCodes = {{
    {bool_, "BOOL"}, {int8, "I8"}, {int16, "I16"}, {int32, "I32"}, {int64, "I64"},
    {uint8, "U8"}, {uint16, "U16"}, {uint32, "U32"}, {uint64, "U64"},
    {float16, "F16"}, {bfloat16, "BF16"}, {float32, "F32"}, {float64, "F64"},
}};

void AppendJsonString(std::string* out, std::string_view s) {
  out->push_back('"');
  for (const char c : s) {
    switch (c) {
      case '"': out->append("\\\""); break;
      case '\\': out->append("\\\\"); break;
      case '\n': out->append("\\n"); break;
      case '\r': out->append("\\r"); break;
      case '\t': out->append("\\t"); break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof(buf), "\\u%04x", static_cast<unsigned>(c));
          out->append(buf);
        } else {
          out->push_back(c);
        }
    }
  }
  out->push_back('"');
}

// A strict reader for the JSON subset a header uses: objects, arrays, strings and unsigned
// integers (anything else is reported). Nesting is at most three levels, so recursion is fine.
class JsonReader {
 public:
  JsonReader(std::string_view text, std::string_view source) : text_(text), source_(source) {}

  [[noreturn]] void Fail(std::string_view what) const {
    throw ValueError(StrCat("[safetensors] ", source_, ": bad header at byte ", pos_, ": ", what));
  }
  void SkipSpace() {
    while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\n' || text_[pos_] == '\r' || text_[pos_] == '\t')) ++pos_;
  }
  char Peek() {
    SkipSpace();
    return pos_ < text_.size() ? text_[pos_] : '\0';
  }
  void Expect(char c) {
    if (Peek() != c) Fail(StrCat("expected '", std::string(1, c), "'"));
    ++pos_;
  }
  bool AtEnd() {
    SkipSpace();
    return pos_ == text_.size();
  }

  std::string String() {
    Expect('"');
    std::string out;
    while (true) {
      if (pos_ >= text_.size()) Fail("unterminated string");
      const char c = text_[pos_++];
      if (c == '"') return out;
      if (c != '\\') {
        out.push_back(c);
        continue;
      }
      if (pos_ >= text_.size()) Fail("unterminated escape");
      const char e = text_[pos_++];
      switch (e) {
        case '"': case '\\': case '/': out.push_back(e); break;
        case 'b': out.push_back('\b'); break;
        case 'f': out.push_back('\f'); break;
        case 'n': out.push_back('\n'); break;
        case 'r': out.push_back('\r'); break;
        case 't': out.push_back('\t'); break;
        case 'u': AppendUtf8(&out, CodePoint()); break;
        default: Fail("unknown escape");
      }
    }
  }

  uint64_t Unsigned() {
    SkipSpace();
    const size_t start = pos_;
    uint64_t v = 0;
    while (pos_ < text_.size() && text_[pos_] >= '0' && text_[pos_] <= '9') {
      const uint64_t digit = static_cast<uint64_t>(text_[pos_] - '0');
      if (v > (UINT64_MAX - digit) / 10) Fail("integer overflows 64 bits");
      v = v * 10 + digit;
      ++pos_;
    }
    if (pos_ == start) Fail("expected a non-negative integer");
    return v;
  }

  std::vector<uint64_t> UnsignedList() {
    std::vector<uint64_t> out;
    Expect('[');
    if (Peek() == ']') {
      ++pos_;
      return out;
    }
    while (true) {
      out.push_back(Unsigned());
      if (Peek() == ',') {
        ++pos_;
        continue;
      }
      Expect(']');
      return out;
    }
  }

  // Calls field(key) for each member of an object; field consumes the value.
  template <typename F>
  void Object(F&& field) {
    Expect('{');
    if (Peek() == '}') {
      ++pos_;
      return;
    }
    while (true) {
      const std::string key = String();
      Expect(':');
      field(key);
      if (Peek() == ',') {
        ++pos_;
        continue;
      }
      Expect('}');
      return;
    }
  }

 private:
  uint32_t Hex4() {
    if (pos_ + 4 > text_.size()) Fail("truncated \\u escape");
    uint32_t v = 0;
    for (int i = 0; i < 4; ++i) {
      const char c = text_[pos_++];
      v <<= 4;
      if (c >= '0' && c <= '9') v |= static_cast<uint32_t>(c - '0');
      else if (c >= 'a' && c <= 'f') v |= static_cast<uint32_t>(c - 'a' + 10);
      else if (c >= 'A' && c <= 'F') v |= static_cast<uint32_t>(c - 'A' + 10);
      else Fail("bad \\u escape");
    }
    return v;
  }
  uint32_t CodePoint() {
    const uint32_t hi = Hex4();
    if (hi < 0xD800 || hi > 0xDBFF) return hi;
    if (pos_ + 2 > text_.size() || text_[pos_] != '\\' || text_[pos_ + 1] != 'u') Fail("unpaired surrogate");
    pos_ += 2;
    const uint32_t lo = Hex4();
    if (lo < 0xDC00 || lo > 0xDFFF) Fail("unpaired surrogate");
    return 0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00);
  }
  static void AppendUtf8(std::string* out, uint32_t cp) {
    std::string& o = *out;
    if (cp < 0x80) {
      o.push_back(static_cast<char>(cp));
    } else if (cp < 0x800) {
      o.push_back(static_cast<char>(0xC0 | (cp >> 6)));
      o.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else if (cp < 0x10000) {
      o.push_back(static_cast<char>(0xE0 | (cp >> 12)));
      o.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
      o.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else {
      o.push_back(static_cast<char>(0xF0 | (cp >> 18)));
      o.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
      o.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
      o.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    }
  }

  std::string_view text_;
  std::string_view source_;
  size_t pos_ = 0;
};

}  // namespace

std::string_view DTypeCode(DType d) {
  for (const CodeEntry& e : kCodes) {
    if (e.dtype == d) return e.code;
  }
  throw InternalError(StrCat("[safetensors] no code for dtype ", dtype_name(d)));
}

std::optional<DType> DTypeFromCode(std::string_view code) {
  for (const CodeEntry& e : kCodes) {
    if (e.code == code) return e.dtype;
  }
  return std::nullopt;
}

std::string SerializeHeader(const Header& header) {
  std::string out = "{";
  bool first = true;
  auto comma = [&] {
    if (!first) out.push_back(',');
    first = false;
  };
  if (!header.metadata.empty()) {
    comma();
    out.append("\"__metadata__\":{");
    bool first_entry = true;
    for (const auto& [k, v] : header.metadata) {
      if (!first_entry) out.push_back(',');
      first_entry = false;
      AppendJsonString(&out, k);
      out.push_back(':');
      AppendJsonString(&out, v);
    }
    out.push_back('}');
  }
  for (const TensorInfo& t : header.tensors) {
    comma();
    AppendJsonString(&out, t.name);
    StrAppend(&out, ":{\"dtype\":\"", DTypeCode(t.dtype), "\",\"shape\":[");
    for (size_t i = 0; i < t.shape.size(); ++i) StrAppend(&out, i ? "," : "", t.shape[i]);
    StrAppend(&out, "],\"data_offsets\":[", t.begin, ",", t.end, "]}");
  }
  out.push_back('}');
  out.append((8 - out.size() % 8) % 8, ' ');
  return out;
}

Header ParseHeader(std::string_view json, uint64_t data_size, std::string_view source) {
  Header header;
  JsonReader r(json, source);
  std::set<std::string> names;
  r.Object([&](const std::string& name) {
    if (name == "__metadata__") {
      r.Object([&](const std::string& key) { header.metadata[key] = r.String(); });
      return;
    }
    if (!names.insert(name).second) r.Fail(StrCat("tensor \"", name, "\" appears twice"));
    TensorInfo t;
    t.name = name;
    bool has_dtype = false, has_shape = false, has_offsets = false;
    r.Object([&](const std::string& field) {
      if (field == "dtype") {
        const std::string code = r.String();
        const std::optional<DType> d = DTypeFromCode(code);
        if (!d) r.Fail(StrCat("tensor \"", name, "\" has dtype ", code, ", which jx does not have"));
        t.dtype = *d;
        has_dtype = true;
      } else if (field == "shape") {
        for (uint64_t d : r.UnsignedList()) t.shape.push_back(static_cast<int64_t>(d));
        has_shape = true;
      } else if (field == "data_offsets") {
        const std::vector<uint64_t> o = r.UnsignedList();
        if (o.size() != 2) r.Fail(StrCat("tensor \"", name, "\": data_offsets needs two integers"));
        t.begin = o[0];
        t.end = o[1];
        has_offsets = true;
      } else {
        r.Fail(StrCat("tensor \"", name, "\" has an unknown field \"", field, "\""));
      }
    });
    if (!has_dtype || !has_shape || !has_offsets) {
      r.Fail(StrCat("tensor \"", name, "\" lacks dtype, shape or data_offsets"));
    }
    uint64_t bytes = static_cast<uint64_t>(ItemSize(t.dtype));
    for (int64_t d : t.shape) bytes *= static_cast<uint64_t>(d);
    if (t.begin > t.end || t.end > data_size || t.end - t.begin != bytes) {
      r.Fail(StrCat("tensor \"", name, "\" (", DTypeCode(t.dtype), ShapeToString(t.shape), ", ", bytes,
                    " bytes) has data_offsets [", t.begin, ", ", t.end, "] in a data section of ", data_size,
                    " bytes"));
    }
    header.tensors.push_back(std::move(t));
  });
  if (!r.AtEnd()) r.Fail("trailing characters after the header object");
  return header;
}

}  // namespace jx::safetensors
