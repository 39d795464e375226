#include "jx/nn/progress.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <ostream>
#include <string>
#include <utility>

#include "absl/strings/str_format.h"
#include "jx/core/errors.h"

namespace jx::nn {

namespace {

Clock SteadyClock() {
  return [] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
  };
}

std::string FormatRate(double rate, const std::string& unit) {
  if (rate <= 0.0) return absl::StrFormat("?%s/s", unit);
  if (rate < 1.0) return absl::StrFormat("%.2fs/%s", 1.0 / rate, unit);
  return absl::StrFormat("%.2f%s/s", rate, unit);
}

}  // namespace

bool stdout_is_terminal() { return ::isatty(::fileno(stdout)) == 1; }

std::string format_interval(double seconds) {
  const int64_t total = static_cast<int64_t>(std::max(0.0, seconds));
  const int64_t h = total / 3600, m = (total / 60) % 60, s = total % 60;
  if (h > 0) return absl::StrFormat("%d:%02d:%02d", h, m, s);
  return absl::StrFormat("%02d:%02d", m, s);
}

ProgressBar::ProgressBar(int64_t total, ProgressOptions options)
    : total_(total), options_(std::move(options)) {
  if (!options_.clock) options_.clock = SteadyClock();
  out_ = options_.out != nullptr ? options_.out : &std::cout;
  enabled_ = options_.enabled.value_or(out_ == &std::cout && stdout_is_terminal());
  start_ = options_.clock();
  if (enabled_) Draw();
}

ProgressBar::~ProgressBar() { close(); }

void ProgressBar::update(int64_t n) {
  n_ += n;
  if (!enabled_ || closed_) return;
  const double now = options_.clock();
  if (now - last_draw_ >= options_.min_interval || (total_ > 0 && n_ >= total_)) Draw();
}

void ProgressBar::set_postfix(std::string postfix) { postfix_ = std::move(postfix); }

void ProgressBar::close() {
  if (closed_) return;
  closed_ = true;
  if (!enabled_) return;
  Draw();
  *out_ << '\n';
  out_->flush();
}

double ProgressBar::elapsed() const { return options_.clock() - start_; }

double ProgressBar::rate() const {
  const double t = elapsed();
  return t > 0.0 ? static_cast<double>(n_) / t : 0.0;
}

std::optional<double> ProgressBar::eta() const {
  const double r = rate();
  if (total_ <= 0 || r <= 0.0) return std::nullopt;
  return static_cast<double>(std::max<int64_t>(total_ - n_, 0)) / r;
}

std::string ProgressBar::render() const {
  std::string line = options_.desc.empty() ? "" : options_.desc + ": ";
  const double t = elapsed();
  const std::string rate = FormatRate(this->rate(), options_.unit);
  const std::string postfix = postfix_.empty() ? "" : ", " + postfix_;
  if (total_ <= 0) {
    absl::StrAppendFormat(&line, "%d%s [%s, %s%s]", n_, options_.unit, format_interval(t), rate, postfix);
    return line;
  }
  const int64_t done = std::min(n_, total_);
  const int64_t percent = 100 * done / total_;
  const int64_t filled = options_.width * done / total_;
  const std::optional<double> remaining = eta();
  absl::StrAppendFormat(&line, "%3d%%|%s%s| %d/%d [%s<%s, %s%s]", percent, std::string(filled, '#'),
                        std::string(options_.width - filled, ' '), n_, total_, format_interval(t),
                        remaining ? format_interval(*remaining) : "?", rate, postfix);
  return line;
}

void ProgressBar::Draw() {
  std::string line = render();
  const size_t length = line.size();
  // Blank out what is left of a longer previous line.
  if (length < last_length_) line.append(last_length_ - length, ' ');
  *out_ << '\r' << line;
  out_->flush();
  last_length_ = length;
  last_draw_ = options_.clock();
}

ProgressRange::ProgressRange(int64_t total, ProgressOptions options)
    : total_(std::max<int64_t>(total, 0)), bar_(total, std::move(options)) {
  if (total_ == 0) bar_.close();
}

ProgressRange::iterator& ProgressRange::iterator::operator++() {
  ++i_;
  range_->bar_.update();
  if (i_ == range_->total_) range_->bar_.close();
  return *this;
}

ProgressRange progress_range(int64_t total, ProgressOptions options) {
  return ProgressRange(total, std::move(options));
}

std::string format_epoch_line(const EpochStats& stats) {
  std::string line = stats.num_epochs > 0 ? absl::StrFormat("epoch %d/%d", stats.epoch, stats.num_epochs)
                                          : absl::StrFormat("epoch %d", stats.epoch);
  absl::StrAppendFormat(&line, "  loss %.4f", stats.loss);
  if (stats.accuracy) absl::StrAppendFormat(&line, "  accuracy %.2f%%", 100.0 * *stats.accuracy);
  for (const auto& [name, value] : stats.metrics) absl::StrAppendFormat(&line, "  %s %.4f", name, value);
  if (stats.seconds > 0.0) {
    absl::StrAppendFormat(&line, "  %.0f examples/s", static_cast<double>(stats.examples) / stats.seconds);
  }
  absl::StrAppendFormat(&line, "  %.1fs", stats.seconds);
  return line;
}

EpochLogger::EpochLogger(int64_t num_epochs, std::ostream* out, Clock clock)
    : num_epochs_(num_epochs), out_(out != nullptr ? out : &std::cout), clock_(clock ? std::move(clock) : SteadyClock()) {}

void EpochLogger::start_epoch() {
  ++epoch_;
  running_ = true;
  start_ = clock_();
}

std::string EpochLogger::end_epoch(double loss, std::optional<double> accuracy, int64_t examples,
                                   std::vector<std::pair<std::string, double>> metrics) {
  if (!running_) throw ValueError("[EpochLogger] end_epoch without start_epoch: the epoch's time is unknown");
  running_ = false;
  EpochStats stats{.epoch = epoch_,
                   .num_epochs = num_epochs_,
                   .loss = loss,
                   .accuracy = accuracy,
                   .examples = examples,
                   .seconds = clock_() - start_,
                   .metrics = std::move(metrics)};
  std::string line = format_epoch_line(stats);
  *out_ << line << '\n';
  out_->flush();
  return line;
}

}  // namespace jx::nn
