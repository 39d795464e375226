// Running the PyTorch peer (vgg19_torch.py) from C++ and reading its JSON line. Shared by
// examples/vgg19 and bench/vgg19_bench.cc.
#pragma once

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include <jx/core/parallel.h>  // jx::NumThreads

namespace vgg19 {

// vgg19_torch.py: $JX_VGG19_PEER, beside this executable (the example's build copies it
// there), in the example's build directory next to bench/, else beside source_file.
inline std::string PeerScript(const char* source_file) {
  if (const char* env = std::getenv("JX_VGG19_PEER")) return env;
  std::error_code ec;
  const auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    for (const auto& p : {exe.parent_path() / "vgg19_torch.py",
                          exe.parent_path().parent_path() / "examples" / "vgg19" / "vgg19_torch.py"}) {
      if (std::filesystem::exists(p)) return p.string();
    }
  }
  const auto src = std::filesystem::path(source_file).parent_path();
  for (const auto& p : {src / "vgg19_torch.py", src.parent_path() / "examples" / "vgg19" / "vgg19_torch.py"}) {
    if (std::filesystem::exists(p)) return p.string();
  }
  return (src / "vgg19_torch.py").string();
}

inline bool CpuHasAvx512() {
  std::ifstream f("/proc/cpuinfo");
  std::string line;
  while (std::getline(f, line)) {
    if (line.rfind("flags", 0) == 0) return line.find(" avx512f") != std::string::npos;
  }
  return false;
}

// Runs the peer for these batch sizes; its JSON line, or "" with *why saying why there is none
// (no python3, torch not installed, the script failed).
inline std::string RunPeer(const std::string& script, const std::vector<int64_t>& batches, int64_t image_size,
                           int reps, bool backward, std::string* why) {
  if (access("/usr/bin/python3", X_OK) != 0) {
    *why = "/usr/bin/python3 not found";
    return "";
  }
  if (!std::filesystem::exists(script)) {
    *why = script + " not found";
    return "";
  }
  std::string batch_list;
  for (int64_t b : batches) batch_list += (batch_list.empty() ? "" : ",") + std::to_string(b);
  // As bench/peers/side_by_side.py: ATen's AVX-512 kernels where the CPU has them, and the
  // thread count of jx's pool.
  const std::string threads = std::to_string(jx::NumThreads());
  std::string env = "OMP_NUM_THREADS=" + threads + " ";
  if (CpuHasAvx512()) env += "ATEN_CPU_CAPABILITY=avx512 OPENBLAS_CORETYPE=SkylakeX ";
  const std::string cmd = env + "/usr/bin/python3 '" + script + "' --batches " + batch_list + " --image-size " +
                          std::to_string(image_size) + " --reps " + std::to_string(reps) + " --threads " + threads +
                          (backward ? "" : " --no-backward") + " 2>&1";
  FILE* pipe = popen(cmd.c_str(), "r");
  if (pipe == nullptr) {
    *why = "could not start " + script;
    return "";
  }
  std::string out, last;
  char buf[4096];
  while (std::fgets(buf, sizeof buf, pipe) != nullptr) out += buf;
  const int rc = pclose(pipe);
  std::stringstream ss(out);
  for (std::string line; std::getline(ss, line);) {
    if (!line.empty() && line[0] == '{') last = line;
  }
  if (rc != 0 || last.empty()) {
    *why = "the peer failed (exit " + std::to_string(rc) + "): " + out.substr(out.size() > 300 ? out.size() - 300 : 0);
    return "";
  }
  if (last.find("\"skipped\"") != std::string::npos) {
    *why = last;
    return "";
  }
  return last;
}

// The number under "section": {..., "key": value} in the peer's JSON line.
inline std::optional<double> JsonNumber(const std::string& json, const std::string& section, const std::string& key) {
  const size_t s = json.find("\"" + section + "\"");
  if (s == std::string::npos) return std::nullopt;
  const size_t end = json.find('}', s);
  const size_t k = json.find("\"" + key + "\":", s);
  if (k == std::string::npos || k > end) return std::nullopt;
  return std::strtod(json.c_str() + k + key.size() + 3, nullptr);
}

}  // namespace vgg19
