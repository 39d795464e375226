#include "jx/devices/cpu/cpu_program.h"

#include <cstdlib>
#include <string_view>
#include <utility>

#include "jx/core/config.h"
#include "jx/core/device.h"
#include "jx/core/errors.h"
#include "jx/core/str_util.h"
#include "jx/devices/cpu/cpu_compiler.h"
#include "jx/devices/profiler/profiler.h"

namespace jx::cpu_device {
namespace {

bool DebugNans() { return config::debug_nans(); }

}  // namespace

CpuProgram::CpuProgram(std::unique_ptr<cpu::CpuExecutable> exe, CostAnalysis cost, std::vector<ShapedArray> out_avals,
                       std::string what, const Device* device)
    : exe_(std::move(exe)),
      cost_(std::move(cost)),
      memory_(ToMemoryAnalysis(exe_->memory_analysis())),
      out_avals_(std::move(out_avals)),
      what_(std::move(what)),
      device_(device) {}

Arrays CpuProgram::Execute(absl::Span<const Array> args) const {
  const std::vector<hlo::Shape>& params = exe_->argument_shapes();
  if (args.size() != params.size()) {
    throw InternalError(StrCat(what_, " program takes ", params.size(), " arguments, got ", args.size()));
  }
  bool committed = false;
  std::vector<const void*> in(args.size());
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i].is_tracer()) throw InternalError(StrCat(what_, " program run on a traced argument ", i));
    in[i] = args[i].data();
    committed |= args[i].committed_device() != nullptr;
  }
  // On the host, outputs are committed when an argument was (JAX's rule); a program that
  // runs for another device (a simulated chip computing on the host) always puts them there.
  committed |= !IsHostDevice(*device_);
  const Device* out_device = committed ? device_ : nullptr;
  // Donated arguments the program may write an output into (output leaf -> argument).
  // Not under JX_DEBUG_NANS, which reruns a failing call on its arguments; and not for a
  // buffer also passed as another argument, which would be read after it is overwritten.
  std::vector<int64_t> alias_of(out_avals_.size(), -1);
  if (!exe_->output_aliases().empty() && !DebugNans()) {
    for (const auto& [k, a] : exe_->output_aliases()) {
      bool passed_twice = false;
      for (size_t j = 0; j < args.size(); ++j) passed_twice |= j != static_cast<size_t>(a) && in[j] == in[a];
      if (!passed_twice) alias_of[k] = a;
    }
  }
  Arrays outs;
  outs.reserve(out_avals_.size());
  std::vector<void*> out(out_avals_.size());
  for (size_t k = 0; k < out_avals_.size(); ++k) {
    // A donated argument's memory moves to the output (and the argument is deleted).
    std::shared_ptr<Buffer> storage = alias_of[k] >= 0 ? args[alias_of[k]].buffer()->TakeStorage()
                                                       : device_->Allocate(out_avals_[k].nbytes());
    out[k] = storage->data();
    outs.push_back(Array(std::make_shared<ConcreteArray>(out_avals_[k], std::move(storage), out_device, committed)));
  }
  const profiler::HostSlice timed(IsHostDevice(*device_) ? device_ : nullptr, profiler::kStepsLane, what_);  // chips trace simulated time
  if (absl::Status st = exe_->Run(in, out); !st.ok()) ThrowStatus(StrCat(what_, ": run failed"), st);
  return outs;
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

}  // namespace jx::cpu_device
