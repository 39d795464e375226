#include "jx/devices/cpu/compile_log.h"

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <set>
#include <system_error>

#include <unistd.h>

#include "jx/core/str_util.h"

namespace jx::cpu_device {
namespace {

std::atomic<int64_t> g_dump_counter{0};

std::string Ms(double seconds) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.3f", seconds * 1e3);
  return buf;
}

int LogLevel() {
  const char* v = std::getenv("JX_LOG_COMPILES");
  return v == nullptr ? 0 : std::atoi(v);
}

// Says once per directory (not once per compile) that dumps to it are off, and why.
void ReportUnusableDir(const std::string& dir, const std::string& why) {
  static std::mutex mu;
  static std::set<std::string>* reported = new std::set<std::string>();
  std::lock_guard<std::mutex> lock(mu);
  if (!reported->insert(dir).second) return;
  std::fprintf(stderr, "jx: JX_DUMP_TO=%s: %s; compile dumps are off\n", dir.c_str(), why.c_str());
}

// Creates dir (and its parents) when missing; false, after reporting why, when it cannot be
// created or written.
bool PrepareDumpDir(const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) {
    ReportUnusableDir(dir, StrCat("cannot create the directory (", ec.message(), ")"));
    return false;
  }
  if (!std::filesystem::is_directory(dir, ec)) {
    ReportUnusableDir(dir, "not a directory");
    return false;
  }
  if (::access(dir.c_str(), W_OK) != 0) {
    ReportUnusableDir(dir, "the directory is not writable");
    return false;
  }
  return true;
}

}  // namespace

CompileDump CompileDump::ForNextCompile() {
  CompileDump dump;
  const char* dir = std::getenv("JX_DUMP_TO");
  if (dir == nullptr || dir[0] == '\0') return dump;
  if (!PrepareDumpDir(dir)) return dump;
  char id[24];
  std::snprintf(id, sizeof(id), "%04lld.", static_cast<long long>(g_dump_counter.fetch_add(1)));
  dump.dir_ = dir;
  dump.prefix_ = id;
  return dump;
}

void CompileDump::Write(const std::string& module, const std::string& suffix, const std::string& text) const {
  if (!enabled()) return;
  const std::string path = StrCat(dir_, "/", prefix_, module, suffix);
  std::ofstream out(path);
  out << text;
  if (!out) ReportUnusableDir(dir_, StrCat("writing ", path, " failed"));
}

void CompileDump::AttachTo(hlo::HloPassPipeline& pipeline) const {
  if (enabled()) pipeline.set_dump_callback(hlo::MakeDumpToDirectoryCallback(dir_, prefix_));
}

namespace {

// The compiling thread's CPU seconds: what still measures a stage on a machine shared with
// other work (compiles are single-threaded), where wall time also counts the waits for a core.
double ThreadCpuSeconds() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

}  // namespace

CompileTimer::CompileTimer()
    : enabled_(LogLevel() >= 2), last_(std::chrono::steady_clock::now()), last_cpu_(enabled_ ? ThreadCpuSeconds() : 0) {}

void CompileTimer::Lap(const char* stage, const hlo::HloPassPipeline* pipeline) {
  if (!enabled_) return;
  const auto now = std::chrono::steady_clock::now();
  const double cpu = ThreadCpuSeconds();
  StrAppend(&report_, "  ", stage, ": ", Ms(std::chrono::duration<double>(now - last_).count()), " ms (CPU ",
            Ms(cpu - last_cpu_), " ms)\n");
  last_ = now;
  last_cpu_ = cpu;
  if (pipeline == nullptr) return;
  for (const hlo::HloPassPipeline::PassTiming& t : pipeline->timings()) {
    if (t.skipped) {
      StrAppend(&report_, "    ", t.name, ": skipped: unchanged since its last run\n");
      continue;
    }
    StrAppend(&report_, "    ", t.name, ": ", Ms(t.seconds), " ms (verify ", Ms(t.verify_seconds), " ms)",
              t.changed ? "" : " unchanged", "\n");
  }
}

void CompileTimer::Report(const std::string& what) const {
  if (enabled_) std::fprintf(stderr, "jx: compile stages of %s:\n%s", what.c_str(), report_.c_str());
}

}  // namespace jx::cpu_device
