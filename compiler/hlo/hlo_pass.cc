#include "jx/compiler/hlo/hlo_pass.h"

#include <algorithm>
#include <chrono>
#include <fstream>
#include <memory>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "jx/compiler/hlo/hlo_verifier.h"
#include "jx/compiler/hlo/str_util.h"

namespace jx::hlo {

absl::StatusOr<bool> HloPassPipeline::Run(HloModule* module) {
  timings_.clear();
  bool changed = false;
  // How many passes had changed the module when a pass of each name last left it at its
  // fixed point (a few names: a vector).
  int64_t changes = 0;
  std::vector<std::pair<std::string_view, int64_t>> fixed_point_after;
  auto fixed_point_entry = [&](std::string_view name) {
    return std::find_if(fixed_point_after.begin(), fixed_point_after.end(),
                        [&](const auto& entry) { return entry.first == name; });
  };
  for (const std::unique_ptr<HloPass>& pass : passes_) {
    if (auto it = fixed_point_entry(pass->name()); it != fixed_point_after.end() && it->second == changes) {
      timings_.push_back({.name = std::string(pass->name()), .skipped = true});
      if (dump_) dump_(pass->name(), *module);  // the dumps stay one per pass
      continue;
    }
    const auto start = std::chrono::steady_clock::now();
    absl::StatusOr<bool> pass_changed = pass->Run(module);
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (!pass_changed.ok()) {
      return absl::Status(pass_changed.status().code(),
                          StrCat("pipeline ", name_, ", pass ", pass->name(), ": ",
                                       Message(pass_changed.status())));
    }
    timings_.push_back({std::string(pass->name()), seconds, 0.0, *pass_changed});
    changed |= *pass_changed;
    if (*pass_changed) ++changes;
    auto it = fixed_point_entry(pass->name());
    if (pass->LastRunReachedFixedPoint()) {
      if (it == fixed_point_after.end()) it = fixed_point_after.insert(it, {pass->name(), 0});
      it->second = changes;
    } else if (it != fixed_point_after.end()) {
      fixed_point_after.erase(it);
    }
    // As XLA's pipeline: a pass that left the module alone cannot have broken it, so only
    // the first pass (which also checks the input) and passes that changed something are
    // followed by the verifier. Verifying is linear, but ten times per compile adds up.
    if (verify_ && (*pass_changed || timings_.size() == 1)) {
      const auto verify_start = std::chrono::steady_clock::now();
      if (absl::Status st = VerifyHloModule(*module); !st.ok()) {
        return absl::Status(st.code(), StrCat("pipeline ", name_, ": verifier failed after pass ",
                                                    pass->name(), ": ", Message(st)));
      }
      timings_.back().verify_seconds =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - verify_start).count();
    }
    if (dump_) dump_(pass->name(), *module);
  }
  return changed;
}

HloPassPipeline::DumpCallback MakeDumpToDirectoryCallback(std::string dir, std::string prefix) {
  auto counter = std::make_shared<int>(0);
  return [dir = std::move(dir), prefix = std::move(prefix), counter](std::string_view pass_name,
                                                                     const HloModule& module) {
    std::ofstream out(absl::StrFormat("%s/%s%s.%03d.%s.txt", dir, prefix, module.name(),
                                      (*counter)++, pass_name));
    out << module.ToString();
  };
}

}  // namespace jx::hlo
