// Prints jx's predictions next to published TPU numbers (validation_cases.h lists each one, its
// configuration and its source) as the README's markdown table. `--fast` skips the pod-scale
// dry runs. Exits 1 when a prediction leaves the corridor its case claims.
#include <cstdio>
#include <cstring>
#include <vector>

#include "validation_cases.h"

int main(int argc, char** argv) {
  const bool fast = argc > 1 && std::strcmp(argv[1], "--fast") == 0;
  std::vector<jx::validation::Row> rows;
  bool all_within = true;
  for (const jx::validation::Case& c : jx::validation::Cases()) {
    if (fast && c.slow) continue;
    rows.push_back({.c = &c, .predicted = c.predict()});
    all_within = all_within && rows.back().within();
  }
  std::fputs(jx::validation::FormatTable(rows).c_str(), stdout);
  std::puts("");
  for (const jx::validation::Row& row : rows) std::printf("- %s: %s\n", row.c->id.c_str(), row.c->note.c_str());
  return all_within ? 0 : 1;
}
