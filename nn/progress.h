// Training output: a progress bar for long loops (tqdm's layout: percentage, bar, count,
// elapsed<remaining, rate, postfix) and one line per epoch (loss, accuracy, examples/s).
//
//   jx::nn::ProgressBar bar(steps_per_epoch, {.desc = "epoch 1"});
//   for (int i = 0; i < steps_per_epoch; ++i) {
//     ...
//     bar.set_postfix(jx::StrCat("loss=", loss));
//     bar.update();
//   }
//   bar.close();   // epoch 1: 100%|##############################| 469/469 [00:04<00:00, 104.2it/s, loss=0.31]
//
//   for (int64_t i : jx::nn::progress_range(n, {.desc = "eval"})) { ... }
//
//   jx::nn::EpochLogger log(/*num_epochs=*/10);
//   log.start_epoch();  ...  log.end_epoch(loss, accuracy, examples);
//   // epoch 1/10  loss 0.4812  accuracy 83.05%  14218 examples/s  4.2s
//
// The bar draws on a terminal only: by default it is quiet unless it writes to std::cout and
// stdout is a terminal (isatty), so logs and pipes get no carriage-return noise. The epoch
// line always prints. Both take a clock (seconds) so tests can drive time.
#pragma once

#include <cstdint>
#include <functional>
#include <iosfwd>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace jx::nn {

// Seconds on a monotonic clock; the default is std::chrono::steady_clock.
using Clock = std::function<double()>;

// Whether the process's stdout is a terminal.
bool stdout_is_terminal();

struct ProgressOptions {
  std::string desc{};              // prefix: "epoch 3"
  std::string unit = "it";         // "it/s"; rates below 1/s print as "s/it"
  int width = 30;                  // bar characters
  double min_interval = 0.1;       // seconds between redraws (the last update always draws)
  std::optional<bool> enabled{};   // default: out is std::cout and stdout is a terminal
  std::ostream* out = nullptr;     // default: std::cout
  Clock clock{};                   // default: steady_clock
};

class ProgressBar {
 public:
  // total <= 0: unknown length (no percentage, bar or ETA).
  explicit ProgressBar(int64_t total, ProgressOptions options = {});
  ~ProgressBar();
  ProgressBar(const ProgressBar&) = delete;
  ProgressBar& operator=(const ProgressBar&) = delete;

  // Advances by n and redraws when min_interval has passed or the bar is full.
  void update(int64_t n = 1);
  // Text after the rate ("loss=0.312"); shown at the next redraw.
  void set_postfix(std::string postfix);
  // Draws the final state and ends the line; idempotent (the destructor calls it).
  void close();

  int64_t n() const { return n_; }
  int64_t total() const { return total_; }
  bool enabled() const { return enabled_; }
  double elapsed() const;  // seconds since construction
  double rate() const;     // items per second so far (0 before any time passed)
  // Seconds left at the current rate; nullopt when the total or the rate is unknown.
  std::optional<double> eta() const;
  // The current line, without the carriage return.
  std::string render() const;

 private:
  void Draw();

  int64_t total_;
  ProgressOptions options_;
  bool enabled_;
  std::ostream* out_;
  double start_;
  double last_draw_ = -1.0;
  int64_t n_ = 0;
  size_t last_length_ = 0;
  std::string postfix_;
  bool closed_ = false;
};

// 0, 1, ..., total - 1, advancing a ProgressBar as the loop goes (closed at the end).
class ProgressRange {
 public:
  ProgressRange(int64_t total, ProgressOptions options);

  class iterator {
   public:
    int64_t operator*() const { return i_; }
    iterator& operator++();
    bool operator!=(const iterator& other) const { return i_ != other.i_; }

   private:
    friend class ProgressRange;
    iterator(ProgressRange* range, int64_t i) : range_(range), i_(i) {}
    ProgressRange* range_;
    int64_t i_;
  };
  iterator begin() { return iterator(this, 0); }
  iterator end() { return iterator(this, total_); }
  ProgressBar& bar() { return bar_; }

 private:
  int64_t total_;
  ProgressBar bar_;
};
ProgressRange progress_range(int64_t total, ProgressOptions options = {});

// "mm:ss", or "h:mm:ss" from an hour on (tqdm's format_interval).
std::string format_interval(double seconds);

struct EpochStats {
  int64_t epoch = 0;       // 1-based
  int64_t num_epochs = 0;  // 0: unknown
  double loss = 0.0;
  std::optional<double> accuracy{};  // a fraction; printed as a percentage
  int64_t examples = 0;
  double seconds = 0.0;
  std::vector<std::pair<std::string, double>> metrics{};  // more "name value" pairs
};
// "epoch 3/10  loss 0.3124  accuracy 88.52%  12345 examples/s  4.9s"
std::string format_epoch_line(const EpochStats& stats);

// Times epochs and prints one line per epoch.
class EpochLogger {
 public:
  explicit EpochLogger(int64_t num_epochs = 0, std::ostream* out = nullptr, Clock clock = {});
  void start_epoch();
  // Prints and returns the epoch's line (examples/s over the time since start_epoch); throws
  // ValueError without a start_epoch before it.
  std::string end_epoch(double loss, std::optional<double> accuracy, int64_t examples,
                        std::vector<std::pair<std::string, double>> metrics = {});
  int64_t epoch() const { return epoch_; }

 private:
  int64_t num_epochs_;
  std::ostream* out_;
  Clock clock_;
  int64_t epoch_ = 0;
  bool running_ = false;
  double start_ = 0.0;
};

}  // namespace jx::nn
