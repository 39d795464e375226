// Prints jx's predictions next to published TPU numbers (validation_cases.h lists each one, its
// configuration and its source) as the README's markdown table. `--fast` skips the pod-scale
// dry runs; other arguments keep only the cases whose id starts with one of them
// (`validation_table maxtext palm`). Exits 1 when a prediction leaves the corridor its case
// claims.
#include <cmath>
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>
#include <vector>

#include "validation_cases.h"

int main(int argc, char** argv) {
  bool fast = false;
  std::vector<std::string> prefixes;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--fast") == 0) {
      fast = true;
    } else {
      prefixes.push_back(argv[i]);
    }
  }
  auto selected = [&](const jx::validation::Case& c) {
    if (fast && c.slow) return false;
    if (prefixes.empty()) return true;
    for (const std::string& p : prefixes) {
      if (c.id.starts_with(p)) return true;
    }
    return false;
  };
  std::vector<jx::validation::Row> rows;
  bool all_within = true;
  for (const jx::validation::Case& c : jx::validation::Cases()) {
    if (!selected(c)) continue;
    double predicted = std::nan("");
    try {
      predicted = c.predict();
    } catch (const std::exception& e) {
      std::fprintf(stderr, "%s: %s\n", c.id.c_str(), e.what());
    }
    rows.push_back({.c = &c, .predicted = predicted});
    all_within = all_within && rows.back().within();
  }
  std::fputs(jx::validation::FormatTable(rows).c_str(), stdout);
  std::puts("");
  for (const jx::validation::Row& row : rows) std::printf("- %s: %s\n", row.c->id.c_str(), row.c->note.c_str());
  return all_within ? 0 : 1;
}
