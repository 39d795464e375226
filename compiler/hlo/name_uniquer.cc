#include "jx/compiler/hlo/name_uniquer.h"

#include <algorithm>
#include <utility>

#include "jx/compiler/hlo/str_util.h"

namespace jx::hlo {
namespace {

// A name's family and numeric suffix: ("add", 7) for "add.7"; (name, -1) when the name has
// no suffix that prints back as itself ("x", "x.07", "x.-1").
std::pair<std::string_view, int64_t> Split(std::string_view name) {
  const size_t dot = name.rfind('.');
  if (dot == std::string_view::npos) return {name, -1};
  const std::string_view digits = name.substr(dot + 1);
  if (digits.empty() || (digits.size() > 1 && digits[0] == '0') ||
      !std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return {name, -1};
  }
  int64_t n;
  if (!SimpleAtoi(digits, &n)) return {name, -1};  // past int64
  return {name.substr(0, dot), n};
}

}  // namespace

bool NameUniquer::Family::Holds(int64_t n) const {
  // Generating reads only the last suffix: the counter only grows, so a new n is at least
  // every generated one.
  if (!generated.empty() && generated.back() >= n &&
      std::binary_search(generated.begin(), generated.end(), n)) {
    return true;
  }
  return !exact.empty() && exact.contains(n);
}

bool NameUniquer::TakeExact(std::string_view name) {
  const auto [family_name, n] = Split(name);
  Family& family = families_[AsAbsl(family_name)];
  if (n < 0) return !std::exchange(family.bare, true);
  if (family.Holds(n)) return false;
  family.exact.insert(n);
  return true;
}

std::string NameUniquer::TakeGenerated(std::string_view prefix, int64_t& counter) {
  Family& family = families_[AsAbsl(prefix)];
  int64_t n = counter;
  while (family.Holds(n)) ++n;
  family.generated.push_back(n);
  counter = n;
  return StrCat(prefix, ".", n);
}

}  // namespace jx::hlo
