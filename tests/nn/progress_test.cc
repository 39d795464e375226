// The progress bar and epoch line on a string stream with a clock the test advances.
#include "jx/nn/progress.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <sstream>
#include <string>

#include "jx/core/errors.h"

namespace jx::nn::progress_test {
namespace {

struct FakeClock {
  double now = 100.0;
  Clock clock() {
    return [this] { return now; };
  }
};

ProgressOptions Forced(std::ostringstream* out, FakeClock* clock) {
  return ProgressOptions{.desc = "epoch 1", .width = 10, .enabled = true, .out = out, .clock = clock->clock()};
}

TEST(ProgressBarTest, RendersPercentBarCountElapsedEtaAndRate) {
  std::ostringstream out;
  FakeClock clock;
  ProgressBar bar(1000, Forced(&out, &clock));
  EXPECT_EQ(bar.render(), "epoch 1:   0%|          | 0/1000 [00:00<?, ?it/s]");
  clock.now += 5.0;
  bar.update(450);
  EXPECT_DOUBLE_EQ(bar.rate(), 90.0);
  EXPECT_NEAR(*bar.eta(), 550.0 / 90.0, 1e-12);
  EXPECT_EQ(bar.render(), "epoch 1:  45%|####      | 450/1000 [00:05<00:06, 90.00it/s]");
  bar.set_postfix("loss=0.312");
  EXPECT_EQ(bar.render(), "epoch 1:  45%|####      | 450/1000 [00:05<00:06, 90.00it/s, loss=0.312]");
  clock.now += 5.0;
  bar.update(550);
  bar.close();
  EXPECT_EQ(out.str(),
            "\repoch 1:   0%|          | 0/1000 [00:00<?, ?it/s]"
            "\repoch 1:  45%|####      | 450/1000 [00:05<00:06, 90.00it/s]"
            "\repoch 1: 100%|##########| 1000/1000 [00:10<00:00, 100.00it/s, loss=0.312]"
            "\repoch 1: 100%|##########| 1000/1000 [00:10<00:00, 100.00it/s, loss=0.312]\n");
  bar.close();  // idempotent
  EXPECT_EQ(out.str().back(), '\n');
}

TEST(ProgressBarTest, RedrawsAtMostEveryMinInterval) {
  std::ostringstream out;
  FakeClock clock;
  ProgressOptions options = Forced(&out, &clock);
  options.min_interval = 1.0;
  ProgressBar bar(100, options);
  for (int i = 0; i < 10; ++i) {
    clock.now += 0.25;
    bar.update();
  }
  // The first draw, then one per second of fake time: at 1.0 and 2.0 s.
  const std::string s = out.str();
  EXPECT_EQ(std::count(s.begin(), s.end(), '\r'), 3);
}

TEST(ProgressBarTest, SlowRatesPrintSecondsPerItemAndLongTimesHours) {
  std::ostringstream out;
  FakeClock clock;
  ProgressOptions options = Forced(&out, &clock);
  options.desc = "";
  options.unit = "batch";
  ProgressBar bar(10, options);
  clock.now += 8000.0;
  bar.update(2);
  EXPECT_EQ(bar.render(), " 20%|##        | 2/10 [2:13:20<8:53:20, 4000.00s/batch]");
  EXPECT_EQ(format_interval(59.9), "00:59");
  EXPECT_EQ(format_interval(3600), "1:00:00");
}

TEST(ProgressBarTest, UnknownTotalShowsCountAndRate) {
  std::ostringstream out;
  FakeClock clock;
  ProgressBar bar(0, Forced(&out, &clock));
  clock.now += 2.0;
  bar.update(30);
  EXPECT_EQ(bar.render(), "epoch 1: 30it [00:02, 15.00it/s]");
  EXPECT_FALSE(bar.eta().has_value());
}

TEST(ProgressBarTest, ShorterLinesBlankOutTheRest) {
  std::ostringstream out;
  FakeClock clock;
  ProgressBar bar(0, Forced(&out, &clock));
  bar.set_postfix("a long postfix");
  clock.now += 1.0;
  bar.update();
  const size_t before = out.str().size();
  bar.set_postfix("");
  clock.now += 1.0;
  bar.update();
  const std::string last = out.str().substr(before);
  EXPECT_EQ(last, "\repoch 1: 2it [00:02, 1.00it/s]                ");
}

TEST(ProgressBarTest, QuietUnlessOnATerminal) {
  // Not std::cout: quiet unless enabled is forced.
  std::ostringstream out;
  FakeClock clock;
  {
    ProgressBar bar(10, {.out = &out, .clock = clock.clock()});
    EXPECT_FALSE(bar.enabled());
    bar.update(10);
  }
  EXPECT_EQ(out.str(), "");
  // On std::cout it follows isatty(stdout).
  ProgressBar bar(10, {.enabled = std::nullopt, .clock = clock.clock()});
  EXPECT_EQ(bar.enabled(), stdout_is_terminal());
  bar.update(10);
  EXPECT_EQ(bar.n(), 10);
}

TEST(ProgressBarTest, ProgressRangeCountsTheLoop) {
  std::ostringstream out;
  FakeClock clock;
  int64_t sum = 0;
  ProgressOptions options = Forced(&out, &clock);
  options.min_interval = 0.0;
  for (int64_t i : progress_range(4, options)) {
    clock.now += 1.0;
    sum += i;
  }
  EXPECT_EQ(sum, 6);
  const std::string s = out.str();
  EXPECT_NE(s.find("100%|##########| 4/4 [00:04<00:00, 1.00it/s]\n"), std::string::npos) << s;
  int iterations = 0;
  for (int64_t i : progress_range(0, options)) iterations += static_cast<int>(i) + 1;
  EXPECT_EQ(iterations, 0);
}

TEST(EpochLoggerTest, PrintsLossAccuracyAndExamplesPerSecond) {
  std::ostringstream out;
  FakeClock clock;
  EpochLogger log(10, &out, clock.clock());
  log.start_epoch();
  clock.now += 4.0;
  EXPECT_EQ(log.end_epoch(0.48123, 0.83051, 60000), "epoch 1/10  loss 0.4812  accuracy 83.05%  15000 examples/s  4.0s");
  log.start_epoch();
  clock.now += 2.5;
  log.end_epoch(0.3, std::nullopt, 1000, {{"test_loss", 0.35}});
  EXPECT_EQ(out.str(),
            "epoch 1/10  loss 0.4812  accuracy 83.05%  15000 examples/s  4.0s\n"
            "epoch 2/10  loss 0.3000  test_loss 0.3500  400 examples/s  2.5s\n");
  EXPECT_THROW(log.end_epoch(0.1, 0.9, 10), ValueError);
  EXPECT_EQ(format_epoch_line({.epoch = 3, .loss = 1.0, .examples = 5}), "epoch 3  loss 1.0000  0.0s");
}

}  // namespace
}  // namespace jx::nn::progress_test
