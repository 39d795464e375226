// What a compile leaves behind for a person: JX_DUMP_TO=dir writes, per compile,
// "<dir>/NNNN.<module>.jaxpr.txt", the HLO as lowered ("...lowered.txt"), after every pass
// ("<dir>/NNNN.<module>.MMM.<pass>.txt") and "<dir>/NNNN.<module>.dot" (Graphviz, fusions as
// boxes). The directory is created when missing; one that cannot be created or written is
// reported once on stderr and dumps are skipped. JX_LOG_COMPILES=2 prints where a compile's time went, per stage (wall and the compiling
// thread's CPU time) and per pass.
//
//   CompileDump dump = CompileDump::ForNextCompile();   // numbered; disabled without JX_DUMP_TO
//   dump.Write(module_name, ".jaxpr.txt", jaxpr.ToString());
//   CompileTimer timer;  timer.Lap("lower-jaxpr");  timer.Report("jit(f)");
#pragma once

#include <chrono>
#include <string>

#include "jx/compiler/hlo/hlo_pass.h"

namespace jx::cpu_device {

// One compile's dump files, numbered in compile order.
class CompileDump {
 public:
  // The next compile's dump (creating JX_DUMP_TO's directory), or a disabled one when
  // JX_DUMP_TO is unset or unusable (said once per directory on stderr).
  static CompileDump ForNextCompile();
  bool enabled() const { return !dir_.empty(); }
  // Writes "<dir>/NNNN.<module><suffix>" (best effort, like the pass dumps).
  void Write(const std::string& module, const std::string& suffix, const std::string& text) const;
  // Makes the pipeline dump the HLO after every pass, under this compile's number.
  void AttachTo(hlo::HloPassPipeline& pipeline) const;

 private:
  std::string dir_;     // "" when disabled
  std::string prefix_;  // "NNNN."
};

// JX_LOG_COMPILES=2: the time of each stage of a compile (and of each pass, with the verifier
// run after it), to see which part grows with program size.
class CompileTimer {
 public:
  CompileTimer();
  void Lap(const char* stage, const hlo::HloPassPipeline* pipeline = nullptr);
  // Prints the laps under "compile stages of <what>".
  void Report(const std::string& what) const;

 private:
  bool enabled_;
  std::chrono::steady_clock::time_point last_;
  double last_cpu_;  // the thread's CPU seconds at the last lap
  std::string report_;
};

}  // namespace jx::cpu_device
