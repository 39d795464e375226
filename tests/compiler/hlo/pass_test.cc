#include "jx/compiler/hlo/hlo_pass.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "jx/compiler/hlo/hlo_parser.h"

namespace jx::hlo::pass_test {
namespace {

using ::testing::HasSubstr;

std::unique_ptr<HloModule> Module() {
  return ParseHloModule(R"(HloModule m
ENTRY %main {
  %p = f32[8]{0} parameter(0)
  ROOT %s = f32[8]{0} sine(%p)
})")
      .value();
}

// Replaces sine with cosine (a valid rewrite).
class SineToCosine : public HloPass {
 public:
  std::string_view name() const override { return "sine-to-cosine"; }
  absl::StatusOr<bool> Run(HloModule* module) override {
    bool changed = false;
    HloComputation* c = module->entry_computation();
    for (HloInstruction* instr : c->MakeInstructionPostOrder()) {
      if (instr->opcode() != HloOpcode::kSin) continue;
      HloInstruction* cos = c->AddInstruction(
          HloInstruction::Create(HloOpcode::kCos, instr->shape(), instr->operands()));
      if (absl::Status st = c->ReplaceInstruction(instr, cos); !st.ok()) return st;
      changed = true;
    }
    return changed;
  }
};

// Breaks the module: gives the root a wrong shape.
class Corrupt : public HloPass {
 public:
  std::string_view name() const override { return "corrupt"; }
  absl::StatusOr<bool> Run(HloModule* module) override {
    *module->entry_computation()->root_instruction()->mutable_shape() =
        ShapeUtil::MakeShape(F32, {3});
    return true;
  }
};

class Failing : public HloPass {
 public:
  std::string_view name() const override { return "failing"; }
  absl::StatusOr<bool> Run(HloModule*) override { return absl::InternalError("boom"); }
};

class NoOp : public HloPass {
 public:
  std::string_view name() const override { return "noop"; }
  absl::StatusOr<bool> Run(HloModule*) override { return false; }
};

TEST(HloPassPipelineTest, RunsPassesInOrderAndRecordsTimings) {
  auto module = Module();
  HloPassPipeline pipeline("test");
  pipeline.AddPass<NoOp>();
  pipeline.AddPass<SineToCosine>();
  pipeline.AddPass<NoOp>();
  std::vector<std::string> dumped;
  pipeline.set_dump_callback([&](std::string_view pass, const HloModule& m) {
    dumped.push_back(std::string(pass) + ":" +
                     std::string(HloOpcodeString(m.entry_computation()->root_instruction()->opcode())));
  });
  absl::StatusOr<bool> changed = pipeline.Run(module.get());
  ASSERT_TRUE(changed.ok()) << changed.status();
  EXPECT_TRUE(*changed);
  EXPECT_EQ(dumped, (std::vector<std::string>{"noop:sine", "sine-to-cosine:cosine", "noop:cosine"}));
  ASSERT_EQ(pipeline.timings().size(), 3u);
  EXPECT_EQ(pipeline.timings()[1].name, "sine-to-cosine");
  EXPECT_TRUE(pipeline.timings()[1].changed);
  EXPECT_FALSE(pipeline.timings()[0].changed);
  for (const auto& t : pipeline.timings()) EXPECT_GE(t.seconds, 0.0);
  // A second run changes nothing.
  EXPECT_FALSE(pipeline.Run(module.get()).value());
}

// Counts its runs and changes nothing; says whether a run leaves its fixed point.
class Counting : public HloPass {
 public:
  Counting(int* runs, bool fixed_point) : runs_(runs), fixed_point_(fixed_point) {}
  std::string_view name() const override { return "counting"; }
  absl::StatusOr<bool> Run(HloModule*) override {
    ++*runs_;
    return false;
  }
  bool LastRunReachedFixedPoint() const override { return fixed_point_; }

 private:
  int* runs_;
  bool fixed_point_;
};

std::vector<bool> Skipped(const HloPassPipeline& pipeline) {
  std::vector<bool> skipped;
  for (const auto& t : pipeline.timings()) skipped.push_back(t.skipped);
  return skipped;
}

TEST(HloPassPipelineTest, APassAtItsFixedPointIsSkippedWhileNoPassChangesTheModule) {
  auto module = Module();
  int runs = 0;
  HloPassPipeline pipeline("test");
  pipeline.AddPass<Counting>(&runs, true);
  pipeline.AddPass<NoOp>();
  pipeline.AddPass<Counting>(&runs, true);
  int dumps = 0;
  pipeline.set_dump_callback([&](std::string_view, const HloModule&) { ++dumps; });
  ASSERT_TRUE(pipeline.Run(module.get()).ok());
  EXPECT_EQ(runs, 1);
  EXPECT_EQ(Skipped(pipeline), (std::vector<bool>{false, false, true}));
  EXPECT_EQ(dumps, 3);  // a skipped pass's module is dumped as a run one's
  // The next Run starts afresh: a module may have changed between runs.
  ASSERT_TRUE(pipeline.Run(module.get()).ok());
  EXPECT_EQ(runs, 2);
}

TEST(HloPassPipelineTest, APassRunsAgainAfterAnotherPassChangedTheModule) {
  auto module = Module();
  int runs = 0;
  HloPassPipeline pipeline("test");
  pipeline.AddPass<Counting>(&runs, true);
  pipeline.AddPass<SineToCosine>();
  pipeline.AddPass<Counting>(&runs, true);
  pipeline.AddPass<NoOp>();
  pipeline.AddPass<Counting>(&runs, true);
  ASSERT_TRUE(pipeline.Run(module.get()).ok());
  EXPECT_EQ(runs, 2);
  EXPECT_EQ(Skipped(pipeline), (std::vector<bool>{false, false, false, false, true}));
}

TEST(HloPassPipelineTest, APassNotAtItsFixedPointRunsAgain) {
  auto module = Module();
  int runs = 0;
  HloPassPipeline pipeline("test");
  pipeline.AddPass<Counting>(&runs, false);
  pipeline.AddPass<NoOp>();
  pipeline.AddPass<Counting>(&runs, false);
  ASSERT_TRUE(pipeline.Run(module.get()).ok());
  EXPECT_EQ(runs, 2);
}

TEST(HloPassPipelineTest, ANestedPipelineThatChangedTheModuleCountsAsAChange) {
  auto module = Module();
  int runs = 0;
  HloPassPipeline pipeline("outer");
  pipeline.AddPass<Counting>(&runs, true);
  auto nested = std::make_unique<HloPassPipeline>("nested");
  nested->AddPass<SineToCosine>();
  pipeline.AddPass(std::move(nested));
  pipeline.AddPass<Counting>(&runs, true);
  ASSERT_TRUE(pipeline.Run(module.get()).ok());
  EXPECT_EQ(runs, 2);
}

TEST(HloPassPipelineTest, VerifierFailureNamesThePass) {
  auto module = Module();
  HloPassPipeline pipeline("test");
  pipeline.AddPass<NoOp>();
  pipeline.AddPass<Corrupt>();
  pipeline.AddPass<NoOp>();
  int dumps = 0;
  pipeline.set_dump_callback([&](std::string_view, const HloModule&) { ++dumps; });
  absl::Status st = pipeline.Run(module.get()).status();
  EXPECT_THAT(std::string(st.message()), HasSubstr("verifier failed after pass corrupt: "
                                                   "computation %main, instruction %s"));
  EXPECT_EQ(dumps, 1);  // stopped before dumping the corrupt module
  EXPECT_EQ(pipeline.timings().size(), 2u);
  // With verification off the corruption goes unnoticed.
  pipeline.set_verify(false);
  EXPECT_TRUE(pipeline.Run(module.get()).ok());
}

TEST(HloPassPipelineTest, PassErrorNamesThePass) {
  auto module = Module();
  HloPassPipeline pipeline("test");
  pipeline.AddPass<Failing>();
  absl::Status st = pipeline.Run(module.get()).status();
  EXPECT_EQ(st.code(), absl::StatusCode::kInternal);
  EXPECT_THAT(std::string(st.message()), HasSubstr("pass failing: boom"));
}

TEST(HloPassPipelineTest, DumpToDirectoryWritesModuleTextPerPass) {
  auto module = Module();
  HloPassPipeline pipeline("test");
  pipeline.AddPass<NoOp>();
  pipeline.AddPass<SineToCosine>();
  const std::string dir = ::testing::TempDir();
  pipeline.set_dump_callback(MakeDumpToDirectoryCallback(dir));
  ASSERT_TRUE(pipeline.Run(module.get()).ok());
  std::ifstream in(dir + "/m.001.sine-to-cosine.txt");
  ASSERT_TRUE(in.good());
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_EQ(text.str(), module->ToString());
  EXPECT_TRUE(std::ifstream(dir + "/m.000.noop.txt").good());
}

}  // namespace
}  // namespace jx::hlo::pass_test
