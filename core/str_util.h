// String helpers. Debian's Abseil has its own absl::string_view (not std::string_view), so
// jx::StrCat/StrAppend adapt std::string_view arguments before calling Abseil's.
#pragma once

#include <string>
#include <string_view>
#include <type_traits>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace jx {
namespace str_internal {
template <typename T>
decltype(auto) Adapt(const T& v) {
  if constexpr (std::is_same_v<T, std::string_view>) {
    return absl::string_view(v.data(), v.size());
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

}  // namespace jx
