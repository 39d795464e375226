// The layering of DESIGN.md, enforced: every source file under a layer may include jx headers
// only from the layers it sits on. core <- lax/kernels; core <- transforms <- lax;
// compiler/hlo (Abseil only) <- passes, analysis, lower <- backend <- devices. A lower layer
// reaches a higher one only through an interface it owns (a rule table, core/device.h).
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace {

namespace fs = std::filesystem;

// Layer (a source directory) -> the directories its files may include from. The longest
// matching layer applies (lax/kernels before lax).
const std::map<std::string, std::vector<std::string>>& AllowedIncludes() {
  static const auto* allowed = new std::map<std::string, std::vector<std::string>>{
      {"core", {"core"}},
      {"lax/kernels", {"core", "lax/kernels"}},
      {"transforms", {"core", "transforms"}},
      {"lax", {"core", "transforms", "lax", "compiler/hlo", "compiler/lower"}},
      {"compiler/hlo", {"compiler/hlo"}},
      {"compiler/analysis", {"compiler/hlo", "compiler/analysis"}},
      {"compiler/passes", {"compiler/hlo", "compiler/analysis", "compiler/passes"}},
      {"compiler/lower", {"core", "compiler/hlo", "compiler/lower"}},
      {"compiler/backend",
       {"core", "lax/kernels", "compiler/hlo", "compiler/analysis", "compiler/passes", "compiler/backend"}},
      {"devices", {"core", "transforms", "lax", "compiler", "devices"}},
      {"sharding", {"core", "transforms", "lax", "compiler", "devices", "sharding"}},
      {"nn", {"core", "transforms", "lax", "compiler", "devices", "sharding", "nn"}},
  };
  return *allowed;
}

bool StartsWith(const std::string& s, const std::string& prefix) {
  return s.compare(0, prefix.size(), prefix) == 0 && (s.size() == prefix.size() || s[prefix.size()] == '/');
}

// The layer a source path (relative to the source root) belongs to, or "" for none.
std::string LayerOf(const std::string& path) {
  std::string best;
  for (const auto& [layer, allowed] : AllowedIncludes()) {
    if (StartsWith(path, layer) && layer.size() > best.size()) best = layer;
  }
  return best;
}

TEST(LayeringTest, NoSourceIncludesALayerAboveIt) {
  const fs::path root = JX_SOURCE_DIR;
  int files = 0;
  for (const auto& [layer, allowed] : AllowedIncludes()) {
    for (const auto& entry : fs::recursive_directory_iterator(root / layer)) {
      const std::string ext = entry.path().extension().string();
      if (ext != ".h" && ext != ".cc") continue;
      const std::string rel = fs::relative(entry.path(), root).generic_string();
      if (LayerOf(rel) != layer) continue;  // a more specific layer checks it
      ++files;
      std::ifstream in(entry.path());
      std::string line;
      for (int n = 1; std::getline(in, line); ++n) {
        static const std::string kPrefix = "#include \"jx/";
        if (line.compare(0, kPrefix.size(), kPrefix) != 0) continue;
        const std::string target = line.substr(kPrefix.size(), line.find('"', kPrefix.size()) - kPrefix.size());
        bool ok = false;
        for (const std::string& dir : allowed) ok = ok || StartsWith(target, dir);
        EXPECT_TRUE(ok) << rel << ":" << n << " (layer " << layer << ") includes jx/" << target
                        << ", which is not in a layer below it";
      }
    }
  }
  EXPECT_GT(files, 100);
}

TEST(LayeringTest, TheCheckCatchesAnUpwardInclude) {
  EXPECT_EQ(LayerOf("lax/kernels/gemm.cc"), "lax/kernels");
  EXPECT_EQ(LayerOf("lax/dot_general.cc"), "lax");
  const auto& kernels = AllowedIncludes().at("lax/kernels");
  EXPECT_EQ(std::count(kernels.begin(), kernels.end(), "lax"), 0);  // lax/foo.h is above kernels
  EXPECT_FALSE(StartsWith("lax/dot_general.h", "lax/kernels"));
}

}  // namespace
