#include "jx/compiler/hlo/hlo_attributes.h"

#include <algorithm>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

#include "jx/compiler/hlo/str_util.h"

namespace jx::hlo {
namespace {

absl::Status Bad(std::string_view what, std::string_view text) {
  return absl::InvalidArgumentError(StrCat("bad ", what, " \"", text, "\""));
}

template <typename Enum, size_t N>
absl::StatusOr<Enum> ParseEnum(std::string_view s, const std::string_view (&names)[N],
                               std::string_view what) {
  for (size_t i = 0; i < N; ++i) {
    if (names[i] == s) return static_cast<Enum>(i);
  }
  return Bad(what, s);
}

constexpr std::string_view kDirections[] = {"EQ", "NE", "LT", "LE", "GT", "GE"};
constexpr std::string_view kCompareTypes[] = {"DEFAULT", "FLOAT", "TOTALORDER", "SIGNED",
                                              "UNSIGNED"};
constexpr std::string_view kFusionKinds[] = {"kLoop", "kInput", "kOutput", "kCustom"};
constexpr std::string_view kRngAlgorithms[] = {"rng_default", "rng_three_fry", "rng_philox"};
constexpr std::string_view kPrecisions[] = {"default", "high", "highest"};

bool ParseInt(std::string_view s, int64_t* out) {
  return SimpleAtoi(StripAsciiWhitespace(s), out);
}

// Splits "a x b x c" style lists; an empty string gives no parts.
std::vector<std::string_view> SplitNonEmpty(std::string_view s, char sep) {
  if (s.empty()) return {};
  return StrSplit(s, sep);
}

}  // namespace

std::string_view ComparisonDirectionToString(ComparisonDirection d) {
  return kDirections[static_cast<int>(d)];
}
absl::StatusOr<ComparisonDirection> ParseComparisonDirection(std::string_view s) {
  return ParseEnum<ComparisonDirection>(s, kDirections, "comparison direction");
}
std::string_view ComparisonTypeToString(ComparisonType t) {
  return kCompareTypes[static_cast<int>(t)];
}
absl::StatusOr<ComparisonType> ParseComparisonType(std::string_view s) {
  return ParseEnum<ComparisonType>(s, kCompareTypes, "comparison type");
}
std::string_view FusionKindToString(FusionKind k) { return kFusionKinds[static_cast<int>(k)]; }
absl::StatusOr<FusionKind> ParseFusionKind(std::string_view s) {
  return ParseEnum<FusionKind>(s, kFusionKinds, "fusion kind");
}
std::string_view RandomAlgorithmToString(RandomAlgorithm a) {
  return kRngAlgorithms[static_cast<int>(a)];
}
absl::StatusOr<RandomAlgorithm> ParseRandomAlgorithm(std::string_view s) {
  return ParseEnum<RandomAlgorithm>(s, kRngAlgorithms, "rng algorithm");
}

std::string_view PrecisionToString(Precision p) { return kPrecisions[static_cast<int>(p)]; }
absl::StatusOr<Precision> ParsePrecision(std::string_view s) {
  return ParseEnum<Precision>(StripAsciiWhitespace(s), kPrecisions, "precision");
}

std::string PrecisionConfigToString(const PrecisionConfig& p) {
  return StrCat("{", PrecisionToString(p.operand_precision[0]), ",",
                PrecisionToString(p.operand_precision[1]), "}");
}

absl::StatusOr<PrecisionConfig> ParsePrecisionConfig(std::string_view s) {
  std::string_view body = StripAsciiWhitespace(s);
  if (!ConsumePrefix(&body, "{") || !ConsumeSuffix(&body, "}")) {
    return Bad("operand_precision", s);
  }
  const std::vector<std::string_view> parts = StrSplit(body, ',');
  if (parts.size() != 2) return Bad("operand_precision (one per operand)", s);
  PrecisionConfig config;
  for (int i = 0; i < 2; ++i) {
    absl::StatusOr<Precision> p = ParsePrecision(parts[i]);
    if (!p.ok()) return p.status();
    config.operand_precision[i] = *p;
  }
  return config;
}

std::string IntListToString(absl::Span<const int64_t> values) {
  return StrCat("{", absl::StrJoin(values, ","), "}");
}

absl::StatusOr<std::vector<int64_t>> ParseIntList(std::string_view s) {
  std::string_view body = StripAsciiWhitespace(s);
  if (!ConsumePrefix(&body, "{") || !ConsumeSuffix(&body, "}")) {
    return Bad("integer list", s);
  }
  std::vector<int64_t> out;
  if (StripAsciiWhitespace(body).empty()) return out;
  for (std::string_view part : StrSplit(body, ',')) {
    int64_t v;
    if (!ParseInt(part, &v)) return Bad("integer list", s);
    out.push_back(v);
  }
  return out;
}

std::string QuoteString(std::string_view s) { return StrCat("\"", CEscape(s), "\""); }

absl::StatusOr<std::string> ParseQuotedString(std::string_view s) {
  std::string_view body = StripAsciiWhitespace(s);
  if (body.size() < 2 || body.front() != '"' || body.back() != '"') {
    return Bad("quoted string", s);
  }
  std::string out;
  if (!CUnescape(body.substr(1, body.size() - 2), &out)) return Bad("quoted string", s);
  return out;
}

std::string SliceConfigToString(const SliceConfig& s) {
  const bool print_strides =
      std::any_of(s.strides.begin(), s.strides.end(), [](int64_t v) { return v != 1; });
  std::vector<std::string> dims;
  for (size_t i = 0; i < s.starts.size(); ++i) {
    dims.push_back(print_strides
                       ? StrCat("[", s.starts[i], ":", s.limits[i], ":", s.strides[i], "]")
                       : StrCat("[", s.starts[i], ":", s.limits[i], "]"));
  }
  return StrCat("{", absl::StrJoin(dims, ", "), "}");
}

absl::StatusOr<SliceConfig> ParseSliceConfig(std::string_view s) {
  std::string_view body = StripAsciiWhitespace(s);
  if (!ConsumePrefix(&body, "{") || !ConsumeSuffix(&body, "}")) {
    return Bad("slice", s);
  }
  SliceConfig out;
  body = StripAsciiWhitespace(body);
  if (body.empty()) return out;
  for (std::string_view dim : StrSplit(body, ',')) {
    dim = StripAsciiWhitespace(dim);
    if (!ConsumePrefix(&dim, "[") || !ConsumeSuffix(&dim, "]")) {
      return Bad("slice", s);
    }
    std::vector<std::string_view> parts = StrSplit(dim, ':');
    int64_t start, limit, stride = 1;
    if (parts.size() < 2 || parts.size() > 3 || !ParseInt(parts[0], &start) ||
        !ParseInt(parts[1], &limit) || (parts.size() == 3 && !ParseInt(parts[2], &stride))) {
      return Bad("slice", s);
    }
    out.starts.push_back(start);
    out.limits.push_back(limit);
    out.strides.push_back(stride);
  }
  return out;
}

std::string PaddingConfigToString(const PaddingConfig& p) {
  const bool print_interior =
      std::any_of(p.begin(), p.end(), [](const PaddingDim& d) { return d.interior != 0; });
  std::vector<std::string> dims;
  for (const PaddingDim& d : p) {
    dims.push_back(print_interior ? StrCat(d.low, "_", d.high, "_", d.interior)
                                  : StrCat(d.low, "_", d.high));
  }
  return absl::StrJoin(dims, "x");
}

absl::StatusOr<PaddingConfig> ParsePaddingConfig(std::string_view s) {
  PaddingConfig out;
  for (std::string_view dim : SplitNonEmpty(StripAsciiWhitespace(s), 'x')) {
    std::vector<std::string_view> parts = StrSplit(dim, '_');
    PaddingDim d;
    if (parts.size() < 2 || parts.size() > 3 || !ParseInt(parts[0], &d.low) ||
        !ParseInt(parts[1], &d.high) || (parts.size() == 3 && !ParseInt(parts[2], &d.interior))) {
      return Bad("padding", s);
    }
    out.push_back(d);
  }
  return out;
}

std::optional<ScanWindow> AsScanWindow(const Window& w, absl::Span<const int64_t> base_dims) {
  if (w.size() != base_dims.size()) return std::nullopt;
  std::optional<ScanWindow> scan;
  for (size_t d = 0; d < w.size(); ++d) {
    const WindowDim& wd = w[d];
    if (wd.stride != 1 || wd.lhs_dilation != 1 || wd.rhs_dilation != 1) return std::nullopt;
    if (wd.size == 1 && wd.pad_low == 0 && wd.pad_high == 0) continue;
    const int64_t n = base_dims[d];
    if (scan || n < 2 || wd.size != n) return std::nullopt;
    if (wd.pad_low == n - 1 && wd.pad_high == 0) {
      scan = ScanWindow{static_cast<int64_t>(d), false};
    } else if (wd.pad_low == 0 && wd.pad_high == n - 1) {
      scan = ScanWindow{static_cast<int64_t>(d), true};
    } else {
      return std::nullopt;
    }
  }
  return scan;
}

std::string WindowToString(const Window& w) {
  auto all = [&](auto pred) { return std::all_of(w.begin(), w.end(), pred); };
  auto join = [&](auto field) {
    std::vector<std::string> parts;
    for (const WindowDim& d : w) parts.push_back(field(d));
    return absl::StrJoin(parts, "x");
  };
  std::vector<std::string> fields;
  if (!w.empty()) {
    fields.push_back("size=" + join([](const WindowDim& d) { return StrCat(d.size); }));
  }
  if (!all([](const WindowDim& d) { return d.stride == 1; })) {
    fields.push_back("stride=" + join([](const WindowDim& d) { return StrCat(d.stride); }));
  }
  if (!all([](const WindowDim& d) { return d.pad_low == 0 && d.pad_high == 0; })) {
    fields.push_back("pad=" + join([](const WindowDim& d) {
                       return StrCat(d.pad_low, "_", d.pad_high);
                     }));
  }
  if (!all([](const WindowDim& d) { return d.lhs_dilation == 1; })) {
    fields.push_back("lhs_dilate=" + join([](const WindowDim& d) {
                       return StrCat(d.lhs_dilation);
                     }));
  }
  if (!all([](const WindowDim& d) { return d.rhs_dilation == 1; })) {
    fields.push_back("rhs_dilate=" + join([](const WindowDim& d) {
                       return StrCat(d.rhs_dilation);
                     }));
  }
  return StrCat("{", absl::StrJoin(fields, " "), "}");
}

absl::StatusOr<Window> ParseWindow(std::string_view s) {
  std::string_view body = StripAsciiWhitespace(s);
  if (!ConsumePrefix(&body, "{") || !ConsumeSuffix(&body, "}")) {
    return Bad("window", s);
  }
  Window w;
  bool have_size = false;
  for (std::string_view field : StrSplit(body, ' ', /*skip_empty=*/true)) {
    std::pair<std::string_view, std::string_view> kv = SplitOnce(field, "=");
    std::vector<std::string_view> dims = SplitNonEmpty(kv.second, 'x');
    if (kv.first == "size") {
      w.resize(dims.size());
      have_size = true;
    } else if (!have_size || dims.size() != w.size()) {
      return Bad("window (size= must come first and fields must agree in rank)", s);
    }
    for (size_t i = 0; i < dims.size(); ++i) {
      WindowDim& d = w[i];
      bool ok = true;
      if (kv.first == "size") {
        ok = ParseInt(dims[i], &d.size);
      } else if (kv.first == "stride") {
        ok = ParseInt(dims[i], &d.stride);
      } else if (kv.first == "pad") {
        std::vector<std::string_view> lh = StrSplit(dims[i], '_');
        ok = lh.size() == 2 && ParseInt(lh[0], &d.pad_low) && ParseInt(lh[1], &d.pad_high);
      } else if (kv.first == "lhs_dilate") {
        ok = ParseInt(dims[i], &d.lhs_dilation);
      } else if (kv.first == "rhs_dilate") {
        ok = ParseInt(dims[i], &d.rhs_dilation);
      } else {
        return Bad("window field", field);
      }
      if (!ok) return Bad("window", s);
    }
  }
  return w;
}

namespace {

// One operand's dim-label string, e.g. "b01f": `first`/`second` name the two non-spatial
// dims and `spatial` lists the spatial dims in order.
std::string DimLabels(int64_t rank, char first_label, int64_t first, char second_label,
                      int64_t second, const std::vector<int64_t>& spatial) {
  std::string out(rank, '?');
  if (first >= 0 && first < rank) out[first] = first_label;
  if (second >= 0 && second < rank) out[second] = second_label;
  for (size_t i = 0; i < spatial.size(); ++i) {
    if (spatial[i] >= 0 && spatial[i] < rank) out[spatial[i]] = static_cast<char>('0' + i);
  }
  return out;
}

absl::Status ParseDimLabels(std::string_view labels, char first_label, int64_t* first,
                            char second_label, int64_t* second, std::vector<int64_t>* spatial,
                            std::string_view whole) {
  *first = -1;
  *second = -1;
  spatial->assign(labels.size() >= 2 ? labels.size() - 2 : 0, -1);
  for (size_t i = 0; i < labels.size(); ++i) {
    char c = labels[i];
    if (c == first_label && *first < 0) {
      *first = static_cast<int64_t>(i);
    } else if (c == second_label && *second < 0) {
      *second = static_cast<int64_t>(i);
    } else if (c >= '0' && c <= '9' && static_cast<size_t>(c - '0') < spatial->size() &&
               (*spatial)[c - '0'] < 0) {
      (*spatial)[c - '0'] = static_cast<int64_t>(i);
    } else {
      return Bad("dim_labels", whole);
    }
  }
  if (*first < 0 || *second < 0) return Bad("dim_labels", whole);
  return absl::OkStatus();
}

}  // namespace

std::string ConvolutionDimensionNumbersToString(const ConvolutionDimensionNumbers& d) {
  const int64_t rank = static_cast<int64_t>(d.input_spatial_dimensions.size()) + 2;
  return StrCat(
      DimLabels(rank, 'b', d.input_batch_dimension, 'f', d.input_feature_dimension,
                d.input_spatial_dimensions),
      "_",
      DimLabels(rank, 'i', d.kernel_input_feature_dimension, 'o',
                d.kernel_output_feature_dimension, d.kernel_spatial_dimensions),
      "->",
      DimLabels(rank, 'b', d.output_batch_dimension, 'f', d.output_feature_dimension,
                d.output_spatial_dimensions));
}

absl::StatusOr<ConvolutionDimensionNumbers> ParseConvolutionDimensionNumbers(std::string_view s) {
  std::string_view text = StripAsciiWhitespace(s);
  std::pair<std::string_view, std::string_view> io = SplitOnce(text, "->");
  std::pair<std::string_view, std::string_view> lhs_rhs = SplitOnce(io.first, "_");
  if (lhs_rhs.first.size() != lhs_rhs.second.size() ||
      lhs_rhs.first.size() != io.second.size() || lhs_rhs.first.size() < 2) {
    return Bad("dim_labels (input, kernel and output must have the same rank)", s);
  }
  ConvolutionDimensionNumbers d;
  absl::Status st = ParseDimLabels(lhs_rhs.first, 'b', &d.input_batch_dimension, 'f',
                                   &d.input_feature_dimension, &d.input_spatial_dimensions, s);
  if (st.ok()) {
    st = ParseDimLabels(lhs_rhs.second, 'i', &d.kernel_input_feature_dimension, 'o',
                        &d.kernel_output_feature_dimension, &d.kernel_spatial_dimensions, s);
  }
  if (st.ok()) {
    st = ParseDimLabels(io.second, 'b', &d.output_batch_dimension, 'f',
                        &d.output_feature_dimension, &d.output_spatial_dimensions, s);
  }
  if (!st.ok()) return st;
  return d;
}

std::string OpMetadataToString(const OpMetadata& m) {
  std::vector<std::string> parts;
  if (!m.op_type.empty()) parts.push_back("op_type=" + QuoteString(m.op_type));
  if (!m.op_name.empty()) parts.push_back("op_name=" + QuoteString(m.op_name));
  if (!m.source_file.empty()) {
    parts.push_back("source_file=" + QuoteString(m.source_file));
    parts.push_back(StrCat("source_line=", m.source_line));
  }
  return StrCat("{", absl::StrJoin(parts, " "), "}");
}

absl::StatusOr<OpMetadata> ParseOpMetadata(std::string_view s) {
  std::string_view body = StripAsciiWhitespace(s);
  if (!ConsumePrefix(&body, "{") || !ConsumeSuffix(&body, "}")) {
    return Bad("metadata", s);
  }
  OpMetadata m;
  size_t pos = 0;
  while (true) {
    while (pos < body.size() && body[pos] == ' ') ++pos;
    if (pos >= body.size()) break;
    size_t eq = body.find('=', pos);
    if (eq == std::string_view::npos) return Bad("metadata", s);
    std::string_view key = body.substr(pos, eq - pos);
    pos = eq + 1;
    size_t end = pos;
    if (end < body.size() && body[end] == '"') {  // quoted value: find the closing quote
      ++end;
      while (end < body.size() && body[end] != '"') end += body[end] == '\\' ? 2 : 1;
      ++end;
    } else {
      while (end < body.size() && body[end] != ' ') ++end;
    }
    if (end > body.size()) return Bad("metadata", s);
    std::string_view value = body.substr(pos, end - pos);
    pos = end;
    if (key == "source_line") {
      if (!ParseInt(value, &m.source_line)) return Bad("metadata source_line", s);
      continue;
    }
    absl::StatusOr<std::string> str = ParseQuotedString(value);
    if (!str.ok()) return Bad("metadata", s);
    if (key == "op_type") {
      m.op_type = *str;
    } else if (key == "op_name") {
      m.op_name = *str;
    } else if (key == "source_file") {
      m.source_file = *str;
    } else {
      return Bad("metadata key", key);
    }
  }
  return m;
}

}  // namespace jx::hlo
