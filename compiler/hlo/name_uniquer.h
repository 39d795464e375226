// NameUniquer: the instruction names a module has handed out, kept per prefix (XLA's
// NameUniquer keeps a counter per prefix the same way) rather than as a set of every name:
// generating "multiply.<n>" costs a lookup of "multiply" in a table of a few prefixes and an
// append, not a string hash into a table as big as the module.
//
// A name is kept as its family, the part before a numeric suffix, and that suffix:
// "add.7" is family "add" with 7, "x" and "x.07" are families of their own with none.
// Generated names are "prefix.<n>" with n drawn from the module's id counter (so the
// suffix is usually the instruction's unique id), the smallest n at or past the counter
// that no name of the family holds.
//
//   NameUniquer names;
//   names.TakeExact("x");                 // true; false the second time
//   names.TakeGenerated("add", counter);  // "add.<counter>", counter moved past taken ones
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"

namespace jx::hlo {

class NameUniquer {
 public:
  // Takes `name` if no name taken so far equals it; returns whether it did.
  bool TakeExact(std::string_view name);
  // Takes "prefix.<n>" for the smallest n >= counter not taken, and sets counter to n (the
  // caller's id counter, which only grows).
  std::string TakeGenerated(std::string_view prefix, int64_t& counter);

 private:
  struct Family {
    std::vector<int64_t> generated;        // TakeGenerated's suffixes, increasing
    absl::flat_hash_set<int64_t> exact;    // suffixes TakeExact took ("add.7": 7)
    bool bare = false;                     // the family's name itself is taken
    bool Holds(int64_t n) const;
  };
  absl::flat_hash_map<std::string, Family> families_;
};

}  // namespace jx::hlo
