#include "jx/compiler/jit/cpu_jit_backend.h"

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "jx/compiler/analysis/hlo_cost_analysis.h"
#include "jx/compiler/backend/cpu/cpu_executable.h"
#include "jx/compiler/hlo/hlo_graphviz.h"
#include "jx/compiler/hlo/hlo_parser.h"
#include "jx/compiler/hlo/hlo_pass.h"
#include "jx/compiler/jit/cpu_pipeline.h"
#include "jx/compiler/lower/lower_jaxpr.h"
#include "jx/core/errors.h"
#include "jx/core/str_util.h"
#include "jx/lax/registration.h"
#include "jx/transforms/jit_backend.h"

namespace jx {
namespace {

std::atomic<int64_t> g_compiles{0}, g_cache_hits{0}, g_dump_counter{0};

// "<dir>/NNNN." for this compile when JX_DUMP_TO is set, else "".
std::string DumpPrefix() {
  const char* dir = std::getenv("JX_DUMP_TO");
  if (dir == nullptr || dir[0] == '\0') return "";
  char id[16];
  std::snprintf(id, sizeof(id), "%04lld.", static_cast<long long>(g_dump_counter.fetch_add(1)));
  return StrCat(dir, "/", id);
}

void WriteFile(const std::string& path, const std::string& text) {
  std::ofstream out(path);
  out << text;  // best effort, like the pass dumps
}

// Module names are identifiers: "jit_" + the function's name with other characters as '_'.
std::string ModuleName(const std::string& name) {
  std::string out = "jit_";
  for (char c : name) out += (std::isalnum(static_cast<unsigned char>(c)) || c == '_') ? c : '_';
  return out;
}

// JX_CPU_FALLBACK=error: an instruction without a native CPU kernel fails the compile instead
// of running on the reference evaluator (how the no-fallback test proves coverage).
bool EvaluatorFallbackAllowed() {
  const char* v = std::getenv("JX_CPU_FALLBACK");
  return v == nullptr || std::string_view(v) != "error";
}

bool DebugNans() {
  const char* v = std::getenv("JX_DEBUG_NANS");
  return v != nullptr && v[0] != '\0' && std::string_view(v) != "0";
}

[[noreturn]] void ThrowStatus(const std::string& what, const std::string& name, const absl::Status& status) {
  const std::string msg = StrCat("jit(", name, "): ", what, ": ", status.message());
  if (status.code() == absl::StatusCode::kUnimplemented) throw NotImplementedError(msg);
  if (status.code() == absl::StatusCode::kResourceExhausted) throw ResourceExhaustedError(msg);
  throw InternalError(msg);
}

CostAnalysis ToCostAnalysis(const hlo::ModuleCost& c) {
  CostAnalysis out;
  out.flops = c.flops;
  out.transcendentals = c.transcendentals;
  out.bytes_accessed = c.bytes_accessed;
  out.bytes_accessed_operand = c.bytes_accessed_per_parameter;
  out.bytes_accessed_output = c.bytes_accessed_output;
  return out;
}

MemoryAnalysis ToMemoryAnalysis(const cpu::MemoryAnalysis& m) {
  MemoryAnalysis out;
  out.argument_size_in_bytes = m.argument_bytes;
  out.output_size_in_bytes = m.output_bytes;
  out.temp_size_in_bytes = m.temp_bytes;
  out.peak_memory_in_bytes = m.peak_bytes;
  out.alias_size_in_bytes = m.alias_bytes;
  return out;
}

// A compiled program: runs on the arguments' buffers and writes fresh output arrays.
class CpuProgram final : public JitExecutable {
 public:
  CpuProgram(std::unique_ptr<cpu::CpuExecutable> exe, CostAnalysis cost,
             std::vector<ShapedArray> out_avals, std::string name)
      : exe_(std::move(exe)),
        cost_(std::move(cost)),
        memory_(ToMemoryAnalysis(exe_->memory_analysis())),
        out_avals_(std::move(out_avals)),
        name_(std::move(name)) {}

  Arrays Execute(absl::Span<const Array> args) const override {
    const std::vector<hlo::Shape>& params = exe_->argument_shapes();
    if (args.size() != params.size()) {
      throw InternalError(StrCat("jit(", name_, ") program takes ", params.size(), " arguments, got ", args.size()));
    }
    std::vector<const void*> in(args.size());
    for (size_t i = 0; i < args.size(); ++i) {
      if (args[i].is_tracer()) {
        throw InternalError(StrCat("jit(", name_, ") program run on a traced argument ", i));
      }
      in[i] = args[i].data();
    }
    // Donated arguments the program may write an output into (output leaf -> argument).
    // Not under JX_DEBUG_NANS, which reruns a failing call on its arguments; and not for a
    // buffer also passed as another argument, which would be read after it is overwritten.
    std::vector<int64_t> alias_of(out_avals_.size(), -1);
    if (!exe_->output_aliases().empty() && !DebugNans()) {
      for (const auto& [k, a] : exe_->output_aliases()) {
        bool passed_twice = false;
        for (size_t j = 0; j < args.size(); ++j) {
          passed_twice |= j != static_cast<size_t>(a) && in[j] == in[a];
        }
        if (!passed_twice) alias_of[k] = a;
      }
    }
    Arrays outs;
    outs.reserve(out_avals_.size());
    std::vector<void*> out(out_avals_.size());
    for (size_t k = 0; k < out_avals_.size(); ++k) {
      if (alias_of[k] >= 0) {
        // The argument's memory moves to the output; the donated array is deleted.
        std::shared_ptr<Buffer> storage = args[alias_of[k]].buffer()->TakeStorage();
        out[k] = storage->data();
        outs.push_back(Array(std::make_shared<ConcreteArray>(out_avals_[k], std::move(storage))));
        continue;
      }
      outs.push_back(Array::Empty(out_avals_[k]));
      out[k] = outs.back().mutable_data();
    }
    if (absl::Status st = exe_->Run(in, out); !st.ok()) ThrowStatus("run failed", name_, st);
    return outs;
  }
  // Printed on request: most programs are never asked, and printing a big one costs as much
  // as a pass.
  std::string as_text() const override { return exe_->module().ToString(); }
  CostAnalysis cost_analysis() const override { return cost_; }
  MemoryAnalysis memory_analysis() const override { return memory_; }

 private:
  std::unique_ptr<cpu::CpuExecutable> exe_;
  CostAnalysis cost_;
  MemoryAnalysis memory_;
  std::vector<ShapedArray> out_avals_;
  std::string name_;
};

// Compiled programs keyed on their lowered text, least recently used evicted past a bound.
class ProgramCache {
 public:
  std::shared_ptr<const JitExecutable> Find(const std::string& key) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = index_.find(key);
    if (it == index_.end()) return nullptr;
    order_.splice(order_.begin(), order_, it->second);
    return it->second->second;
  }
  void Insert(const std::string& key, std::shared_ptr<const JitExecutable> exe) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (index_.contains(key)) return;
    order_.emplace_front(key, std::move(exe));
    index_[key] = order_.begin();
    if (order_.size() > kCapacity) {
      index_.erase(order_.back().first);
      order_.pop_back();
    }
  }

 private:
  static constexpr size_t kCapacity = 1024;
  using Entry = std::pair<std::string, std::shared_ptr<const JitExecutable>>;
  std::mutex mutex_;
  std::list<Entry> order_;
  absl::flat_hash_map<std::string, std::list<Entry>::iterator> index_;
};

ProgramCache& Programs() {
  static auto* cache = new ProgramCache;
  return *cache;
}

// JX_LOG_COMPILES=2: where a compile's time goes, per stage and per pass (with the verifier
// run after it), to see which part grows with program size.
class CompileTimer {
 public:
  CompileTimer() : enabled_(LogLevel() >= 2), last_(std::chrono::steady_clock::now()) {}

  void Lap(const char* stage, const hlo::HloPassPipeline* pipeline = nullptr) {
    if (!enabled_) return;
    const auto now = std::chrono::steady_clock::now();
    StrAppend(&report_, "  ", stage, ": ", Ms(std::chrono::duration<double>(now - last_).count()), " ms\n");
    last_ = now;
    if (pipeline == nullptr) return;
    for (const hlo::HloPassPipeline::PassTiming& t : pipeline->timings()) {
      StrAppend(&report_, "    ", t.name, ": ", Ms(t.seconds), " ms (verify ", Ms(t.verify_seconds), " ms)",
                t.changed ? "" : " unchanged", "\n");
    }
  }

  void Report(const std::string& name) const {
    if (enabled_) std::fprintf(stderr, "jx: compile stages of jit(%s):\n%s", name.c_str(), report_.c_str());
  }

 private:
  static int LogLevel() {
    const char* v = std::getenv("JX_LOG_COMPILES");
    return v == nullptr ? 0 : std::atoi(v);
  }
  static std::string Ms(double seconds) {
    char buf[32];
    std::snprintf(buf, sizeof(buf), "%.3f", seconds * 1e3);
    return buf;
  }

  bool enabled_;
  std::chrono::steady_clock::time_point last_;
  std::string report_;
};

class CpuLowering final : public JitLowering {
 public:
  CpuLowering(std::unique_ptr<hlo::HloModule> module, std::vector<ShapedArray> out_avals, std::string name,
              std::string dump_prefix, std::vector<bool> donated)
      : module_(std::move(module)),
        text_(module_->ToString()),
        out_avals_(std::move(out_avals)),
        donated_(std::move(donated)),
        key_(CacheKey(text_, out_avals_, donated_)),
        name_(std::move(name)),
        dump_prefix_(std::move(dump_prefix)) {}

  std::string as_text() const override { return text_; }

  std::shared_ptr<const JitExecutable> Compile() const override {
    if (std::shared_ptr<const JitExecutable> hit = Programs().Find(key_)) {
      g_cache_hits.fetch_add(1);
      return hit;
    }
    CompileTimer timer;
    // The pipeline rewrites a copy (the lowering can compile again): parsed back from the
    // text already printed for the cache key, which is what HloModule::Clone does.
    absl::StatusOr<std::unique_ptr<hlo::HloModule>> module = hlo::ParseHloModule(text_);
    if (!module.ok()) ThrowStatus("clone failed", name_, module.status());
    timer.Lap("clone");
    hlo::HloPassPipeline pipeline("cpu");
    AddCpuPasses(pipeline);
    if (!dump_prefix_.empty()) pipeline.set_dump_callback(hlo::MakeDumpToDirectoryCallback(DumpDir(), DumpFilePrefix()));
    if (absl::StatusOr<bool> ran = pipeline.Run(module->get()); !ran.ok()) {
      ThrowStatus("optimization failed", name_, ran.status());
    }
    timer.Lap("passes", &pipeline);
    if (!dump_prefix_.empty()) WriteFile(StrCat(dump_prefix_, (*module)->name(), ".dot"), hlo::HloModuleToDot(**module));
    absl::StatusOr<hlo::ModuleCost> cost = hlo::AnalyzeCost(**module);
    if (!cost.ok()) ThrowStatus("cost analysis failed", name_, cost.status());
    timer.Lap("cost-analysis");
    cpu::CpuCompileOptions options;
    options.donated_arguments = donated_;
    options.allow_evaluator_fallback = EvaluatorFallbackAllowed();
    absl::StatusOr<std::unique_ptr<cpu::CpuExecutable>> exe = cpu::CompileForCpu(std::move(*module), options);
    if (!exe.ok()) ThrowStatus("compilation failed", name_, exe.status());
    WarnUnusableDonations(**exe);
    timer.Lap("cpu-backend");
    timer.Report(name_);
    auto program = std::make_shared<CpuProgram>(std::move(*exe), ToCostAnalysis(*cost),
                                                out_avals_, name_);
    g_compiles.fetch_add(1);
    Programs().Insert(key_, program);
    return program;
  }

 private:
  // dump_prefix_ is "<dir>/NNNN."; the pass dumps go to dir with the "NNNN." file prefix.
  std::string DumpDir() const { return dump_prefix_.substr(0, dump_prefix_.rfind('/')); }
  std::string DumpFilePrefix() const { return dump_prefix_.substr(dump_prefix_.rfind('/') + 1); }

  // The program text, plus the outputs' weak types (which HLO does not carry), which
  // arguments are donated (the executable's output aliases depend on them) and whether the
  // evaluator fallback was allowed (a program compiled with it must not satisfy a compile
  // that forbids it).
  static std::string CacheKey(const std::string& text, const std::vector<ShapedArray>& out_avals,
                              const std::vector<bool>& donated) {
    std::string key = text;
    key += "\nweak:";
    for (const ShapedArray& a : out_avals) key += a.weak_type ? '1' : '0';
    key += "\ndonated:";
    for (bool d : donated) key += d ? '1' : '0';
    if (!EvaluatorFallbackAllowed()) key += "\nno-fallback";
    return key;
  }

  // As JAX: donating an argument no output can take is not an error, but worth a warning.
  void WarnUnusableDonations(const cpu::CpuExecutable& exe) const {
    std::vector<bool> used(donated_.size(), false);
    for (const auto& [k, a] : exe.output_aliases()) used[a] = true;
    std::string unusable;
    for (size_t a = 0; a < donated_.size(); ++a) {
      if (donated_[a] && !used[a]) {
        StrAppend(&unusable, unusable.empty() ? "" : ", ", exe.argument_shapes()[a].ToString(false));
      }
    }
    if (!unusable.empty()) {
      std::fprintf(stderr, "jx: jit(%s): some donated buffers were not usable: %s\n", name_.c_str(),
                   unusable.c_str());
    }
  }

  std::unique_ptr<hlo::HloModule> module_;
  std::string text_;
  std::vector<ShapedArray> out_avals_;
  std::vector<bool> donated_;  // per argument leaf; empty when none
  std::string key_;
  std::string name_;
  std::string dump_prefix_;
};

class CpuJitBackend final : public JitBackend {
 public:
  std::shared_ptr<const JitLowering> Lower(const ClosedJaxpr& jaxpr, const std::string& name,
                                           const std::vector<bool>& donated) const override {
    lax::RegisterAll();
    const std::string module_name = ModuleName(name);
    const std::string dump_prefix = DumpPrefix();
    if (!dump_prefix.empty()) WriteFile(StrCat(dump_prefix, module_name, ".jaxpr.txt"), jaxpr.ToString());
    CompileTimer timer;
    // Outputs come back as one buffer per leaf, so the root is always a tuple.
    absl::StatusOr<std::unique_ptr<hlo::HloModule>> module =
        LowerJaxpr(jaxpr, module_name, {.tuple_result = true, .name_stack = StrCat("jit(", name, ")")});
    if (!module.ok()) ThrowStatus("lowering failed", name, module.status());
    timer.Lap("lower-jaxpr");
    if (!dump_prefix.empty()) WriteFile(StrCat(dump_prefix, module_name, ".lowered.txt"), (*module)->ToString());
    // Donation flags per entry parameter (jit passes one per argument leaf); none donated
    // means no flags, so those programs share one cache entry.
    std::vector<bool> donated_params;
    if (std::find(donated.begin(), donated.end(), true) != donated.end()) {
      if (static_cast<int64_t>(donated.size()) != (*module)->entry_computation()->num_parameters()) {
        throw InternalError(StrCat("jit(", name, "): ", donated.size(), " donation flags for ",
                                   (*module)->entry_computation()->num_parameters(), " parameters"));
      }
      donated_params = donated;
    }
    auto lowering = std::make_shared<CpuLowering>(std::move(*module), jaxpr.jaxpr->out_avals(), name, dump_prefix,
                                                  std::move(donated_params));
    timer.Lap("print-lowered");
    timer.Report(name);
    return lowering;
  }
};

}  // namespace

bool InstallCpuJitBackend() {
  static const bool installed = [] {
    SetJitBackend(std::make_shared<CpuJitBackend>());
    return true;
  }();
  return installed;
}

CpuJitStats GetCpuJitStats() { return CpuJitStats{g_compiles.load(), g_cache_hits.load()}; }

}  // namespace jx
