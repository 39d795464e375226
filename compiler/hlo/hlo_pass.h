// Pass infrastructure. A pass rewrites a module in place and says whether it changed it;
// HloPassPipeline runs passes in order, verifies the module after the first and after each
// one that changed it (an error names the pass), times each pass, and hands the module to
// an optional dump callback after each. A pass that left the module at its own fixed point
// is not run again while no pass changes the module (cse, algsimp and dce run twice in a
// pipeline; on a module the passes between find nothing to do in, the second run would
// only read it).
//
//   HloPassPipeline pipeline("simplify");
//   pipeline.AddPass<HloDCE>();
//   pipeline.set_dump_callback([](std::string_view pass, const HloModule& m) { ... });
//   HLO_ASSIGN_OR_RETURN(bool changed, pipeline.Run(module.get()));
//   for (const auto& t : pipeline.timings()) { t.name, t.seconds, t.changed, t.skipped }
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "jx/compiler/hlo/hlo_module.h"

namespace jx::hlo {

class HloPass {
 public:
  virtual ~HloPass() = default;
  virtual std::string_view name() const = 0;
  // Returns whether the module changed.
  virtual absl::StatusOr<bool> Run(HloModule* module) = 0;

  // Whether the module the last Run left is one this pass finds nothing to do in (its own
  // fixed point), whatever that Run changed. Only a pass whose Run depends on nothing but
  // the module, and does the same as every other pass of its name, may say so: a pipeline
  // then skips a later pass of that name while no pass has changed the module since.
  virtual bool LastRunReachedFixedPoint() const { return false; }
};

class HloPassPipeline : public HloPass {
 public:
  struct PassTiming {
    std::string name;
    double seconds = 0;
    double verify_seconds = 0;  // the verifier's run after the pass (0 when off)
    bool changed = false;
    // Not run: a pass of its name left the module at its fixed point and no pass has
    // changed the module since.
    bool skipped = false;
  };
  using DumpCallback = std::function<void(std::string_view pass_name, const HloModule& module)>;

  explicit HloPassPipeline(std::string name) : name_(std::move(name)) {}

  template <typename Pass, typename... Args>
  Pass& AddPass(Args&&... args) {
    auto pass = std::make_unique<Pass>(std::forward<Args>(args)...);
    Pass& ref = *pass;
    passes_.push_back(std::move(pass));
    return ref;
  }
  void AddPass(std::unique_ptr<HloPass> pass) { passes_.push_back(std::move(pass)); }

  // Called after each pass (after verification), e.g. to write HLO text per pass.
  void set_dump_callback(DumpCallback callback) { dump_ = std::move(callback); }
  // Verification is on by default (tests and debug builds want it). A pass that reports no
  // change must not have changed the module: it is not verified again.
  void set_verify(bool verify) { verify_ = verify; }

  std::string_view name() const override { return name_; }
  // Runs every pass in order; stops at the first error ("pass <name>: ...").
  absl::StatusOr<bool> Run(HloModule* module) override;

  // One entry per pass of the last Run (skipped ones included), in order.
  const std::vector<PassTiming>& timings() const { return timings_; }

 private:
  std::string name_;
  std::vector<std::unique_ptr<HloPass>> passes_;
  DumpCallback dump_;
  bool verify_ = true;
  std::vector<PassTiming> timings_;
};

// A dump callback writing "<dir>/<prefix><module>.<NNN>.<pass>.txt" (the module text after
// each pass; NNN counts calls), as JX_DUMP_TO=dir asks for. Write errors are ignored: dumps
// are best effort.
HloPassPipeline::DumpCallback MakeDumpToDirectoryCallback(std::string dir, std::string prefix = "");

}  // namespace jx::hlo
