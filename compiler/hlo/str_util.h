// String helpers over std::string_view. Debian's Abseil has its own absl::string_view (not
// std::string_view), so these adapt before calling Abseil (core/str_util.h does the same
// for core; the compiler cannot include core).
#pragma once

#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace jx::hlo {

inline absl::string_view AsAbsl(std::string_view s) { return absl::string_view(s.data(), s.size()); }
inline std::string_view AsStd(absl::string_view s) { return std::string_view(s.data(), s.size()); }

namespace str_internal {
template <typename T>
decltype(auto) Adapt(const T& v) {
  if constexpr (std::is_same_v<T, std::string_view>) {
    return AsAbsl(v);
  } else {
    return (v);
  }
}
}  // namespace str_internal

template <typename... Args>
std::string StrCat(const Args&... args) {
  return absl::StrCat(str_internal::Adapt(args)...);
}
template <typename... Args>
void StrAppend(std::string* out, const Args&... args) {
  absl::StrAppend(out, str_internal::Adapt(args)...);
}

inline std::string_view StripAsciiWhitespace(std::string_view s) {
  return AsStd(absl::StripAsciiWhitespace(AsAbsl(s)));
}
inline bool ConsumePrefix(std::string_view* s, std::string_view prefix) {
  if (s->substr(0, prefix.size()) != prefix) return false;
  s->remove_prefix(prefix.size());
  return true;
}
inline bool ConsumeSuffix(std::string_view* s, std::string_view suffix) {
  if (s->size() < suffix.size() || s->substr(s->size() - suffix.size()) != suffix) return false;
  s->remove_suffix(suffix.size());
  return true;
}
template <typename Int>
bool SimpleAtoi(std::string_view s, Int* out) {
  return absl::SimpleAtoi(AsAbsl(s), out);
}
inline bool SimpleAtod(std::string_view s, double* out) { return absl::SimpleAtod(AsAbsl(s), out); }
inline std::string CEscape(std::string_view s) { return absl::CEscape(AsAbsl(s)); }
inline bool CUnescape(std::string_view s, std::string* out) {
  return absl::CUnescape(AsAbsl(s), out);
}

// Splits on every occurrence of sep; skip_empty drops empty (or all-blank) pieces.
inline std::vector<std::string_view> StrSplit(std::string_view s, std::string_view sep,
                                              bool skip_empty = false) {
  std::vector<std::string_view> parts;
  size_t start = 0;
  while (true) {
    const size_t end = s.find(sep, start);
    std::string_view part = s.substr(start, end == std::string_view::npos ? s.npos : end - start);
    if (!skip_empty || !StripAsciiWhitespace(part).empty()) parts.push_back(part);
    if (end == std::string_view::npos) break;
    start = end + sep.size();
  }
  return parts;
}
inline std::vector<std::string_view> StrSplit(std::string_view s, char sep,
                                              bool skip_empty = false) {
  return StrSplit(s, std::string_view(&sep, 1), skip_empty);
}
// Splits at the first sep: ("a=b=c", '=') -> ("a", "b=c"); no sep -> (s, "").
inline std::pair<std::string_view, std::string_view> SplitOnce(std::string_view s,
                                                                std::string_view sep) {
  const size_t at = s.find(sep);
  if (at == std::string_view::npos) return {s, std::string_view()};
  return {s.substr(0, at), s.substr(at + sep.size())};
}

}  // namespace jx::hlo

namespace jx::hlo {
// A status message as std::string_view.
inline std::string_view Message(const absl::Status& status) { return AsStd(status.message()); }
}  // namespace jx::hlo
