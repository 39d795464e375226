// Shared by the benchmarks that print ratios: process CPU time per iteration (steadier than the
// wall clock on a shared, loaded machine) and a console reporter that keeps each benchmark's
// median real and CPU time over its repetitions.
//
//   void BM_X(benchmark::State& state) { CpuTimer cpu(state); for (auto _ : state) ...; }
//   MedianReporter reporter;  benchmark::RunSpecifiedBenchmarks(&reporter);
//   reporter.Median("BM_X/16"), reporter.MedianCpu("BM_X/16");   // ms for kMillisecond units
#pragma once

#include <time.h>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>

namespace bench {

// CPU seconds of the whole process (all threads). On a shared, loaded machine the wall clock
// also counts time the threads sat descheduled; CPU time per iteration does not.
inline double ProcessCpuSeconds() {
  timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

// Records process CPU milliseconds per iteration as the "cpu_ms" counter.
class CpuTimer {
 public:
  explicit CpuTimer(benchmark::State& state) : state_(state), start_(ProcessCpuSeconds()) {}
  ~CpuTimer() {
    const double ms = (ProcessCpuSeconds() - start_) * 1e3;
    state_.counters["cpu_ms"] = state_.iterations() > 0 ? ms / state_.iterations() : 0;
  }
  CpuTimer(const CpuTimer&) = delete;
  CpuTimer& operator=(const CpuTimer&) = delete;

 private:
  benchmark::State& state_;
  double start_;
};

// Records each benchmark's median real time per iteration (in its time unit) and median
// process CPU ms (benchmarks with a CpuTimer) over its repetitions: the "median" aggregate
// when repetitions ran, else the median of the runs seen. Errored runs are skipped.
class MedianReporter : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    for (const Run& run : runs) {
      if (run.error_occurred) continue;
      std::string key = run.run_name.function_name;
      if (!run.run_name.args.empty()) key += "/" + run.run_name.args;
      const auto c = run.counters.find("cpu_ms");
      if (run.run_type == Run::RT_Aggregate) {
        if (run.aggregate_name != "median") continue;
        median_[key] = run.GetAdjustedRealTime();
        if (c != run.counters.end()) median_cpu_[key] = c->second.value;
      } else if (run.iterations > 0) {
        runs_[key].push_back(run.GetAdjustedRealTime());
        if (c != run.counters.end()) runs_cpu_[key].push_back(c->second.value);
      }
    }
    ConsoleReporter::ReportRuns(runs);
  }
  // name: the function name, "/args" appended for benchmarks with arguments; 0 if none ran.
  double Median(const std::string& name) const { return Get(median_, runs_, name); }
  double MedianCpu(const std::string& name) const { return Get(median_cpu_, runs_cpu_, name); }

 private:
  static double Get(const std::map<std::string, double>& medians,
                    const std::map<std::string, std::vector<double>>& runs, const std::string& name) {
    if (auto it = medians.find(name); it != medians.end()) return it->second;
    auto it = runs.find(name);
    if (it == runs.end() || it->second.empty()) return 0;
    std::vector<double> v = it->second;
    std::sort(v.begin(), v.end());
    return v.size() % 2 == 1 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
  }
  std::map<std::string, double> median_, median_cpu_;
  std::map<std::string, std::vector<double>> runs_, runs_cpu_;
};

}  // namespace bench
