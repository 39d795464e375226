#include "jx/devices/profiler/chrome_trace.h"

#include <array>
#include <cmath>
#include <cstdio>
#include <string_view>

#include "jx/core/str_util.h"

namespace jx::profiler {
namespace {

constexpr std::array<std::string_view, 5> kKnownLanes = {kStepsLane, kMxuLane, kVpuLane, kDmaLane, kIciLane};

void AppendString(std::string* out, std::string_view s) {
  out->push_back('"');
  for (char c : s) {
    switch (c) {
      case '"': *out += "\\\""; break;
      case '\\': *out += "\\\\"; break;
      case '\n': *out += "\\n"; break;
      case '\t': *out += "\\t"; break;
      case '\r': *out += "\\r"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char esc[8];
          std::snprintf(esc, sizeof(esc), "\\u%04x", static_cast<unsigned>(c));
          *out += esc;
        } else {
          out->push_back(c);
        }
    }
  }
  out->push_back('"');
}

// JSON has no NaN or infinity; times are microseconds with picosecond resolution.
void AppendNumber(std::string* out, double v) {
  if (!std::isfinite(v)) {
    *out += "null";
    return;
  }
  char buf[40];
  std::snprintf(buf, sizeof(buf), "%.9g", v);
  *out += buf;
}

void AppendTime(std::string* out, double us) {
  char buf[48];
  std::snprintf(buf, sizeof(buf), "%.6f", us);
  *out += buf;
}

// A metadata event: process_name, thread_name and their sort indices.
void AppendMetadata(std::string* out, std::string_view what, int pid, int tid, std::string_view key,
                    const std::variant<double, std::string>& value) {
  StrAppend(out, ",\n{\"ph\":\"M\",\"name\":\"", what, "\",\"pid\":", pid, ",\"tid\":", tid, ",\"args\":{\"", key, "\":");
  if (const double* d = std::get_if<double>(&value)) {
    AppendNumber(out, *d);
  } else {
    AppendString(out, std::get<std::string>(value));
  }
  *out += "}}";
}

// Thread ids per lane of one process: the known lanes have fixed ids 1..5 (so every device's
// units line up), others follow in order of first use.
class LaneIds {
 public:
  int Of(std::string_view lane) {
    for (size_t i = 0; i < kKnownLanes.size(); ++i) {
      if (kKnownLanes[i] == lane) return static_cast<int>(i) + 1;
    }
    for (size_t i = 0; i < others_.size(); ++i) {
      if (others_[i] == lane) return static_cast<int>(kKnownLanes.size() + i) + 1;
    }
    others_.emplace_back(lane);
    return static_cast<int>(kKnownLanes.size() + others_.size());
  }

 private:
  std::vector<std::string> others_;
};

}  // namespace

std::string ChromeTraceJson(const std::vector<DeviceTimeline>& timelines) {
  std::string out = "{\"displayTimeUnit\":\"ns\",\"otherData\":{\"producer\":\"jx\"},\"traceEvents\":[";
  const size_t first_event = out.size();
  for (const DeviceTimeline& t : timelines) {
    AppendMetadata(&out, "process_name", t.pid, 0, "name", t.name);
    AppendMetadata(&out, "process_sort_index", t.pid, 0, "sort_index", static_cast<double>(t.pid));
    LaneIds lanes;
    std::vector<bool> named;
    for (const Slice& s : t.slices) {
      const int tid = lanes.Of(s.lane);
      if (named.size() <= static_cast<size_t>(tid)) named.resize(static_cast<size_t>(tid) + 1, false);
      if (!named[static_cast<size_t>(tid)]) {
        named[static_cast<size_t>(tid)] = true;
        AppendMetadata(&out, "thread_name", t.pid, tid, "name", s.lane);
        AppendMetadata(&out, "thread_sort_index", t.pid, tid, "sort_index", static_cast<double>(tid));
      }
      StrAppend(&out, ",\n{\"ph\":\"X\",\"pid\":", t.pid, ",\"tid\":", tid, ",\"name\":");
      AppendString(&out, s.name);
      out += ",\"ts\":";
      AppendTime(&out, s.start_us);
      out += ",\"dur\":";
      AppendTime(&out, s.duration_us);
      if (!s.args.empty()) {
        out += ",\"args\":{";
        for (size_t i = 0; i < s.args.size(); ++i) {
          if (i > 0) out += ',';
          AppendString(&out, s.args[i].first);
          out += ':';
          if (const double* d = std::get_if<double>(&s.args[i].second)) {
            AppendNumber(&out, *d);
          } else {
            AppendString(&out, std::get<std::string>(s.args[i].second));
          }
        }
        out += '}';
      }
      out += '}';
    }
  }
  // Every event was written as ",\n{...}": the first one's comma goes.
  if (out.size() > first_event) out.erase(first_event, 1);
  out += "\n]}\n";
  return out;
}

}  // namespace jx::profiler
