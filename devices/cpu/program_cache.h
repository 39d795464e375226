// Compiled CPU programs keyed on everything that decides the executable (the lowered HLO's
// fingerprint, the outputs' weak types, donations, the device, the fallback policy), so equal
// programs (re-jitted functions, jit objects sharing code, the same jit equation bound twice)
// compile once. Least recently used entries are evicted past a bound. Thread-safe.
//
//   std::shared_ptr<const Executable> exe = ProgramCache::Global().Find(key);
//   if (!exe) ProgramCache::Global().Insert(key, exe = CompileIt());
#pragma once

#include <cstddef>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "jx/compiler/hlo/hlo_fingerprint.h"
#include "jx/core/device.h"
#include "jx/core/executable.h"
#include "jx/core/shape.h"

namespace jx::cpu_device {

// The key of a program compiled for `device` from a module with fingerprint `program` (equal
// for modules that print the same, different for any other with overwhelming probability;
// a few dozen bytes where the module's text was the whole program), plus the outputs' weak
// types (which HLO does not carry), which arguments are donated (the executable's output
// aliases depend on them), the device it runs on (a chip's fixes its generation and HBM), and
// whether the evaluator fallback was allowed (a program compiled with it must not satisfy a
// compile that forbids it).
std::string ProgramCacheKey(const hlo::HloFingerprint& program, const std::vector<ShapedArray>& out_avals,
                            const std::vector<bool>& donated, const Device& device);

class ProgramCache {
 public:
  static ProgramCache& Global();
  explicit ProgramCache(size_t capacity) : capacity_(capacity) {}
  // The program compiled under key, or nullptr.
  std::shared_ptr<const Executable> Find(const std::string& key);
  // Keeps the first program inserted under a key (a racing compile's twin is dropped).
  void Insert(const std::string& key, std::shared_ptr<const Executable> exe);
  size_t size();
  // Drops every program (jx::clear_caches() does for the global cache).
  void Clear();

 private:
  using Entry = std::pair<std::string, std::shared_ptr<const Executable>>;
  const size_t capacity_;
  std::mutex mutex_;
  std::list<Entry> order_;  // most recently used first
  absl::flat_hash_map<std::string, std::list<Entry>::iterator> index_;
};

}  // namespace jx::cpu_device
